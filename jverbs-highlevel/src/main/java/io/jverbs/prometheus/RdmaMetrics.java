package io.jverbs.prometheus;

import io.jverbs.counters.Counter;
import io.jverbs.counters.CounterError;
import io.jverbs.counters.CounterGroup;
import io.jverbs.counters.CounterSnapshot;
import io.jverbs.counters.CounterUnit;
import io.jverbs.counters.ProcessResources;
import io.jverbs.counters.RdmaCounters;
import io.jverbs.latency.HdrLatencyRecorder;
import io.jverbs.latency.LatencyPercentiles;
import io.jverbs.latency.LatencyTracker;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.prometheus.metrics.model.snapshots.Quantile;
import io.prometheus.metrics.model.snapshots.Quantiles;
import io.prometheus.metrics.model.snapshots.SummarySnapshot;
import io.prometheus.metrics.model.snapshots.SummarySnapshot.SummaryDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Unit;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;

/**
 * RDMA metrics for a Prometheus registry of the official Java client, read at every scrape:
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
 * <li>per connection registered with {@link #addConnection}: {@code rdma_connection_latency_seconds}
 *     (a summary: quantiles 0.5, 0.9, 0.99, 0.999, count, sum), and with a tracker
 *     {@code rdma_connection_posted_operations_total} and {@code rdma_connection_posted_bytes_total}.</li>
 * </ul>
 *
 * <p>The Prometheus client is an optional dependency of jverbs-highlevel ({@code requires static});
 * a service that uses this class has {@code io.prometheus:prometheus-metrics-core} already.
 *
 * <p>Thread-safety: scrapes may run concurrently with {@link #addConnection}/{@link #removeConnection}.
 */
// The Prometheus model in this API is not re-exported (requires static, not transitive): a service
// that registers this collector requires the client itself.
@SuppressWarnings("exports")
public final class RdmaMetrics implements MultiCollector {
    private static final Quantile[] NO_QUANTILES = new Quantile[0];
    private static final double[] QUANTILES = {0.5, 0.9, 0.99, 0.999};
    private final RdmaCounters counters;
    private final Predicate<String> devices;
    private final Map<String, Connection> connections = new ConcurrentHashMap<>();

    private record Connection(HdrLatencyRecorder latency, LatencyTracker tracker) {
    }

    private RdmaMetrics(RdmaCounters counters, Predicate<String> devices) {
        this.counters = counters;
        this.devices = devices;
    }

    /**
     * Metrics of every device {@code counters} lists.
     *
     * @param counters where counters are read
     * @return the collector (not yet registered)
     */
    public static RdmaMetrics of(RdmaCounters counters) {
        return new RdmaMetrics(counters, d -> true);
    }

    /**
     * Metrics of some devices only.
     *
     * @param counters where counters are read
     * @param devices  the device names to export (empty: all)
     * @return the collector (not yet registered)
     */
    public static RdmaMetrics of(RdmaCounters counters, Set<String> devices) {
        Set<String> copy = Set.copyOf(devices);
        return new RdmaMetrics(counters, copy.isEmpty() ? d -> true : copy::contains);
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
        connections.put(name, new Connection(java.util.Objects.requireNonNull(latency, "latency"), tracker));
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
        Map<String, io.prometheus.metrics.model.snapshots.CounterSnapshot.Builder> families = new TreeMap<>();
        GaugeSnapshot.Builder lifespan = GaugeSnapshot.builder().name("rdma_hw_counters_lifespan_seconds").unit(Unit.SECONDS)
                .help("How long the kernel caches a port's sysfs hw_counters reads (hw_counters/lifespan)");
        GaugeSnapshot.Builder readErrors = GaugeSnapshot.builder().name("rdma_counter_read_error")
                .help("1 for each counter that could not be read at this scrape (the rest are exported)");
        GaugeSnapshot.Builder resources = GaugeSnapshot.builder().name("rdma_process_resources")
                .help("RDMA objects this process holds on the device (kernel resource tracker)");
        boolean anyLifespan = false;
        boolean anyError = false;
        boolean anyResources = false;
        Map<String, String> groupOf = new LinkedHashMap<>();
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
                    groupOf.putIfAbsent(family, c.group().directory() + "/" + c.name());
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
        connections(out);
        return new MetricSnapshots(out);
    }

    private void connections(List<MetricSnapshot> out) {
        if (connections.isEmpty()) {
            return;
        }
        SummarySnapshot.Builder latency = SummarySnapshot.builder().name("rdma_connection_latency_seconds").unit(Unit.SECONDS)
                .help("Post-to-completion time of a connection's signaled work requests");
        var ops = io.prometheus.metrics.model.snapshots.CounterSnapshot.builder().name("rdma_connection_posted_operations")
                .help("Work requests a connection posted to its send queue");
        var bytes = io.prometheus.metrics.model.snapshots.CounterSnapshot.builder().name("rdma_connection_posted_bytes")
                .unit(Unit.BYTES).help("Payload bytes a connection posted to its send queue");
        boolean anyTracker = false;
        for (Map.Entry<String, Connection> e : new TreeMap<>(connections).entrySet()) {
            Labels labels = Labels.of("connection", e.getKey());
            LatencyPercentiles p = e.getValue().latency().percentiles();
            List<Quantile> qs = new ArrayList<>();
            if (p.count() > 0) {
                for (double q : QUANTILES) {
                    qs.add(new Quantile(q, e.getValue().latency().valueAtPercentile(q * 100) / 1e9));
                }
            }
            latency.dataPoint(SummaryDataPointSnapshot.builder().labels(labels).count(p.count()).sum(p.sumNanos() / 1e9)
                    .quantiles(Quantiles.of(qs.toArray(NO_QUANTILES))).build());
            LatencyTracker t = e.getValue().tracker();
            if (t != null) {
                anyTracker = true;
                ops.dataPoint(CounterDataPointSnapshot.builder().labels(labels).value(t.postedOperations()).build());
                bytes.dataPoint(CounterDataPointSnapshot.builder().labels(labels).value(t.postedBytes()).build());
            }
        }
        out.add(latency.build());
        if (anyTracker) {
            out.add(ops.build());
            out.add(bytes.build());
        }
    }
}
