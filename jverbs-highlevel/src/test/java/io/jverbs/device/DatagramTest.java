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
    @Test
    void datagramsArriveAfterTheRoutingHeader(TestDevice device) {
        try (Context a = Rdma.open(device.name()); Context b = Rdma.open(device.name())) {
            ProtectionDomain pa = a.allocateProtectionDomain();
            ProtectionDomain pb = b.allocateProtectionDomain();
            CompletionQueue ca = a.createCompletionQueue(32);
            CompletionQueue cb = b.createCompletionQueue(32);
            DatagramQueuePair sender = DatagramQueuePair.create(pa, ca, 8, DatagramQueuePair.DEFAULT_QKEY, device.gidIndexEnv());
            // the receiver names its port: rxe has one
            DatagramQueuePair receiver = DatagramQueuePair.create(pb, cb, 8, DatagramQueuePair.DEFAULT_QKEY, 1, device.gidIndexEnv());
            assertThrows(IllegalArgumentException.class,
                    () -> DatagramQueuePair.create(pb, cb, 8, DatagramQueuePair.DEFAULT_QKEY, 0, -1), "port 0");
            io.jverbs.ibverbs.VerbsException noPort = assertThrows(io.jverbs.ibverbs.VerbsException.class,
                    () -> DatagramQueuePair.create(pb, cb, 8, DatagramQueuePair.DEFAULT_QKEY, 2, -1),
                    "port 2 of the one-port " + device.name());
            assertTrue(noPort.getMessage().startsWith("ibv_query_port failed"), noPort.getMessage());
            RegisteredBuffer out = pa.allocate(4096);
            RegisteredBuffer in = pb.allocate(4096);
            for (int i = 0; i < 3; i++) {
                assertEquals(QueuePair.OK, receiver.receive(10 + i, in, i * 1024L, 1024));
            }
            DatagramQueuePair.Destination to = sender.destination(receiver.address());
            for (int i = 0; i < 3; i++) {
                byte[] msg = ("datagram " + i + " on " + device.name()).getBytes(StandardCharsets.US_ASCII);
                out.segment().asSlice(i * 256L, msg.length).copyFrom(MemorySegment.ofArray(msg));
                assertEquals(QueuePair.OK, sender.send(i, to, out, i * 256L, msg.length));
            }
            Polling.await(ca, 3, 20_000).forEach(s -> assertEquals("SUCCESS", s.statusName(), s.toString()));
            List<Polling.Seen> got = Polling.await(cb, 3, 20_000);
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
}
