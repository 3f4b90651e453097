package io.jverbs.perftest.device;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.jverbs.counters.CounterDelta;
import io.jverbs.counters.CounterSnapshot;
import io.jverbs.counters.RdmaCounters;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import io.jverbs.prometheus.RdmaMetrics;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Counters in perftest and in the exporter on a real device (one node: rxe's loopback): perftest's
 * reported deltas equal the counters read independently; a scrape during a transfer shows the
 * series rising and the last scrape equals sysfs; a counter file that fails to read leaves the
 * rest exported.
 */
@DeviceTest
class ObservabilityDeviceTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** write_bw server and client in this JVM, each with its own JSON report; returns {server, client} JSON. */
    private static JsonNode[] writeBw(TestDevice device, Path dir, String iterations, boolean warmup) throws Exception {
        int port = Perf.freePort();
        List<String> common = new ArrayList<>(List.of("write_bw"));
        common.addAll(Perf.deviceArgs(device));
        // -m 1024: four packets per 4 KiB write, which the packet counts below assume, on any device
        common.addAll(List.of("-s", "4096", "-m", "1024", "-n", iterations, "-p", Integer.toString(port), "--out_json"));
        if (!warmup) {
            common.add("--no_warmup");
        }
        List<String> server = new ArrayList<>(common);
        server.addAll(List.of("--out_json_file", dir.resolve("server.json").toString()));
        CompletableFuture<Perf.Result> s = Perf.start(server.toArray(String[]::new));
        Perf.awaitListening(port, 60_000, s);
        List<String> client = new ArrayList<>(common);
        client.addAll(List.of("--out_json_file", dir.resolve("client.json").toString(), Perf.host(device)));
        Perf.Result c = Perf.run(client.toArray(String[]::new));
        Perf.Result sr = Perf.await(s);
        assertEquals(0, c.exit(), c.all() + "\nserver:\n" + sr.all());
        assertEquals(0, sr.exit(), sr.all());
        Matcher m = Pattern.compile("(?m)^ RDMA counters moved on this side \\(" + device.name() + " port 1, (netlink|sysfs)\\): .*$")
                .matcher(c.err());
        assertTrue(m.find(), "the client prints its counter deltas on stderr:\n" + c.err());
        System.out.println("perftest (client):" + m.group());
        Matcher ms = Pattern.compile("(?m)^ RDMA counters moved on this side .*$").matcher(sr.err());
        assertTrue(ms.find(), "the server prints its counter deltas on stderr:\n" + sr.err());
        System.out.println("perftest (server):" + ms.group());
        return new JsonNode[] {JSON.readTree(dir.resolve("server.json").toFile()), JSON.readTree(dir.resolve("client.json").toFile())};
    }

    @Test
    void perftestsDeltasMatchTheCountersReadIndependently(TestDevice device) throws Exception {
        RdmaCounters sysfs = RdmaCounters.sysfs(RdmaCounters.SYSFS_ROOT);
        Path dir = Files.createTempDirectory("obs-perftest");
        CounterSnapshot before = sysfs.snapshotAfter(device.name(), 1, System.nanoTime());
        // --no_warmup: the warm-up's loopback traffic comes before perftest's own counter window
        // (warmUpStaysOutOfTheDeltas) but inside this independent one, which would then differ by it.
        JsonNode[] json = writeBw(device, dir, "200", false);
        CounterDelta independent = sysfs.snapshotAfter(device.name(), 1, System.nanoTime()).since(before);
        System.out.println("independent (sysfs): " + independent.moved().stream().map(c -> c.name() + " +" + c.delta()).toList());
        assertTrue(independent.change("sent_pkts").orElseThrow().delta() >= 200 * 4, "200 writes of 4 KiB at MTU 1024: "
                + independent.moved());
        for (JsonNode side : json) {
            JsonNode deltas = side.get("counter_deltas");
            assertEquals(device.name(), deltas.get("device").asText());
            JsonNode moved = deltas.get("moved");
            for (CounterDelta.Change ch : independent.moved()) {
                assertTrue(moved.has(ch.name()), side.get("test_info").get("role") + " reports " + ch.name() + ": " + moved);
                assertEquals(ch.delta(), moved.get(ch.name()).asLong(), side.get("test_info").get("role") + "'s " + ch.name()
                        + " against sysfs: " + moved + " vs " + independent.moved());
            }
            for (Iterator<Map.Entry<String, JsonNode>> it = moved.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                assertTrue(independent.change(e.getKey()).isPresent() && independent.change(e.getKey()).get().delta() != 0,
                        "perftest reports " + e.getKey() + " moving, sysfs does not: " + independent.moved());
            }
        }
    }

    /**
     * With the warm-up on (the default), each side's window opens once the peer is connected, after
     * both warm-ups: their loopback traffic (about 300 rounds of 32 writes of 4 KiB, tens of thousands
     * of packets on the port both sides share here) must not appear in the deltas. 200 writes of 4 KiB
     * at MTU 1024 are 800 packets; with acknowledgements at most twice that, and a little handshake.
     */
    @Test
    void warmUpStaysOutOfTheDeltas(TestDevice device) throws Exception {
        Path dir = Files.createTempDirectory("obs-perftest-warm");
        JsonNode[] json = writeBw(device, dir, "200", true);
        for (JsonNode side : json) {
            String role = side.get("test_info").get("role").asText();
            JsonNode moved = side.get("counter_deltas").get("moved");
            long sent = moved.path("sent_pkts").asLong(-1);
            System.out.println("perftest " + role + " with its warm-up on " + device.name() + ": sent_pkts +" + sent);
            assertTrue(sent >= 200 * 4, role + ": the run's own 800 packets are counted: " + moved);
            assertTrue(sent <= 2 * 200 * 4 + 200, role + ": no warm-up traffic in the window: " + moved);
        }
    }

    private static long sample(PrometheusRegistry registry, String family, String device) {
        for (MetricSnapshot m : registry.scrape()) {
            if (m.getMetadata().getName().equals(family)) {
                for (var p : m.getDataPoints()) {
                    if (device.equals(p.getLabels().get("device"))) {
                        return (long) ((CounterDataPointSnapshot) p).getValue();
                    }
                }
            }
        }
        throw new AssertionError("no " + family + " for " + device);
    }

    /** Scrapes the exporter once, appends its {@code rdma_hw_sent_pkts_total} for the device to {@code seen}, returns the body. */
    private static String scrapeSentPackets(HttpClient http, URI uri, Pattern sent, TestDevice device, List<Long> seen)
            throws Exception {
        String body = http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        Matcher m = sent.matcher(body);
        assertTrue(m.find(), "the scrape has rdma_hw_sent_pkts_total for " + device.name() + ":\n" + body);
        seen.add((long) Double.parseDouble(m.group(1)));
        return body;
    }

    @Test
    void aScrapeDuringATransferShowsTheSeriesRising(TestDevice device) throws Exception {
        PrometheusRegistry registry = new PrometheusRegistry();
        RdmaMetrics.of(RdmaCounters.system()).register(registry);
        Path dir = Files.createTempDirectory("obs-exporter");
        List<Long> seen = new ArrayList<>();
        String lastBody = null;
        try (HTTPServer server = HTTPServer.builder().port(0).registry(registry).buildAndStart();
             HttpClient http = HttpClient.newHttpClient()) {
            URI uri = URI.create("http://127.0.0.1:" + server.getPort() + "/metrics");
            Pattern sent = Pattern.compile("(?m)^rdma_hw_sent_pkts_total\\{device=\"" + device.name() + "\",port=\"1\"} (\\S+)$");
            // One scrape before the transfer starts, so the rise is seen however fast the transfer is.
            scrapeSentPackets(http, uri, sent, device, seen);
            CompletableFuture<JsonNode[]> transfer = CompletableFuture.supplyAsync(() -> {
                try {
                    return writeBw(device, dir, "2000", false);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            while (!transfer.isDone()) {
                lastBody = scrapeSentPackets(http, uri, sent, device, seen);
                Thread.sleep(300);
            }
            transfer.get();
            // A scrape taken while the transfer ran can miss its end; one more after it has ended must see all of it.
            lastBody = scrapeSentPackets(http, uri, sent, device, seen);
        }
        System.out.println("exporter: rdma_hw_sent_pkts_total{device=\"" + device.name() + "\"} over " + seen.size()
                + " scrapes during write_bw: " + seen);
        System.out.println("exporter: the last scrape's counter series:");
        lastBody.lines().filter(l -> l.startsWith("rdma_hw_") && l.contains(device.name())).forEach(l -> System.out.println("  " + l));
        for (int i = 1; i < seen.size(); i++) {
            assertTrue(seen.get(i) >= seen.get(i - 1), "a counter never goes down: " + seen);
        }
        long sysfsNow = RdmaCounters.sysfs(RdmaCounters.SYSFS_ROOT).snapshotAfter(device.name(), 1, System.nanoTime())
                .counter("sent_pkts").orElseThrow().value();
        assertTrue(seen.get(seen.size() - 1) - seen.get(0) >= 2000 * 4 / 2, "the series rose during the transfer: " + seen);
        assertEquals(sysfsNow, sample(registry, "rdma_hw_sent_pkts", device.name()), "a scrape now equals sysfs");
    }

    @Test
    void aCounterThatFailsToReadLeavesTheRestExported(TestDevice device) throws Exception {
        // The real port's files, copied, plus one that cannot be read (a dangling link: ENOENT, as a vanished file).
        Path root = Files.createTempDirectory("obs-broken");
        Path real = RdmaCounters.SYSFS_ROOT.resolve(device.name()).resolve("ports/1/hw_counters");
        Path copy = Files.createDirectories(root.resolve(device.name()).resolve("ports/1/hw_counters"));
        List<String> names = new ArrayList<>();
        try (var files = Files.list(real)) {
            for (Path f : files.toList()) {
                Files.writeString(copy.resolve(f.getFileName()), Files.readString(f));
                names.add(f.getFileName().toString());
            }
        }
        Files.delete(copy.resolve("sent_pkts"));
        Files.createSymbolicLink(copy.resolve("sent_pkts"), copy.resolve("gone"));
        PrometheusRegistry registry = new PrometheusRegistry();
        RdmaMetrics.of(RdmaCounters.sysfs(root)).register(registry);
        int exported = 0;
        boolean errorSeen = false;
        for (MetricSnapshot m : registry.scrape()) {
            String n = m.getMetadata().getName();
            if (n.startsWith("rdma_hw_") && !n.equals("rdma_hw_counters_lifespan_seconds")) {
                exported++;
            }
            if (n.equals("rdma_counter_read_error")) {
                errorSeen = m.getDataPoints().stream().anyMatch(p -> "sent_pkts".equals(p.getLabels().get("counter")));
            }
        }
        assertTrue(errorSeen, "sent_pkts is reported unreadable");
        int expected = (int) names.stream().filter(n -> !n.equals("lifespan") && !n.equals("sent_pkts")).count();
        assertEquals(expected, exported, "every other counter of " + device.name() + " is still exported (" + names + ")");
        System.out.println("exporter: with sent_pkts unreadable, " + exported + " other counters of " + device.name() + " exported");
    }
}
