package io.jverbs.device;

import io.jverbs.CompletionQueue;
import io.jverbs.IdleStrategy;
import io.jverbs.Poller;
import io.jverbs.QueuePair;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.WcStatus;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Queue pairs and completion queues confined to their thread (the lock-free posting and polling
 * mode) on a real device: the owner posts and polls, and every use from another thread — a post,
 * a poll, a close of the queue or of any of its parents — is refused with
 * {@link WrongThreadException} before anything is posted or closed, after which the queue pair
 * still works at full depth. Prints {@code highlevel-confined: N scenarios, on DEVICE}.
 */
@DeviceTest
class ConfinedTest {
    private static final long T = 20_000;
    private static final int DEPTH = 8;

    /** Runs {@code call} on a new thread and returns what it threw (null: nothing). */
    private static Throwable onOtherThread(Executable call) throws InterruptedException {
        Throwable[] thrown = new Throwable[1];
        Thread t = Thread.ofPlatform().name("not-the-owner").start(() -> {
            try {
                call.execute();
            } catch (Throwable e) {
                thrown[0] = e;
            }
        });
        t.join(T);
        assertFalse(t.isAlive(), "the other thread's call returned");
        return thrown[0];
    }

    private static void refused(Throwable t, String what) {
        assertInstanceOf(WrongThreadException.class, t, what);
        assertTrue(t.getMessage().contains("confined to thread \"" + Thread.currentThread().getName() + "\""),
                what + " names the owner: " + t.getMessage());
    }

    @Test
    void confinedQueuesBelongToTheirThread(TestDevice device) throws Exception {
        List<String> ran = new ArrayList<>();
        try (Loopback lb = new Loopback(device, 4096, c -> c.withDepth(DEPTH, DEPTH).withSignalEvery(1).withConfined(true),
                false, true, client -> { })) {
            QueuePair qp = lb.client.qp;
            CompletionQueue cq = lb.client.cq;
            RegisteredBuffer buf = lb.client.buffer;
            RemoteBuffer remote = lb.serverRemote();
            assertTrue(cq.isConfined(), "made by createConfinedCompletionQueue");

            buf.segment().set(ValueLayout.JAVA_LONG, 0, 0x0C0F_1AEDL);
            assertEquals(QueuePair.OK, qp.write(1, buf, 0, 8, remote, 0, true));
            List<Polling.Seen> seen = Polling.await(cq, 1, T);
            assertEquals(1, seen.get(0).wrId());
            assertEquals(WcStatus.SUCCESS, seen.get(0).status());
            assertEquals(0x0C0F_1AEDL, lb.server.buffer.segment().get(ValueLayout.JAVA_LONG, 0), "the write landed");
            ran.add("owner posts and polls");

            refused(onOtherThread(() -> qp.write(2, buf, 0, 8, remote, 0, true)), "a write from another thread");
            ran.add("post from another thread");
            refused(onOtherThread(() -> qp.receive(3, buf, 0, 8)), "a receive from another thread");
            ran.add("receive from another thread");
            refused(onOtherThread(() -> cq.poll(null, 1)), "a poll from another thread");
            ran.add("poll from another thread");
            refused(onOtherThread(qp::close), "closing the queue pair from another thread");
            ran.add("close the queue pair from another thread");
            refused(onOtherThread(cq::close), "closing the completion queue from another thread");
            ran.add("close the completion queue from another thread");
            refused(onOtherThread(lb.client.pd::close), "closing the protection domain from another thread");
            ran.add("close its protection domain from another thread");
            refused(onOtherThread(lb.client.context::close), "closing the context from another thread");
            ran.add("close its context from another thread");
            assertFalse(qp.isClosed() || cq.isClosed() || lb.client.pd.isClosed() || lb.client.context.isClosed()
                    || buf.isClosed(), "a refused close closed nothing");
            assertEquals(QueuePair.State.CONNECTED, qp.state());

            // Nothing was half-posted by the refused calls: the full depth is still there, and all of it completes.
            for (int i = 0; i < DEPTH; i++) {
                assertEquals(QueuePair.OK, qp.write(10 + i, buf, 8L * i, 8, remote, 8L * i, true), "write " + i);
            }
            seen = Polling.await(cq, DEPTH, T);
            for (Polling.Seen s : seen) {
                assertEquals(WcStatus.SUCCESS, s.status(), s.toString());
            }
            ran.add("the queue pair works at full depth after the refusals");

            IllegalArgumentException poller = assertThrows(IllegalArgumentException.class,
                    () -> Poller.start(null, IdleStrategy.backoff(), cq));
            assertTrue(poller.getMessage().contains("confined"), poller.getMessage());
            ran.add("a poller on a confined completion queue");

            List<Throwable> inner = new ArrayList<>();
            cq.onHandlerError(inner::add);
            assertEquals(QueuePair.OK, qp.write(30, buf, 0, 8, remote, 0, true));
            long deadline = System.nanoTime() + T * 1_000_000;
            while (cq.poll(c -> cq.poll(null, 1), 16) == 0) {
                assertTrue(System.nanoTime() < deadline, "a completion arrives");
            }
            assertTrue(inner.size() == 1 && inner.get(0).getMessage().contains("re-entered"), inner.toString());
            ran.add("poll re-entered from a handler");

            // The owner closes the completion queue from its own handler: destroyed once that poll returns.
            assertEquals(QueuePair.OK, qp.write(31, buf, 0, 8, remote, 0, true));
            deadline = System.nanoTime() + T * 1_000_000;
            int n;
            while ((n = cq.poll(c -> cq.close(), 16)) == 0) {
                assertTrue(System.nanoTime() < deadline, "a completion arrives");
            }
            assertEquals(1, n);
            assertTrue(cq.isClosed() && qp.isClosed(), "the queue and the queue pairs on it are closed");
            ran.add("close a confined completion queue from its handler");

            IllegalStateException closed = assertThrows(IllegalStateException.class,
                    () -> qp.write(32, buf, 0, 8, remote, 0, true));
            assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
            ran.add("post on a closed confined queue pair");
            assertNull(onOtherThread(qp::close), "closing an already closed queue pair is a no-op on any thread");
            ran.add("double close from another thread");
        }
        System.out.println("highlevel-confined: " + ran.size() + " scenarios, 0 crashed, on " + device.name() + ": " + ran);
    }
}
