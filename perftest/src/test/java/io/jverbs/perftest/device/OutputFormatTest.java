package io.jverbs.perftest.device;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The output a script parses as C's: the table from {@code #bytes} to the dashed line holds only
 * rows (the HdrHistogram lines follow it, over the row's samples), the header box prints
 * {@code RX depth} where C does, and the JSON holds C's test_info keys with C's number formats.
 */
@DeviceTest
class OutputFormatTest {
    private static final Pattern LAT_ROW = Pattern.compile(
            "^ (\\d+)\\s+(\\d+)\\s+(\\d+\\.\\d\\d)\\s+(\\d+\\.\\d\\d)\\s+(\\d+\\.\\d\\d)\\s+(\\d+\\.\\d\\d)");
    private static final Pattern HDR = Pattern.compile(
            "^ HdrHistogram\\[usec\\]: p50 .* max (\\d+\\.\\d\\d)  \\((\\d+) samples of (\\d+) B, the 2 slowest left out as in the row\\)$");

    @Test
    void allSizesTableIsRowsOnlyAndTheHistogramsFollowIt(TestDevice device) throws Exception {
        // -n 20 (given after the pair's -n 50: the last wins, as C's getopt): 8 MiB ping-pongs are slow on rxe
        Perf.Result[] r = JavaToJavaTest.pair(device, "write_lat", List.of("-a", "-n", "20"));
        String out = r[1].out();
        List<String> lines = out.lines().toList();
        int head = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).startsWith(" #bytes")) {
                head = i;
            }
        }
        assertTrue(head >= 0, out);
        int i = head + 1;
        java.util.Map<Long, Double> tMax = new java.util.HashMap<>();
        while (!lines.get(i).startsWith("-----")) {
            Matcher m = LAT_ROW.matcher(lines.get(i));
            assertTrue(m.find(), "only rows between #bytes and the dashed line, not <" + lines.get(i) + ">:\n" + out);
            tMax.put(Long.parseLong(m.group(1)), Double.parseDouble(m.group(4)));
            i++;
        }
        assertEquals(23, tMax.size(), out);
        int hdr = 0;
        assertFalse(out.contains("HdrHistogram"), "stdout stays C's: the HdrHistogram lines are on stderr");
        List<String> errLines = r[1].err().lines().toList();
        for (int j = 0; j < errLines.size(); j++) {
            Matcher m = HDR.matcher(errLines.get(j));
            if (m.find()) {
                hdr++;
                long size = Long.parseLong(m.group(3));
                assertEquals(17, Long.parseLong(m.group(2)), "19 gaps of 20 posts, the 2 slowest left out: " + lines.get(j));
                double max = Double.parseDouble(m.group(1));
                // HdrHistogram keeps 3 significant digits: its max may round up by 0.1 %
                assertTrue(max <= tMax.get(size) * 1.001 + 0.01, "the histogram's max " + max + " is within the row's t_max "
                        + tMax.get(size) + " (" + size + " B)");
            }
        }
        assertEquals(23, hdr, "one HdrHistogram line per size, on stderr:\n" + r[1].err());
    }

    /**
     * {@code --output=bandwidth} as scripts parse it: a Java server and a C client each print one
     * number, C's {@code %lf}, on stdout (C's output is its stdout and stderr together here: its
     * last line is the number); a Java client against a C server likewise, with the queue pairs'
     * traffic class set (--tclass 106: DSCP 26 on RoCE v2).
     */
    @Test
    void outputBandwidthPrintsOneNumberAsC(TestDevice device) throws Exception {
        Pattern number = Pattern.compile("\\d+\\.\\d{6}");
        for (boolean cServer : new boolean[] {false, true}) {
            List<String> args = new java.util.ArrayList<>(Perf.deviceArgs(device));
            args.addAll(List.of("-s", "4096", "-n", "200", "--output=bandwidth"));
            Perf.Versus v = Perf.versusC("write_bw", args, List.of("--tclass", "106"), cServer, device);
            Perf.Result java = v.java();
            Perf.Result c = v.c();
            String both = (cServer ? "C server, Java client" : "Java server, C client") + "\n--- C:\n" + c.out()
                    + "\n--- Java stdout:\n" + java.out() + "\n--- Java stderr:\n" + java.err();
            if (Perf.clockCalibrationFailed(c.out())) {
                System.out.println("C's clock calibration failed under emulation; its side is not judged: " + both);
            } else {
                assertEquals(0, c.exit(), both);
                List<String> cLines = c.out().lines().filter(l -> !l.isBlank()).toList();
                assertTrue(number.matcher(cLines.getLast().trim()).matches(), "C's last line is the number: " + both);
            }
            assertEquals(0, java.exit(), both);
            assertTrue(number.matcher(java.out().strip()).matches() && java.out().strip().lines().count() == 1,
                    "jverbs-perftest prints one number on stdout: " + both);
            System.out.println("perftest --output=bandwidth on " + device.name() + ", " + both.lines().findFirst().orElse("")
                    + ": Java printed " + java.out().strip());
        }
    }

    /** {@code --cpu_util} with {@code -D}: C's CPU_Util[%] column, printed by a C client and a Java client alike. */
    @Test
    void cpuUtilColumnAsC(TestDevice device) throws Exception {
        Pattern row = Pattern.compile("(?m)^ 4096\\s+\\d+\\s+\\d+\\.\\d\\d\\s+\\d+\\.\\d\\d\\s+\\d+\\.\\d{6}\\t    (\\d+\\.\\d\\d)");
        for (boolean javaClient : new boolean[] {true, false}) {
            List<String> args = new java.util.ArrayList<>(Perf.deviceArgs(device));
            args.addAll(List.of("-s", "4096", "-D", "4", "--cpu_util"));
            Perf.Versus v = Perf.versusC("write_bw", args, List.of(), javaClient, device);
            String client = javaClient ? v.java().out() : v.c().out();
            String all = (javaClient ? "Java client, C server" : "C client, Java server") + v.both("ib_write_bw");
            assertEquals(0, v.java().exit(), all);
            if (!javaClient && Perf.clockCalibrationFailed(v.c().out())) {
                System.out.println("C's clock calibration failed under emulation; its row is not judged: " + all);
                continue;
            }
            assertTrue(client.contains("MsgRate[Mpps]    CPU_Util[%]"), "the header has C's column: " + all);
            Matcher m = row.matcher(client);
            assertTrue(m.find(), "the row ends with the CPU utilization: " + all);
            double util = Double.parseDouble(m.group(1));
            assertTrue(util > 0 && util <= 100, "a busy-polling client shows CPU use: " + util + "\n" + all);
            System.out.println("perftest --cpu_util on " + device.name() + ": " + (javaClient ? "Java" : "C")
                    + " client printed CPU_Util " + util + " %");
        }
    }

    @Test
    void rxDepthWhereCPrintsIt(TestDevice device) throws Exception {
        Perf.Result[] r = JavaToJavaTest.pair(device, "send_lat", List.of());
        assertTrue(r[0].out().contains(" RX depth        :"), "the send_lat server prints RX depth:\n" + r[0].out());
        assertFalse(r[1].out().contains(" RX depth        :"), "the send_lat client does not, as C:\n" + r[1].out());
    }

    @Test
    void jsonHasCsKeysAndNumberFormats(TestDevice device, @TempDir Path dir) throws Exception {
        JsonNode lat = new ObjectMapper().readTree(clientJson(device, "write_lat", dir.resolve("lat.json")).toFile());
        for (String key : List.of("Dual_port", "Transport_type", "Using_SRQ", "PCIe_relax_order", "ibv_wr_API", "rdma_cm_QPs",
                "Data_ex_method")) {
            assertTrue(lat.path("test_info").has(key), key + " in " + lat);
        }
        assertEquals("usec", lat.path("test_info").path("units").asText());
        String bw = java.nio.file.Files.readString(clientJson(device, "write_bw", dir.resolve("bw.json")));
        new ObjectMapper().readTree(bw); // valid JSON
        assertTrue(Pattern.compile("\"MsgRate\" : \\d+\\.\\d{6}[,\\s]").matcher(bw).find(), "C's %.6f: " + bw);
        assertFalse(bw.contains("E-"), bw);
    }

    /** Runs a pair where only the client writes its JSON report, and returns the file. */
    private static Path clientJson(TestDevice device, String test, Path file) throws Exception {
        int port = Perf.freePort();
        List<String> common = new java.util.ArrayList<>(List.of(test));
        common.addAll(Perf.deviceArgs(device));
        common.addAll(JavaToJavaTest.sizeArgs(test));
        common.addAll(List.of("-p", Integer.toString(port)));
        java.util.concurrent.CompletableFuture<Perf.Result> server = Perf.start(common.toArray(String[]::new));
        Perf.awaitListening(port, 60_000, server);
        Perf.Result client = Perf.run(Perf.concat(common, "--out_json", "--out_json_file", file.toString(), Perf.host(device)));
        Perf.Result s = Perf.await(server);
        assertEquals(0, client.exit(), client.all() + "\nserver:\n" + s.all());
        assertEquals(0, s.exit(), s.all());
        return file;
    }
}
