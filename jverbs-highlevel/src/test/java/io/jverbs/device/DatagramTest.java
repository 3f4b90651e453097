package io.jverbs.device;

import io.jverbs.CompletionQueue;
import io.jverbs.Context;
import io.jverbs.DatagramQueuePair;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.Rdma;
import io.jverbs.RegisteredBuffer;
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
    /** One side of a datagram exchange: its own device context, protection domain and completion queue. */
    private record Side(Context context, ProtectionDomain pd, CompletionQueue cq) implements AutoCloseable {
        static Side open(TestDevice device) {
            Context c = Rdma.open(device.name());
            return new Side(c, c.allocateProtectionDomain(), c.createCompletionQueue(32));
        }

        @Override
        public void close() {
            context.close();
        }
    }

    @Test
    void datagramsArriveAfterTheRoutingHeader(TestDevice device) {
        try (Side a = Side.open(device); Side b = Side.open(device)) {
            DatagramQueuePair sender = DatagramQueuePair.create(a.pd(), a.cq(), 8, DatagramQueuePair.DEFAULT_QKEY, device.gidIndexEnv());
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
     * Datagram post lists: three rounds of a batch of four sends (only the last signaled, as the
     * batch forces) through a send queue of depth 8, which only works when each round's single
     * completion gives the queue back the room of all four; every datagram arrives in order. Then
     * the refusals: a full batch, a foreign destination, a datagram over the MTU, a batch of
     * another queue pair, and a whole list that does not fit (SEND_QUEUE_FULL, nothing posted).
     */
    @Test
    void datagramBatchesPostedAsOneList(TestDevice device) {
        try (Side a = Side.open(device); Side b = Side.open(device)) {
            DatagramQueuePair sender = DatagramQueuePair.create(a.pd(), a.cq(), 8, DatagramQueuePair.DEFAULT_QKEY, device.gidIndexEnv());
            DatagramQueuePair receiver = DatagramQueuePair.create(b.pd(), b.cq(), 16, DatagramQueuePair.DEFAULT_QKEY, device.gidIndexEnv());
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
}
