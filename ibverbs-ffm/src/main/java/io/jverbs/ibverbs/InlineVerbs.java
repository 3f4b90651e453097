package io.jverbs.ibverbs;

import io.jverbs.ibverbs.internal.DataPath;
import io.jverbs.ibverbs.internal.NativeAccess;
import io.jverbs.ibverbs.internal.PointerArgs;
import io.jverbs.ibverbs.raw.ibv_alloc_dm_attr;
import io.jverbs.ibverbs.raw.ibv_context;
import io.jverbs.ibverbs.raw.ibv_context_ops;
import io.jverbs.ibverbs.raw.ibv_counter_attach_attr;
import io.jverbs.ibverbs.raw.ibv_counters;
import io.jverbs.ibverbs.raw.ibv_counters_init_attr;
import io.jverbs.ibverbs.raw.ibv_cq;
import io.jverbs.ibverbs.raw.ibv_cq_ex;
import io.jverbs.ibverbs.raw.ibv_cq_init_attr_ex;
import io.jverbs.ibverbs.raw.ibv_data_buf;
import io.jverbs.ibverbs.raw.ibv_device_attr_ex;
import io.jverbs.ibverbs.raw.ibv_dm;
import io.jverbs.ibverbs.raw.ibv_flow;
import io.jverbs.ibverbs.raw.ibv_flow_action;
import io.jverbs.ibverbs.raw.ibv_flow_action_esp_attr;
import io.jverbs.ibverbs.raw.ibv_flow_attr;
import io.jverbs.ibverbs.raw.ibv_flow_spec;
import io.jverbs.ibverbs.raw.ibv_gid_entry;
import io.jverbs.ibverbs.raw.ibv_modify_cq_attr;
import io.jverbs.ibverbs.raw.ibv_mr;
import io.jverbs.ibverbs.raw.ibv_mw;
import io.jverbs.ibverbs.raw.ibv_mw_bind;
import io.jverbs.ibverbs.raw.ibv_mw_bind_info;
import io.jverbs.ibverbs.raw.ibv_ops_wr;
import io.jverbs.ibverbs.raw.ibv_parent_domain_init_attr;
import io.jverbs.ibverbs.raw.ibv_pd;
import io.jverbs.ibverbs.raw.ibv_poll_cq_attr;
import io.jverbs.ibverbs.raw.ibv_port_attr;
import io.jverbs.ibverbs.raw.ibv_qp;
import io.jverbs.ibverbs.raw.ibv_qp_ex;
import io.jverbs.ibverbs.raw.ibv_qp_init_attr_ex;
import io.jverbs.ibverbs.raw.ibv_qp_open_attr;
import io.jverbs.ibverbs.raw.ibv_qp_rate_limit_attr;
import io.jverbs.ibverbs.raw.ibv_query_device_ex_input;
import io.jverbs.ibverbs.raw.ibv_recv_wr;
import io.jverbs.ibverbs.raw.ibv_rwq_ind_table;
import io.jverbs.ibverbs.raw.ibv_rwq_ind_table_init_attr;
import io.jverbs.ibverbs.raw.ibv_send_wr;
import io.jverbs.ibverbs.raw.ibv_sge;
import io.jverbs.ibverbs.raw.ibv_srq;
import io.jverbs.ibverbs.raw.ibv_srq_init_attr_ex;
import io.jverbs.ibverbs.raw.ibv_td;
import io.jverbs.ibverbs.raw.ibv_td_init_attr;
import io.jverbs.ibverbs.raw.ibv_values_ex;
import io.jverbs.ibverbs.raw.ibv_wc;
import io.jverbs.ibverbs.raw.ibv_wc_tm_info;
import io.jverbs.ibverbs.raw.ibv_wq;
import io.jverbs.ibverbs.raw.ibv_wq_attr;
import io.jverbs.ibverbs.raw.ibv_wq_init_attr;
import io.jverbs.ibverbs.raw.ibv_xrcd;
import io.jverbs.ibverbs.raw.ibv_xrcd_init_attr;
import io.jverbs.ibverbs.raw.verbs_context;
import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.FunctionDescriptor.of;
import static java.lang.foreign.FunctionDescriptor.ofVoid;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * The functions and function-like macros that {@code infiniband/verbs.h} defines inline, which no
 * library exports: each does what the header does — read the provider's function pointer from
 * {@code context->ops}, from the {@code verbs_context} in front of the {@code ibv_context}
 * ({@code verbs_get_ctx_op}), or from the object itself ({@code ibv_qp_ex}, {@code ibv_cq_ex},
 * {@code ibv_wq}, {@code ibv_dm}) — and call it. {@code ibverbs-ffm/INLINE-VERBS.md} lists every
 * inline function and macro of the header and, for each one not here, why.
 *
 * <h2>Returns and errors</h2>
 * Method names and arguments are the C ones; return values are the C return values: an errno for
 * the {@code int} verbs (0 on success), NULL with {@link Native#lastErrno()} set for the verbs
 * that create an object. Where the header would find the provider's op absent — and return
 * {@code EOPNOTSUPP}, return NULL with {@code errno = EOPNOTSUPP}, or call through a NULL pointer
 * — these methods throw {@link UnsupportedVerbException} instead, so an absent op never crashes
 * the JVM and is never mistaken for a provider's answer.
 *
 * <h2>What is checked before any native call</h2>
 * Every pointer argument the verb (or the provider behind it) dereferences is checked in Java
 * first; a failed check throws and nothing reaches native code:
 * <ul>
 *   <li>every segment must be native ({@link IllegalArgumentException} for a heap segment, whose
 *       "address" is an array offset that C would read as an address near 0) and its arena open
 *       ({@link IllegalStateException});</li>
 *   <li>verbs objects — qp, cq, srq, wq, context, pd, mr, mw, ah, qp_ex, cq_ex, dm, flow,
 *       counters… — are <em>handles</em>: C hands them out as zero-length segments, so only
 *       NULL is refused ({@link IllegalArgumentException}); their size is not checked;</li>
 *   <li>every struct, array or buffer the verb reads or writes must be non-NULL (unless C allows
 *       NULL, as for {@code ibv_query_device_ex}'s {@code input}) and at least as long as what
 *       the verb touches: {@code ibv_poll_cq}'s {@code wc} covers {@code num_entries × sizeof(struct
 *       ibv_wc)} ({@code num_entries >= 0}), a work request covers {@code sizeof(struct ibv_send_wr)}
 *       or {@code sizeof(struct ibv_recv_wr)}, {@code bad_wr} a pointer, an attribute struct its
 *       {@code sizeof}, inline data its length, an SGE list {@code num_sge × sizeof(struct ibv_sge)}.
 *       The segment's own size is compared: no segment is ever widened ({@code reinterpret}), so
 *       a zero-length segment from C must be given its size by the caller before it is passed as
 *       a buffer. The message names the verb, the argument and the bytes needed.</li>
 * </ul>
 *
 * <h2>What the thin layer cannot check</h2>
 * Only the arguments themselves are checked, not what they point to; the caller guarantees, and
 * {@code jverbs-highlevel} is where these are enforced for its users:
 * <ul>
 *   <li>that a handle is a live object of the right type: a destroyed queue pair, a CQ passed
 *       where a QP is expected, or an address from another struct all look like valid handles;</li>
 *   <li>the contents of work requests and attribute structs: {@code next} and {@code sg_list}
 *       pointers, SGE addresses and lengths, lkeys and rkeys, {@code ah}, the pointers inside
 *       {@code ibv_flow_action_esp_attr} or {@code ibv_rwq_ind_table_init_attr} — the provider
 *       follows them as C would;</li>
 *   <li>that posted memory stays registered and allocated until its completion (the device
 *       writes to it long after the call returns);</li>
 *   <li>that a shared arena is not closed by another thread during a data-path call (post and
 *       poll pass plain addresses, so the arena is not kept open for the call, unlike the
 *       ordinary downcalls, which hold it open until they return).</li>
 * </ul>
 *
 * <h2>Critical downcalls</h2>
 * A critical downcall ({@code Linker.Option.critical}) is cheap because the thread stays "in
 * Java": it cannot reach a safepoint until the call returns. It is therefore used only for calls
 * that are short, never block, never call back into Java, and never wait on a lock that another
 * thread may hold while it runs Java code. These are critical:
 * <ul>
 *   <li>{@code ibv_post_send}, {@code ibv_post_recv}, {@code ibv_post_srq_recv},
 *       {@code ibv_post_wq_recv}, {@code ibv_poll_cq}: the provider's queue lock is held only
 *       inside the call, so a second thread waits at most for another short C call;</li>
 *   <li>{@code ibv_req_notify_cq}: no user-space lock (rxe makes one short {@code write()});</li>
 *   <li>inside a batch, the {@code ibv_wr_*} builders, {@code ibv_wr_complete},
 *       {@code ibv_wr_abort}, {@code ibv_next_poll}, {@code ibv_end_poll} and the
 *       {@code ibv_wc_read_*} readers: they run on the thread that opened the batch, which
 *       already holds the lock; they take none (complete, abort and end_poll release it).</li>
 * </ul>
 * {@code ibv_wr_start} and {@code ibv_start_poll} take the provider's queue lock and keep it while
 * Java code builds or reads the batch; a second thread entering them waits for that Java code, so
 * they are ordinary downcalls (as a critical call, the waiting thread would hold up the
 * safepoint that the batch owner, parked at it, needs: the JVM would hang). Everything else
 * (creation, destruction, queries, {@code ibv_bind_mw}, {@code ibv_post_srq_ops}, the device
 * memory copies of unbounded length) is ordinary too.
 *
 * <p>Residual risk: a legacy {@code ibv_post_send}/{@code ibv_post_recv} on a queue pair whose
 * {@code ibv_wr_start} batch another thread holds, or an {@code ibv_poll_cq} on a CQ whose
 * {@code ibv_start_poll} batch another thread holds, spins in a critical call on that lock and
 * can hang the JVM in the same way. Never mix the two APIs on one queue across threads;
 * {@code jverbs-highlevel} gives each batch one owner.
 *
 * <h2>Threads and memory</h2>
 * Thread-safety is that of the provider: post and poll may run on several threads on different
 * queues; one queue must not be used by two threads at once unless the provider says so. Work
 * requests, SGE lists and attribute structs need only stay valid for the call; posted buffers
 * until their completion.
 */
public final class InlineVerbs {
    /** Reads native memory by absolute address without making a new segment for each read. */
    private static final MemorySegment ALL = NativeAccess.everything();
    /** A pointer-sized word; the verbs structs keep their pointers aligned, so no alignment check is needed. */
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED;

    private static final long OPS = ibv_context.ops$OFFSET;
    private static final long ABI_COMPAT = ibv_context.abi_compat$OFFSET;
    /** From the start of {@code ibv_context} back to the start of its {@code verbs_context}. */
    private static final long VCTX_BACK = verbs_context.context$OFFSET;
    private static final long VCTX_SIZE = verbs_context.sizeof();
    /** {@code __VERBS_ABI_IS_EXTENDED}: {@code (void *) UINTPTR_MAX}. */
    private static final long ABI_IS_EXTENDED = -1L;

    private static final long WC_SIZE = ibv_wc.sizeof();
    private static final long SEND_WR_SIZE = ibv_send_wr.sizeof();
    private static final long RECV_WR_SIZE = ibv_recv_wr.sizeof();
    private static final long POINTER_SIZE = ADDRESS.byteSize();

    // ---- downcall handles, one per provider op, named after it ----
    // Address-less: the function pointer read from the provider's table is the first argument.
    // Post and poll pass their pointers as 64-bit words (the same registers in the C ABI): that
    // skips the linker's per-argument segment checks, which cost more than the call itself;
    // PointerArgs has made the checks that matter, once, in Java.

    /** {@code ibv_context_ops} data path: critical (the class comment says why that is safe). */
    private static final MethodHandle POST_SRQ_RECV = critical(of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    /** {@code ibv_wq->post_recv}: critical, like post_recv. */
    private static final MethodHandle POST_WQ_RECV = critical(of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));

