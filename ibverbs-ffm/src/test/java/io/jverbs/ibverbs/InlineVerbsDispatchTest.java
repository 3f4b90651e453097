package io.jverbs.ibverbs;

import io.jverbs.ibverbs.raw.ibv_context;
import io.jverbs.ibverbs.raw.ibv_context_ops;
import io.jverbs.ibverbs.raw.ibv_cq;
import io.jverbs.ibverbs.raw.ibv_cq_ex;
import io.jverbs.ibverbs.raw.ibv_device_attr_ex;
import io.jverbs.ibverbs.raw.ibv_port_attr;
import io.jverbs.ibverbs.raw.ibv_qp;
import io.jverbs.ibverbs.raw.ibv_qp_ex;
import io.jverbs.ibverbs.raw.ibv_query_device_ex_input;
import io.jverbs.ibverbs.raw.ibv_srq;
import io.jverbs.ibverbs.raw.verbs_context;
import io.jverbs.ibverbs.testing.BindingProbe;
import io.jverbs.ibverbs.testing.FakeProvider;
import io.jverbs.ibverbs.testing.FakeProvider.World;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each inline verb must call the right provider slot with the right arguments and return what
 * the slot returned; an absent op must end in an exception, never a crash. Uses the fake provider.
 */
class InlineVerbsDispatchTest {
    private World world;
    private Arena arena;

    @BeforeEach
    void setUp() {
        world = new World(true, 0, true);
        arena = Arena.ofConfined();
        FakeProvider.reset();
    }

    @AfterEach
    void tearDown() {
        arena.close();
        world.close();
    }

    private MemorySegment buf(long size) {
        return arena.allocate(size, 8);
    }

    private static void assertCall(String op, long... args) {
        assertEquals(op, FakeProvider.lastName(), "provider op called");
        assertEquals(args.length, FakeProvider.lastArgCount(), "argument count of " + op);
        for (int i = 0; i < args.length; i++) {
            assertEquals(args[i], FakeProvider.lastArg(i), op + " argument " + i);
        }
    }

    @Test
    void postSendPostRecvPostSrqRecv() {
        MemorySegment wr = buf(128), bad = buf(8);
        assertEquals(FakeProvider.expected("post_send"), InlineVerbs.ibv_post_send(world.qp(), wr, bad));
        assertCall("post_send", world.qp().address(), wr.address(), bad.address());
        assertEquals(FakeProvider.expected("post_recv"), InlineVerbs.ibv_post_recv(world.qp(), wr, bad));
        assertCall("post_recv", world.qp().address(), wr.address(), bad.address());
        assertEquals(FakeProvider.expected("post_srq_recv"), InlineVerbs.ibv_post_srq_recv(world.srq(), wr, bad));
        assertCall("post_srq_recv", world.srq().address(), wr.address(), bad.address());
    }

    @Test
    void pollAndNotify() {
        MemorySegment wc = buf(48 * 4);
        assertEquals(FakeProvider.expected("poll_cq"), InlineVerbs.ibv_poll_cq(world.cq(), 4, wc));
        assertCall("poll_cq", world.cq().address(), 4, wc.address());
        assertEquals(FakeProvider.expected("req_notify_cq"), InlineVerbs.ibv_req_notify_cq(world.cq(), 1));
        assertCall("req_notify_cq", world.cq().address(), 1);
    }

    @Test
    void queryPortGoesThroughVerbsContextWithTodaysSize() {
        MemorySegment attr = buf(ibv_port_attr.sizeof());
        assertEquals(FakeProvider.expected("query_port"), InlineVerbs.ibv_query_port(world.context(), 1, attr));
        assertCall("query_port", world.context().address(), 1, attr.address(), ibv_port_attr.sizeof());
    }

