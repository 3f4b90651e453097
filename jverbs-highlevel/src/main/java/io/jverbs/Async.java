package io.jverbs;

import io.jverbs.ibverbs.raw.verbs_h;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The future-returning face of one {@link QueuePair} ({@link QueuePair#async()}): each operation
 * posts the same request as the queue pair's zero-allocation method of that name, always
 * signaled, and returns a {@link CompletableFuture} that whoever polls the completion queue
 * completes ({@link Poller}, or the caller's own {@link CompletionQueue#poll}). Each operation
 * takes buffer, offset and length, or {@link Slice}s (both ranges as values, lengths checked
 * equal).
 *
 * <p>How a future ends: with a {@link WorkResult} on success; with
 * {@link CompletionFailedException} naming the status on a failed completion; with
 * {@link QueueFullException} when the queue (or this queue pair's future slots, one per queue
 * entry) is full; with {@link java.util.concurrent.TimeoutException} after the queue pair's
 * operation timeout ({@link QueuePairConfig#withOperationTimeout}; receives wait as long as the
 * peer takes); with {@link IllegalStateException} when nobody polls its completion queue for 2 s,
 * when the queue pair is closed or put in error with the request in flight. A future that failed
 * while its request may still be in the device puts the queue pair in error first, so the device
 * flushes the request and never touches its buffers afterwards. Every future ends.
 *
 * <p>Memory: the buffers must stay registered until the future ends. Thread-safety: as the queue
 * pair's; a future's continuations run on the polling thread unless given an executor.
 */
public final class Async {
    private final QueuePair qp;
    private final OperationFuture<?>[] pending;
    private final String[] pendingWhat;
    /** Slots of jverbs' own requests (a window's bind, a ready message), which no deadline fails. */
    private final boolean[] pendingQuiet;
    /** When each pending future's request was posted ({@link Context#coarseNanos()}), for its deadline. */
    private final long[] pendingSince;
    private final int[] freeSlots;
    private int freeCount;

    Async(QueuePair qp, int slots) {
        this.qp = qp;
        this.pending = new OperationFuture<?>[slots];
        this.pendingWhat = new String[slots];
        this.pendingQuiet = new boolean[slots];
        this.pendingSince = new long[slots];
        this.freeSlots = new int[slots];
        for (int i = 0; i < slots; i++) {
            freeSlots[i] = slots - 1 - i;
        }
        this.freeCount = slots;
    }

    /**
     * Returns the queue pair these operations post on.
     *
     * @return the queue pair
     */
    public QueuePair queuePair() {
        return qp;
    }


    /**
     * RDMA Write, completed asynchronously (always signaled).
     *
     * @param local        the source
     * @param localOffset  offset in {@code local}
     * @param length       bytes
     * @param remote       the peer's buffer
     * @param remoteOffset offset in {@code remote}
     * @return completes when the write is done; fails with {@link CompletionFailedException} on a
     *         failed completion, {@link QueueFullException} when the send queue is full
     * @throws IllegalStateException     when not connected, in error, or closed
     * @throws WrongThreadException     when the queue pair is confined to another thread
     * @throws IndexOutOfBoundsException when a range lies outside its buffer
     */
    public CompletableFuture<WorkResult> write(RegisteredBuffer local, long localOffset, int length,
                                                    RemoteBuffer remote, long remoteOffset) {
        return post("RDMA Write", id -> qp.postSend(id, verbs_h.IBV_WR_RDMA_WRITE, local, localOffset, length, remote,
                remoteOffset, 0, 0, 0, true, "RDMA Write"));
    }

    /**
     * RDMA Write with immediate, completed asynchronously.
     *
     * @param local        the source
     * @param localOffset  offset in {@code local}
     * @param length       bytes
     * @param remote       the peer's buffer
     * @param remoteOffset offset in {@code remote}
     * @param immediate    32 bits for the peer
     * @return the future
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException when the queue pair is confined to another thread
     */
    public CompletableFuture<WorkResult> writeWithImmediate(RegisteredBuffer local, long localOffset, int length,
                                                                 RemoteBuffer remote, long remoteOffset, int immediate) {
        return post("RDMA Write with immediate", id -> qp.postSend(id, verbs_h.IBV_WR_RDMA_WRITE_WITH_IMM, local,
                localOffset, length, remote, remoteOffset, immediate, 0, 0, true, "RDMA Write with immediate"));
    }

    /**
     * RDMA Read, completed asynchronously.
     *
     * @param local        the destination
     * @param localOffset  offset in {@code local}
     * @param length       bytes
     * @param remote       the peer's buffer
     * @param remoteOffset offset in {@code remote}
     * @return the future
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException when the queue pair is confined to another thread
     * @throws UnsupportedOperationException when the queue pair is UC ({@link QueuePairConfig.Transport}): RC only
     */
    public CompletableFuture<WorkResult> read(RegisteredBuffer local, long localOffset, int length,
                                                   RemoteBuffer remote, long remoteOffset) {
        qp.requireReliable("RDMA Read");
        return post("RDMA Read", id -> qp.postSend(id, verbs_h.IBV_WR_RDMA_READ, local, localOffset, length, remote,
                remoteOffset, 0, 0, 0, true, "RDMA Read"));
    }

    /**
     * Send, completed asynchronously.
     *
     * @param local       the source
     * @param localOffset offset in {@code local}
     * @param length      bytes
     * @return the future
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException when the queue pair is confined to another thread
     */
    public CompletableFuture<WorkResult> send(RegisteredBuffer local, long localOffset, int length) {
        return post("Send", id -> qp.postSend(id, verbs_h.IBV_WR_SEND, local, localOffset, length, null, 0, 0, 0, 0, true,
                "Send"));
    }

    /**
     * Send with immediate, completed asynchronously.
     *
     * @param local       the source
     * @param localOffset offset in {@code local}
     * @param length      bytes
     * @param immediate   32 bits for the peer
     * @return the future
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException when the queue pair is confined to another thread
     */
    public CompletableFuture<WorkResult> sendWithImmediate(RegisteredBuffer local, long localOffset, int length,
                                                                int immediate) {
        return post("Send with immediate", id -> qp.postSend(id, verbs_h.IBV_WR_SEND_WITH_IMM, local, localOffset, length,
                null, 0, immediate, 0, 0, true, "Send with immediate"));
    }

    /**
     * Receive, completed asynchronously with the byte count (and immediate data, if any).
     *
     * @param local       where the message lands
     * @param localOffset offset in {@code local}
     * @param length      room for the message
     * @return the future
     * @throws IllegalStateException when closed or in error
     */
    public CompletableFuture<WorkResult> receive(RegisteredBuffer local, long localOffset, int length) {
        return post("Receive", id -> qp.postReceive(id, local, localOffset, length));
    }

    /**
     * Compare-and-swap, completed asynchronously; the original value is in the local 8 bytes.
     *
     * @param local        where the original value lands
     * @param localOffset  offset in {@code local}
     * @param remote       the peer's buffer
     * @param remoteOffset offset in {@code remote}
     * @param compare      the expected value
     * @param swap         the new value
     * @return the future
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException when the queue pair is confined to another thread
     * @throws UnsupportedOperationException when the queue pair is UC ({@link QueuePairConfig.Transport}): RC only
     */
    public CompletableFuture<WorkResult> compareAndSwap(RegisteredBuffer local, long localOffset,
                                                             RemoteBuffer remote, long remoteOffset, long compare,
                                                             long swap) {
        qp.requireReliable("compare-and-swap");
        return post("compare-and-swap", id -> qp.postSend(id, verbs_h.IBV_WR_ATOMIC_CMP_AND_SWP, local, localOffset, 8,
                remote, remoteOffset, 0, compare, swap, true, "compare-and-swap"));
    }

    /**
     * Fetch-and-add, completed asynchronously; the original value is in the local 8 bytes.
     *
     * @param local        where the original value lands
     * @param localOffset  offset in {@code local}
     * @param remote       the peer's buffer
     * @param remoteOffset offset in {@code remote}
     * @param add          the value to add
     * @return the future
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException when the queue pair is confined to another thread
     * @throws UnsupportedOperationException when the queue pair is UC ({@link QueuePairConfig.Transport}): RC only
     */
    public CompletableFuture<WorkResult> fetchAndAdd(RegisteredBuffer local, long localOffset, RemoteBuffer remote,
                                                          long remoteOffset, long add) {
        qp.requireReliable("fetch-and-add");
        return post("fetch-and-add", id -> qp.postSend(id, verbs_h.IBV_WR_ATOMIC_FETCH_AND_ADD, local, localOffset, 8,
                remote, remoteOffset, 0, add, 0, true, "fetch-and-add"));
    }

    // ---- the same with slices: both ranges as values ----

    /**
     * RDMA Write of a local slice into a remote range of the same length, completed asynchronously.
     *
     * @param from the source
     * @param to   the destination, exactly {@code from.length()} bytes (needs {@link Access#REMOTE_WRITE})
     * @return as {@link #write(RegisteredBuffer, long, int, RemoteBuffer, long)}
     * @throws IllegalArgumentException when the lengths differ, or {@code to} lacks the right
     * @throws IllegalStateException    when not connected, in error, or closed
     * @throws WrongThreadException     when the queue pair is confined to another thread
     */
    public CompletableFuture<WorkResult> write(Slice from, RemoteBuffer to) {
        from.requireSameLength(to, "RDMA Write");
        return write(from.buffer(), from.offset(), from.length(), to, 0);
    }

    /**
     * RDMA Write with immediate of a local slice into a remote range of the same length.
     *
     * @param from      the source
     * @param to        the destination, exactly {@code from.length()} bytes
     * @param immediate 32 bits for the peer's receive
     * @return as {@link #writeWithImmediate(RegisteredBuffer, long, int, RemoteBuffer, long, int)}
     * @throws IllegalArgumentException when the lengths differ, or {@code to} lacks the right
     * @throws IllegalStateException    when not connected, in error, or closed
     * @throws WrongThreadException     when the queue pair is confined to another thread
     */
    public CompletableFuture<WorkResult> writeWithImmediate(Slice from, RemoteBuffer to, int immediate) {
        from.requireSameLength(to, "RDMA Write with immediate");
        return writeWithImmediate(from.buffer(), from.offset(), from.length(), to, 0, immediate);
    }

    /**
     * RDMA Read of a remote range into a local slice of the same length.
     *
     * @param into the destination
     * @param from the source, exactly {@code into.length()} bytes (needs {@link Access#REMOTE_READ})
     * @return as {@link #read(RegisteredBuffer, long, int, RemoteBuffer, long)}
     * @throws IllegalArgumentException      when the lengths differ, {@code from} lacks the right, or
     *                                       {@code into} is read-only
     * @throws IllegalStateException         when not connected, in error, or closed
     * @throws WrongThreadException          when the queue pair is confined to another thread
     * @throws UnsupportedOperationException when the queue pair is UC
     */
    public CompletableFuture<WorkResult> read(Slice into, RemoteBuffer from) {
        into.requireSameLength(from, "RDMA Read");
        return read(into.buffer(), into.offset(), into.length(), from, 0);
    }

    /**
     * Send of a local slice.
     *
     * @param from the message
     * @return as {@link #send(RegisteredBuffer, long, int)}
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException  when the queue pair is confined to another thread
     */
    public CompletableFuture<WorkResult> send(Slice from) {
        return send(from.buffer(), from.offset(), from.length());
    }

    /**
     * Send with immediate of a local slice.
     *
     * @param from      the message
     * @param immediate 32 bits for the peer
     * @return as {@link #sendWithImmediate(RegisteredBuffer, long, int, int)}
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException  when the queue pair is confined to another thread
     */
    public CompletableFuture<WorkResult> sendWithImmediate(Slice from, int immediate) {
        return sendWithImmediate(from.buffer(), from.offset(), from.length(), immediate);
    }

    /**
     * Receive into a local slice.
     *
     * @param into where the peer's message lands (at most {@code into.length()} bytes)
     * @return as {@link #receive(RegisteredBuffer, long, int)}
     * @throws IllegalArgumentException when {@code into} is read-only
     * @throws IllegalStateException    when closed
     */
    public CompletableFuture<WorkResult> receive(Slice into) {
        return receive(into.buffer(), into.offset(), into.length());
    }

    /**
     * Compare-and-swap on an 8-byte remote range; the old value lands in an 8-byte local slice.
     *
     * @param result  8 bytes for the value found
     * @param target  8 bytes, 8-aligned (needs {@link Access#REMOTE_ATOMIC})
     * @param compare the expected value
     * @param swap    the new value
     * @return as {@link #compareAndSwap(RegisteredBuffer, long, RemoteBuffer, long, long, long)}
     * @throws IllegalArgumentException      when a range is not 8 bytes, or {@code target} lacks the right
     * @throws IllegalStateException         when not connected, in error, or closed
     * @throws UnsupportedOperationException when the queue pair is UC
     */
    public CompletableFuture<WorkResult> compareAndSwap(Slice result, RemoteBuffer target, long compare,
                                                             long swap) {
        requireAtomicWidth(result, target, "compare-and-swap");
        return compareAndSwap(result.buffer(), result.offset(), target, 0, compare, swap);
    }

    /**
     * Fetch-and-add on an 8-byte remote range; the old value lands in an 8-byte local slice.
     *
     * @param result 8 bytes for the value found
     * @param target 8 bytes, 8-aligned (needs {@link Access#REMOTE_ATOMIC})
     * @param add    the value to add
     * @return as {@link #fetchAndAdd(RegisteredBuffer, long, RemoteBuffer, long, long)}
     * @throws IllegalArgumentException      when a range is not 8 bytes, or {@code target} lacks the right
     * @throws IllegalStateException         when not connected, in error, or closed
     * @throws UnsupportedOperationException when the queue pair is UC
     */
    public CompletableFuture<WorkResult> fetchAndAdd(Slice result, RemoteBuffer target, long add) {
        requireAtomicWidth(result, target, "fetch-and-add");
        return fetchAndAdd(result.buffer(), result.offset(), target, 0, add);
    }

    private static void requireAtomicWidth(Slice result, RemoteBuffer target, String what) {
        if (result.length() != 8 || target.length() != 8) {
            throw new IllegalArgumentException(what + " works on 8 bytes: the local slice has " + result.length()
                    + " and the remote range " + target.length());
        }
    }

    // ---- the future slots: one per queue entry ----

    /** Posts one request with the given work-request id: {@link QueuePair#OK} or a full-queue code. */
    interface Poster {
        int post(long wrId);
    }

    private CompletableFuture<WorkResult> post(String what, Poster poster) {
        return post(what, poster, false);
    }

    /**
     * Posts through a future slot; a {@code quiet} one is jverbs' own request, which no deadline
     * fails (a queue the caller does not poll must not put the queue pair in error for it).
     */
    CompletableFuture<WorkResult> post(String what, Poster poster, boolean quiet) {
        CompletionQueue queue = queueOf(what);
        OperationFuture<WorkResult> future = new OperationFuture<>(queue, what);
        synchronized (qp) {
            qp.ensureOpen(what);
            if (freeCount == 0) {
                future.fail(new QueueFullException("queue pair " + qp.number() + ": every slot has work"
                        + " in flight"));
                return future;
            }
            int slot = freeSlots[--freeCount];
            pending[slot] = future;
            pendingWhat[slot] = what;
            pendingQuiet[slot] = quiet;
            pendingSince[slot] = Context.coarseNanos(); // a deadline is good to 100 ms; no clock read per post
            int rc;
            try {
                rc = poster.post(QueuePair.FUTURE_TAG | slot);
            } catch (RuntimeException e) {
                releaseSlot(slot);
                throw e;
            }
            if (rc != QueuePair.OK) {
                releaseSlot(slot);
                future.fail(new QueueFullException("queue pair " + qp.number() + ": "
                        + (rc == QueuePair.SEND_QUEUE_FULL ? "send queue full (" + qp.config().maxSendWr() + " in flight)"
                                                 : "receive queue full (" + qp.config().maxRecvWr() + " posted)")));
            }
        }
        return future;
    }

    private void releaseSlot(int slot) {
        pending[slot] = null;
        pendingWhat[slot] = null;
        pendingQuiet[slot] = false;
        freeSlots[freeCount++] = slot;
    }

    /** The queue whose poll completes an operation of this kind: receives on the receive queue, the rest on the send queue. */
    private CompletionQueue queueOf(String what) {
        return "Receive".equals(what) ? qp.config().receiveQueue() : qp.config().sendQueue();
    }

    /** Fails the futures waiting on {@code queue} (every queue when null), putting the queue pair in error when any was in the device. */
    void failPending(Throwable cause, CompletionQueue queue) {
        List<OperationFuture<?>> fail = new ArrayList<>();
        synchronized (qp) {
            for (int i = 0; i < pending.length; i++) {
                OperationFuture<?> f = pending[i];
                CompletionQueue of = queueOf(pendingWhat[i]);
                if (f != null && !f.isDone() && (queue == null || queue == of)) {
                    fail.add(f); // the slot stays taken: the request may still be in the device
                }
            }
        }
        if (!fail.isEmpty()) {
            qp.abandonInDevice("its futures failed with their requests in the device (" + cause.getMessage() + ")");
        }
        for (OperationFuture<?> f : fail) {
            f.fail(cause);
        }
    }

    /** How long a future may wait on a completion queue that nobody polls before it fails. */
    static final long UNATTENDED_NANOS = 2_000_000_000L;

    /** Fails the futures past their deadline, or waiting on a queue nobody polls; the queue pair goes to error. */
    void expireFutures(long now) {
        long limit = qp.config().operationTimeout().toNanos();
        boolean sendUnattended = qp.config().sendQueue().unattendedFor(now, UNATTENDED_NANOS);
        boolean recvUnattended = qp.config().receiveQueue() == qp.config().sendQueue() ? sendUnattended
                : qp.config().receiveQueue().unattendedFor(now, UNATTENDED_NANOS);
        List<OperationFuture<?>> late = null;
        List<String> lateWhat = null;
        synchronized (qp) {
            for (int i = 0; i < pending.length; i++) {
                OperationFuture<?> f = pending[i];
                if (pendingQuiet[i]) {
                    continue;
                }
                // a receive waits for the peer's message, which may legitimately take any time: no deadline
                boolean receive = "Receive".equals(pendingWhat[i]);
                boolean unattended = receive ? recvUnattended : sendUnattended;
                if (f != null && !f.isDone() && (!receive && now - pendingSince[i] >= limit
                        || unattended && now - pendingSince[i] >= UNATTENDED_NANOS)) {
                    if (late == null) {
                        late = new ArrayList<>();
                        lateWhat = new ArrayList<>();
                    }
                    late.add(f);
                    lateWhat.add(pendingWhat[i]);
                }
            }
        }
        if (late == null) {
            return;
        }
        qp.abandonInDevice(late.size() + " of its futures failed by deadline with their requests in the device");
        for (int i = 0; i < late.size(); i++) {
            CompletionQueue queue = queueOf(lateWhat.get(i));
            late.get(i).fail(queue.isServed() || !queue.unattendedFor(now, UNATTENDED_NANOS)
                    ? new java.util.concurrent.TimeoutException(lateWhat.get(i) + " on queue pair " + qp.number()
                            + " had no completion within its operation timeout of " + qp.config().operationTimeout().toMillis()
                            + " ms (QueuePairConfig.withOperationTimeout)")
                    : new IllegalStateException(lateWhat.get(i) + " on queue pair " + qp.number() + " cannot complete: no"
                            + " Poller serves " + queue + " and nobody polls it; start one (Poller.start) or poll the"
                            + " queue yourself"));
        }
        // The queue pair is in error now: the device flushes every other request it holds and no
        // longer touches their buffers. Their futures end here rather than when the flushes are
        // polled, which a poller blocked on one of them (in a callback) would never do.
        failPending(new IllegalStateException("queue pair " + qp.number() + " was put in error when " + lateWhat.get(0)
                + " passed its deadline: this request is flushed"), null);
    }

    /**
     * Completes the future of a completion whose id carries {@link QueuePair#FUTURE_TAG}.
     *
     * @return false: a future's completion is not the caller's handler's
     */
    boolean complete(Completion c, long wrId, int status) {
        OperationFuture<?> future = null;
        String what = null;
        synchronized (qp) {
            int slot = (int) (wrId & Integer.MAX_VALUE);
            if (slot < pending.length && pending[slot] != null) {
                future = pending[slot];
                what = pendingWhat[slot];
                releaseSlot(slot);
            }
        }
        if (future != null) {
            @SuppressWarnings("unchecked")
            OperationFuture<WorkResult> f = (OperationFuture<WorkResult>) future;
            if (status == WcStatus.SUCCESS) {
                f.finish(new WorkResult(c.opcode(), c.byteLength(), c.hasImmediate() ? c.immediateData() : 0,
                        c.hasImmediate()));
            } else {
                f.fail(new CompletionFailedException(what, status, c.vendorError(), qp.number()));
            }
        }
        return false;
    }

    /** Empties every slot (the queue pair is being destroyed): the futures to fail once it is. */
    List<OperationFuture<?>> takeAll() {
        List<OperationFuture<?>> orphans = new ArrayList<>();
        for (int i = 0; i < pending.length; i++) {
            if (pending[i] != null) {
                orphans.add(pending[i]);
                pending[i] = null;
            }
        }
        return orphans;
    }
}
