package io.jverbs.ibverbs.internal;

import io.jverbs.ibverbs.UnsupportedVerbException;
import io.jverbs.ibverbs.raw.ibv_context;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The data path's one door to the provider: the calls that {@code verbs.h} defines
 * {@code static inline} through {@code context->ops} — post send, post receive, poll, arm — each
 * bound here once, as a critical downcall by function pointer. The thin API
 * ({@link io.jverbs.ibverbs.InlineVerbs}) and jverbs-highlevel both call these methods; nothing
 * else in jverbs binds them.
 *
 * <p>Post and poll can also be bound to one provider's entry point as a constant address
 * ({@link #pinPostSend} and the others, see {@link NativeAccess.PinnedDowncall}): a call with that
 * address then compiles to a direct call, and a call with any other address still works through
 * the general handle.
 *
 * <p>The arguments are raw addresses, checked by the caller: a wrong one is undefined behaviour in
 * native code. Exported only to the jverbs modules. Thread-safety: all methods may be called from
 * any thread; the provider's own rules for its queues apply.
 */
public final class DataPath {
    private static final FunctionDescriptor POST = FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG);
    private static final FunctionDescriptor POLL = FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_LONG);
    private static final NativeAccess.PinnedDowncall POST_SEND_PIN = NativeAccess.pinnableDowncall(POST, true);
    private static final NativeAccess.PinnedDowncall POST_RECV_PIN = NativeAccess.pinnableDowncall(POST, true);
    private static final NativeAccess.PinnedDowncall POLL_CQ_PIN = NativeAccess.pinnableDowncall(POLL, true);
    private static final MethodHandle POST_SEND = POST_SEND_PIN.invoker();
    private static final MethodHandle POST_RECV = POST_RECV_PIN.invoker();
    private static final MethodHandle POLL_CQ = POLL_CQ_PIN.invoker();
    private static final MethodHandle REQ_NOTIFY_CQ = NativeAccess.pointerDowncall(
            FunctionDescriptor.of(JAVA_INT, ValueLayout.ADDRESS, JAVA_INT), true);

    private DataPath() {
    }

    /**
     * Calls a provider's {@code post_send}.
     *
     * @param fn    the provider's {@code ops.post_send}
     * @param qp    {@code struct ibv_qp *}
     * @param wr    {@code struct ibv_send_wr *}
     * @param badWr {@code struct ibv_send_wr **}
     * @return 0, or the provider's errno
     */
    public static int postSend(MemorySegment fn, long qp, long wr, long badWr) {
        try {
            return (int) POST_SEND.invokeExact(fn, qp, wr, badWr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls a provider's {@code post_recv}.
     *
     * @param fn    the provider's {@code ops.post_recv}
     * @param qp    {@code struct ibv_qp *}
     * @param wr    {@code struct ibv_recv_wr *}
     * @param badWr {@code struct ibv_recv_wr **}
     * @return 0, or the provider's errno
     */
    public static int postRecv(MemorySegment fn, long qp, long wr, long badWr) {
        try {
            return (int) POST_RECV.invokeExact(fn, qp, wr, badWr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls a provider's {@code poll_cq}.
     *
     * @param fn  the provider's {@code ops.poll_cq}
     * @param cq  {@code struct ibv_cq *}
     * @param max the room in {@code wc}, in entries
     * @param wc  {@code struct ibv_wc[max]}
     * @return completions taken, or a negative value on error
     */
    public static int pollCq(MemorySegment fn, long cq, int max, long wc) {
        try {
            return (int) POLL_CQ.invokeExact(fn, cq, max, wc);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls a provider's {@code req_notify_cq}.
     *
     * @param fn            the provider's {@code ops.req_notify_cq}
     * @param cq            {@code struct ibv_cq *}
     * @param solicitedOnly non-zero for solicited completions only
     * @return 0, or the provider's errno
     */
    public static int reqNotifyCq(MemorySegment fn, MemorySegment cq, int solicitedOnly) {
        try {
            return (int) REQ_NOTIFY_CQ.invokeExact(fn, cq, solicitedOnly);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Binds {@code fn} as {@link #postSend}'s constant address, if none was bound before. Pinning
     * is a VM operation: call it when a queue is made, never on the data path.
     *
     * @param fn the provider's {@code ops.post_send}
     */
    public static void pinPostSend(MemorySegment fn) {
        POST_SEND_PIN.pin(fn);
    }

    /**
     * Binds {@code fn} as {@link #postRecv}'s constant address, as {@link #pinPostSend}.
     *
     * @param fn the provider's {@code ops.post_recv}
     */
    public static void pinPostRecv(MemorySegment fn) {
        POST_RECV_PIN.pin(fn);
    }

    /**
     * Binds {@code fn} as {@link #pollCq}'s constant address, as {@link #pinPostSend}.
     *
     * @param fn the provider's {@code ops.poll_cq}
     */
    public static void pinPollCq(MemorySegment fn) {
        POLL_CQ_PIN.pin(fn);
    }

    /**
     * Reads one entry point of {@code context->ops} (the ops of a context never change, so it
     * can be read once per queue).
     *
     * @param context {@code struct ibv_context *}, at least {@code sizeof(struct ibv_context)}
     * @param slot    the entry's offset in {@code struct ibv_context_ops}
     * @param verb    the verb's C name, for the error
     * @return the entry point
     * @throws UnsupportedVerbException when the provider leaves it empty
     */
    public static MemorySegment providerOp(MemorySegment context, long slot, String verb) {
        MemorySegment fn = context.get(ValueLayout.ADDRESS, ibv_context.ops$OFFSET + slot);
        if (fn.address() == 0) {
            throw new UnsupportedVerbException(verb, "the provider leaves this op empty");
        }
        return fn;
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException e) {
            return e;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException("unexpected checked exception from a downcall", t);
    }
}
