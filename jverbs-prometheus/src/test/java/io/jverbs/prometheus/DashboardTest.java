package io.jverbs.prometheus;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.jverbs.fakesysfs.FakeSysfs;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.SummarySnapshot;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Grafana dashboard (jverbs-prometheus/grafana/jverbs-rdma-dashboard.json): every query names only
 * series that the exporter's own registry exposes (scraped over a fake tree with an rxe-like and
 * an mlx5-like device and one connection), every panel the dashboard promises is there, and no
 * two panels overlap.
 */
class DashboardTest {
    static final Path DASHBOARD = Path.of("grafana/jverbs-rdma-dashboard.json");
    /** PromQL's functions, aggregations and keywords that may appear in the queries (not metric names). */
    private static final Set<String> PROMQL = Set.of("sum", "max", "min", "avg", "count", "rate", "irate", "increase",
            "by", "without", "or", "and", "unless", "on", "ignoring", "label_values", "topk", "histogram_quantile");

    @TempDir
    Path tmp;

    static Set<String> exposedSeries(Path fakeRoot) throws java.io.IOException {
        // the PMA's link_downed, which an mlx5 or InfiniBand port has in counters/
        FakeSysfs.set(fakeRoot, "mlx5_0", 1, "counters", "link_downed", 0);
        Set<String> names = new HashSet<>();
        for (MetricSnapshot m : RdmaMetricsTest.registry(fakeRoot).scrape()) {
            String n = m.getMetadata().getPrometheusName();
            if (m instanceof CounterSnapshot) {
                names.add(n + "_total");
            } else if (m instanceof HistogramSnapshot) {
                names.add(n + "_bucket");
                names.add(n + "_sum");
                names.add(n + "_count");
            } else if (m instanceof SummarySnapshot) {
                names.add(n);
                names.add(n + "_sum");
                names.add(n + "_count");
            } else {
                names.add(n);
            }
        }
        return names;
    }

    /** The identifiers of a query that are not PromQL words: label matchers, strings, ranges and $variables removed. */
    static List<String> metricNames(String expr) {
        String bare = expr.replaceAll("\"[^\"]*\"", "\"\"").replaceAll("\\{[^}]*}", "").replaceAll("\\[[^]]*]", "")
                .replaceAll("\\$\\w+", "");
        // label lists after by/without: (device, port)
        bare = bare.replaceAll("\\b(by|without|on|ignoring)\\s*\\([^)]*\\)", "$1");
        // Grafana's label_values(metric, label): the second argument is a label
        bare = bare.replaceAll("label_values\\(\\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\\s*,[^)]*\\)", "label_values($1)");
        List<String> out = new ArrayList<>();
        Matcher m = Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*").matcher(bare);
        while (m.find()) {
            if (!PROMQL.contains(m.group())) {
                out.add(m.group());
            }
        }
        return out;
    }

    @Test
    void everyQueryNamesSeriesTheExporterExposes() throws Exception {
        Set<String> exposed = exposedSeries(FakeSysfs.create(tmp));
        JsonNode dash = new ObjectMapper().readTree(Files.readString(DASHBOARD));
        List<String> queries = new ArrayList<>();
        List<String> titles = new ArrayList<>();
        for (JsonNode panel : dash.get("panels")) {
            titles.add(panel.get("title").asText());
            assertTrue(panel.get("targets").size() > 0, panel.get("title").asText() + " has no query");
            for (JsonNode t : panel.get("targets")) {
                queries.add(t.get("expr").asText());
            }
        }
        for (JsonNode v : dash.get("templating").get("list")) {
            if (v.has("definition")) {
                queries.add(v.get("definition").asText());
            }
        }
        int named = 0;
        for (String q : queries) {
            List<String> names = metricNames(q);
            assertTrue(!names.isEmpty(), "query names no metric: " + q);
            for (String n : names) {
                assertTrue(exposed.contains(n), "query " + q + " names " + n + ", which the exporter does not expose;"
                        + " it exposes " + new java.util.TreeSet<>(exposed));
                named++;
            }
        }
        assertTrue(named >= 25, "only " + named + " metric references");
        for (String needed : List.of("Throughput", "Message rate", "Retransmits per second", "Sequence errors per second",
                "RNR (receiver not ready)", "Congestion: CNP and ECN", "Latency percentiles per connection",
                "Retries exhausted (retry_exceeded_err)", "Receive buffer exhausted (out_of_buffer)",
                "Link down events (link_downed)", "Latency percentiles across connections (histogram)")) {
            assertTrue(titles.contains(needed), "no panel " + needed + " in " + titles);
        }
    }

