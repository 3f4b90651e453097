package io.jverbs;

import io.jverbs.ibverbs.internal.DataPath;
import io.jverbs.ibverbs.internal.NativeAccess;
import io.jverbs.ibverbs.raw.ibv_context_ops;
import io.jverbs.ibverbs.raw.ibv_recv_wr;
import io.jverbs.ibverbs.raw.ibv_send_wr;
import io.jverbs.ibverbs.raw.ibv_sge;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Filling {@code ibv_send_wr} / {@code ibv_recv_wr} and their one SGE in place, shared by the queue-pair kinds and batches. */
final class WorkRequests {
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    /** All of memory: the queues' own request memory is written by absolute address (no per-access scope checks). */
    private static final MemorySegment ALL = NativeAccess.everything();
    // post_send and post_recv are called through ibverbs-ffm's DataPath, the data path's one
    // binding of the provider's entry points (critical, pinned to the provider's address)

    // A queue pair's scratch memory, laid out from the generated sizes: one send request, its SGE,
    // one receive request, its SGE, the bad-request pointer the provider writes, then the inline
    // payload (16-byte aligned for the copy).
    /** Offset of the scratch send request. */
    static final long SEND_WR = 0;
    /** Offset of its SGE. */
    static final long SEND_SGE = SEND_WR + ibv_send_wr.sizeof();
    /** Offset of the scratch receive request. */
    static final long RECV_WR = SEND_SGE + ibv_sge.sizeof();
    /** Offset of its SGE. */
    static final long RECV_SGE = RECV_WR + ibv_recv_wr.sizeof();
    /** Offset of the pointer the provider sets to a refused request. */
    static final long BAD_WR = RECV_SGE + ibv_sge.sizeof();
    /** Offset of the inline payload. */
    static final long INLINE = (BAD_WR + ValueLayout.ADDRESS.byteSize() + 15) & ~15L;

    private WorkRequests() {
    }

    /**
     * Fills a send request's common part and its SGE in memory the caller keeps alive (checked
     * through {@code m}); the caller fills the opcode's union part.
     *
     * @param m         the memory holding both
     * @param base      the address of {@code m}
     * @param wr        offset of the request in {@code m}
     * @param sge       offset of the SGE in {@code m}
     * @param wrId      the caller's work-request id
     * @param opcode    the {@code IBV_WR_*} opcode
     * @param flags     the {@code IBV_SEND_*} flags
     * @param immediate the immediate data, in host order (stored big-endian)
     * @param data      the address of the payload
     * @param length    the payload's bytes (0: no SGE)
     * @param lkey      the payload's local key
     */
    public static void send(MemorySegment m, long base, long wr, long sge, long wrId, int opcode, int flags, int immediate,
                     long data, int length, int lkey) {
        // every store checked through m: a batch is filled outside its queue pair's lock, and a
        // close on another thread may free m meanwhile (the store then throws, never writes freed memory)
        link(m, wr, base + sge);
        fill(m, wr, sge, wrId, opcode, flags, immediate, data, length, lkey);
    }

    /**
     * Fills a send request's common part and its SGE by address, for a queue's own request memory,
     * which lives until the queue's destroy (and that waits for the post in progress).
     *
     * @param wr        the request's address
     * @param sge       the SGE's address
     * @param wrId      the caller's work-request id
     * @param opcode    the {@code IBV_WR_*} opcode
     * @param flags     the {@code IBV_SEND_*} flags
     * @param immediate the immediate data, in host order (stored big-endian)
     * @param data      the address of the payload
     * @param length    the payload's bytes (0: no SGE)
     * @param lkey      the payload's local key
     */
    public static void send(long wr, long sge, long wrId, int opcode, int flags, int immediate, long data, int length,
                     int lkey) {
        link(wr, sge);
        sendPrelinked(wr, sge, wrId, opcode, flags, immediate, data, length, lkey);
    }

    /**
     * Writes a send request's {@code next} (NULL) and {@code sg_list} (its one SGE): the two fields
     * a queue's private request keeps from post to post, so they are written once.
     *
     * @param wr  the request's address
     * @param sge the SGE's address
     */
    public static void link(long wr, long sge) {
        link(ALL, wr, sge);
    }

    /** {@link #link(long, long)} for the request at offset {@code wr} of {@code m}; {@code sge} is an address. */
    private static void link(MemorySegment m, long wr, long sge) {
        m.set(LONG, wr + ibv_send_wr.next$OFFSET, 0L);
        m.set(LONG, wr + ibv_send_wr.sg_list$OFFSET, sge);
    }

