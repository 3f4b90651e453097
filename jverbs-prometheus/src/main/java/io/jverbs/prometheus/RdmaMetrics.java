package io.jverbs.prometheus;

import io.jverbs.counters.Counter;
import io.jverbs.counters.CounterError;
import io.jverbs.counters.CounterGroup;
import io.jverbs.counters.CounterSnapshot;
import io.jverbs.counters.CounterUnit;
import io.jverbs.counters.ProcessResources;
import io.jverbs.counters.RdmaCounters;
import io.jverbs.latency.HdrLatencyRecorder;
import io.jverbs.latency.LatencyTracker;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot.HistogramDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.prometheus.metrics.model.snapshots.Quantile;
import io.prometheus.metrics.model.snapshots.Quantiles;
import io.prometheus.metrics.model.snapshots.SummarySnapshot;
import io.prometheus.metrics.model.snapshots.SummarySnapshot.SummaryDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Unit;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;

/**
 * RDMA metrics for a Prometheus registry of the official Java client:
 *
 * <ul>
 * <li>every port counter as a counter named after the driver's file, with {@code device} and
 *     {@code port} labels: {@code counters/NAME} as {@code rdma_NAME_total}, {@code hw_counters/NAME}
 *     as {@code rdma_hw_NAME_total}, the PMA's data counters in bytes
 *     ({@code rdma_port_xmit_data_bytes_total});</li>
 * <li>{@code rdma_hw_counters_lifespan_seconds} (the kernel's sysfs cache time) and
 *     {@code rdma_counter_read_error{device,port,counter}} = 1 for each counter that failed to read
 *     this time (the others are exported regardless);</li>
 * <li>{@code rdma_process_resources{device,type}}: the queue pairs, completion queues, memory
 *     regions and protection domains this process holds (through netlink; absent without it);</li>
 * <li>{@code rdma_counter_reads_total}: how many times the devices were read (see the read
 *     interval below);</li>
 * <li>per connection registered with {@link #addConnection}, under {@code connection="name"}:
 *     {@code rdma_connection_latency_histogram_seconds}, a histogram with the buckets of
 *     {@link #latencyBucketsSeconds()} (1 µs to 100 ms), which sums across connections and
 *     instances ({@code histogram_quantile} over {@code rate(..._bucket)});
 *     {@code rdma_connection_latency_seconds}, a summary of the same values (quantiles 0.5, 0.9,
 *     0.99, 0.999 since the connection was added, exact to the recorder's three digits, but not
 *     to be averaged across instances); and with a tracker
 *     {@code rdma_connection_posted_operations_total} and {@code rdma_connection_posted_bytes_total}.</li>
 * </ul>
 *
 * <p>Device counters are read at a scrape, at most once per read interval ({@link #of(RdmaCounters,
 * Set, Duration)}; zero, the default, reads at every scrape): scrapes within the interval get the
 * last read's values, so the scrape rate (several Prometheus servers, a busy dashboard) does not
 * set the rate of sysfs and netlink reads. Connection metrics are computed at every scrape (they
 * are in this process's memory).
 *
 * <p>The Prometheus client is an optional dependency of jverbs-highlevel ({@code requires static});
 * a service that uses this class has {@code io.prometheus:prometheus-metrics-core} already.
 *
 * <p>Thread-safety: scrapes may run concurrently with each other and with
 * {@link #addConnection}/{@link #removeConnection}; concurrent scrapes that find the interval over
 * read the devices once between them.
 */
