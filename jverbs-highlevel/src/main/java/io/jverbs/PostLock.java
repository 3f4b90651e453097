package io.jverbs;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/**
 * The lock of a data-path queue: the posts of a queue pair, the polls of a completion queue, and
 * their destroy. One compare-and-set to take it and a release store to give it back — a monitor
 * costs two atomic operations per operation and more when biased towards another thread, which
 * was a third of the high-level post + poll (measured with {@code HotPathSplitBench}).
 *
 * <p>Never held across a blocking call or a callback into user code, so a waiter spins briefly,
 * then yields, then parks for a few microseconds at a time (in Java, where it can reach a
 * safepoint). Not reentrant: the owner is recorded so that a re-entry is an exception, not a
 * self-deadlock.
 *
 * <p>A lock made confined to a thread (the queue of {@link QueuePairConfig#confined()} or
 * {@link Context#createConfinedCompletionQueue}) takes no compare-and-set: only that thread may
 * take it ({@link WrongThreadException} otherwise), so a plain flag is enough to refuse a
 * re-entry and to tell the destroy that the owner is inside. Once that thread has ended, the
 * close (taken as {@code "close"}) is accepted from any thread.
 */
final class PostLock {
    private static final VarHandle OWNER;

    static {
        try {
            OWNER = MethodHandles.lookup().findVarHandle(PostLock.class, "owner", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The holder's {@link Thread#threadId()}, 0 when free: a long, so taking and giving back need no GC barrier. */
    @SuppressWarnings("unused") // through OWNER
    private volatile long owner;
    /** What the lock guards, named in the wrong-thread message. */
    private final Resource guarded;
    /** The one thread allowed to take a confined lock, or null for a shared one. */
    private final Thread confinedTo;
    /** A confined lock's holder is inside (read and written only by {@link #confinedTo}). */
    private boolean confinedHeld;

    /**
     * Makes the lock of {@code guarded}.
     *
     * @param guarded    the queue it guards, for messages
     * @param confinedTo the only thread that may take it, or null when any thread may
     */
    public PostLock(Resource guarded, Thread confinedTo) {
        this.guarded = guarded;
        this.confinedTo = confinedTo;
    }

    /**
     * Returns the thread a confined lock belongs to.
     *
     * @return that thread, or null for a shared lock
     */
    public Thread confinedTo() {
        return confinedTo;
    }

    /**
     * Takes the lock, waiting for its holder.
     *
     * @param what the operation, for the re-entry message
     * @throws IllegalStateException when the calling thread holds it already
     * @throws WrongThreadException when the lock is confined to another thread
     */
    public void lock(String what) {
        if (confinedTo != null) {
            lockConfined(what);
            return;
        }
        long me = Thread.currentThread().threadId();
        if (!OWNER.compareAndSet(this, 0L, me)) {
            lockSlow(me, what);
        }
    }

    /**
     * Takes the lock if it is free, without waiting.
     *
     * @param what the operation, for the re-entry message
     * @return true when taken (a confined lock is always taken by its thread)
     * @throws IllegalStateException when a confined lock's thread holds it already
     * @throws WrongThreadException when the lock is confined to another thread
     */
    public boolean tryLock(String what) {
        if (confinedTo != null) {
            lockConfined(what);
            return true;
        }
        return OWNER.compareAndSet(this, 0L, Thread.currentThread().threadId());
    }

    private void lockConfined(String what) {
        // once its thread has ended, a confined queue's close (and only that) may come from any thread
        if (Thread.currentThread() != confinedTo && (confinedTo.isAlive() || !"close".equals(what))) {
            throw guarded.wrongThread(confinedTo, what);
        }
        if (confinedHeld) {
            throw reentered(what);
        }
        confinedHeld = true;
    }

    private static IllegalStateException reentered(String what) {
        return new IllegalStateException(what + " re-entered by the thread already inside it (from a completion handler?)");
    }

    private void lockSlow(long me, String what) {
        for (int spins = 0; !OWNER.compareAndSet(this, 0L, me); spins++) {
            if ((long) OWNER.getOpaque(this) == me) {
                throw reentered(what);
            }
            if (spins < 64) {
                Thread.onSpinWait();
            } else if (spins < 128) {
                Thread.yield();
            } else {
                LockSupport.parkNanos(20_000);
            }
        }
    }

    /** Gives the lock back; only its holder calls this. */
    public void unlock() {
        if (confinedTo != null) {
            confinedHeld = false;
        } else {
            OWNER.setRelease(this, 0L);
        }
    }

    /**
     * Returns whether the calling thread holds the lock.
     *
     * @return true inside the holder's critical section
     */
    public boolean heldByCurrentThread() {
        if (confinedTo != null) {
            return confinedHeld && Thread.currentThread() == confinedTo;
        }
        return (long) OWNER.getOpaque(this) == Thread.currentThread().threadId();
    }
}
