package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.raw.ibv_recv_wr;
import io.jverbs.ibverbs.raw.ibv_send_wr;
import io.jverbs.ibverbs.raw.ibv_sge;
import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

import static java.lang.foreign.ValueLayout.ADDRESS;

/**
 * Builds {@code ibv_send_wr} / {@code ibv_recv_wr} with one scatter/gather entry in a scratch
 * arena and posts them through {@link InlineVerbs}. The provider copies a posted request, so the
 * arena may close right after the post; the buffers must stay registered until completion.
 */
public final class WorkRequests {
    private WorkRequests() {
    }

    /**
     * A signaled send work request over {@code length} bytes of {@code local} from {@code offset}
     * ({@code length == 0}: no SGE).
     */
    public static MemorySegment send(Arena arena, long wrId, int opcode, Mr local, long offset, int length) {
        MemorySegment wr = arena.allocate(ibv_send_wr.LAYOUT);
        ibv_send_wr.wr_id(wr, wrId);
        ibv_send_wr.next(wr, MemorySegment.NULL);
        ibv_send_wr.opcode(wr, opcode);
        ibv_send_wr.send_flags(wr, verbs_h.IBV_SEND_SIGNALED);
        ibv_send_wr.sg_list(wr, sge(arena, local, offset, length));
        ibv_send_wr.num_sge(wr, length == 0 ? 0 : 1);
        return wr;
    }

    /** Sets {@code wr.rdma}: the remote address and rkey of an RDMA write or read. */
    public static MemorySegment rdma(MemorySegment wr, long remoteAddr, int rkey) {
        MemorySegment rdma = ibv_send_wr.wr.rdma(ibv_send_wr.wr(wr));
        ibv_send_wr.wr.rdma.remote_addr(rdma, remoteAddr);
        ibv_send_wr.wr.rdma.rkey(rdma, rkey);
        return wr;
    }

    /** Sets {@code wr.atomic}: remote 8-byte word, compare (or add) and swap operands. */
    public static MemorySegment atomic(MemorySegment wr, long remoteAddr, int rkey, long compareAdd, long swap) {
        MemorySegment atomic = ibv_send_wr.wr.atomic(ibv_send_wr.wr(wr));
        ibv_send_wr.wr.atomic.remote_addr(atomic, remoteAddr);
        ibv_send_wr.wr.atomic.rkey(atomic, rkey);
        ibv_send_wr.wr.atomic.compare_add(atomic, compareAdd);
        ibv_send_wr.wr.atomic.swap(atomic, swap);
        return wr;
    }

    /** Sets {@code wr.ud}: address handle, remote QPN and Q_Key of a UD send. */
    public static MemorySegment ud(MemorySegment wr, MemorySegment ah, int remoteQpn, int remoteQkey) {
        MemorySegment ud = ibv_send_wr.wr.ud(ibv_send_wr.wr(wr));
        ibv_send_wr.wr.ud.ah(ud, ah);
        ibv_send_wr.wr.ud.remote_qpn(ud, remoteQpn);
        ibv_send_wr.wr.ud.remote_qkey(ud, remoteQkey);
        return wr;
    }

    /** Sets {@code imm_data} to {@code value} in network byte order, as verbs.h requires ({@code htonl}). */
    public static MemorySegment immData(MemorySegment wr, int value) {
        ibv_send_wr.imm_data(wr, htonl(value));
        return wr;
    }

    /** @return {@code value} in network byte order, as a host int */
    public static int htonl(int value) {
        return ByteOrder.nativeOrder() == ByteOrder.BIG_ENDIAN ? value : Integer.reverseBytes(value);
    }

    /** Posts one send work request; throws naming ibv_post_send and the errno when refused. */
    public static void postSend(MemorySegment qp, MemorySegment wr) {
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment bad = scratch.allocate(ADDRESS);
            Checks.ok("ibv_post_send", InlineVerbs.ibv_post_send(qp, wr, bad));
        }
    }

    /** Posts one receive of up to {@code length} bytes into {@code local} at {@code offset} ({@code length == 0}: no SGE). */
    public static void postRecv(MemorySegment qp, long wrId, Mr local, long offset, int length) {
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment wr = scratch.allocate(ibv_recv_wr.LAYOUT);
            ibv_recv_wr.wr_id(wr, wrId);
            ibv_recv_wr.next(wr, MemorySegment.NULL);
            ibv_recv_wr.sg_list(wr, sge(scratch, local, offset, length));
            ibv_recv_wr.num_sge(wr, length == 0 ? 0 : 1);
            MemorySegment bad = scratch.allocate(ADDRESS);
            Checks.ok("ibv_post_recv", InlineVerbs.ibv_post_recv(qp, wr, bad));
        }
    }

    /** @return one {@code ibv_sge} over {@code [offset, offset + length)} of {@code local}, or NULL for length 0 */
    private static MemorySegment sge(Arena arena, Mr local, long offset, int length) {
        if (length == 0) {
            return MemorySegment.NULL;
        }
        MemorySegment sge = arena.allocate(ibv_sge.LAYOUT);
        ibv_sge.addr(sge, local.address(offset));
        ibv_sge.length(sge, length);
        ibv_sge.lkey(sge, local.lkey());
        return sge;
    }
}
