package io.jverbs;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * A thread that polls completion queues and routes their completions (futures complete on it;
 * {@link CompletionHandler}s run on it). Idle cycles follow an {@link IdleStrategy}, or sleep on
 * the completion channel when every queue has one ({@link #sleeping}).
 *
 * <p>{@link #close()} stops the thread within a bounded time (the sleep slice, 100 ms) and waits
 * for it. A handler that throws does not stop the poller (the queue counts and reports it).
 * Futures can be awaited from any thread, virtual threads included: waiting parks the waiter;
 * only this poller thread runs native code. Waiting for a future on the poller thread itself
 * (in a handler or a callback) throws {@link IllegalStateException} instead of waiting forever.
 *
 * <p>One poller per queue: a queue another poller serves, or a closed queue, is refused. A queue
 * closed while served is dropped (the others go on being served); when the last one closes the
 * thread ends ({@link #isRunning()} false, {@link #failure()} null). When the poller ends for any
 * reason (closed, its queues closed, or a failure), the futures of its queues' queue pairs still
 * in flight fail with an {@link IllegalStateException} naming why: nothing else would complete
 * them.
 */
public final class Poller implements AutoCloseable {
    private static final long SLEEP_SLICE_MS = 100;
    private final List<CompletionQueue> queues;
    private final java.util.concurrent.CopyOnWriteArrayList<CompletionQueue> live;
    private final CompletionHandler handler;
    private final IdleStrategy idle;
    private final boolean sleep;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile Throwable failure;

    private Poller(String name, List<CompletionQueue> queues, CompletionHandler handler, IdleStrategy idle, boolean sleep) {
        this.queues = List.copyOf(queues);
        this.handler = handler;
        this.idle = idle;
        this.sleep = sleep;
        if (this.queues.isEmpty()) {
            throw new IllegalArgumentException("a poller needs at least one completion queue");
        }
        if (new java.util.HashSet<>(this.queues).size() != this.queues.size()) {
            throw new IllegalArgumentException("a completion queue is given twice");
        }
        for (CompletionQueue q : this.queues) {
            if (q.isClosed()) {
                throw new IllegalArgumentException(q + " is closed: nothing to poll");
            }
            if (q.isConfined()) {
                throw new IllegalArgumentException(q + " is confined to the thread that created it: a poller polls on"
                        + " a thread of its own (use Context.createCompletionQueue, or poll it on its owner thread)");
            }
        }
        if (sleep) {
            for (CompletionQueue q : this.queues) {
                if (!q.hasEvents()) {
                    throw new IllegalArgumentException("a sleeping poller needs completion queues with events"
                            + " (Context.createCompletionQueueWithEvents)");
                }
            }
            if (this.queues.size() != 1) {
                throw new IllegalArgumentException("a sleeping poller serves one completion queue");
            }
        }
        this.thread = Thread.ofPlatform().name(name).daemon(true).unstarted(this::run);
        List<CompletionQueue> claimed = new java.util.ArrayList<>();
        try {
            for (CompletionQueue q : this.queues) {
                q.claim(this);
                claimed.add(q);
            }
        } catch (RuntimeException e) {
            for (CompletionQueue q : claimed) {
                q.release(this, e);
            }
            throw e;
        }
        this.live = new java.util.concurrent.CopyOnWriteArrayList<>(this.queues);
        thread.start();
    }

    /** Whether the calling thread is this poller's. */
    boolean isPollerThread() {
        return Thread.currentThread() == thread;
    }

    /**
     * Starts a poller that spins or backs off per {@code idle}.
     *
     * @param handler receives completions of zero-allocation posts ({@code null}: futures only)
     * @param idle    the idle strategy
     * @param queues  the queues to poll
     * @return the started poller
     * @throws IllegalArgumentException when a queue is confined to a thread ({@link Context#createConfinedCompletionQueue})
     */
    public static Poller start(CompletionHandler handler, IdleStrategy idle, CompletionQueue... queues) {
        return new Poller("jverbs-poller", List.of(queues), handler, Objects.requireNonNull(idle), false);
    }

    /**
     * Starts a poller that sleeps on the queue's completion channel when there is no work (no CPU
     * while idle; a wake-up costs a system call and a context switch).
     *
     * @param handler receives completions of zero-allocation posts ({@code null}: futures only)
     * @param queue   a queue made by {@link Context#createCompletionQueueWithEvents}
     * @return the started poller
     * @throws IllegalArgumentException when a queue is confined to a thread ({@link Context#createConfinedCompletionQueue})
     */
    public static Poller sleeping(CompletionHandler handler, CompletionQueue queue) {
        return new Poller("jverbs-poller", List.of(queue), handler, null, true);
    }

    private void run() {
        Throwable why = null;
        try {
            while (running && !live.isEmpty()) {
                int work = 0;
                for (CompletionQueue q : live) {
                    work += pollOrDrop(q);
                }
                if (work > 0) {
                    if (!sleep) {
                        idle.idle(work);
                    }
                    continue;
                }
                if (sleep) {
                    CompletionQueue q = queues.get(0);
                    try {
                        q.armEvents();
                        if (q.poll(handler, 16) == 0) {
                            Thread.interrupted(); // the poller's own thread: an interrupt a handler left means nothing here
                            q.waitForEvent(SLEEP_SLICE_MS);
                        }
                    } catch (IllegalStateException e) {
                        if (!q.isClosed()) {
                            throw e;
                        }
                        live.remove(q); // closed under us: the loop ends
                    }
                } else {
                    idle.idle(0);
                }
            }
            why = new IllegalStateException(running ? "the Poller stopped: every completion queue it served was closed"
                    : "the Poller was closed");
        } catch (RuntimeException | Error e) {
            failure = e;
            why = new IllegalStateException("the Poller serving this queue died: " + e, e);
        } finally {
            if (why == null) {
                why = new IllegalStateException("the Poller stopped");
            }
            for (CompletionQueue q : queues) {
                q.release(this, why);
                q.finishClose(); // a destroy its close left to the poll, if any
            }
        }
    }

    /** Polls {@code q}; a queue closed under the poller is dropped, the others go on. */
    private int pollOrDrop(CompletionQueue q) {
        if (q.isClosed()) {
            q.finishClose(); // a destroy its close left to the poll
            live.remove(q);
            return 0;
        }
        try {
            return q.poll(handler, 16);
        } catch (IllegalStateException e) {
            if (!q.isClosed()) {
                throw e;
            }
            live.remove(q);
            return 0;
        }
    }

    /**
     * Returns why the poller thread stopped on its own.
     *
     * @return the exception that ended it, or {@code null}
     */
    public Throwable failure() {
        return failure;
    }

    /**
     * Returns whether the thread is still running.
     *
     * @return true while polling
     */
    public boolean isRunning() {
        return thread.isAlive();
    }

    /**
     * Stops the thread and waits for it, at most about 1 s, even when the calling thread is
     * interrupted (its interrupt flag is kept): when it returns, no handler of this poller runs
     * any more. The futures still in flight on its queues fail. From the poller's own thread (a
     * handler), it only asks the thread to stop after the current round.
     *
     * @throws IllegalStateException when the thread does not stop in time
     */
    @Override
    public void close() {
        running = false;
        if (Thread.currentThread() == thread) {
            return;
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(1).toNanos();
        boolean interrupted = false;
        while (thread.isAlive()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                break;
            }
            try {
                thread.join(Duration.ofNanos(left));
            } catch (InterruptedException e) {
                interrupted = true; // the handlers must have ended when close returns: wait on, then keep the flag
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            throw new IllegalStateException("the poller thread did not stop within 1 s");
        }
    }
}
