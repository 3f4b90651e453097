package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.raw.ibv_qp;
import io.jverbs.ibverbs.raw.ibv_qp_attr;
import io.jverbs.ibverbs.raw.ibv_qp_init_attr;
import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static io.jverbs.ibverbs.raw.verbs_h.IBV_QP_ACCESS_FLAGS;
import static io.jverbs.ibverbs.raw.verbs_h.IBV_QP_AV;
import static io.jverbs.ibverbs.raw.verbs_h.IBV_QP_DEST_QPN;
import static io.jverbs.ibverbs.raw.verbs_h.IBV_QP_MAX_DEST_RD_ATOMIC;
import static io.jverbs.ibverbs.raw.verbs_h.IBV_QP_MAX_QP_RD_ATOMIC;
import static io.jverbs.ibverbs.raw.verbs_h.IBV_QP_MIN_RNR_TIMER;
import static io.jverbs.ibverbs.raw.verbs_h.IBV_QP_PATH_MTU;
import static io.jverbs.ibverbs.raw.verbs_h.IBV_QP_PKEY_INDEX;
import static io.jverbs.ibverbs.raw.verbs_h.IBV_QP_PORT;
import static io.jverbs.ibverbs.raw.verbs_h.IBV_QP_QKEY;
import static io.jverbs.ibverbs.raw.verbs_h.IBV_QP_RETRY_CNT;
import static io.jverbs.ibverbs.raw.verbs_h.IBV_QP_RNR_RETRY;
import static io.jverbs.ibverbs.raw.verbs_h.IBV_QP_RQ_PSN;
import static io.jverbs.ibverbs.raw.verbs_h.IBV_QP_SQ_PSN;
import static io.jverbs.ibverbs.raw.verbs_h.IBV_QP_STATE;
import static io.jverbs.ibverbs.raw.verbs_h.IBV_QP_TIMEOUT;

/**
 * QP state changes with the attribute masks each transition requires (per QP type and target
 * state), through {@code ibv_modify_qp}. Each throws a {@link io.jverbs.ibverbs.VerbsException}
 * naming {@code ibv_modify_qp} and the errno when the device refuses.
 */
public final class QueuePairs {
    /** RC transitions: what INIT, RTR and RTS need. */
    public static final int RC_INIT_MASK = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    public static final int RC_RTR_MASK = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN
            | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    public static final int RC_RTS_MASK = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN
            | IBV_QP_MAX_QP_RD_ATOMIC;
    /** UD transitions. */
    public static final int UD_INIT_MASK = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
    public static final int UD_RTS_MASK = IBV_QP_STATE | IBV_QP_SQ_PSN;

    private QueuePairs() {
    }

    /** @return {@code qp->qp_num} */
    public static int qpn(MemorySegment qp) {
        return ibv_qp.qp_num(qp);
    }

    /** Runs {@code ibv_modify_qp} on an attribute struct the caller fills. */
    public static void modify(MemorySegment qp, AttrFiller filler, int mask) {
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment attr = scratch.allocate(ibv_qp_attr.LAYOUT);
            filler.fill(attr);
            Checks.ok("ibv_modify_qp", verbs_h.ibv_modify_qp(qp, attr, mask));
        }
    }

    /** Fills a zeroed {@code struct ibv_qp_attr}. */
    @FunctionalInterface
    public interface AttrFiller {
        void fill(MemorySegment attr);
    }

    /** RESET to INIT for an RC QP, with the given remote access rights. */
    public static void rcToInit(MemorySegment qp, int port, int access) {
        modify(qp, attr -> {
            ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_INIT);
            ibv_qp_attr.pkey_index(attr, (short) 0);
            ibv_qp_attr.port_num(attr, (byte) port);
            ibv_qp_attr.qp_access_flags(attr, access);
        }, RC_INIT_MASK);
    }

    /** INIT to RTR for an RC QP facing {@code remoteQpn} at {@code remoteGid} (RoCE: global route, GID index). */
    public static void rcToRtr(MemorySegment qp, int port, int pathMtu, int remoteQpn, int rqPsn, byte[] remoteGid,
                               int sgidIndex) {
        modify(qp, attr -> {
            ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_RTR);
            ibv_qp_attr.path_mtu(attr, pathMtu);
            ibv_qp_attr.dest_qp_num(attr, remoteQpn);
            ibv_qp_attr.rq_psn(attr, rqPsn);
            ibv_qp_attr.max_dest_rd_atomic(attr, (byte) 1);
            ibv_qp_attr.min_rnr_timer(attr, (byte) 12);
            Resources.fillGlobalAddress(ibv_qp_attr.ah_attr(attr), port, remoteGid, sgidIndex);
        }, RC_RTR_MASK);
    }

    /** RTR to RTS for an RC QP: retry counts 7, local ACK timeout 14 (about 67 ms). */
    public static void rcToRts(MemorySegment qp, int sqPsn) {
        modify(qp, attr -> {
            ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_RTS);
            ibv_qp_attr.timeout(attr, (byte) 14);
            ibv_qp_attr.retry_cnt(attr, (byte) 7);
            ibv_qp_attr.rnr_retry(attr, (byte) 7);
            ibv_qp_attr.sq_psn(attr, sqPsn);
            ibv_qp_attr.max_rd_atomic(attr, (byte) 1);
        }, RC_RTS_MASK);
    }

    /** RESET to INIT to RTR to RTS for a UD QP with {@code qkey}. */
    public static void udToRts(MemorySegment qp, int port, int qkey, int sqPsn) {
        modify(qp, attr -> {
            ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_INIT);
            ibv_qp_attr.pkey_index(attr, (short) 0);
            ibv_qp_attr.port_num(attr, (byte) port);
            ibv_qp_attr.qkey(attr, qkey);
        }, UD_INIT_MASK);
        modify(qp, attr -> ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_RTR), IBV_QP_STATE);
        modify(qp, attr -> {
            ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_RTS);
            ibv_qp_attr.sq_psn(attr, sqPsn);
        }, UD_RTS_MASK);
    }

    /**
     * {@code ibv_query_qp}: copies the current attributes into {@code attrOut} (an
     * {@code ibv_qp_attr}, zeroed by the caller's arena).
     */
    public static void query(MemorySegment qp, int mask, MemorySegment attrOut) {
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment init = scratch.allocate(ibv_qp_init_attr.LAYOUT);
            Checks.ok("ibv_query_qp", verbs_h.ibv_query_qp(qp, attrOut, mask, init));
        }
    }

    /** @return the QP state as {@code ibv_query_qp} reports it ({@code IBV_QPS_*}) */
    public static int state(MemorySegment qp) {
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment attr = scratch.allocate(ibv_qp_attr.LAYOUT);
            query(qp, IBV_QP_STATE, attr);
            return ibv_qp_attr.qp_state(attr);
        }
    }
}