// The Prometheus model in this API is not re-exported (requires static, not transitive): a service
// that registers this collector requires the client itself.
@SuppressWarnings("exports")
public final class RdmaMetrics implements MultiCollector {
    private static final Quantile[] NO_QUANTILES = new Quantile[0];
    private static final double[] QUANTILES = {0.5, 0.9, 0.99, 0.999};
    /** {@link #QUANTILES} as percentiles. */
    private static final double[] PERCENTILES = {50, 90, 99, 99.9};
    /** Finite bucket bounds of the latency histogram, seconds: RDMA round trips sit between them. */
    private static final double[] BUCKETS = {1e-6, 2e-6, 5e-6, 10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 5e-3,
            10e-3, 20e-3, 50e-3, 100e-3};
    /** {@link #BUCKETS} in nanoseconds. */
    private static final long[] BOUNDS_NANOS = java.util.Arrays.stream(BUCKETS).mapToLong(b -> Math.round(b * 1e9)).toArray();
    private final RdmaCounters counters;
    private final Predicate<String> devices;
    private final long readIntervalNanos;
    private final Map<String, Connection> connections = new ConcurrentHashMap<>();
    private final Object readLock = new Object();
    // guarded by readLock
    private List<MetricSnapshot> lastRead;
    private long lastReadNanos;
    private long reads;

    private record Connection(HdrLatencyRecorder latency, LatencyTracker tracker) {
    }

    private RdmaMetrics(RdmaCounters counters, Predicate<String> devices, Duration readInterval) {
        this.counters = Objects.requireNonNull(counters, "counters");
        this.devices = devices;
        if (readInterval.isNegative()) {
            throw new IllegalArgumentException("the read interval must be zero or more, not " + readInterval);
        }
        this.readIntervalNanos = readInterval.toNanos();
    }

    /**
     * Metrics of every device {@code counters} lists, read at every scrape.
     *
     * @param counters where counters are read
     * @return the collector (not yet registered)
     */
    public static RdmaMetrics of(RdmaCounters counters) {
        return new RdmaMetrics(counters, d -> true, Duration.ZERO);
    }

    /**
     * Metrics of some devices only, read at every scrape.
     *
     * @param counters where counters are read
     * @param devices  the device names to export (empty: all)
     * @return the collector (not yet registered)
     */
    public static RdmaMetrics of(RdmaCounters counters, Set<String> devices) {
        return of(counters, devices, Duration.ZERO);
    }

    /**
     * Metrics of some devices, read at most once per {@code readInterval}: a scrape within the
     * interval after a read gets that read's values.
     *
     * @param counters     where counters are read
     * @param devices      the device names to export (empty: all)
     * @param readInterval the least time between two reads of the devices (zero: every scrape
     *                     reads; at most about 292 years)
     * @return the collector (not yet registered)
     * @throws IllegalArgumentException when {@code readInterval} is negative
     * @throws ArithmeticException      when {@code readInterval} does not fit in a long of nanoseconds
     */
    public static RdmaMetrics of(RdmaCounters counters, Set<String> devices, Duration readInterval) {
        Set<String> copy = Set.copyOf(devices);
        return new RdmaMetrics(counters, copy.isEmpty() ? d -> true : copy::contains,
                Objects.requireNonNull(readInterval, "readInterval"));
    }

    /**
     * The upper bounds of {@code rdma_connection_latency_histogram_seconds}'s buckets, in seconds,
     * in increasing order and without the final {@code +Inf}: 1, 2 and 5 times each power of ten
     * from 1 µs to 100 ms.
     *
     * @return a new list each call
     */
    public static List<Double> latencyBucketsSeconds() {
        return Arrays.stream(BUCKETS).boxed().toList();
    }

    /**
     * Registers this collector in {@code registry}.
     *
     * @param registry the service's registry (or {@link PrometheusRegistry#defaultRegistry})
     * @return this
     */
    public RdmaMetrics register(PrometheusRegistry registry) {
        registry.register(this);
        return this;
    }

    /**
     * Exports a connection's latency (and, with a tracker, its posted operations and bytes) under
     * {@code connection="name"}. Replaces a connection of the same name.
     *
     * @param name    the label value
     * @param latency the recorder the connection's {@link LatencyTracker} feeds
     * @param tracker the tracker, for the operation and byte counts; may be null
     */
    public void addConnection(String name, HdrLatencyRecorder latency, LatencyTracker tracker) {
        connections.put(name, new Connection(Objects.requireNonNull(latency, "latency"), tracker));
    }

    /**
     * Stops exporting a connection.
     *
     * @param name the label value given to {@link #addConnection}
     */
    public void removeConnection(String name) {
        connections.remove(name);
    }

