package io.jverbs.micrometer;

import io.jverbs.counters.Counter;
import io.jverbs.counters.CounterGroup;
import io.jverbs.counters.CounterSnapshot;
import io.jverbs.counters.CounterUnit;
import io.jverbs.counters.RdmaCounters;
import io.jverbs.latency.HdrLatencyRecorder;
import io.jverbs.latency.LatencyPercentiles;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.ToLongFunction;

/**
 * RDMA metrics for a Micrometer registry, named so that Micrometer's Prometheus naming gives the
 * series of jverbs-prometheus' {@code RdmaMetrics}:
 *
 * <ul>
 * <li>every port counter of every device as a {@link FunctionCounter} tagged {@code device} and
 *     {@code port}: {@code counters/NAME} as {@code rdma.NAME}, {@code hw_counters/NAME} as
 *     {@code rdma.hw.NAME}; the PMA's data counters in bytes (base unit {@code bytes}), so that
 *     {@code hw_counters/sent_pkts} is {@code rdma_hw_sent_pkts_total} in Prometheus;</li>
 * <li>per connection bound with {@link #bindConnection}, tagged {@code connection}: a
 *     {@link FunctionTimer} {@code rdma.connection.latency} (count and total time of every
 *     operation the connection's tracker timed) and its percentiles as gauges
 *     {@code rdma.connection.latency.percentile} tagged {@code phi} (0.5, 0.9, 0.99, 0.999), in
 *     seconds, as Micrometer publishes a timer's percentiles.</li>
 * </ul>
 *
 * <p>Devices and ports are those present when {@link #bindTo} runs; counters are read when a
 * meter is read, at most once per read interval for all meters ({@link #of(RdmaCounters,
 * Duration)}), so the registry's publishing rate does not set the rate of sysfs reads. A counter
 * that cannot be read keeps its last value.
 *
 * <p>Thread-safety: meters may be read concurrently; reads that find the interval over read the
 * devices once between them.
 */
// Micrometer's types in this API are not re-exported (an automatic module cannot be): a service that
// binds these meters requires Micrometer itself.
@SuppressWarnings("exports")
public final class RdmaMeterBinder implements MeterBinder {
    private static final double[] PHI = {0.5, 0.9, 0.99, 0.999};
    private final RdmaCounters counters;
    private final long readIntervalNanos;
    private final Object readLock = new Object();
    // guarded by readLock: the last value of each device/port/group/name
    private final Map<String, Long> values = new HashMap<>();
    private long lastReadNanos;
    private boolean read;

    private RdmaMeterBinder(RdmaCounters counters, Duration readInterval) {
        this.counters = Objects.requireNonNull(counters, "counters");
        if (readInterval.isNegative()) {
            throw new IllegalArgumentException("the read interval must be zero or more, not " + readInterval);
        }
        this.readIntervalNanos = readInterval.toNanos();
    }

    /**
     * Meters of every device {@code counters} lists, read at most once a second.
     *
     * @param counters where counters are read ({@link RdmaCounters#system()} on a host)
     * @return the binder (not yet bound)
     */
    public static RdmaMeterBinder of(RdmaCounters counters) {
        return of(counters, Duration.ofSeconds(1));
    }

    /**
     * Meters of every device {@code counters} lists, read at most once per {@code readInterval}.
     *
     * @param counters     where counters are read
     * @param readInterval zero reads at every meter read
     * @return the binder (not yet bound)
     * @throws IllegalArgumentException when the interval is negative
     */
    public static RdmaMeterBinder of(RdmaCounters counters, Duration readInterval) {
        return new RdmaMeterBinder(counters, Objects.requireNonNull(readInterval, "readInterval"));
    }

