package io.jverbs.latency;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * A {@link LatencyRecorder} over HdrHistogram's {@code Recorder}: recording is wait-free and
 * allocation-free from any thread; reading ({@link #percentiles()}, {@link #cumulative()})
 * folds what was recorded since the last read into a cumulative histogram. Values above
 * {@code highestNanos} are recorded as {@code highestNanos}.
 *
 * <p>HdrHistogram ({@code org.hdrhistogram:HdrHistogram}, 2.2.2 tested) is an optional dependency
 * that a program using this class puts on its class path, or on its module path with
 * {@code --add-modules HdrHistogram}. jverbs-highlevel reaches it through method handles instead
 * of a {@code requires} clause: HdrHistogram's jars carry no module name, and a published module
 * must not require one derived from a file name.
 *
 * <p>Thread-safety: {@link #recordNanos} from any threads; the readers synchronize among themselves.
 */
public final class HdrLatencyRecorder implements LatencyRecorder {
    private final Object recorder;
    private final long highest;
    private final Object total;
    private Object interval;

    /**
     * Makes a recorder with three significant digits, up to {@code highestNanos}.
     *
     * @param highestNanos the largest value kept apart (e.g. 10 s = 10_000_000_000)
     * @throws IllegalArgumentException when {@code highestNanos} is below 2
     * @throws IllegalStateException    when HdrHistogram cannot be found (the message says where to put it)
     */
    public HdrLatencyRecorder(long highestNanos) {
        if (highestNanos < 2) {
            throw new IllegalArgumentException("highestNanos " + highestNanos + " must be at least 2");
        }
        if (Hdr.MISSING != null) {
            throw new IllegalStateException(Hdr.MISSING);
        }
        this.highest = highestNanos;
        try {
            this.recorder = (Object) Hdr.NEW_RECORDER.invokeExact(highestNanos, 3);
            this.total = (Object) Hdr.NEW_HISTOGRAM.invokeExact(highestNanos, 3);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * Makes a recorder up to 10 seconds.
     *
     * @throws IllegalStateException when HdrHistogram cannot be found (the message says where to put it)
     */
    public HdrLatencyRecorder() {
        this(10_000_000_000L);
    }

    @Override
    public void recordNanos(long nanos) {
        try {
            Hdr.RECORD.invokeExact(recorder, Math.min(Math.max(nanos, 0), highest));
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * Everything recorded so far, as a copy: an {@code org.HdrHistogram.Histogram} of nanoseconds
     * the caller owns ({@code Histogram h = recorder.cumulative();}). The type is left to the
     * caller so that this module names no HdrHistogram type.
     *
     * @param <H> {@code org.HdrHistogram.Histogram} (or one of its supertypes, or {@code Object})
     * @return the copy
     * @throws ClassCastException at the caller when {@code H} is another type
     */
    @SuppressWarnings("unchecked")
    public synchronized <H> H cumulative() {
        fold();
        try {
            return (H) (Object) Hdr.COPY.invokeExact(total);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * The distribution of everything recorded so far.
     *
     * @return count, sum and percentiles in nanoseconds (zeros when nothing was recorded)
     */
    public synchronized LatencyPercentiles percentiles() {
        fold();
        try {
            long n = (long) Hdr.TOTAL_COUNT.invokeExact(total);
            if (n == 0) {
                return new LatencyPercentiles(0, 0, 0, 0, 0, 0, 0, 0);
            }
            double mean = (double) Hdr.MEAN.invokeExact(total);
            long min = (long) Hdr.MIN.invokeExact(total);
            long max = (long) Hdr.MAX.invokeExact(total);
            return new LatencyPercentiles(n, mean * n, min, at(50), at(90), at(99), at(99.9), max);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * One consistent view of everything recorded so far: the count, the sum, how many values lie
     * at or below each bound, and the values at the percentiles, all from the same fold (so a
     * histogram and a summary built from it agree).
     *
     * @param boundsNanos  bucket bounds in nanoseconds, ascending
     * @param percentiles  0..100 each
     * @return the view (zeros when nothing was recorded)
     */
    public synchronized LatencyDistribution distribution(long[] boundsNanos, double[] percentiles) {
        fold();
        try {
            long n = (long) Hdr.TOTAL_COUNT.invokeExact(total);
            long[] atOrBelow = new long[boundsNanos.length];
            long[] values = new long[percentiles.length];
            if (n == 0) {
                return new LatencyDistribution(0, 0, atOrBelow, values);
            }
            long highest = (long) Hdr.HIGHEST.invokeExact(total);
            for (int i = 0; i < boundsNanos.length; i++) {
                atOrBelow[i] = (long) Hdr.COUNT_BETWEEN.invokeExact(total, 0L, Math.min(boundsNanos[i], highest));
            }
            for (int i = 0; i < percentiles.length; i++) {
                values[i] = at(percentiles[i]);
            }
            return new LatencyDistribution(n, (double) Hdr.MEAN.invokeExact(total) * n, atOrBelow, values);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * The value at a percentile of everything recorded so far.
     *
     * @param percentile 0..100
     * @return nanoseconds (0 when nothing was recorded)
     */
    public synchronized long valueAtPercentile(double percentile) {
        fold();
        return at(percentile);
    }

    private long at(double percentile) {
        try {
            return (long) Hdr.AT_PERCENTILE.invokeExact(total, percentile);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    private void fold() {
        try {
            interval = (Object) Hdr.INTERVAL.invokeExact(recorder, interval);
            Hdr.ADD.invokeExact(total, interval);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * HdrHistogram's entry points, found once, typed over {@code Object} so that the call sites
     * name no HdrHistogram class; {@code static final}, so the JIT folds them into the callers.
     */
    private static final class Hdr {
        static final String MISSING;
        static final MethodHandle NEW_RECORDER;
        static final MethodHandle NEW_HISTOGRAM;
        static final MethodHandle RECORD;
        static final MethodHandle INTERVAL;
        static final MethodHandle ADD;
        static final MethodHandle COPY;
        static final MethodHandle TOTAL_COUNT;
        static final MethodHandle MEAN;
        static final MethodHandle MIN;
        static final MethodHandle MAX;
        static final MethodHandle AT_PERCENTILE;
        static final MethodHandle COUNT_BETWEEN;
        static final MethodHandle HIGHEST;

        static {
            MethodHandle[] h = new MethodHandle[13];
            String missing = null;
            try {
                ClassLoader loader = HdrLatencyRecorder.class.getClassLoader();
                Class<?> recorder = Class.forName("org.HdrHistogram.Recorder", false, loader);
                Class<?> histogram = Class.forName("org.HdrHistogram.Histogram", false, loader);
                Class<?> abstractHistogram = Class.forName("org.HdrHistogram.AbstractHistogram", false, loader);
                // Public classes of a package every module exports (HdrHistogram is an automatic or
                // unnamed module): the public lookup needs no read edge.
                MethodHandles.Lookup l = MethodHandles.publicLookup();
                MethodType valueDigits = MethodType.methodType(void.class, long.class, int.class);
                h[0] = l.findConstructor(recorder, valueDigits);
                h[1] = l.findConstructor(histogram, valueDigits);
                h[2] = l.findVirtual(recorder, "recordValue", MethodType.methodType(void.class, long.class));
                h[3] = l.findVirtual(recorder, "getIntervalHistogram", MethodType.methodType(histogram, histogram));
                h[4] = l.findVirtual(abstractHistogram, "add", MethodType.methodType(void.class, abstractHistogram));
                h[5] = l.findVirtual(histogram, "copy", MethodType.methodType(histogram));
                h[6] = l.findVirtual(abstractHistogram, "getTotalCount", MethodType.methodType(long.class));
                h[7] = l.findVirtual(abstractHistogram, "getMean", MethodType.methodType(double.class));
                h[8] = l.findVirtual(abstractHistogram, "getMinValue", MethodType.methodType(long.class));
                h[9] = l.findVirtual(abstractHistogram, "getMaxValue", MethodType.methodType(long.class));
                h[10] = l.findVirtual(abstractHistogram, "getValueAtPercentile",
                        MethodType.methodType(long.class, double.class));
                h[11] = l.findVirtual(abstractHistogram, "getCountBetweenValues",
                        MethodType.methodType(long.class, long.class, long.class));
                h[12] = l.findVirtual(abstractHistogram, "getHighestTrackableValue", MethodType.methodType(long.class));
                for (int i = 0; i < h.length; i++) {
                    h[i] = h[i].asType(h[i].type().erase());
                }
            } catch (ClassNotFoundException | LinkageError e) {
                missing = "HdrLatencyRecorder needs HdrHistogram (org.hdrhistogram:HdrHistogram, 2.2.2 tested): "
                        + "put its jar on the class path, or on the module path with --add-modules HdrHistogram ("
                        + e + ")";
            } catch (ReflectiveOperationException e) {
                missing = "HdrLatencyRecorder cannot use this HdrHistogram (2.2.2 tested): " + e;
            }
            MISSING = missing;
            NEW_RECORDER = h[0];
            NEW_HISTOGRAM = h[1];
            RECORD = h[2];
            INTERVAL = h[3];
            ADD = h[4];
            COPY = h[5];
            TOTAL_COUNT = h[6];
            MEAN = h[7];
            MIN = h[8];
            MAX = h[9];
            AT_PERCENTILE = h[10];
            COUNT_BETWEEN = h[11];
            HIGHEST = h[12];
        }

        private Hdr() {
        }
    }
}
