package io.jverbs.ibverbs;

import io.jverbs.ibverbs.raw.ibv_context;
import io.jverbs.ibverbs.raw.ibv_context_ops;
import io.jverbs.ibverbs.raw.ibv_cq;
import io.jverbs.ibverbs.raw.ibv_cq_ex;
import io.jverbs.ibverbs.raw.ibv_alloc_dm_attr;
import io.jverbs.ibverbs.raw.ibv_counter_attach_attr;
import io.jverbs.ibverbs.raw.ibv_counters_init_attr;
import io.jverbs.ibverbs.raw.ibv_device_attr_ex;
import io.jverbs.ibverbs.raw.ibv_flow_action_esp_attr;
import io.jverbs.ibverbs.raw.ibv_flow_attr;
import io.jverbs.ibverbs.raw.ibv_modify_cq_attr;
import io.jverbs.ibverbs.raw.ibv_mr;
import io.jverbs.ibverbs.raw.ibv_mw;
import io.jverbs.ibverbs.raw.ibv_mw_bind;
import io.jverbs.ibverbs.raw.ibv_mw_bind_info;
import io.jverbs.ibverbs.raw.ibv_ops_wr;
import io.jverbs.ibverbs.raw.ibv_parent_domain_init_attr;
import io.jverbs.ibverbs.raw.ibv_port_attr;
import io.jverbs.ibverbs.raw.ibv_qp;
import io.jverbs.ibverbs.raw.ibv_qp_ex;
import io.jverbs.ibverbs.raw.ibv_query_device_ex_input;
import io.jverbs.ibverbs.raw.ibv_srq;
import io.jverbs.ibverbs.raw.verbs_context;
import io.jverbs.ibverbs.testing.BindingProbe;
import io.jverbs.ibverbs.raw.ibv_qp_open_attr;
import io.jverbs.ibverbs.raw.ibv_qp_rate_limit_attr;
import io.jverbs.ibverbs.raw.ibv_recv_wr;
import io.jverbs.ibverbs.raw.ibv_rwq_ind_table_init_attr;
import io.jverbs.ibverbs.raw.ibv_sge;
import io.jverbs.ibverbs.raw.ibv_srq_init_attr_ex;
import io.jverbs.ibverbs.raw.ibv_td_init_attr;
import io.jverbs.ibverbs.raw.ibv_values_ex;
import io.jverbs.ibverbs.raw.ibv_wq;
import io.jverbs.ibverbs.raw.ibv_wq_attr;
import io.jverbs.ibverbs.raw.ibv_wq_init_attr;
import io.jverbs.ibverbs.raw.ibv_xrcd_init_attr;
import io.jverbs.ibverbs.raw.verbs_h;
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
import java.util.function.Supplier;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

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

    @Test
    void postWqRecvGoesThroughTheWqsOwnSlot() {
        MemorySegment wq = world.object("wq"), wr = buf(ibv_recv_wr.sizeof()), bad = buf(8);
        assertEquals(FakeProvider.expected("post_wq_recv"), InlineVerbs.ibv_post_wq_recv(wq, wr, bad));
        assertCall("post_wq_recv", wq.address(), wr.address(), bad.address());
    }

    @Test
    void memoryWindowsFollowTheHeaderChecks() {
        MemorySegment pd = world.object("pd"), mw = world.object("mw"), mr = world.object("mr"), qp = world.qp();
        assertEquals(mw.address(), InlineVerbs.ibv_alloc_mw(pd, verbs_h.IBV_MW_TYPE_1).address());
        assertCall("alloc_mw", pd.address(), verbs_h.IBV_MW_TYPE_1);

        MemorySegment bind = buf(ibv_mw_bind.sizeof());
        MemorySegment info = ibv_mw_bind.bind_info(bind);
        ibv_mw_bind_info.mr(info, mr);
        assertEquals(FakeProvider.expected("bind_mw"), InlineVerbs.ibv_bind_mw(qp, mw, bind));
        assertCall("bind_mw", qp.address(), mw.address(), bind.address());
        // as the header, before any provider call: an MR of another PD is EPERM, no MR but a range is EINVAL
        FakeProvider.reset();
        MemorySegment otherMr = buf(ibv_mr.sizeof());
        ibv_mr.pd(otherMr, buf(16));
        ibv_mw_bind_info.mr(info, otherMr);
        assertEquals(Errno.EPERM, InlineVerbs.ibv_bind_mw(qp, mw, bind));
        ibv_mw_bind_info.mr(info, MemorySegment.NULL);
        ibv_mw_bind_info.length(info, 64);
        assertEquals(Errno.EINVAL, InlineVerbs.ibv_bind_mw(qp, mw, bind));
        MemorySegment type2 = buf(ibv_mw.sizeof());
        ibv_mw.context(type2, world.context());
        ibv_mw.type(type2, verbs_h.IBV_MW_TYPE_2);
        assertEquals(Errno.EINVAL, InlineVerbs.ibv_bind_mw(qp, type2, bind), "only type 1 binds through the QP");
        assertEquals("", FakeProvider.lastName());

        assertEquals(FakeProvider.expected("dealloc_mw"), InlineVerbs.ibv_dealloc_mw(mw));
        assertCall("dealloc_mw", mw.address());
        assertEquals(0x1234_5679, InlineVerbs.ibv_inc_rkey(0x1234_5678));
        assertEquals(0x1234_5600, InlineVerbs.ibv_inc_rkey(0x1234_56ff), "the key byte wraps, the index stays");
    }

    /** One verbs_context op: the call, the op the fake provider must see, its arguments, and the object it returns (or 0). */
    private record VerbsOp(String op, Supplier<Object> call, long[] args) {
    }

    private static VerbsOp op(String op, Supplier<Object> call, long... args) {
        return new VerbsOp(op, call, args);
    }

    private static long a(MemorySegment s) {
        return s.address();
    }

    @Test
    void everyVerbsContextOpIsCalledWithItsArguments() {
        MemorySegment ctx = world.context(), qp = world.qp(), cq = world.cq(), srq = world.srq(), pd = world.object("pd");
        MemorySegment wq = world.object("wq"), dm = world.object("dm"), flow = world.object("flow");
        MemorySegment action = world.object("flow_action"), counters = world.object("counters");
        MemorySegment xrcdAttr = buf(ibv_xrcd_init_attr.sizeof()), srqAttr = buf(ibv_srq_init_attr_ex.sizeof());
        ibv_srq_init_attr_ex.comp_mask(srqAttr, verbs_h.IBV_SRQ_INIT_ATTR_PD | verbs_h.IBV_SRQ_INIT_ATTR_TYPE
                | verbs_h.IBV_SRQ_INIT_ATTR_XRCD);
        ibv_srq_init_attr_ex.srq_type(srqAttr, verbs_h.IBV_SRQT_XRC);
        MemorySegment srqNum = buf(4), opsWr = buf(ibv_ops_wr.sizeof()), badOp = buf(8);
        MemorySegment tdAttr = buf(ibv_td_init_attr.sizeof()), pdAttr = buf(ibv_parent_domain_init_attr.sizeof());
        MemorySegment values = buf(ibv_values_ex.sizeof()), openAttr = buf(ibv_qp_open_attr.sizeof());
        MemorySegment rate = buf(ibv_qp_rate_limit_attr.sizeof()), wqAttr = buf(ibv_wq_attr.sizeof());
        MemorySegment tableAttr = buf(ibv_rwq_ind_table_init_attr.sizeof()), espAttr = buf(ibv_flow_action_esp_attr.sizeof());
        MemorySegment sges = buf(2 * ibv_sge.sizeof()), dmAttr = buf(ibv_alloc_dm_attr.sizeof()), host = buf(64);
        MemorySegment countersAttr = buf(ibv_counters_init_attr.sizeof()), attach = buf(ibv_counter_attach_attr.sizeof());
        MemorySegment counterValues = buf(3 * 8), modifyCq = buf(ibv_modify_cq_attr.sizeof());
        // a flow rule with one 16-byte spec after the attr
        MemorySegment flowAttr = buf(ibv_flow_attr.sizeof() + 16);
        ibv_flow_attr.num_of_specs(flowAttr, (byte) 1);
        flowAttr.set(JAVA_SHORT, ibv_flow_attr.sizeof() + 4, (short) 16);
        List<VerbsOp> ops = List.of(
                op("open_xrcd", () -> InlineVerbs.ibv_open_xrcd(ctx, xrcdAttr), a(ctx), a(xrcdAttr)),
                op("close_xrcd", () -> InlineVerbs.ibv_close_xrcd(world.object("xrcd")), a(world.object("xrcd"))),
                op("create_srq_ex", () -> InlineVerbs.ibv_create_srq_ex(ctx, srqAttr), a(ctx), a(srqAttr)),
                op("get_srq_num", () -> InlineVerbs.ibv_get_srq_num(srq, srqNum), a(srq), a(srqNum)),
                op("modify_cq", () -> InlineVerbs.ibv_modify_cq(cq, modifyCq), a(cq), a(modifyCq)),
                op("post_srq_ops", () -> InlineVerbs.ibv_post_srq_ops(srq, opsWr, badOp), a(srq), a(opsWr), a(badOp)),
                op("alloc_td", () -> InlineVerbs.ibv_alloc_td(ctx, tdAttr), a(ctx), a(tdAttr)),
                op("dealloc_td", () -> InlineVerbs.ibv_dealloc_td(world.object("td")), a(world.object("td"))),
                op("alloc_parent_domain", () -> InlineVerbs.ibv_alloc_parent_domain(ctx, pdAttr), a(ctx), a(pdAttr)),
                op("query_rt_values", () -> InlineVerbs.ibv_query_rt_values_ex(ctx, values), a(ctx), a(values)),
                op("open_qp", () -> InlineVerbs.ibv_open_qp(ctx, openAttr), a(ctx), a(openAttr)),
                op("modify_qp_rate_limit", () -> InlineVerbs.ibv_modify_qp_rate_limit(qp, rate), a(qp), a(rate)),
                op("modify_wq", () -> InlineVerbs.ibv_modify_wq(wq, wqAttr), a(wq), a(wqAttr)),
                op("destroy_wq", () -> InlineVerbs.ibv_destroy_wq(wq), a(wq)),
                op("create_rwq_ind_table", () -> InlineVerbs.ibv_create_rwq_ind_table(ctx, tableAttr), a(ctx), a(tableAttr)),
                op("destroy_rwq_ind_table", () -> InlineVerbs.ibv_destroy_rwq_ind_table(world.object("rwq_ind_table")),
                        a(world.object("rwq_ind_table"))),
                op("ibv_create_flow", () -> InlineVerbs.ibv_create_flow(qp, flowAttr), a(qp), a(flowAttr)),
                op("ibv_destroy_flow", () -> InlineVerbs.ibv_destroy_flow(flow), a(flow)),
                op("create_flow_action_esp", () -> InlineVerbs.ibv_create_flow_action_esp(ctx, espAttr), a(ctx), a(espAttr)),
                op("modify_flow_action_esp", () -> InlineVerbs.ibv_modify_flow_action_esp(action, espAttr), a(action),
                        a(espAttr)),
                op("destroy_flow_action", () -> InlineVerbs.ibv_destroy_flow_action(action), a(action)),
                op("advise_mr", () -> InlineVerbs.ibv_advise_mr(pd, 1, 2, sges, 2), a(pd), 1, 2, a(sges), 2),
                op("alloc_dm", () -> InlineVerbs.ibv_alloc_dm(ctx, dmAttr), a(ctx), a(dmAttr)),
                op("free_dm", () -> InlineVerbs.ibv_free_dm(dm), a(dm)),
                op("memcpy_to_dm", () -> InlineVerbs.ibv_memcpy_to_dm(dm, 8, host, 64), a(dm), 8, a(host), 64),
                op("memcpy_from_dm", () -> InlineVerbs.ibv_memcpy_from_dm(host, dm, 16, 32), a(host), a(dm), 16, 32),
                op("alloc_null_mr", () -> InlineVerbs.ibv_alloc_null_mr(pd), a(pd)),
                op("reg_dm_mr", () -> InlineVerbs.ibv_reg_dm_mr(pd, dm, 24, 4096, 7), a(pd), a(dm), 24, 4096, 7),
                op("create_counters", () -> InlineVerbs.ibv_create_counters(ctx, countersAttr), a(ctx), a(countersAttr)),
                op("destroy_counters", () -> InlineVerbs.ibv_destroy_counters(counters), a(counters)),
                op("attach_counters_point_flow", () -> InlineVerbs.ibv_attach_counters_point_flow(counters, attach, flow),
                        a(counters), a(attach), a(flow)),
                op("read_counters", () -> InlineVerbs.ibv_read_counters(counters, counterValues, 3, 1), a(counters),
                        a(counterValues), 3, 1));
        for (VerbsOp op : ops) {
            FakeProvider.reset();
            Object result = op.call().get();
            assertCall(op.op(), op.args());
            if (result instanceof Integer rc) {
                assertEquals(FakeProvider.expected(op.op()), rc, op.op() + " returns what the provider returned");
            } else {
                assertNotEquals(0, ((MemorySegment) result).address(), op.op() + " returns the provider's object");
            }
        }
        assertEquals(0x5151, srqNum.get(JAVA_INT, 0), "get_srq_num filled srq_num");
        assertEquals(3, counterValues.get(JAVA_LONG, 16), "read_counters filled the values");
        assertEquals(0x5a5a_5a5a, host.get(JAVA_INT, 20), "memcpy_from_dm filled the host buffer");
    }

    @Test
    void createWqInitializesWhatTheHeaderInitializes() {
        MemorySegment attr = buf(ibv_wq_init_attr.sizeof());
        MemorySegment userContext = buf(8);
        ibv_wq_init_attr.wq_context(attr, userContext);
        MemorySegment wq = world.object("wq").reinterpret(ibv_wq.sizeof());
        ibv_wq.events_completed(wq, 99);
        wq.asSlice(ibv_wq.mutex$OFFSET, 40).fill((byte) 0x77);
        assertEquals(wq.address(), InlineVerbs.ibv_create_wq(world.context(), attr).address());
        assertCall("create_wq", world.context().address(), attr.address());
        assertEquals(userContext.address(), ibv_wq.wq_context(wq).address(), "wq_context from the init attr");
        assertEquals(0, ibv_wq.events_completed(wq), "events_completed zeroed");
        assertEquals(0, wq.get(JAVA_INT, ibv_wq.mutex$OFFSET), "pthread_mutex_init ran (an unlocked glibc mutex)");
    }

    @Test
    void pureHeaderFunctions() {
        assertEquals(1, InlineVerbs.ibv_is_qpt_supported(1 << verbs_h.IBV_QPT_UD, verbs_h.IBV_QPT_UD));
        assertEquals(0, InlineVerbs.ibv_is_qpt_supported(1 << verbs_h.IBV_QPT_UD, verbs_h.IBV_QPT_RC));
        assertEquals(0, InlineVerbs.ibv_is_qpt_supported(-1, 255), "a qpt beyond the mask's 32 bits");
        assertEquals(0xC000, InlineVerbs.ibv_flow_label_to_udp_sport(0));
        assertEquals(0xC000 | (0x3FFF ^ 0x3F), InlineVerbs.ibv_flow_label_to_udp_sport(0xFFFFF));
        assertEquals(0xC000 | 0x1234, InlineVerbs.ibv_flow_label_to_udp_sport(0x1234));
    }

    @Test
    void absentOpsOfTheWholeHeaderThrowUnsupported() {
        try (World noOps = new World(true, 0, false)) {
            MemorySegment ctx = noOps.context(), any = buf(512), bad = buf(8);
            MemorySegment srqAttr = buf(ibv_srq_init_attr_ex.sizeof());
            ibv_srq_init_attr_ex.comp_mask(srqAttr, verbs_h.IBV_SRQ_INIT_ATTR_XRCD);
            List<Runnable> calls = List.of(
                    () -> InlineVerbs.ibv_post_wq_recv(noOps.object("wq"), any, bad),
                    () -> InlineVerbs.ibv_alloc_mw(noOps.object("pd"), 1),
                    () -> InlineVerbs.ibv_dealloc_mw(noOps.object("mw")),
                    () -> InlineVerbs.ibv_open_xrcd(ctx, any),
                    () -> InlineVerbs.ibv_close_xrcd(noOps.object("xrcd")),
                    () -> InlineVerbs.ibv_create_srq_ex(ctx, srqAttr),
                    () -> InlineVerbs.ibv_get_srq_num(noOps.srq(), any),
                    () -> InlineVerbs.ibv_modify_cq(noOps.cq(), any),
                    () -> InlineVerbs.ibv_alloc_td(ctx, any),
                    () -> InlineVerbs.ibv_dealloc_td(noOps.object("td")),
                    () -> InlineVerbs.ibv_alloc_parent_domain(ctx, any),
                    () -> InlineVerbs.ibv_query_rt_values_ex(ctx, any),
                    () -> InlineVerbs.ibv_open_qp(ctx, any),
                    () -> InlineVerbs.ibv_modify_qp_rate_limit(noOps.qp(), any),
                    () -> InlineVerbs.ibv_create_wq(ctx, any),
                    () -> InlineVerbs.ibv_modify_wq(noOps.object("wq"), any),
                    () -> InlineVerbs.ibv_destroy_wq(noOps.object("wq")),
                    () -> InlineVerbs.ibv_create_rwq_ind_table(ctx, any),
                    () -> InlineVerbs.ibv_destroy_rwq_ind_table(noOps.object("rwq_ind_table")),
                    () -> InlineVerbs.ibv_create_flow(noOps.qp(), any),
                    () -> InlineVerbs.ibv_destroy_flow(noOps.object("flow")),
                    () -> InlineVerbs.ibv_create_flow_action_esp(ctx, any),
                    () -> InlineVerbs.ibv_modify_flow_action_esp(noOps.object("flow_action"), any),
                    () -> InlineVerbs.ibv_destroy_flow_action(noOps.object("flow_action")),
                    () -> InlineVerbs.ibv_advise_mr(noOps.object("pd"), 0, 0, any, 1),
                    () -> InlineVerbs.ibv_alloc_dm(ctx, any),
                    () -> InlineVerbs.ibv_free_dm(noOps.object("dm")),
                    () -> InlineVerbs.ibv_memcpy_to_dm(noOps.object("dm"), 0, any, 8),
                    () -> InlineVerbs.ibv_memcpy_from_dm(any, noOps.object("dm"), 0, 8),
                    () -> InlineVerbs.ibv_alloc_null_mr(noOps.object("pd")),
                    () -> InlineVerbs.ibv_reg_dm_mr(noOps.object("pd"), noOps.object("dm"), 0, 8, 0),
                    () -> InlineVerbs.ibv_create_counters(ctx, any),
                    () -> InlineVerbs.ibv_destroy_counters(noOps.object("counters")),
                    () -> InlineVerbs.ibv_attach_counters_point_flow(noOps.object("counters"), any, MemorySegment.NULL),
                    () -> InlineVerbs.ibv_read_counters(noOps.object("counters"), any, 1, 0));
            for (Runnable call : calls) {
                assertThrows(UnsupportedVerbException.class, call::run);
            }
            // post_srq_ops: *bad_op = op, as the header does, then the exception
            MemorySegment op = buf(ibv_ops_wr.sizeof());
            assertThrows(UnsupportedVerbException.class, () -> InlineVerbs.ibv_post_srq_ops(noOps.srq(), op, bad));
            assertEquals(op.address(), bad.get(ADDRESS, 0).address());
            assertEquals("", FakeProvider.lastName(), "no provider op ran");
        }
    }

    @Test
    void sizedArgumentsAreCheckedBeforeTheCall() {
        MemorySegment q = world.qpx();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> InlineVerbs.ibv_poll_cq(world.cq(), 2, buf(48)));
        assertEquals("ibv_poll_cq: wc has 48 bytes; num_entries 2 needs 2 x sizeof(struct ibv_wc) = 96 bytes", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_post_send(world.qp(), buf(64), buf(8)));
        assertEquals("ibv_post_send: wr has 64 bytes; sizeof(struct ibv_send_wr) is 128", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_wr_set_inline_data(q, buf(16), 17));
        assertEquals("ibv_wr_set_inline_data: length 17 is more than the 16 bytes of addr", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_wr_set_sge_list(q, 2, buf(16)));
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_wr_set_sge_list(q, -1, buf(16)));
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_wr_set_inline_data_list(q, 3, buf(32)));
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_wr_atomic_write(q, 1, 2, buf(4)));
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_wr_send_tso(q, buf(8), (short) 9, (short) 1));
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_wr_bind_mw(q, world.object("mw"), 1, buf(8)));
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_wr_set_ud_addr(q, MemorySegment.NULL, 1, 2));
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_wc_read_tm_info(world.cqx(), buf(8)));
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_start_poll(world.cqx(), MemorySegment.NULL));
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_read_counters(world.object("counters"), buf(8), 2, 0));
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_reg_mr(world.object("pd"), buf(8), 9, 0));
        MemorySegment shortFlow = buf(ibv_flow_attr.sizeof() + 8);
        ibv_flow_attr.num_of_specs(shortFlow, (byte) 1);
        shortFlow.set(JAVA_SHORT, ibv_flow_attr.sizeof() + 4, (short) 16);
        e = assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_create_flow(world.qp(), shortFlow));
        assertTrue(e.getMessage().startsWith("ibv_create_flow: flow has " + shortFlow.byteSize() + " bytes; its 1 specs"),
                e.getMessage());
        assertEquals("", FakeProvider.lastName(), "the provider saw none of these calls");
        // a zero-length segment (how C pointers arrive) is a valid handle, but no buffer
        MemorySegment cqFromC = MemorySegment.ofAddress(world.cq().address());
        assertEquals(0, cqFromC.byteSize());
        assertEquals(FakeProvider.expected("poll_cq"), InlineVerbs.ibv_poll_cq(cqFromC, 1, buf(48)));
        assertThrows(IllegalArgumentException.class, () -> InlineVerbs.ibv_poll_cq(world.cq(), 1, cqFromC));
    }
}