    /**
     * Like {@link #send(long, long, long, int, int, int, long, int, int)} for a request whose
     * {@link #link} was written before (the provider only reads requests, so it stays).
     *
     * @param wr        the request's address
     * @param sge       the SGE's address
     * @param wrId      the caller's work-request id
     * @param opcode    the {@code IBV_WR_*} opcode
     * @param flags     the {@code IBV_SEND_*} flags
     * @param immediate the immediate data, in host order (stored big-endian)
     * @param data      the address of the payload
     * @param length    the payload's bytes (0: no SGE)
     * @param lkey      the payload's local key
     */
    public static void sendPrelinked(long wr, long sge, long wrId, int opcode, int flags, int immediate, long data,
                              int length, int lkey) {
        fill(ALL, wr, sge, wrId, opcode, flags, immediate, data, length, lkey);
    }

    /** The common part and the SGE, at offsets {@code wr} and {@code sge} of {@code m}. */
    private static void fill(MemorySegment m, long wr, long sge, long wrId, int opcode, int flags, int immediate,
                             long data, int length, int lkey) {
        m.set(LONG, wr + ibv_send_wr.wr_id$OFFSET, wrId);
        pair(m, wr + ibv_send_wr.num_sge$OFFSET, length > 0 ? 1 : 0, opcode);
        pair(m, wr + ibv_send_wr.send_flags$OFFSET, flags, Integer.reverseBytes(immediate));
        sge(m, sge, data, length, lkey);
    }

    /**
     * A prepared request's per-post part: its id and its flags (the immediate next to the flags
     * stays 0; prepared requests carry none).
     *
     * @param wr    the request's address
     * @param wrId  the caller's work-request id
     * @param flags the {@code IBV_SEND_*} flags
     */
    public static void idAndFlags(long wr, long wrId, int flags) {
        ALL.set(LONG, wr + ibv_send_wr.wr_id$OFFSET, wrId);
        pair(ALL, wr + ibv_send_wr.send_flags$OFFSET, flags, 0);
    }

    /**
     * Points an SGE at other data (a prepared inline request's copy).
     *
     * @param sge  the SGE's address
     * @param data the data's address
     */
    public static void dataAddress(long sge, long data) {
        ALL.set(LONG, sge + ibv_sge.addr$OFFSET, data);
    }

    /**
     * Two adjacent 32-bit fields in one store (num_sge and opcode, send_flags and imm_data, an
     * SGE's length and lkey: neighbours in every ABI rdma-core supports, checked at class load).
     */
    private static void pair(MemorySegment m, long at, int first, int second) {
        m.set(LONG, at, LITTLE_ENDIAN ? ((long) second << 32) | (first & 0xFFFF_FFFFL)
                                             : ((long) first << 32) | (second & 0xFFFF_FFFFL));
    }

    private static final boolean LITTLE_ENDIAN = java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.LITTLE_ENDIAN;

    static {
        if (ibv_send_wr.opcode$OFFSET != ibv_send_wr.num_sge$OFFSET + 4
                || ibv_send_wr.imm_data$OFFSET != ibv_send_wr.send_flags$OFFSET + 4
                || ibv_sge.lkey$OFFSET != ibv_sge.length$OFFSET + 4) {
            throw new ExceptionInInitializerError("ibv_send_wr / ibv_sge field order differs from verbs.h: regenerate"
                    + " the bindings (scripts/build/gen-bindings)");
        }
    }

    /**
     * Fills a receive request and its SGE.
     *
     * @param m      the memory holding both
     * @param base   the address of {@code m}
     * @param wr     offset of the request in {@code m}
     * @param sge    offset of the SGE in {@code m}
     * @param wrId   the caller's work-request id
     * @param data   the address the message lands at
     * @param length the room there (0: no SGE)
     * @param lkey   its local key
     */
    public static void receive(MemorySegment m, long base, long wr, long sge, long wrId, long data, int length, int lkey) {
        m.set(LONG, wr + ibv_recv_wr.wr_id$OFFSET, wrId); // the one checked access: m is open
        long w = base + wr;
        ALL.set(LONG, w + ibv_recv_wr.next$OFFSET, 0L);
        ALL.set(LONG, w + ibv_recv_wr.sg_list$OFFSET, base + sge);
        ALL.set(INT, w + ibv_recv_wr.num_sge$OFFSET, length > 0 ? 1 : 0);
        sge(ALL, base + sge, data, length, lkey);
    }

