package io.jverbs.device;

import io.jverbs.CompletionQueue;
import io.jverbs.Context;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.Rdma;
import io.jverbs.RegisteredBuffer;
import io.jverbs.DatagramQueuePair;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Unreliable datagram Send/Receive through jverbs-highlevel on a real device. */
@DeviceTest
class DatagramTest {
    /** A datagram queue pair on {@code side} with C perftest's Q_Key, both queues {@code depth} deep, on the test GID. */
    private static DatagramQueuePair datagramQp(Side side, int depth, TestDevice device) {
        return DatagramQueuePair.create(side.pd(), side.cq(), depth, DatagramQueuePair.DEFAULT_QKEY, device.gidIndexEnv());
    }

    /** One side of a datagram exchange: its own device context, protection domain and completion queue. */
    private record Side(Context context, ProtectionDomain pd, CompletionQueue cq) implements AutoCloseable {
        static Side open(TestDevice device) {
            Context c = Rdma.open(device.name());
            return new Side(c, c.allocateProtectionDomain(), c.createCompletionQueue(128));
        }

        @Override
        public void close() {
            context.close();
        }
    }

    @Test
    void datagramsArriveAfterTheRoutingHeader(TestDevice device) {
        try (Side a = Side.open(device); Side b = Side.open(device)) {
            DatagramQueuePair sender = datagramQp(a, 8, device);
            // the receiver names its port: rxe has one
            DatagramQueuePair receiver = DatagramQueuePair.create(b.pd(), b.cq(), 8, DatagramQueuePair.DEFAULT_QKEY, 1, device.gidIndexEnv());
            assertThrows(IllegalArgumentException.class,
                    () -> DatagramQueuePair.create(b.pd(), b.cq(), 8, DatagramQueuePair.DEFAULT_QKEY, 0, -1), "port 0");
            io.jverbs.ibverbs.VerbsException noPort = assertThrows(io.jverbs.ibverbs.VerbsException.class,
                    () -> DatagramQueuePair.create(b.pd(), b.cq(), 8, DatagramQueuePair.DEFAULT_QKEY, 2, -1),
                    "port 2 of the one-port " + device.name());
            assertTrue(noPort.getMessage().startsWith("ibv_query_port failed"), noPort.getMessage());
            RegisteredBuffer out = a.pd().allocate(4096);
            RegisteredBuffer in = b.pd().allocate(4096);
            for (int i = 0; i < 3; i++) {
                assertEquals(QueuePair.OK, receiver.receive(10 + i, in, i * 1024L, 1024));
            }
            DatagramQueuePair.Destination to = sender.destination(receiver.address());
            for (int i = 0; i < 3; i++) {
                byte[] msg = ("datagram " + i + " on " + device.name()).getBytes(StandardCharsets.US_ASCII);
                out.segment().asSlice(i * 256L, msg.length).copyFrom(MemorySegment.ofArray(msg));
                assertEquals(QueuePair.OK, sender.send(i, to, out, i * 256L, msg.length));
            }
            Polling.await(a.cq(), 3, 20_000).forEach(s -> assertEquals("SUCCESS", s.statusName(), s.toString()));
            List<Polling.Seen> got = Polling.await(b.cq(), 3, 20_000);
            for (int i = 0; i < 3; i++) {
                byte[] msg = ("datagram " + i + " on " + device.name()).getBytes(StandardCharsets.US_ASCII);
                Polling.Seen s = got.get(i);
                assertEquals(10L + i, s.wrId());
                assertEquals(msg.length + DatagramQueuePair.GRH_BYTES, s.byteLength(), "length counts the GRH");
                assertArrayEquals(msg, in.segment().asSlice(i * 1024L + DatagramQueuePair.GRH_BYTES, msg.length)
                        .toArray(ValueLayout.JAVA_BYTE));
            }
            assertThrows(IllegalArgumentException.class, () -> receiver.receive(1, in, 0, 16), "receive below the GRH size");
            assertThrows(IllegalArgumentException.class, () -> sender.send(1, to, out, 0, 4000), "a datagram above the MTU");
            DatagramQueuePair.Destination foreign = receiver.destination(sender.address());
            assertThrows(IllegalArgumentException.class, () -> sender.send(1, foreign, out, 0, 8), "another QP's destination");
        }
    }

