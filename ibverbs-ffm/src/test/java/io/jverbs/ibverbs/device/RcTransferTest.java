package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.raw.ibv_ah_attr;
import io.jverbs.ibverbs.raw.ibv_device_attr;
import io.jverbs.ibverbs.raw.ibv_global_route;
import io.jverbs.ibverbs.raw.ibv_qp_attr;
import io.jverbs.ibverbs.raw.verbs_h;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Every RC operation between two connected QPs of one process, each result checked byte for
 * byte: A is the requester, B's buffer the remote memory.
 */
@DeviceTest
class RcTransferTest {
    private static final int BUFFER = 4096;
    private static DeviceContext dev;
    private static RcPair pair;
    private static Mr local;
    private static Mr remote;

    @BeforeAll
    static void connect(TestDevice device) {
        dev = DeviceContext.open(device);
        local = dev.registerMemory(BUFFER, Resources.FULL_ACCESS);
        remote = dev.registerMemory(BUFFER, Resources.FULL_ACCESS);
        pair = RcPair.connect(dev);
    }

    @AfterAll
    static void close() {
        Cleanup.closeInOrder(pair, dev);
    }

    @BeforeEach
    void clearBuffers() {
        local.buffer().fill((byte) 0);
        remote.buffer().fill((byte) 0);
    }

