package io.jverbs.perftest.device;

import io.jverbs.ibverbs.device.PairControl;
import io.jverbs.ibverbs.device.PairNode;
import io.jverbs.ibverbs.device.PairTest;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * perftest across the wire: jverbs-perftest against Debian's C ib_write_bw in both directions,
 * the cross-node write bandwidth of Java↔Java against C↔C in the same boot (a ratio, never an
 * absolute claim), and hostile TCP peers on node b (silent, truncated, garbage, an old version, a
 * bad QP record, huge sizes) against a jverbs-perftest client on node a: a clear error within 5 s
 * of the handshake's start and nothing leaked.
 */
@PairTest
@Order(10)
class PairPerftestTest {
    private static final String SIZE = "65536";
    private static final String ITERS = "400";
    private static final long HOSTILE_BOUND_MS = 5_000;
    private static final Pattern BW_ROW = Pattern.compile("^\\s*65536\\s+\\d+\\s+([0-9.]+)\\s+([0-9.]+)", Pattern.MULTILINE);

    private static List<String> args(PairNode node, int port) {
        List<String> a = new ArrayList<>(Perf.deviceArgs(node.device()));
        a.addAll(List.of("-s", SIZE, "-n", ITERS, "-p", Integer.toString(port)));
        return a;
    }

    /** BW average (MB/s) of a 64 KiB row, or -1. */
    static double average(String output) {
        Matcher m = BW_ROW.matcher(output);
        return m.find() ? Double.parseDouble(m.group(2)) : -1;
    }

    /** The C side on one node, the Java side (or C) on the other; retried when C's clock calibration fails (TCG). */
    private static double[] run(PairNode node, boolean serverOnA, boolean javaServer, boolean javaClient, String label)
            throws Exception {
        PairControl control = node.control();
        boolean iAmServer = node.isA() == serverOnA;
        for (int attempt = 1; attempt <= 3; attempt++) {
            int port = 20_000 + attempt * 7 + (label.hashCode() & 0xfff);
            Perf.Result mine;
            if (iAmServer) {
                List<String> a = args(node, port);
                if (javaServer) {
                    CompletableFuture<Perf.Result> s = Perf.start(Perf.concat(List.of("write_bw"), a.toArray(String[]::new)));
                    Perf.awaitListening(port, 60_000, s);
                    control.send("listening", Integer.toString(port));
                    mine = Perf.await(s);
                } else {
                    a.add("-F");
                    Perf.CTool c = Perf.CTool.start("ib_write_bw", a);
                    try {
                        Perf.awaitListening(port, 60_000, null);
                        control.send("listening", Integer.toString(port));
                        mine = c.await();
                    } finally {
                        c.kill();
                    }
                }
            } else {
                assertEquals(Integer.toString(port), control.expect("listening"));
                List<String> a = args(node, port);
                if (javaClient) {
                    a.add(node.peerIp());
                    mine = Perf.run(Perf.concat(List.of("write_bw"), a.toArray(String[]::new)));
                } else {
                    a.addAll(List.of("-F", node.peerIp()));
                    Perf.CTool c = Perf.CTool.start("ib_write_bw", a);
                    try {
                        mine = c.await();
                    } finally {
                        c.kill();
                    }
                }
            }
            boolean calibration = Perf.clockCalibrationFailed(mine.all());
            if (mine.exit() != 0) { // before the peer's result, which may never come once this side failed
                System.out.println(label + " (node " + node.role() + "): exit " + mine.exit() + "\n" + mine.all());
            }
            control.send("result", mine.exit() + " " + calibration + " " + average(mine.all()));
            String[] theirs = control.expect("result", Duration.ofSeconds(200)).split(" ");
            if (calibration || Boolean.parseBoolean(theirs[1])) {
                System.out.println(label + ": C perftest's clock calibration failed under emulation; retry " + attempt);
                continue;
            }
            System.out.println(label + " (node " + node.role() + ", " + (iAmServer ? "server" : "client") + "):\n" + mine.all());
            assertEquals(0, mine.exit(), label + ": this side exits 0\n" + mine.all());
            assertEquals("0", theirs[0], label + ": the other node's side exits 0");
            double clientBw = iAmServer ? Double.parseDouble(theirs[2]) : average(mine.all());
            assertTrue(clientBw > 0, label + ": the client printed its 64 KiB row\n" + mine.all());
            return new double[] {clientBw};
        }
        throw new AssertionError(label + ": C perftest's clock calibration failed three times");
    }

