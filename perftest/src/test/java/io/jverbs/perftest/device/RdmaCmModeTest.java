package io.jverbs.perftest.device;

import io.jverbs.cm.CmConnection;
import io.jverbs.CompletionQueue;
import io.jverbs.Context;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.Rdma;
import io.jverbs.cm.RdmaCm;
import io.jverbs.RegisteredBuffer;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code -R}: the handshake over an rdma_cm control queue pair and the data queue pairs
 * connected by rdma_cm, as C perftest 4.5 does it. Every test type Java↔Java, Java↔C in both
 * directions, and rdma_cm peers that are absent, silent, hostile or vanish: exit 1 with the
 * reason within the bound, never a hang.
 */
@DeviceTest
class RdmaCmModeTest {
    private static final long BOUND_MS = 5_000;

    private static List<String> args(TestDevice device, String test, int port) {
        return args(device, test, List.of(), port);
    }

    private static List<String> args(TestDevice device, String test, List<String> extra, int port) {
        List<String> a = new ArrayList<>(List.of(test));
        a.addAll(Perf.deviceArgs(device));
        a.addAll(JavaToJavaTest.sizeArgs(test, extra.contains("UD")));
        a.addAll(extra);
        a.addAll(List.of("-R", "-p", Integer.toString(port)));
        return a;
    }

    private static java.util.regex.Pattern row(String test, List<String> extra) {
        int q = extra.indexOf("-q");
        int qps = q >= 0 ? Integer.parseInt(extra.get(q + 1)) : 1;
        return JavaToJavaTest.row(test, extra.contains("UD") ? JavaToJavaTest.udSize(test)
                : test.startsWith("atomic") ? "8" : test.endsWith("_bw") ? "4096" : "2", qps);
    }

    /**
     * {@code -c UD -R}, Java on both sides: each datagram queue pair resolved through rdma_cm's UDP
     * port space; send_lat and the bidirectional send_bw on two queue pairs also carry the
     * client's first datagram, from which the server makes its address handles back.
     */
    @ParameterizedTest(name = "{0} {1} -R Java/Java")
    @CsvSource({"send_lat, -c UD", "send_bw, -c UD -b -q 2"})
    void datagramsJavaToJava(String test, String flags, TestDevice device) throws Exception {
        List<String> extra = List.of(flags.split(" "));
        int port = Perf.freePort();
        List<String> common = args(device, test, extra, port);
        CompletableFuture<Perf.Result> server = Perf.start(common.toArray(String[]::new));
        Perf.Result client = Perf.run(Perf.concat(common, ip(device)));
        Perf.Result s = Perf.await(server);
        System.out.println(test + " " + flags + " -R Java/Java on " + device.name() + ":\n" + client.out());
        assertEquals(0, client.exit(), "client exits 0:\n" + client.all() + "\nserver:\n" + s.all());
        assertEquals(0, s.exit(), "server exits 0:\n" + s.all());
        for (Perf.Result side : List.of(s, client)) {
            assertTrue(side.out().contains("Connection type : UD") && side.out().contains("Data ex. method : rdma_cm"),
                    side.out());
            assertTrue(row(test, extra).matcher(side.out()).find(), "each side prints its row:\n" + side.out());
        }
    }

    /**
     * {@code -c UD -R} against C perftest 4.5 in both roles: C's SIDR request and first datagram
     * to the Java server, the Java client's to C's server (C's server waits for that datagram
     * without limit, so a missing or malformed one would hang it: the run's bound catches that).
     */
    @ParameterizedTest(name = "{0} {1} -R: {2} server, {3} client")
    @CsvSource({
        "send_lat, -c UD, C, Java", "send_lat, -c UD, Java, C",
        "send_bw, -c UD, C, Java", "send_bw, -c UD, Java, C",
        "send_bw, -c UD -b, C, Java", "send_bw, -c UD -b, Java, C",
    })
    void datagramsWithC(String test, String flags, String server, String client, TestDevice device) throws Exception {
        withC(test, List.of(flags.split(" ")), server.equals("C"), device);
    }

