package io.jverbs.device;

import io.jverbs.CompletionHandler;
import io.jverbs.IdleStrategy;
import io.jverbs.Poller;
import io.jverbs.QueuePair;
import io.jverbs.RemoteBuffer;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Test;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Posts from several threads at once on one queue pair, with no lock of the caller's: the queue
 * pair's own posting lock keeps every work request whole (each lands its own bytes at its own
 * offset, and each completes once), and a close from another thread while they post ends each
 * poster with a Java exception, never a crash.
 */
@DeviceTest
class ConcurrentPostingTest {
    private static final int THREADS = 4;
    private static final int PER_THREAD = 150;

    @Test
    void postersOnOneQueuePairNeedNoLockOfTheirOwn(TestDevice device) throws Exception {
        try (Loopback lb = new Loopback(device, THREADS * PER_THREAD * 8L, c -> c.withDepth(32, 4).withSignalEvery(1),
                false)) {
            AtomicLong completions = new AtomicLong();
            AtomicLong failed = new AtomicLong();
            CompletionHandler handler = c -> {
                if (c.isSuccess()) {
                    completions.incrementAndGet();
                } else {
                    failed.incrementAndGet();
                }
            };
            lb.client.poller = Poller.start(handler, IdleStrategy.backoff(), lb.client.cq);
            RemoteBuffer remote = lb.serverRemote();
            ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
            CountDownLatch go = new CountDownLatch(1);
            List<Thread> posters = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                posters.add(Thread.ofPlatform().name("poster-" + t).start(() -> {
                    try {
                        go.await();
                        for (int i = 0; i < PER_THREAD; i++) {
                            long offset = (thread * PER_THREAD + i) * 8L;
                            // Each request sends its own 8 bytes: the source slot is the target's offset.
                            lb.client.buffer.segment().set(ValueLayout.JAVA_LONG, offset, 0x5eed_0000_0000L | offset);
                            while (lb.client.qp.write(offset, lb.client.buffer, offset, 8, remote, offset, true)
                                    == QueuePair.SEND_QUEUE_FULL) {
                                Thread.onSpinWait();
                            }
                        }
                    } catch (Throwable e) {
                        errors.add(e);
                    }
                }));
            }
            go.countDown();
            for (Thread p : posters) {
                p.join(60_000);
                assertTrue(!p.isAlive(), p.getName() + " finished within 60 s");
            }
            assertTrue(errors.isEmpty(), "posters failed: " + errors);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (completions.get() + failed.get() < THREADS * PER_THREAD && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertEquals(0, failed.get(), "failed completions");
            assertEquals(THREADS * PER_THREAD, completions.get(), "one completion per write, on " + device.name());
            for (int k = 0; k < THREADS * PER_THREAD; k++) {
                long offset = k * 8L;
                assertEquals(0x5eed_0000_0000L | offset, lb.server.buffer.segment().get(ValueLayout.JAVA_LONG, offset),
                        "bytes at offset " + offset);
            }
            System.out.println("[device " + device.name() + "] concurrent posting: " + THREADS + " threads x "
                    + PER_THREAD + " writes, " + completions.get() + " completions, every slot intact");
        }
    }

    @Test
    void closingWhileOtherThreadsPostEndsThemWithAnException(TestDevice device) throws Exception {
        try (Loopback lb = new Loopback(device, 4096, c -> c.withDepth(16, 4).withSignalEvery(1), false)) {
            lb.client.startPoller();
            RemoteBuffer remote = lb.serverRemote();
            ConcurrentLinkedQueue<Throwable> endings = new ConcurrentLinkedQueue<>();
            AtomicLong posted = new AtomicLong();
            List<Thread> posters = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                posters.add(Thread.ofPlatform().start(() -> {
                    try {
                        while (true) {
                            if (lb.client.qp.write(1, lb.client.buffer, 0, 64, remote, 0, false) == QueuePair.OK) {
                                posted.incrementAndGet();
                            } else {
                                Thread.onSpinWait();
                            }
                        }
                    } catch (Throwable e) {
                        endings.add(e);
                    }
                }));
            }
            long start = System.nanoTime();
            while (posted.get() < 50 && System.nanoTime() - start < TimeUnit.SECONDS.toNanos(20)) {
                Thread.sleep(1);
            }
            lb.client.qp.close();
            for (Thread p : posters) {
                p.join(10_000);
                assertTrue(!p.isAlive(), "a poster ended within 10 s of the close");
            }
            assertEquals(3, endings.size());
            for (Throwable e : endings) {
                assertTrue(e instanceof IllegalStateException && e.getMessage().contains("closed"),
                        "each poster ends with 'closed': " + e);
            }
            System.out.println("[device " + device.name() + "] close while 3 threads post: " + posted.get()
                    + " posted before, each poster ended with: " + endings.peek().getMessage());
        }
    }
}
