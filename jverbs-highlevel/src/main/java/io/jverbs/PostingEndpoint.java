package io.jverbs;

import io.jverbs.ibverbs.VerbsException;
import io.jverbs.ibverbs.raw.ibv_context;
import io.jverbs.ibverbs.raw.ibv_qp;
import io.jverbs.ibverbs.raw.ibv_sge;
import io.jverbs.ibverbs.raw.verbs_h;
import io.jverbs.latency.LatencyTracker;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

import static io.jverbs.WorkRequests.BAD_WR;
import static io.jverbs.WorkRequests.INLINE;
import static io.jverbs.WorkRequests.RECV_SGE;
import static io.jverbs.WorkRequests.RECV_WR;
import static io.jverbs.WorkRequests.SEND_SGE;
import static io.jverbs.WorkRequests.SEND_WR;

/**
 * The one posting engine of a {@link QueuePair}, its superclass (so that the engine's state is
 * in the queue pair's own object: a post and a completion follow no extra reference): every way of posting — the zero-allocation
 * methods, {@link Async}'s futures, {@link PreparedRequest}s, {@link WorkBatch}es and memory
 * window binds — ends in {@link #postSend}, {@link #postReceive}, {@link #postBatch},
 * {@link #postPrepared} or {@link #windowRequest} here, which take the
 * posting lock, check what the device cannot (the queue pair connected, the ranges inside their
 * buffers, the remote rights), account for the queues, write the request into scratch memory
 * laid out from the generated {@code sizeof()}s ({@link WorkRequests#SEND_WR} …) and call the
 * provider's {@code post_send}/{@code post_recv}. Allocates nothing.
 *
 * <p>Queue accounting without a lock on the completion path: the send queue's in
 * {@link SendQueue}; posters (serialized by the posting lock) own {@code recvCount}, the thread
 * polling the completion queue (one at a time) owns {@code recvDone}, published with a release
 * store and read with an acquire load.
 */
abstract sealed class PostingEndpoint extends QueueEndpoint permits QueuePair {
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final VarHandle RECV_DONE;