    private static String ip(TestDevice device) {
        assertTrue(device.ip() != null, "the rig sets JVERBS_TEST_IP (rdma_cm needs the device's address)");
        return device.ip();
    }

    @ParameterizedTest
    @ValueSource(strings = {"write_bw", "write_lat", "read_bw", "read_lat", "send_bw", "send_lat", "atomic_bw", "atomic_lat"})
    void javaToJava(String test, TestDevice device) throws Exception {
        int port = Perf.freePort();
        List<String> common = args(device, test, port);
        CompletableFuture<Perf.Result> server = Perf.start(common.toArray(String[]::new));
        // no wait for the listener: the client retries a refused rdma_cm connection until --connect_timeout
        Perf.Result client = Perf.run(Perf.concat(common, ip(device)));
        Perf.Result s = Perf.await(server);
        System.out.println(test + " -R Java/Java on " + device.name() + ":\n" + client.out());
        assertEquals(0, client.exit(), "client of " + test + " -R exits 0:\n" + client.all() + "\nserver:\n" + s.all());
        assertEquals(0, s.exit(), "server of " + test + " -R exits 0:\n" + s.all());
        assertTrue(client.out().contains("rdma_cm QPs\t : ON") && client.out().contains("Data ex. method : rdma_cm"),
                client.out());
        assertTrue(JavaToJavaTest.row(test).matcher(client.out()).find(), "the client prints its row:\n" + client.out());
    }

    @ParameterizedTest(name = "{0} -R: {1} server, {2} client")
    @CsvSource({
        "write_bw, C, Java", "write_bw, Java, C", "write_lat, C, Java", "write_lat, Java, C",
        "read_bw, C, Java", "read_bw, Java, C", "read_lat, C, Java", "read_lat, Java, C",
        "send_bw, C, Java", "send_bw, Java, C", "send_lat, C, Java", "send_lat, Java, C",
        "atomic_bw, C, Java", "atomic_bw, Java, C", "atomic_lat, C, Java", "atomic_lat, Java, C",
    })
    void withC(String test, String server, String client, TestDevice device) throws Exception {
        withC(test, List.of(), server.equals("C"), device);
    }

    private void withC(String test, List<String> extra, boolean cServer, TestDevice device) throws Exception {
        for (int attempt = 1; ; attempt++) {
            String calibration = once(test, extra, cServer, device);
            if (calibration == null) {
                return;
            }
            System.out.println("C perftest's clock calibration failed under emulation; retry " + attempt);
            if (attempt == 3) {
                throw new AssertionError(calibration);
            }
        }
    }

    /** One run; returns C's output when only its clock calibration failed (emulation), else null. */
    private String once(String test, List<String> extra, boolean cServer, TestDevice device) throws Exception {
        int port = Perf.freePort();
        List<String> javaArgs = args(device, test, extra, port);
        List<String> cArgs = new ArrayList<>(javaArgs.subList(1, javaArgs.size()));
        cArgs.add("-F");
        String tool = "ib_" + test;
        Perf.Result java;
        Perf.Result c;
        if (cServer) {
            Perf.CTool cs = Perf.CTool.start(tool, cArgs);
            try {
                java = Perf.run(Perf.concat(javaArgs, ip(device)));
                c = cs.await();
            } finally {
                cs.kill();
            }
        } else {
            CompletableFuture<Perf.Result> js = Perf.start(javaArgs.toArray(String[]::new));
            awaitCmListener(port, 60_000, js); // C's client does not retry a refused control connection
            cArgs.add(ip(device));
            for (int attempt = 1; ; attempt++) {
                Perf.CTool cc = Perf.CTool.start(tool, cArgs);
                try {
                    c = cc.await();
                } finally {
                    cc.kill();
                }
                // REJECTED (event 8): the listener seen was not ready yet; the Java server still waits
                if (c.exit() == 0 || !c.out().contains("Unexpected CM event bl blka 8") || js.isDone() || attempt == 5) {
                    break;
                }
                Thread.sleep(500);
            }
            java = Perf.await(js);
        }
        String both = "\n--- C (" + tool + " " + String.join(" ", extra) + " -R):\n" + c.out() + "\n--- Java:\n" + java.all();
        if (Perf.clockCalibrationFailed(c.out())) {
            return both;
        }
        System.out.println(test + " " + String.join(" ", extra) + " -R " + (cServer ? "C server, Java client" : "Java server, C client") + " on "
                + device.name() + both);
        assertEquals(0, c.exit(), tool + " -R exits 0" + both);
        assertEquals(0, java.exit(), "jverbs-perftest -R exits 0" + both);
        boolean passive = test.equals("read_lat") || test.equals("atomic_lat");
        if (!(cServer ? false : passive)) {
            assertTrue(row(test, extra).matcher(java.out()).find(), "jverbs-perftest prints its row" + both);
        }
        if (!(cServer && passive)) {
            assertTrue(row(test, extra).matcher(c.out()).find(), tool + " prints its row" + both);
        }
        return null;
    }

