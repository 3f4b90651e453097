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
 * only this poller thread runs native code.
 */
public final class Poller implements AutoCloseable {
    private static final long SLEEP_SLICE_MS = 100;
    private final List<CompletionQueue> queues;
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
        for (CompletionQueue q : this.queues) {
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
        thread.start();
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
        try {
            while (running) {
                int work = 0;
                for (CompletionQueue q : queues) {
                    if (!q.isClosed()) {
                        work += q.poll(handler, 16);
                    }
                }
                if (work > 0) {
                    if (!sleep) {
                        idle.idle(work);
                    }
                    continue;
                }
                if (sleep) {
                    CompletionQueue q = queues.get(0);
                    if (q.isClosed()) {
                        return;
                    }
                    q.armEvents();
                    if (q.poll(handler, 16) == 0) {
                        q.waitForEvent(SLEEP_SLICE_MS);
                    }
                } else {
                    idle.idle(0);
                }
            }
        } catch (IllegalStateException closed) {
            // a queue was closed under us: nothing left to poll
            if (queues.stream().noneMatch(CompletionQueue::isClosed)) {
                failure = closed;
            }
        } catch (RuntimeException | Error e) {
            failure = e;
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
     * Stops the thread and waits for it, at most about 1 s.
     *
     * @throws IllegalStateException when the thread does not stop in time
     */
    @Override
    public void close() {
        running = false;
        try {
            if (!thread.join(Duration.ofSeconds(1))) {
                throw new IllegalStateException("the poller thread did not stop within 1 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