    /**
     * rdma_cm's UDP port space: a client resolves a listener's datagram queue pair (its number,
     * Q_Key and GID come back in the answer), sends it a datagram with its own number as immediate,
     * and the listener answers through an address handle made from that datagram's completion and
     * routing header ({@code replyTo}). Then the refusals: a Q_Key rdma_cm does not use, a
     * resolution nobody listens for (a refusal, within the timeout), the wrong listener kind, and
     * a reply to a completion that is not a receive.
     */
    @Test
    void datagramPeersResolvedThroughRdmaCm(TestDevice device) throws Exception {
        assertTrue(device.ip() != null, "the rig sets JVERBS_TEST_IP");
        java.time.Duration timeout = java.time.Duration.ofSeconds(20);
        try (Side a = Side.open(device); Side b = Side.open(device);
             io.jverbs.cm.RdmaCm.Listener listener = io.jverbs.cm.RdmaCm.listenDatagrams(device.ip(), 0)) {
            DatagramQueuePair client = DatagramQueuePair.create(a.pd(), a.cq(), 8, io.jverbs.cm.RdmaCm.UDP_QKEY, device.gidIndexEnv());
            DatagramQueuePair server = DatagramQueuePair.create(b.pd(), b.cq(), 8, io.jverbs.cm.RdmaCm.UDP_QKEY, device.gidIndexEnv());
            RegisteredBuffer cbuf = a.pd().allocate(4096);
            RegisteredBuffer sbuf = b.pd().allocate(4096);
            assertEquals(QueuePair.OK, server.receive(1, sbuf, 0, 1024));
            java.util.concurrent.CompletableFuture<java.net.InetSocketAddress> answered = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> listener.acceptDatagram(server, timeout));
            DatagramQueuePair.Address peer = io.jverbs.cm.RdmaCm.connectDatagram(client, device.ip(), listener.port(), timeout);
            java.net.InetSocketAddress requester = answered.get(20, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(device.ip(), requester.getAddress().getHostAddress(), "the listener learns who asked: " + requester);
            assertTrue(requester.getPort() > 0 && requester.getPort() != listener.port(), "the requester's own port: " + requester);
            assertEquals(server.number(), peer.qpn(), "the answer names the listener's queue pair");
            assertEquals(io.jverbs.cm.RdmaCm.UDP_QKEY, peer.qkey());
            assertArrayEquals(server.address().gid(), peer.gid(), "and the path to its GID");

            DatagramQueuePair.Destination toServer = client.destination(peer);
            byte[] ping = ("ping over rdma_cm on " + device.name()).getBytes(StandardCharsets.US_ASCII);
            cbuf.segment().copyFrom(MemorySegment.ofArray(ping));
            assertEquals(QueuePair.OK, client.sendWithImmediate(2, toServer, cbuf, 0, ping.length, client.number()));
            assertEquals("SUCCESS", Polling.await(a.cq(), 1, 20_000).get(0).statusName());
            DatagramQueuePair.Destination[] reply = new DatagramQueuePair.Destination[1];
            int[] seen = new int[3];
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (reply[0] == null && System.nanoTime() < deadline) {
                b.cq().poll(wc -> {
                    seen[0] = wc.hasImmediate() ? wc.immediateData() : -1;
                    seen[1] = wc.sourceQueuePair();
                    seen[2] = wc.byteLength();
                    reply[0] = server.replyTo(wc, sbuf, 0, io.jverbs.cm.RdmaCm.UDP_QKEY);
                }, 1);
            }
            assertTrue(reply[0] != null, "the ping arrived");
            assertEquals(client.number(), seen[0], "the immediate carries the client's QP number (host order)");
            assertEquals(client.number(), seen[1], "src_qp names the sender");
            assertEquals(ping.length + DatagramQueuePair.GRH_BYTES, seen[2]);
            assertEquals(client.number(), reply[0].qpn());
            assertArrayEquals(ping, sbuf.segment().asSlice(DatagramQueuePair.GRH_BYTES, ping.length).toArray(ValueLayout.JAVA_BYTE));

            assertEquals(QueuePair.OK, client.receive(3, cbuf, 1024, 1024));
            byte[] pong = "pong".getBytes(StandardCharsets.US_ASCII);
            sbuf.segment().asSlice(2048, pong.length).copyFrom(MemorySegment.ofArray(pong));
            assertEquals(QueuePair.OK, server.send(4, reply[0], sbuf, 2048, pong.length));
            assertEquals("SUCCESS", Polling.await(b.cq(), 1, 20_000).get(0).statusName());
            assertEquals(3L, Polling.await(a.cq(), 1, 20_000).get(0).wrId());
            assertArrayEquals(pong, cbuf.segment().asSlice(1024 + DatagramQueuePair.GRH_BYTES, pong.length)
                    .toArray(ValueLayout.JAVA_BYTE), "the reply found its way back through the handle made from the GRH");

            // a send completion is no datagram to reply to (the handler keeps what it threw: poll counts
            // a handler's exception and goes on)
            assertEquals(QueuePair.OK, client.send(5, toServer, cbuf, 0, 4));
            RuntimeException[] thrown = new RuntimeException[1];
            long until = System.nanoTime() + 20_000_000_000L;
            while (thrown[0] == null && System.nanoTime() < until) {
                a.cq().poll(wc -> {
                    try {
                        client.replyTo(wc, cbuf, 0, io.jverbs.cm.RdmaCm.UDP_QKEY);
                    } catch (RuntimeException e) {
                        thrown[0] = e;
                    }
                }, 1);
            }
            assertTrue(thrown[0] instanceof IllegalArgumentException && thrown[0].getMessage().contains("not a successful receive"),
                    String.valueOf(thrown[0]));

            DatagramQueuePair wrongKey = DatagramQueuePair.create(a.pd(), a.cq(), 8, DatagramQueuePair.DEFAULT_QKEY,
                    device.gidIndexEnv());
            IllegalArgumentException qkey = assertThrows(IllegalArgumentException.class,
                    () -> io.jverbs.cm.RdmaCm.connectDatagram(wrongKey, device.ip(), listener.port(), timeout));
            assertTrue(qkey.getMessage().contains("RdmaCm.UDP_QKEY"), qkey.getMessage());
            assertThrows(IllegalStateException.class, () -> listener.accept(null, timeout), "a datagram listener accepts no connections");

            int freePort;
            try (io.jverbs.cm.RdmaCm.Listener probe = io.jverbs.cm.RdmaCm.listenDatagrams(device.ip(), 0)) {
                freePort = probe.port();
            }
            // close() returns at once and the id is destroyed on the reaper: the port is free once it is
            long freed = System.nanoTime() + 10_000_000_000L;
            while (io.jverbs.cm.RdmaCm.pendingDestroys() > 0 && System.nanoTime() < freed) {
                Thread.sleep(20);
            }
            long start = System.nanoTime();
            io.jverbs.cm.RdmaCmException nobody = assertThrows(io.jverbs.cm.RdmaCmException.class,
                    () -> io.jverbs.cm.RdmaCm.connectDatagram(client, device.ip(), freePort, java.time.Duration.ofSeconds(10)));
            long ms = (System.nanoTime() - start) / 1_000_000;
            System.out.println("rdma_cm datagram resolution, nobody listening, on " + device.name() + ": " + ms + " ms: "
                    + nobody.getMessage());
            assertTrue(nobody.isRefusal(), "an answer that nothing listens is a refusal a client may retry: "
                    + nobody.getMessage());
            assertTrue(ms < 10_000, ms + " ms");
        }
    }

