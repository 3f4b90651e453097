package io.jverbs.perftest;

/** Throws when a run makes no progress for too long; checked cheaply from spin loops. */
final class Deadline {
    private final long limitNs;
    private long lastProgress = System.nanoTime();
    /** Polls that found nothing since the last progress. */
    private int emptyPolls;

    Deadline(long limitNs) {
        this.limitNs = limitNs;
    }

    void progress(long now) {
        lastProgress = now;
        emptyPolls = 0;
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
        return now - lastProgress > limitNs;
    }

    long limitNs() {
        return limitNs;
    }
}