    /**
     * Registers a {@link FunctionCounter} for every counter of every port present now.
     *
     * @param registry the service's registry
     */
    @Override
    public void bindTo(MeterRegistry registry) {
        for (String device : counters.devices()) {
            for (int port : counters.ports(device)) {
                CounterSnapshot s;
                try {
                    s = counters.snapshot(device, port);
                } catch (java.util.NoSuchElementException gone) {
                    continue;
                }
                remember(s);
                for (Counter c : s.counters()) {
                    String key = key(device, port, c.group(), c.name());
                    FunctionCounter.Builder<RdmaMeterBinder> b = FunctionCounter.builder(meterName(c), this,
                                    binder -> binder.value(key))
                            .tags(Tags.of("device", device, "port", Integer.toString(port)))
                            .description("RDMA port counter " + c.group().directory() + "/" + c.name());
                    if (c.unit() == CounterUnit.BYTES) {
                        b.baseUnit("bytes");
                    }
                    b.register(registry);
                }
            }
        }
    }

    /**
     * The Micrometer name of a counter.
     *
     * @param c the counter
     * @return {@code rdma.NAME} or {@code rdma.hw.NAME}
     */
    public static String meterName(Counter c) {
        String base = c.name().replaceAll("[^a-zA-Z0-9_]", "_");
        return "rdma." + (c.group() == CounterGroup.HW_COUNTERS ? "hw." : "") + base;
    }

    /**
     * Registers a connection's latency: a {@link FunctionTimer} of the operations its tracker
     * timed and their percentiles, tagged {@code connection=name}.
     *
     * @param registry the registry
     * @param name     the tag value
     * @param latency  the recorder the connection's tracker feeds; read when the meters are read
     * @return the meters made, for {@link MeterRegistry#remove(Meter)} when the connection ends
     */
    public static List<Meter> bindConnection(MeterRegistry registry, String name, HdrLatencyRecorder latency) {
        Objects.requireNonNull(latency, "latency");
        Tags tags = Tags.of("connection", Objects.requireNonNull(name, "name"));
        List<Meter> made = new ArrayList<>();
        made.add(FunctionTimer.builder("rdma.connection.latency", latency, r -> r.percentiles().count(),
                        r -> r.percentiles().sumNanos(), TimeUnit.NANOSECONDS)
                .tags(tags).description("Latency of the operations the connection's tracker timed")
                .register(registry));
        for (double phi : PHI) {
            ToLongFunction<LatencyPercentiles> at = percentile(phi);
            made.add(Gauge.builder("rdma.connection.latency.percentile", latency,
                            r -> at.applyAsLong(r.percentiles()) / 1e9)
                    .tags(tags.and("phi", Double.toString(phi))).baseUnit("seconds")
                    .description("A percentile of the connection's latency since it was bound")
                    .register(registry));
        }
        return made;
    }

    private static ToLongFunction<LatencyPercentiles> percentile(double phi) {
        if (phi == 0.5) {
            return LatencyPercentiles::p50Nanos;
        }
        if (phi == 0.9) {
            return LatencyPercentiles::p90Nanos;
        }
        return phi == 0.99 ? LatencyPercentiles::p99Nanos : LatencyPercentiles::p999Nanos;
    }

    private static String key(String device, int port, CounterGroup group, String name) {
        return device + '/' + port + '/' + group + '/' + name;
    }

    private void remember(CounterSnapshot s) {
        synchronized (readLock) {
            for (Counter c : s.counters()) {
                values.put(key(s.device(), s.port(), c.group(), c.name()), c.value());
            }
        }
    }

    /** The counter's value, the devices read again when the interval is over. */
    private double value(String key) {
        synchronized (readLock) {
            long now = System.nanoTime();
            if (!read || now - lastReadNanos >= readIntervalNanos) {
                read = true;
                lastReadNanos = now;
                for (CounterSnapshot s : counters.snapshotAll()) {
                    for (Counter c : s.counters()) {
                        values.put(key(s.device(), s.port(), c.group(), c.name()), c.value());
                    }
                }
            }
            Long v = values.get(key);
            if (v == null) {
                return Double.NaN;
            }
            return v < 0 ? Math.pow(2, 64) + v : v; // 64-bit counters read as unsigned
        }
    }
}
