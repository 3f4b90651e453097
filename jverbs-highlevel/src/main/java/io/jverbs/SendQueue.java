package io.jverbs;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The send-queue bookkeeping that RC, UC ({@link QueuePair}) and UD ({@link DatagramQueuePair})
 * share: how many send requests are outstanding, which to signal, and what each signaled
 * completion retires.
 *
 * <p>A signaled request's completion retires itself and the unsignaled requests posted before it
 * (the device completes a send queue in order). A ring holds, per outstanding signaled request,
 * that count ("cover"). Posters (serialized by the owner: one at a time) own {@link #posted},
 * the run of unsignaled requests and the ring's tail; the thread polling the completion queue
 * (one at a time) owns {@link #done} and the ring's head. Each side publishes with a release
 * store and reads the other's with an acquire load, so neither needs a lock.
 */
final class SendQueue {
    /** The answer of {@link #room}: no room for one more request. */
    public static final int FULL = -1;
    /** The answer of {@link #room}: room, unsignaled. */
    public static final int UNSIGNALED = 0;
    /** The answer of {@link #room}: room, signaled. */
    public static final int SIGNALED = 1;

    private static final VarHandle DONE;
    private static final VarHandle TAIL;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            DONE = l.findVarHandle(SendQueue.class, "done", long.class);
            TAIL = l.findVarHandle(SendQueue.class, "tail", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final int depth;
    private final int[] ring;
    /** {@code ring.length - 1}: the ring is a power of two, so a slot is a mask, not a division. */
    private final int mask;
    /** Requests posted (poster's). */
    private long posted;
    /** Requests retired (poller's). */
    private long done;
    /** Unsignaled requests posted since the last signaled one (poster's). */
    private int run;
    private long head;
    private long tail;

    /**
     * Makes the accounting of a send queue.
     *
     * @param depth the most requests outstanding at once
     */
    public SendQueue(int depth) {
        this.depth = depth;
        this.ring = new int[Integer.highestOneBit(Math.max(1, depth - 1)) << 1];
        this.mask = ring.length - 1;
    }

    /**
     * Requests posted and not yet retired (poster's view).
     *
     * @return the outstanding requests
     */
    public int outstanding() {
        return (int) (posted - (long) DONE.getAcquire(this));
    }

    /**
     * Requests retired so far.
     *
     * @return the retired requests
     */
    public long retired() {
        return (long) DONE.getAcquire(this);
    }

    /**
     * Requests posted so far.
     *
     * @return the posted requests
     */
    public long postedCount() {
        return posted;
    }

    /**
     * Whether one more request fits ({@link #FULL} when not), and whether it is signaled: when
     * the caller wants it, when {@code signalEvery} is reached, or when it fills the queue.
     *
     * @param wanted      whether the caller asked for a completion
     * @param signalEvery the longest run of unsignaled requests
     * @return {@link #FULL}, {@link #UNSIGNALED} or {@link #SIGNALED}
     */
    public int room(boolean wanted, int signalEvery) {
        int outstanding = outstanding();
        if (outstanding >= depth) {
            return FULL;
        }
        return wanted || run + 1 >= signalEvery || outstanding + 1 >= depth ? SIGNALED : UNSIGNALED;
    }

    /**
     * Counts one request about to be posted; a signaled one publishes its ring entry first (its
     * completion may be polled before the post returns).
     *
     * @param signal whether the request is signaled
     */
    public void counting(boolean signal) {
        if (signal) {
            push(run + 1);
        }
        posted++;
    }

    /**
     * The request counted by {@link #counting} was posted.
     *
     * @param signal whether it is signaled
     */
    public void posted(boolean signal) {
        run = signal ? 0 : run + 1;
    }

    /**
     * The request counted by {@link #counting} was refused: nothing can have consumed its entry.
     *
     * @param signal whether it is signaled
     */
    public void refused(boolean signal) {
        posted--;
        if (signal) {
            TAIL.setRelease(this, tail - 1);
        }
    }

    /**
     * Whether {@code n} more requests fit.
     *
     * @param n the requests
     * @return true when they fit
     */
    public boolean fits(int n) {
        return outstanding() + n <= depth;
    }

    /**
     * The unsignaled run before the next request.
     *
     * @return the unsignaled requests since the last signaled one
     */
    public int run() {
        return run;
    }

    /**
     * Counts a list of requests about to be posted: publishes the entries of its signaled ones
     * (the list's signal flags) and returns the ring's tail before them, for {@link #listRefused}.
     *
     * @param list the list, its signal flags set
     * @param n    its requests
     * @return the ring's tail before them
     */
    public long countingList(PostList list, int n) {
        long before = tail;
        run = list.recordCovers(this, n, run);
        posted += n;
        return before;
    }

    /**
     * Of a list counted by {@link #countingList}, only the first {@code posted} requests reached
     * the device: takes back the rest.
     *
     * @param list        the list
     * @param n           its requests
     * @param postedCount those that reached the device
     * @param tailBefore  what {@link #countingList} returned
     * @param runBefore   {@link #run()} before {@link #countingList}
     */
    public void listRefused(PostList list, int n, int postedCount, long tailBefore, int runBefore) {
        posted -= n - postedCount;
        TAIL.setRelease(this, tailBefore);
        run = list.recordCovers(this, postedCount, runBefore);
    }

    /**
     * Publishes one ring entry: the next signaled completion retires {@code cover} requests.
     *
     * @param cover the requests it retires
     */
    public void push(int cover) {
        ring[(int) tail & mask] = cover;
        TAIL.setRelease(this, tail + 1);
    }

    /** The poller's side: a successful send completion retires its entry's requests. */
    public void retireOne() {
        if (head != (long) TAIL.getAcquire(this)) {
            int cover = ring[(int) head & mask];
            head++;
            DONE.setRelease(this, done + cover);
        }
    }
}
