package io.jverbs.perftest;

import io.jverbs.counters.RdmaCounters;
import io.jverbs.fakesysfs.FakeSysfs;
import io.jverbs.prometheus.RdmaMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The device filter of the metrics, and the exporter command's one-shot scrape, over a fake sysfs tree. */
class ExporterScrapeTest {
    @TempDir
    Path tmp;

    @Test
    void deviceFilterAndTheExporterCommandsScrape() throws Exception {
        Path root = FakeSysfs.create(tmp);
        PrometheusRegistry only = new PrometheusRegistry();
        RdmaMetrics.of(RdmaCounters.sysfs(root), Set.of("rxe0")).register(only);
        assertTrue(only.scrape().stream().filter(m -> !m.getMetadata().getName().equals("rdma_counter_reads"))
                .flatMap(m -> m.getDataPoints().stream())
                .allMatch(p -> "rxe0".equals(p.getLabels().get("device"))));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        var cl = Main.commandLine();
        cl.setOut(new PrintWriter(out));
        cl.setErr(new PrintWriter(err));
        int rc = cl.execute("exporter", "--port", "0", "--once", "--sysfs-root", root.toString(), "-d", "rxe0");
        assertEquals(0, rc, err.toString());
        String text = out.toString();
        assertTrue(text.contains("# TYPE rdma_hw_sent_pkts_total counter"), text);
        assertTrue(text.contains("rdma_hw_sent_pkts_total{device=\"rxe0\",port=\"1\"} 1000"), text);
        assertTrue(text.contains("rdma_counter_read_error{counter=\"vanished_counter\",device=\"rxe0\",port=\"1\"} 1"), text);
        assertFalse(text.contains("mlx5_0"), "-d rxe0 exports rxe0 only");
    }
}
