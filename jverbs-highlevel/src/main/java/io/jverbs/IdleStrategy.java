package io.jverbs;

import java.util.concurrent.locks.LockSupport;

/**
 * What a polling loop does when a poll found no work, given the work count of the last duty
 * cycle: {@code idle.idle(cq.poll(handler, 16))}. Implementations keep per-loop state: one
 * instance per polling thread.
 */
public interface IdleStrategy {
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
     * @param maxParkNanos the longest park
     * @return a back-off strategy
     */
    static IdleStrategy backoff(int spins, int yields, long maxParkNanos) {
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