    /**
     * Datagram post lists: three rounds of a batch of four sends (only the last signaled, as the
     * batch forces) through a send queue of depth 8, which only works when each round's single
     * completion gives the queue back the room of all four; every datagram arrives in order. Then
     * the refusals: a full batch, a foreign destination, a datagram over the MTU, a batch of
     * another queue pair, and a whole list that does not fit (SEND_QUEUE_FULL, nothing posted).
     */
    @Test
    void datagramBatchesPostedAsOneList(TestDevice device) {
        try (Side a = Side.open(device); Side b = Side.open(device)) {
            DatagramQueuePair sender = datagramQp(a, 8, device);
            DatagramQueuePair receiver = datagramQp(b, 16, device);
            RegisteredBuffer out = a.pd().allocate(4096);
            RegisteredBuffer in = b.pd().allocate(16 * 256);
            DatagramQueuePair.Destination to = sender.destination(receiver.address());
            io.jverbs.DatagramBatch batch = sender.newBatch(4);
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < 4; i++) {
                    int k = round * 4 + i;
                    assertEquals(QueuePair.OK, receiver.receive(100 + k, in, k * 256L, 256));
                    out.segment().set(ValueLayout.JAVA_LONG, k * 64L, 0x5EED0000L + k);
                    batch.send(k, to, out, k * 64L, 8, false);
                }
                assertEquals(QueuePair.OK, sender.post(batch), "round " + round);
                assertEquals(0, batch.size(), "posting clears the batch");
                List<Polling.Seen> done = Polling.await(a.cq(), 1, 20_000);
                assertEquals(round * 4L + 3, done.get(0).wrId(), "one completion per batch, its last send's");
                assertEquals("SUCCESS", done.get(0).statusName());
            }
            List<Polling.Seen> got = Polling.await(b.cq(), 12, 20_000);
            for (int k = 0; k < 12; k++) {
                assertEquals(100L + k, got.get(k).wrId(), "datagram " + k + " in order");
                assertEquals(0x5EED0000L + k, in.segment().get(ValueLayout.JAVA_LONG, k * 256L + DatagramQueuePair.GRH_BYTES));
            }
            for (int i = 0; i < 4; i++) {
                batch.send(50 + i, to, out, 0, 8, false);
            }
            assertThrows(IllegalStateException.class, () -> batch.send(60, to, out, 0, 8, true), "a full batch");
            DatagramQueuePair.Destination foreign = receiver.destination(sender.address());
            io.jverbs.DatagramBatch small = sender.newBatch(2);
            assertThrows(IllegalArgumentException.class, () -> small.send(1, foreign, out, 0, 8, true), "another QP's destination");
            assertThrows(IllegalArgumentException.class, () -> small.send(1, to, out, 0, 4000, true), "over the MTU");
            assertThrows(IllegalArgumentException.class, () -> receiver.post(small), "a batch of another queue pair");
            assertThrows(IllegalArgumentException.class, () -> sender.newBatch(9), "more than the queue holds");
            for (int i = 0; i < 6; i++) { // 6 single sends outstanding: the batch of 4 no longer fits in 8
                assertEquals(QueuePair.OK, sender.send(70 + i, to, out, 0, 8));
            }
            assertEquals(QueuePair.SEND_QUEUE_FULL, sender.post(batch), "the whole list or nothing");
            assertEquals(4, batch.size(), "a list that did not fit is kept");
            System.out.println("datagram batches on " + device.name() + ": 3 lists of 4 through a queue of 8, 12 datagrams in order");
        }
    }

    /**
     * A closed destination refuses sends at once but keeps its address handle until the sends
     * posted before its close completed (they are still delivered); a batch holding it is
     * refused whole. Then as many make-and-close cycles as the device has address handles, and
     * more: without the release, {@code ibv_create_ah} would run out.
     */
    @Test
    void closedDestinationsReleaseTheirHandles(TestDevice device) {
        try (Side a = Side.open(device); Side b = Side.open(device)) {
            DatagramQueuePair sender = datagramQp(a, 8, device);
            DatagramQueuePair receiver = datagramQp(b, 8, device);
            RegisteredBuffer out = a.pd().allocate(4096);
            RegisteredBuffer in = b.pd().allocate(4096);
            DatagramQueuePair.Destination to = sender.destination(receiver.address());
            DatagramQueuePair.Destination kept = sender.destination(receiver.address());
            assertEquals(2, sender.addressHandles());
            for (int i = 0; i < 3; i++) {
                assertEquals(QueuePair.OK, receiver.receive(10 + i, in, i * 256L, 256));
                out.segment().set(ValueLayout.JAVA_LONG, i * 64L, 0xC105E0L + i);
                assertEquals(QueuePair.OK, sender.send(i, to, out, i * 64L, 8));
            }
            to.close(); // 3 sends not yet polled: the handle must outlive them
            assertTrue(to.isClosed());
            assertEquals(2, sender.addressHandles(), "released while 3 sends were outstanding");
            IllegalStateException refused = assertThrows(IllegalStateException.class, () -> sender.send(9, to, out, 0, 8));
            assertTrue(refused.getMessage().contains("is closed"), refused.getMessage());
            Polling.await(a.cq(), 3, 20_000).forEach(s -> assertEquals("SUCCESS", s.statusName(), s.toString()));
            assertEquals(1, sender.addressHandles(), "not released once the sends before the close completed");
            List<Polling.Seen> got = Polling.await(b.cq(), 3, 20_000);
            for (int i = 0; i < 3; i++) {
                assertEquals(0xC105E0L + i, in.segment().get(ValueLayout.JAVA_LONG, i * 256L + DatagramQueuePair.GRH_BYTES),
                        "datagram " + i + ", posted before the close");
            }
            to.close();
            assertEquals(1, sender.addressHandles(), "a second close is a no-op");

            io.jverbs.DatagramBatch batch = sender.newBatch(2);
            batch.send(20, kept, out, 0, 8, false);
            kept.close(); // nothing outstanding: released at once
            assertEquals(0, sender.addressHandles());
            assertThrows(IllegalStateException.class, () -> sender.post(batch), "a batch holding a closed destination");
            assertEquals(1, batch.size(), "the refused batch is kept");
            assertThrows(IllegalStateException.class, () -> batch.send(21, kept, out, 0, 8, true), "adding a closed destination");

            int maxAh = a.context().deviceAttributes().maxAh();
            int cycles = maxAh > 0 && maxAh <= 50_000 ? maxAh + 64 : 1_000;
            long t0 = System.nanoTime();
            for (int i = 0; i < cycles; i++) {
                sender.destination(receiver.address()).close();
            }
            assertEquals(0, sender.addressHandles());
            DatagramQueuePair.Destination last = sender.destination(receiver.address());
            assertEquals(QueuePair.OK, receiver.receive(30, in, 0, 256));
            assertEquals(QueuePair.OK, sender.send(30, last, out, 0, 8));
            Polling.await(b.cq(), 1, 20_000).forEach(s -> assertEquals("SUCCESS", s.statusName(), s.toString()));
            long cycleMs = (System.nanoTime() - t0) / 1_000_000;
            String exhausted = "not tried (max_ah " + maxAh + ")";
            if (maxAh > 0 && maxAh <= 50_000) { // kept open, the handles run out, and the error says why
                DatagramQueuePair hoarder = datagramQp(a, 2, device);
                io.jverbs.ibverbs.VerbsException full = assertThrows(io.jverbs.ibverbs.VerbsException.class, () -> {
                    for (int i = 0; i <= maxAh; i++) {
                        hoarder.destination(receiver.address());
                    }
                });
                assertTrue(full.getMessage().startsWith("ibv_create_ah failed") && full.getMessage().contains("close the destinations"),
                        full.getMessage());
                exhausted = hoarder.addressHandles() + " kept open, then: " + full.getMessage();
                hoarder.close();
                assertEquals(0, hoarder.addressHandles());
                sender.destination(receiver.address()).close(); // the device has handles again
            }
            System.out.println("destinations on " + device.name() + ": released after their 3 sends; " + cycles
                    + " made and closed (max_ah " + maxAh + ") in " + cycleMs + " ms; " + exhausted);
        }
    }
}