    /** The {@code ibv_qp_ex} work-request builder. */
    private static final class QpExOps {
        /** Takes the send-queue lock and keeps it until wr_complete/wr_abort: ordinary. */
        static final MethodHandle WR_START = ordinary(ofVoid(ADDRESS));
        static final MethodHandle WR_COMPLETE = critical(of(JAVA_INT, ADDRESS));
        static final MethodHandle WR_ABORT = critical(ofVoid(ADDRESS));
        /** (qp, rkey, remote_addr): rdma_write, rdma_read. */
        static final MethodHandle WR_RDMA = critical(ofVoid(ADDRESS, JAVA_INT, JAVA_LONG));
        static final MethodHandle WR_RDMA_WRITE_IMM = critical(ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_INT));
        static final MethodHandle WR_ATOMIC_CMP_SWP = critical(ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        static final MethodHandle WR_ATOMIC_FETCH_ADD = critical(ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG));
        static final MethodHandle WR_ATOMIC_WRITE = critical(ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, ADDRESS));
        static final MethodHandle WR_BIND_MW = critical(ofVoid(ADDRESS, ADDRESS, JAVA_INT, ADDRESS));
        /** (qp): wr_send. */
        static final MethodHandle WR_SEND = critical(ofVoid(ADDRESS));
        /** (qp, a 32-bit key or immediate): send_imm, send_inv, local_inv, set_xrc_srqn. */
        static final MethodHandle WR_WITH_U32 = critical(ofVoid(ADDRESS, JAVA_INT));
        static final MethodHandle WR_SEND_TSO = critical(ofVoid(ADDRESS, ADDRESS, JAVA_SHORT, JAVA_SHORT));
        static final MethodHandle WR_SET_UD_ADDR = critical(ofVoid(ADDRESS, ADDRESS, JAVA_INT, JAVA_INT));
        static final MethodHandle WR_SET_INLINE_DATA = critical(ofVoid(ADDRESS, ADDRESS, JAVA_LONG));
        /** (qp, count, array): set_inline_data_list, set_sge_list. */
        static final MethodHandle WR_SET_LIST = critical(ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
        static final MethodHandle WR_SET_SGE = critical(ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_INT));
    }

    /** The {@code ibv_cq_ex} poll API. */
    private static final class CqExOps {
        /** Takes the CQ lock and keeps it until end_poll: ordinary. */
        static final MethodHandle START_POLL = ordinary(of(JAVA_INT, ADDRESS, ADDRESS));
        static final MethodHandle NEXT_POLL = critical(of(JAVA_INT, ADDRESS));
        static final MethodHandle END_POLL = critical(ofVoid(ADDRESS));
        /** The {@code read_*} fields of 8, 16, 32 and 64 bits. */
        static final MethodHandle READ_U8 = critical(of(JAVA_BYTE, ADDRESS));
        static final MethodHandle READ_U16 = critical(of(JAVA_SHORT, ADDRESS));
        static final MethodHandle READ_U32 = critical(of(JAVA_INT, ADDRESS));
        static final MethodHandle READ_U64 = critical(of(JAVA_LONG, ADDRESS));
        static final MethodHandle READ_TM_INFO = critical(ofVoid(ADDRESS, ADDRESS));
    }

    /** The slow verbs: ordinary downcalls; those returning a new object capture errno. */
    private static final class SlowOps {
        /** {@code struct X *op(parent, attr)}: the create, open and alloc ops. */
        static final MethodHandle CREATE_FROM_ATTR = capturingErrno(of(ADDRESS, ADDRESS, ADDRESS));
        /** {@code struct X *op(parent)}: alloc_null_mr. */
        static final MethodHandle CREATE_FROM_PARENT = capturingErrno(of(ADDRESS, ADDRESS));
        /** {@code struct ibv_mw *alloc_mw(pd, type)}. */
        static final MethodHandle ALLOC_MW = capturingErrno(of(ADDRESS, ADDRESS, JAVA_INT));
        /** {@code struct ibv_mr *reg_dm_mr(pd, dm, dm_offset, length, access)}. */
        static final MethodHandle REG_DM_MR = capturingErrno(of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_INT));
        /** {@code int op(obj)}: the destroy, close, free and dealloc ops. */
        static final MethodHandle DESTROY = ordinary(of(JAVA_INT, ADDRESS));
        /** {@code int op(obj, attr)}: the modify and query ops with one struct. */
        static final MethodHandle WITH_ATTR = ordinary(of(JAVA_INT, ADDRESS, ADDRESS));
        /** {@code int op(obj, a, b)}: bind_mw, post_srq_ops, attach_counters_point_flow. */
        static final MethodHandle WITH_TWO = ordinary(of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle QUERY_PORT = ordinary(of(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS, JAVA_LONG));
        static final MethodHandle QUERY_DEVICE_EX = ordinary(of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG));
        static final MethodHandle ADVISE_MR = ordinary(of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
        static final MethodHandle READ_COUNTERS = ordinary(of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, JAVA_INT));
        static final MethodHandle MEMCPY_TO_DM = ordinary(of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG));
        static final MethodHandle MEMCPY_FROM_DM = ordinary(of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG));
    }

    /** libc, for what {@code ibv_create_wq} initializes in the new WQ. */
    private static final class Libc {
        static final MethodHandle PTHREAD_MUTEX_INIT = libc("pthread_mutex_init", of(JAVA_INT, ADDRESS, ADDRESS));
        static final MethodHandle PTHREAD_COND_INIT = libc("pthread_cond_init", of(JAVA_INT, ADDRESS, ADDRESS));

        private static MethodHandle libc(String symbol, FunctionDescriptor descriptor) {
            return NativeAccess.downcall(Linker.nativeLinker().defaultLookup(), "libc", symbol, descriptor, false);
        }
    }

    private InlineVerbs() {
    }

    private static MethodHandle critical(FunctionDescriptor descriptor) {
        return NativeAccess.pointerDowncall(descriptor, true);
    }

    private static MethodHandle ordinary(FunctionDescriptor descriptor) {
        return NativeAccess.pointerDowncall(descriptor, false);
    }

    private static MethodHandle capturingErrno(FunctionDescriptor descriptor) {
        return NativeAccess.pointerDowncallCapturingErrno(descriptor);
    }

    // ---- the ibv_context_ops data path ----

    /**
     * {@code ibv_post_send}: posts a linked list of send work requests.
     *
     * @param qp    {@code struct ibv_qp *}
     * @param wr    {@code struct ibv_send_wr *}, the first request of the list: at least
     *              {@code sizeof(struct ibv_send_wr)} bytes (the others are reached through {@code next}, unchecked)
     * @param badWr {@code struct ibv_send_wr **} (8 bytes) that receives the first request not posted on failure
     * @return 0, or the errno reported by the provider
     * @throws IllegalArgumentException a NULL or heap argument, or {@code wr}/{@code badWr} too small
     * @throws IllegalStateException    an argument whose arena is closed
     * @throws UnsupportedVerbException the provider has no post_send
     */
    public static int ibv_post_send(MemorySegment qp, MemorySegment wr, MemorySegment badWr) {
        long q = PointerArgs.handle(qp, "ibv_post_send", "qp");
        long fn = contextOp(q, ibv_qp.context$OFFSET, ibv_context_ops.post_send$OFFSET, "ibv_post_send", "qp");
        long w = PointerArgs.struct(wr, SEND_WR_SIZE, "struct ibv_send_wr", "ibv_post_send", "wr");
        long b = PointerArgs.struct(badWr, POINTER_SIZE, "struct ibv_send_wr *", "ibv_post_send", "bad_wr");
        return DataPath.postSend(MemorySegment.ofAddress(fn), q, w, b);
    }

    /**
     * {@code ibv_post_recv}: posts a linked list of receive work requests.
     *
     * @param qp    {@code struct ibv_qp *}
     * @param wr    {@code struct ibv_recv_wr *}, at least {@code sizeof(struct ibv_recv_wr)} bytes
     * @param badWr {@code struct ibv_recv_wr **} (8 bytes) that receives the first request not posted on failure
     * @return 0, or the errno reported by the provider
     * @throws IllegalArgumentException a NULL or heap argument, or {@code wr}/{@code badWr} too small
     * @throws IllegalStateException    an argument whose arena is closed
     * @throws UnsupportedVerbException the provider has no post_recv
     */
    public static int ibv_post_recv(MemorySegment qp, MemorySegment wr, MemorySegment badWr) {
        long q = PointerArgs.handle(qp, "ibv_post_recv", "qp");
        long fn = contextOp(q, ibv_qp.context$OFFSET, ibv_context_ops.post_recv$OFFSET, "ibv_post_recv", "qp");
        long w = PointerArgs.struct(wr, RECV_WR_SIZE, "struct ibv_recv_wr", "ibv_post_recv", "wr");
        long b = PointerArgs.struct(badWr, POINTER_SIZE, "struct ibv_recv_wr *", "ibv_post_recv", "bad_wr");
        return DataPath.postRecv(MemorySegment.ofAddress(fn), q, w, b);
    }

    /**
     * {@code ibv_post_srq_recv}: posts receive work requests to a shared receive queue.
     *
     * @param srq   {@code struct ibv_srq *}
     * @param wr    {@code struct ibv_recv_wr *}, at least {@code sizeof(struct ibv_recv_wr)} bytes
     * @param badWr {@code struct ibv_recv_wr **} (8 bytes)
     * @return 0, or the errno reported by the provider
     * @throws IllegalArgumentException a NULL or heap argument, or {@code wr}/{@code badWr} too small
     * @throws IllegalStateException    an argument whose arena is closed
     * @throws UnsupportedVerbException the provider has no post_srq_recv
     */
    public static int ibv_post_srq_recv(MemorySegment srq, MemorySegment wr, MemorySegment badWr) {
        long s = PointerArgs.handle(srq, "ibv_post_srq_recv", "srq");
        long fn = contextOp(s, ibv_srq.context$OFFSET, ibv_context_ops.post_srq_recv$OFFSET, "ibv_post_srq_recv", "srq");
        long w = PointerArgs.struct(wr, RECV_WR_SIZE, "struct ibv_recv_wr", "ibv_post_srq_recv", "recv_wr");
        long b = PointerArgs.struct(badWr, POINTER_SIZE, "struct ibv_recv_wr *", "ibv_post_srq_recv", "bad_recv_wr");
        try {
            return (int) POST_SRQ_RECV.invokeExact(MemorySegment.ofAddress(fn), s, w, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_poll_cq}: takes up to {@code numEntries} completions into the {@code ibv_wc} array.
     *
     * @param cq         {@code struct ibv_cq *}
     * @param numEntries capacity of {@code wc}, in entries, {@code >= 0}
     * @param wc         {@code struct ibv_wc[numEntries]}: at least {@code numEntries × sizeof(struct ibv_wc)}
     *                   bytes, since the provider may fill them all
     * @return the number of completions taken (0 when the CQ is empty), or a negative value on error
     * @throws IllegalArgumentException a NULL or heap argument, a negative {@code numEntries}, or {@code wc} too small
     * @throws IllegalStateException    an argument whose arena is closed
     * @throws UnsupportedVerbException the provider has no poll_cq
     */
    public static int ibv_poll_cq(MemorySegment cq, int numEntries, MemorySegment wc) {
        long c = PointerArgs.handle(cq, "ibv_poll_cq", "cq");
        long fn = contextOp(c, ibv_cq.context$OFFSET, ibv_context_ops.poll_cq$OFFSET, "ibv_poll_cq", "cq");
        long w = PointerArgs.array(wc, numEntries, WC_SIZE, "struct ibv_wc", "ibv_poll_cq", "wc", "num_entries");
        return DataPath.pollCq(MemorySegment.ofAddress(fn), c, numEntries, w);
    }

    /**
     * {@code ibv_req_notify_cq}: arms the CQ so that its next completion raises an event on its
     * completion channel.
     *
     * @param cq            {@code struct ibv_cq *}
     * @param solicitedOnly non-zero to be notified only of solicited completions
     * @return 0, or the errno reported by the provider
     * @throws IllegalArgumentException a NULL or heap {@code cq}
     * @throws UnsupportedVerbException the provider has no req_notify_cq
     */
    public static int ibv_req_notify_cq(MemorySegment cq, int solicitedOnly) {
        long c = PointerArgs.handle(cq, "ibv_req_notify_cq", "cq");
        long fn = contextOp(c, ibv_cq.context$OFFSET, ibv_context_ops.req_notify_cq$OFFSET, "ibv_req_notify_cq", "cq");
        return DataPath.reqNotifyCq(MemorySegment.ofAddress(fn), cq, solicitedOnly);
    }

    /**
     * {@code ibv_post_wq_recv}: posts receive work requests to a work queue ({@code wq->post_recv}).
     *
     * @param wq          {@code struct ibv_wq *}
     * @param recvWr      {@code struct ibv_recv_wr *}, at least {@code sizeof(struct ibv_recv_wr)} bytes
     * @param badRecvWr   {@code struct ibv_recv_wr **} (8 bytes)
     * @return 0, or the errno reported by the provider
     * @throws IllegalArgumentException a NULL or heap argument, or a struct too small
     * @throws UnsupportedVerbException the WQ has no post_recv
     */
    public static int ibv_post_wq_recv(MemorySegment wq, MemorySegment recvWr, MemorySegment badRecvWr) {
        long q = PointerArgs.handle(wq, "ibv_post_wq_recv", "wq");
        long fn = slot(q, ibv_wq.post_recv$OFFSET, "ibv_post_wq_recv", "post_recv");
        long w = PointerArgs.struct(recvWr, RECV_WR_SIZE, "struct ibv_recv_wr", "ibv_post_wq_recv", "recv_wr");
        long b = PointerArgs.struct(badRecvWr, POINTER_SIZE, "struct ibv_recv_wr *", "ibv_post_wq_recv", "bad_recv_wr");
        try {
            return (int) POST_WQ_RECV.invokeExact(MemorySegment.ofAddress(fn), q, w, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- memory windows (ibv_context_ops) ----

    /**
     * {@code ibv_alloc_mw}: allocates a memory window.
     *
     * @param pd   {@code struct ibv_pd *}
     * @param type {@code IBV_MW_TYPE_1} or {@code IBV_MW_TYPE_2}
     * @return {@code struct ibv_mw *}, or NULL with {@link Native#lastErrno()} set
     * @throws UnsupportedVerbException the provider has no alloc_mw
     */
    public static MemorySegment ibv_alloc_mw(MemorySegment pd, int type) {
        long p = PointerArgs.handle(pd, "ibv_alloc_mw", "pd");
        long fn = contextOp(p, ibv_pd.context$OFFSET, ibv_context_ops.alloc_mw$OFFSET, "ibv_alloc_mw", "pd");
        try {
            return (MemorySegment) SlowOps.ALLOC_MW.invokeExact(MemorySegment.ofAddress(fn), Native.errnoState(), pd, type);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_dealloc_mw}: frees a memory window.
     *
     * @param mw {@code struct ibv_mw *}
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no dealloc_mw
     */
    public static int ibv_dealloc_mw(MemorySegment mw) {
        long m = PointerArgs.handle(mw, "ibv_dealloc_mw", "mw");
        long fn = contextOp(m, ibv_mw.context$OFFSET, ibv_context_ops.dealloc_mw$OFFSET, "ibv_dealloc_mw", "mw");
        return intCall(SlowOps.DESTROY, fn, mw);
    }

    /**
     * {@code ibv_inc_rkey}: the rkey with its low 8 bits (the key) incremented, as for a new bind.
     *
     * @param rkey an rkey
     * @return the next rkey
     */
    public static int ibv_inc_rkey(int rkey) {
        int mask = 0xff;
        return (rkey & ~mask) | ((rkey + 1) & mask);
    }

    /**
     * {@code ibv_bind_mw}: binds a type 1 memory window through the QP (legacy API). As the header:
     * EINVAL for a window that is not type 1 or a bind without an MR but with an address or length,
     * EPERM when the MR's PD is not the window's.
     *
     * @param qp     {@code struct ibv_qp *}
     * @param mw     {@code struct ibv_mw *}
     * @param mwBind {@code struct ibv_mw_bind *}, at least {@code sizeof(struct ibv_mw_bind)}; its
     *               {@code bind_info.mr}, when not NULL, must be a live MR (it is read, unchecked)
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no bind_mw
     */
    public static int ibv_bind_mw(MemorySegment qp, MemorySegment mw, MemorySegment mwBind) {
        String verb = "ibv_bind_mw";
        PointerArgs.handle(qp, verb, "qp");
        long m = PointerArgs.handle(mw, verb, "mw");
        long b = PointerArgs.struct(mwBind, ibv_mw_bind.sizeof(), "struct ibv_mw_bind", verb, "mw_bind");
        if (ALL.get(JAVA_INT, m + ibv_mw.type$OFFSET) != verbs_h.IBV_MW_TYPE_1) {
            return Errno.EINVAL;
        }
        long info = b + ibv_mw_bind.bind_info$OFFSET;
        long mr = ALL.get(WORD, info + ibv_mw_bind_info.mr$OFFSET);
        if (mr == 0 && (ALL.get(WORD, info + ibv_mw_bind_info.addr$OFFSET) != 0
                || ALL.get(WORD, info + ibv_mw_bind_info.length$OFFSET) != 0)) {
            return Errno.EINVAL;
        }
        if (mr != 0 && ALL.get(WORD, m + ibv_mw.pd$OFFSET) != ALL.get(WORD, mr + ibv_mr.pd$OFFSET)) {
            return Errno.EPERM;
        }
        long fn = contextOp(m, ibv_mw.context$OFFSET, ibv_context_ops.bind_mw$OFFSET, verb, "mw");
        return intCall(SlowOps.WITH_TWO, fn, qp, mw, mwBind);
    }

    // ---- verbs_context and macros ----

    /**
     * {@code ibv_query_port} (a macro): through {@code verbs_context->query_port} with today's
     * {@code sizeof(struct ibv_port_attr)} when the provider has it; otherwise the header's
     * fallback (zero the struct, call the exported compat {@code ibv_query_port}).
     *
     * @param context  {@code struct ibv_context *}
     * @param portNum  the port, from 1
     * @param portAttr {@code struct ibv_port_attr *}, at least {@code sizeof(struct ibv_port_attr)} bytes
     * @return 0, or an errno
     * @throws IllegalArgumentException a NULL or heap argument, or {@code portAttr} too small
     */
    public static int ibv_query_port(MemorySegment context, int portNum, MemorySegment portAttr) {
        String verb = "ibv_query_port";
        long ctx = PointerArgs.handle(context, verb, "context");
        PointerArgs.struct(portAttr, ibv_port_attr.sizeof(), "struct ibv_port_attr", verb, "port_attr");
        long fn = verbsOp(ctx, verbs_context.query_port$OFFSET);
        if (fn == 0) {
            portAttr.asSlice(0, ibv_port_attr.sizeof()).fill((byte) 0);
            return verbs_h.ibv_query_port(context, (byte) portNum, portAttr);
        }
        try {
            return (int) SlowOps.QUERY_PORT.invokeExact(MemorySegment.ofAddress(fn), context, (byte) portNum, portAttr,
                    ibv_port_attr.sizeof());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_reg_mr} (a macro): registers {@code [addr, addr + length)} with its own address as
     * the I/O virtual address, through the exported {@code ibv_reg_mr_iova2}.
     *
     * @param pd     {@code struct ibv_pd *}
     * @param addr   the memory, native and at least {@code length} bytes; it must stay allocated until
     *               the MR is deregistered. NULL only for an implicit on-demand-paging MR
     *               ({@code length} -1, that is {@code SIZE_MAX}, with {@code IBV_ACCESS_ON_DEMAND})
     * @param length bytes
     * @param access {@code IBV_ACCESS_*} flags
     * @return {@code struct ibv_mr *}, or NULL with {@link Native#lastErrno()} set
     * @throws IllegalArgumentException a NULL or heap argument, or {@code length} beyond {@code addr}
     */
    public static MemorySegment ibv_reg_mr(MemorySegment pd, MemorySegment addr, long length, int access) {
        return regMr("ibv_reg_mr", pd, addr, length, addr.address(), access);
    }

    /**
     * {@code ibv_reg_mr_iova} (a macro): registers {@code [addr, addr + length)} with the given I/O
     * virtual address, through the exported {@code ibv_reg_mr_iova2}.
     *
     * @param pd     {@code struct ibv_pd *}
     * @param addr   the memory, as for {@link #ibv_reg_mr}
     * @param length bytes
     * @param iova   the address the device (and the peer) use for {@code addr}
     * @param access {@code IBV_ACCESS_*} flags
     * @return {@code struct ibv_mr *}, or NULL with {@link Native#lastErrno()} set
     * @throws IllegalArgumentException a NULL or heap argument, or {@code length} beyond {@code addr}
     */
    public static MemorySegment ibv_reg_mr_iova(MemorySegment pd, MemorySegment addr, long length, long iova, int access) {
        return regMr("ibv_reg_mr_iova", pd, addr, length, iova, access);
    }

    private static MemorySegment regMr(String verb, MemorySegment pd, MemorySegment addr, long length, long iova, int access) {
        PointerArgs.handle(pd, verb, "pd");
        boolean implicitOdp = addr.isNative() && addr.address() == 0 && length == -1
                && (access & verbs_h.IBV_ACCESS_ON_DEMAND) != 0;
        if (!implicitOdp) {
            PointerArgs.bytes(addr, length, verb, "addr", "length");
        }
        return verbs_h.ibv_reg_mr_iova2(pd, addr, length, iova, access);
    }

    /**
     * {@code ibv_create_cq_ex}: through {@code verbs_context->create_cq_ex}.
     *
     * @param context {@code struct ibv_context *}
     * @param cqAttr  {@code struct ibv_cq_init_attr_ex *}, at least its {@code sizeof}
     * @return {@code struct ibv_cq_ex *}, or NULL with {@link Native#lastErrno()} set
     * @throws IllegalArgumentException a NULL or heap argument, or {@code cqAttr} too small
     * @throws UnsupportedVerbException when the provider has no {@code create_cq_ex}
     */
    public static MemorySegment ibv_create_cq_ex(MemorySegment context, MemorySegment cqAttr) {
        String verb = "ibv_create_cq_ex";
        long ctx = PointerArgs.handle(context, verb, "context");
        PointerArgs.struct(cqAttr, ibv_cq_init_attr_ex.sizeof(), "struct ibv_cq_init_attr_ex", verb, "cq_attr");
        return create(verb, requireVerbsOp(ctx, verbs_context.create_cq_ex$OFFSET, verb, "create_cq_ex"), context, cqAttr);
    }

    /**
     * {@code ibv_create_qp_ex}: {@code ibv_create_qp} when only {@code IBV_QP_INIT_ATTR_PD} is set in
     * {@code comp_mask}, {@code verbs_context->create_qp_ex} otherwise.
     *
     * @param context      {@code struct ibv_context *}
     * @param qpInitAttrEx {@code struct ibv_qp_init_attr_ex *}, at least its {@code sizeof}
     * @return {@code struct ibv_qp *}, or NULL with {@link Native#lastErrno()} set
     * @throws IllegalArgumentException a NULL or heap argument, {@code qpInitAttrEx} too small, or its {@code pd} NULL
     * @throws UnsupportedVerbException when extended attributes are asked for and the provider has no {@code create_qp_ex}
     */
    public static MemorySegment ibv_create_qp_ex(MemorySegment context, MemorySegment qpInitAttrEx) {
        String verb = "ibv_create_qp_ex";
        long ctx = PointerArgs.handle(context, verb, "context");
        PointerArgs.struct(qpInitAttrEx, ibv_qp_init_attr_ex.sizeof(), "struct ibv_qp_init_attr_ex", verb, "qp_init_attr_ex");
        if (ibv_qp_init_attr_ex.comp_mask(qpInitAttrEx) == verbs_h.IBV_QP_INIT_ATTR_PD) {
            MemorySegment pd = ibv_qp_init_attr_ex.pd(qpInitAttrEx);
            PointerArgs.present(pd.address(), verb, "qp_init_attr_ex->pd is NULL");
            return verbs_h.ibv_create_qp(pd, qpInitAttrEx);
        }
        return create(verb, requireVerbsOp(ctx, verbs_context.create_qp_ex$OFFSET, verb, "create_qp_ex"), context,
                qpInitAttrEx);
    }

    /**
     * {@code ibv_query_device_ex}: through {@code verbs_context->query_device_ex}; when the provider
     * lacks it or answers EOPNOTSUPP/ENOSYS, zeroes {@code attr} and fills {@code attr->orig_attr}
     * with {@code ibv_query_device}, as the header does.
     *
     * @param context {@code struct ibv_context *}
     * @param input   {@code struct ibv_query_device_ex_input *} or NULL; a non-zero {@code comp_mask} gives EINVAL
     * @param attr    {@code struct ibv_device_attr_ex *}, at least {@code sizeof(struct ibv_device_attr_ex)} bytes
     * @return 0, or an errno
     * @throws IllegalArgumentException a NULL or heap argument, or a struct too small
     */
    public static int ibv_query_device_ex(MemorySegment context, MemorySegment input, MemorySegment attr) {
        String verb = "ibv_query_device_ex";
        long ctx = PointerArgs.handle(context, verb, "context");
        long in = PointerArgs.optionalStruct(input, ibv_query_device_ex_input.sizeof(), "struct ibv_query_device_ex_input",
                verb, "input");
        PointerArgs.struct(attr, ibv_device_attr_ex.sizeof(), "struct ibv_device_attr_ex", verb, "attr");
        if (in != 0 && ibv_query_device_ex_input.comp_mask(input) != 0) {
            return Errno.EINVAL;
        }
        long fn = verbsOp(ctx, verbs_context.query_device_ex$OFFSET);
        if (fn != 0) {
            int ret;
            try {
                ret = (int) SlowOps.QUERY_DEVICE_EX.invokeExact(MemorySegment.ofAddress(fn), context, input, attr,
                        ibv_device_attr_ex.sizeof());
            } catch (Throwable t) {
                throw rethrow(t);
            }
            if (ret != Errno.EOPNOTSUPP && ret != Errno.ENOSYS) {
                return ret;
            }
        }
        MemorySegment full = attr.asSlice(0, ibv_device_attr_ex.sizeof());
        full.fill((byte) 0);
        return verbs_h.ibv_query_device(context, full.asSlice(ibv_device_attr_ex.orig_attr$OFFSET));
    }

    /**
     * {@code ibv_query_gid_ex}: one GID table entry, through the exported {@code _ibv_query_gid_ex}
     * with today's {@code sizeof(struct ibv_gid_entry)}.
     *
     * @param context  {@code struct ibv_context *}
     * @param portNum  the port, from 1
     * @param gidIndex the GID index
     * @param entry    {@code struct ibv_gid_entry *}, at least its {@code sizeof}
     * @param flags    0
     * @return 0, or an errno
     */
    public static int ibv_query_gid_ex(MemorySegment context, int portNum, int gidIndex, MemorySegment entry, int flags) {
        String verb = "ibv_query_gid_ex";
        PointerArgs.handle(context, verb, "context");
        PointerArgs.struct(entry, ibv_gid_entry.sizeof(), "struct ibv_gid_entry", verb, "entry");
        return verbs_h._ibv_query_gid_ex(context, portNum, gidIndex, entry, flags, ibv_gid_entry.sizeof());
    }

    /**
     * {@code ibv_query_gid_table}: every valid GID entry of every port, through the exported
     * {@code _ibv_query_gid_table}.
     *
     * @param context    {@code struct ibv_context *}
     * @param entries    {@code struct ibv_gid_entry[maxEntries]}, at least {@code maxEntries × sizeof}
     * @param maxEntries capacity of {@code entries}
     * @param flags      0
     * @return the number of entries written, or a negative errno
     */
    public static long ibv_query_gid_table(MemorySegment context, MemorySegment entries, long maxEntries, int flags) {
        String verb = "ibv_query_gid_table";
        PointerArgs.handle(context, verb, "context");
        PointerArgs.array(entries, maxEntries, ibv_gid_entry.sizeof(), "struct ibv_gid_entry", verb, "entries", "max_entries");
        return verbs_h._ibv_query_gid_table(context, entries, maxEntries, flags, ibv_gid_entry.sizeof());
    }

    /**
     * {@code ibv_create_flow}: attaches a steering rule to a QP. The segment must hold the
     * {@code ibv_flow_attr} and all {@code num_of_specs} specs that follow it (each as long as its
     * {@code hdr.size} says).
     *
     * @param qp   {@code struct ibv_qp *}
     * @param flow {@code struct ibv_flow_attr *} followed by its specs
     * @return {@code struct ibv_flow *}, or NULL with {@link Native#lastErrno()} set
     * @throws IllegalArgumentException a NULL or heap argument, or {@code flow} shorter than its specs
     * @throws UnsupportedVerbException the provider has no ibv_create_flow
     */
    public static MemorySegment ibv_create_flow(MemorySegment qp, MemorySegment flow) {
        String verb = "ibv_create_flow";
        long q = PointerArgs.handle(qp, verb, "qp");
        PointerArgs.struct(flow, ibv_flow_attr.sizeof(), "struct ibv_flow_attr", verb, "flow");
        long end = ibv_flow_attr.sizeof();
        int specs = Byte.toUnsignedInt(ibv_flow_attr.num_of_specs(flow));
        for (int i = 0; i < specs; i++) {
            if (end + ibv_flow_spec.hdr.sizeof() > flow.byteSize()) {
                end += ibv_flow_spec.hdr.sizeof();
                break;
            }
            end += Short.toUnsignedInt(flow.get(JAVA_SHORT, end + ibv_flow_spec.hdr.size$OFFSET));
        }
        if (end > flow.byteSize()) {
            throw new IllegalArgumentException(verb + ": flow has " + flow.byteSize() + " bytes; its " + specs
                    + " specs (num_of_specs) need at least " + end);
        }
        long ctx = contextOf(q, ibv_qp.context$OFFSET, verb, "qp");
        return create(verb, requireVerbsOp(ctx, verbs_context.ibv_create_flow$OFFSET, verb, "ibv_create_flow"), qp, flow);
    }

    /**
     * {@code ibv_destroy_flow}.
     *
     * @param flowId {@code struct ibv_flow *}
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no ibv_destroy_flow
     */
    public static int ibv_destroy_flow(MemorySegment flowId) {
        return destroy("ibv_destroy_flow", flowId, "flow_id", ibv_flow.context$OFFSET, verbs_context.ibv_destroy_flow$OFFSET,
                "ibv_destroy_flow");
    }

    /**
     * {@code ibv_create_flow_action_esp}.
     *
     * @param ctx {@code struct ibv_context *}
     * @param esp {@code struct ibv_flow_action_esp_attr *}, at least its {@code sizeof} (the structs it points to are unchecked)
     * @return {@code struct ibv_flow_action *}, or NULL with {@link Native#lastErrno()} set
     * @throws UnsupportedVerbException the provider has no create_flow_action_esp
     */
    public static MemorySegment ibv_create_flow_action_esp(MemorySegment ctx, MemorySegment esp) {
        return createFromContext("ibv_create_flow_action_esp", ctx, "ctx", esp, "esp", ibv_flow_action_esp_attr.sizeof(),
                "struct ibv_flow_action_esp_attr", verbs_context.create_flow_action_esp$OFFSET, "create_flow_action_esp");
    }

    /**
     * {@code ibv_modify_flow_action_esp}.
     *
     * @param action {@code struct ibv_flow_action *}
     * @param esp    {@code struct ibv_flow_action_esp_attr *}, at least its {@code sizeof}
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no modify_flow_action_esp
     */
    public static int ibv_modify_flow_action_esp(MemorySegment action, MemorySegment esp) {
        return withAttr("ibv_modify_flow_action_esp", action, "action", ibv_flow_action.context$OFFSET, esp, "esp",
                ibv_flow_action_esp_attr.sizeof(), "struct ibv_flow_action_esp_attr",
                verbs_context.modify_flow_action_esp$OFFSET, "modify_flow_action_esp");
    }

    /**
     * {@code ibv_destroy_flow_action}.
     *
     * @param action {@code struct ibv_flow_action *}
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no destroy_flow_action
     */
    public static int ibv_destroy_flow_action(MemorySegment action) {
        return destroy("ibv_destroy_flow_action", action, "action", ibv_flow_action.context$OFFSET,
                verbs_context.destroy_flow_action$OFFSET, "destroy_flow_action");
    }

    /**
     * {@code ibv_open_xrcd}: opens an XRC domain.
     *
     * @param context      {@code struct ibv_context *}
     * @param xrcdInitAttr {@code struct ibv_xrcd_init_attr *}, at least its {@code sizeof}
     * @return {@code struct ibv_xrcd *}, or NULL with {@link Native#lastErrno()} set
     * @throws UnsupportedVerbException the provider has no open_xrcd
     */
    public static MemorySegment ibv_open_xrcd(MemorySegment context, MemorySegment xrcdInitAttr) {
        return createFromContext("ibv_open_xrcd", context, "context", xrcdInitAttr, "xrcd_init_attr",
                ibv_xrcd_init_attr.sizeof(), "struct ibv_xrcd_init_attr", verbs_context.open_xrcd$OFFSET, "open_xrcd");
    }

    /**
     * {@code ibv_close_xrcd}. (The header calls {@code close_xrcd} without checking that the
     * provider has it; here an absent op throws.)
     *
     * @param xrcd {@code struct ibv_xrcd *}
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no close_xrcd
     */
    public static int ibv_close_xrcd(MemorySegment xrcd) {
        return destroy("ibv_close_xrcd", xrcd, "xrcd", ibv_xrcd.context$OFFSET, verbs_context.close_xrcd$OFFSET, "close_xrcd");
    }

    /**
     * {@code ibv_advise_mr}: advice (such as prefetch) about ranges of on-demand-paging MRs.
     *
     * @param pd     {@code struct ibv_pd *}
     * @param advice {@code enum ibv_advise_mr_advice}
     * @param flags  {@code IBV_ADVISE_MR_FLAG_*}
     * @param sgList {@code struct ibv_sge[numSge]}, at least {@code numSge × sizeof(struct ibv_sge)}
     * @param numSge entries, as an unsigned 32-bit count
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no advise_mr
     */
    public static int ibv_advise_mr(MemorySegment pd, int advice, int flags, MemorySegment sgList, int numSge) {
        String verb = "ibv_advise_mr";
        long p = PointerArgs.handle(pd, verb, "pd");
        PointerArgs.array(sgList, Integer.toUnsignedLong(numSge), ibv_sge.sizeof(), "struct ibv_sge", verb, "sg_list", "num_sge");
        long fn = requireVerbsOp(contextOf(p, ibv_pd.context$OFFSET, verb, "pd"), verbs_context.advise_mr$OFFSET, verb,
                "advise_mr");
        try {
            return (int) SlowOps.ADVISE_MR.invokeExact(MemorySegment.ofAddress(fn), pd, advice, flags, sgList, numSge);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_alloc_dm}: allocates device memory.
     *
     * @param context {@code struct ibv_context *}
     * @param attr    {@code struct ibv_alloc_dm_attr *}, at least its {@code sizeof}
     * @return {@code struct ibv_dm *}, or NULL with {@link Native#lastErrno()} set
     * @throws UnsupportedVerbException the provider has no alloc_dm
     */
    public static MemorySegment ibv_alloc_dm(MemorySegment context, MemorySegment attr) {
        return createFromContext("ibv_alloc_dm", context, "context", attr, "attr", ibv_alloc_dm_attr.sizeof(),
                "struct ibv_alloc_dm_attr", verbs_context.alloc_dm$OFFSET, "alloc_dm");
    }

    /**
     * {@code ibv_free_dm}.
     *
     * @param dm {@code struct ibv_dm *}
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no free_dm
     */
    public static int ibv_free_dm(MemorySegment dm) {
        return destroy("ibv_free_dm", dm, "dm", ibv_dm.context$OFFSET, verbs_context.free_dm$OFFSET, "free_dm");
    }

    /**
     * {@code ibv_memcpy_to_dm}: copies host memory into device memory ({@code dm->memcpy_to_dm}).
     *
     * @param dm       {@code struct ibv_dm *}
     * @param dmOffset offset into the device memory
     * @param hostAddr the source, at least {@code length} bytes
     * @param length   bytes
     * @return 0, or an errno
     * @throws UnsupportedVerbException the DM has no memcpy_to_dm
     */
    public static int ibv_memcpy_to_dm(MemorySegment dm, long dmOffset, MemorySegment hostAddr, long length) {
        String verb = "ibv_memcpy_to_dm";
        long d = PointerArgs.handle(dm, verb, "dm");
        PointerArgs.bytes(hostAddr, length, verb, "host_addr", "length");
        long fn = slot(d, ibv_dm.memcpy_to_dm$OFFSET, verb, "memcpy_to_dm");
        try {
            return (int) SlowOps.MEMCPY_TO_DM.invokeExact(MemorySegment.ofAddress(fn), dm, dmOffset, hostAddr, length);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_memcpy_from_dm}: copies device memory into host memory ({@code dm->memcpy_from_dm}).
     *
     * @param hostAddr the destination, at least {@code length} bytes
     * @param dm       {@code struct ibv_dm *}
     * @param dmOffset offset into the device memory
     * @param length   bytes
     * @return 0, or an errno
     * @throws UnsupportedVerbException the DM has no memcpy_from_dm
     */
    public static int ibv_memcpy_from_dm(MemorySegment hostAddr, MemorySegment dm, long dmOffset, long length) {
        String verb = "ibv_memcpy_from_dm";
        long d = PointerArgs.handle(dm, verb, "dm");
        PointerArgs.bytes(hostAddr, length, verb, "host_addr", "length");
        long fn = slot(d, ibv_dm.memcpy_from_dm$OFFSET, verb, "memcpy_from_dm");
        try {
            return (int) SlowOps.MEMCPY_FROM_DM.invokeExact(MemorySegment.ofAddress(fn), hostAddr, dm, dmOffset, length);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_alloc_null_mr}: an MR whose writes are dropped and reads return zeros.
     *
     * @param pd {@code struct ibv_pd *}
     * @return {@code struct ibv_mr *}, or NULL with {@link Native#lastErrno()} set
     * @throws UnsupportedVerbException the provider has no alloc_null_mr
     */
    public static MemorySegment ibv_alloc_null_mr(MemorySegment pd) {
        String verb = "ibv_alloc_null_mr";
        long p = PointerArgs.handle(pd, verb, "pd");
        long fn = requireVerbsOp(contextOf(p, ibv_pd.context$OFFSET, verb, "pd"), verbs_context.alloc_null_mr$OFFSET, verb,
                "alloc_null_mr");
        try {
            return (MemorySegment) SlowOps.CREATE_FROM_PARENT.invokeExact(MemorySegment.ofAddress(fn), Native.errnoState(), pd);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_reg_dm_mr}: registers device memory as an MR.
     *
     * @param pd       {@code struct ibv_pd *}
     * @param dm       {@code struct ibv_dm *}
     * @param dmOffset offset into the device memory
     * @param length   bytes
     * @param access   {@code IBV_ACCESS_*} flags (with {@code IBV_ACCESS_ZERO_BASED})
     * @return {@code struct ibv_mr *}, or NULL with {@link Native#lastErrno()} set
     * @throws UnsupportedVerbException the provider has no reg_dm_mr
     */
    public static MemorySegment ibv_reg_dm_mr(MemorySegment pd, MemorySegment dm, long dmOffset, long length, int access) {
        String verb = "ibv_reg_dm_mr";
        long p = PointerArgs.handle(pd, verb, "pd");
        PointerArgs.handle(dm, verb, "dm");
        long fn = requireVerbsOp(contextOf(p, ibv_pd.context$OFFSET, verb, "pd"), verbs_context.reg_dm_mr$OFFSET, verb,
                "reg_dm_mr");
        try {
            return (MemorySegment) SlowOps.REG_DM_MR.invokeExact(MemorySegment.ofAddress(fn), Native.errnoState(), pd, dm,
                    dmOffset, length, access);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_modify_cq}: CQ moderation.
     *
     * @param cq   {@code struct ibv_cq *}
     * @param attr {@code struct ibv_modify_cq_attr *}, at least its {@code sizeof}
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no modify_cq
     */
    public static int ibv_modify_cq(MemorySegment cq, MemorySegment attr) {
        return withAttr("ibv_modify_cq", cq, "cq", ibv_cq.context$OFFSET, attr, "attr", ibv_modify_cq_attr.sizeof(),
                "struct ibv_modify_cq_attr", verbs_context.modify_cq$OFFSET, "modify_cq");
    }

    /**
     * {@code ibv_create_srq_ex}: {@code ibv_create_srq} when the attributes ask for nothing more than
     * a basic SRQ on a PD (as the header decides), {@code verbs_context->create_srq_ex} otherwise.
     *
     * @param context        {@code struct ibv_context *}
     * @param srqInitAttrEx  {@code struct ibv_srq_init_attr_ex *}, at least its {@code sizeof}
     * @return {@code struct ibv_srq *}, or NULL with {@link Native#lastErrno()} set
     * @throws IllegalArgumentException a NULL or heap argument, {@code srqInitAttrEx} too small, or its {@code pd} NULL
     * @throws UnsupportedVerbException the provider has no create_srq_ex and the attributes need it
     */
    public static MemorySegment ibv_create_srq_ex(MemorySegment context, MemorySegment srqInitAttrEx) {
        String verb = "ibv_create_srq_ex";
        long ctx = PointerArgs.handle(context, verb, "context");
        PointerArgs.struct(srqInitAttrEx, ibv_srq_init_attr_ex.sizeof(), "struct ibv_srq_init_attr_ex", verb,
                "srq_init_attr_ex");
        int mask = ibv_srq_init_attr_ex.comp_mask(srqInitAttrEx);
        int pdAndType = verbs_h.IBV_SRQ_INIT_ATTR_PD | verbs_h.IBV_SRQ_INIT_ATTR_TYPE;
        if ((mask & ~pdAndType) == 0 && (mask & verbs_h.IBV_SRQ_INIT_ATTR_PD) != 0
                && ((mask & verbs_h.IBV_SRQ_INIT_ATTR_TYPE) == 0
                    || ibv_srq_init_attr_ex.srq_type(srqInitAttrEx) == verbs_h.IBV_SRQT_BASIC)) {
            MemorySegment pd = ibv_srq_init_attr_ex.pd(srqInitAttrEx);
            PointerArgs.present(pd.address(), verb, "srq_init_attr_ex->pd is NULL");
            return verbs_h.ibv_create_srq(pd, srqInitAttrEx);
        }
        return create(verb, requireVerbsOp(ctx, verbs_context.create_srq_ex$OFFSET, verb, "create_srq_ex"), context,
                srqInitAttrEx);
    }

    /**
     * {@code ibv_get_srq_num}: the SRQ number of an XRC SRQ.
     *
     * @param srq    {@code struct ibv_srq *}
     * @param srqNum {@code uint32_t *} (4 bytes) to fill
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no get_srq_num
     */
    public static int ibv_get_srq_num(MemorySegment srq, MemorySegment srqNum) {
        return withAttr("ibv_get_srq_num", srq, "srq", ibv_srq.context$OFFSET, srqNum, "srq_num", JAVA_INT.byteSize(),
                "uint32_t", verbs_context.get_srq_num$OFFSET, "get_srq_num");
    }

    /**
     * {@code ibv_post_srq_ops}: tag-matching operations on an SRQ. When the provider lacks the op,
     * {@code *badOp} is set to {@code op} (as the header does) before the exception.
     *
     * @param srq   {@code struct ibv_srq *}
     * @param op    {@code struct ibv_ops_wr *}, at least its {@code sizeof}
     * @param badOp {@code struct ibv_ops_wr **} (8 bytes)
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no post_srq_ops
     */
    public static int ibv_post_srq_ops(MemorySegment srq, MemorySegment op, MemorySegment badOp) {
        String verb = "ibv_post_srq_ops";
        long s = PointerArgs.handle(srq, verb, "srq");
        long o = PointerArgs.struct(op, ibv_ops_wr.sizeof(), "struct ibv_ops_wr", verb, "op");
        PointerArgs.struct(badOp, POINTER_SIZE, "struct ibv_ops_wr *", verb, "bad_op");
        long fn = verbsOp(contextOf(s, ibv_srq.context$OFFSET, verb, "srq"), verbs_context.post_srq_ops$OFFSET);
        if (fn == 0) {
            badOp.set(JAVA_LONG, 0, o);
            throw new UnsupportedVerbException(verb, "the provider has no post_srq_ops");
        }
        return intCall(SlowOps.WITH_TWO, fn, srq, op, badOp);
    }

    /**
     * {@code ibv_alloc_td}: allocates a thread domain.
     *
     * @param context  {@code struct ibv_context *}
     * @param initAttr {@code struct ibv_td_init_attr *}, at least its {@code sizeof}
     * @return {@code struct ibv_td *}, or NULL with {@link Native#lastErrno()} set
     * @throws UnsupportedVerbException the provider has no alloc_td
     */
    public static MemorySegment ibv_alloc_td(MemorySegment context, MemorySegment initAttr) {
        return createFromContext("ibv_alloc_td", context, "context", initAttr, "init_attr", ibv_td_init_attr.sizeof(),
                "struct ibv_td_init_attr", verbs_context.alloc_td$OFFSET, "alloc_td");
    }

    /**
     * {@code ibv_dealloc_td}.
     *
     * @param td {@code struct ibv_td *}
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no dealloc_td
     */
    public static int ibv_dealloc_td(MemorySegment td) {
        return destroy("ibv_dealloc_td", td, "td", ibv_td.context$OFFSET, verbs_context.dealloc_td$OFFSET, "dealloc_td");
    }

    /**
     * {@code ibv_alloc_parent_domain}: a PD with a thread domain and custom allocators.
     *
     * @param context {@code struct ibv_context *}
     * @param attr    {@code struct ibv_parent_domain_init_attr *}, at least its {@code sizeof}; the allocator
     *                callbacks it names must be C functions that stay valid for the life of the PD
     * @return {@code struct ibv_pd *}, or NULL with {@link Native#lastErrno()} set
     * @throws UnsupportedVerbException the provider has no alloc_parent_domain
     */
    public static MemorySegment ibv_alloc_parent_domain(MemorySegment context, MemorySegment attr) {
        return createFromContext("ibv_alloc_parent_domain", context, "context", attr, "attr",
                ibv_parent_domain_init_attr.sizeof(), "struct ibv_parent_domain_init_attr",
                verbs_context.alloc_parent_domain$OFFSET, "alloc_parent_domain");
    }

    /**
     * {@code ibv_query_rt_values_ex}: real-time values of the device (such as its clock).
     *
     * @param context {@code struct ibv_context *}
     * @param values  {@code struct ibv_values_ex *}, at least its {@code sizeof}
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no query_rt_values
     */
    public static int ibv_query_rt_values_ex(MemorySegment context, MemorySegment values) {
        String verb = "ibv_query_rt_values_ex";
        long ctx = PointerArgs.handle(context, verb, "context");
        PointerArgs.struct(values, ibv_values_ex.sizeof(), "struct ibv_values_ex", verb, "values");
        return intCall(SlowOps.WITH_ATTR, requireVerbsOp(ctx, verbs_context.query_rt_values$OFFSET, verb, "query_rt_values"),
                context, values);
    }

    /**
     * {@code ibv_open_qp}: opens a shareable (XRC target) QP.
     *
     * @param context    {@code struct ibv_context *}
     * @param qpOpenAttr {@code struct ibv_qp_open_attr *}, at least its {@code sizeof}
     * @return {@code struct ibv_qp *}, or NULL with {@link Native#lastErrno()} set
     * @throws UnsupportedVerbException the provider has no open_qp
     */
    public static MemorySegment ibv_open_qp(MemorySegment context, MemorySegment qpOpenAttr) {
        return createFromContext("ibv_open_qp", context, "context", qpOpenAttr, "qp_open_attr", ibv_qp_open_attr.sizeof(),
                "struct ibv_qp_open_attr", verbs_context.open_qp$OFFSET, "open_qp");
    }

    /**
     * {@code ibv_modify_qp_rate_limit}.
     *
     * @param qp   {@code struct ibv_qp *}
     * @param attr {@code struct ibv_qp_rate_limit_attr *}, at least its {@code sizeof}
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no modify_qp_rate_limit
     */
    public static int ibv_modify_qp_rate_limit(MemorySegment qp, MemorySegment attr) {
        return withAttr("ibv_modify_qp_rate_limit", qp, "qp", ibv_qp.context$OFFSET, attr, "attr",
                ibv_qp_rate_limit_attr.sizeof(), "struct ibv_qp_rate_limit_attr", verbs_context.modify_qp_rate_limit$OFFSET,
                "modify_qp_rate_limit");
    }

    /**
     * {@code ibv_create_wq}: creates a work queue and, as the header does, sets its
     * {@code wq_context}, zeroes {@code events_completed} and initializes its mutex and condition.
     *
     * @param context    {@code struct ibv_context *}
     * @param wqInitAttr {@code struct ibv_wq_init_attr *}, at least its {@code sizeof}
     * @return {@code struct ibv_wq *}, or NULL with {@link Native#lastErrno()} set
     * @throws UnsupportedVerbException the provider has no create_wq
     */
    public static MemorySegment ibv_create_wq(MemorySegment context, MemorySegment wqInitAttr) {
        MemorySegment wq = createFromContext("ibv_create_wq", context, "context", wqInitAttr, "wq_init_attr",
                ibv_wq_init_attr.sizeof(), "struct ibv_wq_init_attr", verbs_context.create_wq$OFFSET, "create_wq");
        long w = wq.address();
        if (w != 0) {
            ALL.set(WORD, w + ibv_wq.wq_context$OFFSET, ibv_wq_init_attr.wq_context(wqInitAttr).address());
            ALL.set(JAVA_INT, w + ibv_wq.events_completed$OFFSET, 0);
            try {
                int unused = (int) Libc.PTHREAD_MUTEX_INIT.invokeExact(MemorySegment.ofAddress(w + ibv_wq.mutex$OFFSET),
                        MemorySegment.NULL);
                unused = (int) Libc.PTHREAD_COND_INIT.invokeExact(MemorySegment.ofAddress(w + ibv_wq.cond$OFFSET),
                        MemorySegment.NULL);
            } catch (Throwable t) {
                throw rethrow(t);
            }
        }
        return wq;
    }

    /**
     * {@code ibv_modify_wq}.
     *
     * @param wq     {@code struct ibv_wq *}
     * @param wqAttr {@code struct ibv_wq_attr *}, at least its {@code sizeof}
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no modify_wq
     */
    public static int ibv_modify_wq(MemorySegment wq, MemorySegment wqAttr) {
        return withAttr("ibv_modify_wq", wq, "wq", ibv_wq.context$OFFSET, wqAttr, "wq_attr", ibv_wq_attr.sizeof(),
                "struct ibv_wq_attr", verbs_context.modify_wq$OFFSET, "modify_wq");
    }

    /**
     * {@code ibv_destroy_wq}.
     *
     * @param wq {@code struct ibv_wq *}
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no destroy_wq
     */
    public static int ibv_destroy_wq(MemorySegment wq) {
        return destroy("ibv_destroy_wq", wq, "wq", ibv_wq.context$OFFSET, verbs_context.destroy_wq$OFFSET, "destroy_wq");
    }

    /**
     * {@code ibv_create_rwq_ind_table}: a receive WQ indirection table (RSS).
     *
     * @param context  {@code struct ibv_context *}
     * @param initAttr {@code struct ibv_rwq_ind_table_init_attr *}, at least its {@code sizeof}; its
     *                 {@code ind_tbl} must hold {@code 1 << log_ind_tbl_size} WQ pointers (unchecked)
     * @return {@code struct ibv_rwq_ind_table *}, or NULL with {@link Native#lastErrno()} set
     * @throws UnsupportedVerbException the provider has no create_rwq_ind_table
     */
    public static MemorySegment ibv_create_rwq_ind_table(MemorySegment context, MemorySegment initAttr) {
        return createFromContext("ibv_create_rwq_ind_table", context, "context", initAttr, "init_attr",
                ibv_rwq_ind_table_init_attr.sizeof(), "struct ibv_rwq_ind_table_init_attr",
                verbs_context.create_rwq_ind_table$OFFSET, "create_rwq_ind_table");
    }

    /**
     * {@code ibv_destroy_rwq_ind_table}.
     *
     * @param rwqIndTable {@code struct ibv_rwq_ind_table *}
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no destroy_rwq_ind_table
     */
    public static int ibv_destroy_rwq_ind_table(MemorySegment rwqIndTable) {
        return destroy("ibv_destroy_rwq_ind_table", rwqIndTable, "rwq_ind_table", ibv_rwq_ind_table.context$OFFSET,
                verbs_context.destroy_rwq_ind_table$OFFSET, "destroy_rwq_ind_table");
    }

    /**
     * {@code ibv_is_qpt_supported}: whether bit {@code qpt} is set in {@code caps} (a
     * {@code supported_qpts} mask). A {@code qpt} outside [0, 31], undefined in C, gives 0.
     *
     * @param caps the capability mask
     * @param qpt  {@code enum ibv_qp_type}
     * @return 1 when supported, 0 otherwise (as the C int)
     */
    public static int ibv_is_qpt_supported(int caps, int qpt) {
        return qpt >= 0 && qpt < Integer.SIZE && (caps & (1 << qpt)) != 0 ? 1 : 0;
    }

    /**
     * {@code ibv_create_counters}.
     *
     * @param context  {@code struct ibv_context *}
     * @param initAttr {@code struct ibv_counters_init_attr *}, at least its {@code sizeof}
     * @return {@code struct ibv_counters *}, or NULL with {@link Native#lastErrno()} set
     * @throws UnsupportedVerbException the provider has no create_counters
     */
    public static MemorySegment ibv_create_counters(MemorySegment context, MemorySegment initAttr) {
        return createFromContext("ibv_create_counters", context, "context", initAttr, "init_attr",
                ibv_counters_init_attr.sizeof(), "struct ibv_counters_init_attr", verbs_context.create_counters$OFFSET,
                "create_counters");
    }

    /**
     * {@code ibv_destroy_counters}.
     *
     * @param counters {@code struct ibv_counters *}
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no destroy_counters
     */
    public static int ibv_destroy_counters(MemorySegment counters) {
        return destroy("ibv_destroy_counters", counters, "counters", ibv_counters.context$OFFSET,
                verbs_context.destroy_counters$OFFSET, "destroy_counters");
    }

    /**
     * {@code ibv_attach_counters_point_flow}.
     *
     * @param counters {@code struct ibv_counters *}
     * @param attr     {@code struct ibv_counter_attach_attr *}, at least its {@code sizeof}
     * @param flow     {@code struct ibv_flow *}, or NULL where the provider allows it
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no attach_counters_point_flow
     */
    public static int ibv_attach_counters_point_flow(MemorySegment counters, MemorySegment attr, MemorySegment flow) {
        String verb = "ibv_attach_counters_point_flow";
        long c = PointerArgs.handle(counters, verb, "counters");
        PointerArgs.struct(attr, ibv_counter_attach_attr.sizeof(), "struct ibv_counter_attach_attr", verb, "attr");
        PointerArgs.optionalHandle(flow, verb, "flow");
        long fn = requireVerbsOp(contextOf(c, ibv_counters.context$OFFSET, verb, "counters"),
                verbs_context.attach_counters_point_flow$OFFSET, verb, "attach_counters_point_flow");
        return intCall(SlowOps.WITH_TWO, fn, counters, attr, flow);
    }

    /**
     * {@code ibv_read_counters}.
     *
     * @param counters      {@code struct ibv_counters *}
     * @param countersValue {@code uint64_t[ncounters]}, at least {@code ncounters × 8} bytes
     * @param ncounters     entries, as an unsigned 32-bit count
     * @param flags         {@code IBV_READ_COUNTERS_ATTR_*}
     * @return 0, or an errno
     * @throws UnsupportedVerbException the provider has no read_counters
     */
    public static int ibv_read_counters(MemorySegment counters, MemorySegment countersValue, int ncounters, int flags) {
        String verb = "ibv_read_counters";
        long c = PointerArgs.handle(counters, verb, "counters");
        PointerArgs.array(countersValue, Integer.toUnsignedLong(ncounters), JAVA_LONG.byteSize(), "uint64_t", verb,
                "counters_value", "ncounters");
        long fn = requireVerbsOp(contextOf(c, ibv_counters.context$OFFSET, verb, "counters"),
                verbs_context.read_counters$OFFSET, verb, "read_counters");
        try {
            return (int) SlowOps.READ_COUNTERS.invokeExact(MemorySegment.ofAddress(fn), counters, countersValue, ncounters,
                    flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_flow_label_to_udp_sport}: the RoCE v2 UDP source port for a GRH flow label.
     *
     * @param fl the flow label (20 bits)
     * @return the port, in [0xC000, 0xFFFF] (the C {@code uint16_t}, here as an int)
     */
    public static int ibv_flow_label_to_udp_sport(int fl) {
        int low = fl & 0x03FFF;
        int high = fl & 0xFC000;
        low ^= high >>> 14;
        return (low | 0xC000) & 0xFFFF;
    }

    /**
     * {@code ibv_qp_to_qp_ex} (exported; here for completeness beside the {@code ibv_wr_*} calls).
     *
     * @param qp {@code struct ibv_qp *}, not NULL (C reads it)
     * @return {@code struct ibv_qp_ex *}, or NULL when the QP was not created for the new post API
     * @throws IllegalArgumentException a NULL or heap {@code qp}
     */
    public static MemorySegment ibv_qp_to_qp_ex(MemorySegment qp) {
        PointerArgs.handle(qp, "ibv_qp_to_qp_ex", "qp");
        return verbs_h.ibv_qp_to_qp_ex(qp);
    }

    // ---- ibv_qp_ex: the work-request builder API ----

    /**
     * {@code ibv_wr_start}: opens a batch; the provider holds the send queue's lock until
     * {@link #ibv_wr_complete} or {@link #ibv_wr_abort}, which the same thread must call. An
     * ordinary downcall (see the class comment).
     *
     * @param qp {@code struct ibv_qp_ex *}
     */
    public static void ibv_wr_start(MemorySegment qp) {
        try {
            QpExOps.WR_START.invokeExact(qpOp(qp, ibv_qp_ex.wr_start$OFFSET, "ibv_wr_start"), qp);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_complete}: posts the work requests built since {@link #ibv_wr_start}.
     *
     * @param qp {@code struct ibv_qp_ex *}
     * @return 0, or an errno
     */
    public static int ibv_wr_complete(MemorySegment qp) {
        try {
            return (int) QpExOps.WR_COMPLETE.invokeExact(qpOp(qp, ibv_qp_ex.wr_complete$OFFSET, "ibv_wr_complete"), qp);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_abort}: drops the work requests built since {@link #ibv_wr_start}.
     *
     * @param qp {@code struct ibv_qp_ex *}
     */
    public static void ibv_wr_abort(MemorySegment qp) {
        try {
            QpExOps.WR_ABORT.invokeExact(qpOp(qp, ibv_qp_ex.wr_abort$OFFSET, "ibv_wr_abort"), qp);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_rdma_write}.
     *
     * @param qp         {@code struct ibv_qp_ex *}
     * @param rkey       remote key
     * @param remoteAddr remote virtual address
     */
    public static void ibv_wr_rdma_write(MemorySegment qp, int rkey, long remoteAddr) {
        try {
            QpExOps.WR_RDMA.invokeExact(qpOp(qp, ibv_qp_ex.wr_rdma_write$OFFSET, "ibv_wr_rdma_write"), qp, rkey, remoteAddr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_rdma_write_imm}.
     *
     * @param qp         {@code struct ibv_qp_ex *}
     * @param rkey       remote key
     * @param remoteAddr remote virtual address
     * @param immData    immediate data, already in network byte order
     */
    public static void ibv_wr_rdma_write_imm(MemorySegment qp, int rkey, long remoteAddr, int immData) {
        try {
            QpExOps.WR_RDMA_WRITE_IMM.invokeExact(qpOp(qp, ibv_qp_ex.wr_rdma_write_imm$OFFSET, "ibv_wr_rdma_write_imm"), qp,
                    rkey, remoteAddr, immData);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_rdma_read}.
     *
     * @param qp         {@code struct ibv_qp_ex *}
     * @param rkey       remote key
     * @param remoteAddr remote virtual address
     */
    public static void ibv_wr_rdma_read(MemorySegment qp, int rkey, long remoteAddr) {
        try {
            QpExOps.WR_RDMA.invokeExact(qpOp(qp, ibv_qp_ex.wr_rdma_read$OFFSET, "ibv_wr_rdma_read"), qp, rkey, remoteAddr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_atomic_cmp_swp}.
     *
     * @param qp         {@code struct ibv_qp_ex *}
     * @param rkey       remote key
     * @param remoteAddr remote 8-byte aligned address
     * @param compare    expected value
     * @param swap       new value
     */
    public static void ibv_wr_atomic_cmp_swp(MemorySegment qp, int rkey, long remoteAddr, long compare, long swap) {
        try {
            QpExOps.WR_ATOMIC_CMP_SWP.invokeExact(qpOp(qp, ibv_qp_ex.wr_atomic_cmp_swp$OFFSET, "ibv_wr_atomic_cmp_swp"), qp,
                    rkey, remoteAddr, compare, swap);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_atomic_fetch_add}.
     *
     * @param qp         {@code struct ibv_qp_ex *}
     * @param rkey       remote key
     * @param remoteAddr remote 8-byte aligned address
     * @param add        the addend
     */
    public static void ibv_wr_atomic_fetch_add(MemorySegment qp, int rkey, long remoteAddr, long add) {
        try {
            QpExOps.WR_ATOMIC_FETCH_ADD.invokeExact(qpOp(qp, ibv_qp_ex.wr_atomic_fetch_add$OFFSET, "ibv_wr_atomic_fetch_add"),
                    qp, rkey, remoteAddr, add);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_atomic_write}.
     *
     * @param qp         {@code struct ibv_qp_ex *}
     * @param rkey       remote key
     * @param remoteAddr remote address
     * @param atomicWr   the 8 bytes to write (the segment must have at least 8)
     */
    public static void ibv_wr_atomic_write(MemorySegment qp, int rkey, long remoteAddr, MemorySegment atomicWr) {
        MemorySegment fn = qpOp(qp, ibv_qp_ex.wr_atomic_write$OFFSET, "ibv_wr_atomic_write");
        PointerArgs.struct(atomicWr, JAVA_LONG.byteSize(), "uint64_t", "ibv_wr_atomic_write", "atomic_wr");
        try {
            QpExOps.WR_ATOMIC_WRITE.invokeExact(fn, qp, rkey, remoteAddr, atomicWr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_bind_mw}.
     *
     * @param qp       {@code struct ibv_qp_ex *}
     * @param mw       {@code struct ibv_mw *}
     * @param rkey     the new rkey
     * @param bindInfo {@code const struct ibv_mw_bind_info *}, at least its {@code sizeof}
     */
    public static void ibv_wr_bind_mw(MemorySegment qp, MemorySegment mw, int rkey, MemorySegment bindInfo) {
        MemorySegment fn = qpOp(qp, ibv_qp_ex.wr_bind_mw$OFFSET, "ibv_wr_bind_mw");
        PointerArgs.handle(mw, "ibv_wr_bind_mw", "mw");
        PointerArgs.struct(bindInfo, ibv_mw_bind_info.sizeof(), "struct ibv_mw_bind_info", "ibv_wr_bind_mw", "bind_info");
        try {
            QpExOps.WR_BIND_MW.invokeExact(fn, qp, mw, rkey, bindInfo);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_local_inv}.
     *
     * @param qp             {@code struct ibv_qp_ex *}
     * @param invalidateRkey the rkey to invalidate
     */
    public static void ibv_wr_local_inv(MemorySegment qp, int invalidateRkey) {
        try {
            QpExOps.WR_WITH_U32.invokeExact(qpOp(qp, ibv_qp_ex.wr_local_inv$OFFSET, "ibv_wr_local_inv"), qp, invalidateRkey);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_send}.
     *
     * @param qp {@code struct ibv_qp_ex *}
     */
    public static void ibv_wr_send(MemorySegment qp) {
        try {
            QpExOps.WR_SEND.invokeExact(qpOp(qp, ibv_qp_ex.wr_send$OFFSET, "ibv_wr_send"), qp);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_send_imm}.
     *
     * @param qp      {@code struct ibv_qp_ex *}
     * @param immData immediate data, network byte order
     */
    public static void ibv_wr_send_imm(MemorySegment qp, int immData) {
        try {
            QpExOps.WR_WITH_U32.invokeExact(qpOp(qp, ibv_qp_ex.wr_send_imm$OFFSET, "ibv_wr_send_imm"), qp, immData);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_send_inv}.
     *
     * @param qp             {@code struct ibv_qp_ex *}
     * @param invalidateRkey the remote rkey to invalidate
     */
    public static void ibv_wr_send_inv(MemorySegment qp, int invalidateRkey) {
        try {
            QpExOps.WR_WITH_U32.invokeExact(qpOp(qp, ibv_qp_ex.wr_send_inv$OFFSET, "ibv_wr_send_inv"), qp, invalidateRkey);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_send_tso}.
     *
     * @param qp    {@code struct ibv_qp_ex *}
     * @param hdr   the header bytes, at least {@code hdrSz} of them
     * @param hdrSz header size (unsigned 16 bits)
     * @param mss   maximum segment size
     */
    public static void ibv_wr_send_tso(MemorySegment qp, MemorySegment hdr, short hdrSz, short mss) {
        MemorySegment fn = qpOp(qp, ibv_qp_ex.wr_send_tso$OFFSET, "ibv_wr_send_tso");
        PointerArgs.bytes(hdr, Short.toUnsignedLong(hdrSz), "ibv_wr_send_tso", "hdr", "hdr_sz");
        try {
            QpExOps.WR_SEND_TSO.invokeExact(fn, qp, hdr, hdrSz, mss);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_set_ud_addr}.
     *
     * @param qp         {@code struct ibv_qp_ex *}
     * @param ah         {@code struct ibv_ah *}
     * @param remoteQpn  destination QP number
     * @param remoteQkey destination Q_Key
     */
    public static void ibv_wr_set_ud_addr(MemorySegment qp, MemorySegment ah, int remoteQpn, int remoteQkey) {
        MemorySegment fn = qpOp(qp, ibv_qp_ex.wr_set_ud_addr$OFFSET, "ibv_wr_set_ud_addr");
        PointerArgs.handle(ah, "ibv_wr_set_ud_addr", "ah");
        try {
            QpExOps.WR_SET_UD_ADDR.invokeExact(fn, qp, ah, remoteQpn, remoteQkey);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_set_xrc_srqn}.
     *
     * @param qp         {@code struct ibv_qp_ex *}
     * @param remoteSrqn the remote XRC SRQ number
     */
    public static void ibv_wr_set_xrc_srqn(MemorySegment qp, int remoteSrqn) {
        try {
            QpExOps.WR_WITH_U32.invokeExact(qpOp(qp, ibv_qp_ex.wr_set_xrc_srqn$OFFSET, "ibv_wr_set_xrc_srqn"), qp, remoteSrqn);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_set_inline_data}: the bytes are copied before the call returns.
     *
     * @param qp     {@code struct ibv_qp_ex *}
     * @param addr   the data, at least {@code length} bytes
     * @param length bytes
     */
    public static void ibv_wr_set_inline_data(MemorySegment qp, MemorySegment addr, long length) {
        MemorySegment fn = qpOp(qp, ibv_qp_ex.wr_set_inline_data$OFFSET, "ibv_wr_set_inline_data");
        PointerArgs.bytes(addr, length, "ibv_wr_set_inline_data", "addr", "length");
        try {
            QpExOps.WR_SET_INLINE_DATA.invokeExact(fn, qp, addr, length);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_set_inline_data_list}: the bytes are copied before the call returns.
     *
     * @param qp      {@code struct ibv_qp_ex *}
     * @param numBuf  entries
     * @param bufList {@code const struct ibv_data_buf[numBuf]}, at least {@code numBuf × sizeof}; the
     *                buffers it points to are read unchecked
     */
    public static void ibv_wr_set_inline_data_list(MemorySegment qp, long numBuf, MemorySegment bufList) {
        MemorySegment fn = qpOp(qp, ibv_qp_ex.wr_set_inline_data_list$OFFSET, "ibv_wr_set_inline_data_list");
        PointerArgs.array(bufList, numBuf, ibv_data_buf.sizeof(), "struct ibv_data_buf", "ibv_wr_set_inline_data_list",
                "buf_list", "num_buf");
        try {
            QpExOps.WR_SET_LIST.invokeExact(fn, qp, numBuf, bufList);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_set_sge}. The address is a plain number here: it is not checked.
     *
     * @param qp     {@code struct ibv_qp_ex *}
     * @param lkey   local key
     * @param addr   local address
     * @param length bytes
     */
    public static void ibv_wr_set_sge(MemorySegment qp, int lkey, long addr, int length) {
        try {
            QpExOps.WR_SET_SGE.invokeExact(qpOp(qp, ibv_qp_ex.wr_set_sge$OFFSET, "ibv_wr_set_sge"), qp, lkey, addr, length);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wr_set_sge_list}.
     *
     * @param qp     {@code struct ibv_qp_ex *}
     * @param numSge entries
     * @param sgList {@code const struct ibv_sge[numSge]}, at least {@code numSge × sizeof(struct ibv_sge)}
     */
    public static void ibv_wr_set_sge_list(MemorySegment qp, long numSge, MemorySegment sgList) {
        MemorySegment fn = qpOp(qp, ibv_qp_ex.wr_set_sge_list$OFFSET, "ibv_wr_set_sge_list");
        PointerArgs.array(sgList, numSge, ibv_sge.sizeof(), "struct ibv_sge", "ibv_wr_set_sge_list", "sg_list", "num_sge");
        try {
            QpExOps.WR_SET_LIST.invokeExact(fn, qp, numSge, sgList);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- ibv_cq_ex: the extended poll API ----

    /**
     * {@code ibv_start_poll}: starts a poll batch; on 0 the first completion is current and the
     * provider holds the CQ's lock until {@link #ibv_end_poll}, which the same thread must call.
     * An ordinary downcall (see the class comment).
     *
     * @param cq   {@code struct ibv_cq_ex *}
     * @param attr {@code struct ibv_poll_cq_attr *}, at least its {@code sizeof}
     * @return 0 with a completion, ENOENT when empty (no {@link #ibv_end_poll} then), or an errno
     */
    public static int ibv_start_poll(MemorySegment cq, MemorySegment attr) {
        MemorySegment fn = cqOp(cq, ibv_cq_ex.start_poll$OFFSET, "ibv_start_poll");
        PointerArgs.struct(attr, ibv_poll_cq_attr.sizeof(), "struct ibv_poll_cq_attr", "ibv_start_poll", "attr");
        try {
            return (int) CqExOps.START_POLL.invokeExact(fn, cq, attr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_next_poll}.
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return 0, ENOENT when no more, or an errno
     */
    public static int ibv_next_poll(MemorySegment cq) {
        try {
            return (int) CqExOps.NEXT_POLL.invokeExact(cqOp(cq, ibv_cq_ex.next_poll$OFFSET, "ibv_next_poll"), cq);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_end_poll}.
     *
     * @param cq {@code struct ibv_cq_ex *}
     */
    public static void ibv_end_poll(MemorySegment cq) {
        try {
            CqExOps.END_POLL.invokeExact(cqOp(cq, ibv_cq_ex.end_poll$OFFSET, "ibv_end_poll"), cq);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wc_read_opcode}.
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return {@code enum ibv_wc_opcode}
     */
    public static int ibv_wc_read_opcode(MemorySegment cq) {
        return readU32(cq, ibv_cq_ex.read_opcode$OFFSET, "ibv_wc_read_opcode");
    }

    /**
     * {@code ibv_wc_read_vendor_err}.
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return the vendor error
     */
    public static int ibv_wc_read_vendor_err(MemorySegment cq) {
        return readU32(cq, ibv_cq_ex.read_vendor_err$OFFSET, "ibv_wc_read_vendor_err");
    }

    /**
     * {@code ibv_wc_read_byte_len}.
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return bytes transferred
     */
    public static int ibv_wc_read_byte_len(MemorySegment cq) {
        return readU32(cq, ibv_cq_ex.read_byte_len$OFFSET, "ibv_wc_read_byte_len");
    }

    /**
     * {@code ibv_wc_read_imm_data}.
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return immediate data, network byte order
     */
    public static int ibv_wc_read_imm_data(MemorySegment cq) {
        return readU32(cq, ibv_cq_ex.read_imm_data$OFFSET, "ibv_wc_read_imm_data");
    }

    /**
     * {@code ibv_wc_read_invalidated_rkey} (the header reads it through {@code read_imm_data}).
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return the rkey
     */
    public static int ibv_wc_read_invalidated_rkey(MemorySegment cq) {
        return readU32(cq, ibv_cq_ex.read_imm_data$OFFSET, "ibv_wc_read_invalidated_rkey");
    }

    /**
     * {@code ibv_wc_read_qp_num}.
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return the local QP number
     */
    public static int ibv_wc_read_qp_num(MemorySegment cq) {
        return readU32(cq, ibv_cq_ex.read_qp_num$OFFSET, "ibv_wc_read_qp_num");
    }

    /**
     * {@code ibv_wc_read_src_qp}.
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return the source QP number (UD)
     */
    public static int ibv_wc_read_src_qp(MemorySegment cq) {
        return readU32(cq, ibv_cq_ex.read_src_qp$OFFSET, "ibv_wc_read_src_qp");
    }

    /**
     * {@code ibv_wc_read_wc_flags}.
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return {@code IBV_WC_*} flags
     */
    public static int ibv_wc_read_wc_flags(MemorySegment cq) {
        return readU32(cq, ibv_cq_ex.read_wc_flags$OFFSET, "ibv_wc_read_wc_flags");
    }

    /**
     * {@code ibv_wc_read_slid}.
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return the source LID
     */
    public static int ibv_wc_read_slid(MemorySegment cq) {
        return readU32(cq, ibv_cq_ex.read_slid$OFFSET, "ibv_wc_read_slid");
    }

    /**
     * {@code ibv_wc_read_sl}.
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return the service level
     */
    public static byte ibv_wc_read_sl(MemorySegment cq) {
        return readU8(cq, ibv_cq_ex.read_sl$OFFSET, "ibv_wc_read_sl");
    }

    /**
     * {@code ibv_wc_read_dlid_path_bits}.
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return the DLID path bits
     */
    public static byte ibv_wc_read_dlid_path_bits(MemorySegment cq) {
        return readU8(cq, ibv_cq_ex.read_dlid_path_bits$OFFSET, "ibv_wc_read_dlid_path_bits");
    }

    /**
     * {@code ibv_wc_read_completion_ts}.
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return the device timestamp
     */
    public static long ibv_wc_read_completion_ts(MemorySegment cq) {
        return readU64(cq, ibv_cq_ex.read_completion_ts$OFFSET, "ibv_wc_read_completion_ts");
    }

    /**
     * {@code ibv_wc_read_completion_wallclock_ns}.
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return wall-clock nanoseconds
     */
    public static long ibv_wc_read_completion_wallclock_ns(MemorySegment cq) {
        return readU64(cq, ibv_cq_ex.read_completion_wallclock_ns$OFFSET, "ibv_wc_read_completion_wallclock_ns");
    }

    /**
     * {@code ibv_wc_read_cvlan}.
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return the customer VLAN tag
     */
    public static short ibv_wc_read_cvlan(MemorySegment cq) {
        try {
            return (short) CqExOps.READ_U16.invokeExact(cqOp(cq, ibv_cq_ex.read_cvlan$OFFSET, "ibv_wc_read_cvlan"), cq);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_wc_read_flow_tag}.
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return the flow tag
     */
    public static int ibv_wc_read_flow_tag(MemorySegment cq) {
        return readU32(cq, ibv_cq_ex.read_flow_tag$OFFSET, "ibv_wc_read_flow_tag");
    }

    /**
     * {@code ibv_wc_read_tm_info}.
     *
     * @param cq     {@code struct ibv_cq_ex *}
     * @param tmInfo {@code struct ibv_wc_tm_info *} to fill, at least its {@code sizeof}
     */
    public static void ibv_wc_read_tm_info(MemorySegment cq, MemorySegment tmInfo) {
        MemorySegment fn = cqOp(cq, ibv_cq_ex.read_tm_info$OFFSET, "ibv_wc_read_tm_info");
        PointerArgs.struct(tmInfo, ibv_wc_tm_info.sizeof(), "struct ibv_wc_tm_info", "ibv_wc_read_tm_info", "tm_info");
        try {
            CqExOps.READ_TM_INFO.invokeExact(fn, cq, tmInfo);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ibv_cq_ex_to_cq}: the same object seen as a {@code struct ibv_cq *} (C only casts).
     *
     * @param cq {@code struct ibv_cq_ex *}
     * @return {@code struct ibv_cq *}
     */
    public static MemorySegment ibv_cq_ex_to_cq(MemorySegment cq) {
        return cq;
    }

    // ---- dispatch ----

    /** The context of a verbs object: {@code obj->context}, which a live object always has. */
    private static long contextOf(long object, long contextOffset, String verb, String arg) {
        long context = ALL.get(WORD, object + contextOffset);
        if (context == 0) {
            throw new IllegalArgumentException(verb + ": " + arg + " has no context (not a live verbs object)");
        }
        return context;
    }

    /** The function pointer at {@code obj->context->ops.<slot>}; {@code object} is a checked handle. */
    private static long contextOp(long object, long contextOffset, long opOffset, String verb, String arg) {
        long fn = ALL.get(WORD, contextOf(object, contextOffset, verb, arg) + OPS + opOffset);
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
        long ctx = PointerArgs.handle(context, "verbs_get_ctx_op", "context");
        return verbsOp(ctx, opOffset) == 0 ? 0 : ctx - VCTX_BACK;
    }

    /** The function pointer {@code verbs_get_ctx_op(ctx, op)->op}, or 0 where the header finds none. */
    private static long verbsOp(long ctx, long opOffset) {
        if (ALL.get(WORD, ctx + ABI_COMPAT) != ABI_IS_EXTENDED) {
            return 0;
        }
        long vctx = ctx - VCTX_BACK;
        long sz = ALL.get(WORD, vctx + verbs_context.sz$OFFSET);
        if (Long.compareUnsigned(sz, VCTX_SIZE - opOffset) < 0) {
            return 0;
        }
        return ALL.get(WORD, vctx + opOffset);
    }

    private static long requireVerbsOp(long ctx, long opOffset, String verb, String op) {
        long fn = verbsOp(ctx, opOffset);
        if (fn == 0) {
            throw new UnsupportedVerbException(verb, "the provider has no " + op);
        }
        return fn;
    }

    /** A function pointer stored in the object itself ({@code ibv_wq}, {@code ibv_dm}). */
    private static long slot(long object, long slotOffset, String verb, String op) {
        long fn = ALL.get(WORD, object + slotOffset);
        if (fn == 0) {
            throw new UnsupportedVerbException(verb, "the provider leaves " + op + " empty");
        }
        return fn;
    }

    private static MemorySegment qpOp(MemorySegment qp, long slotOffset, String verb) {
        return MemorySegment.ofAddress(slot(PointerArgs.handle(qp, verb, "qp"), slotOffset, verb, "this op"));
    }

    private static MemorySegment cqOp(MemorySegment cq, long slotOffset, String verb) {
        return MemorySegment.ofAddress(slot(PointerArgs.handle(cq, verb, "cq"), slotOffset, verb, "this op"));
    }

    private static int readU32(MemorySegment cq, long slotOffset, String verb) {
        try {
            return (int) CqExOps.READ_U32.invokeExact(cqOp(cq, slotOffset, verb), cq);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static byte readU8(MemorySegment cq, long slotOffset, String verb) {
        try {
            return (byte) CqExOps.READ_U8.invokeExact(cqOp(cq, slotOffset, verb), cq);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static long readU64(MemorySegment cq, long slotOffset, String verb) {
        try {
            return (long) CqExOps.READ_U64.invokeExact(cqOp(cq, slotOffset, verb), cq);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code verbs_context->op(context, attr)} for the verbs that create an object from a context and one struct. */
    private static MemorySegment createFromContext(String verb, MemorySegment context, String contextArg, MemorySegment attr,
                                                   String attrArg, long attrSize, String attrType, long opOffset, String op) {
        long ctx = PointerArgs.handle(context, verb, contextArg);
        PointerArgs.struct(attr, attrSize, attrType, verb, attrArg);
        return create(verb, requireVerbsOp(ctx, opOffset, verb, op), context, attr);
    }

    /** {@code verbs_context->op(obj, attr)} for the int verbs on an object and one struct. */
    private static int withAttr(String verb, MemorySegment obj, String objArg, long contextOffset, MemorySegment attr,
                                String attrArg, long attrSize, String attrType, long opOffset, String op) {
        long o = PointerArgs.handle(obj, verb, objArg);
        PointerArgs.struct(attr, attrSize, attrType, verb, attrArg);
        long fn = requireVerbsOp(contextOf(o, contextOffset, verb, objArg), opOffset, verb, op);
        return intCall(SlowOps.WITH_ATTR, fn, obj, attr);
    }

    /** {@code verbs_context->op(obj)} for the destroy, close, free and dealloc verbs. */
    private static int destroy(String verb, MemorySegment obj, String objArg, long contextOffset, long opOffset, String op) {
        long o = PointerArgs.handle(obj, verb, objArg);
        long fn = requireVerbsOp(contextOf(o, contextOffset, verb, objArg), opOffset, verb, op);
        return intCall(SlowOps.DESTROY, fn, obj);
    }

    private static MemorySegment create(String verb, long fn, MemorySegment parent, MemorySegment attr) {
        try {
            return (MemorySegment) SlowOps.CREATE_FROM_ATTR.invokeExact(MemorySegment.ofAddress(fn), Native.errnoState(),
                    parent, attr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static int intCall(MethodHandle handle, long fn, MemorySegment a) {
        try {
            return (int) handle.invokeExact(MemorySegment.ofAddress(fn), a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static int intCall(MethodHandle handle, long fn, MemorySegment a, MemorySegment b) {
        try {
            return (int) handle.invokeExact(MemorySegment.ofAddress(fn), a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static int intCall(MethodHandle handle, long fn, MemorySegment a, MemorySegment b, MemorySegment c) {
        try {
            return (int) handle.invokeExact(MemorySegment.ofAddress(fn), a, b, c);
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