    @Test
    @Order(1)
    void javaClientOnAToCServerOnB(PairNode node) throws Exception {
        run(node, false, false, true, "write_bw C server (node b), Java client (node a)");
    }

    @Test
    @Order(2)
    void cClientOnBToJavaServerOnA(PairNode node) throws Exception {
        run(node, true, true, false, "write_bw Java server (node a), C client (node b)");
    }

    /**
     * C↔C and Java↔Java (server on node b, client on node a) in one boot, in the order C, Java,
     * Java, C so that a drift of the host's load during the test weighs on both alike; the ratio
     * is of the means.
     */
    @Test
    @Order(3)
    void writeBandwidthJavaVersusCAcrossNodes(PairNode node) throws Exception {
        double[] c = new double[2];
        double[] java = new double[2];
        c[0] = run(node, false, false, false, "write_bw C server (node b), C client (node a), run 1")[0];
        java[0] = run(node, false, true, true, "write_bw Java server (node b), Java client (node a), run 1")[0];
        java[1] = run(node, false, true, true, "write_bw Java server (node b), Java client (node a), run 2")[0];
        c[1] = run(node, false, false, false, "write_bw C server (node b), C client (node a), run 2")[0];
        double cMean = (c[0] + c[1]) / 2;
        double javaMean = (java[0] + java[1]) / 2;
        System.out.printf(Locale.ROOT, "pair: cross-node write_bw 64 KiB x %s: Java %.2f and %.2f MB/s, C %.2f and %.2f MB/s;"
                + " Java/C %.2f (of the means)%n", ITERS, java[0], java[1], c[0], c[1], javaMean / cMean);
        assertTrue(javaMean > 0 && cMean > 0);
    }

    // ------------------------------------------------------------------ hostile peers

    interface Script {
        void play(Socket s) throws Exception;
    }

    /**
     * Node b plays {@code script} as a server; node a runs a jverbs-perftest client against it and
     * must exit 1 with a message containing {@code expected}, within 5 s of the handshake's start
     * (measured on node b: from the accept until node a closes the connection), leaking nothing.
     */
    private static void hostile(PairNode node, String expected, Script script) throws Exception {
        PairControl control = node.control();
        if (node.isA()) {
            int port = Integer.parseInt(control.expect("hostile"));
            Perf.Result r = Perf.run(Perf.concat(List.of("write_bw"),
                    Perf.concat(Perf.deviceArgs(node.device()), "-n", "10", "-p", Integer.toString(port), node.peerIp())));
            long handshakeMs = Long.parseLong(control.expect("handshake-ms", Duration.ofSeconds(60)));
            System.out.println("pair: jverbs-perftest client against a hostile server on node b: exit " + r.exit() + " after "
                    + handshakeMs + " ms of handshake: " + r.err().strip());
            assertEquals(1, r.exit(), "exit 1: " + r.all());
            assertTrue(r.err().contains(expected), "the error names the problem ('" + expected + "'): " + r.err());
            assertTrue(handshakeMs >= 0 && handshakeMs <= HOSTILE_BOUND_MS, "timed out: the error came " + handshakeMs
                    + " ms into the handshake (bound " + HOSTILE_BOUND_MS + " ms)");
            assertEquals("", node.resourcesAgainstBaseline(), "LEAK: node a after a hostile peer");
        } else {
            long ms;
            try (ServerSocket listener = new ServerSocket(0)) {
                listener.setSoTimeout(120_000);
                control.send("hostile", Integer.toString(listener.getLocalPort()));
                try (Socket s = listener.accept()) {
                    long accepted = System.nanoTime();
                    try {
                        script.play(s);
                    } catch (IOException e) {
                        // the client gave up while the script was still talking: that is its answer
                    }
                    ms = awaitClose(s, accepted, 15_000);
                }
            }
            control.send("handshake-ms", Long.toString(ms));
        }
    }