    /**
     * The Prometheus family name of a counter (without the {@code _total} the exposition adds).
     *
     * @param c the counter
     * @return {@code rdma_NAME}, {@code rdma_hw_NAME}, with {@code _bytes} for byte counters
     */
    public static String familyName(Counter c) {
        String base = c.name().replaceAll("[^a-zA-Z0-9_]", "_");
        return "rdma_" + (c.group() == CounterGroup.HW_COUNTERS ? "hw_" : "") + base
                + (c.unit() == CounterUnit.BYTES ? "_bytes" : "");
    }

    @Override
    public MetricSnapshots collect() {
        List<MetricSnapshot> out = new ArrayList<>();
        long readsSoFar;
        synchronized (readLock) {
            long now = System.nanoTime();
            if (lastRead == null || now - lastReadNanos >= readIntervalNanos) {
                lastRead = readDevices();
                lastReadNanos = now;
                reads++;
            }
            out.addAll(lastRead);
            readsSoFar = reads;
        }
        out.add(io.prometheus.metrics.model.snapshots.CounterSnapshot.builder().name("rdma_counter_reads")
                .help("Times the RDMA devices' counters were read (at most once per read interval, however often scraped)")
                .dataPoint(CounterDataPointSnapshot.builder().value(readsSoFar).build()).build());
        connections(out);
        return new MetricSnapshots(out);
    }

    /** One read of every exported device's counters, resources and read errors, as immutable snapshots. */
    private List<MetricSnapshot> readDevices() {
        Map<String, io.prometheus.metrics.model.snapshots.CounterSnapshot.Builder> families = new TreeMap<>();
        GaugeSnapshot.Builder lifespan = GaugeSnapshot.builder().name("rdma_hw_counters_lifespan_seconds").unit(Unit.SECONDS)
                .help("How long the kernel caches a port's sysfs hw_counters reads (hw_counters/lifespan)");
        GaugeSnapshot.Builder readErrors = GaugeSnapshot.builder().name("rdma_counter_read_error")
                .help("1 for each counter that could not be read at the last read of the devices (the rest are exported)");
        GaugeSnapshot.Builder resources = GaugeSnapshot.builder().name("rdma_process_resources")
                .help("RDMA objects this process holds on the device (kernel resource tracker)");
        boolean anyLifespan = false;
        boolean anyError = false;
        boolean anyResources = false;
        for (String device : counters.devices()) {
            if (!devices.test(device)) {
                continue;
            }
            for (int port : counters.ports(device)) {
                CounterSnapshot s;
                try {
                    s = counters.snapshot(device, port);
                } catch (java.util.NoSuchElementException e) {
                    continue; // the port went away between listing and reading
                }
                Labels labels = Labels.of("device", device, "port", Integer.toString(port));
                for (Counter c : s.counters()) {
                    String family = familyName(c);
                    families.computeIfAbsent(family, f -> {
                        var b = io.prometheus.metrics.model.snapshots.CounterSnapshot.builder().name(f)
                                .help("RDMA port counter " + c.group().directory() + "/" + c.name()
                                        + (c.unit() == CounterUnit.BYTES ? " (4-byte words, as bytes)" : ""));
                        return c.unit() == CounterUnit.BYTES ? b.unit(Unit.BYTES) : b;
                    }).dataPoint(CounterDataPointSnapshot.builder().labels(labels)
                            .value(Long.compareUnsigned(c.value(), 0) < 0 ? Math.pow(2, 64) + c.value() : c.value())
                            .build());
                }
                if (s.lifespan().isPresent()) {
                    anyLifespan = true;
                    lifespan.dataPoint(GaugeDataPointSnapshot.builder().labels(labels)
                            .value(s.lifespan().get().toNanos() / 1e9).build());
                }
                for (CounterError e : s.errors()) {
                    anyError = true;
                    readErrors.dataPoint(GaugeDataPointSnapshot.builder().labels(labels.add("counter", e.name())).value(1)
                            .build());
                }
            }
            java.util.Optional<ProcessResources> r = counters.processResources(device);
            if (r.isPresent()) {
                anyResources = true;
                ProcessResources p = r.get();
                int[] values = {p.queuePairs(), p.completionQueues(), p.memoryRegions(), p.protectionDomains()};
                String[] types = {"qp", "cq", "mr", "pd"};
                for (int i = 0; i < types.length; i++) {
                    resources.dataPoint(GaugeDataPointSnapshot.builder().labels(Labels.of("device", device, "type",
                            types[i])).value(values[i]).build());
                }
            }
        }
        List<MetricSnapshot> out = new ArrayList<>();
        families.values().forEach(b -> out.add(b.build()));
        if (anyLifespan) {
            out.add(lifespan.build());
        }
        if (anyError) {
            out.add(readErrors.build());
        }
        if (anyResources) {
            out.add(resources.build());
        }
        return List.copyOf(out);
    }

