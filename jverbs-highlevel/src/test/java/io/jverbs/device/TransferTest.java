package io.jverbs.device;

import io.jverbs.Access;
import io.jverbs.CompletionFailedException;
import io.jverbs.Context;
import io.jverbs.Gid;
import io.jverbs.QueuePair;
import io.jverbs.PreparedRequest;
import io.jverbs.QueuePairConfig;
import io.jverbs.Rdma;
import io.jverbs.RefusedException;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.WcStatus;
import io.jverbs.WorkResult;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import io.jverbs.ibverbs.raw.ibv_qp;
import io.jverbs.ibverbs.raw.verbs_h;
import org.junit.jupiter.api.Test;

import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** jverbs-highlevel on a real device: discovery, RDMA Write/Read/Send/atomics in both styles, errors from the device. */
@DeviceTest
class TransferTest {
    private static final long T = 20_000;

    @Test
    void devicesAndPortAndGid(TestDevice device) {
        Rdma.DeviceList list = Rdma.devices();
        assertTrue(list.devices().stream().anyMatch(d -> d.name().equals(device.name())),
                "Rdma.devices() lists " + device.name() + ": " + list);
        try (Context ctx = Rdma.open(device.name())) {
            Context.PortAttributes port = ctx.port(1);
            assertTrue(port.isActive(), "port 1 ACTIVE on " + device.name());
            assertTrue(port.isEthernet(), "rxe is RoCE");
            Gid gid = ctx.chooseGid(1);
            assertTrue(gid.isRoceV2() && gid.isIpv4Mapped(), "chosen GID is IPv4-mapped RoCE v2: " + gid);
            if (device.gidIndexEnv() >= 0) {
                assertEquals(device.gidIndexEnv(), gid.index(), "the rig's GID index");
            }
            Context.DeviceAttributes attrs = ctx.deviceAttributes();
            assertTrue(attrs.maxQpWr() > 0, "device attributes read");
            // rxe reports 2^64 - 1, which a signed long shows as -1 unless clamped
            assertTrue(attrs.maxMrSizeBytes() > 0, "max MR size " + attrs.maxMrSizeBytes() + " on " + device.name());
        }
    }