    /** Milliseconds from {@code since} until the peer closes {@code s} (whatever it sends is read and dropped); -1 if it never does. */
    private static long awaitClose(Socket s, long since, int limitMs) throws IOException {
        s.setSoTimeout(limitMs);
        InputStream in = s.getInputStream();
        byte[] sink = new byte[512];
        try {
            while (in.read(sink) >= 0) {
                // drained
            }
        } catch (SocketTimeoutException e) {
            return -1;
        } catch (IOException e) {
            // reset by the peer: closed too
        }
        return (System.nanoTime() - since) / 1_000_000;
    }

    private static byte[] read(Socket s, int n) throws IOException {
        byte[] b = new byte[n];
        new DataInputStream(s.getInputStream()).readFully(b);
        return b;
    }

    private static void preamble(Socket s, int cycle, int cacheLine) throws IOException {
        OutputStream out = s.getOutputStream();
        read(s, 16);
        out.write(Arrays.copyOf("6.06".getBytes(StandardCharsets.US_ASCII), 16));
        read(s, 4);
        out.write(ByteBuffer.allocate(4).putInt(cycle).array());
        read(s, 4);
        out.write(ByteBuffer.allocate(4).putInt(cacheLine).array());
        read(s, 2);
        out.write(new byte[] {'3', 0});
        out.flush();
    }

    @Test
    @Order(10)
    @Tag(PairTest.FAULT)
    void hostileSilentServer(PairNode node) throws Exception {
        hostile(node, "sent nothing within 4 s", s -> { });
    }

    @Test
    @Order(11)
    @Tag(PairTest.FAULT)
    void hostileTruncatedVersion(PairNode node) throws Exception {
        hostile(node, "sent only 3 of the 16 bytes of the perftest version", s -> {
            read(s, 16);
            s.getOutputStream().write("6.0".getBytes(StandardCharsets.US_ASCII));
        });
    }

    @Test
    @Order(12)
    @Tag(PairTest.FAULT)
    void hostileGarbage(PairNode node) throws Exception {
        hostile(node, "is not a perftest: its version field is", s -> {
            read(s, 16);
            byte[] junk = new byte[16];
            new java.util.Random(7).nextBytes(junk);
            s.getOutputStream().write(junk);
        });
    }

    @Test
    @Order(13)
    @Tag(PairTest.FAULT)
    void hostileWrongVersion(PairNode node) throws Exception {
        hostile(node, "not compatible with versions older than 5.70 (the peer says 5.60)", s -> {
            read(s, 16);
            s.getOutputStream().write(Arrays.copyOf("5.60".getBytes(StandardCharsets.US_ASCII), 16));
        });
    }

    @Test
    @Order(14)
    @Tag(PairTest.FAULT)
    void hostileBadQpRecord(PairNode node) throws Exception {
        hostile(node, "Couldn't parse line", s -> {
            preamble(s, 4096, 64);
            read(s, 108);
            byte[] junk = new byte[108];
            Arrays.fill(junk, (byte) 'z');
            s.getOutputStream().write(junk);
        });
    }

    @Test
    @Order(15)
    @Tag(PairTest.FAULT)
    void hostileTruncatedQpRecordThenClosed(PairNode node) throws Exception {
        hostile(node, "closed the connection after 14 of the 108 bytes of the QP records", s -> {
            preamble(s, 4096, 64);
            read(s, 108);
            s.getOutputStream().write("0000:0001:0000".getBytes(StandardCharsets.US_ASCII));
            s.shutdownOutput();
        });
    }

    @Test
    @Order(16)
    @Tag(PairTest.FAULT)
    void hostileHugeCycleBuffer(PairNode node) throws Exception {
        hostile(node, "cycle buffer size 1073741824 is implausible", s -> preamble(s, 1 << 30, 64));
    }

    @Test
    @Order(17)
    @Tag(PairTest.FAULT)
    void hostileHugeCacheLine(PairNode node) throws Exception {
        hostile(node, "cache line size 2147483647 is implausible", s -> preamble(s, 4096, Integer.MAX_VALUE));
    }
}
