package io.jverbs.ibverbs;

import io.jverbs.ibverbs.raw.ibv_context;
import io.jverbs.ibverbs.raw.ibv_context_ops;
import io.jverbs.ibverbs.raw.ibv_cq;
import io.jverbs.ibverbs.raw.ibv_cq_ex;
import io.jverbs.ibverbs.raw.ibv_device_attr_ex;
import io.jverbs.ibverbs.raw.ibv_port_attr;
import io.jverbs.ibverbs.raw.ibv_qp;
import io.jverbs.ibverbs.raw.ibv_qp_ex;
import io.jverbs.ibverbs.raw.ibv_qp_init_attr_ex;
import io.jverbs.ibverbs.raw.ibv_query_device_ex_input;
import io.jverbs.ibverbs.raw.ibv_srq;
import io.jverbs.ibverbs.raw.verbs_context;
import io.jverbs.ibverbs.raw.verbs_h;
import io.jverbs.ibverbs.internal.NativeAccess;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * The verbs that {@code infiniband/verbs.h} defines {@code static inline} (or as macros), which no
 * library exports: each does exactly what the header does — read the provider's function
 * pointer from {@code context->ops}, from the {@code verbs_context} in front of the
 * {@code ibv_context}, or from an {@code ibv_qp_ex} / {@code ibv_cq_ex} — and calls it.
 *
 * <p>Method names and arguments are the C ones; return values are the C return values (an errno
 * for the {@code int} verbs, as in C), except that where the header would dereference a NULL
 * function pointer or return NULL with {@code errno = EOPNOTSUPP}, these methods throw
 * {@link UnsupportedVerbException} instead, so an absent provider op never crashes the JVM.
 *
 * <p>Post, poll, notify, {@code ibv_wr_*} and the {@code ibv_cq_ex} poll/read calls are
 * <em>critical</em> downcalls ({@code Linker.Option.critical(false)}): short, never blocking,
 * never calling back into Java, and allocating nothing. The others are ordinary downcalls.
 *
 * <p>All arguments are native pointers ({@code MemorySegment}s whose address is used; their
 * size is not checked; a heap segment or a segment of a closed arena is refused with an
 * exception). They must point to live objects of the given type: the caller (normally
 * jverbs-highlevel) guarantees that the queue pair, CQ or context was not destroyed, and that
 * work requests, scatter/gather lists and buffers stay valid for the duration of the call (and,
 * for posted buffers, until their completion). Thread-safety is that of the provider: libibverbs
 * providers make post and poll safe to call from several threads on different queues; one queue
 * must not be used by two threads at once unless the provider says so.
 */
public final class InlineVerbs {
    /** Reads native memory by absolute address without making a new segment for each read. */
    private static final MemorySegment ALL = NativeAccess.everything();
    /** A pointer-sized word; the verbs structs keep their pointers aligned, so no alignment check is needed. */
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED;

    private static final long QP_CONTEXT = ibv_qp.context$OFFSET;
    private static final long CQ_CONTEXT = ibv_cq.context$OFFSET;
    private static final long SRQ_CONTEXT = ibv_srq.context$OFFSET;
    private static final long OPS = ibv_context.ops$OFFSET;
    private static final long ABI_COMPAT = ibv_context.abi_compat$OFFSET;
    /** From the start of {@code ibv_context} back to the start of its {@code verbs_context}. */
    private static final long VCTX_BACK = verbs_context.context$OFFSET;
    private static final long VCTX_SIZE = verbs_context.sizeof();
    /** {@code __VERBS_ABI_IS_EXTENDED}: {@code (void *) UINTPTR_MAX}. */
    private static final long ABI_IS_EXTENDED = -1L;

