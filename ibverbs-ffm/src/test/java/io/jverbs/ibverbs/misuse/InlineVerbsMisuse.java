package io.jverbs.ibverbs.misuse;

import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.raw.ibv_device_attr;
import io.jverbs.ibverbs.raw.ibv_device_attr_ex;
import io.jverbs.ibverbs.raw.ibv_flow_attr;
import io.jverbs.ibverbs.raw.ibv_mw_bind_info;
import io.jverbs.ibverbs.raw.ibv_port_attr;
import io.jverbs.ibverbs.raw.ibv_qp_init_attr_ex;
import io.jverbs.ibverbs.raw.ibv_recv_wr;
import io.jverbs.ibverbs.raw.ibv_send_wr;
import io.jverbs.ibverbs.raw.ibv_sge;
import io.jverbs.ibverbs.raw.ibv_wc;
import io.jverbs.ibverbs.raw.ibv_wc_tm_info;
import io.jverbs.ibverbs.raw.verbs_h;
import io.jverbs.ibverbs.testing.FakeProvider;
import io.jverbs.ibverbs.testing.Misuse;
import io.jverbs.ibverbs.testing.Misuse.Case;
import io.jverbs.ibverbs.testing.Misuse.Fixture;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.function.Consumer;

import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * The misuses of {@link InlineVerbs} that would crash or corrupt the JVM without their check,
 * one per child JVM (see {@link Misuse}); run by {@code MisuseCrashTest} in rdmacm-ffm, which
 * sees both thin modules. Against the fake provider, whose ops touch memory as a real one does;
 * a buffer that is too small ends at a guard page ({@link Fixture#guarded}), so that without its
 * check the overrun would crash the child rather than corrupt it quietly.
 */
public final class InlineVerbsMisuse {
    private static final String HEAP = " is a heap segment, which native code cannot use: allocate it from an Arena";

    /** Every case: a name, the exception and message the check must give, the one wrong call. */
    public static final List<Case> CASES = List.of(
            // ibv_poll_cq: the provider writes num_entries × sizeof(struct ibv_wc) into wc
            iae("ibv_poll_cq: NULL wc", "ibv_poll_cq: wc is NULL",
                    f -> InlineVerbs.ibv_poll_cq(f.world().cq(), 1, MemorySegment.NULL)),
            iae("ibv_poll_cq: wc of one entry for 16", "ibv_poll_cq: wc has " + ibv_wc.sizeof()
                    + " bytes; num_entries 16 needs 16 x sizeof(struct ibv_wc) = " + 16 * ibv_wc.sizeof() + " bytes",
                    f -> InlineVerbs.ibv_poll_cq(f.world().cq(), 16, f.guarded(ibv_wc.sizeof()))),
            iae("ibv_poll_cq: negative num_entries", "ibv_poll_cq: num_entries is -1; it must be >= 0",
                    f -> InlineVerbs.ibv_poll_cq(f.world().cq(), -1, f.buf(ibv_wc.sizeof()))),
            iae("ibv_poll_cq: heap wc", "ibv_poll_cq: wc" + HEAP,
                    f -> InlineVerbs.ibv_poll_cq(f.world().cq(), 1, f.heap((int) ibv_wc.sizeof()))),
            new Case("ibv_poll_cq: wc of a closed arena", IllegalStateException.class,
                    "ibv_poll_cq: wc belongs to an arena that is already closed",
                    f -> InlineVerbs.ibv_poll_cq(f.world().cq(), 1, f.closed(ibv_wc.sizeof()))),
            iae("ibv_poll_cq: NULL cq", "ibv_poll_cq: cq is NULL",
                    f -> InlineVerbs.ibv_poll_cq(MemorySegment.NULL, 1, f.buf(ibv_wc.sizeof()))),
            // posts: the provider reads the whole work request and writes *bad_wr
            iae("ibv_post_send: NULL wr", "ibv_post_send: wr is NULL",
                    f -> InlineVerbs.ibv_post_send(f.world().qp(), MemorySegment.NULL, f.buf(8))),
            iae("ibv_post_send: NULL bad_wr", "ibv_post_send: bad_wr is NULL",
                    f -> InlineVerbs.ibv_post_send(f.world().qp(), f.buf(ibv_send_wr.sizeof()), MemorySegment.NULL)),
            iae("ibv_post_send: wr shorter than ibv_send_wr", "ibv_post_send: wr has 64 bytes; sizeof(struct ibv_send_wr) is "
                    + ibv_send_wr.sizeof(), f -> InlineVerbs.ibv_post_send(f.world().qp(), f.guarded(64), f.buf(8))),
            iae("ibv_post_send: bad_wr of 4 bytes", "ibv_post_send: bad_wr has 4 bytes; sizeof(struct ibv_send_wr *) is 8",
                    f -> InlineVerbs.ibv_post_send(f.world().qp(), f.buf(ibv_send_wr.sizeof()), f.guarded(4))),
            iae("ibv_post_send: NULL qp", "ibv_post_send: qp is NULL",
                    f -> InlineVerbs.ibv_post_send(MemorySegment.NULL, f.buf(ibv_send_wr.sizeof()), f.buf(8))),
            iae("ibv_post_recv: NULL wr", "ibv_post_recv: wr is NULL",
                    f -> InlineVerbs.ibv_post_recv(f.world().qp(), MemorySegment.NULL, f.buf(8))),
            iae("ibv_post_recv: wr shorter than ibv_recv_wr", "ibv_post_recv: wr has 16 bytes; sizeof(struct ibv_recv_wr) is "
                    + ibv_recv_wr.sizeof(), f -> InlineVerbs.ibv_post_recv(f.world().qp(), f.guarded(16), f.buf(8))),
            iae("ibv_post_recv: NULL bad_wr", "ibv_post_recv: bad_wr is NULL",
                    f -> InlineVerbs.ibv_post_recv(f.world().qp(), f.buf(ibv_recv_wr.sizeof()), MemorySegment.NULL)),
            iae("ibv_post_srq_recv: NULL bad_recv_wr", "ibv_post_srq_recv: bad_recv_wr is NULL",
                    f -> InlineVerbs.ibv_post_srq_recv(f.world().srq(), f.buf(ibv_recv_wr.sizeof()), MemorySegment.NULL)),
            iae("ibv_post_wq_recv: NULL recv_wr", "ibv_post_wq_recv: recv_wr is NULL",
                    f -> InlineVerbs.ibv_post_wq_recv(f.world().object("wq"), MemorySegment.NULL, f.buf(8))),
            iae("ibv_req_notify_cq: NULL cq", "ibv_req_notify_cq: cq is NULL",
                    f -> InlineVerbs.ibv_req_notify_cq(MemorySegment.NULL, 0)),
            // attribute structs: read (create) or written (query) by the provider
            iae("ibv_create_qp_ex: NULL attr", "ibv_create_qp_ex: qp_init_attr_ex is NULL",
                    f -> InlineVerbs.ibv_create_qp_ex(f.world().context(), MemorySegment.NULL)),
            iae("ibv_create_qp_ex: NULL pd for ibv_create_qp", "ibv_create_qp_ex: qp_init_attr_ex->pd is NULL",
                    f -> {
                        MemorySegment attr = f.buf(ibv_qp_init_attr_ex.sizeof());
                        ibv_qp_init_attr_ex.comp_mask(attr, verbs_h.IBV_QP_INIT_ATTR_PD);
                        InlineVerbs.ibv_create_qp_ex(f.world().context(), attr);
                    }),
            iae("ibv_create_cq_ex: NULL attr", "ibv_create_cq_ex: cq_attr is NULL",
                    f -> InlineVerbs.ibv_create_cq_ex(f.world().context(), MemorySegment.NULL)),
            iae("ibv_create_srq_ex: NULL attr", "ibv_create_srq_ex: srq_init_attr_ex is NULL",
                    f -> InlineVerbs.ibv_create_srq_ex(f.world().context(), MemorySegment.NULL)),
            iae("ibv_query_port: NULL attr", "ibv_query_port: port_attr is NULL",
                    f -> InlineVerbs.ibv_query_port(f.world().context(), 1, MemorySegment.NULL)),
            iae("ibv_query_port: NULL attr on the compat path", "ibv_query_port: port_attr is NULL",
                    f -> InlineVerbs.ibv_query_port(new FakeProvider.World(false, 0, true).context(), 1, MemorySegment.NULL)),
            iae("ibv_query_port: attr of 16 bytes", "ibv_query_port: port_attr has 16 bytes; sizeof(struct ibv_port_attr) is "
                    + ibv_port_attr.sizeof(), f -> InlineVerbs.ibv_query_port(f.world().context(), 1, f.guarded(16))),
            iae("ibv_query_device_ex: NULL attr", "ibv_query_device_ex: attr is NULL",
                    f -> InlineVerbs.ibv_query_device_ex(f.world().context(), MemorySegment.NULL, MemorySegment.NULL)),
            iae("ibv_query_device_ex: an ibv_device_attr for attr", "ibv_query_device_ex: attr has " + ibv_device_attr.sizeof()
                    + " bytes; sizeof(struct ibv_device_attr_ex) is " + ibv_device_attr_ex.sizeof(),
                    f -> InlineVerbs.ibv_query_device_ex(f.world().context(), MemorySegment.NULL, f.guarded(ibv_device_attr.sizeof()))),
            iae("ibv_query_device_ex: input of 2 bytes", "ibv_query_device_ex: input has 2 bytes;"
                    + " sizeof(struct ibv_query_device_ex_input) is 4",
                    f -> InlineVerbs.ibv_query_device_ex(f.world().context(), f.guarded(2), f.buf(ibv_device_attr_ex.sizeof()))),
            iae("ibv_qp_to_qp_ex: NULL qp", "ibv_qp_to_qp_ex: qp is NULL",
                    f -> InlineVerbs.ibv_qp_to_qp_ex(MemorySegment.NULL)),
            iae("ibv_bind_mw: NULL mw_bind", "ibv_bind_mw: mw_bind is NULL",
                    f -> InlineVerbs.ibv_bind_mw(f.world().qp(), f.world().object("mw"), MemorySegment.NULL)),
            iae("ibv_reg_mr: length beyond addr", "ibv_reg_mr: length 4096 is more than the 16 bytes of addr",
                    f -> InlineVerbs.ibv_reg_mr(f.world().object("pd"), f.buf(16), 4096, verbs_h.IBV_ACCESS_LOCAL_WRITE)),
            iae("ibv_read_counters: values for 1 of 4", "ibv_read_counters: counters_value has 8 bytes; ncounters 4 needs"
                    + " 4 x sizeof(uint64_t) = 32 bytes",
                    f -> InlineVerbs.ibv_read_counters(f.world().object("counters"), f.guarded(8), 4, 0)),
            iae("ibv_memcpy_from_dm: length beyond host_addr", "ibv_memcpy_from_dm: length 4096 is more than the 64 bytes"
                    + " of host_addr", f -> InlineVerbs.ibv_memcpy_from_dm(f.guarded(64), f.world().object("dm"), 0, 4096)),
            iae("ibv_create_flow: spec beyond the segment", "ibv_create_flow: flow has " + (ibv_flow_attr.sizeof() + 8)
                    + " bytes; its 1 specs (num_of_specs) need at least " + (ibv_flow_attr.sizeof() + 4096),
                    f -> {
                        MemorySegment flow = f.guarded(ibv_flow_attr.sizeof() + 8);
                        ibv_flow_attr.num_of_specs(flow, (byte) 1);
                        flow.set(JAVA_SHORT, ibv_flow_attr.sizeof() + 4, (short) 4096);
                        InlineVerbs.ibv_create_flow(f.world().qp(), flow);
                    }),
            // ibv_qp_ex / ibv_cq_ex: the setters read their buffers before returning
            iae("ibv_wr_set_inline_data: length beyond addr", "ibv_wr_set_inline_data: length 4096 is more than the 16"
                    + " bytes of addr", f -> InlineVerbs.ibv_wr_set_inline_data(f.world().qpx(), f.guarded(16), 4096)),
            iae("ibv_wr_set_inline_data: heap addr", "ibv_wr_set_inline_data: addr" + HEAP,
                    f -> InlineVerbs.ibv_wr_set_inline_data(f.world().qpx(), f.heap(64), 64)),
            iae("ibv_wr_set_sge_list: 3 entries in room for 1", "ibv_wr_set_sge_list: sg_list has 16 bytes; num_sge 3 needs"
                    + " 3 x sizeof(struct ibv_sge) = " + 3 * ibv_sge.sizeof() + " bytes",
                    f -> InlineVerbs.ibv_wr_set_sge_list(f.world().qpx(), 3, f.guarded(ibv_sge.sizeof()))),
            iae("ibv_wr_set_inline_data_list: NULL buf_list", "ibv_wr_set_inline_data_list: buf_list is NULL",
                    f -> InlineVerbs.ibv_wr_set_inline_data_list(f.world().qpx(), 2, MemorySegment.NULL)),
            iae("ibv_wr_atomic_write: 4 bytes", "ibv_wr_atomic_write: atomic_wr has 4 bytes; sizeof(uint64_t) is 8",
                    f -> InlineVerbs.ibv_wr_atomic_write(f.world().qpx(), 1, 0x1000, f.guarded(4))),
            iae("ibv_wr_send_tso: hdr shorter than hdr_sz", "ibv_wr_send_tso: hdr_sz 2048 is more than the 64 bytes of hdr",
                    f -> InlineVerbs.ibv_wr_send_tso(f.world().qpx(), f.guarded(64), (short) 2048, (short) 1400)),
            iae("ibv_wr_bind_mw: NULL bind_info", "ibv_wr_bind_mw: bind_info is NULL",
                    f -> InlineVerbs.ibv_wr_bind_mw(f.world().qpx(), f.world().object("mw"), 1, MemorySegment.NULL)),
            iae("ibv_wr_bind_mw: bind_info too small", "ibv_wr_bind_mw: bind_info has 8 bytes; sizeof(struct"
                    + " ibv_mw_bind_info) is " + ibv_mw_bind_info.sizeof(),
                    f -> InlineVerbs.ibv_wr_bind_mw(f.world().qpx(), f.world().object("mw"), 1, f.guarded(8))),
            iae("ibv_wr_set_ud_addr: NULL ah", "ibv_wr_set_ud_addr: ah is NULL",
                    f -> InlineVerbs.ibv_wr_set_ud_addr(f.world().qpx(), MemorySegment.NULL, 1, 2)),
            iae("ibv_start_poll: NULL attr", "ibv_start_poll: attr is NULL",
                    f -> InlineVerbs.ibv_start_poll(f.world().cqx(), MemorySegment.NULL)),
            iae("ibv_wc_read_tm_info: tm_info of 8 bytes", "ibv_wc_read_tm_info: tm_info has 8 bytes; sizeof(struct"
                    + " ibv_wc_tm_info) is " + ibv_wc_tm_info.sizeof(),
                    f -> InlineVerbs.ibv_wc_read_tm_info(f.world().cqx(), f.guarded(8))));

    private InlineVerbsMisuse() {
    }

    private static Case iae(String name, String message, Consumer<Fixture> misuse) {
        return new Case(name, IllegalArgumentException.class, message, misuse);
    }

    /**
     * The child JVM's entry point.
     *
     * @param args the case name
     */
    public static void main(String[] args) {
        Misuse.childMain(CASES, args);
    }
}
