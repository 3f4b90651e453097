package io.jverbs.latency;

/**
 * A latency distribution as {@link HdrLatencyRecorder#distribution} took it: one consistent view.
 *
 * @param count          values recorded
 * @param sumNanos       their sum, in nanoseconds (from the recorder's mean, to its precision)
 * @param countAtOrBelow per asked bound, how many values lie at or below it (to the recorder's
 *                       precision: a value within 0.1 % of a bound may land beside it)
 * @param valuesNanos    per asked percentile, the value there, in nanoseconds
 */
public record LatencyDistribution(long count, double sumNanos, long[] countAtOrBelow, long[] valuesNanos) {
}
