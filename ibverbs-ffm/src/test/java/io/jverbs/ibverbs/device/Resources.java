package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.raw.ibv_ah;
import io.jverbs.ibverbs.raw.ibv_ah_attr;
import io.jverbs.ibverbs.raw.ibv_comp_channel;
import io.jverbs.ibverbs.raw.ibv_cq;
import io.jverbs.ibverbs.raw.ibv_global_route;
import io.jverbs.ibverbs.raw.ibv_mr;
import io.jverbs.ibverbs.raw.ibv_qp;
import io.jverbs.ibverbs.raw.ibv_qp_cap;
import io.jverbs.ibverbs.raw.ibv_qp_init_attr;
import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Creates verbs objects through the thin bindings and registers their destruction in a
 * {@link Cleanup}, so that every creation has exactly one matching destroy, run in reverse order.
 */
public final class Resources {
    /** Every access right the tests use. */
    public static final int FULL_ACCESS = verbs_h.IBV_ACCESS_LOCAL_WRITE | verbs_h.IBV_ACCESS_REMOTE_WRITE
            | verbs_h.IBV_ACCESS_REMOTE_READ | verbs_h.IBV_ACCESS_REMOTE_ATOMIC;
    private static final long PAGE = 4096;

    private Resources() {
    }

    /** Allocates a zeroed, page-aligned buffer from {@code arena} and registers it (ibv_reg_mr, iova = address). */
    public static Mr registerMemory(Cleanup cleanup, Arena arena, MemorySegment pd, long bytes, int access) {
        MemorySegment buffer = arena.allocate(bytes, PAGE);
        MemorySegment mr = Checks.nonNull("ibv_reg_mr", InlineVerbs.ibv_reg_mr(pd, buffer, bytes, access), ibv_mr.sizeof());
        cleanup.add("ibv_dereg_mr", () -> verbs_h.ibv_dereg_mr(mr));
        return new Mr(buffer, mr);
    }

    /** {@code ibv_create_comp_channel}. */
    public static MemorySegment compChannel(Cleanup cleanup, MemorySegment context) {
        MemorySegment channel = Checks.nonNull("ibv_create_comp_channel", verbs_h.ibv_create_comp_channel(context),
                ibv_comp_channel.sizeof());
        cleanup.add("ibv_destroy_comp_channel", () -> verbs_h.ibv_destroy_comp_channel(channel));
        return channel;
    }

    /** {@code ibv_create_cq} with {@code cqe} entries, on {@code channel} (or {@code MemorySegment.NULL}). */
    public static MemorySegment cq(Cleanup cleanup, MemorySegment context, int cqe, MemorySegment channel) {
        MemorySegment cq = Checks.nonNull("ibv_create_cq", verbs_h.ibv_create_cq(context, cqe, MemorySegment.NULL, channel, 0),
                ibv_cq.sizeof());
        cleanup.add("ibv_destroy_cq", () -> verbs_h.ibv_destroy_cq(cq));
        return cq;
    }

    /** Fills a {@code struct ibv_qp_init_attr}: one SGE each way, {@code maxWr} requests each way, not all signaled. */
    public static MemorySegment qpInitAttr(Arena arena, int qpType, MemorySegment sendCq, MemorySegment recvCq, int maxWr) {
        return fillQpInitAttr(arena.allocate(ibv_qp_init_attr.LAYOUT), qpType, sendCq, recvCq, maxWr);
    }

    /**
     * Fills the {@code struct ibv_qp_init_attr} fields of {@code attr} as {@link #qpInitAttr} does;
     * also right for a {@code struct ibv_qp_init_attr_ex}, which starts with the same fields
     * (libibverbs itself casts one to the other).
     */
    public static MemorySegment fillQpInitAttr(MemorySegment attr, int qpType, MemorySegment sendCq, MemorySegment recvCq,
                                               int maxWr) {
        ibv_qp_init_attr.send_cq(attr, sendCq);
        ibv_qp_init_attr.recv_cq(attr, recvCq);
        MemorySegment cap = ibv_qp_init_attr.cap(attr);
        ibv_qp_cap.max_send_wr(cap, maxWr);
        ibv_qp_cap.max_recv_wr(cap, maxWr);
        ibv_qp_cap.max_send_sge(cap, 1);
        ibv_qp_cap.max_recv_sge(cap, 1);
        ibv_qp_init_attr.qp_type(attr, qpType);
        ibv_qp_init_attr.sq_sig_all(attr, 0);
        return attr;
    }

    /** {@code ibv_create_qp} of {@code qpType} (RESET state). */
    public static MemorySegment qp(Cleanup cleanup, MemorySegment pd, int qpType, MemorySegment sendCq, MemorySegment recvCq,
                                   int maxWr) {
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment attr = qpInitAttr(scratch, qpType, sendCq, recvCq, maxWr);
            MemorySegment qp = Checks.nonNull("ibv_create_qp", verbs_h.ibv_create_qp(pd, attr), ibv_qp.sizeof());
            cleanup.add("ibv_destroy_qp", () -> verbs_h.ibv_destroy_qp(qp));
            return qp;
        }
    }

    /**
     * {@code ibv_create_ah} for RoCE: {@code is_global = 1}, the destination GID, our GID index as
     * source, hop limit 64.
     */
    public static MemorySegment ah(Cleanup cleanup, MemorySegment pd, int port, byte[] dgid, int sgidIndex) {
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment attr = scratch.allocate(ibv_ah_attr.LAYOUT);
            fillGlobalAddress(attr, port, dgid, sgidIndex);
            MemorySegment ah = Checks.nonNull("ibv_create_ah", verbs_h.ibv_create_ah(pd, attr), ibv_ah.sizeof());
            cleanup.add("ibv_destroy_ah", () -> verbs_h.ibv_destroy_ah(ah));
            return ah;
        }
    }

    /** Fills a {@code struct ibv_ah_attr} for a RoCE destination (global routing header mandatory). */
    public static void fillGlobalAddress(MemorySegment ahAttr, int port, byte[] dgid, int sgidIndex) {
        ibv_ah_attr.is_global(ahAttr, (byte) 1);
        ibv_ah_attr.port_num(ahAttr, (byte) port);
        ibv_ah_attr.dlid(ahAttr, (short) 0);
        ibv_ah_attr.sl(ahAttr, (byte) 0);
        MemorySegment grh = ibv_ah_attr.grh(ahAttr);
        ibv_global_route.dgid(grh).copyFrom(MemorySegment.ofArray(dgid));
        ibv_global_route.sgid_index(grh, (byte) sgidIndex);
        ibv_global_route.hop_limit(grh, (byte) 64);
        ibv_global_route.flow_label(grh, 0);
        ibv_global_route.traffic_class(grh, (byte) 0);
    }
}