    @Test
    void writeThenReadBackFutureStyle(TestDevice device) throws Exception {
        try (Loopback lb = new Loopback(device, 8192)) {
            lb.client.startPoller();
            byte[] payload = "jverbs RDMA Write → Read, byte for byte on ".concat(device.name()).getBytes(StandardCharsets.UTF_8);
            lb.client.buffer.segment().asSlice(100, payload.length).copyFrom(java.lang.foreign.MemorySegment.ofArray(payload));
            RemoteBuffer remote = lb.serverRemote();
            WorkResult w = lb.client.qp.async().write(lb.client.buffer, 100, payload.length, remote, 1000).get(T, TimeUnit.MILLISECONDS);
            assertEquals(verbs_h.IBV_WC_RDMA_WRITE, w.opcode());
            assertArrayEquals(payload, lb.server.buffer.segment().asSlice(1000, payload.length).toArray(ValueLayout.JAVA_BYTE),
                    "the server's buffer holds the payload");
            lb.client.qp.async().read(lb.client.buffer, 4096, payload.length, remote, 1000).get(T, TimeUnit.MILLISECONDS);
            assertArrayEquals(payload, lb.client.buffer.segment().asSlice(4096, payload.length).toArray(ValueLayout.JAVA_BYTE),
                    "read back byte for byte");
            // A large write: more than one MTU, not inline.
            byte[] big = new byte[6000];
            for (int i = 0; i < big.length; i++) {
                big[i] = (byte) (i * 31 + 7);
            }
            lb.client.buffer.segment().asSlice(0, big.length).copyFrom(java.lang.foreign.MemorySegment.ofArray(big));
            lb.client.qp.async().write(lb.client.buffer, 0, big.length, remote, 2000).get(T, TimeUnit.MILLISECONDS);
            assertArrayEquals(big, lb.server.buffer.segment().asSlice(2000, big.length).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void zeroAllocationStyleWithModeration(TestDevice device) throws Exception {
        try (Loopback lb = new Loopback(device, 4096, c -> c.withDepth(32, 32).withSignalEvery(4), false)) {
            RemoteBuffer remote = lb.serverRemote();
            int posts = 40;
            List<String> failures = new ArrayList<>();
            io.jverbs.CompletionHandler noteFailures = c -> {
                if (!c.isSuccess()) {
                    failures.add(c.toString());
                }
            };
            for (int i = 0; i < posts; i++) {
                lb.client.buffer.segment().set(ValueLayout.JAVA_INT, i * 4L, i * 1000 + 1);
                writeWhenRoom(lb, i, i * 4L, remote, false, noteFailures);
            }
            // The signaled last write may find the send queue full too (32 deep, a signal every 4th).
            writeWhenRoom(lb, posts, 0, remote, true, noteFailures);
            long deadline = System.nanoTime() + T * 1_000_000;
            boolean[] sawLast = {false};
            while (!sawLast[0]) {
                assertTrue(System.nanoTime() < deadline, "the signaled write completes");
                lb.client.cq.poll(c -> {
                    noteFailures.onCompletion(c);
                    if (c.wrId() == posts) {
                        sawLast[0] = true;
                    }
                }, 16);
            }
            assertEquals(List.of(), failures, "every completion succeeded");
            assertEquals(0, lb.client.cq.handlerFailures());
            for (int i = 1; i < posts; i++) {
                assertEquals(i * 1000 + 1, lb.server.buffer.segment().get(ValueLayout.JAVA_INT, i * 4L), "word " + i);
            }
        }
    }

    /** Posts a 4-byte write at {@code offset}, polling while the send queue is full; asserts it was posted. */
    private static void writeWhenRoom(Loopback lb, long wrId, long offset, RemoteBuffer remote, boolean signaled,
                                      io.jverbs.CompletionHandler onPolled) {
        int rc;
        long deadline = System.nanoTime() + T * 1_000_000;
        while ((rc = lb.client.qp.write(wrId, lb.client.buffer, offset, 4, remote, offset, signaled))
                == QueuePair.SEND_QUEUE_FULL) {
            assertTrue(System.nanoTime() < deadline, "the send queue drains");
            lb.client.cq.poll(onPolled, 16);
        }
        assertEquals(QueuePair.OK, rc, "write " + wrId + " posted");
    }

    /**
     * Prepared requests: filled once, posted three times each with new ids and new bytes in the
     * local buffer (taken at each post, inline or not); a Send; then the refusals (another queue
     * pair's request, a range outside a buffer, a negative id, a closed local buffer), after which
     * the queue pair still works.
     */
    @Test
    void preparedRequestsPostedManyTimes(TestDevice device) throws Exception {
        try (Loopback lb = new Loopback(device, 16384)) {
            RemoteBuffer remote = lb.serverRemote();
            QueuePair qp = lb.client.qp;
            RegisteredBuffer buf = lb.client.buffer;
            PreparedRequest small = qp.prepareWrite(buf, 0, 8, remote, 64);
            PreparedRequest big = qp.prepareWrite(buf, 4096, 3000, remote, 8192);
            PreparedRequest read = qp.prepareRead(buf, 12288, 8, remote, 64);
            assertEquals(qp.maxInlineData() >= 8, small.isInline(), "8 bytes go inline when the limit allows: " + small);
            assertEquals(qp.maxInlineData() >= 3000, big.isInline(), big.toString());
            assertEquals(false, read.isInline(), "a read is never inline");
            byte[] bytes = new byte[3000];
            for (int round = 0; round < 3; round++) {
                long word = 0x1111_2222_3333_4444L * (round + 1);
                buf.segment().set(ValueLayout.JAVA_LONG, 0, word);
                for (int i = 0; i < bytes.length; i++) {
                    bytes[i] = (byte) (i * 7 + round);
                }
                buf.segment().asSlice(4096, bytes.length).copyFrom(java.lang.foreign.MemorySegment.ofArray(bytes));
                assertEquals(QueuePair.OK, qp.post(small, 100 + round, true));
                assertEquals(QueuePair.OK, qp.post(big, 200 + round, true));
                List<Polling.Seen> writes = Polling.await(lb.client.cq, 2, T);
                assertEquals(List.of(100L + round, 200L + round), writes.stream().map(Polling.Seen::wrId).toList(),
                        "each post's own id, round " + round);
                writes.forEach(w -> assertEquals("SUCCESS", w.statusName(), w.toString()));
                assertEquals(word, lb.server.buffer.segment().get(ValueLayout.JAVA_LONG, 64), "round " + round + "'s word");
                assertArrayEquals(bytes, lb.server.buffer.segment().asSlice(8192, bytes.length).toArray(ValueLayout.JAVA_BYTE),
                        "round " + round + "'s 3000 bytes");
                assertEquals(QueuePair.OK, qp.post(read, 300 + round, true));
                assertEquals(300L + round, Polling.await(lb.client.cq, 1, T).get(0).wrId());
                assertEquals(word, buf.segment().get(ValueLayout.JAVA_LONG, 12288), "read back, round " + round);
            }
            assertEquals(QueuePair.OK, lb.server.qp.receive(9, lb.server.buffer, 0, 64));
            PreparedRequest send = qp.prepareSend(buf, 0, 8);
            assertEquals(QueuePair.OK, qp.post(send, 400, true));
            assertEquals(400L, Polling.await(lb.client.cq, 1, T).get(0).wrId());
            Polling.Seen received = Polling.await(lb.server.cq, 1, T).get(0);
            assertEquals(8, received.byteLength(), received.toString());

            PreparedRequest foreign = lb.server.qp.prepareWrite(lb.server.buffer, 0, 8, remote, 0);
            IllegalArgumentException other = assertThrows(IllegalArgumentException.class, () -> qp.post(foreign, 1, true));
            assertTrue(other.getMessage().contains("belongs to queue pair " + lb.server.qp.number()), other.getMessage());
            assertThrows(IndexOutOfBoundsException.class, () -> qp.prepareWrite(buf, 16380, 8, remote, 0), "local range");
            assertThrows(IndexOutOfBoundsException.class, () -> qp.prepareRead(buf, 0, 8, remote, remote.length() - 4),
                    "remote range");
            assertThrows(IllegalArgumentException.class, () -> qp.post(small, -1, true), "a negative id");
            RegisteredBuffer gone = lb.client.pd.allocate(4096);
            PreparedRequest fromGone = qp.prepareWrite(gone, 0, 8, remote, 0);
            gone.close();
            IllegalStateException closed = assertThrows(IllegalStateException.class, () -> qp.post(fromGone, 1, true));
            assertTrue(closed.getMessage().contains("registered buffer is closed"), closed.getMessage());
            assertEquals(QueuePair.State.CONNECTED, qp.state(), "the refusals posted nothing");
            assertEquals(QueuePair.OK, qp.post(small, 500, true));
            assertEquals("SUCCESS", Polling.await(lb.client.cq, 1, T).get(0).statusName());
            System.out.println("[device " + device.name() + "] prepared requests: 3 rounds of " + small + ", " + big
                    + " and " + read + ", then a Send; refusals as expected");
        }
    }

    @Test
    void batchPostedAsOneList(TestDevice device) throws Exception {
        try (Loopback lb = new Loopback(device, 8192, c -> c.withDepth(16, 16).withSignalEvery(8), false)) {
            RemoteBuffer remote = lb.serverRemote();
            io.jverbs.WorkBatch batch = lb.client.qp.newBatch(8);
            for (int i = 0; i < 8; i++) {
                lb.client.buffer.segment().set(ValueLayout.JAVA_LONG, i * 512L, 0xABCD0000L + i);
                batch.write(i, lb.client.buffer, i * 512L, i % 2 == 0 ? 8 : 300, remote, i * 512L, i == 7);
            }
            assertThrows(IllegalStateException.class, () -> batch.write(99, lb.client.buffer, 0, 8, remote, 0, true),
                    "a full batch refuses more");
            assertEquals(QueuePair.OK, lb.client.qp.post(batch));
            assertEquals(0, batch.size(), "posting clears the batch");
            List<Polling.Seen> seen = Polling.await(lb.client.cq, 1, T);
            assertEquals(7L, seen.get(0).wrId(), "the last (signaled) request completes");
            assertEquals("SUCCESS", seen.get(0).statusName());
            for (int i = 0; i < 8; i++) {
                assertEquals(0xABCD0000L + i, lb.server.buffer.segment().get(ValueLayout.JAVA_LONG, i * 512L), "request " + i);
            }
            io.jverbs.WorkBatch other = lb.server.qp.newBatch(1);
            assertThrows(IllegalArgumentException.class, () -> lb.client.qp.post(other), "a batch of another queue pair");
        }
    }

    @Test
    void sendReceiveAndImmediates(TestDevice device) throws Exception {
        try (Loopback lb = new Loopback(device, 4096)) {
            assertEquals(QueuePair.OK, lb.server.qp.receive(7, lb.server.buffer, 0, 512));
            assertEquals(QueuePair.OK, lb.server.qp.receive(8, lb.server.buffer, 512, 512));
            assertEquals(QueuePair.OK, lb.server.qp.receive(9, lb.server.buffer, 1024, 512));
            byte[] msg = "hello over Send".getBytes(StandardCharsets.US_ASCII);
            lb.client.buffer.segment().asSlice(0, msg.length).copyFrom(java.lang.foreign.MemorySegment.ofArray(msg));
            assertEquals(QueuePair.OK, lb.client.qp.send(1, lb.client.buffer, 0, msg.length, true));
            assertEquals(QueuePair.OK, lb.client.qp.sendWithImmediate(2, lb.client.buffer, 0, msg.length, 0xCAFE, true));
            assertEquals(QueuePair.OK, lb.client.qp.writeWithImmediate(3, lb.client.buffer, 0, msg.length,
                    lb.serverRemote(), 3000, 0xBEEF, true));
            List<Polling.Seen> sent = Polling.await(lb.client.cq, 3, T);
            sent.forEach(s -> assertEquals("SUCCESS", s.statusName(), s.toString()));
            List<Polling.Seen> received = Polling.await(lb.server.cq, 3, T);
            assertEquals(List.of(7L, 8L, 9L), received.stream().map(Polling.Seen::wrId).toList(), "receives in order");
            assertEquals(msg.length, received.get(0).byteLength());
            assertArrayEquals(msg, lb.server.buffer.segment().asSlice(0, msg.length).toArray(ValueLayout.JAVA_BYTE));
            assertTrue(received.get(1).hasImmediate() && received.get(1).immediate() == 0xCAFE, received.get(1).toString());
            assertTrue(received.get(2).hasImmediate() && received.get(2).immediate() == 0xBEEF, received.get(2).toString());
            assertEquals(verbs_h.IBV_WC_RECV_RDMA_WITH_IMM, received.get(2).opcode());
            assertArrayEquals(msg, lb.server.buffer.segment().asSlice(3000, msg.length).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    /**
     * Unreliable connected queue pairs: Write, Write with immediate and Send arrive byte for byte;
     * Read and atomics are refused before anything is posted, and the queue pair stays usable.
     */
    @Test
    void unreliableConnectedWriteAndSend(TestDevice device) throws Exception {
        try (Loopback lb = new Loopback(device, 8192, c -> c.withTransport(QueuePairConfig.Transport.UC), false)) {
            assertEquals(QueuePairConfig.Transport.UC, lb.client.qp.config().transport());
            assertEquals(verbs_h.IBV_QPT_UC, ibv_qp.qp_type(lb.client.qp.handle().reinterpret(ibv_qp.sizeof())),
                    "the device made a UC queue pair");
            byte[] msg = ("UC on " + device.name()).getBytes(StandardCharsets.US_ASCII);
            byte[] big = new byte[3000]; // three packets at rxe's 1024-byte MTU
            for (int i = 0; i < big.length; i++) {
                big[i] = (byte) (i * 13 + 1);
            }
            lb.client.buffer.segment().asSlice(0, msg.length).copyFrom(java.lang.foreign.MemorySegment.ofArray(msg));
            lb.client.buffer.segment().asSlice(4096, big.length).copyFrom(java.lang.foreign.MemorySegment.ofArray(big));
            assertEquals(QueuePair.OK, lb.server.qp.receive(5, lb.server.buffer, 0, 512));
            assertEquals(QueuePair.OK, lb.server.qp.receive(6, lb.server.buffer, 512, 512));
            RemoteBuffer remote = lb.serverRemote();
            assertEquals(QueuePair.OK, lb.client.qp.write(1, lb.client.buffer, 4096, big.length, remote, 4096, true));
            assertEquals(QueuePair.OK, lb.client.qp.send(2, lb.client.buffer, 0, msg.length, true));
            assertEquals(QueuePair.OK, lb.client.qp.writeWithImmediate(3, lb.client.buffer, 0, msg.length, remote, 3000,
                    0x5543, true));
            List<Polling.Seen> sent = Polling.await(lb.client.cq, 3, T);
            sent.forEach(s -> assertEquals("SUCCESS", s.statusName(), s.toString()));
            List<Polling.Seen> received = Polling.await(lb.server.cq, 2, T);
            assertEquals(List.of(5L, 6L), received.stream().map(Polling.Seen::wrId).toList(), "receives in order");
            assertEquals(msg.length, received.get(0).byteLength());
            assertTrue(received.get(1).hasImmediate() && received.get(1).immediate() == 0x5543, received.get(1).toString());
            assertArrayEquals(msg, lb.server.buffer.segment().asSlice(0, msg.length).toArray(ValueLayout.JAVA_BYTE));
            assertArrayEquals(msg, lb.server.buffer.segment().asSlice(3000, msg.length).toArray(ValueLayout.JAVA_BYTE));
            assertArrayEquals(big, lb.server.buffer.segment().asSlice(4096, big.length).toArray(ValueLayout.JAVA_BYTE),
                    "a three-packet UC write arrived whole");
            UnsupportedOperationException read = assertThrows(UnsupportedOperationException.class,
                    () -> lb.client.qp.read(4, lb.client.buffer, 0, 8, remote, 0, true));
            assertTrue(read.getMessage().contains("RDMA Read needs an RC queue pair"), read.getMessage());
            assertThrows(UnsupportedOperationException.class,
                    () -> lb.client.qp.async().fetchAndAdd(lb.client.buffer, 0, remote, 0, 1));
            assertThrows(UnsupportedOperationException.class,
                    () -> lb.client.qp.newBatch(2).read(4, lb.client.buffer, 0, 8, remote, 0, true));
            assertThrows(UnsupportedOperationException.class,
                    () -> lb.client.qp.newBatch(2).fetchAndAdd(4, lb.client.buffer, 0, remote, 0, 1, true),
                    "a batched atomic on UC");
            assertThrows(UnsupportedOperationException.class,
                    () -> lb.client.qp.prepareRead(lb.client.buffer, 0, 8, remote, 0), "a prepared Read on UC");
            assertEquals(QueuePair.State.CONNECTED, lb.client.qp.state(), "a refused Read leaves the queue pair usable");
            assertEquals(QueuePair.OK, lb.client.qp.write(5, lb.client.buffer, 0, msg.length, remote, 6000, true));
            assertEquals("SUCCESS", Polling.await(lb.client.cq, 1, T).get(0).statusName());
            System.out.println("uc: write 3000 B, send, write-with-immediate arrived on " + device.name()
                    + "; read and atomics refused before posting");
        }
    }

    @Test
    void atomics(TestDevice device) throws Exception {
        try (Loopback lb = new Loopback(device, 4096)) {
            lb.client.startPoller();
            lb.server.buffer.segment().set(ValueLayout.JAVA_LONG, 64, 41L);
            RemoteBuffer remote = lb.serverRemote();
            lb.client.qp.async().fetchAndAdd(lb.client.buffer, 0, remote, 64, 1).get(T, TimeUnit.MILLISECONDS);
            assertEquals(41L, lb.client.buffer.segment().get(ValueLayout.JAVA_LONG, 0), "fetch-and-add returns the old value");
            assertEquals(42L, lb.server.buffer.segment().get(ValueLayout.JAVA_LONG, 64));
            lb.client.qp.async().compareAndSwap(lb.client.buffer, 8, remote, 64, 42, 1000).get(T, TimeUnit.MILLISECONDS);
            assertEquals(42L, lb.client.buffer.segment().get(ValueLayout.JAVA_LONG, 8));
            assertEquals(1000L, lb.server.buffer.segment().get(ValueLayout.JAVA_LONG, 64), "swapped");
            lb.client.qp.async().compareAndSwap(lb.client.buffer, 16, remote, 64, 42, 7).get(T, TimeUnit.MILLISECONDS);
            assertEquals(1000L, lb.server.buffer.segment().get(ValueLayout.JAVA_LONG, 64), "no swap when compare differs");
        }
    }

    /**
     * Atomics in one post list: six fetch-and-adds on one remote word and a compare-and-swap after
     * them, unsignaled but the last; each request's original value lands in its own local word, in
     * posting order (the requests of one list execute in order on an RC queue pair).
     */
    @Test
    void atomicsPostedAsOneList(TestDevice device) throws Exception {
        try (Loopback lb = new Loopback(device, 4096, c -> c.withDepth(16, 16).withSignalEvery(8), false)) {
            lb.server.buffer.segment().set(ValueLayout.JAVA_LONG, 128, 100L);
            RemoteBuffer remote = lb.serverRemote();
            io.jverbs.WorkBatch batch = lb.client.qp.newBatch(8);
            for (int i = 0; i < 6; i++) {
                batch.fetchAndAdd(i, lb.client.buffer, i * 8L, remote, 128, 10, false);
            }
            batch.compareAndSwap(6, lb.client.buffer, 48, remote, 128, 160, 7, true);
            IllegalArgumentException misaligned = assertThrows(IllegalArgumentException.class,
                    () -> batch.fetchAndAdd(9, lb.client.buffer, 0, remote, 132, 1, true));
            assertTrue(misaligned.getMessage().contains("8-byte aligned"), misaligned.getMessage());
            assertEquals(7, batch.size(), "a refused add leaves the batch as it was");
            assertEquals(QueuePair.OK, lb.client.qp.post(batch));
            List<Polling.Seen> seen = Polling.await(lb.client.cq, 1, T);
            assertEquals(6L, seen.get(0).wrId(), "the signaled compare-and-swap completes");
            assertEquals("SUCCESS", seen.get(0).statusName());
            for (int i = 0; i < 6; i++) {
                assertEquals(100L + 10 * i, lb.client.buffer.segment().get(ValueLayout.JAVA_LONG, i * 8L), "fetch-and-add " + i);
            }
            assertEquals(160L, lb.client.buffer.segment().get(ValueLayout.JAVA_LONG, 48), "compare-and-swap saw all six adds");
            assertEquals(7L, lb.server.buffer.segment().get(ValueLayout.JAVA_LONG, 128), "and swapped");
            System.out.println("batched atomics on " + device.name() + ": 6 fetch-and-adds and a compare-and-swap in one post");
        }
    }

    @Test
    void wrongRkeyFailsWithRemAccessErrAndErrorsTheQueuePair(TestDevice device) throws Exception {
        try (Loopback lb = new Loopback(device, 4096)) {
            lb.client.startPoller();
            RemoteBuffer good = lb.serverRemote();
            RemoteBuffer wrong = new RemoteBuffer(good.address(), good.length(), good.rkey() ^ 0x5a5a00);
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> lb.client.qp.async().write(lb.client.buffer, 0, 64, wrong, 0).get(T, TimeUnit.MILLISECONDS));
            CompletionFailedException failed = assertInstanceOf(CompletionFailedException.class, e.getCause());
            assertEquals(WcStatus.REM_ACCESS_ERR, failed.status(), failed.getMessage());
            assertTrue(failed.getMessage().contains("REM_ACCESS_ERR"), failed.getMessage());
            assertEquals(QueuePair.State.ERROR, lb.client.qp.state());
            assertEquals(verbs_h.IBV_QPS_ERR, lb.client.qp.deviceState(), "the device agrees: ERR");
            RefusedException later = assertThrows(RefusedException.class,
                    () -> lb.client.qp.write(1, lb.client.buffer, 0, 8, good, 0, true));
            assertEquals(RefusedException.Reason.IN_ERROR, later.reason());
            assertTrue(later.getMessage().contains("in error") && later.getMessage().contains("REM_ACCESS_ERR"), later.getMessage());
        }
    }

    @Test
    void futuresFromVirtualThreadsWithSleepingPoller(TestDevice device) throws Exception {
        try (Loopback lb = new Loopback(device, 64 * 1024, c -> c, true)) {
            lb.client.poller = io.jverbs.Poller.sleeping(null, lb.client.cq);
            RemoteBuffer remote = lb.serverRemote();
            List<java.util.concurrent.Future<?>> done = new ArrayList<>();
            try (var pool = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int t = 0; t < 32; t++) {
                    int slot = t;
                    done.add(pool.submit(() -> {
                        lb.client.buffer.segment().set(ValueLayout.JAVA_LONG, slot * 8L, 0x1000L + slot);
                        CompletableFuture<WorkResult> f;
                        synchronized (lb) {
                            f = lb.client.qp.async().write(lb.client.buffer, slot * 8L, 8, remote, slot * 8L);
                        }
                        return f.get(T, TimeUnit.MILLISECONDS);
                    }));
                }
                for (var f : done) {
                    f.get(T, TimeUnit.MILLISECONDS);
                }
            }
            for (int t = 0; t < 32; t++) {
                assertEquals(0x1000L + t, lb.server.buffer.segment().get(ValueLayout.JAVA_LONG, t * 8L));
            }
            long start = System.nanoTime();
            lb.client.poller.close();
            assertTrue(System.nanoTime() - start < 1_000_000_000L, "the sleeping poller stops within 1 s");
            lb.client.poller = null;
        }
    }
}
