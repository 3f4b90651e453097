package io.jverbs.perftest;

/** Throws when a run makes no progress for too long; checked cheaply from spin loops. */
final class Deadline {
    private final long limitNs;
    private long lastProgress = System.nanoTime();

    Deadline(long limitNs) {
        this.limitNs = limitNs;
    }

    void progress(long now) {
        lastProgress = now;
    }

    /** @return true when the time without progress exceeds the limit */
    boolean expired(long now) {
        return now - lastProgress > limitNs;
    }

    long limitNs() {
        return limitNs;
    }
}