    private static void sge(MemorySegment m, long sge, long data, int length, int lkey) {
        m.set(LONG, sge + ibv_sge.addr$OFFSET, data);
        pair(m, sge + ibv_sge.length$OFFSET, length, lkey);
    }

    /**
     * The atomic union part: remote address, rkey, compare (or add) and swap operands.
     *
     * @param wrAddress     the request's address
     * @param remoteAddress the remote 8 bytes' address
     * @param rkey          their remote key
     * @param compareAdd    the compare (or add) operand
     * @param swap          the swap operand
     */
    public static void atomic(long wrAddress, long remoteAddress, int rkey, long compareAdd, long swap) {
        atomic(ALL, wrAddress, remoteAddress, rkey, compareAdd, swap);
    }

    /**
     * The atomic union part of the request at offset {@code wr} of {@code m} (checked: a batch's memory).
     *
     * @param m             the memory holding the request
     * @param wr            the request's offset in {@code m}
     * @param remoteAddress the remote 8 bytes' address
     * @param rkey          their remote key
     * @param compareAdd    the compare (or add) operand
     * @param swap          the swap operand
     */
    public static void atomic(MemorySegment m, long wr, long remoteAddress, int rkey, long compareAdd, long swap) {
        long u = wr + ibv_send_wr.wr$OFFSET;
        m.set(LONG, u + ibv_send_wr.wr.atomic.remote_addr$OFFSET, remoteAddress);
        m.set(LONG, u + ibv_send_wr.wr.atomic.compare_add$OFFSET, compareAdd);
        m.set(LONG, u + ibv_send_wr.wr.atomic.swap$OFFSET, swap);
        m.set(INT, u + ibv_send_wr.wr.atomic.rkey$OFFSET, rkey);
    }

    /**
     * Fills a type-2 window bind: {@code [address, address + length)} of region {@code mr}, with {@code access}.
     *
     * @param wr      the request's address
     * @param wrId    the caller's work-request id
     * @param flags   the {@code IBV_SEND_*} flags
     * @param mw      the window's {@code ibv_mw} address
     * @param rkey    the window's new remote key
     * @param mr      the region's {@code ibv_mr} address
     * @param address the window's start
     * @param length  its bytes
     * @param access  its {@code IBV_ACCESS_*} rights
     */
    public static void bindWindow(long wr, long wrId, int flags, long mw, int rkey, long mr, long address, long length,
                           int access) {
        ALL.set(LONG, wr + ibv_send_wr.wr_id$OFFSET, wrId);
        pair(ALL, wr + ibv_send_wr.num_sge$OFFSET, 0, io.jverbs.ibverbs.raw.verbs_h.IBV_WR_BIND_MW);
        pair(ALL, wr + ibv_send_wr.send_flags$OFFSET, flags, 0);
        long b = wr + ibv_send_wr.bind_mw$OFFSET;
        ALL.set(LONG, b + ibv_send_wr.bind_mw.mw$OFFSET, mw);
        ALL.set(INT, b + ibv_send_wr.bind_mw.rkey$OFFSET, rkey);
        long info = b + ibv_send_wr.bind_mw.bind_info$OFFSET;
        ALL.set(LONG, info + io.jverbs.ibverbs.raw.ibv_mw_bind_info.mr$OFFSET, mr);
        ALL.set(LONG, info + io.jverbs.ibverbs.raw.ibv_mw_bind_info.addr$OFFSET, address);
        ALL.set(LONG, info + io.jverbs.ibverbs.raw.ibv_mw_bind_info.length$OFFSET, length);
        ALL.set(INT, info + io.jverbs.ibverbs.raw.ibv_mw_bind_info.mw_access_flags$OFFSET, access);
    }

    /**
     * Fills a local invalidation of {@code rkey} (host byte order, unlike an immediate).
     *
     * @param wr    the request's address
     * @param wrId  the caller's work-request id
     * @param flags the {@code IBV_SEND_*} flags
     * @param rkey  the key to invalidate
     */
    public static void localInvalidate(long wr, long wrId, int flags, int rkey) {
        ALL.set(LONG, wr + ibv_send_wr.wr_id$OFFSET, wrId);
        pair(ALL, wr + ibv_send_wr.num_sge$OFFSET, 0, io.jverbs.ibverbs.raw.verbs_h.IBV_WR_LOCAL_INV);
        pair(ALL, wr + ibv_send_wr.send_flags$OFFSET, flags, rkey);
    }

