package io.jverbs.pair;

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
import io.jverbs.WorkResult;
import io.jverbs.Access;
import io.jverbs.cm.CmConnection;
import io.jverbs.cm.RdmaCm;
import io.jverbs.ibverbs.device.PairControl;
import io.jverbs.ibverbs.device.PairNode;
import io.jverbs.ibverbs.device.PairTest;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * RDMA across the wire between two kernels (node a 6.12, node b 6.1 by default), through
 * jverbs-highlevel: Write, Read, Send (with immediates), atomics, both directions, and rdma_cm;
 * every byte checked against a deterministic pattern on the side that received it, and the
 * verdict sent back so both nodes fail together.
 */
@PairTest
@Order(1)
class PairTransferTest {
    private static final long T = 60_000;

    /** The receiving node checks and reports; both nodes assert the same verdict. */
    private static void agree(PairNode node, boolean checker, String verdictIfChecker) throws Exception {
        PairControl control = node.control();
        String verdict;
        if (checker) {
            control.send("verdict", verdictIfChecker);
            verdict = verdictIfChecker;
        } else {
            verdict = control.expect("verdict");
        }
        assertEquals("ok", verdict, "the receiving node's check (" + node + ")");
    }

    @Test
    @Order(1)
    void writeAcrossKernels(PairNode node) throws Exception {
        int bytes = 256 * 1024; // 256 MTU-sized packets
        try (PairLink link = PairLink.open(node, bytes)) {
            if (node.isA()) {
                PairLink.fill(link.buffer.segment(), 0, bytes, 11);
                link.stream(4, bytes / 4, 4, T);
                node.control().send("written", node.kernel());
                agree(node, false, null);
                System.out.println("pair: " + bytes + " bytes written from kernel " + node.kernel() + " to node b");
            } else {
                String from = node.control().expect("written");
                agree(node, true, PairLink.check(link.buffer.segment(), 0, bytes, 11));
                System.out.println("pair: " + bytes + " bytes received intact on kernel " + node.kernel() + " from kernel " + from);
            }
        }
    }

    @Test
    @Order(2)
    void readAcrossKernels(PairNode node) throws Exception {
        int bytes = 64 * 1024;
        try (PairLink link = PairLink.open(node, 2L * bytes)) {
            if (node.isA()) {
                node.control().expect("filled");
                link.qp.async().read(link.buffer, bytes, bytes, link.peer, 0).get(T, TimeUnit.MILLISECONDS);
                agree(node, true, PairLink.check(link.buffer.segment(), bytes, bytes, 22));
            } else {
                PairLink.fill(link.buffer.segment(), 0, bytes, 22);
                node.control().send("filled", "");
                agree(node, false, null);
            }
        }
    }

