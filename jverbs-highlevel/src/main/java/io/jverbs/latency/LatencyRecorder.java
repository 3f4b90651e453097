package io.jverbs.latency;

/**
 * Where a connection's operation latencies go: one call per completed, signaled work request
 * (post to completion, in nanoseconds). Implementations must not allocate and must not block:
 * {@link LatencyTracker} calls this on the polling thread, inside the completion loop. If it
 * throws, that latency is lost, the exception goes to the completion queue's
 * {@link io.jverbs.CompletionQueue#onHandlerError} listener, and the completion is routed to its
 * future or handler as usual.
 * {@link HdrLatencyRecorder} is the HdrHistogram-backed one.
 */
@FunctionalInterface
public interface LatencyRecorder {
    /**
     * Records one latency.
     *
     * @param nanos post-to-completion time, non-negative
     */
    void recordNanos(long nanos);
}
