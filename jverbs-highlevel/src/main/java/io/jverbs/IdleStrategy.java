package io.jverbs;

import java.util.concurrent.locks.LockSupport;

/**
 * What a polling loop does when a poll found no work, given the work count of the last duty
 * cycle: {@code idle.idle(cq.poll(handler, 16))}. Implementations keep per-loop state: one
 * instance per polling thread.
 */
public interface IdleStrategy {
    /** The longest park {@link #backoff(int, int, long)} accepts: 100 ms. */
    long MAX_PARK_NANOS = 100_000_000L;

    /**
     * Called after each duty cycle.
     *
     * @param workCount what the cycle did; above 0 resets any back-off
     */
    void idle(int workCount);

    /**
     * Spins without yielding: the lowest latency, a core at 100 %.
     *
     * @return a busy-spin strategy
     */
    static IdleStrategy busySpin() {
        return workCount -> {
            if (workCount == 0) {
                Thread.onSpinWait();
            }
        };
    }

    /**
     * Spins, then yields, then parks for growing intervals up to {@code maxParkNanos}.
     *
     * @param spins        idle cycles spent spinning first
     * @param yields       idle cycles spent yielding next
     * @param maxParkNanos the longest park, 1 ns to 100 ms: a completion can wait that long
     *                     unseen, and a longer park would outlast the deadline sweep's 100 ms and
     *                     let a future fail by deadline with its completion already in the queue
     * @return a back-off strategy
     * @throws IllegalArgumentException when a count is negative or the park out of range
     */
    static IdleStrategy backoff(int spins, int yields, long maxParkNanos) {
        if (spins < 0 || yields < 0) {
            throw new IllegalArgumentException("spins and yields at least 0, not " + spins + "/" + yields);
        }
        if (maxParkNanos < 1 || maxParkNanos > MAX_PARK_NANOS) {
            throw new IllegalArgumentException("the longest park is 1 ns to 100 ms, not " + maxParkNanos + " ns: a"
                    + " parked poller leaves completions unseen that long, and the futures' deadlines are swept every"
                    + " 100 ms");
        }
        return new IdleStrategy() {
            private long idleCycles;
            private long parkNanos = 1_000;

            @Override
            public void idle(int workCount) {
                if (workCount > 0) {
                    idleCycles = 0;
                    parkNanos = 1_000;
                    return;
                }
                idleCycles++;
                if (idleCycles <= spins) {
                    Thread.onSpinWait();
                } else if (idleCycles <= (long) spins + yields) {
                    Thread.yield();
                } else {
                    LockSupport.parkNanos(parkNanos);
                    parkNanos = Math.min(parkNanos * 2, maxParkNanos);
                }
            }
        };
    }

    /**
     * The default back-off: 100 spins, 10 yields, then parks up to 1 ms.
     *
     * @return a back-off strategy
     */
    static IdleStrategy backoff() {
        return backoff(100, 10, 1_000_000);
    }
}
