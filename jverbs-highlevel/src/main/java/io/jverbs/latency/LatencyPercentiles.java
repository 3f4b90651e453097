package io.jverbs.latency;

/**
 * A latency distribution summed up, in nanoseconds.
 *
 * @param count    recorded values
 * @param sumNanos their sum (from the histogram's mean: exact to its precision)
 * @param minNanos the smallest
 * @param p50Nanos the median
 * @param p90Nanos the 90th percentile
 * @param p99Nanos the 99th percentile
 * @param p999Nanos the 99.9th percentile
 * @param maxNanos the largest
 */
public record LatencyPercentiles(long count, double sumNanos, long minNanos, long p50Nanos, long p90Nanos, long p99Nanos,
                                 long p999Nanos, long maxNanos) {
}
