package io.jverbs.cm;

import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The deadlines of calls and connects of the session layer, kept off the loops' threads so that
 * they end in time even when a handler blocks its loop: one daemon thread for the process
 * ({@code jverbs-call-timeouts}), made on first use and ended 10 s after the last deadline. Calls
 * cost no timer each: while any waits, a sweep every 10 ms fails those past their deadline.
 */
final class Timers {
    private static final ScheduledThreadPoolExecutor TIMERS = timers();

    private Timers() {
    }

    private static ScheduledThreadPoolExecutor timers() {
        ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1,
                r -> Thread.ofPlatform().name("jverbs-call-timeouts").daemon(true).unstarted(r));
        t.setRemoveOnCancelPolicy(true);
        t.setKeepAliveTime(10, TimeUnit.SECONDS);
        t.allowCoreThreadTimeOut(true);
        return t;
    }

    /** Runs {@code action} after {@code delay} unless the returned future is cancelled first. */
    static ScheduledFuture<?> schedule(Runnable action, Duration delay) {
        return TIMERS.schedule(action, delay.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** Sessions with calls waiting for replies: the sweep fails the calls past their deadline. */
    private static final java.util.Set<Session> WATCHED = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private static final java.util.concurrent.atomic.AtomicReference<ScheduledFuture<?>> SWEEP =
            new java.util.concurrent.atomic.AtomicReference<>();

    /** Has the calls of {@code s} looked at every 10 ms until none waits. */
    static void watch(Session s) {
        WATCHED.add(s);
        if (SWEEP.get() == null) {
            startSweep();
        }
    }

    private static synchronized void startSweep() {
        if (SWEEP.get() == null) {
            SWEEP.set(TIMERS.scheduleWithFixedDelay(Timers::sweep, 10, 10, TimeUnit.MILLISECONDS));
        }
    }

    private static void sweep() {
        long now = System.nanoTime();
        for (Session s : WATCHED) {
            if (s.expireCalls(now) == 0) {
                WATCHED.remove(s);
                if (s.expireCalls(now) > 0) {
                    WATCHED.add(s); // a call came in between: keep watching
                }
            }
        }
        if (WATCHED.isEmpty()) {
            synchronized (Timers.class) {
                ScheduledFuture<?> running = SWEEP.getAndSet(null);
                if (running != null) {
                    running.cancel(false);
                }
            }
            if (!WATCHED.isEmpty()) {
                startSweep(); // a session was watched while the sweep stopped
            }
        }
    }
}
