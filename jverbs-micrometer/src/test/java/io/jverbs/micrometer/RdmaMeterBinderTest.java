package io.jverbs.micrometer;

import io.jverbs.counters.RdmaCounters;
import io.jverbs.fakesysfs.FakeSysfs;
import io.jverbs.latency.HdrLatencyRecorder;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The binder over a fake sysfs tree (an rxe-like and an mlx5-like device) and a recorder. */
class RdmaMeterBinderTest {
    @TempDir
    Path tmp;

    private static double counter(SimpleMeterRegistry r, String name, String device) {
        FunctionCounter c = r.get(name).tag("device", device).tag("port", "1").functionCounter();
        return c.count();
    }

    @Test
    void everyPortCounterIsAFunctionCounterWithThePrometheusCollectorsName() throws Exception {
        Path root = FakeSysfs.create(tmp);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        RdmaMeterBinder.of(RdmaCounters.sysfs(root), Duration.ZERO).bindTo(registry);
        assertEquals(1000, counter(registry, "rdma.hw.sent_pkts", "rxe0"));
        assertEquals(3, counter(registry, "rdma.hw.completer_retry_err", "rxe0"));
        FunctionCounter bytes = registry.get("rdma.port_xmit_data").tag("device", "mlx5_0").functionCounter();
        assertEquals(400, bytes.count(), "4-byte words as bytes");
        assertEquals("bytes", bytes.getId().getBaseUnit());
        FakeSysfs.set(root, "rxe0", 1, "hw_counters", "sent_pkts", 1500);
        assertEquals(1500, counter(registry, "rdma.hw.sent_pkts", "rxe0"), "read again with a zero interval");
    }

    @Test
    void countersAreReadOncePerInterval() throws Exception {
        Path root = FakeSysfs.create(tmp);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        RdmaMeterBinder.of(RdmaCounters.sysfs(root), Duration.ofHours(1)).bindTo(registry);
        assertEquals(1000, counter(registry, "rdma.hw.sent_pkts", "rxe0"));
        FakeSysfs.set(root, "rxe0", 1, "hw_counters", "sent_pkts", 2000);
        assertEquals(1000, counter(registry, "rdma.hw.sent_pkts", "rxe0"), "within the interval: the last read");
    }

    @Test
    void aConnectionsLatencyIsATimerWithPercentiles() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        HdrLatencyRecorder latency = new HdrLatencyRecorder();
        List<Meter> meters = RdmaMeterBinder.bindConnection(registry, "kv-1", latency);
        for (int i = 1; i <= 1000; i++) {
            latency.recordNanos(i * 1_000L); // 1 µs .. 1 ms
        }
        FunctionTimer t = registry.get("rdma.connection.latency").tag("connection", "kv-1").functionTimer();
        assertEquals(1000, t.count());
        assertEquals(500.5, t.totalTime(TimeUnit.MILLISECONDS), 1.0, "1 µs + ... + 1 ms");
        Gauge p99 = registry.get("rdma.connection.latency.percentile").tag("phi", "0.99").gauge();
        assertEquals(990e-6, p99.value(), 2e-6);
        Gauge p50 = registry.get("rdma.connection.latency.percentile").tag("phi", "0.5").gauge();
        assertTrue(Math.abs(p50.value() - 500e-6) < 2e-6, "median " + p50.value());
        meters.forEach(registry::remove);
        assertTrue(registry.find("rdma.connection.latency").meters().isEmpty(), "removed with the connection");
    }
}
