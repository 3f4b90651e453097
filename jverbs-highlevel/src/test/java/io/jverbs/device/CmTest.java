package io.jverbs.device;

import io.jverbs.Access;
import io.jverbs.CompletionQueue;
import io.jverbs.Context;
import io.jverbs.IdleStrategy;
import io.jverbs.Poller;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.Rdma;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.cm.CmConnection;
import io.jverbs.cm.RdmaCm;
import io.jverbs.cm.RdmaCmException;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Connections through rdma_cm on a real device: connect/accept, data, the peer's disconnect, refusal and unreachable peers. */
@DeviceTest
class CmTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    private static QueuePair queuePair(Context ctx, ProtectionDomain pd) {
        CompletionQueue cq = ctx.createCompletionQueue(256);
        return pd.createQueuePair(QueuePairConfig.rc(cq));
    }

    @Test
    void connectWriteReadAndPeerDisconnect(TestDevice device) throws Exception {
        assertNotNull(device.ip(), "the rig sets JVERBS_TEST_IP");
        try (Context serverCtx = Rdma.open(device.name()); Context clientCtx = Rdma.open(device.name());
             RdmaCm.Listener listener = RdmaCm.listen(device.ip(), 0)) {
            ProtectionDomain spd = serverCtx.allocateProtectionDomain();
            QueuePair sqp = queuePair(serverCtx, spd);
            RegisteredBuffer sbuf = spd.allocate(4096, Access.REMOTE_WRITE, Access.REMOTE_READ);
            ProtectionDomain cpd = clientCtx.allocateProtectionDomain();
            QueuePair cqp = queuePair(clientCtx, cpd);
            RegisteredBuffer cbuf = cpd.allocate(4096);

            CompletableFuture<CmConnection> accepted = CompletableFuture.supplyAsync(() -> listener.accept(sqp, TIMEOUT));
            CmConnection client = RdmaCm.connect(cqp, device.ip(), listener.port(), TIMEOUT);
            CmConnection server = accepted.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            assertEquals(QueuePair.State.CONNECTED, cqp.state());
            assertEquals(QueuePair.State.CONNECTED, sqp.state());
            assertEquals(listener.port(), client.remoteAddress().getPort(), "the client's peer is the listener: " + client.remoteAddress());
            assertEquals(device.ip(), client.remoteAddress().getAddress().getHostAddress());
            assertEquals(client.localAddress(), server.remoteAddress(), "each side sees the other's address");
            assertEquals(client.remoteAddress(), server.localAddress());

            try (Poller poller = Poller.start(null, IdleStrategy.backoff(), cqp.config().sendQueue())) {
                byte[] payload = ("over rdma_cm on " + device.name()).getBytes(StandardCharsets.UTF_8);
                cbuf.segment().copyFrom(MemorySegment.ofArray(payload));
                RemoteBuffer remote = sbuf.remote();
                cqp.async().write(cbuf, 0, payload.length, remote, 128).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
                assertArrayEquals(payload, sbuf.segment().asSlice(128, payload.length).toArray(ValueLayout.JAVA_BYTE));
                cqp.async().read(cbuf, 1024, payload.length, remote, 128).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
                assertArrayEquals(payload, cbuf.segment().asSlice(1024, payload.length).toArray(ValueLayout.JAVA_BYTE));
            }

            long start = System.nanoTime();
            client.close();
            assertTrue(server.awaitDisconnect(TIMEOUT), "the server sees the client's disconnect");
            long ms = (System.nanoTime() - start) / 1_000_000;
            System.out.println("rdma_cm: disconnect seen by the peer after " + ms + " ms on " + device.name());
            assertEquals(QueuePair.State.ERROR, sqp.state());
            IllegalStateException refused = assertThrows(IllegalStateException.class,
                    () -> sqp.send(1, sbuf, 0, 8, true));
            assertTrue(refused.getMessage().contains("peer disconnected"), refused.getMessage());
            assertTrue(cqp.isClosed(), "closing the connection closed its queue pair");
            server.close();
            server.close();
        }
    }

    @Test
    void peerClosingMidStreamFailsThePendingFutures(TestDevice device) throws Exception {
        try (Context serverCtx = Rdma.open(device.name()); Context clientCtx = Rdma.open(device.name());
             RdmaCm.Listener listener = RdmaCm.listen(device.ip(), 0)) {
            ProtectionDomain spd = serverCtx.allocateProtectionDomain();
            QueuePair sqp = queuePair(serverCtx, spd);
            RegisteredBuffer sbuf = spd.allocate(1 << 20, Access.REMOTE_WRITE);
            ProtectionDomain cpd = clientCtx.allocateProtectionDomain();
            QueuePair cqp = queuePair(clientCtx, cpd);
            RegisteredBuffer cbuf = cpd.allocate(1 << 20);
            CompletableFuture<CmConnection> accepted = CompletableFuture.supplyAsync(() -> listener.accept(sqp, TIMEOUT));
            CmConnection client = RdmaCm.connect(cqp, device.ip(), listener.port(), TIMEOUT);
            CmConnection server = accepted.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            try (Poller poller = Poller.start(null, IdleStrategy.backoff(), cqp.config().sendQueue())) {
                java.util.List<CompletableFuture<io.jverbs.WorkResult>> inFlight = new java.util.ArrayList<>();
                RemoteBuffer remote = sbuf.remote();
                for (int i = 0; i < 100; i++) {
                    inFlight.add(cqp.async().write(cbuf, 0, 1 << 20, remote, 0));
                }
                long start = System.nanoTime();
                server.close(); // the peer goes away with the stream running
                int failed = 0;
                for (CompletableFuture<io.jverbs.WorkResult> f : inFlight) {
                    try {
                        f.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
                    } catch (java.util.concurrent.ExecutionException e) {
                        failed++;
                    }
                }
                long ms = (System.nanoTime() - start) / 1_000_000;
                assertTrue(client.awaitDisconnect(TIMEOUT), "the client sees the disconnect");
                assertEquals(QueuePair.State.ERROR, cqp.state(), cqp.error());
                System.out.println("rdma_cm: peer closed mid-stream: " + failed + " of 100 writes failed, all settled in "
                        + ms + " ms; client error: " + cqp.error());
                assertTrue(failed > 0, "some writes were still in flight and failed");
            }
            client.close();
        }
    }

    @Test
    void refusedAndUnreachablePeersFailWithinTheTimeout(TestDevice device) {
        assertNotNull(device.ip(), "the rig sets JVERBS_TEST_IP");
        try (Context ctx = Rdma.open(device.name())) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            int freePort;
            try (RdmaCm.Listener probe = RdmaCm.listen(device.ip(), 0)) {
                freePort = probe.port();
            }
            QueuePair qp = queuePair(ctx, pd);
            long start = System.nanoTime();
            RdmaCmException refused = assertThrows(RdmaCmException.class,
                    () -> RdmaCm.connect(qp, device.ip(), freePort, Duration.ofSeconds(10)));
            long refusedMs = (System.nanoTime() - start) / 1_000_000;
            assertTrue(refused.getMessage().contains("REJECTED") || refused.getMessage().contains("UNREACHABLE"),
                    refused.getMessage());
            assertTrue(refusedMs < 10_000, "within the timeout: " + refusedMs + " ms");
            assertEquals(QueuePair.State.PREPARED, qp.state(), "a failed connect leaves the queue pair prepared");

            String nobody = device.ip().substring(0, device.ip().lastIndexOf('.') + 1) + "254";
            start = System.nanoTime();
            RdmaCmException unreachable = assertThrows(RdmaCmException.class,
                    () -> RdmaCm.connect(qp, nobody, 7471, Duration.ofSeconds(4)));
            long unreachableMs = (System.nanoTime() - start) / 1_000_000;
            assertTrue(unreachableMs < 6_000, "bounded by the 4 s timeout (+ slack): " + unreachableMs + " ms, "
                    + unreachable.getMessage());
            System.out.println("rdma_cm: refused after " + refusedMs + " ms (" + refused.getMessage() + "); unreachable "
                    + nobody + " after " + unreachableMs + " ms (" + unreachable.getMessage() + ")");
        }
    }

    /**
     * A listener closed on another thread ends the accept waiting on it at once, not at the end of
     * its timeout; an interrupted accept ends with EINTR.
     */
    @Test
    void closeOrInterruptEndsAPendingAccept(TestDevice device) throws Exception {
        assertNotNull(device.ip(), "the rig sets JVERBS_TEST_IP");
        try (Context ctx = Rdma.open(device.name())) {
            QueuePair qp = queuePair(ctx, ctx.allocateProtectionDomain());
            RdmaCm.Listener listener = RdmaCm.listen(device.ip(), 0);
            java.util.concurrent.CountDownLatch entering = new java.util.concurrent.CountDownLatch(1);
            CompletableFuture<CmConnection> pending = CompletableFuture.supplyAsync(() -> {
                entering.countDown();
                return listener.accept(qp, Duration.ofSeconds(60));
            });
            assertTrue(entering.await(10, TimeUnit.SECONDS));
            Thread.sleep(1_000); // into its wait
            long start = System.nanoTime();
            listener.close();
            java.util.concurrent.ExecutionException ended = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> pending.get(10, TimeUnit.SECONDS));
            long closedMs = (System.nanoTime() - start) / 1_000_000;
            assertTrue(ended.getCause() instanceof IllegalStateException, String.valueOf(ended.getCause()));
            assertTrue(ended.getCause().getMessage().contains("was closed while an accept waited"), ended.getCause().getMessage());
            assertTrue(closedMs < 5_000, "the 60 s accept ended " + closedMs + " ms after the close");
            assertEquals(QueuePair.State.PREPARED, qp.state(), "the queue pair is still usable");

            java.util.concurrent.atomic.AtomicReference<Throwable> seen = new java.util.concurrent.atomic.AtomicReference<>();
            try (RdmaCm.Listener second = RdmaCm.listen(device.ip(), 0)) {
                Thread waiter = new Thread(() -> {
                    try {
                        second.accept(qp, Duration.ofSeconds(60));
                    } catch (Throwable t) {
                        seen.set(t);
                    }
                });
                waiter.start();
                Thread.sleep(1_000);
                start = System.nanoTime();
                waiter.interrupt();
                waiter.join(10_000);
                long interruptedMs = (System.nanoTime() - start) / 1_000_000;
                assertTrue(seen.get() instanceof RdmaCmException e && e.errno() == io.jverbs.ibverbs.Errno.EINTR,
                        String.valueOf(seen.get()));
                assertTrue(interruptedMs < 5_000, "ended " + interruptedMs + " ms after the interrupt");
                System.out.println("rdma_cm on " + device.name() + ": a 60 s accept ended " + closedMs + " ms after its listener's close ("
                        + ended.getCause().getMessage() + ") and " + interruptedMs + " ms after an interrupt (" + seen.get().getMessage() + ")");
            }
        }
    }
}