    @Test
    void createCqExAndQpEx() {
        MemorySegment attr = buf(256);
        assertEquals(0x1234000L, InlineVerbs.ibv_create_cq_ex(world.context(), attr).address());
        assertCall("create_cq_ex", world.context().address(), attr.address());
        // comp_mask other than IBV_QP_INIT_ATTR_PD alone: the provider's create_qp_ex
        MemorySegment qpAttr = buf(io.jverbs.ibverbs.raw.ibv_qp_init_attr_ex.sizeof());
        io.jverbs.ibverbs.raw.ibv_qp_init_attr_ex.comp_mask(qpAttr, io.jverbs.ibverbs.raw.verbs_h.IBV_QP_INIT_ATTR_PD
                | io.jverbs.ibverbs.raw.verbs_h.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
        assertEquals(0x5678000L, InlineVerbs.ibv_create_qp_ex(world.context(), qpAttr).address());
        assertCall("create_qp_ex", world.context().address(), qpAttr.address());
    }

    @Test
    void queryDeviceEx() {
        MemorySegment attr = buf(ibv_device_attr_ex.sizeof());
        assertEquals(FakeProvider.expected("query_device_ex"),
                InlineVerbs.ibv_query_device_ex(world.context(), MemorySegment.NULL, attr));
        assertCall("query_device_ex", world.context().address(), 0, attr.address(), ibv_device_attr_ex.sizeof());
        // a non-zero input comp_mask is EINVAL before any provider call
        FakeProvider.reset();
        MemorySegment input = buf(ibv_query_device_ex_input.sizeof());
        ibv_query_device_ex_input.comp_mask(input, 1);
        assertEquals(Errno.EINVAL, InlineVerbs.ibv_query_device_ex(world.context(), input, attr));
        assertEquals("", FakeProvider.lastName());
    }

    @Test
    void workRequestBuilder() {
        MemorySegment q = world.qpx();
        long qa = q.address();
        MemorySegment p1 = buf(64), p2 = buf(64);
        InlineVerbs.ibv_wr_start(q);
        assertCall("wr_start", qa);
        InlineVerbs.ibv_wr_rdma_write(q, 0x11, 0x2222_3333_4444L);
        assertCall("wr_rdma_write", qa, 0x11, 0x2222_3333_4444L);
        InlineVerbs.ibv_wr_rdma_write_imm(q, 0x12, 0x99L, 0xABCD);
        assertCall("wr_rdma_write_imm", qa, 0x12, 0x99L, 0xABCD);
        InlineVerbs.ibv_wr_rdma_read(q, 0x13, 0x77L);
        assertCall("wr_rdma_read", qa, 0x13, 0x77L);
        InlineVerbs.ibv_wr_atomic_cmp_swp(q, 0x14, 0x1000L, 5L, 6L);
        assertCall("wr_atomic_cmp_swp", qa, 0x14, 0x1000L, 5L, 6L);
        InlineVerbs.ibv_wr_atomic_fetch_add(q, 0x15, 0x2000L, 7L);
        assertCall("wr_atomic_fetch_add", qa, 0x15, 0x2000L, 7L);
        InlineVerbs.ibv_wr_atomic_write(q, 0x16, 0x3000L, p1);
        assertCall("wr_atomic_write", qa, 0x16, 0x3000L, p1.address());
        InlineVerbs.ibv_wr_bind_mw(q, p1, 0x17, p2);
        assertCall("wr_bind_mw", qa, p1.address(), 0x17, p2.address());
        InlineVerbs.ibv_wr_local_inv(q, 0x18);
        assertCall("wr_local_inv", qa, 0x18);
        InlineVerbs.ibv_wr_send(q);
        assertCall("wr_send", qa);
        InlineVerbs.ibv_wr_send_imm(q, 0x19);
        assertCall("wr_send_imm", qa, 0x19);
        InlineVerbs.ibv_wr_send_inv(q, 0x1A);
        assertCall("wr_send_inv", qa, 0x1A);
        InlineVerbs.ibv_wr_send_tso(q, p1, (short) 40, (short) 1400);
        assertCall("wr_send_tso", qa, p1.address(), 40, 1400);
        InlineVerbs.ibv_wr_set_ud_addr(q, p2, 0x1B, 0x1C);
        assertCall("wr_set_ud_addr", qa, p2.address(), 0x1B, 0x1C);
        InlineVerbs.ibv_wr_set_xrc_srqn(q, 0x1D);
        assertCall("wr_set_xrc_srqn", qa, 0x1D);
        InlineVerbs.ibv_wr_set_inline_data(q, p1, 33);
        assertCall("wr_set_inline_data", qa, p1.address(), 33);
        InlineVerbs.ibv_wr_set_inline_data_list(q, 2, p2);
        assertCall("wr_set_inline_data_list", qa, 2, p2.address());
        InlineVerbs.ibv_wr_set_sge(q, 0x1E, p1.address(), 64);
        assertCall("wr_set_sge", qa, 0x1E, p1.address(), 64);
        InlineVerbs.ibv_wr_set_sge_list(q, 3, p2);
        assertCall("wr_set_sge_list", qa, 3, p2.address());
        assertEquals(FakeProvider.expected("wr_complete"), InlineVerbs.ibv_wr_complete(q));
        assertCall("wr_complete", qa);
        InlineVerbs.ibv_wr_abort(q);
        assertCall("wr_abort", qa);
    }

    @Test
    void extendedCompletionQueue() {
        MemorySegment c = world.cqx();
        long ca = c.address();
        MemorySegment attr = buf(16);
        assertEquals(FakeProvider.expected("start_poll"), InlineVerbs.ibv_start_poll(c, attr));
        assertCall("start_poll", ca, attr.address());
        assertEquals(FakeProvider.expected("next_poll"), InlineVerbs.ibv_next_poll(c));
        assertCall("next_poll", ca);
        InlineVerbs.ibv_end_poll(c);
        assertCall("end_poll", ca);
        assertEquals(FakeProvider.expected("read_opcode"), InlineVerbs.ibv_wc_read_opcode(c));
        assertCall("read_opcode", ca);
        assertEquals(FakeProvider.expected("read_vendor_err"), InlineVerbs.ibv_wc_read_vendor_err(c));
        assertCall("read_vendor_err", ca);
        assertEquals(FakeProvider.expected("read_byte_len"), InlineVerbs.ibv_wc_read_byte_len(c));
        assertCall("read_byte_len", ca);
        assertEquals(FakeProvider.expected("read_imm_data"), InlineVerbs.ibv_wc_read_imm_data(c));
        assertCall("read_imm_data", ca);
        assertEquals(FakeProvider.expected("read_imm_data"), InlineVerbs.ibv_wc_read_invalidated_rkey(c));
        assertCall("read_imm_data", ca);
        assertEquals(FakeProvider.expected("read_qp_num"), InlineVerbs.ibv_wc_read_qp_num(c));
        assertCall("read_qp_num", ca);
        assertEquals(FakeProvider.expected("read_src_qp"), InlineVerbs.ibv_wc_read_src_qp(c));
        assertCall("read_src_qp", ca);
        assertEquals(FakeProvider.expected("read_wc_flags"), InlineVerbs.ibv_wc_read_wc_flags(c));
        assertCall("read_wc_flags", ca);
        assertEquals(FakeProvider.expected("read_slid"), InlineVerbs.ibv_wc_read_slid(c));
        assertCall("read_slid", ca);
        assertEquals((byte) FakeProvider.expected("read_sl"), InlineVerbs.ibv_wc_read_sl(c));
        assertCall("read_sl", ca);
        assertEquals((byte) FakeProvider.expected("read_dlid_path_bits"), InlineVerbs.ibv_wc_read_dlid_path_bits(c));
        assertCall("read_dlid_path_bits", ca);
        assertEquals(FakeProvider.expected("read_completion_ts") + 0x1_0000_0000L, InlineVerbs.ibv_wc_read_completion_ts(c));
        assertCall("read_completion_ts", ca);
        assertEquals(FakeProvider.expected("read_completion_wallclock_ns") + 0x1_0000_0000L,
                InlineVerbs.ibv_wc_read_completion_wallclock_ns(c));
        assertCall("read_completion_wallclock_ns", ca);
        assertEquals((short) FakeProvider.expected("read_cvlan"), InlineVerbs.ibv_wc_read_cvlan(c));
        assertCall("read_cvlan", ca);
        assertEquals(FakeProvider.expected("read_flow_tag"), InlineVerbs.ibv_wc_read_flow_tag(c));
        assertCall("read_flow_tag", ca);
        InlineVerbs.ibv_wc_read_tm_info(c, attr);
        assertCall("read_tm_info", ca, attr.address());
        assertEquals(ca, InlineVerbs.ibv_cq_ex_to_cq(c).address());
    }

    @Test
    void verbsGetCtxOpFollowsTheHeader() {
        long queryPort = verbs_context.query_port$OFFSET;
        long createCqEx = verbs_context.create_cq_ex$OFFSET;
        long full = verbs_context.sizeof();
        assertNotEquals(0, InlineVerbs.verbsContextOp(world.context(), queryPort), "extended, full size, op set");
        try (World notExtended = new World(false, 0, true)) {
            assertEquals(0, InlineVerbs.verbsContextOp(notExtended.context(), createCqEx), "abi_compat not extended");
        }
        // sz must cover the op: the op at offset o needs sz >= sizeof(verbs_context) - o
        try (World small = new World(true, full - createCqEx - 8, true)) {
            assertEquals(0, InlineVerbs.verbsContextOp(small.context(), createCqEx), "sz one pointer short");
            assertThrows(UnsupportedVerbException.class, () -> InlineVerbs.ibv_create_cq_ex(small.context(), buf(64)));
        }
        try (World exact = new World(true, full - createCqEx, true)) {
            assertNotEquals(0, InlineVerbs.verbsContextOp(exact.context(), createCqEx), "sz exactly covers the op");
        }
        try (World noOps = new World(true, 0, false)) {
            assertEquals(0, InlineVerbs.verbsContextOp(noOps.context(), createCqEx), "NULL op");
            UnsupportedVerbException e = assertThrows(UnsupportedVerbException.class,
                    () -> InlineVerbs.ibv_create_cq_ex(noOps.context(), buf(64)));
            assertEquals(Errno.EOPNOTSUPP, e.errno());
            assertTrue(e.getMessage().startsWith("ibv_create_cq_ex failed: EOPNOTSUPP (95)"), e.getMessage());
            MemorySegment qpAttr = buf(io.jverbs.ibverbs.raw.ibv_qp_init_attr_ex.sizeof());
            io.jverbs.ibverbs.raw.ibv_qp_init_attr_ex.comp_mask(qpAttr, 0x3);
            assertThrows(UnsupportedVerbException.class, () -> InlineVerbs.ibv_create_qp_ex(noOps.context(), qpAttr));
        }
    }

    @Test
    void emptySlotsThrowInsteadOfCrashing() {
        try (World noOps = new World(true, 0, false)) {
            MemorySegment wr = buf(128), bad = buf(8);
            UnsupportedVerbException e = assertThrows(UnsupportedVerbException.class,
                    () -> InlineVerbs.ibv_post_send(noOps.qp(), wr, bad));
            assertEquals("ibv_post_send", e.verb());
            assertThrows(UnsupportedVerbException.class, () -> InlineVerbs.ibv_poll_cq(noOps.cq(), 1, wr));
            assertThrows(UnsupportedVerbException.class, () -> InlineVerbs.ibv_wr_send(noOps.qpx()));
            assertThrows(UnsupportedVerbException.class, () -> InlineVerbs.ibv_next_poll(noOps.cqx()));
        }
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_post_send(MemorySegment.NULL, buf(8), buf(8)));
    }