    /** The queries of the panel titled {@code title}. */
    private static List<String> queries(JsonNode dash, String title) {
        List<String> out = new ArrayList<>();
        for (JsonNode panel : dash.get("panels")) {
            if (panel.get("title").asText().equals(title)) {
                panel.get("targets").forEach(t -> out.add(t.get("expr").asText()));
            }
        }
        return out;
    }

    @Test
    void theErrorCounterPanelsQueryTheirCountersAsTheOtherPanelsDo() throws Exception {
        JsonNode dash = new ObjectMapper().readTree(Files.readString(DASHBOARD));
        Pattern perPort = Pattern.compile("sum by \\(device, port\\) \\(rate\\((\\w+)\\{device=~\"\\$device\"}\\[\\$__rate_interval]\\)\\)");
        for (String[] panel : new String[][] {
            {"Retries exhausted (retry_exceeded_err)", "rdma_hw_retry_exceeded_err_total"},
            {"Receive buffer exhausted (out_of_buffer)", "rdma_hw_out_of_buffer_total"},
            {"Link down events (link_downed)", "rdma_hw_link_downed_total", "rdma_link_downed_total"}}) {
            List<String> exprs = queries(dash, panel[0]);
            Set<String> counters = new HashSet<>();
            for (String e : exprs) {
                Matcher m = perPort.matcher(e);
                assertTrue(m.matches(), panel[0] + ": a per-port rate filtered by $device, as the other panels: " + e);
                counters.add(m.group(1));
            }
            for (int i = 1; i < panel.length; i++) {
                assertTrue(counters.contains(panel[i]), panel[0] + " queries " + panel[i] + ": " + exprs);
            }
        }
        List<String> histogram = queries(dash, "Latency percentiles across connections (histogram)");
        assertTrue(histogram.stream().anyMatch(e -> e.startsWith("histogram_quantile(0.99, sum by (le) (rate("
                + "rdma_connection_latency_histogram_seconds_bucket[")), "p99 over every connection and instance: " + histogram);
        assertTrue(histogram.stream().anyMatch(e -> e.contains("sum by (connection, le)")), "p99 per connection: " + histogram);
    }

    @Test
    void panelsDoNotOverlap() throws Exception {
        JsonNode dash = new ObjectMapper().readTree(Files.readString(DASHBOARD));
        List<int[]> boxes = new ArrayList<>();
        List<String> titles = new ArrayList<>();
        for (JsonNode panel : dash.get("panels")) {
            JsonNode g = panel.get("gridPos");
            int[] box = {g.get("x").asInt(), g.get("y").asInt(), g.get("w").asInt(), g.get("h").asInt()};
            assertTrue(box[0] + box[2] <= 24, panel.get("title").asText() + " is wider than Grafana's 24 columns");
            for (int i = 0; i < boxes.size(); i++) {
                int[] o = boxes.get(i);
                boolean apart = box[0] >= o[0] + o[2] || o[0] >= box[0] + box[2] || box[1] >= o[1] + o[3] || o[1] >= box[1] + box[3];
                assertTrue(apart, panel.get("title").asText() + " overlaps " + titles.get(i));
            }
            boxes.add(box);
            titles.add(panel.get("title").asText());
        }
    }

    @Test
    void theNameExtractorSeesThroughPromQl() {
        assertEquals(List.of("rdma_hw_sent_pkts_total"),
                metricNames("sum by (device, port) (rate(rdma_hw_sent_pkts_total{device=~\"$device\"}[$__rate_interval]))"));
        assertEquals(List.of("a_sum", "a_count"), metricNames("sum by (c) (rate(a_sum[5m])) / sum by (c) (rate(a_count[5m]))"));
        assertEquals(List.of("rdma_nope"), metricNames("rdma_nope{quantile=\"0.5\"}"));
        assertEquals(List.of("m"), metricNames("label_values(m, device)"));
    }
}
