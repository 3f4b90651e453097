package io.jverbs.perftest;

import java.util.Arrays;

/**
 * C perftest's latency statistics over the post timestamps of a run: the gaps between
 * consecutive posts (halved for write and send), sorted, the two largest dropped; typical is the
 * median, the standard deviation is taken over whole-microsecond deviations as C computes it, and
 * the 99 % and 99.9 % values are the sorted gaps at {@code ceil(0.99 n)} and {@code ceil(0.999 n)}.
 *
 * @param size     message size
 * @param iters    iterations
 * @param min      usec
 * @param max      usec
 * @param typical  usec (median)
 * @param avg      usec
 * @param stdev    usec
 * @param p99      usec
 * @param p999     usec
 * @param unsorted every gap in usec, in order
 * @param sorted   every gap but the two largest in usec, sorted
 */
record LatStats(long size, long iters, double min, double max, double typical, double avg, double stdev, double p99,
                double p999, double[] unsorted, double[] sorted) {
    /** C's {@code LAT_MEASURE_TAIL}: the slowest gaps the row leaves out. */
    static final int TAIL = 2;

    static LatStats of(long size, long[] tposted, int rttFactor) {
        int count = tposted.length - 1;
        if (count - TAIL < 1) {
            throw new PerftestException("too few iterations for latency statistics: " + tposted.length);
        }
        long[] delta = new long[count];
        for (int i = 0; i < count; i++) {
            delta[i] = tposted[i + 1] - tposted[i];
        }
        double q = 1000.0 * rttFactor;
        double[] unsorted = new double[count];
        for (int i = 0; i < count; i++) {
            unsorted[i] = delta[i] / q;
        }
        Arrays.sort(delta);
        int n = count - TAIL;
        long median = (n - 1) % 2 != 0 ? (delta[n / 2] + delta[n / 2 - 1]) / 2 : delta[n / 2];
        double sum = 0;
        for (int i = 0; i < n; i++) {
            sum += delta[i] / q;
        }
        double avg = sum / n;
        double var = 0;
        for (int i = 0; i < n; i++) {
            int d = (int) (avg - delta[i] / q); // C truncates each deviation to an int
            var += (double) d * d;
        }
        int i99 = (int) Math.ceil(n * 0.99);
        int i999 = (int) Math.ceil(n * 0.999);
        double[] sorted = new double[n];
        for (int i = 0; i < n; i++) {
            sorted[i] = delta[i] / q;
        }
        return new LatStats(size, tposted.length, delta[0] / q, delta[n] / q, median / q, avg, Math.sqrt(var / n),
                delta[i99] / q, delta[i999] / q, unsorted, sorted);
    }
}