    // One address-less handle per C signature; the function address is the first argument.
    // Post and poll pass their pointers as 64-bit words (the same registers in the C ABI): that
    // skips the per-argument segment checks of the linker, which cost more than the call itself;
    // pointer() makes the checks that matter (native, alive) once, in Java.
    private static final MethodHandle INT_WWW = critical(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle INT_WIW = critical(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_LONG));
    private static final MethodHandle INT_PI = critical(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle INT_PP = critical(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle INT_P = critical(FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle BYTE_P = critical(FunctionDescriptor.of(JAVA_BYTE, ADDRESS));
    private static final MethodHandle SHORT_P = critical(FunctionDescriptor.of(JAVA_SHORT, ADDRESS));
    private static final MethodHandle LONG_P = critical(FunctionDescriptor.of(JAVA_LONG, ADDRESS));
    private static final MethodHandle VOID_P = critical(FunctionDescriptor.ofVoid(ADDRESS));
    private static final MethodHandle VOID_PI = critical(FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT));
    private static final MethodHandle VOID_PP = critical(FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
    private static final MethodHandle VOID_PIL = critical(FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG));
    private static final MethodHandle VOID_PILI = critical(FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle VOID_PILL = critical(FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle VOID_PILLL = critical(FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle VOID_PILP = critical(FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, ADDRESS));
    private static final MethodHandle VOID_PPIP = critical(FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_INT, ADDRESS));
    private static final MethodHandle VOID_PPII = critical(FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_INT, JAVA_INT));
    private static final MethodHandle VOID_PPSS = critical(FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_SHORT, JAVA_SHORT));
    private static final MethodHandle VOID_PPL = critical(FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_LONG));
    private static final MethodHandle VOID_PLP = critical(FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
    // Slow-path signatures: ordinary downcalls (they may sleep in the kernel).
    private static final MethodHandle SLOW_INT_PBPL = NativeAccess.pointerDowncall(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS, JAVA_LONG), false);
    private static final MethodHandle SLOW_INT_PPPL = NativeAccess.pointerDowncall(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG), false);
    private static final MethodHandle SLOW_PTR_PP_ERRNO = NativeAccess.pointerDowncallCapturingErrno(
            FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));

    private InlineVerbs() {
    }

    private static MethodHandle critical(FunctionDescriptor descriptor) {
        return NativeAccess.pointerDowncall(descriptor, true);
    }

    // ---- the ibv_context_ops data path ----

    /**
     * {@code ibv_post_send}: posts a linked list of send work requests.
     *
     * @param qp    {@code struct ibv_qp *}
     * @param wr    {@code struct ibv_send_wr *}, the first request of the list
     * @param badWr {@code struct ibv_send_wr **} that receives the first request not posted on failure
     * @return 0, or the errno reported by the provider
     */
    public static int ibv_post_send(MemorySegment qp, MemorySegment wr, MemorySegment badWr) {
        long fn = contextOp(qp, QP_CONTEXT, ibv_context_ops.post_send$OFFSET, "ibv_post_send");
        try {
            return (int) INT_WWW.invokeExact(MemorySegment.ofAddress(fn), qp.address(), pointer(wr), pointer(badWr));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_post_recv}: posts a linked list of receive work requests.
     *
     * @param qp    {@code struct ibv_qp *}
     * @param wr    {@code struct ibv_recv_wr *}
     * @param badWr {@code struct ibv_recv_wr **} that receives the first request not posted on failure
     * @return 0, or the errno reported by the provider
     */
    public static int ibv_post_recv(MemorySegment qp, MemorySegment wr, MemorySegment badWr) {
        long fn = contextOp(qp, QP_CONTEXT, ibv_context_ops.post_recv$OFFSET, "ibv_post_recv");
        try {
            return (int) INT_WWW.invokeExact(MemorySegment.ofAddress(fn), qp.address(), pointer(wr), pointer(badWr));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_post_srq_recv}: posts receive work requests to a shared receive queue.
     *
     * @param srq   {@code struct ibv_srq *}
     * @param wr    {@code struct ibv_recv_wr *}
     * @param badWr {@code struct ibv_recv_wr **}
     * @return 0, or the errno reported by the provider
     */
    public static int ibv_post_srq_recv(MemorySegment srq, MemorySegment wr, MemorySegment badWr) {
        long fn = contextOp(srq, SRQ_CONTEXT, ibv_context_ops.post_srq_recv$OFFSET, "ibv_post_srq_recv");
        try {
            return (int) INT_WWW.invokeExact(MemorySegment.ofAddress(fn), srq.address(), pointer(wr), pointer(badWr));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_poll_cq}: takes up to {@code numEntries} completions into the {@code ibv_wc} array.
     *
     * @param cq         {@code struct ibv_cq *}
     * @param numEntries capacity of {@code wc}, in entries
     * @param wc         {@code struct ibv_wc[numEntries]}
     * @return the number of completions taken (0 when the CQ is empty), or a negative value on error
     */
    public static int ibv_poll_cq(MemorySegment cq, int numEntries, MemorySegment wc) {
        long fn = contextOp(cq, CQ_CONTEXT, ibv_context_ops.poll_cq$OFFSET, "ibv_poll_cq");
        try {
            return (int) INT_WIW.invokeExact(MemorySegment.ofAddress(fn), cq.address(), numEntries, pointer(wc));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_req_notify_cq}: arms the CQ so that its next completion raises an event on its
     * completion channel.
     *
     * @param cq            {@code struct ibv_cq *}
     * @param solicitedOnly non-zero to be notified only of solicited completions
     * @return 0, or the errno reported by the provider
     */
    public static int ibv_req_notify_cq(MemorySegment cq, int solicitedOnly) {
        long fn = contextOp(cq, CQ_CONTEXT, ibv_context_ops.req_notify_cq$OFFSET, "ibv_req_notify_cq");
        try {
            return (int) INT_PI.invokeExact(MemorySegment.ofAddress(fn), cq, solicitedOnly);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- verbs_context and macros ----

    /**
     * {@code ibv_query_port}: through {@code verbs_context->query_port} with today's
     * {@code sizeof(struct ibv_port_attr)} when the provider has it; otherwise the header's
     * fallback (zero the struct, call the exported compat {@code ibv_query_port}).
     *
     * @param context  {@code struct ibv_context *}
     * @param portNum  the port, from 1
     * @param portAttr {@code struct ibv_port_attr *}, at least {@code ibv_port_attr.sizeof()} bytes
     * @return 0, or an errno
     */
    public static int ibv_query_port(MemorySegment context, int portNum, MemorySegment portAttr) {
        long vctx = verbsContextOp(context, verbs_context.query_port$OFFSET);
        if (vctx == 0) {
            portAttr.reinterpret(ibv_port_attr.sizeof()).fill((byte) 0);
            return verbs_h.ibv_query_port(context, (byte) portNum, portAttr);
        }
        try {
            return (int) SLOW_INT_PBPL.invokeExact(op(vctx, verbs_context.query_port$OFFSET), context, (byte) portNum,
                    portAttr, ibv_port_attr.sizeof());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_reg_mr} (a macro): registers {@code [addr, addr + length)} with its own address as
     * the I/O virtual address, through the exported {@code ibv_reg_mr_iova2}.
     *
     * @param pd     {@code struct ibv_pd *}
     * @param addr   the start of the memory; it must stay allocated until the MR is deregistered
     * @param length bytes
     * @param access {@code IBV_ACCESS_*} flags
     * @return {@code struct ibv_mr *}, or NULL with {@link Native#lastErrno()} set
     */
    public static MemorySegment ibv_reg_mr(MemorySegment pd, MemorySegment addr, long length, int access) {
        return verbs_h.ibv_reg_mr_iova2(pd, addr, length, addr.address(), access);
    }

    /**
     * {@code ibv_create_cq_ex}: through {@code verbs_context->create_cq_ex}.
     *
     * @param context {@code struct ibv_context *}
     * @param cqAttr  {@code struct ibv_cq_init_attr_ex *}
     * @return {@code struct ibv_cq_ex *}, or NULL with {@link Native#lastErrno()} set
     * @throws UnsupportedVerbException when the provider has no {@code create_cq_ex}
     */
    public static MemorySegment ibv_create_cq_ex(MemorySegment context, MemorySegment cqAttr) {
        long vctx = verbsContextOp(context, verbs_context.create_cq_ex$OFFSET);
        if (vctx == 0) {
            throw new UnsupportedVerbException("ibv_create_cq_ex", "the provider has no create_cq_ex");
        }
        return callPtrPP(op(vctx, verbs_context.create_cq_ex$OFFSET), context, cqAttr);
    }

    /**
     * {@code ibv_create_qp_ex}: {@code ibv_create_qp} when only {@code IBV_QP_INIT_ATTR_PD} is set in
     * {@code comp_mask}, {@code verbs_context->create_qp_ex} otherwise.
     *
     * @param context      {@code struct ibv_context *}
     * @param qpInitAttrEx {@code struct ibv_qp_init_attr_ex *}
     * @return {@code struct ibv_qp *}, or NULL with {@link Native#lastErrno()} set
     * @throws UnsupportedVerbException when extended attributes are asked for and the provider has no {@code create_qp_ex}
     */
    public static MemorySegment ibv_create_qp_ex(MemorySegment context, MemorySegment qpInitAttrEx) {
        MemorySegment attr = qpInitAttrEx.reinterpret(ibv_qp_init_attr_ex.sizeof());
        if (ibv_qp_init_attr_ex.comp_mask(attr) == verbs_h.IBV_QP_INIT_ATTR_PD) {
            return verbs_h.ibv_create_qp(ibv_qp_init_attr_ex.pd(attr), qpInitAttrEx);
        }
        long vctx = verbsContextOp(context, verbs_context.create_qp_ex$OFFSET);
        if (vctx == 0) {
            throw new UnsupportedVerbException("ibv_create_qp_ex", "the provider has no create_qp_ex");
        }
        return callPtrPP(op(vctx, verbs_context.create_qp_ex$OFFSET), context, qpInitAttrEx);
    }

    /**
     * {@code ibv_query_device_ex}: through {@code verbs_context->query_device_ex}; when the provider
     * lacks it or answers EOPNOTSUPP/ENOSYS, zeroes {@code attr} and fills {@code attr->orig_attr}
     * with {@code ibv_query_device}, as the header does.
     *
     * @param context {@code struct ibv_context *}
     * @param input   {@code struct ibv_query_device_ex_input *} or NULL; a non-zero {@code comp_mask} gives EINVAL
     * @param attr    {@code struct ibv_device_attr_ex *}, at least {@code ibv_device_attr_ex.sizeof()} bytes
     * @return 0, or an errno
     */
    public static int ibv_query_device_ex(MemorySegment context, MemorySegment input, MemorySegment attr) {
        if (input.address() != 0
                && ibv_query_device_ex_input.comp_mask(input.reinterpret(ibv_query_device_ex_input.sizeof())) != 0) {
            return Errno.EINVAL;
        }
        long vctx = verbsContextOp(context, verbs_context.query_device_ex$OFFSET);
        if (vctx != 0) {
            int ret;
            try {
                ret = (int) SLOW_INT_PPPL.invokeExact(op(vctx, verbs_context.query_device_ex$OFFSET), context, input, attr,
                        ibv_device_attr_ex.sizeof());
            } catch (Throwable t) {
                throw rethrow(t);
            }
            if (ret != Errno.EOPNOTSUPP && ret != Errno.ENOSYS) {
                return ret;
            }
        }
        MemorySegment full = attr.reinterpret(ibv_device_attr_ex.sizeof());
        full.fill((byte) 0);
        return verbs_h.ibv_query_device(context, full.asSlice(ibv_device_attr_ex.orig_attr$OFFSET));
    }

    /**
     * {@code ibv_qp_to_qp_ex} (exported; here for completeness beside the {@code ibv_wr_*} calls).
     *
     * @param qp {@code struct ibv_qp *} created with {@code IBV_QP_INIT_ATTR_SEND_OPS_FLAGS}
     * @return {@code struct ibv_qp_ex *}, or NULL when the QP was not created for the new post API
     */
    public static MemorySegment ibv_qp_to_qp_ex(MemorySegment qp) {
        return verbs_h.ibv_qp_to_qp_ex(qp);
    }

    // ---- ibv_qp_ex: the work-request builder API ----

    /**
     * {@code ibv_wr_start}.
     * @param qpx {@code struct ibv_qp_ex *}
     */
    public static void ibv_wr_start(MemorySegment qpx) {
        voidP(slotOf(qpx, ibv_qp_ex.wr_start$OFFSET, "ibv_wr_start"), qpx);
    }

    /**
     * {@code ibv_wr_complete}: posts the work requests built since {@link #ibv_wr_start}.
     *
     * @param qpx {@code struct ibv_qp_ex *}
     * @return 0, or an errno
     */
    public static int ibv_wr_complete(MemorySegment qpx) {
        return intP(slotOf(qpx, ibv_qp_ex.wr_complete$OFFSET, "ibv_wr_complete"), qpx);
    }

    /**
     * {@code ibv_wr_abort}: drops the work requests built since {@link #ibv_wr_start}.
     * @param qpx {@code struct ibv_qp_ex *}
     */
    public static void ibv_wr_abort(MemorySegment qpx) {
        voidP(slotOf(qpx, ibv_qp_ex.wr_abort$OFFSET, "ibv_wr_abort"), qpx);
    }

    /**
     * {@code ibv_wr_rdma_write}.
     *
     * @param qpx {@code struct ibv_qp_ex *}
     * @param rkey remote key
     * @param remoteAddr remote virtual address
     */
    public static void ibv_wr_rdma_write(MemorySegment qpx, int rkey, long remoteAddr) {
        voidPIL(slotOf(qpx, ibv_qp_ex.wr_rdma_write$OFFSET, "ibv_wr_rdma_write"), qpx, rkey, remoteAddr);
    }

    /**
     * {@code ibv_wr_rdma_write_imm}.
     *
     * @param qpx {@code struct ibv_qp_ex *}
     * @param rkey remote key
     * @param remoteAddr remote virtual address
     * @param immData immediate data, already in network byte order
     */
    public static void ibv_wr_rdma_write_imm(MemorySegment qpx, int rkey, long remoteAddr, int immData) {
        try {
            VOID_PILI.invokeExact(slotOf(qpx, ibv_qp_ex.wr_rdma_write_imm$OFFSET, "ibv_wr_rdma_write_imm"), qpx, rkey, remoteAddr, immData);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_rdma_read}.
     *
     * @param qpx {@code struct ibv_qp_ex *}
     * @param rkey remote key
     * @param remoteAddr remote virtual address
     */
    public static void ibv_wr_rdma_read(MemorySegment qpx, int rkey, long remoteAddr) {
        voidPIL(slotOf(qpx, ibv_qp_ex.wr_rdma_read$OFFSET, "ibv_wr_rdma_read"), qpx, rkey, remoteAddr);
    }

    /**
     * {@code ibv_wr_atomic_cmp_swp}.
     *
     * @param qpx {@code struct ibv_qp_ex *}
     * @param rkey remote key
     * @param remoteAddr remote 8-byte aligned address
     * @param compare expected value
     * @param swap new value
     */
    public static void ibv_wr_atomic_cmp_swp(MemorySegment qpx, int rkey, long remoteAddr, long compare, long swap) {
        try {
            VOID_PILLL.invokeExact(slotOf(qpx, ibv_qp_ex.wr_atomic_cmp_swp$OFFSET, "ibv_wr_atomic_cmp_swp"), qpx, rkey, remoteAddr,
                    compare, swap);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_atomic_fetch_add}.
     *
     * @param qpx {@code struct ibv_qp_ex *}
     * @param rkey remote key
     * @param remoteAddr remote 8-byte aligned address
     * @param add the addend
     */
    public static void ibv_wr_atomic_fetch_add(MemorySegment qpx, int rkey, long remoteAddr, long add) {
        try {
            VOID_PILL.invokeExact(slotOf(qpx, ibv_qp_ex.wr_atomic_fetch_add$OFFSET, "ibv_wr_atomic_fetch_add"), qpx, rkey, remoteAddr, add);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_atomic_write}.
     *
     * @param qpx {@code struct ibv_qp_ex *}
     * @param rkey remote key
     * @param remoteAddr remote address
     * @param atomicWr the 8 bytes to write
     */
    public static void ibv_wr_atomic_write(MemorySegment qpx, int rkey, long remoteAddr, MemorySegment atomicWr) {
        try {
            VOID_PILP.invokeExact(slotOf(qpx, ibv_qp_ex.wr_atomic_write$OFFSET, "ibv_wr_atomic_write"), qpx, rkey, remoteAddr, atomicWr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_bind_mw}.
     *
     * @param qpx {@code struct ibv_qp_ex *}
     * @param mw {@code struct ibv_mw *}
     * @param rkey the new rkey
     * @param bindInfo {@code const struct ibv_mw_bind_info *}
     */
    public static void ibv_wr_bind_mw(MemorySegment qpx, MemorySegment mw, int rkey, MemorySegment bindInfo) {
        try {
            VOID_PPIP.invokeExact(slotOf(qpx, ibv_qp_ex.wr_bind_mw$OFFSET, "ibv_wr_bind_mw"), qpx, mw, rkey, bindInfo);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_local_inv}.
     * @param qpx {@code struct ibv_qp_ex *}
     * @param invalidateRkey the rkey to invalidate
     */
    public static void ibv_wr_local_inv(MemorySegment qpx, int invalidateRkey) {
        voidPI(slotOf(qpx, ibv_qp_ex.wr_local_inv$OFFSET, "ibv_wr_local_inv"), qpx, invalidateRkey);
    }

    /**
     * {@code ibv_wr_send}.
     * @param qpx {@code struct ibv_qp_ex *}
     */
    public static void ibv_wr_send(MemorySegment qpx) {
        voidP(slotOf(qpx, ibv_qp_ex.wr_send$OFFSET, "ibv_wr_send"), qpx);
    }

    /**
     * {@code ibv_wr_send_imm}.
     * @param qpx {@code struct ibv_qp_ex *}
     * @param immData immediate data, network byte order
     */
    public static void ibv_wr_send_imm(MemorySegment qpx, int immData) {
        voidPI(slotOf(qpx, ibv_qp_ex.wr_send_imm$OFFSET, "ibv_wr_send_imm"), qpx, immData);
    }

    /**
     * {@code ibv_wr_send_inv}.
     * @param qpx {@code struct ibv_qp_ex *}
     * @param invalidateRkey the remote rkey to invalidate
     */
    public static void ibv_wr_send_inv(MemorySegment qpx, int invalidateRkey) {
        voidPI(slotOf(qpx, ibv_qp_ex.wr_send_inv$OFFSET, "ibv_wr_send_inv"), qpx, invalidateRkey);
    }

    /**
     * {@code ibv_wr_send_tso}.
     *
     * @param qpx {@code struct ibv_qp_ex *}
     * @param hdr the header bytes
     * @param hdrSz header size
     * @param mss maximum segment size
     */
    public static void ibv_wr_send_tso(MemorySegment qpx, MemorySegment hdr, short hdrSz, short mss) {
        try {
            VOID_PPSS.invokeExact(slotOf(qpx, ibv_qp_ex.wr_send_tso$OFFSET, "ibv_wr_send_tso"), qpx, hdr, hdrSz, mss);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_set_ud_addr}.
     *
     * @param qpx {@code struct ibv_qp_ex *}
     * @param ah {@code struct ibv_ah *}
     * @param remoteQpn destination QP number
     * @param remoteQkey destination Q_Key
     */
    public static void ibv_wr_set_ud_addr(MemorySegment qpx, MemorySegment ah, int remoteQpn, int remoteQkey) {
        try {
            VOID_PPII.invokeExact(slotOf(qpx, ibv_qp_ex.wr_set_ud_addr$OFFSET, "ibv_wr_set_ud_addr"), qpx, ah, remoteQpn, remoteQkey);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_set_xrc_srqn}.
     * @param qpx {@code struct ibv_qp_ex *}
     * @param remoteSrqn the remote XRC SRQ number
     */
    public static void ibv_wr_set_xrc_srqn(MemorySegment qpx, int remoteSrqn) {
        voidPI(slotOf(qpx, ibv_qp_ex.wr_set_xrc_srqn$OFFSET, "ibv_wr_set_xrc_srqn"), qpx, remoteSrqn);
    }

    /**
     * {@code ibv_wr_set_inline_data}: the bytes are copied before the call returns.
     *
     * @param qpx {@code struct ibv_qp_ex *}
     * @param addr the data
     * @param length bytes
     */
    public static void ibv_wr_set_inline_data(MemorySegment qpx, MemorySegment addr, long length) {
        try {
            VOID_PPL.invokeExact(slotOf(qpx, ibv_qp_ex.wr_set_inline_data$OFFSET, "ibv_wr_set_inline_data"), qpx, addr, length);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_set_inline_data_list}.
     *
     * @param qpx {@code struct ibv_qp_ex *}
     * @param numBuf entries
     * @param bufList {@code const struct ibv_data_buf *}
     */
    public static void ibv_wr_set_inline_data_list(MemorySegment qpx, long numBuf, MemorySegment bufList) {
        voidPLP(slotOf(qpx, ibv_qp_ex.wr_set_inline_data_list$OFFSET, "ibv_wr_set_inline_data_list"), qpx, numBuf, bufList);
    }

    /**
     * {@code ibv_wr_set_sge}.
     *
     * @param qpx {@code struct ibv_qp_ex *}
     * @param lkey local key
     * @param addr local address
     * @param length bytes
     */
    public static void ibv_wr_set_sge(MemorySegment qpx, int lkey, long addr, int length) {
        try {
            VOID_PILI.invokeExact(slotOf(qpx, ibv_qp_ex.wr_set_sge$OFFSET, "ibv_wr_set_sge"), qpx, lkey, addr, length);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_set_sge_list}.
     *
     * @param qpx {@code struct ibv_qp_ex *}
     * @param numSge entries
     * @param sgList {@code const struct ibv_sge *}
     */
    public static void ibv_wr_set_sge_list(MemorySegment qpx, long numSge, MemorySegment sgList) {
        voidPLP(slotOf(qpx, ibv_qp_ex.wr_set_sge_list$OFFSET, "ibv_wr_set_sge_list"), qpx, numSge, sgList);
    }

    // ---- ibv_cq_ex: the extended poll API ----

    /**
     * {@code ibv_start_poll}: starts a poll batch; on 0 the first completion is current.
     *
     * @param cq   {@code struct ibv_cq_ex *}
     * @param attr {@code struct ibv_poll_cq_attr *}
     * @return 0 with a completion, ENOENT when empty (no {@link #ibv_end_poll} then), or an errno
     */
    public static int ibv_start_poll(MemorySegment cq, MemorySegment attr) {
        try {
            return (int) INT_PP.invokeExact(slotOf(cq, ibv_cq_ex.start_poll$OFFSET, "ibv_start_poll"), cq, attr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_next_poll}.
     * @param cq {@code struct ibv_cq_ex *}
     * @return 0, ENOENT when no more, or an errno
     */
    public static int ibv_next_poll(MemorySegment cq) {
        return intP(slotOf(cq, ibv_cq_ex.next_poll$OFFSET, "ibv_next_poll"), cq);
    }

    /**
     * {@code ibv_end_poll}.
     * @param cq {@code struct ibv_cq_ex *}
     */
    public static void ibv_end_poll(MemorySegment cq) {
        voidP(slotOf(cq, ibv_cq_ex.end_poll$OFFSET, "ibv_end_poll"), cq);
    }

    /**
     * {@code ibv_wc_read_opcode}.
     * @param cq {@code struct ibv_cq_ex *}
     * @return {@code enum ibv_wc_opcode}
     */
    public static int ibv_wc_read_opcode(MemorySegment cq) {
        return intP(slotOf(cq, ibv_cq_ex.read_opcode$OFFSET, "ibv_wc_read_opcode"), cq);
    }

    /**
     * {@code ibv_wc_read_vendor_err}.
     * @param cq {@code struct ibv_cq_ex *}
     * @return the vendor error
     */
    public static int ibv_wc_read_vendor_err(MemorySegment cq) {
        return intP(slotOf(cq, ibv_cq_ex.read_vendor_err$OFFSET, "ibv_wc_read_vendor_err"), cq);
    }

    /**
     * {@code ibv_wc_read_byte_len}.
     * @param cq {@code struct ibv_cq_ex *}
     * @return bytes transferred
     */
    public static int ibv_wc_read_byte_len(MemorySegment cq) {
        return intP(slotOf(cq, ibv_cq_ex.read_byte_len$OFFSET, "ibv_wc_read_byte_len"), cq);
    }

    /**
     * {@code ibv_wc_read_imm_data}.
     * @param cq {@code struct ibv_cq_ex *}
     * @return immediate data, network byte order
     */
    public static int ibv_wc_read_imm_data(MemorySegment cq) {
        return intP(slotOf(cq, ibv_cq_ex.read_imm_data$OFFSET, "ibv_wc_read_imm_data"), cq);
    }

    /**
     * {@code ibv_wc_read_invalidated_rkey} (the header reads it through {@code read_imm_data}).
     * @param cq {@code struct ibv_cq_ex *}
     * @return the rkey
     */
    public static int ibv_wc_read_invalidated_rkey(MemorySegment cq) {
        return intP(slotOf(cq, ibv_cq_ex.read_imm_data$OFFSET, "ibv_wc_read_invalidated_rkey"), cq);
    }

    /**
     * {@code ibv_wc_read_qp_num}.
     * @param cq {@code struct ibv_cq_ex *}
     * @return the local QP number
     */
    public static int ibv_wc_read_qp_num(MemorySegment cq) {
        return intP(slotOf(cq, ibv_cq_ex.read_qp_num$OFFSET, "ibv_wc_read_qp_num"), cq);
    }

    /**
     * {@code ibv_wc_read_src_qp}.
     * @param cq {@code struct ibv_cq_ex *}
     * @return the source QP number (UD)
     */
    public static int ibv_wc_read_src_qp(MemorySegment cq) {
        return intP(slotOf(cq, ibv_cq_ex.read_src_qp$OFFSET, "ibv_wc_read_src_qp"), cq);
    }

    /**
     * {@code ibv_wc_read_wc_flags}.
     * @param cq {@code struct ibv_cq_ex *}
     * @return {@code IBV_WC_*} flags
     */
    public static int ibv_wc_read_wc_flags(MemorySegment cq) {
        return intP(slotOf(cq, ibv_cq_ex.read_wc_flags$OFFSET, "ibv_wc_read_wc_flags"), cq);
    }

    /**
     * {@code ibv_wc_read_slid}.
     * @param cq {@code struct ibv_cq_ex *}
     * @return the source LID
     */
    public static int ibv_wc_read_slid(MemorySegment cq) {
        return intP(slotOf(cq, ibv_cq_ex.read_slid$OFFSET, "ibv_wc_read_slid"), cq);
    }

    /**
     * {@code ibv_wc_read_sl}.
     * @param cq {@code struct ibv_cq_ex *}
     * @return the service level
     */
    public static byte ibv_wc_read_sl(MemorySegment cq) {
        return byteP(slotOf(cq, ibv_cq_ex.read_sl$OFFSET, "ibv_wc_read_sl"), cq);
    }

    /**
     * {@code ibv_wc_read_dlid_path_bits}.
     * @param cq {@code struct ibv_cq_ex *}
     * @return the DLID path bits
     */
    public static byte ibv_wc_read_dlid_path_bits(MemorySegment cq) {
        return byteP(slotOf(cq, ibv_cq_ex.read_dlid_path_bits$OFFSET, "ibv_wc_read_dlid_path_bits"), cq);
    }

    /**
     * {@code ibv_wc_read_completion_ts}.
     * @param cq {@code struct ibv_cq_ex *}
     * @return the device timestamp
     */
    public static long ibv_wc_read_completion_ts(MemorySegment cq) {
        return longP(slotOf(cq, ibv_cq_ex.read_completion_ts$OFFSET, "ibv_wc_read_completion_ts"), cq);
    }

    /**
     * {@code ibv_wc_read_completion_wallclock_ns}.
     * @param cq {@code struct ibv_cq_ex *}
     * @return wall-clock nanoseconds
     */
    public static long ibv_wc_read_completion_wallclock_ns(MemorySegment cq) {
        return longP(slotOf(cq, ibv_cq_ex.read_completion_wallclock_ns$OFFSET, "ibv_wc_read_completion_wallclock_ns"), cq);
    }

    /**
     * {@code ibv_wc_read_cvlan}.
     * @param cq {@code struct ibv_cq_ex *}
     * @return the customer VLAN tag
     */
    public static short ibv_wc_read_cvlan(MemorySegment cq) {
        try {
            return (short) SHORT_P.invokeExact(slotOf(cq, ibv_cq_ex.read_cvlan$OFFSET, "ibv_wc_read_cvlan"), cq);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wc_read_flow_tag}.
     * @param cq {@code struct ibv_cq_ex *}
     * @return the flow tag
     */
    public static int ibv_wc_read_flow_tag(MemorySegment cq) {
        return intP(slotOf(cq, ibv_cq_ex.read_flow_tag$OFFSET, "ibv_wc_read_flow_tag"), cq);
    }

    /**
     * {@code ibv_wc_read_tm_info}.
     * @param cq {@code struct ibv_cq_ex *}
     * @param tmInfo {@code struct ibv_wc_tm_info *} to fill
     */
    public static void ibv_wc_read_tm_info(MemorySegment cq, MemorySegment tmInfo) {
        try {
            VOID_PP.invokeExact(slotOf(cq, ibv_cq_ex.read_tm_info$OFFSET, "ibv_wc_read_tm_info"), cq, tmInfo);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_cq_ex_to_cq}: the same object seen as a {@code struct ibv_cq *}.
     * @param cq {@code struct ibv_cq_ex *}
     * @return {@code struct ibv_cq *}
     */
    public static MemorySegment ibv_cq_ex_to_cq(MemorySegment cq) {
        return cq;
    }

    // ---- dispatch ----

    /** The function pointer at {@code obj->context->ops.<slot>}; {@code obj} is checked native, alive and non-NULL. */
    private static long contextOp(MemorySegment obj, long contextOffset, long opOffset, String verb) {
        long object = nonNull(obj, verb);
        long context = ALL.get(WORD, object + contextOffset);
        if (context == 0) {
            throw new IllegalArgumentException(verb + ": the object has no context (not a live verbs object)");
        }
        long fn = ALL.get(WORD, context + OPS + opOffset);
        if (fn == 0) {
            throw new UnsupportedVerbException(verb, "the provider leaves this op empty");
        }
        return fn;
    }

    /**
     * {@code verbs_get_ctx_op}: the address of the {@code verbs_context} when the context is
     * extended, its {@code sz} covers the op and the op is set; 0 otherwise.
     */
    static long verbsContextOp(MemorySegment context, long opOffset) {
        long ctx = nonNull(context, "verbs_get_ctx_op");
        if (ALL.get(WORD, ctx + ABI_COMPAT) != ABI_IS_EXTENDED) {
            return 0;
        }
        long vctx = ctx - VCTX_BACK;
        long sz = ALL.get(WORD, vctx + verbs_context.sz$OFFSET);
        if (Long.compareUnsigned(sz, VCTX_SIZE - opOffset) < 0 || ALL.get(WORD, vctx + opOffset) == 0) {
            return 0;
        }
        return vctx;
    }

    private static MemorySegment op(long vctx, long opOffset) {
        return MemorySegment.ofAddress(ALL.get(WORD, vctx + opOffset));
    }

    private static MemorySegment slotOf(MemorySegment obj, long slot, String verb) {
        long fn = ALL.get(WORD, nonNull(obj, verb) + slot);
        if (fn == 0) {
            throw new UnsupportedVerbException(verb, "the provider leaves this op empty");
        }
        return MemorySegment.ofAddress(fn);
    }

    /**
     * The address of a segment passed as a C pointer: it must be native (a heap segment's
     * "address" is an array offset) and its arena open. It must also stay open for the call;
     * a shared arena closed by another thread during the call is the caller's race to avoid.
     */
    private static long pointer(MemorySegment segment) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException("a heap segment cannot be passed to the device: allocate it from an Arena");
        }
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("the segment's arena is already closed");
        }
        return segment.address();
    }

    /** The address of a verbs object (qp, cq, srq, context, qp_ex, cq_ex): native, alive, non-NULL. */
    private static long nonNull(MemorySegment obj, String verb) {
        long address = pointer(obj);
        if (address == 0) {
            throw new IllegalArgumentException(verb + ": NULL object");
        }
        return address;
    }

    private static MemorySegment callPtrPP(MemorySegment fn, MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) SLOW_PTR_PP_ERRNO.invokeExact(fn, Native.errnoState(), a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static int intP(MemorySegment fn, MemorySegment a) {
        try {
            return (int) INT_P.invokeExact(fn, a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static byte byteP(MemorySegment fn, MemorySegment a) {
        try {
            return (byte) BYTE_P.invokeExact(fn, a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static long longP(MemorySegment fn, MemorySegment a) {
        try {
            return (long) LONG_P.invokeExact(fn, a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static void voidP(MemorySegment fn, MemorySegment a) {
        try {
            VOID_P.invokeExact(fn, a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static void voidPI(MemorySegment fn, MemorySegment a, int b) {
        try {
            VOID_PI.invokeExact(fn, a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static void voidPIL(MemorySegment fn, MemorySegment a, int b, long c) {
        try {
            VOID_PIL.invokeExact(fn, a, b, c);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static void voidPLP(MemorySegment fn, MemorySegment a, long b, MemorySegment c) {
        try {
            VOID_PLP.invokeExact(fn, a, b, c);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Downcalls throw nothing checked; anything else is a JVM error or a bug and is passed on. */
    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException e) {
            throw e;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new AssertionError("unexpected checked exception from a downcall", t);
    }
}