    @Test
    void heapAndClosedSegmentsNeverReachTheProvider() {
        MemorySegment heap = MemorySegment.ofArray(new byte[128]);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> InlineVerbs.ibv_post_send(world.qp(), heap, buf(8)));
        assertTrue(e.getMessage().contains("heap segment"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_poll_cq(world.cq(), 1, heap));
        MemorySegment closed;
        try (Arena scratch = Arena.ofConfined()) {
            closed = scratch.allocate(128);
        }
        MemorySegment stale = closed;
        assertThrows(IllegalStateException.class, () -> InlineVerbs.ibv_post_recv(world.qp(), stale, buf(8)));
        // the verbs objects themselves: a heap or closed segment must not even be read
        MemorySegment heapSlice = MemorySegment.ofArray(new byte[4096]).asSlice(64);
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_post_send(heapSlice, buf(128), buf(8)));
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_poll_cq(heapSlice, 1, buf(48)));
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_query_port(heapSlice, 1, buf(256)));
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_wr_start(heapSlice));
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_next_poll(heapSlice));
        assertThrows(IllegalStateException.class, () -> InlineVerbs.ibv_post_send(stale, buf(128), buf(8)));
        assertThrows(IllegalStateException.class, () -> InlineVerbs.ibv_req_notify_cq(stale, 0));
        assertThrows(IllegalStateException.class, () -> InlineVerbs.ibv_create_cq_ex(stale, buf(64)));
        assertThrows(IllegalStateException.class, () -> InlineVerbs.ibv_wc_read_opcode(stale));
        assertEquals("", FakeProvider.lastName(), "the provider saw none of these calls");
    }

    /**
     * Every offset the inline verbs read a pointer from (a verbs object's context, a slot of
     * {@code context->ops}, of the {@code verbs_context} in front of it, of an {@code ibv_qp_ex} or
     * {@code ibv_cq_ex}), and the distance back to the {@code verbs_context}, against what gcc
     * computes from the installed verbs.h. A wrong offset makes the inline verbs call the wrong
     * function pointer.
     */
    @Test
    void theOffsetsTheInlineVerbsReadAreWhereGccPutsThem() throws Exception {
        List<BindingProbe.Check> checks = new ArrayList<>(List.of(
                offset("struct ibv_qp", "context", ibv_qp.context$OFFSET),
                offset("struct ibv_cq", "context", ibv_cq.context$OFFSET),
                offset("struct ibv_srq", "context", ibv_srq.context$OFFSET),
                offset("struct ibv_context", "abi_compat", ibv_context.abi_compat$OFFSET),
                offset("struct ibv_context", "ops.poll_cq", ibv_context.ops$OFFSET + ibv_context_ops.poll_cq$OFFSET),
                offset("struct ibv_context", "ops.req_notify_cq",
                        ibv_context.ops$OFFSET + ibv_context_ops.req_notify_cq$OFFSET),
                offset("struct ibv_context", "ops.post_srq_recv",
                        ibv_context.ops$OFFSET + ibv_context_ops.post_srq_recv$OFFSET),
                offset("struct ibv_context", "ops.post_send", ibv_context.ops$OFFSET + ibv_context_ops.post_send$OFFSET),
                offset("struct ibv_context", "ops.post_recv", ibv_context.ops$OFFSET + ibv_context_ops.post_recv$OFFSET),
                offset("struct verbs_context", "context", verbs_context.context$OFFSET),
                BindingProbe.Check.exact("sizeof(struct verbs_context)", "sizeof(struct verbs_context)", verbs_context.sizeof()),
                offset("struct verbs_context", "query_port", verbs_context.query_port$OFFSET),
                offset("struct verbs_context", "create_cq_ex", verbs_context.create_cq_ex$OFFSET),
                offset("struct verbs_context", "create_qp_ex", verbs_context.create_qp_ex$OFFSET),
                offset("struct verbs_context", "query_device_ex", verbs_context.query_device_ex$OFFSET)));
        int qpExSlots = addSlots(checks, "struct ibv_qp_ex", ibv_qp_ex.class, "wr_");
        int cqExSlots = addSlots(checks, "struct ibv_cq_ex", ibv_cq_ex.class, "start_poll", "next_poll", "end_poll", "read_",
                "wr_id", "status");
        assertTrue(qpExSlots >= 20, "ibv_qp_ex slots found: " + qpExSlots);
        assertTrue(cqExSlots >= 20, "ibv_cq_ex slots found: " + cqExSlots);
        List<String> wrong = BindingProbe.compare(checks,
                BindingProbe.runProbe("inline_verbs_offsets", List.of("infiniband/verbs.h"), checks));
        assertEquals(List.of(), wrong, "offsets the inline verbs use that disagree with gcc");
    }

    private static BindingProbe.Check offset(String struct, String member, long java) {
        return BindingProbe.Check.exact(struct + "." + member, "__builtin_offsetof(" + struct + ", " + member + ")", java);
    }

    /** Adds an offset check for every {@code NAME$OFFSET} constant of {@code cls} whose name starts with a prefix. */
    private static int addSlots(List<BindingProbe.Check> checks, String struct, Class<?> cls, String... prefixes)
            throws IllegalAccessException {
        int added = 0;
        for (Field f : cls.getFields()) {
            String name = f.getName();
            if (name.endsWith("$OFFSET") && Arrays.stream(prefixes).anyMatch(name::startsWith)) {
                checks.add(offset(struct, name.substring(0, name.length() - "$OFFSET".length()), f.getLong(null)));
                added++;
            }
        }
        return added;
    }
}
