package io.jverbs.latency;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Per-connection latency recording for the hot path, allocation-free: the posting thread calls
 * {@link #posted} after each successful post of a send-queue work request, the polling thread
 * calls {@link #completed} for each successful send-queue completion (and {@link #failed} for a
 * failed one). Send-queue completions of a reliable-connected queue pair arrive in posting order,
 * so the tracker pairs each completion with the oldest outstanding signaled post, and hands
 * {@code now − postedAt} to the {@link LatencyRecorder}. Unsignaled posts are counted (operations
 * and bytes) but not timed: their completion is never seen.
 *
 * <p>Thread-safety: one posting thread at a time (the queue pair's post lock) and one polling
 * thread at a time (the completion queue's poll lock); the two may run concurrently. The counts
 * may be read from any thread. Nothing here allocates after construction.
 */
public final class LatencyTracker {
    private static final VarHandle TAIL;
    private static final VarHandle HEAD;
    private static final VarHandle OPS;
    private static final VarHandle BYTES;
    private static final VarHandle TIMED;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            TAIL = l.findVarHandle(LatencyTracker.class, "tail", long.class);
            HEAD = l.findVarHandle(LatencyTracker.class, "head", long.class);
            OPS = l.findVarHandle(LatencyTracker.class, "postedOperations", long.class);
            BYTES = l.findVarHandle(LatencyTracker.class, "postedBytes", long.class);
            TIMED = l.findVarHandle(LatencyTracker.class, "timedOperations", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final LatencyRecorder recorder;
    private final long[] postedAt;
    private final int mask;
    /** Written by the posting thread only (release), read by the poller (acquire). */
    private long tail;
    /** Written by the polling thread only. */
    private long head;
    private long postedOperations;
    private long postedBytes;
    private long timedOperations;
    private long dropped;

    /**
     * Makes a tracker.
     *
     * @param recorder         where latencies go
     * @param maxSignaledInFlight the most signaled work requests outstanding at once (the send
     *                         queue's depth is always enough); rounded up to a power of two
     * @throws IllegalArgumentException when {@code maxSignaledInFlight} is below 1 or above 2<sup>30</sup>
     */
    public LatencyTracker(LatencyRecorder recorder, int maxSignaledInFlight) {
        if (maxSignaledInFlight < 1 || maxSignaledInFlight > 1 << 30) {
            throw new IllegalArgumentException("maxSignaledInFlight " + maxSignaledInFlight + " is outside 1..2^30");
        }
        this.recorder = java.util.Objects.requireNonNull(recorder, "recorder");
        int capacity = Integer.highestOneBit(maxSignaledInFlight);
        this.postedAt = new long[capacity < maxSignaledInFlight ? capacity << 1 : capacity];
        this.mask = postedAt.length - 1;
    }

    /**
     * How many signaled requests it can time in flight at once: {@code maxSignaledInFlight}
     * rounded up to a power of two. {@link io.jverbs.QueuePair#trackLatency} refuses a tracker
     * smaller than the queue pair's send depth.
     *
     * @return the capacity
     */
    public int capacity() {
        return postedAt.length;
    }

    /**
     * Called by the posting thread right <em>before</em> a send-queue work request is handed to the
     * provider: its completion may be polled on another thread before the post call returns, and
     * must find its timestamp. If the provider then refuses it, call {@link #refused}.
     *
     * @param lengthBytes the request's payload length
     * @param signaled    whether it asks for a completion (including moderation's forced ones)
     */
    public void posted(int lengthBytes, boolean signaled) {
        OPS.setOpaque(this, postedOperations + 1);
        BYTES.setOpaque(this, postedBytes + lengthBytes);
        if (signaled) {
            long t = tail;
            if (t - (long) HEAD.getAcquire(this) < postedAt.length) {
                postedAt[(int) (t & mask)] = System.nanoTime();
                TAIL.setRelease(this, t + 1);
            } else {
                dropped++; // more signaled requests in flight than declared: this one is not timed
            }
        }
    }

    /**
     * Called by the posting thread when the provider refused a request announced with
     * {@link #posted}: takes the announcement back. No completion can have consumed it (a refused
     * request completes nothing, and later posts wait for this one), provided the tracker was sized
     * for the send queue's depth, so the announcement was timed.
     *
     * @param lengthBytes the request's payload length, as announced
     * @param signaled    as announced
     */
    public void refused(int lengthBytes, boolean signaled) {
        OPS.setOpaque(this, postedOperations - 1);
        BYTES.setOpaque(this, postedBytes - lengthBytes);
        if (signaled && tail != (long) HEAD.getAcquire(this)) {
            TAIL.setRelease(this, tail - 1);
        }
    }

    /** Called by the polling thread for each successful send-queue completion: records its latency. */
    public void completed() {
        long h = head;
        if (h == (long) TAIL.getAcquire(this)) {
            return; // a completion for an untimed post
        }
        long latency = System.nanoTime() - postedAt[(int) (h & mask)];
        HEAD.setRelease(this, h + 1);
        TIMED.setOpaque(this, timedOperations + 1);
        recorder.recordNanos(Math.max(0, latency));
    }

    /**
     * Called by the polling thread for a failed completion of its queue pair (a failed completion's
     * opcode is not defined, so send and receive side alike): the queue pair is in error and the
     * rest of its work is flushed, so outstanding timings are forgotten.
     */
    public void failed() {
        HEAD.setRelease(this, (long) TAIL.getAcquire(this));
    }

    /**
     * Work requests posted so far.
     *
     * @return the count (any thread; may lag a concurrent post)
     */
    public long postedOperations() {
        return (long) OPS.getOpaque(this);
    }

    /**
     * Payload bytes posted so far.
     *
     * @return the sum of the posted lengths
     */
    public long postedBytes() {
        return (long) BYTES.getOpaque(this);
    }

    /**
     * Completions timed so far.
     *
     * @return the number of latencies handed to the recorder
     */
    public long timedOperations() {
        return (long) TIMED.getOpaque(this);
    }

    /**
     * The recorder this tracker feeds.
     *
     * @return the recorder
     */
    public LatencyRecorder recorder() {
        return recorder;
    }
}
