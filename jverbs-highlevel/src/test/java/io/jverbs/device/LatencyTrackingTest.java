package io.jverbs.device;

import io.jverbs.CompletionHandler;
import io.jverbs.IdleStrategy;
import io.jverbs.Poller;
import io.jverbs.QueuePair;
import io.jverbs.RemoteBuffer;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import io.jverbs.latency.LatencyTracker;
import org.junit.jupiter.api.Test;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A queue pair's latency tracker on a real device: every signaled write is timed once, from its
 * post to its completion, and every post (signaled or not) is counted with its bytes; a tracker
 * can only be given before connect.
 */
@DeviceTest
class LatencyTrackingTest {
    private static final int WRITES = 60;

    @Test
    void everySignaledWriteIsTimedOnceAndEveryPostCounted(TestDevice device) throws Exception {
        ConcurrentLinkedQueue<Long> latencies = new ConcurrentLinkedQueue<>();
        LatencyTracker tracker = new LatencyTracker(latencies::add, 64);
        try (Loopback lb = new Loopback(device, 64 * 1024, c -> c.withDepth(64, 4).withSignalEvery(4), false,
                client -> client.qp.trackLatency(tracker))) {
            IllegalStateException late = assertThrows(IllegalStateException.class,
                    () -> lb.client.qp.trackLatency(new LatencyTracker(x -> { }, 4)));
            assertTrue(late.getMessage().contains("before connect"), late.getMessage());
            AtomicLong completions = new AtomicLong();
            CompletionHandler handler = c -> completions.incrementAndGet();
            lb.client.poller = Poller.start(handler, IdleStrategy.backoff(), lb.client.cq);
            RemoteBuffer remote = lb.serverRemote();
            for (int i = 0; i < WRITES; i++) {
                boolean signaled = i % 2 == 0; // half unsignaled: moderation signals every 4th anyway
                while (lb.client.qp.write(i, lb.client.buffer, i * 64L, 64, remote, i * 64L, signaled)
                        == QueuePair.SEND_QUEUE_FULL) {
                    Thread.onSpinWait();
                }
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (tracker.timedOperations() < completions.get() || completions.get() < WRITES / 2) {
                assertTrue(System.nanoTime() < deadline, "completions within 30 s: " + completions.get());
                Thread.sleep(5);
            }
            Thread.sleep(50); // any late completion would show up as an extra timing
            assertEquals(WRITES, tracker.postedOperations(), "every post counted");
            assertEquals(WRITES * 64L, tracker.postedBytes(), "every byte counted");
            assertEquals(completions.get(), tracker.timedOperations(), "one timing per signaled completion");
            assertEquals(completions.get(), latencies.size(), "the recorder got each timing");
            for (long ns : latencies) {
                assertTrue(ns > 0 && ns < TimeUnit.SECONDS.toNanos(10), "a latency of " + ns + " ns");
            }
            System.out.println("[device " + device.name() + "] latency tracking: " + WRITES + " writes posted, "
                    + tracker.timedOperations() + " signaled ones timed, max " + latencies.stream().mapToLong(x -> x).max()
                    .orElse(0) / 1000 + " us");
        }
    }
}
