package io.jverbs.perftest;

/** Throws when a run makes no progress for too long; checked cheaply from spin loops. */
final class Deadline {
    private final long limitNs;
    private long lastProgress = System.nanoTime();
    /** Polls that found nothing since the last progress. */
    private int emptyPolls;
    /** Progress seen by {@link #progressed()} and not yet timed: the next clock read times it. */
    private boolean untimedProgress;

    Deadline(long limitNs) {
        this.limitNs = limitNs;
    }

    void progress(long now) {
        lastProgress = now;
        emptyPolls = 0;
        untimedProgress = false;
    }

    /**
     * Progress without a clock read, for loops that read the clock for nothing else at that
     * point (C's latency loops read it once per iteration, for the post's timestamp): the next
     * {@link #expired} call dates the progress at its own {@code now}, which is later than the
     * progress by at most the time between two clock reads of the loop (64 empty polls, or 1024
     * spins on a byte).
     */
    void progressed() {
        emptyPolls = 0;
        untimedProgress = true;
    }

    /**
     * Counts a poll that found nothing and says whether this one should read the clock (for this
     * deadline, and a duration's end): every 64th in a row. C's loops read no clock on an empty
     * poll, and under emulation every read is a call into the emulator, on a vCPU rxe also needs.
     *
     * @return true on every 64th empty poll since the last {@link #progress}
     */
    boolean emptyPollReadsClock() {
        return (++emptyPolls & 63) == 0;
    }

    /** @return true when the time without progress exceeds the limit */
    boolean expired(long now) {
        if (untimedProgress) {
            progress(now);
            return false;
        }
        return now - lastProgress > limitNs;
    }

    long limitNs() {
        return limitNs;
    }
}
