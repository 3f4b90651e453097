package io.jverbs.rdmacm;

import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.internal.PointerArgs;
import io.jverbs.ibverbs.raw.ibv_mr;
import io.jverbs.ibverbs.raw.ibv_recv_wr;
import io.jverbs.ibverbs.raw.ibv_send_wr;
import io.jverbs.ibverbs.raw.ibv_sge;
import io.jverbs.ibverbs.raw.ibv_wc;
import io.jverbs.ibverbs.raw.verbs_h;
import io.jverbs.rdmacm.raw.rdma_cm_id;
import io.jverbs.rdmacm.raw.rdma_cma_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.ADDRESS;

/**
 * The helpers that {@code rdma/rdma_verbs.h} defines {@code static inline}: memory registration
 * on an {@code rdma_cm_id}'s PD, single- and multi-SGE posts on its QP (or SRQ), and the blocking
 * {@code rdma_get_send_comp} / {@code rdma_get_recv_comp}.
 *
 * <p>As in C, the post helpers return 0 or -1 and report the cause through errno: here the
 * calling thread's {@link Native#lastErrno()}. The work request and SGE that C builds on the stack
 * live in a per-thread scratch segment, so a post allocates nothing after the thread's first
 * call. Thread-safety is that of the QP: one thread per QP at a time unless the provider says
 * otherwise.
 *
 * <p>Arguments are checked before anything reaches native code, as {@code InlineVerbs} checks
 * its own (see there for what cannot be checked): every segment must be native and alive; the
 * {@code rdma_cm_id}, the MR and the AH are handles (non-NULL, size unchecked), and the id must
 * have the QP, PD or CQ the helper uses; a buffer {@code addr} must be non-NULL and at least
 * {@code length} bytes, with {@code length} in [0, 2<sup>32</sup>) since it goes into an
 * {@code ibv_sge}; an SGE list must hold {@code nsge} entries; {@code wc} one {@code ibv_wc}. The
 * MR may be NULL only where C allows it and the device reads no lkey: a send or write with
 * {@code IBV_SEND_INLINE}. A failed check is an {@link IllegalArgumentException} (an
 * {@link IllegalStateException} for a closed arena) naming the helper and the argument. The
 * memory must stay registered and allocated until the completion.
 */
