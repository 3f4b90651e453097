package io.jverbs.perftest.device;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every test type, a jverbs-perftest server and client in this JVM, on the device. */
@DeviceTest
class JavaToJavaTest {
    static List<String> sizeArgs(String test) {
        return sizeArgs(test, false);
    }

    /**
     * The size and iteration flags of the device tests; under {@code -c UD} bandwidth tests give
     * no {@code -s}, so C's default (65536) becomes the MTU on both sides (an explicit size over
     * the MTU is an error in C and in jverbs).
     */
    static List<String> sizeArgs(String test, boolean ud) {
        boolean bw = test.endsWith("_bw");
        List<String> a = new ArrayList<>();
        if (!test.startsWith("atomic") && !(ud && bw)) {
            a.add("-s");
            a.add(bw ? "4096" : "2");
        }
        a.add("-n");
        a.add(bw ? "100" : "50");
        return a;
    }

    static Pattern row(String test) {
        boolean bw = test.endsWith("_bw");
        return row(test, test.startsWith("atomic") ? "8" : bw ? "4096" : "2");
    }

    /** The table row of {@link #sizeArgs}' iterations at another message size (UD's is the MTU at most). */
    static Pattern row(String test, String size) {
        return row(test, size, 1);
    }

    /** As {@link #row(String, String)} for {@code qps} queue pairs: #iterations counts every one's, as C's. */
    static Pattern row(String test, String size, int qps) {
        boolean bw = test.endsWith("_bw");
        return Pattern.compile("(?m)^ " + size + "\\s+" + (bw ? 100 : 50) * qps + "\\s+\\d+\\.\\d\\d\\s+\\d+\\.\\d\\d");
    }

    /** The message size a UD run of {@link #sizeArgs} ends up with on rxe: bandwidth's default becomes the 1024-byte MTU. */
    static String udSize(String test) {
        return test.endsWith("_bw") ? "1024" : "2";
    }

    static Perf.Result[] pair(TestDevice device, String test, List<String> extra) throws Exception {
        int port = Perf.freePort();
        List<String> common = new ArrayList<>(List.of(test));
        common.addAll(Perf.deviceArgs(device));
        common.addAll(sizeArgs(test, extra.contains("UD")));
        common.addAll(extra);
        common.add("-p");
        common.add(Integer.toString(port));
        CompletableFuture<Perf.Result> server = Perf.start(common.toArray(String[]::new));
        Perf.awaitListening(port, 60_000, server);
        Perf.Result client = Perf.run(Perf.concat(common, Perf.host(device)));
        Perf.Result s = Perf.await(server);
        assertEquals(0, client.exit(), "client of " + test + " exits 0:\n" + client.all() + "\nserver:\n" + s.all());
        assertEquals(0, s.exit(), "server of " + test + " exits 0:\n" + s.all());
        return new Perf.Result[] {s, client};
    }

    @ParameterizedTest
    @ValueSource(strings = {"write_bw", "write_lat", "read_bw", "read_lat", "send_bw", "send_lat", "atomic_bw", "atomic_lat"})
    void serverAndClient(String test, TestDevice device) throws Exception {
        Perf.Result[] r = pair(device, test, List.of());
        System.out.println(r[1].out());
        assertTrue(row(test).matcher(r[1].out()).find(), "the client prints its " + test + " row:\n" + r[1].out());
        boolean passiveServer = test.equals("read_lat") || test.equals("atomic_lat");
        assertEquals(!passiveServer, row(test).matcher(r[0].out()).find(), "the server prints a row unless it only serves"
                + " reads/atomics:\n" + r[0].out());
        if (test.endsWith("_lat")) {
            assertTrue(r[1].err().contains("HdrHistogram[usec]: p50"), "latency adds HdrHistogram percentiles on stderr");
            assertFalse(r[1].out().contains("HdrHistogram"), "stdout stays C's");
        } else {
            // The peak is the best rate over any run of posts ending at a signaled one, the whole run
            // included, so it is at least the average (it was 0.00 at cq_mod > 1 once).
            Matcher m = Pattern.compile("(?m)^ \\d+\\s+\\d+\\s+(\\d+\\.\\d\\d)\\s+(\\d+\\.\\d\\d)").matcher(r[1].out());
            assertTrue(m.find(), r[1].out());
            double peak = Double.parseDouble(m.group(1));
            double avg = Double.parseDouble(m.group(2));
            assertTrue(avg > 0 && peak >= avg, test + ": BW peak " + peak + " is at least the average " + avg + ":\n"
                    + r[1].out());
        }
    }