    @Test
    void connectedQpsAreInRtsWithThePortsMtuAndTheGid() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(ibv_qp_attr.LAYOUT);
            QueuePairs.query(pair.a().qp(), verbs_h.IBV_QP_STATE | verbs_h.IBV_QP_PATH_MTU | verbs_h.IBV_QP_DEST_QPN
                    | verbs_h.IBV_QP_AV, attr);
            assertEquals(verbs_h.IBV_QPS_RTS, ibv_qp_attr.qp_state(attr), "state");
            assertEquals(dev.activeMtu(), ibv_qp_attr.path_mtu(attr), "path MTU = the port's active MTU");
            assertEquals(pair.b().qpn(), ibv_qp_attr.dest_qp_num(attr), "dest QPN");
            MemorySegment ah = ibv_qp_attr.ah_attr(attr);
            assertEquals(1, ibv_ah_attr.is_global(ah), "is_global");
            MemorySegment grh = ibv_ah_attr.grh(ah);
            assertEquals(dev.gidIndex(), Byte.toUnsignedInt(ibv_global_route.sgid_index(grh)), "sgid_index");
            assertArrayEquals(dev.gid(), ibv_global_route.dgid(grh).toArray(JAVA_BYTE), "dgid = our own GID");
            assertEquals(verbs_h.IBV_QPS_RTS, QueuePairs.state(pair.b().qp()), "B's state");
        }
    }

    @Test
    void rdmaWriteCopiesTheBytesIntoRemoteMemory() {
        byte[] data = pattern(300, 7);
        MemorySegment.copy(data, 0, local.buffer(), JAVA_BYTE, 0, data.length);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment wr = WorkRequests.send(arena, 11, verbs_h.IBV_WR_RDMA_WRITE, local, 0, data.length);
            WorkRequests.postSend(pair.a().qp(), WorkRequests.rdma(wr, remote.address(64), remote.rkey()));
        }
        Completion wc = Completions.awaitSuccess(pair.a().cq(), "RDMA write", verbs_h.IBV_WC_RDMA_WRITE, 11);
        assertEquals(pair.a().qpn(), wc.qpNum(), "qp_num");
        assertArrayEquals(data, bytes(remote, 64, data.length), "remote bytes");
        assertArrayEquals(new byte[64], bytes(remote, 0, 64), "nothing written before the target");
        assertArrayEquals(new byte[64], bytes(remote, 64 + data.length, 64), "nothing written after it");
        Completions.assertEmpty(pair.b().cq(), "RDMA write consumes no receive");
    }

    @Test
    void rdmaReadCopiesRemoteBytesIntoLocalMemory() {
        byte[] data = pattern(500, 13);
        MemorySegment.copy(data, 0, remote.buffer(), JAVA_BYTE, 1000, data.length);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment wr = WorkRequests.send(arena, 12, verbs_h.IBV_WR_RDMA_READ, local, 8, data.length);
            WorkRequests.postSend(pair.a().qp(), WorkRequests.rdma(wr, remote.address(1000), remote.rkey()));
        }
        Completion wc = Completions.awaitSuccess(pair.a().cq(), "RDMA read", verbs_h.IBV_WC_RDMA_READ, 12);
        assertEquals(data.length, wc.byteLen(), "byte_len of a read");
        assertArrayEquals(data, bytes(local, 8, data.length), "local bytes");
        assertArrayEquals(new byte[8], bytes(local, 0, 8), "nothing before the target");
    }

    @Test
    void sendLandsInThePostedReceive() {
        byte[] data = pattern(777, 3);
        WorkRequests.postRecv(pair.b().qp(), 21, remote, 128, 1024);
        MemorySegment.copy(data, 0, local.buffer(), JAVA_BYTE, 0, data.length);
        try (Arena arena = Arena.ofConfined()) {
            WorkRequests.postSend(pair.a().qp(), WorkRequests.send(arena, 22, verbs_h.IBV_WR_SEND, local, 0, data.length));
        }
        Completions.awaitSuccess(pair.a().cq(), "send", verbs_h.IBV_WC_SEND, 22);
        Completion recv = Completions.awaitSuccess(pair.b().cq(), "receive", verbs_h.IBV_WC_RECV, 21);
        assertEquals(data.length, recv.byteLen(), "byte_len");
        assertEquals(pair.b().qpn(), recv.qpNum(), "qp_num of the receiver");
        assertEquals(0, recv.wcFlags() & verbs_h.IBV_WC_WITH_IMM, "no immediate");
        assertArrayEquals(data, bytes(remote, 128, data.length), "received bytes");
        assertArrayEquals(new byte[128], bytes(remote, 0, 128), "nothing before the receive buffer");
    }

    @Test
    void writeWithImmediateDeliversDataAndBigEndianImmediate() {
        byte[] data = pattern(200, 5);
        int imm = 0x12345678;
        WorkRequests.postRecv(pair.b().qp(), 31, remote, 0, 0);
        MemorySegment.copy(data, 0, local.buffer(), JAVA_BYTE, 0, data.length);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment wr = WorkRequests.send(arena, 32, verbs_h.IBV_WR_RDMA_WRITE_WITH_IMM, local, 0, data.length);
            WorkRequests.rdma(wr, remote.address(2048), remote.rkey());
            WorkRequests.postSend(pair.a().qp(), WorkRequests.immData(wr, imm));
        }
        Completions.awaitSuccess(pair.a().cq(), "write with immediate", verbs_h.IBV_WC_RDMA_WRITE, 32);
        Completion recv = Completions.awaitSuccess(pair.b().cq(), "receive of the immediate",
                verbs_h.IBV_WC_RECV_RDMA_WITH_IMM, 31);
        assertTrue((recv.wcFlags() & verbs_h.IBV_WC_WITH_IMM) != 0, "IBV_WC_WITH_IMM in " + recv);
        assertArrayEquals(new byte[] {0x12, 0x34, 0x56, 0x78}, recv.immBytes(), "imm_data is big-endian in memory");
        assertEquals(imm, WorkRequests.htonl(recv.immDataRaw()), "ntohl(imm_data)");
        assertEquals(data.length, recv.byteLen(), "byte_len counts the written bytes");
        assertArrayEquals(data, bytes(remote, 2048, data.length), "written bytes");
    }

    @Test
    void compareAndSwapSwapsOnlyOnMatch() {
        assumeAtomics();
        long initial = 0x1111_2222_3333_4444L;
        long swap = 0x5555_6666_7777_8888L;
        remote.buffer().set(JAVA_LONG, 512, initial);

        atomic(41, verbs_h.IBV_WR_ATOMIC_CMP_AND_SWP, 512, initial, swap, 0);
        Completions.awaitSuccess(pair.a().cq(), "CAS (match)", verbs_h.IBV_WC_COMP_SWAP, 41);
        assertEquals(initial, local.buffer().get(JAVA_LONG, 0), "CAS returns the old value");
        assertEquals(swap, remote.buffer().get(JAVA_LONG, 512), "remote swapped");

        atomic(42, verbs_h.IBV_WR_ATOMIC_CMP_AND_SWP, 512, initial, 0x7L, 8);
        Completions.awaitSuccess(pair.a().cq(), "CAS (no match)", verbs_h.IBV_WC_COMP_SWAP, 42);
        assertEquals(swap, local.buffer().get(JAVA_LONG, 8), "failed CAS returns the current value");
        assertEquals(swap, remote.buffer().get(JAVA_LONG, 512), "failed CAS leaves the remote word");
        assertArrayEquals(new byte[8], bytes(remote, 520, 8), "the next word is untouched");
    }

    @Test
    void fetchAndAddAddsAndReturnsTheOldValue() {
        assumeAtomics();
        remote.buffer().set(JAVA_LONG, 1024, 40L);
        atomic(51, verbs_h.IBV_WR_ATOMIC_FETCH_AND_ADD, 1024, 2L, 0, 0);
        Completions.awaitSuccess(pair.a().cq(), "fetch and add", verbs_h.IBV_WC_FETCH_ADD, 51);
        assertEquals(40L, local.buffer().get(JAVA_LONG, 0), "old value");
        assertEquals(42L, remote.buffer().get(JAVA_LONG, 1024), "new value");

        atomic(52, verbs_h.IBV_WR_ATOMIC_FETCH_AND_ADD, 1024, -43L, 0, 16);
        Completions.awaitSuccess(pair.a().cq(), "fetch and add (wrap)", verbs_h.IBV_WC_FETCH_ADD, 52);
        assertEquals(42L, local.buffer().get(JAVA_LONG, 16), "old value");
        assertEquals(-1L, remote.buffer().get(JAVA_LONG, 1024), "64-bit two's complement sum");
    }

    private static void atomic(long wrId, int opcode, long remoteOffset, long compareAdd, long swap, long localOffset) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment wr = WorkRequests.send(arena, wrId, opcode, local, localOffset, 8);
            WorkRequests.postSend(pair.a().qp(),
                    WorkRequests.atomic(wr, remote.address(remoteOffset), remote.rkey(), compareAdd, swap));
        }
    }

    private static void assumeAtomics() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(ibv_device_attr.LAYOUT);
            Checks.ok("ibv_query_device", verbs_h.ibv_query_device(dev.context(), attr));
            assumeTrue(ibv_device_attr.atomic_cap(attr) != verbs_h.IBV_ATOMIC_NONE,
                    dev.device().name() + " has no atomics (atomic_cap NONE)");
        }
    }

    static byte[] pattern(int length, int seed) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (i * 31 + seed);
        }
        return b;
    }

    static byte[] bytes(Mr mr, long offset, int length) {
        return mr.buffer().asSlice(offset, length).toArray(JAVA_BYTE);
    }
}