    /**
     * The RDMA union part: remote address and rkey.
     *
     * @param wrAddress     the request's address
     * @param remoteAddress the remote data's address
     * @param rkey          its remote key
     */
    public static void rdma(long wrAddress, long remoteAddress, int rkey) {
        rdma(ALL, wrAddress, remoteAddress, rkey);
    }

    /**
     * The RDMA union part of the request at offset {@code wr} of {@code m} (checked: a batch's memory).
     *
     * @param m             the memory holding the request
     * @param wr            the request's offset in {@code m}
     * @param remoteAddress the remote data's address
     * @param rkey          its remote key
     */
    public static void rdma(MemorySegment m, long wr, long remoteAddress, int rkey) {
        long u = wr + ibv_send_wr.wr$OFFSET;
        m.set(LONG, u + ibv_send_wr.wr.rdma.remote_addr$OFFSET, remoteAddress);
        m.set(INT, u + ibv_send_wr.wr.rdma.rkey$OFFSET, rkey);
    }

    /**
     * The remote address of {@code [offset, offset + length)} in {@code remote}, or an exception naming the operation.
     *
     * @param remote the remote buffer
     * @param offset the range's start in it
     * @param length the range's bytes
     * @param what   the operation, for the message
     * @return the range's remote address
     * @throws IndexOutOfBoundsException when the range lies outside {@code remote}
     */
    public static long remoteAddress(RemoteBuffer remote, long offset, int length, String what) {
        if ((offset | length) < 0 || offset > remote.length() - length) {
            throw new IndexOutOfBoundsException(what + ": remote range [" + offset + ", " + offset + " + " + length
                    + ") is outside the remote buffer of " + remote.length() + " bytes");
        }
        return remote.address() + offset;
    }

    /**
     * Calls a provider's post_send.
     *
     * @param fn    the provider's post_send ({@link #postSendOp})
     * @param qp    the {@code ibv_qp}'s address
     * @param wr    the first request's address
     * @param badWr where the provider stores the request it stopped at
     * @return its errno (0: posted)
     */
    public static int post(MemorySegment fn, long qp, long wr, long badWr) {
        return DataPath.postSend(fn, qp, wr, badWr);
    }

    /**
     * Calls a provider's post_recv.
     *
     * @param fn    the provider's post_recv ({@link #postRecvOp})
     * @param qp    the {@code ibv_qp}'s address
     * @param wr    the first request's address
     * @param badWr where the provider stores the request it stopped at
     * @return its errno (0: posted)
     */
    public static int postReceive(MemorySegment fn, long qp, long wr, long badWr) {
        return DataPath.postRecv(fn, qp, wr, badWr);
    }

    /**
     * The provider's post_send, resolved once per queue and bound as the constant address of {@link #post}.
     *
     * @param context the {@code ibv_context}
     * @return the entry point
     */
    public static MemorySegment postSendOp(MemorySegment context) {
        MemorySegment fn = DataPath.providerOp(context, ibv_context_ops.post_send$OFFSET, "ibv_post_send");
        DataPath.pinPostSend(fn);
        return fn;
    }

    /**
     * The provider's post_recv, resolved once per queue and bound as the constant address of {@link #postReceive}.
     *
     * @param context the {@code ibv_context}
     * @return the entry point
     */
    public static MemorySegment postRecvOp(MemorySegment context) {
        MemorySegment fn = DataPath.providerOp(context, ibv_context_ops.post_recv$OFFSET, "ibv_post_recv");
        DataPath.pinPostRecv(fn);
        return fn;
    }


    /**
     * Writes one receive of {@code local}'s range into a queue pair's scratch receive request and
     * posts it: the provider's {@code post_recv} return code.
     */
    static int postScratchReceive(MemorySegment scratch, MemorySegment postRecvFn, long qpAddress, long wrId,
                                  RegisteredBuffer local, long localOffset, int length) {
        long base = scratch.address();
        receive(scratch, base, RECV_WR, RECV_SGE, wrId, local.address() + localOffset, length, local.lkey());
        return postReceive(postRecvFn, qpAddress, base + RECV_WR, base + BAD_WR);
    }
}
