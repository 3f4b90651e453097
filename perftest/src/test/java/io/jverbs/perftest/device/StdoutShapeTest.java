package io.jverbs.perftest.device;

import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * C's stdout, line for line: the same C command line with a C client and with a Java client, each
 * against a C server, prints the same lines in the same order once the numbers (values, addresses,
 * keys, GIDs) are masked and runs of blanks are one. The C client's stderr is part of its output
 * here (C's process writes both to one log), so jverbs' stdout must not hold what C prints nowhere.
 */
@DeviceTest
class StdoutShapeTest {
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"write_bw", "send_lat"})
    void javaClientPrintsCsLines(String test, TestDevice device) throws Exception {
        List<String> c = clientOutput(test, device, false);
        List<String> java = clientOutput(test, device, true);
        String both = "\n--- C client:\n" + String.join("\n", c) + "\n--- Java client:\n" + String.join("\n", java);
        assertEquals(c, java, "the same lines, numbers masked:" + both);
        System.out.println(test + " on " + device.name() + ": C's and jverbs' client stdout are the same " + c.size()
                + " lines with the numbers masked");
    }

    /** One run against a C server: the client's stdout (C's: stdout and stderr), masked. */
    private static List<String> clientOutput(String test, TestDevice device, boolean java) throws Exception {
        for (int attempt = 1; ; attempt++) {
            int port = Perf.freePort();
            List<String> args = new ArrayList<>(Perf.deviceArgs(device));
            args.addAll(JavaToJavaTest.sizeArgs(test, false));
            args.addAll(List.of("-p", Integer.toString(port)));
            List<String> cArgs = new ArrayList<>(args);
            cArgs.add("-F");
            Perf.CTool server = Perf.CTool.start("ib_" + test, cArgs);
            String out;
            try {
                Perf.awaitListening(port, 60_000, null);
                if (java) {
                    List<String> j = new ArrayList<>(List.of(test));
                    j.addAll(args);
                    Perf.Result r = Perf.run(Perf.concat(j, Perf.host(device)));
                    assertEquals(0, r.exit(), r.all());
                    out = r.out();
                } else {
                    cArgs.add(Perf.host(device));
                    Perf.CTool client = Perf.CTool.start("ib_" + test, cArgs);
                    Perf.Result r = client.await();
                    assertEquals(0, r.exit(), r.out());
                    out = r.out();
                }
                server.await();
            } finally {
                server.kill();
            }
            if (Perf.clockCalibrationFailed(out) && attempt < 3) {
                continue; // C's clock calibration failed under emulation: not a result
            }
            return mask(out);
        }
    }

    static List<String> mask(String out) {
        List<String> lines = new ArrayList<>();
        for (String l : out.lines().toList()) {
            String m = l.replaceAll("(0x)?[0-9a-fA-F]*[0-9][0-9a-fA-F.:]*", "N").replaceAll("[ \\t]+", " ").strip();
            if (!m.isEmpty()) {
                lines.add(m);
            }
        }
        return lines;
    }
}