public final class RdmaVerbs {
    private static final long SEND_WR = 0;
    private static final long RECV_WR = SEND_WR + ibv_send_wr.sizeof();
    private static final long SGE = RECV_WR + ibv_recv_wr.sizeof();
    private static final long BAD = SGE + ibv_sge.sizeof();
    private static final long EVENT_CQ = BAD + ADDRESS.byteSize();
    private static final long EVENT_CONTEXT = EVENT_CQ + ADDRESS.byteSize();
    private static final long SCRATCH_SIZE = EVENT_CONTEXT + ADDRESS.byteSize();
    private static final ThreadLocal<MemorySegment> SCRATCH =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(SCRATCH_SIZE, 8));

    private static final long WR_RDMA = ibv_send_wr.wr$OFFSET + ibv_send_wr.wr.rdma$OFFSET;
    private static final long WR_UD = ibv_send_wr.wr$OFFSET + ibv_send_wr.wr.ud$OFFSET;

    private RdmaVerbs() {
    }

    /** {@code rdma_seterrno}: 0 stays 0; an errno becomes -1 with the errno recorded. */
    private static int seterrno(int ret) {
        if (ret != 0) {
            Native.setLastErrno(ret);
            return -1;
        }
        return 0;
    }

    // ---- memory registration ----

    /**
     * {@code rdma_reg_msgs}: registers memory for sends and receives (local write).
     *
     * @param id     {@code struct rdma_cm_id *} with a PD
     * @param addr   the memory; it must stay allocated until the MR is deregistered
     * @param length bytes
     * @return {@code struct ibv_mr *}, or NULL with {@link Native#lastErrno()} set
     */
    public static MemorySegment rdma_reg_msgs(MemorySegment id, MemorySegment addr, long length) {
        return regMr("rdma_reg_msgs", id, addr, length, verbs_h.IBV_ACCESS_LOCAL_WRITE);
    }

    /**
     * {@code rdma_reg_read}: registers memory the peer may RDMA Read.
     *
     * @param id {@code struct rdma_cm_id *}
     * @param addr the memory
     * @param length bytes
     * @return {@code struct ibv_mr *}, or NULL with {@link Native#lastErrno()} set
     */
    public static MemorySegment rdma_reg_read(MemorySegment id, MemorySegment addr, long length) {
        return regMr("rdma_reg_read", id, addr, length, verbs_h.IBV_ACCESS_LOCAL_WRITE | verbs_h.IBV_ACCESS_REMOTE_READ);
    }

    /**
     * {@code rdma_reg_write}: registers memory the peer may RDMA Write.
     *
     * @param id {@code struct rdma_cm_id *}
     * @param addr the memory
     * @param length bytes
     * @return {@code struct ibv_mr *}, or NULL with {@link Native#lastErrno()} set
     */
    public static MemorySegment rdma_reg_write(MemorySegment id, MemorySegment addr, long length) {
        return regMr("rdma_reg_write", id, addr, length, verbs_h.IBV_ACCESS_LOCAL_WRITE | verbs_h.IBV_ACCESS_REMOTE_WRITE);
    }

    /**
     * {@code rdma_dereg_mr}. The memory must no longer be the target of any work in flight.
     *
     * @param mr {@code struct ibv_mr *}
     * @return 0, or -1 with {@link Native#lastErrno()} set
     */
    public static int rdma_dereg_mr(MemorySegment mr) {
        PointerArgs.handle(mr, "rdma_dereg_mr", "mr");
        return seterrno(verbs_h.ibv_dereg_mr(mr));
    }

    // ---- vectored posts ----

    /**
     * {@code rdma_post_recvv}: posts one receive (to the id's SRQ when it has one).
     *
     * @param id      {@code struct rdma_cm_id *}
     * @param context the work request id, returned in the completion
     * @param sgl     {@code struct ibv_sge[nsge]}
     * @param nsge    entries in {@code sgl}
     * @return 0, or -1 with {@link Native#lastErrno()} set
     */
    public static int rdma_post_recvv(MemorySegment id, long context, MemorySegment sgl, int nsge) {
        PointerArgs.handle(id, "rdma_post_recvv", "id");
        sgList(sgl, nsge, "rdma_post_recvv");
        return postRecv("rdma_post_recvv", id, context, sgl, nsge);
    }

    private static int postRecv(String verb, MemorySegment id, long context, MemorySegment sgl, int nsge) {
        MemorySegment cmId = cmId(id, verb);
        MemorySegment srq = rdma_cm_id.srq(cmId);
        MemorySegment qp = rdma_cm_id.qp(cmId);
        if (srq.address() == 0) {
            PointerArgs.present(qp.address(), verb, "the id has no QP and no SRQ (rdma_create_qp or rdma_create_ep first)");
        }
        MemorySegment s = SCRATCH.get();
        MemorySegment wr = s.asSlice(RECV_WR, ibv_recv_wr.sizeof());
        ibv_recv_wr.wr_id(wr, context);
        ibv_recv_wr.next(wr, MemorySegment.NULL);
        ibv_recv_wr.sg_list(wr, sgl);
        ibv_recv_wr.num_sge(wr, nsge);
        MemorySegment bad = s.asSlice(BAD, ADDRESS.byteSize());
        return seterrno(srq.address() != 0 ? InlineVerbs.ibv_post_srq_recv(srq, wr, bad)
                                           : InlineVerbs.ibv_post_recv(qp, wr, bad));
    }

    /**
     * {@code rdma_post_sendv}: posts one Send.
     *
     * @param id {@code struct rdma_cm_id *}
     * @param context the work request id
     * @param sgl {@code struct ibv_sge[nsge]}
     * @param nsge entries
     * @param flags {@code IBV_SEND_*}
     * @return 0, or -1 with {@link Native#lastErrno()} set
     */
    public static int rdma_post_sendv(MemorySegment id, long context, MemorySegment sgl, int nsge, int flags) {
        PointerArgs.handle(id, "rdma_post_sendv", "id");
        sgList(sgl, nsge, "rdma_post_sendv");
        return postSend("rdma_post_sendv", id, context, sgl, nsge, verbs_h.IBV_WR_SEND, flags, 0, 0);
    }

    /**
     * {@code rdma_post_readv}: posts one RDMA Read.
     *
     * @param id {@code struct rdma_cm_id *}
     * @param context the work request id
     * @param sgl {@code struct ibv_sge[nsge]}
     * @param nsge entries
     * @param flags {@code IBV_SEND_*}
     * @param remoteAddr remote address
     * @param rkey remote key
     * @return 0, or -1 with {@link Native#lastErrno()} set
     */
    public static int rdma_post_readv(MemorySegment id, long context, MemorySegment sgl, int nsge, int flags,
                                      long remoteAddr, int rkey) {
        PointerArgs.handle(id, "rdma_post_readv", "id");
        sgList(sgl, nsge, "rdma_post_readv");
        return postSend("rdma_post_readv", id, context, sgl, nsge, verbs_h.IBV_WR_RDMA_READ, flags, remoteAddr, rkey);
    }

    /**
     * {@code rdma_post_writev}: posts one RDMA Write.
     *
     * @param id {@code struct rdma_cm_id *}
     * @param context the work request id
     * @param sgl {@code struct ibv_sge[nsge]}
     * @param nsge entries
     * @param flags {@code IBV_SEND_*}
     * @param remoteAddr remote address
     * @param rkey remote key
     * @return 0, or -1 with {@link Native#lastErrno()} set
     */
    public static int rdma_post_writev(MemorySegment id, long context, MemorySegment sgl, int nsge, int flags,
                                       long remoteAddr, int rkey) {
        PointerArgs.handle(id, "rdma_post_writev", "id");
        sgList(sgl, nsge, "rdma_post_writev");
        return postSend("rdma_post_writev", id, context, sgl, nsge, verbs_h.IBV_WR_RDMA_WRITE, flags, remoteAddr, rkey);
    }

    // ---- single-buffer posts ----

    /**
     * {@code rdma_post_recv}: posts one receive into {@code [addr, addr + length)}, which must lie
     * inside {@code mr} (C asserts it; here it is an {@link IllegalArgumentException}).
     *
     * @param id {@code struct rdma_cm_id *}
     * @param context the work request id
     * @param addr the buffer, at least {@code length} bytes
     * @param length bytes
     * @param mr {@code struct ibv_mr *} covering it, not NULL
     * @return 0, or -1 with {@link Native#lastErrno()} set
     * @throws IllegalArgumentException a NULL {@code mr}, a heap or too short {@code addr}, or a buffer outside the MR
     */
    public static int rdma_post_recv(MemorySegment id, long context, MemorySegment addr, long length, MemorySegment mr) {
        String verb = "rdma_post_recv";
        PointerArgs.handle(id, verb, "id");
        MemorySegment sge = sge(verb, addr, length, mr, true, 0);
        MemorySegment m = mrFields(mr);
        long start = ibv_mr.addr(m).address();
        if (addr.address() < start || addr.address() + length > start + ibv_mr.length(m)) {
            throw new IllegalArgumentException(verb + ": buffer outside the memory region");
        }
        return postRecv(verb, id, context, sge, 1);
    }

    /**
     * {@code rdma_post_send}: posts one Send of {@code [addr, addr + length)}.
     *
     * @param id {@code struct rdma_cm_id *}
     * @param context the work request id
     * @param addr the data, at least {@code length} bytes
     * @param length bytes
     * @param mr {@code struct ibv_mr *}, or NULL with {@code IBV_SEND_INLINE}
     * @param flags {@code IBV_SEND_*}
     * @return 0, or -1 with {@link Native#lastErrno()} set
     * @throws IllegalArgumentException a heap or too short {@code addr}, or a NULL {@code mr} without {@code IBV_SEND_INLINE}
     */
    public static int rdma_post_send(MemorySegment id, long context, MemorySegment addr, long length, MemorySegment mr,
                                     int flags) {
        String verb = "rdma_post_send";
        PointerArgs.handle(id, verb, "id");
        return postSend(verb, id, context, sge(verb, addr, length, mr, false, flags), 1, verbs_h.IBV_WR_SEND, flags, 0, 0);
    }

    /**
     * {@code rdma_post_read}: RDMA Read into {@code [addr, addr + length)}.
     *
     * @param id {@code struct rdma_cm_id *}
     * @param context the work request id
     * @param addr local buffer, at least {@code length} bytes
     * @param length bytes
     * @param mr {@code struct ibv_mr *}, not NULL
     * @param flags {@code IBV_SEND_*}
     * @param remoteAddr remote address
     * @param rkey remote key
     * @return 0, or -1 with {@link Native#lastErrno()} set
     * @throws IllegalArgumentException a NULL {@code mr}, or a heap or too short {@code addr}
     */
    public static int rdma_post_read(MemorySegment id, long context, MemorySegment addr, long length, MemorySegment mr,
                                     int flags, long remoteAddr, int rkey) {
        String verb = "rdma_post_read";
        PointerArgs.handle(id, verb, "id");
        return postSend(verb, id, context, sge(verb, addr, length, mr, true, flags), 1, verbs_h.IBV_WR_RDMA_READ, flags,
                remoteAddr, rkey);
    }

    /**
     * {@code rdma_post_write}: RDMA Write of {@code [addr, addr + length)}.
     *
     * @param id {@code struct rdma_cm_id *}
     * @param context the work request id
     * @param addr local data, at least {@code length} bytes
     * @param length bytes
     * @param mr {@code struct ibv_mr *}, or NULL with {@code IBV_SEND_INLINE}
     * @param flags {@code IBV_SEND_*}
     * @param remoteAddr remote address
     * @param rkey remote key
     * @return 0, or -1 with {@link Native#lastErrno()} set
     * @throws IllegalArgumentException a heap or too short {@code addr}, or a NULL {@code mr} without {@code IBV_SEND_INLINE}
     */
    public static int rdma_post_write(MemorySegment id, long context, MemorySegment addr, long length, MemorySegment mr,
                                      int flags, long remoteAddr, int rkey) {
        String verb = "rdma_post_write";
        PointerArgs.handle(id, verb, "id");
        return postSend(verb, id, context, sge(verb, addr, length, mr, false, flags), 1, verbs_h.IBV_WR_RDMA_WRITE, flags,
                remoteAddr, rkey);
    }

    /**
     * {@code rdma_post_ud_send}: a UD Send to {@code (ah, remoteQpn)} with the rdma_cm Q_Key.
     *
     * @param id {@code struct rdma_cm_id *}
     * @param context the work request id
     * @param addr the data, at least {@code length} bytes
     * @param length bytes
     * @param mr {@code struct ibv_mr *}, or NULL with {@code IBV_SEND_INLINE}
     * @param flags {@code IBV_SEND_*}
     * @param ah {@code struct ibv_ah *}, not NULL
     * @param remoteQpn the destination QP number
     * @return 0, or -1 with {@link Native#lastErrno()} set
     * @throws IllegalArgumentException a heap or too short {@code addr}, a NULL {@code ah}, or a NULL {@code mr} without
     *                                  {@code IBV_SEND_INLINE}
     */
    public static int rdma_post_ud_send(MemorySegment id, long context, MemorySegment addr, long length, MemorySegment mr,
                                        int flags, MemorySegment ah, int remoteQpn) {
        String verb = "rdma_post_ud_send";
        PointerArgs.handle(id, verb, "id");
        MemorySegment sge = sge(verb, addr, length, mr, false, flags);
        PointerArgs.handle(ah, verb, "ah");
        MemorySegment qp = qp(verb, id);
        MemorySegment s = SCRATCH.get();
        MemorySegment wr = sendWr(s, context, sge, 1, verbs_h.IBV_WR_SEND, flags);
        wr.set(ADDRESS, WR_UD + ibv_send_wr.wr.ud.ah$OFFSET, ah);
        ibv_send_wr.wr.ud.remote_qpn(wr.asSlice(WR_UD), remoteQpn);
        ibv_send_wr.wr.ud.remote_qkey(wr.asSlice(WR_UD), rdma_cma_h.RDMA_UDP_QKEY);
        return seterrno(InlineVerbs.ibv_post_send(qp, wr, s.asSlice(BAD, ADDRESS.byteSize())));
    }

    // ---- completions ----

    /**
     * {@code rdma_get_send_comp}: polls the id's send CQ, sleeping on its completion channel until
     * a completion arrives. Blocks without bound, as in C; the channel must be in blocking mode.
     *
     * @param id {@code struct rdma_cm_id *} created with its own CQs ({@code rdma_create_ep}/{@code rdma_create_qp} with NULL CQs)
     * @param wc {@code struct ibv_wc *} to fill, at least {@code sizeof(struct ibv_wc)}
     * @return the number of completions (1), or -1 with {@link Native#lastErrno()} set
     * @throws IllegalArgumentException a NULL or too small {@code wc}, or an id without a send CQ and its channel
     */
    public static int rdma_get_send_comp(MemorySegment id, MemorySegment wc) {
        String verb = "rdma_get_send_comp";
        MemorySegment cmId = cmId(id, verb);
        return getComp(verb, rdma_cm_id.send_cq(cmId), rdma_cm_id.send_cq_channel(cmId), wc, "send");
    }

    /**
     * {@code rdma_get_recv_comp}: as {@link #rdma_get_send_comp} for the receive CQ.
     *
     * @param id {@code struct rdma_cm_id *}
     * @param wc {@code struct ibv_wc *} to fill, at least {@code sizeof(struct ibv_wc)}
     * @return the number of completions (1), or -1 with {@link Native#lastErrno()} set
     * @throws IllegalArgumentException a NULL or too small {@code wc}, or an id without a receive CQ and its channel
     */
    public static int rdma_get_recv_comp(MemorySegment id, MemorySegment wc) {
        String verb = "rdma_get_recv_comp";
        MemorySegment cmId = cmId(id, verb);
        return getComp(verb, rdma_cm_id.recv_cq(cmId), rdma_cm_id.recv_cq_channel(cmId), wc, "recv");
    }

    private static int getComp(String verb, MemorySegment cq, MemorySegment channel, MemorySegment wc, String queue) {
        PointerArgs.struct(wc, ibv_wc.sizeof(), "struct ibv_wc", verb, "wc");
        PointerArgs.present(cq.address(), verb, "the id has no " + queue + "_cq (rdma_create_qp or rdma_create_ep with"
                + " NULL CQs makes them)");
        PointerArgs.present(channel.address(), verb, "the id has no " + queue + "_cq_channel (its CQ was not made by"
                + " rdma_create_qp or rdma_create_ep)");
        MemorySegment s = SCRATCH.get();
        int ret;
        while (true) {
            ret = InlineVerbs.ibv_poll_cq(cq, 1, wc);
            if (ret != 0) {
                break;
            }
            ret = InlineVerbs.ibv_req_notify_cq(cq, 0);
            if (ret != 0) {
                return seterrno(ret);
            }
            ret = InlineVerbs.ibv_poll_cq(cq, 1, wc);
            if (ret != 0) {
                break;
            }
            ret = verbs_h.ibv_get_cq_event(channel, s.asSlice(EVENT_CQ, ADDRESS.byteSize()),
                    s.asSlice(EVENT_CONTEXT, ADDRESS.byteSize()));
            if (ret != 0) {
                return ret; // -1, errno already captured by the downcall
            }
            verbs_h.ibv_ack_cq_events(cq, 1);
        }
        return ret < 0 ? seterrno(ret) : ret;
    }

    // ---- helpers ----

    private static int postSend(String verb, MemorySegment id, long context, MemorySegment sgl, int nsge, int opcode,
                                int flags, long remoteAddr, int rkey) {
        MemorySegment qp = qp(verb, id);
        MemorySegment s = SCRATCH.get();
        MemorySegment wr = sendWr(s, context, sgl, nsge, opcode, flags);
        ibv_send_wr.wr.rdma.remote_addr(wr.asSlice(WR_RDMA), remoteAddr);
        ibv_send_wr.wr.rdma.rkey(wr.asSlice(WR_RDMA), rkey);
        return seterrno(InlineVerbs.ibv_post_send(qp, wr, s.asSlice(BAD, ADDRESS.byteSize())));
    }

    private static MemorySegment sendWr(MemorySegment s, long context, MemorySegment sgl, int nsge, int opcode, int flags) {
        MemorySegment wr = s.asSlice(SEND_WR, ibv_send_wr.sizeof());
        wr.fill((byte) 0);
        ibv_send_wr.wr_id(wr, context);
        ibv_send_wr.sg_list(wr, sgl);
        ibv_send_wr.num_sge(wr, nsge);
        ibv_send_wr.opcode(wr, opcode);
        ibv_send_wr.send_flags(wr, flags);
        return wr;
    }

    /**
     * The thread's scratch SGE for {@code [addr, addr + length)} with the MR's lkey, after checking
     * the buffer and the MR (NULL only when not required and the flags say inline: then lkey 0).
     */
    private static MemorySegment sge(String verb, MemorySegment addr, long length, MemorySegment mr, boolean mrRequired,
                                     int flags) {
        long address = PointerArgs.sgeBytes(addr, length, verb, "addr", "length");
        long m = PointerArgs.optionalHandle(mr, verb, "mr");
        if (m == 0 && (mrRequired || (flags & verbs_h.IBV_SEND_INLINE) == 0)) {
            throw new IllegalArgumentException(verb + ": mr is NULL" + (mrRequired ? ""
                    : "; only an inline send (IBV_SEND_INLINE) may go without a memory region"));
        }
        MemorySegment sge = SCRATCH.get().asSlice(SGE, ibv_sge.sizeof());
        ibv_sge.addr(sge, address);
        ibv_sge.length(sge, (int) length);
        ibv_sge.lkey(sge, m == 0 ? 0 : ibv_mr.lkey(mrFields(mr)));
        return sge;
    }

    /** Checks a caller's SGE list of {@code nsge} entries (NULL allowed only for none). */
    private static void sgList(MemorySegment sgl, int nsge, String verb) {
        PointerArgs.arrayOrEmpty(sgl, nsge, ibv_sge.sizeof(), "struct ibv_sge", verb, "sgl", "nsge");
    }

    /** The fields of a checked MR handle (C hands it out as a zero-length segment). */
    private static MemorySegment mrFields(MemorySegment mr) {
        return mr.reinterpret(ibv_mr.sizeof());
    }

    /** The fields of the id after checking it as a handle (C hands it out as a zero-length segment). */
    private static MemorySegment cmId(MemorySegment id, String verb) {
        PointerArgs.handle(id, verb, "id");
        return id.reinterpret(rdma_cm_id.sizeof());
    }

    private static MemorySegment qp(String verb, MemorySegment id) {
        MemorySegment qp = rdma_cm_id.qp(cmId(id, verb));
        PointerArgs.present(qp.address(), verb, "the id has no QP (rdma_create_qp or rdma_create_ep first)");
        return qp;
    }

    private static MemorySegment regMr(String verb, MemorySegment id, MemorySegment addr, long length, int access) {
        MemorySegment pd = rdma_cm_id.pd(cmId(id, verb));
        PointerArgs.present(pd.address(), verb, "the id has no PD (it is bound to a device once its address is resolved)");
        PointerArgs.bytes(addr, length, verb, "addr", "length");
        return InlineVerbs.ibv_reg_mr(pd, addr, length, access);
    }
}
