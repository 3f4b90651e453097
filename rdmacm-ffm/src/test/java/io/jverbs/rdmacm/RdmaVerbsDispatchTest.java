package io.jverbs.rdmacm;

import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.raw.ibv_mr;
import io.jverbs.ibverbs.raw.ibv_recv_wr;
import io.jverbs.ibverbs.raw.ibv_send_wr;
import io.jverbs.ibverbs.raw.ibv_sge;
import io.jverbs.ibverbs.raw.verbs_h;
import io.jverbs.ibverbs.testing.FakeProvider;
import io.jverbs.rdmacm.raw.rdma_cm_id;
import io.jverbs.rdmacm.raw.rdma_cma_h;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * rdma_verbs.h's helpers build the work request C builds and post it to the right queue; a
 * provider error becomes -1 with errno, as rdma_seterrno does. Uses the fake provider, whose
 * post ops return a non-zero value (the sum of their name's bytes) as the "errno".
 */
class RdmaVerbsDispatchTest {
    private FakeProvider.World world;
    private Arena arena;
    private MemorySegment id;
    private MemorySegment buf;
    private MemorySegment mr;

    @BeforeEach
    void setUp() {
        world = new FakeProvider.World(true, 0, true);
        arena = Arena.ofConfined();
        id = arena.allocate(rdma_cm_id.LAYOUT);
        rdma_cm_id.qp(id, world.qp());
        buf = arena.allocate(4096, 64);
        mr = arena.allocate(ibv_mr.LAYOUT);
        ibv_mr.addr(mr, buf);
        ibv_mr.length(mr, buf.byteSize());
        ibv_mr.lkey(mr, 0x4242);
        FakeProvider.reset();
    }

    @AfterEach
    void tearDown() {
        arena.close();
        world.close();
    }

    private static MemorySegment postedWr(long size) {
        return MemorySegment.ofAddress(FakeProvider.lastArg(1)).reinterpret(size);
    }

    @Test
    void postSendBuildsASendWithOneSge() {
        assertEquals(-1, RdmaVerbs.rdma_post_send(id, 77, buf.asSlice(16), 100, mr, verbs_h.IBV_SEND_SIGNALED));
        assertEquals(FakeProvider.expected("post_send"), Native.lastErrno(), "rdma_seterrno: errno = provider's return");
        assertEquals("post_send", FakeProvider.lastName());
        assertEquals(world.qp().address(), FakeProvider.lastArg(0));
        MemorySegment wr = postedWr(ibv_send_wr.sizeof());
        assertEquals(77, ibv_send_wr.wr_id(wr));
        assertEquals(0, ibv_send_wr.next(wr).address());
        assertEquals(verbs_h.IBV_WR_SEND, ibv_send_wr.opcode(wr));
        assertEquals(verbs_h.IBV_SEND_SIGNALED, ibv_send_wr.send_flags(wr));
        assertEquals(1, ibv_send_wr.num_sge(wr));
        MemorySegment sge = ibv_send_wr.sg_list(wr).reinterpret(ibv_sge.sizeof());
        assertEquals(buf.address() + 16, ibv_sge.addr(sge));
        assertEquals(100, ibv_sge.length(sge));
        assertEquals(0x4242, ibv_sge.lkey(sge));
    }

    @Test
    void postWriteAndReadCarryTheRemoteAddressAndKey() {
        RdmaVerbs.rdma_post_write(id, 5, buf, 8, mr, 0, 0x1122_3344_5566L, 0x99);
        MemorySegment wr = postedWr(ibv_send_wr.sizeof());
        assertEquals(verbs_h.IBV_WR_RDMA_WRITE, ibv_send_wr.opcode(wr));
        MemorySegment rdma = ibv_send_wr.wr.rdma(ibv_send_wr.wr(wr));
        assertEquals(0x1122_3344_5566L, ibv_send_wr.wr.rdma.remote_addr(rdma));
        assertEquals(0x99, ibv_send_wr.wr.rdma.rkey(rdma));
        RdmaVerbs.rdma_post_read(id, 6, buf, 8, mr, 0, 0x7777L, 0x55);
        wr = postedWr(ibv_send_wr.sizeof());
        assertEquals(verbs_h.IBV_WR_RDMA_READ, ibv_send_wr.opcode(wr));
        assertEquals(0x7777L, ibv_send_wr.wr.rdma.remote_addr(ibv_send_wr.wr.rdma(ibv_send_wr.wr(wr))));
    }

    @Test
    void udSendUsesTheRdmaCmQkey() {
        MemorySegment ah = arena.allocate(64);
        RdmaVerbs.rdma_post_ud_send(id, 9, buf, 32, MemorySegment.NULL, verbs_h.IBV_SEND_INLINE, ah, 0xABC);
        MemorySegment ud = ibv_send_wr.wr.ud(ibv_send_wr.wr(postedWr(ibv_send_wr.sizeof())));
        assertEquals(ah.address(), ibv_send_wr.wr.ud.ah(ud).address());
        assertEquals(0xABC, ibv_send_wr.wr.ud.remote_qpn(ud));
        assertEquals(rdma_cma_h.RDMA_UDP_QKEY, ibv_send_wr.wr.ud.remote_qkey(ud));
        MemorySegment sge = ibv_send_wr.sg_list(postedWr(ibv_send_wr.sizeof())).reinterpret(ibv_sge.sizeof());
        assertEquals(0, ibv_sge.lkey(sge), "no MR: lkey 0 (inline data)");
    }

    @Test
    void postRecvGoesToTheSrqWhenTheIdHasOne() {
        assertEquals(-1, RdmaVerbs.rdma_post_recv(id, 3, buf, 64, mr));
        assertEquals("post_recv", FakeProvider.lastName());
        assertEquals(world.qp().address(), FakeProvider.lastArg(0));
        assertEquals(3, ibv_recv_wr.wr_id(postedWr(ibv_recv_wr.sizeof())));
        rdma_cm_id.srq(id, world.srq());
        RdmaVerbs.rdma_post_recv(id, 4, buf, 64, mr);
        assertEquals("post_srq_recv", FakeProvider.lastName());
        assertEquals(world.srq().address(), FakeProvider.lastArg(0));
        assertEquals(FakeProvider.expected("post_srq_recv"), Native.lastErrno());
    }

    @Test
    void postRecvOutsideTheRegionIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> RdmaVerbs.rdma_post_recv(id, 1, buf.asSlice(4000), 200, mr));
        assertEquals("", FakeProvider.lastName(), "nothing posted");
        assertThrows(IllegalArgumentException.class, () -> RdmaVerbs.rdma_post_send(MemorySegment.NULL, 1, buf, 1, mr, 0));
    }
}
