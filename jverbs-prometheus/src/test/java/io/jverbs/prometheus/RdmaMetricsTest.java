package io.jverbs.prometheus;

import io.jverbs.counters.RdmaCounters;
import io.jverbs.fakesysfs.FakeSysfs;
import io.jverbs.latency.HdrLatencyRecorder;
import io.jverbs.latency.LatencyTracker;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.DataPointSnapshot;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.prometheus.metrics.model.snapshots.SummarySnapshot;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Prometheus adapter over a fake sysfs tree, and the exporter subcommand's scrape (host only). */
class RdmaMetricsTest {
    @TempDir
    Path tmp;

    static MetricSnapshot family(MetricSnapshots all, String name) {
        return all.stream().filter(m -> m.getMetadata().getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no family " + name));
    }

    static double value(MetricSnapshot m, String device) {
        for (DataPointSnapshot p : m.getDataPoints()) {
            if (device.equals(p.getLabels().get("device"))) {
                return p instanceof CounterSnapshot.CounterDataPointSnapshot c ? c.getValue()
                        : ((GaugeSnapshot.GaugeDataPointSnapshot) p).getValue();
            }
        }
        throw new AssertionError("no data point for " + device + " in " + m.getMetadata().getName());
    }

    /**
     * A registry over the fake tree (an rxe-like and an mlx5-like device) and one connection with latencies.
     *
     * @param root the fake tree
     * @return the registry
     */
    static PrometheusRegistry registry(Path root) {
        PrometheusRegistry registry = new PrometheusRegistry();
        RdmaMetrics metrics = RdmaMetrics.of(RdmaCounters.sysfs(root)).register(registry);
        HdrLatencyRecorder hdr = new HdrLatencyRecorder();
        LatencyTracker tracker = new LatencyTracker(hdr, 16);
        for (int i = 0; i < 10; i++) {
            tracker.posted(4096, true);
            tracker.completed();
        }
        metrics.addConnection("client-1", hdr, tracker);
        return registry;
    }

    @Test
    void exportsEveryCounterUnderTheDriversNameInBaseUnitsAndTheReadErrors() throws Exception {
        Path root = FakeSysfs.create(tmp);
        MetricSnapshots all = registry(root).scrape();
        assertEquals(1000, value(family(all, "rdma_hw_sent_pkts"), "rxe0"));
        assertEquals(3, value(family(all, "rdma_hw_completer_retry_err"), "rxe0"));
        MetricSnapshot bytes = family(all, "rdma_port_xmit_data_bytes");
        assertEquals(400, value(bytes, "mlx5_0"), "4-byte words exported as bytes");
        assertEquals("bytes", bytes.getMetadata().getUnit().toString());
        assertEquals(5, value(family(all, "rdma_hw_np_cnp_sent"), "mlx5_0"));
        assertEquals(0.01, value(family(all, "rdma_hw_counters_lifespan_seconds"), "rxe0"), 1e-9);
        MetricSnapshot errors = family(all, "rdma_counter_read_error");
        assertEquals(Set.of("VL15_dropped", "broken_dir_counter", "vanished_counter"), errors.getDataPoints().stream()
                .map(p -> p.getLabels().get("counter")).collect(java.util.stream.Collectors.toSet()));
        assertTrue(all.stream().noneMatch(m -> m.getMetadata().getName().contains("lifespan_total")));
        SummarySnapshot latency = (SummarySnapshot) family(all, "rdma_connection_latency_seconds");
        assertEquals(10, latency.getDataPoints().get(0).getCount());
        assertEquals(4, latency.getDataPoints().get(0).getQuantiles().size());
        assertEquals(40960, ((CounterSnapshot) family(all, "rdma_connection_posted_bytes")).getDataPoints().get(0).getValue());
        FakeSysfs.set(root, "rxe0", 1, "hw_counters", "sent_pkts", 1500);
        assertEquals(1500, value(family(registry(root).scrape(), "rdma_hw_sent_pkts"), "rxe0"), "read at every scrape");
    }

    @Test
    void theLatencyHistogramPutsEachValueInItsBucketAndAgreesWithTheSummary() {
        HdrLatencyRecorder hdr = new HdrLatencyRecorder();
        // 0.5 us, 1.5 us, 3 us, 40 us, 2 ms (on a bound), 1 s (above every finite bound)
        for (long nanos : new long[] {500, 1_500, 3_000, 40_000, 2_000_000, 1_000_000_000}) {
            hdr.recordNanos(nanos);
        }
        PrometheusRegistry registry = new PrometheusRegistry();
        RdmaMetrics metrics = RdmaMetrics.of(RdmaCounters.sysfs(tmp.resolve("none"))).register(registry);
        metrics.addConnection("c", hdr, null);
        MetricSnapshots all = registry.scrape();
        HistogramSnapshot.HistogramDataPointSnapshot p = ((HistogramSnapshot) family(all,
                "rdma_connection_latency_histogram_seconds")).getDataPoints().get(0);
        ClassicHistogramBuckets b = p.getClassicBuckets();
        List<Double> bounds = RdmaMetrics.latencyBucketsSeconds();
        assertEquals(bounds.size() + 1, b.size(), "the finite bounds and +Inf");
        assertEquals(1e-6, bounds.get(0), 1e-15);
        assertEquals(0.1, bounds.get(bounds.size() - 1), 1e-15);
        assertEquals(Double.POSITIVE_INFINITY, b.getUpperBound(b.size() - 1));
        long[] expected = new long[b.size()];
        expected[bounds.indexOf(1e-6)] = 1;
        expected[bounds.indexOf(2e-6)] = 1;
        expected[bounds.indexOf(5e-6)] = 1;
        expected[bounds.indexOf(50e-6)] = 1;
        expected[bounds.indexOf(2e-3)] = 1;
        expected[b.size() - 1] = 1;
        for (int i = 0; i < b.size(); i++) {
            assertEquals(expected[i], b.getCount(i), "bucket le=" + b.getUpperBound(i));
        }
        SummarySnapshot.SummaryDataPointSnapshot summary = ((SummarySnapshot) family(all, "rdma_connection_latency_seconds"))
                .getDataPoints().get(0);
        assertEquals(6, summary.getCount());
        assertEquals(1.002045, p.getSum(), 1.002045 * 1e-3, "the sum, to the recorder's 0.1 %");
        assertEquals(summary.getSum(), p.getSum(), 0, "histogram and summary read one copy");
    }

    @Test
    void scrapesWithinTheReadIntervalReadTheDevicesOnce() throws Exception {
        Path root = FakeSysfs.create(tmp);
        PrometheusRegistry registry = new PrometheusRegistry();
        RdmaMetrics.of(RdmaCounters.sysfs(root), Set.of(), Duration.ofHours(1)).register(registry);
        assertEquals(1000, value(family(registry.scrape(), "rdma_hw_sent_pkts"), "rxe0"));
        FakeSysfs.set(root, "rxe0", 1, "hw_counters", "sent_pkts", 2000);
        for (int i = 0; i < 20; i++) {
            MetricSnapshots all = registry.scrape();
            assertEquals(1000, value(family(all, "rdma_hw_sent_pkts"), "rxe0"), "scrape " + i + " reads the last read's value");
            assertEquals(1, reads(all), "scrape " + i);
        }

        PrometheusRegistry everyScrape = new PrometheusRegistry();
        RdmaMetrics.of(RdmaCounters.sysfs(root)).register(everyScrape);
        everyScrape.scrape();
        FakeSysfs.set(root, "rxe0", 1, "hw_counters", "sent_pkts", 3000);
        MetricSnapshots second = everyScrape.scrape();
        assertEquals(3000, value(family(second, "rdma_hw_sent_pkts"), "rxe0"), "no interval: every scrape reads");
        assertEquals(2, reads(second));
    }

    @Test
    void aScrapeAfterTheIntervalReadsAgain() throws Exception {
        Path root = FakeSysfs.create(tmp);
        PrometheusRegistry registry = new PrometheusRegistry();
        RdmaMetrics.of(RdmaCounters.sysfs(root), Set.of(), Duration.ofMillis(50)).register(registry);
        registry.scrape();
        FakeSysfs.set(root, "rxe0", 1, "hw_counters", "sent_pkts", 2000);
        Thread.sleep(60);
        MetricSnapshots later = registry.scrape();
        assertEquals(2000, value(family(later, "rdma_hw_sent_pkts"), "rxe0"));
        assertEquals(2, reads(later));
    }

    static long reads(MetricSnapshots all) {
        return (long) ((CounterSnapshot) family(all, "rdma_counter_reads")).getDataPoints().get(0).getValue();
    }
}