    /** Waits until an rdma_cm id listens on {@code port} ({@code rdma resource show cm_id}). */
    static void awaitCmListener(int port, long timeoutMs, CompletableFuture<?> server) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        String needle = ":" + port + " ";
        while (System.currentTimeMillis() < deadline) {
            Process p = new ProcessBuilder("rdma", "resource", "show", "cm_id").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor(10, TimeUnit.SECONDS);
            for (String line : out.split("\n")) {
                if (line.contains("LISTEN") && (line + " ").contains(needle)) {
                    return;
                }
            }
            if (server != null && server.isDone()) {
                throw new AssertionError("the server ended before listening: " + server.get());
            }
            Thread.sleep(100);
        }
        throw new AssertionError("no rdma_cm listener on port " + port + " after " + timeoutMs + " ms");
    }

    // ---- hostile and absent rdma_cm peers ----

    @Test
    void nobodyListens(TestDevice device) throws Exception {
        int port = Perf.freePort();
        long t0 = System.nanoTime();
        Perf.Result r = Perf.run(Perf.concat(args(device, "write_bw", port), "--connect_timeout", "2", ip(device)));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.out.println("-R client, nobody listens: exit " + r.exit() + " after " + ms + " ms: " + r.err().strip());
        assertEquals(1, r.exit(), r.all());
        assertTrue(r.err().contains("Couldn't make the rdma_cm control connection") && r.err().contains("within 2 s"), r.err());
        assertTrue(ms <= 2_000 + BOUND_MS, ms + " ms");
    }

    /** A scripted rdma_cm server: accepts the control connection, then plays {@code script}. */
    interface Script {
        void play(FakePeer peer) throws Exception;
    }

    /** One rdma_cm connection from the test's side, with blocking send/receive of whole messages. */
    static final class FakePeer implements AutoCloseable {
        /** When the script's last send began (0: none yet); read by the test thread after the client ends. */
        volatile long lastSendAt;
        final Context ctx;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final RegisteredBuffer buf;
        final QueuePair qp;
        CmConnection conn;
        private int lastBytes;
        private boolean lastReceive;
        private boolean lastOk;

        FakePeer(TestDevice device) {
            ctx = Rdma.open(device.name());
            pd = ctx.allocateProtectionDomain();
            cq = ctx.createCompletionQueue(32);
            buf = pd.allocate(8192);
            qp = pd.createQueuePair(QueuePairConfig.rc(cq).withDepth(4, 4).withSignalEvery(1));
        }

        void postReceive() {
            assertEquals(QueuePair.OK, qp.receive(1, buf, 0, 4096));
        }

        /** Next completion within {@code ms}; false on timeout. */
        private boolean next(long ms) throws InterruptedException {
            long deadline = System.nanoTime() + ms * 1_000_000;
            while (System.nanoTime() < deadline) {
                int n = cq.poll(wc -> {
                    lastOk = wc.isSuccess();
                    lastReceive = wc.isReceive();
                    lastBytes = wc.byteLength();
                }, 1);
                if (n > 0) {
                    return true;
                }
                Thread.sleep(1);
            }
            return false;
        }

        /**
         * Messages whose receive completed while {@link #send} waited for its own completion: the
         * client can answer before the send's acknowledgement is polled (seen once in CI, where
         * the answer was then dropped and the client timed out waiting for the next exchange).
         */
        private final java.util.ArrayDeque<byte[]> early = new java.util.ArrayDeque<>();

        byte[] receive() throws InterruptedException {
            if (!early.isEmpty()) {
                return early.poll();
            }
            while (next(10_000)) {
                if (lastReceive) {
                    return takeReceived();
                }
            }
            throw new AssertionError("the fake peer got no message within 10 s");
        }

        /** The message of the receive that just completed; its receive is posted again. */
        private byte[] takeReceived() {
            assertTrue(lastOk, "the fake peer's receive succeeded");
            byte[] b = buf.segment().asSlice(0, lastBytes).toArray(ValueLayout.JAVA_BYTE);
            postReceive();
            return b;
        }

        void send(byte[] bytes) throws InterruptedException {
            lastSendAt = System.nanoTime();
            MemorySegment.copy(bytes, 0, buf.segment(), ValueLayout.JAVA_BYTE, 4096, bytes.length);
            assertEquals(QueuePair.OK, qp.send(2, buf, 4096, bytes.length, true));
            while (next(10_000)) {
                if (!lastReceive) {
                    return;
                }
                early.add(takeReceived());
            }
            throw new AssertionError("the fake peer's send did not complete");
        }

        /** What a 4.5 peer says in the preamble: version, cycle buffer, cache line, MTU. */
        private static final byte[][] PREAMBLE = {Arrays.copyOf("6.06".getBytes(StandardCharsets.US_ASCII), 16),
            ByteBuffer.allocate(4).putInt(4096).array(), ByteBuffer.allocate(4).putInt(64).array(), {'3', 0}};

        /** Plays the preamble's client side as a 4.5 peer would: it speaks first. */
        void preambleAsClient() throws InterruptedException {
            for (byte[] m : PREAMBLE) {
                send(m);
                receive();
            }
        }

        /** Answers the preamble as a 4.5 peer would. */
        void preamble() throws InterruptedException {
            for (byte[] m : PREAMBLE) {
                receive();
                send(m);
            }
        }

        @Override
        public void close() {
            if (conn != null) {
                conn.close();
            }
            ctx.close();
        }
    }

    /** Runs a jverbs-perftest -R client against a scripted rdma_cm server; asserts exit 1 within the bound. */
    private static Perf.Result clientAgainst(TestDevice device, Script script) throws Exception {
        return clientAgainst(device, script, false);
    }

    /**
     * Like {@link #clientAgainst(TestDevice, Script)}; with {@code badInput} the script ends by
     * sending something wrong, and the bound runs from that last send: the client must name the
     * bad input within the bound of receiving it. Such a client waits up to 20 s per message
     * meanwhile, since the scripted server, a thread of this JVM, can itself be seconds late under
     * emulation, and the client's timeout is not what these cases test.
     */
    private static Perf.Result clientAgainst(TestDevice device, Script script, boolean badInput, String... options)
            throws Exception {
        return clientAgainst(device, "write_bw", List.of(), script, badInput, options);
    }

    private static Perf.Result clientAgainst(TestDevice device, String test, List<String> extra, Script script,
                                             boolean badInput, String... options) throws Exception {
        int port = Perf.freePort();
        try (FakePeer peer = new FakePeer(device); RdmaCm.Listener listener = RdmaCm.listen(ip(device), port)) {
            CompletableFuture<Long> connectedAt = new CompletableFuture<>();
            CompletableFuture<Void> played = CompletableFuture.runAsync(() -> {
                try {
                    peer.conn = listener.accept(peer.qp, Duration.ofSeconds(60));
                    peer.postReceive();
                    connectedAt.complete(System.nanoTime());
                    script.play(peer);
                } catch (Exception e) {
                    connectedAt.complete(System.nanoTime());
                    throw new IllegalStateException(e);
                }
            });
            List<String> command = new ArrayList<>(args(device, test, extra, port));
            if (badInput) {
                command.addAll(List.of("--handshake_timeout", "20"));
            }
            command.addAll(List.of(options));
            Perf.Result r = Perf.run(Perf.concat(command, ip(device)));
            long end = System.nanoTime();
            long from = badInput && peer.lastSendAt != 0 ? peer.lastSendAt : connectedAt.getNow(end);
            long ms = (end - from) / 1_000_000;
            try {
                played.get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                // the script may end in an error once the client has gone: only the client's behaviour is tested
            }
            System.out.println("-R client against a hostile rdma_cm server: exit " + r.exit() + " after " + ms
                    + (badInput ? " ms after the bad input: " : " ms of handshake: ") + r.err().strip());
            assertEquals(1, r.exit(), "exit 1: " + r.all());
            assertTrue(ms <= BOUND_MS, "the error came " + ms + " ms " + (badInput ? "after the bad input" : "into the handshake")
                    + " (bound " + BOUND_MS + " ms): " + r.all());
            return r;
        }
    }

    @Test
    void silentServer(TestDevice device) throws Exception {
        Perf.Result r = clientAgainst(device, peer -> Thread.sleep(6_000));
        assertTrue(r.err().contains("sent nothing within 4 s") && r.err().contains("the perftest version"), r.err());
    }

    @Test
    void shortVersion(TestDevice device) throws Exception {
        Perf.Result r = clientAgainst(device, peer -> {
            peer.receive();
            peer.send("6.0".getBytes(StandardCharsets.US_ASCII));
        }, true);
        assertTrue(r.err().contains("sent 3 bytes where the perftest version has 16"), r.err());
    }

    @Test
    void garbageVersion(TestDevice device) throws Exception {
        Perf.Result r = clientAgainst(device, peer -> {
            peer.receive();
            byte[] junk = new byte[16];
            new java.util.Random(7).nextBytes(junk);
            peer.send(junk);
        }, true);
        assertTrue(r.err().contains("is not a perftest: its version field is"), r.err());
    }

    @Test
    void oldVersion(TestDevice device) throws Exception {
        Perf.Result r = clientAgainst(device, peer -> {
            peer.receive();
            peer.send(Arrays.copyOf("5.60".getBytes(StandardCharsets.US_ASCII), 16));
        }, true);
        assertTrue(r.err().contains("not compatible with versions older than 5.70 (the peer says 5.60)"), r.err());
    }

    @Test
    void wrongRecordLength(TestDevice device) throws Exception {
        Perf.Result r = clientAgainst(device, peer -> {
            peer.preamble();
            peer.receive();
            peer.send(new byte[40]);
        }, true);
        assertTrue(r.err().contains("sent 40 bytes where the sync before the rdma_cm connections has 56 or 64"), r.err());
    }

    @Test
    void serverGoesAwayMidHandshake(TestDevice device) throws Exception {
        Perf.Result r = clientAgainst(device, peer -> {
            peer.receive();
            peer.conn.close();
            peer.conn = null;
        });
        assertTrue(r.err().contains("rdma_cm") && (r.err().contains("disconnect") || r.err().contains("sent nothing")
                || r.err().contains("ERR")), r.err());
    }

    /**
     * The server answers the handshake but never accepts the data queue pairs' connections. The
     * client waits for them as long as for a handshake message, and says so: a 2 s
     * {@code --handshake_timeout} here, which leaves the 5 s bound room for the handshake itself
     * and the teardown under emulation.
     */
    /** A server that answers the preamble and the sync before the data queue pairs, then says and accepts nothing. */
    private static final Script SILENT_AFTER_THE_FIRST_SYNC = peer -> {
        peer.preamble();
        peer.receive();
        peer.send(new byte[56]);
        Thread.sleep(6_000);
    };

    @Test
    void dataConnectionsNeverAccepted(TestDevice device) throws Exception {
        Perf.Result r = clientAgainst(device, SILENT_AFTER_THE_FIRST_SYNC, false, "--handshake_timeout", "2");
        // Under emulation the scripted server (a thread of this JVM) can itself be later than the
        // handshake bound before it gets that far (seen once in CI: "sent nothing ... the MTU"):
        // either way the client must end with exit 1, within the bound, naming what it waited for.
        assertTrue(r.err().contains("Couldn't make the rdma_cm connection of QP 0") && r.err().contains("(--handshake_timeout)")
                || r.err().contains("sent nothing within"), r.err());
    }

    /**
     * {@code -c UD -R}: the server answers the handshake but never answers the datagram
     * resolution (nothing listens in the UDP port space). The client retries the refusal, as it
     * would a server still setting up, until its 2 s {@code --handshake_timeout}, and names it.
     */
    @Test
    void datagramResolutionNeverAnswered(TestDevice device) throws Exception {
        Perf.Result r = clientAgainst(device, "send_lat", List.of("-c", "UD"), SILENT_AFTER_THE_FIRST_SYNC, false,
                "--handshake_timeout", "2");
        assertTrue(r.err().contains("Couldn't make the rdma_cm resolution of datagram QP 0") && r.err().contains("within 2 s")
                || r.err().contains("sent nothing within"), r.err());
    }

    /**
     * {@code -c UD -R}, the server side: a client that resolves the server's datagram queue pair
     * but never sends the first datagram that tells the server where to answer. The server ends
     * within its 2 s {@code --handshake_timeout} of the resolution, naming that datagram.
     */
    @Test
    void firstDatagramNeverSent(TestDevice device) throws Exception {
        int port = Perf.freePort();
        List<String> serverArgs = new ArrayList<>(args(device, "send_lat", List.of("-c", "UD"), port));
        serverArgs.addAll(List.of("--handshake_timeout", "2"));
        CompletableFuture<Perf.Result> server = Perf.start(serverArgs.toArray(String[]::new));
        awaitCmListener(port, 60_000, server);
        try (FakePeer peer = new FakePeer(device)) {
            peer.conn = RdmaCm.connect(peer.qp, ip(device), port, Duration.ofSeconds(20));
            peer.postReceive();
            peer.preambleAsClient();
            peer.send(new byte[56]);
            peer.receive();
            io.jverbs.DatagramQueuePair ud = io.jverbs.DatagramQueuePair.create(peer.pd, peer.cq, 4, RdmaCm.UDP_QKEY,
                    device.gidIndexEnv());
            io.jverbs.DatagramQueuePair.Address address = null;
            for (int attempt = 0; address == null && attempt < 100; attempt++) {
                try {
                    address = RdmaCm.connectDatagram(ud, ip(device), port, Duration.ofSeconds(20));
                } catch (io.jverbs.cm.RdmaCmException e) {
                    if (!e.isRefusal()) {
                        throw e;
                    }
                    Thread.sleep(50); // the server listens for datagrams once it answered the sync
                }
            }
            assertTrue(address != null, "the server answered the resolution");
            long t0 = System.nanoTime();
            Perf.Result r = Perf.await(server);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            System.out.println("-c UD -R server against a client that never sends its first datagram: exit " + r.exit()
                    + " after " + ms + " ms: " + r.err().strip());
            assertEquals(1, r.exit(), r.all());
            assertTrue(ms <= BOUND_MS, ms + " ms");
            assertTrue(r.err().contains("the client's first datagram (its QP number) on QP 0 did not come within 2 s"), r.err());
        }
    }

    /** The server side: a client that connects the control queue pair and says nothing. */
    @Test
    void silentClient(TestDevice device) throws Exception {
        int port = Perf.freePort();
        CompletableFuture<Perf.Result> server = Perf.start(args(device, "write_bw", port).toArray(String[]::new));
        awaitCmListener(port, 60_000, server);
        try (FakePeer peer = new FakePeer(device)) {
            peer.conn = RdmaCm.connect(peer.qp, ip(device), port, Duration.ofSeconds(20));
            long t0 = System.nanoTime();
            Perf.Result r = Perf.await(server);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            System.out.println("-R server against a silent client: exit " + r.exit() + " after " + ms + " ms: "
                    + r.err().strip());
            assertEquals(1, r.exit(), r.all());
            assertTrue(ms <= BOUND_MS, ms + " ms");
            assertTrue(r.err().contains("sent nothing within 4 s"), r.err());
        }
    }
}