    private void connections(List<MetricSnapshot> out) {
        if (connections.isEmpty()) {
            return;
        }
        HistogramSnapshot.Builder histogram = HistogramSnapshot.builder().name("rdma_connection_latency_histogram_seconds")
                .unit(Unit.SECONDS).help("Post-to-completion time of a connection's signaled work requests (aggregatable)");
        SummarySnapshot.Builder latency = SummarySnapshot.builder().name("rdma_connection_latency_seconds").unit(Unit.SECONDS)
                .help("Post-to-completion time of a connection's signaled work requests");
        var ops = io.prometheus.metrics.model.snapshots.CounterSnapshot.builder().name("rdma_connection_posted_operations")
                .help("Work requests a connection posted to its send queue");
        var bytes = io.prometheus.metrics.model.snapshots.CounterSnapshot.builder().name("rdma_connection_posted_bytes")
                .unit(Unit.BYTES).help("Payload bytes a connection posted to its send queue");
        boolean anyTracker = false;
        for (Map.Entry<String, Connection> e : new TreeMap<>(connections).entrySet()) {
            Labels labels = Labels.of("connection", e.getKey());
            // one view serves both families, so their counts and sums agree
            io.jverbs.latency.LatencyDistribution d = e.getValue().latency().distribution(BOUNDS_NANOS, PERCENTILES);
            long count = d.count();
            double sumSeconds = d.sumNanos() / 1e9;
            histogram.dataPoint(HistogramDataPointSnapshot.builder().labels(labels).sum(sumSeconds)
                    .classicHistogramBuckets(buckets(d)).build());
            List<Quantile> qs = new ArrayList<>();
            if (count > 0) {
                for (int i = 0; i < QUANTILES.length; i++) {
                    qs.add(new Quantile(QUANTILES[i], d.valuesNanos()[i] / 1e9));
                }
            }
            latency.dataPoint(SummaryDataPointSnapshot.builder().labels(labels).count(count).sum(sumSeconds)
                    .quantiles(Quantiles.of(qs.toArray(NO_QUANTILES))).build());
            LatencyTracker t = e.getValue().tracker();
            if (t != null) {
                anyTracker = true;
                ops.dataPoint(CounterDataPointSnapshot.builder().labels(labels).value(t.postedOperations()).build());
                bytes.dataPoint(CounterDataPointSnapshot.builder().labels(labels).value(t.postedBytes()).build());
            }
        }
        out.add(histogram.build());
        out.add(latency.build());
        if (anyTracker) {
            out.add(ops.build());
            out.add(bytes.build());
        }
    }

    /**
     * The histogram's values per bucket (not cumulative, as the client's model wants them), to the
     * recorder's precision: a value within 0.1 % of a bound may land in the bucket beside it.
     */
    static ClassicHistogramBuckets buckets(io.jverbs.latency.LatencyDistribution d) {
        double[] bounds = Arrays.copyOf(BUCKETS, BUCKETS.length + 1);
        bounds[BUCKETS.length] = Double.POSITIVE_INFINITY;
        long[] counts = new long[bounds.length];
        long below = 0;
        for (int i = 0; i < BUCKETS.length; i++) {
            counts[i] = d.countAtOrBelow()[i] - below;
            below = d.countAtOrBelow()[i];
        }
        counts[BUCKETS.length] = d.count() - below;
        return ClassicHistogramBuckets.of(bounds, counts);
    }
}