    @Test
    @Order(3)
    void sendReceiveAndImmediatesAcrossKernels(PairNode node) throws Exception {
        int size = 3000; // more than one 1024-byte MTU
        try (PairLink link = PairLink.open(node, 8L * size)) {
            if (node.isA()) {
                node.control().expect("posted");
                List<CompletableFuture<WorkResult>> sends = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    PairLink.fill(link.buffer.segment(), (long) i * size, size, 30 + i);
                    sends.add(link.qp.async().send(link.buffer, (long) i * size, size));
                }
                PairLink.fill(link.buffer.segment(), 3L * size, size, 33);
                sends.add(link.qp.async().sendWithImmediate(link.buffer, 3L * size, size, 0xCAFE0001));
                for (CompletableFuture<WorkResult> f : sends) {
                    f.get(T, TimeUnit.MILLISECONDS);
                }
                agree(node, false, null);
            } else {
                List<CompletableFuture<WorkResult>> receives = new ArrayList<>();
                for (int i = 0; i < 4; i++) {
                    receives.add(link.qp.async().receive(link.buffer, (long) i * size, size));
                }
                node.control().send("posted", "");
                String verdict = "ok";
                for (int i = 0; i < 4 && verdict.equals("ok"); i++) {
                    WorkResult r = receives.get(i).get(T, TimeUnit.MILLISECONDS);
                    if (r.byteLength() != size) {
                        verdict = "receive " + i + " got " + r.byteLength() + " bytes, want " + size;
                    } else if (i == 3 && !(r.hasImmediate() && r.immediateData() == 0xCAFE0001)) {
                        verdict = "receive 3 lacks the immediate 0xcafe0001: " + r;
                    } else {
                        verdict = PairLink.check(link.buffer.segment(), (long) i * size, size, 30 + i);
                    }
                }
                agree(node, true, verdict);
            }
        }
    }

    @Test
    @Order(4)
    void atomicsAcrossKernels(PairNode node) throws Exception {
        try (PairLink link = PairLink.open(node, 4096)) {
            if (node.isA()) {
                node.control().expect("set");
                link.qp.async().fetchAndAdd(link.buffer, 0, link.peer, 64, 1).get(T, TimeUnit.MILLISECONDS);
                assertEquals(41L, link.buffer.segment().get(ValueLayout.JAVA_LONG, 0), "fetch-and-add returns the old value");
                link.qp.async().compareAndSwap(link.buffer, 8, link.peer, 64, 42, 1000).get(T, TimeUnit.MILLISECONDS);
                assertEquals(42L, link.buffer.segment().get(ValueLayout.JAVA_LONG, 8), "compare-and-swap returns the old value");
                link.qp.async().compareAndSwap(link.buffer, 16, link.peer, 64, 42, 7).get(T, TimeUnit.MILLISECONDS);
                assertEquals(1000L, link.buffer.segment().get(ValueLayout.JAVA_LONG, 16), "the failed compare sees 1000");
                node.control().send("done", "");
                agree(node, false, null);
            } else {
                link.buffer.segment().set(ValueLayout.JAVA_LONG, 64, 41L);
                node.control().send("set", "");
                node.control().expect("done");
                long value = link.buffer.segment().get(ValueLayout.JAVA_LONG, 64);
                agree(node, true, value == 1000L ? "ok" : "the target holds " + value + ", want 1000 (41 +1, then swapped)");
            }
        }
    }

    /** The same Write the other way: node b's kernel is the requester. */
    @Test
    @Order(5)
    void writeFromTheOtherKernel(PairNode node) throws Exception {
        int bytes = 128 * 1024;
        try (PairLink link = PairLink.open(node, bytes)) {
            if (!node.isA()) {
                PairLink.fill(link.buffer.segment(), 0, bytes, 55);
                link.stream(8, bytes / 8, 8, T);
                node.control().send("written", node.kernel());
                agree(node, false, null);
            } else {
                node.control().expect("written");
                agree(node, true, PairLink.check(link.buffer.segment(), 0, bytes, 55));
            }
        }
    }

    /** rdma_cm across hosts: address and route resolution over the wire, connect, data, disconnect. */
    @Test
    @Order(6)
    void rdmaCmAcrossKernels(PairNode node) throws Exception {
        Duration timeout = Duration.ofSeconds(60);
        try (Context ctx = Rdma.open(node.device().name())) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            CompletionQueue cq = ctx.createCompletionQueue(256);
            QueuePair qp = pd.createQueuePair(QueuePairConfig.rc(cq));
            RegisteredBuffer buf = pd.allocate(8192, Access.REMOTE_WRITE, Access.REMOTE_READ);
            if (!node.isA()) {
                try (RdmaCm.Listener listener = RdmaCm.listen(node.ip(), 0)) {
                    CompletableFuture<CmConnection> accepted = CompletableFuture.supplyAsync(() -> listener.accept(qp, timeout));
                    node.control().send("listening", Integer.toString(listener.port()));
                    node.control().sendBytes("buffer", buf.remote().toBytes());
                    CmConnection server = accepted.get(timeout.toSeconds(), TimeUnit.SECONDS);
                    assertEquals(QueuePair.State.CONNECTED, qp.state());
                    node.control().expect("written");
                    String verdict = PairLink.check(buf.segment(), 100, 4000, 66);
                    node.control().send("verdict", verdict);
                    assertEquals("ok", verdict);
                    assertTrue(server.awaitDisconnect(timeout), "node b sees node a's disconnect");
                    server.close();
                }
            } else {
                int port = Integer.parseInt(node.control().expect("listening"));
                RemoteBuffer remote = RemoteBuffer.fromBytes(node.control().expectBytes("buffer"));
                long t0 = System.nanoTime();
                CmConnection client = RdmaCm.connect(qp, node.peerIp(), port, timeout);
                System.out.println("pair: rdma_cm connected to " + node.peerIp() + ":" + port + " in "
                        + (System.nanoTime() - t0) / 1_000_000 + " ms");
                try (Poller poller = Poller.start(null, IdleStrategy.backoff(), cq)) {
                    PairLink.fill(buf.segment(), 0, 4000, 66);
                    qp.async().write(buf, 0, 4000, remote, 100).get(T, TimeUnit.MILLISECONDS);
                    node.control().send("written", "");
                    qp.async().read(buf, 4096, 4000, remote, 100).get(T, TimeUnit.MILLISECONDS);
                    assertEquals("ok", PairLink.check(buf.segment(), 4096, 4000, 66), "read back over rdma_cm");
                    assertEquals("ok", node.control().expect("verdict"), "node b's check");
                }
                client.close();
            }
        }
    }
}