    /**
     * {@code -c UD}, Java on both sides: datagram queue pairs, address handles from the exchanged
     * records, receives with room for the 40-byte routing header; send_bw's default size becomes the
     * MTU, as C does.
     */
    @ParameterizedTest
    @ValueSource(strings = {"send_bw", "send_lat"})
    void unreliableDatagram(String test, TestDevice device) throws Exception {
        Perf.Result[] r = pair(device, test, List.of("-c", "UD"));
        System.out.println(r[1].out());
        for (Perf.Result side : r) {
            assertTrue(side.out().contains("Connection type : UD"), side.out());
            assertTrue(row(test, udSize(test)).matcher(side.out()).find(), "each side prints its " + test + " row at "
                    + udSize(test) + " bytes:\n" + side.out());
        }
        if (test.equals("send_bw")) {
            assertTrue(r[1].err().contains("Max msg size in UD is MTU 1024"), "C's note, on stderr as C's: " + r[1].err());
            assertFalse(r[1].out().contains("Max msg size"), r[1].out());
        }
    }

    /**
     * {@code -c UC} send_bw whose client outruns the server's receives ({@code -r 2} on the
     * server): UC drops a message that finds no receive, so the server can never count them all.
     * It must end at its completion timeout (2 s without progress) with exit 1 and a message
     * naming that timeout, not wait for ever, and the client must end too.
     */
    @Test
    void ucSendOutrunningTheReceivesEndsAtTheCompletionTimeout(TestDevice device) throws Exception {
        int port = Perf.freePort();
        List<String> common = new ArrayList<>(List.of("send_bw"));
        common.addAll(Perf.deviceArgs(device));
        common.addAll(List.of("-c", "UC", "-s", "4096", "-n", "2000", "-p", Integer.toString(port),
                "--completion_timeout", "2"));
        CompletableFuture<Perf.Result> server = Perf.start(Perf.concat(common, "-r", "2"));
        Perf.awaitListening(port, 60_000, server);
        Perf.Result client = Perf.run(Perf.concat(common, Perf.host(device)));
        Perf.Result s = Perf.await(server);
        System.out.println("UC send_bw, server -r 2, on " + device.name() + ": server exit " + s.exit() + " after "
                + s.millis() + " ms: " + s.err().strip() + "; client exit " + client.exit() + " after " + client.millis()
                + " ms: " + client.err().strip());
        assertEquals(1, s.exit(), "the server ends with exit 1:\n" + s.all());
        assertTrue(s.all().contains("--completion_timeout"), "the server names its completion timeout:\n" + s.all());
        assertTrue(s.all().contains("messages received"), "and how many messages it got:\n" + s.all());
        assertTrue(client.millis() < 60_000, "the client ended in " + client.millis() + " ms:\n" + client.all());
    }

    /** --rate_limit_type SW: 2,000 writes of 4 KiB at 8 MiB/s take a second; the average stays at the rate. */
    @Test
    void softwareRateLimiterHoldsTheRate(TestDevice device) throws Exception {
        Perf.Result[] r = pair(device, "write_bw", List.of("-n", "2000", "--rate_limit", "8", "--rate_units", "M",
                "--rate_limit_type", "SW", "--burst_size", "16"));
        Matcher m = Pattern.compile("(?m)^ 4096\\s+2000\\s+\\d+\\.\\d\\d\\s+(\\d+\\.\\d\\d)").matcher(r[1].out());
        assertTrue(m.find(), "the client's row:\n" + r[1].out() + r[1].err());
        double avg = Double.parseDouble(m.group(1));
        System.out.println("perftest --rate_limit 8 --rate_units M --rate_limit_type SW on " + device.name() + ": "
                + avg + " MiB/s");
        assertTrue(avg <= 8 * 1.1 && avg >= 8 * 0.5, "the average " + avg + " MiB/s keeps to the 8 MiB/s limit");
    }

    @Test
    void twoQueuePairsBidirectional(TestDevice device) throws Exception {
        Perf.Result[] r = pair(device, "write_bw", List.of("-q", "2", "-b"));
        assertTrue(r[1].out().contains("Number of qps   : 2"), r[1].out());
        assertTrue(r[1].out().contains("RDMA_Write Bidirectional BW Test"), "C's title under -b:\n" + r[1].out());
        // as C: #iterations counts every queue pair's (-n 100 on each of 2)
        Pattern both = Pattern.compile("(?m)^ 4096\\s+200\\s+\\d+\\.\\d\\d\\s+\\d+\\.\\d\\d");
        assertTrue(both.matcher(r[0].out()).find() && both.matcher(r[1].out()).find(),
                "both sides print the summed row, 200 iterations:\n" + r[0].out() + "\n" + r[1].out());
    }

