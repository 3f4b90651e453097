package io.jverbs.device;

import io.jverbs.Access;
import io.jverbs.CompletionFailedException;
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
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a remote buffer's rights refuse before posting, and receives posted before the connect, on
 * a real device.
 */
@DeviceTest
class RightsAndEarlyReceivesTest {
    private static final long T = 20;

    private static QueuePairConfig config(CompletionQueue cq, TestDevice device) {
        QueuePairConfig c = QueuePairConfig.rc(cq).withDepth(16, 16);
        return device.gidIndexEnv() >= 0 ? c.withGidIndex(device.gidIndexEnv()) : c;
    }

    @Test
    void aPostTheRemoteRightsForbidIsRefusedBeforeTheDevice(TestDevice device) throws Exception {
        try (Loopback lb = new Loopback(device, 4096)) {
            RegisteredBuffer writeOnly = lb.server.pd.allocate(4096, Access.REMOTE_WRITE);
            RemoteBuffer remote = RemoteBuffer.fromBytes(writeOnly.remote().toBytes()); // as it travels
            assertEquals(EnumSet.of(Access.REMOTE_WRITE), remote.rights(), "the rights travel with the buffer");
            IllegalArgumentException read = assertThrows(IllegalArgumentException.class,
                    () -> lb.client.qp.async().read(lb.client.buffer, 0, 64, remote, 0));
            assertTrue(read.getMessage().contains("RDMA Read refused"), read.getMessage());
            assertThrows(IllegalArgumentException.class,
                    () -> lb.client.qp.fetchAndAdd(1, lb.client.buffer, 0, remote, 0, 1, true));
            assertEquals(QueuePair.State.CONNECTED, lb.client.qp.state(), "nothing reached the device");
            lb.client.startPoller();
            lb.client.qp.async().write(lb.client.buffer, 0, 64, remote, 0).get(T, TimeUnit.SECONDS);
            System.out.println("rights: RDMA Read of a write-only buffer refused before posting on " + device.name()
                    + ": " + read.getMessage());
        }
    }

    @Test
    void aSendRightAfterConnectFindsTheReceivePostedBeforeIt(TestDevice device) throws Exception {
        try (Context a = Rdma.open(device.name()); Context b = Rdma.open(device.name())) {
            ProtectionDomain pda = a.allocateProtectionDomain();
            ProtectionDomain pdb = b.allocateProtectionDomain();
            CompletionQueue cqa = a.createCompletionQueue(64);
            CompletionQueue cqb = b.createCompletionQueue(64);
            // no receiver-not-ready retry at all: a Send that finds no receive fails at once
            QueuePair sender = pda.createQueuePair(config(cqa, device).withRnrRetry(0, 12));
            QueuePair receiver = pdb.createQueuePair(config(cqb, device).withRnrRetry(0, 12));
            RegisteredBuffer out = pda.allocate(4096);
            RegisteredBuffer in = pdb.allocate(4096);
            try (Poller pa = Poller.start(null, IdleStrategy.busySpin(), cqa);
                 Poller pb = Poller.start(null, IdleStrategy.busySpin(), cqb)) {
                assertEquals(QueuePair.State.PREPARED, receiver.state());
                CompletableFuture<WorkResult> arrived = receiver.async().receive(in, 0, 256); // before any connect
                receiver.connect(sender.localEndpoint());
                sender.connect(receiver.localEndpoint());
                byte[] hello = ("first message on " + device.name()).getBytes(StandardCharsets.UTF_8);
                out.segment().copyFrom(MemorySegment.ofArray(hello));
                try {
                    sender.async().send(out, 0, hello.length).get(T, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof CompletionFailedException cf) {
                        throw new AssertionError("the first Send failed (" + cf.statusName() + "): the receive posted"
                                + " before the connect was not there", cf);
                    }
                    throw e;
                }
                WorkResult r = arrived.get(T, TimeUnit.SECONDS);
                assertEquals(hello.length, r.byteLength());
                assertArrayEquals(hello, in.segment().asSlice(0, hello.length).toArray(ValueLayout.JAVA_BYTE));
                System.out.println("early receive: a Send right after connect, RNR retry 0, landed in the receive"
                        + " posted before the connect on " + device.name());
            }
        }
    }
}
