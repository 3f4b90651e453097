package io.jverbs.latency;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * A {@link LatencyRecorder} over HdrHistogram's {@link Recorder}: recording is wait-free and
 * allocation-free from any thread; reading ({@link #percentiles()}, {@link #cumulative()})
 * folds what was recorded since the last read into a cumulative histogram. Values above
 * {@code highestNanos} are recorded as {@code highestNanos}.
 *
 * <p>HdrHistogram is an optional dependency of jverbs-highlevel ({@code requires static}): a
 * program that uses this class puts {@code org.hdrhistogram:HdrHistogram} on its path.
 *
 * <p>Thread-safety: {@link #recordNanos} from any threads; the readers synchronize among themselves.
 */
public final class HdrLatencyRecorder implements LatencyRecorder {
    private final Recorder recorder;
    private final long highest;
    private final Histogram total;
    private Histogram interval;

    /**
     * Makes a recorder with three significant digits, up to {@code highestNanos}.
     *
     * @param highestNanos the largest value kept apart (e.g. 10 s = 10_000_000_000)
     * @throws IllegalArgumentException when {@code highestNanos} is below 2
     */
    public HdrLatencyRecorder(long highestNanos) {
        if (highestNanos < 2) {
            throw new IllegalArgumentException("highestNanos " + highestNanos + " must be at least 2");
        }
        this.highest = highestNanos;
        this.recorder = new Recorder(highestNanos, 3);
        this.total = new Histogram(highestNanos, 3);
    }

    /** Makes a recorder up to 10 seconds. */
    public HdrLatencyRecorder() {
        this(10_000_000_000L);
    }

    @Override
    public void recordNanos(long nanos) {
        recorder.recordValue(Math.min(Math.max(nanos, 0), highest));
    }

    /**
     * Everything recorded so far, as a copy.
     *
     * @return a histogram of nanoseconds the caller owns
     */
    public synchronized Histogram cumulative() {
        fold();
        return total.copy();
    }

    /**
     * The distribution of everything recorded so far.
     *
     * @return count, sum and percentiles in nanoseconds (zeros when nothing was recorded)
     */
    public synchronized LatencyPercentiles percentiles() {
        fold();
        long n = total.getTotalCount();
        if (n == 0) {
            return new LatencyPercentiles(0, 0, 0, 0, 0, 0, 0, 0);
        }
        return new LatencyPercentiles(n, total.getMean() * n, total.getMinValue(), total.getValueAtPercentile(50),
                total.getValueAtPercentile(90), total.getValueAtPercentile(99), total.getValueAtPercentile(99.9),
                total.getMaxValue());
    }

    /**
     * The value at a percentile of everything recorded so far.
     *
     * @param percentile 0..100
     * @return nanoseconds (0 when nothing was recorded)
     */
    public synchronized long valueAtPercentile(double percentile) {
        fold();
        return total.getValueAtPercentile(percentile);
    }

    private void fold() {
        interval = recorder.getIntervalHistogram(interval);
        total.add(interval);
    }
}
