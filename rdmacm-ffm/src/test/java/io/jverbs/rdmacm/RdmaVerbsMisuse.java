package io.jverbs.rdmacm;

import io.jverbs.ibverbs.raw.ibv_mr;
import io.jverbs.ibverbs.raw.ibv_sge;
import io.jverbs.ibverbs.raw.ibv_wc;
import io.jverbs.ibverbs.raw.verbs_h;
import io.jverbs.ibverbs.testing.Misuse;
import io.jverbs.ibverbs.testing.Misuse.Case;
import io.jverbs.ibverbs.testing.Misuse.Fixture;
import io.jverbs.rdmacm.raw.rdma_cm_id;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.function.Consumer;

/**
 * The misuses of {@link RdmaVerbs} that would crash or corrupt the JVM without their check, one
 * per child JVM (see {@link Misuse}); run by {@link MisuseCrashTest}. The id is a
 * {@code rdma_cm_id} built over the fake provider's QP, PD and CQs.
 */
public final class RdmaVerbsMisuse {
    private static final String HEAP = " is a heap segment, which native code cannot use: allocate it from an Arena";

    /** Every case: a name, the exception and message the check must give, the one wrong call. */
    static final List<Case> CASES = List.of(
            iae("rdma_post_recv: NULL mr", "rdma_post_recv: mr is NULL",
                    f -> RdmaVerbs.rdma_post_recv(id(f), 1, f.buf(64), 64, MemorySegment.NULL)),
            iae("rdma_post_send: heap addr with IBV_SEND_INLINE", "rdma_post_send: addr" + HEAP,
                    f -> RdmaVerbs.rdma_post_send(id(f), 1, f.heap(64), 64, MemorySegment.NULL, verbs_h.IBV_SEND_INLINE)),
            iae("rdma_post_send: length beyond addr", "rdma_post_send: length 4096 is more than the 16 bytes of addr",
                    f -> RdmaVerbs.rdma_post_send(id(f), 1, f.guarded(16), 4096, MemorySegment.NULL, verbs_h.IBV_SEND_INLINE)),
            iae("rdma_post_send: length of 2^32", "rdma_post_send: length 4294967296 does not fit an ibv_sge"
                    + " (uint32_t length, below 2^32)",
                    f -> RdmaVerbs.rdma_post_send(id(f), 1, f.buf(16), 1L << 32, mr(f), 0)),
            iae("rdma_post_send: NULL addr", "rdma_post_send: addr is NULL",
                    f -> RdmaVerbs.rdma_post_send(id(f), 1, MemorySegment.NULL, 0, mr(f), 0)),
            iae("rdma_post_send: NULL mr without IBV_SEND_INLINE", "rdma_post_send: mr is NULL; only an inline send"
                    + " (IBV_SEND_INLINE) may go without a memory region",
                    f -> RdmaVerbs.rdma_post_send(id(f), 1, f.buf(64), 64, MemorySegment.NULL, verbs_h.IBV_SEND_SIGNALED)),
            new Case("rdma_post_write: addr of a closed arena", IllegalStateException.class,
                    "rdma_post_write: addr belongs to an arena that is already closed",
                    f -> RdmaVerbs.rdma_post_write(id(f), 1, f.closed(64), 64, mr(f), 0, 0x1000, 7)),
            iae("rdma_post_read: NULL mr", "rdma_post_read: mr is NULL",
                    f -> RdmaVerbs.rdma_post_read(id(f), 1, f.buf(64), 64, MemorySegment.NULL, 0, 0x1000, 7)),
            iae("rdma_post_ud_send: NULL ah", "rdma_post_ud_send: ah is NULL",
                    f -> RdmaVerbs.rdma_post_ud_send(id(f), 1, f.buf(64), 64, mr(f), 0, MemorySegment.NULL, 5)),
            iae("rdma_post_sendv: 2 SGEs in room for 1", "rdma_post_sendv: sgl has 16 bytes; nsge 2 needs 2 x"
                    + " sizeof(struct ibv_sge) = " + 2 * ibv_sge.sizeof() + " bytes",
                    f -> RdmaVerbs.rdma_post_sendv(id(f), 1, f.guarded(ibv_sge.sizeof()), 2, 0)),
            iae("rdma_post_recv: NULL id", "rdma_post_recv: id is NULL",
                    f -> RdmaVerbs.rdma_post_recv(MemorySegment.NULL, 1, f.buf(64), 64, mr(f))),
            iae("rdma_post_send: id without a QP", "rdma_post_send: the id has no QP (rdma_create_qp or rdma_create_ep first)",
                    f -> RdmaVerbs.rdma_post_send(f.buf(rdma_cm_id.sizeof()), 1, f.buf(64), 64, mr(f), 0)),
            iae("rdma_get_send_comp: wc of 16 bytes", "rdma_get_send_comp: wc has 16 bytes; sizeof(struct ibv_wc) is "
                    + ibv_wc.sizeof(), f -> RdmaVerbs.rdma_get_send_comp(id(f), f.guarded(16))),
            iae("rdma_get_recv_comp: id without a completion channel", "rdma_get_recv_comp: the id has no recv_cq_channel"
                    + " (its CQ was not made by rdma_create_qp or rdma_create_ep)",
                    f -> {
                        MemorySegment id = id(f);
                        rdma_cm_id.recv_cq_channel(id, MemorySegment.NULL);
                        f.world().useIdleCq(); // an empty CQ: C goes on to ibv_get_cq_event(NULL)
                        RdmaVerbs.rdma_get_recv_comp(id, f.buf(ibv_wc.sizeof()));
                    }),
            iae("rdma_dereg_mr: NULL mr", "rdma_dereg_mr: mr is NULL", f -> RdmaVerbs.rdma_dereg_mr(MemorySegment.NULL)),
            iae("rdma_reg_msgs: length beyond addr", "rdma_reg_msgs: length 8192 is more than the 4096 bytes of addr",
                    f -> RdmaVerbs.rdma_reg_msgs(id(f), f.buf(4096), 8192)));

    private RdmaVerbsMisuse() {
    }

    private static Case iae(String name, String message, Consumer<Fixture> misuse) {
        return new Case(name, IllegalArgumentException.class, message, misuse);
    }

    /** An id over the fake world: its QP, PD, both CQs and (fake, never read) channels. */
    private static MemorySegment id(Fixture f) {
        MemorySegment id = f.arena().allocate(rdma_cm_id.LAYOUT);
        rdma_cm_id.qp(id, f.world().qp());
        rdma_cm_id.pd(id, f.world().object("pd"));
        rdma_cm_id.send_cq(id, f.world().cq());
        rdma_cm_id.recv_cq(id, f.world().cq());
        rdma_cm_id.send_cq_channel(id, f.buf(64));
        rdma_cm_id.recv_cq_channel(id, f.buf(64));
        return id;
    }

    /** An MR covering nothing in particular (its lkey is all the thin layer reads). */
    private static MemorySegment mr(Fixture f) {
        MemorySegment mr = f.arena().allocate(ibv_mr.LAYOUT);
        ibv_mr.lkey(mr, 0x42);
        return mr;
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
