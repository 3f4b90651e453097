package io.jverbs.rdmacm.device;

import io.jverbs.ibverbs.Errno;
import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.device.Completion;
import io.jverbs.ibverbs.device.Posix;
import io.jverbs.ibverbs.device.QueuePairs;
import io.jverbs.ibverbs.device.WorkRequests;
import io.jverbs.ibverbs.raw.ibv_comp_channel;
import io.jverbs.ibverbs.raw.ibv_qp_attr;
import io.jverbs.ibverbs.raw.ibv_wc;
import io.jverbs.ibverbs.raw.verbs_h;
import io.jverbs.rdmacm.RdmaVerbs;
import io.jverbs.rdmacm.raw.rdma_cm_id;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * One call of the blocking {@code rdma_get_send_comp} / {@code rdma_get_recv_comp} on a thread of
 * its own, so that the test's waits stay bounded. When no completion comes in time, or the test
 * ends before the call returned, a request without data is posted on the awaited queue and the
 * id's QP is moved to ERR: the request completes with a flush error, which raises the event the
 * call sleeps on, so the thread ends before the QP, CQs and channels are destroyed.
 */
final class BlockingCompletion implements AutoCloseable {
    /** How long a completion may take under QEMU TCG. */
    static final Duration TIMEOUT = CmEvents.TIMEOUT;
    private static final long WAKE_WR_ID = 0xdead;

    /**
     * What the call returned.
     *
     * @param rc    its return value (1: one completion)
     * @param errno the thread's errno after a negative return, else 0
     * @param wc    the completion when {@code rc == 1}
     */
    private record Result(int rc, int errno, Completion wc) {
    }

    private final String what;
    private final MemorySegment id;
    private final boolean send;
    private final CompletableFuture<Integer> tid = new CompletableFuture<>();
    private final CompletableFuture<Result> result = new CompletableFuture<>();
    private final Thread thread;

    private BlockingCompletion(String what, MemorySegment id, boolean send) {
        this.what = what;
        this.id = id;
        this.send = send;
        thread = Thread.ofPlatform().daemon().name(verb()).start(this::run);
    }

    /** Starts {@code rdma_get_send_comp(id)} ({@code send}) or {@code rdma_get_recv_comp(id)}. */
    static BlockingCompletion start(String what, MemorySegment id, boolean send) {
        return new BlockingCompletion(what, id, send);
    }

    /** Runs {@code rdma_get_send_comp(id)} or {@code rdma_get_recv_comp(id)} with the bound. */
    static Completion await(String what, MemorySegment id, boolean send) {
        try (BlockingCompletion call = start(what, id, send)) {
            return call.await();
        }
    }

    private String verb() {
        return send ? "rdma_get_send_comp" : "rdma_get_recv_comp";
    }

    private void run() {
        try (Arena arena = Arena.ofConfined()) {
            tid.complete(Posix.gettid());
            MemorySegment wc = arena.allocate(ibv_wc.LAYOUT);
            int rc = send ? RdmaVerbs.rdma_get_send_comp(id, wc) : RdmaVerbs.rdma_get_recv_comp(id, wc);
            int errno = rc < 0 ? Native.lastErrno() : 0;
            result.complete(new Result(rc, errno, rc == 1 ? Completion.read(wc) : null));
        } catch (Throwable t) {
            tid.completeExceptionally(t);
            result.completeExceptionally(t);
        }
    }

    /**
     * Waits until the call sleeps in {@code read(2)} on the id's completion channel (inside
     * {@code ibv_get_cq_event}), that is, until it found its CQ empty and armed it.
     */
    void awaitSleepingOnChannel() {
        MemorySegment cmId = id.reinterpret(rdma_cm_id.sizeof());
        MemorySegment channel = send ? rdma_cm_id.send_cq_channel(cmId) : rdma_cm_id.recv_cq_channel(cmId);
        int fd = ibv_comp_channel.fd(channel.reinterpret(ibv_comp_channel.sizeof()));
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        int threadId = tid.orTimeout(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).join();
        while (!Posix.blockedInRead(threadId, fd)) {
            if (result.isDone()) {
                fail(what + ": " + verb() + " returned before it slept on the channel: " + result.join());
            }
            if (System.nanoTime() - deadline >= 0) {
                fail(what + ": " + verb() + " did not sleep on completion channel fd " + fd + " within "
                        + TIMEOUT.toSeconds() + " s");
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }

    /** @return the one completion the call returned; fails when it failed or none came within {@link #TIMEOUT} */
    Completion await() {
        Result r;
        try {
            r = result.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            wake();
            return fail(what + ": " + verb() + " returned no completion within " + TIMEOUT.toSeconds() + " s");
        } catch (ExecutionException e) {
            throw new AssertionError(what + ": " + verb() + " threw", e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
        assertEquals(1, r.rc(), what + ": " + verb() + " returned " + r.rc() + " (errno " + Errno.name(r.errno()) + ")");
        return r.wc();
    }

    /** Ends the call if it is still running (see the class comment); fails when it cannot be ended. */
    @Override
    public void close() {
        if (!result.isDone()) {
            wake();
            if (!result.isDone()) {
                throw new AssertionError(what + ": " + verb() + " still sleeps after its QP was flushed");
            }
        }
        try {
            // The call has returned; the thread only has to end.
            if (!thread.join(TIMEOUT)) {
                throw new AssertionError(what + ": the thread of " + verb() + " does not end");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private static void toError(MemorySegment qp) {
        QueuePairs.modify(qp, attr -> ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_ERR), verbs_h.IBV_QP_STATE);
    }

    private void wake() {
        MemorySegment qp = rdma_cm_id.qp(id.reinterpret(rdma_cm_id.sizeof()));
        try {
            if (send) {
                // ERR first, or the request would go out; rxe's post_send rings the kernel, which flushes it.
                toError(qp);
                try (Arena arena = Arena.ofConfined()) {
                    WorkRequests.postSend(qp, WorkRequests.send(arena, WAKE_WR_ID, verbs_h.IBV_WR_SEND, null, 0, 0));
                }
            } else {
                // The receive first: rxe's post_recv only writes the shared queue, without telling the
                // kernel; the move to ERR then flushes it.
                WorkRequests.postRecv(qp, WAKE_WR_ID, null, 0, 0);
                toError(qp);
            }
            result.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            // close() reports a call that does not end
        } catch (RuntimeException | AssertionError e) {
            System.err.println(what + ": could not flush the QP to end " + verb() + ": " + e);
        }
    }
}