    /** -l 4: four writes per ibv_post_send (a WorkBatch), one completion per list, as C's post list. */
    @Test
    void postListWriteBw(TestDevice device) throws Exception {
        Perf.Result[] r = pair(device, "write_bw", List.of("-l", "4"));
        assertTrue(r[1].out().contains("Post List requested - CQ moderation will be the size of the post list"), r[1].out());
        assertTrue(r[1].out().contains("CQ Moderation   : 4"), r[1].out());
        assertTrue(r[1].out().contains("RDMA_Write Post List BW Test") && r[1].out().contains(" Post List       : 4"),
                "C's title and line under -l:\n" + r[1].out());
        assertTrue(row("write_bw").matcher(r[1].out()).find() && row("write_bw").matcher(r[0].out()).find(),
                "both sides print the client's row:\n" + r[1].out() + "\n" + r[0].out());
    }

    /**
     * What the measured loops allocate: the JSON's allocated_bytes (ThreadMXBean around the loop)
     * of a first, a second and a third run in this JVM, printed for the report; the third must be
     * 0 bytes (the loops allocate nothing themselves, and each run's
     * warm-up takes the FFM linkage below them out of the clock). Each run's warm-up must have run
     * ({@code --alloc_report} prints its batches), {@code -c UD}'s on datagram twins included.
     */
    /** The {@code --alloc_report} line of a warm-up that ran all its rounds of the measured loop, or had run them before. */
    private static final Pattern WARMED_UP = Pattern.compile("Warm-up: \\d+ batches of .*; (300 rounds of the measured"
            + " loop|the measured loop already warm in this JVM)");

    @Test
    void jsonReportAndZeroAllocation(TestDevice device, @org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        String[][] cases = {{"write_bw"}, {"write_lat"}, {"send_bw"}, {"send_lat"}, {"read_bw"}, {"atomic_lat"},
                            {"send_lat", "-c", "UD"}, {"send_bw", "-c", "UD"}, {"send_bw", "-c", "UD", "-l", "4"},
                            {"atomic_bw", "-l", "4"}};
        for (String[] k : cases) {
            String test = k[0];
            List<String> extra = List.of(k).subList(1, k.length);
            String name = String.join(" ", k);
            long[] allocated = new long[3];
            for (int run = 0; run < 3; run++) {
                Path serverJson = dir.resolve(test + extra.size() + run + "-server.json");
                Path clientJson = dir.resolve(test + extra.size() + run + "-client.json");
                int port = Perf.freePort();
                List<String> common = new ArrayList<>(List.of(test));
                common.addAll(Perf.deviceArgs(device));
                common.addAll(sizeArgs(test, extra.contains("UD")));
                common.addAll(extra);
                common.addAll(List.of("-p", Integer.toString(port), "--out_json"));
                CompletableFuture<Perf.Result> server = Perf.start(Perf.concat(common, "--out_json_file", serverJson.toString()));
                Perf.awaitListening(port, 60_000, server);
                Perf.Result client = Perf.run(Perf.concat(common, "--out_json_file", clientJson.toString(), "--alloc_report",
                        Perf.host(device)));
                Perf.Result s = Perf.await(server);
                assertEquals(0, client.exit(), client.all());
                assertEquals(0, s.exit(), s.all());
                assertTrue(WARMED_UP.matcher(client.out()).find(),
                        name + ": the client's warm-up ran every round of the measured loop:\n" + client.out());
                JsonNode json = new ObjectMapper().readTree(Files.readString(clientJson));
                assertTrue(json.path("results").has("MsgSize"), "results in " + json);
                assertTrue(new ObjectMapper().readTree(Files.readString(serverJson)).has("test_info"));
                allocated[run] = json.path("allocated_bytes").asLong(-1);
            }
            System.out.println("allocation: " + name + " client measured loop: first run " + allocated[0]
                    + " bytes, second " + allocated[1] + ", third (warm) " + allocated[2] + " bytes");
            // The third run is the warm one even when this test class runs first in a cold JVM.
            assertEquals(0, allocated[2], name + ": bytes allocated in the warm run's measured loop on " + device.name());
        }
    }
}
