package io.jverbs.perftest.device;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.jverbs.counters.CounterDelta;
import io.jverbs.counters.CounterSnapshot;
import io.jverbs.counters.RdmaCounters;
import io.jverbs.ibverbs.device.PairControl;
import io.jverbs.ibverbs.device.PairNode;
import io.jverbs.ibverbs.device.PairTest;
import io.jverbs.prometheus.RdmaMetrics;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Counters under loss, across the wire: node a (the write_bw client) drops 2 % of its packets
 * (netem) while its exporter is scraped; the retransmission and sequence-error series rise by
 * exactly the sysfs deltas of the same port, and the perftest deltas of both sides equal their
 * node's sysfs deltas.
 */
@PairTest
@Order(20)
class PairObservabilityTest {
    private static final List<String> LOSS_SERIES = List.of("completer_retry_err", "rcvd_seq_err", "out_of_seq_request",
            "duplicate_request", "sent_pkts");

    private static Map<String, Long> scrape(HttpClient http, URI uri, String device) throws Exception {
        String body = http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(60)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        Map<String, Long> values = new LinkedHashMap<>();
        Matcher m = Pattern.compile("(?m)^rdma_hw_(\\w+)_total\\{device=\"" + device + "\",port=\"1\"} (\\S+)$").matcher(body);
        while (m.find()) {
            values.put(m.group(1), (long) Double.parseDouble(m.group(2)));
        }
        assertTrue(values.containsKey("sent_pkts"), "the scrape has the port's counters:\n" + body);
        return values;
    }

    private static void checkPerftestDeltas(Path json, CounterDelta sysfs, String who) throws Exception {
        JsonNode moved = new ObjectMapper().readTree(json.toFile()).get("counter_deltas").get("moved");
        for (CounterDelta.Change ch : sysfs.moved()) {
            assertEquals(ch.delta(), moved.path(ch.name()).asLong(-1), who + ": perftest's " + ch.name() + " against sysfs: "
                    + moved + " vs " + sysfs.moved());
        }
    }

    @Test
    @Order(1)
    void retransmissionSeriesRiseByTheSysfsDeltasUnderLoss(PairNode node) throws Exception {
        PairControl control = node.control();
        String dev = node.device().name();
        RdmaCounters sysfs = RdmaCounters.sysfs(RdmaCounters.SYSFS_ROOT);
        Path dir = Files.createTempDirectory("pair-obs");
        int port = 23_517;
        List<String> common = new ArrayList<>(List.of("write_bw"));
        common.addAll(Perf.deviceArgs(node.device()));
        // --no_warmup: the warm-up's loopback traffic would fall inside the sysfs window, not perftest's own.
        common.addAll(List.of("-s", "65536", "-n", "150", "-p", Integer.toString(port), "--no_warmup", "--out_json",
                "--out_json_file",
                dir.resolve("perftest.json").toString()));
        if (!node.isA()) {
            CounterSnapshot before = sysfs.snapshotAfter(dev, 1, System.nanoTime());
            CompletableFuture<Perf.Result> server = Perf.start(common.toArray(String[]::new));
            Perf.awaitListening(port, 60_000, server);
            control.send("listening", Integer.toString(port));
            Perf.Result r = Perf.await(server);
            CounterDelta d = sysfs.snapshotAfter(dev, 1, System.nanoTime()).since(before);
            System.out.println("pair-obs (node b, server): " + r.out().lines().filter(l -> l.contains("RDMA counters")).toList()
                    + "; sysfs " + d.moved().stream().map(c -> c.name() + " +" + c.delta()).toList());
            assertEquals(0, r.exit(), r.all());
            checkPerftestDeltas(dir.resolve("perftest.json"), d, "node b (receiver)");
            assertTrue(d.change("out_of_seq_request").orElseThrow().delta() > 0, "the receiver saw sequence gaps: " + d.moved());
            control.send("server-done", "0");
            control.expect("client-done", Duration.ofSeconds(300));
            return;
        }
        PrometheusRegistry registry = new PrometheusRegistry();
        RdmaMetrics.of(RdmaCounters.system()).register(registry);
        List<Map<String, Long>> scrapes = new ArrayList<>();
        CounterSnapshot before;
        CounterDelta d;
        Perf.Result r;
        try (HTTPServer server = HTTPServer.builder().port(0).registry(registry).buildAndStart();
             HttpClient http = HttpClient.newHttpClient()) {
            URI uri = URI.create("http://127.0.0.1:" + server.getPort() + "/metrics");
            assertEquals(Integer.toString(port), control.expect("listening"));
            before = sysfs.snapshotAfter(dev, 1, System.nanoTime());
            scrapes.add(scrape(http, uri, dev));
            node.netem("loss", "2%");
            try {
                List<String> client = new ArrayList<>(common);
                client.add(node.peerIp());
                CompletableFuture<Perf.Result> run = CompletableFuture.supplyAsync(() -> Perf.run(client.toArray(String[]::new)));
                while (!run.isDone()) {
                    Thread.sleep(1000);
                    scrapes.add(scrape(http, uri, dev));
                }
                r = run.get();
            } finally {
                node.clearFaults();
            }
            d = sysfs.snapshotAfter(dev, 1, System.nanoTime()).since(before);
            scrapes.add(scrape(http, uri, dev));
        }
        control.expect("server-done", Duration.ofSeconds(300));
        control.send("client-done", "0");
        assertEquals(0, r.exit(), r.all());
        System.out.println("pair-obs (node a, client under 2 % loss): " + r.out().lines().filter(l -> l.contains("RDMA counters")).toList());
        System.out.println("pair-obs (node a): sysfs delta " + d.moved().stream().map(c -> c.name() + " +" + c.delta()).toList());
        Map<String, Long> first = scrapes.get(0);
        Map<String, Long> last = scrapes.get(scrapes.size() - 1);
        System.out.println("pair-obs (node a): " + scrapes.size() + " scrapes; series over them:");
        for (String s : LOSS_SERIES) {
            List<Long> series = scrapes.stream().map(m -> m.getOrDefault(s, -1L)).toList();
            System.out.println("  rdma_hw_" + s + "_total{device=\"" + dev + "\",port=\"1\"} " + series);
        }
        long retries = d.change("completer_retry_err").orElseThrow().delta() + d.change("rcvd_seq_err").orElseThrow().delta();
        assertTrue(retries > 0, "2 % loss made the sender retransmit: " + d.moved());
        for (CounterDelta.Change ch : d.changes()) {
            assertEquals(ch.delta(), last.get(ch.name()) - first.get(ch.name()), "the exporter's " + ch.name()
                    + " series rose by the sysfs delta");
        }
        checkPerftestDeltas(dir.resolve("perftest.json"), d, "node a (sender)");
    }
}