    static {
        try {
            RECV_DONE = MethodHandles.lookup().findVarHandle(PostingEndpoint.class, "recvDone", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The trackers live queue pairs time with: a tracker pairs one queue pair's completions with its posts. */
    private static final java.util.Set<LatencyTracker> TRACKERS_IN_USE = java.util.Collections.synchronizedSet(
            java.util.Collections.newSetFromMap(new java.util.WeakHashMap<>()));

    final ProtectionDomain pd;
    final QueuePairConfig config;
    final Arena arena = Arena.ofShared();
    private final long qpAddress;
    final int maxInline;
    /**
     * Taken by every post and by the destroy: posts from any thread are serialized, and close
     * waits for one in progress. A confined queue pair's lock ({@link QueuePairConfig#confined()})
     * is only its owner thread's, and takes no compare-and-set.
     */
    final PostLock posting;
    private final MemorySegment scratch;
    private final long scratchAddress;
    private final MemorySegment postSendFn;
    private final MemorySegment postRecvFn;
    final SendQueue sendQueue;
    private long recvCount;
    private long recvDone;
    /**
     * The queue pair's state ({@link QueuePair#state()}), here beside what every post reads:
     * written under the queue pair's monitor; volatile because posts read it holding only the
     * posting lock.
     */
    volatile QueuePair.State state = QueuePair.State.PREPARED;
    /** Per-connection latency, or null: set before connect ({@link QueuePair#trackLatency}), read by posts and polls. */
    volatile LatencyTracker latency;

    PostingEndpoint(ProtectionDomain pd, QueuePairConfig config, MemorySegment handle, int maxInline) {
        super("queue pair", pd);
        this.pd = pd;
        this.config = config;
        this.qpAddress = handle.address();
        this.maxInline = maxInline;
        this.posting = new PostLock(this, config.confined() ? Thread.currentThread() : null);
        this.scratch = arena.allocate(INLINE + Math.max(8, maxInline), 64);
        this.scratchAddress = scratch.address();
        WorkRequests.link(scratchAddress + SEND_WR, scratchAddress + SEND_SGE); // kept: only fill() writes this request
        // The provider's post_send / post_recv, resolved once per queue pair (a context's ops never change).
        MemorySegment ctx = ibv_qp.context(handle.reinterpret(ibv_qp.sizeof())).reinterpret(ibv_context.sizeof());
        this.postSendFn = WorkRequests.postSendOp(ctx);
        this.postRecvFn = WorkRequests.postRecvOp(ctx);
        this.sendQueue = new SendQueue(config.maxSendWr());
    }

    /** Why a post is refused now: closed, not connected yet, or in error. */
    abstract RefusedException notPostable(String what);

    /** One volatile read on the data path: the destroy sets {@link QueuePair.State#CLOSED} under the posting lock. */
    private void checkPostable(String what) {
        if (state != QueuePair.State.CONNECTED) {
            throw notPostable(what);
        }
    }

    // The polling thread's side of the accounting for one successful completion (no lock: see the
    // class comment). Each is small enough for the JIT to inline into the poll.

    /** A receive completed. */
    void receiveCompleted() {
        RECV_DONE.setRelease(this, recvDone + 1);
    }

    /** A send-side request completed: its room is free again; the latency tracker hears of it. */
    void sendCompleted(CompletionQueue from) {
        sendQueue.retireOne();
        LatencyTracker tracker = latency;
        if (tracker != null) {
            timed(tracker, from);
        }
    }

    private static void timed(LatencyTracker tracker, CompletionQueue from) {
        try {
            tracker.completed();
        } catch (RuntimeException | Error e) {
            from.handlerFailed(e); // the recorder threw: the completion is still routed
        }
    }

    /**
     * Times this queue pair's posts with {@code tracker} from now on (under the queue pair's
     * monitor, before it connects); see {@link QueuePair#trackLatency}.
     */
    void track(LatencyTracker tracker) {
        if (state != QueuePair.State.PREPARED || latency != null) {
            throw new IllegalStateException("queue pair " + number() + ": trackLatency before connect, once"
                    + (latency != null ? " (it already has a tracker)" : " (it is " + state + ")"));
        }
        if (tracker.capacity() < config.maxSendWr()) {
            throw new IllegalArgumentException("queue pair " + number() + ": the latency tracker times "
                    + tracker.capacity() + " signaled requests in flight, the send queue holds " + config.maxSendWr()
                    + ": with more in flight it would pair completions with the wrong posts; size it for "
                    + config.maxSendWr());
        }
        if (!TRACKERS_IN_USE.add(tracker)) {
            throw new IllegalStateException("queue pair " + number() + ": the latency tracker already times another"
                    + " queue pair, and pairs each completion with that one's posts: give each queue pair its own");
        }
        latency = tracker;
    }

    /** The queue pair is destroyed: its tracker may time another one. */
    void untrack() {
        LatencyTracker tracker = latency;
        if (tracker != null) {
            TRACKERS_IN_USE.remove(tracker);
        }
    }

    /** A reset dropped every posted receive without completions: the receive queue is empty. */
    void receivesDropped() {
        RECV_DONE.setRelease(this, recvCount);
    }

    /** Posts a batch's requests as one list; see {@link QueuePair#post(WorkBatch)}. */
    int postBatch(WorkBatch batch) {
        posting.lock("post a batch");
        try {
            return postLocked(batch);
        } finally {
            posting.unlock();
        }
    }

    private int postLocked(WorkBatch batch) {
        checkPostable("post a batch");
        if (batch.owner() != this) {
            throw new IllegalArgumentException("the batch belongs to another queue pair");
        }
        batch.recheck("post a batch");
        batch.copyInline();
        int n = batch.size();
        if (n == 0) {
            return QueuePair.OK;
        }
        if (!sendQueue.fits(n)) {
            return QueuePair.SEND_QUEUE_FULL;
        }
        int run = sendQueue.run();
        for (int i = 0; i < n; i++) {
            boolean signal = batch.wantsSignal(i) || run + 1 >= config.signalEvery() || i == n - 1
                    && sendQueue.outstanding() + n >= config.maxSendWr();
            batch.signal(i, signal);
            run = signal ? 0 : run + 1;
        }
        // Publish every entry first (a completion may be polled before post_send returns), then
        // take back those of requests the provider refused.
        int runBefore = sendQueue.run();
        long tailBefore = sendQueue.countingList(batch, n);
        LatencyTracker tracker = latency;
        if (tracker != null) {
            for (int i = 0; i < n; i++) {
                tracker.posted(batch.lengthOf(i), batch.signalFlag(i)); // before: completions may come at once
            }
        }
        scratch.set(LONG, BAD_WR, 0L); // a provider that fails without naming the request leaves it unknown, not stale
        int rc = WorkRequests.post(postSendFn, qpAddress, batch.firstAddress(), scratchAddress + BAD_WR);
        int posted = n;
        if (rc != 0) {
            posted = batch.postedBefore(scratch.get(LONG, BAD_WR));
            sendQueue.listRefused(batch, n, posted, tailBefore, runBefore);
        }
        if (tracker != null) {
            for (int i = n - 1; i >= posted; i--) {
                tracker.refused(batch.lengthOf(i), batch.signalFlag(i));
            }
        }
        batch.clear();
        if (rc != 0) {
            throw new VerbsException("ibv_post_send", rc, posted + " of " + n + " requests of the batch were posted");
        }
        return QueuePair.OK;
    }

    PreparedRequest prepareRequest(int opcode, RegisteredBuffer local, long localOffset, int length,
                                                 RemoteBuffer remote, long remoteOffset, String what) {
        local.checkUse(pd, localOffset, length, opcode == verbs_h.IBV_WR_RDMA_READ, what);
        long remoteAddress = remote == null ? 0 : remoteTarget(remote, remoteOffset, length, opcode, what);
        boolean inline = inlines(opcode, length);
        MemorySegment m = arena.allocate(SEND_SGE + ibv_sge.sizeof(), 64); // the layout of the scratch request
        long wr = m.address() + SEND_WR;
        long sge = m.address() + SEND_SGE;
        WorkRequests.send(wr, sge, 0, opcode, inline ? verbs_h.IBV_SEND_INLINE : 0, 0, local.address() + localOffset,
                length, local.lkey());
        if (remote != null) {
            WorkRequests.rdma(wr, remoteAddress, remote.rkey());
        }
        return new PreparedRequest((QueuePair) this, opcode, local, localOffset, length, inline, wr, sge);
    }

    /** Posts a prepared request; see {@link QueuePair#post(PreparedRequest, long, boolean)}. */
    int postPrepared(PreparedRequest request, long wrId, boolean signaled) {
        posting.lock("post a prepared request");
        try {
            return postLocked(request, wrId, signaled);
        } finally {
            posting.unlock();
        }
    }

    private int postLocked(PreparedRequest request, long wrId, boolean signaled) {
        checkPostable("post a prepared request");
        if (request.queuePair() != this) {
            throw new IllegalArgumentException("the prepared request belongs to queue pair " + request.queuePair().number()
                    + ", not " + number());
        }
        RegisteredBuffer local = request.local();
        local.checkOpen("post a prepared request"); // its range was checked when it was prepared
        long id = QueuePair.userId(wrId);
        int room = signalOrFull(signaled);
        if (room == FULL) {
            return QueuePair.SEND_QUEUE_FULL;
        }
        boolean signal = room == SIGNALED;
        int flags = signal ? verbs_h.IBV_SEND_SIGNALED : 0;
        if (request.isInline()) {
            flags |= verbs_h.IBV_SEND_INLINE;
            WorkRequests.dataAddress(request.sgeAddress, copyInline(local, request.localOffset(), request.length()));
        }
        WorkRequests.idAndFlags(request.wrAddress, id, flags);
        return submit(request.wrAddress, request.length(), signal);
    }

    int postSend(long wrId, int opcode, RegisteredBuffer local, long localOffset, int length,
                         RemoteBuffer remote, long remoteOffset, int immediate, long compareAdd, long swap,
                         boolean signaled, String what) {
        posting.lock(what);
        try {
            return sendLocked(wrId, opcode, local, localOffset, length, remote, remoteOffset, immediate,
                    compareAdd, swap, signaled, what);
        } finally {
            posting.unlock();
        }
    }

    private int sendLocked(long wrId, int opcode, RegisteredBuffer local, long localOffset, int length,
                               RemoteBuffer remote, long remoteOffset, int immediate, long compareAdd, long swap,
                               boolean signaled, String what) {
        checkPostable(what);
        local.checkUse(pd, localOffset, length, opcode == verbs_h.IBV_WR_RDMA_READ || isAtomic(opcode), what);
        long remoteAddress = remote == null ? 0 : remoteTarget(remote, remoteOffset, length, opcode, what);
        int room = signalOrFull(signaled);
        if (room == FULL) {
            return QueuePair.SEND_QUEUE_FULL;
        }
        boolean signal = room == SIGNALED;
        fill(wrId, opcode, local, localOffset, length, remoteAddress, remote == null ? 0 : remote.rkey(), immediate,
                compareAdd, swap, signal);
        return submit(scratchAddress + SEND_WR, length, signal);
    }

    private static final int FULL = SendQueue.FULL;

    private static final int SIGNALED = SendQueue.SIGNALED;

    /**
     * Whether one more send request fits ({@link #FULL} when not), and whether it is signaled:
     * when the caller wants it, when {@code signalEvery} is reached, or when it fills the queue.
     */
    private int signalOrFull(boolean signaled) {
        return sendQueue.room(signaled, config.signalEvery());
    }

    /** Whether a payload of {@code length} bytes goes inline for {@code opcode}: Write and Send up to the limit. */
    boolean inlines(int opcode, int length) {
        return length <= maxInline && length > 0 && !isAtomic(opcode) && opcode != verbs_h.IBV_WR_RDMA_READ;
    }

    /**
     * Posts one filled send request: publishes its ring entry when signaled, counts it, tells the
     * latency tracker, calls the provider's post_send, and undoes the accounting when refused.
     */
    private int submit(long wrAddress, int length, boolean signal) {
        sendQueue.counting(signal);
        LatencyTracker tracker = latency;
        if (tracker != null) {
            tracker.posted(length, signal); // before: the completion may be polled before post_send returns
        }
        int rc = WorkRequests.post(postSendFn, qpAddress, wrAddress, scratchAddress + BAD_WR);
        if (rc != 0) {
            if (tracker != null) {
                tracker.refused(length, signal);
            }
            return refused(rc, signal);
        }
        sendQueue.posted(signal);
        return QueuePair.OK;
    }

    /** The right an operation needs on the remote buffer (a constant once the opcode is). */
    static int remoteRight(int opcode) {
        return opcode == verbs_h.IBV_WR_RDMA_READ ? verbs_h.IBV_ACCESS_REMOTE_READ
                : isAtomic(opcode) ? verbs_h.IBV_ACCESS_REMOTE_ATOMIC : verbs_h.IBV_ACCESS_REMOTE_WRITE;
    }

    static boolean isAtomic(int opcode) {
        return opcode == verbs_h.IBV_WR_ATOMIC_CMP_AND_SWP || opcode == verbs_h.IBV_WR_ATOMIC_FETCH_AND_ADD;
    }

    /** The remote address of a checked remote range (8-byte aligned for atomics). */
    static long remoteTarget(RemoteBuffer remote, long remoteOffset, int length, int opcode, String what) {
        remote.requireRight(remoteRight(opcode), what);
        long remoteAddress = WorkRequests.remoteAddress(remote, remoteOffset, length, what);
        if (isAtomic(opcode) && (remoteAddress & 7) != 0) { // opcode first: folds away for a constant one
            throw misaligned(what, remoteAddress);
        }
        return remoteAddress;
    }

    /** Fills the send request (inline copy when small enough) for one post. */
    private void fill(long wrId, int opcode, RegisteredBuffer local, long localOffset, int length, long remoteAddress,
                      int rkey, int immediate, long compareAdd, long swap, boolean signal) {
        boolean atomic = isAtomic(opcode);
        int flags = signal ? verbs_h.IBV_SEND_SIGNALED : 0;
        long dataAddress = local.address() + localOffset;
        if (inlines(opcode, length)) {
            dataAddress = copyInline(local, localOffset, length);
            flags |= verbs_h.IBV_SEND_INLINE;
        }
        WorkRequests.sendPrelinked(scratchAddress + SEND_WR, scratchAddress + SEND_SGE, wrId, opcode, flags, immediate,
                dataAddress, length, local.lkey()); // scratch lives until the destroy, which waits for this post
        if (atomic) {
            WorkRequests.atomic(scratchAddress + SEND_WR, remoteAddress, rkey, compareAdd, swap);
        } else {
            WorkRequests.rdma(scratchAddress + SEND_WR, remoteAddress, rkey);
        }
    }

    /**
     * Inline: the bytes are copied now (checked against a closed buffer), so the device never
     * reads the caller's memory after the post.
     */
    private long copyInline(RegisteredBuffer local, long localOffset, int length) {
        MemorySegment.copy(local.memory(), localOffset, scratch, INLINE, length);
        return scratchAddress + INLINE;
    }

    private static IllegalArgumentException misaligned(String what, long remoteAddress) {
        return new IllegalArgumentException(what + " needs an 8-byte aligned remote address, not 0x"
                + Long.toHexString(remoteAddress));
    }

    /** Undoes the accounting of a send the provider refused. */
    private int refused(int rc, boolean signal) {
        sendQueue.refused(signal);
        if (rc == io.jverbs.ibverbs.Errno.ENOMEM) {
            return QueuePair.SEND_QUEUE_FULL; // the provider's queue is fuller than ours says (device rounding)
        }
        throw VerbsException.of("ibv_post_send", rc);
    }

    int postReceive(long wrId, RegisteredBuffer local, long localOffset, int length) {
        posting.lock("receive");
        try {
            return receiveLocked(wrId, local, localOffset, length);
        } finally {
            posting.unlock();
        }
    }

    private int receiveLocked(long wrId, RegisteredBuffer local, long localOffset, int length) {
        if (state != QueuePair.State.CONNECTED && state != QueuePair.State.PREPARED) { // receives may wait in INIT for the connect
            throw notPostable("receive");
        }
        local.checkUse(pd, localOffset, length, true, "receive");
        if (recvCount - (long) RECV_DONE.getAcquire(this) >= config.maxRecvWr()) {
            return QueuePair.RECEIVE_QUEUE_FULL;
        }
        int rc = WorkRequests.postScratchReceive(scratch, postRecvFn, qpAddress, wrId, local, localOffset, length);
        if (rc != 0) {
            if (rc == io.jverbs.ibverbs.Errno.ENOMEM) {
                return QueuePair.RECEIVE_QUEUE_FULL;
            }
            throw VerbsException.of("ibv_post_recv", rc);
        }
        recvCount++;
        return QueuePair.OK;
    }

    /** Posts a window's bind ({@code bind}: {@code value} is the access flags) or invalidation ({@code value} is the rkey). */
    int windowRequest(long wrId, MemoryWindow window, RegisteredBuffer buffer, int value, boolean bind,
                                  String what) {
        posting.lock(what);
        try {
            checkPostable(what);
            if (signalOrFull(true) == FULL) {
                return QueuePair.SEND_QUEUE_FULL;
            }
            long wr = scratchAddress + SEND_WR;
            if (bind) {
                WorkRequests.bindWindow(wr, wrId, verbs_h.IBV_SEND_SIGNALED, window.raw().address(), window.rkey(),
                        buffer.handle().address(), window.remoteAddress(), window.length(), value);
            } else {
                WorkRequests.localInvalidate(wr, wrId, verbs_h.IBV_SEND_SIGNALED, value);
            }
            return submit(wr, 0, true);
        } finally {
            posting.unlock();
        }
    }
}
