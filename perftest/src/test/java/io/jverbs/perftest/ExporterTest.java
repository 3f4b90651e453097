package io.jverbs.perftest;

import io.jverbs.fakesysfs.FakeSysfs;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The exporter subcommand's HTTP side over a fake sysfs tree (host only): where it listens,
 * slow clients, basic authentication, TLS and the read interval.
 */
class ExporterTest {
    private static final Pattern SENT = Pattern.compile("(?m)^rdma_hw_sent_pkts_total\\{device=\"rxe0\",port=\"1\"} (\\S+)$");
    private static final Pattern READS = Pattern.compile("(?m)^rdma_counter_reads_total (\\S+)$");

    @TempDir
    Path tmp;
    private Path root;

    @BeforeEach
    void fakeTree() throws IOException {
        root = FakeSysfs.create(Files.createDirectories(tmp.resolve("sys")));
    }

    /** Parses {@code args} as the exporter's command line and starts it, as {@code call()} does. */
    private ExporterServer start(String... args) throws IOException {
        return command(args).start();
    }

    private ExporterCommand command(String... args) {
        ExporterCommand cmd = new ExporterCommand();
        List<String> all = new ArrayList<>(List.of("--port", "0", "--sysfs-root", root.toString()));
        all.addAll(List.of(args));
        new CommandLine(cmd).parseArgs(all.toArray(String[]::new));
        return cmd;
    }

    private static HttpResponse<String> get(HttpClient http, URI uri, String credentials) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10));
        if (credentials != null) {
            b.header("Authorization", "Basic " + Base64.getEncoder().encodeToString(credentials.getBytes(StandardCharsets.UTF_8)));
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpClient http() {
        return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    }

    private static double sample(Pattern p, String body) {
        Matcher m = p.matcher(body);
        assertTrue(m.find(), "no " + p + " in:\n" + body);
        return Double.parseDouble(m.group(1));
    }

    /** The local addresses of the TCP sockets listening on {@code port}, from /proc/net/tcp and tcp6. */
    static Set<InetAddress> listeningAddresses(int port) throws IOException {
        Set<InetAddress> out = new HashSet<>();
        for (String file : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            Path p = Path.of(file);
            if (!Files.exists(p)) {
                continue;
            }
            for (String line : Files.readAllLines(p).subList(1, Files.readAllLines(p).size())) {
                String[] f = line.trim().split("\\s+");
                String[] local = f[1].split(":");
                if (!f[3].equals("0A") || Integer.parseInt(local[1], 16) != port) {
                    continue; // not LISTEN, or another port
                }
                // the kernel prints each 32-bit word of the address in host (little-endian) order
                byte[] ip = new byte[local[0].length() / 2];
                for (int word = 0; word < ip.length / 4; word++) {
                    for (int i = 0; i < 4; i++) {
                        int at = word * 8 + (3 - i) * 2;
                        ip[word * 4 + i] = (byte) Integer.parseInt(local[0].substring(at, at + 2), 16);
                    }
                }
                out.add(InetAddress.getByAddress(ip));
            }
        }
        return out;
    }

    @Test
    void listensOnLoopbackOnlyUnlessBindSaysOtherwise() throws Exception {
        try (ExporterServer s = start(); HttpClient http = http()) {
            Set<InetAddress> listening = listeningAddresses(s.port());
            assertFalse(listening.isEmpty(), "a socket listens on port " + s.port());
            assertTrue(listening.stream().allMatch(InetAddress::isLoopbackAddress), "loopback only: " + listening);
            assertEquals("127.0.0.1", s.metricsUri().getHost());
            assertEquals(200, get(http, s.metricsUri(), null).statusCode());
        }
        try (ExporterServer s = start("--bind", "0.0.0.0")) {
            Set<InetAddress> listening = listeningAddresses(s.port());
            assertTrue(listening.stream().anyMatch(InetAddress::isAnyLocalAddress), "every address when asked: " + listening);
        }
    }

    @Test
    void twentyHalfSentRequestsDoNotHoldUpAScrape() throws Exception {
        List<Socket> slow = new ArrayList<>();
        try (ExporterServer s = start(); HttpClient http = http()) {
            for (int i = 0; i < 20; i++) {
                Socket k = new Socket(InetAddress.getLoopbackAddress(), s.port());
                slow.add(k);
                OutputStream o = k.getOutputStream();
                o.write("GET /metr".getBytes(StandardCharsets.US_ASCII)); // half a request line, then silence
                o.flush();
            }
            Thread.sleep(300); // the server hands each one to a worker that waits for the rest of its line
            long t0 = System.nanoTime();
            HttpResponse<String> r = get(http, s.metricsUri(), null);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(200, r.statusCode());
            assertEquals(1000, sample(SENT, r.body()));
            System.out.println("exporter: a scrape beside 20 half-open connections took " + ms + " ms");
            assertTrue(ms < 2000, "a full scrape beside 20 half-open connections took " + ms + " ms");
        } finally {
            for (Socket k : slow) {
                k.close();
            }
        }
    }

    /**
     * A slowloris: 1,000 connections that each send part of a request line and nothing more,
     * reopened as the server closes them (its request timeout), while 50 scrapes run. Every scrape
     * must succeed.
     */
    @Test
    @Timeout(180)
    void aThousandSlowConnectionsFailNoScrape() throws Exception {
        long fds = ((com.sun.management.UnixOperatingSystemMXBean)
                java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getMaxFileDescriptorCount();
        assertTrue(fds >= 2_500, "this test holds 1,000 connections (2,000 descriptors in one JVM); raise the limit"
                + " of open files (ulimit -n, now " + fds + ")");
        int held = 1_000;
        List<Socket> slow = java.util.Collections.synchronizedList(new ArrayList<>());
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.atomic.AtomicInteger opened = new java.util.concurrent.atomic.AtomicInteger();
        try (ExporterServer s = start(); HttpClient http = http()) {
            Thread attacker = Thread.ofPlatform().daemon(true).start(() -> {
                while (!stop.get()) {
                    synchronized (slow) {
                        slow.removeIf(k -> {
                            try {
                                k.getOutputStream().write(' '); // one more byte now and then, as a slowloris does
                                return false;
                            } catch (IOException closedByServer) {
                                try {
                                    k.close();
                                } catch (IOException ignored) {
                                    // gone already
                                }
                                return true;
                            }
                        });
                    }
                    while (slow.size() < held && !stop.get()) {
                        try {
                            Socket k = new Socket(InetAddress.getLoopbackAddress(), s.port());
                            k.getOutputStream().write("GET /metr".getBytes(StandardCharsets.US_ASCII));
                            slow.add(k);
                            opened.incrementAndGet();
                        } catch (IOException refused) {
                            break;
                        }
                    }
                    try {
                        Thread.sleep(200);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            long until = System.nanoTime() + 30_000_000_000L;
            while (slow.size() < held && System.nanoTime() < until) {
                Thread.sleep(50);
            }
            assertTrue(slow.size() >= held, "only " + slow.size() + " slow connections opened");
            int failures = 0;
            long worst = 0;
            for (int i = 0; i < 50; i++) {
                long t0 = System.nanoTime();
                try {
                    HttpResponse<String> r = get(http, s.metricsUri(), null);
                    if (r.statusCode() != 200 || sample(SENT, r.body()) != 1000) {
                        failures++;
                    }
                } catch (IOException e) {
                    failures++;
                }
                worst = Math.max(worst, (System.nanoTime() - t0) / 1_000_000);
                Thread.sleep(100);
            }
            stop.set(true);
            attacker.join(5_000);
            System.out.println("exporter: 50 scrapes beside " + held + " slow connections (" + opened.get()
                    + " opened in all): " + failures + " failed, the slowest took " + worst + " ms");
            assertEquals(0, failures, "scrapes failed beside " + held + " slow connections");
        } finally {
            stop.set(true);
            synchronized (slow) {
                for (Socket k : slow) {
                    k.close();
                }
            }
        }
    }

    /**
     * In a JVM of its own, as the command runs (the JDK's server reads its timeouts once per
     * JVM): a connection that sends half a request line is closed after the request timeout
     * (2 s), not the 60 s the Prometheus client would set.
     */
    @Test
    @Timeout(60)
    void aHalfSentRequestIsClosedAfterTheRequestTimeout() throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process p = new ProcessBuilder(java.toString(), "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), Main.class.getName(), "exporter", "--port", "0", "--sysfs-root",
                root.toString()).redirectErrorStream(true).start();
        try {
            BufferedReader lines = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            String line = lines.readLine();
            Matcher m = Pattern.compile("serving http://127\\.0\\.0\\.1:(\\d+)/metrics").matcher(String.valueOf(line));
            assertTrue(m.find(), "the exporter's first line: " + line);
            try (Socket k = new Socket(InetAddress.getLoopbackAddress(), Integer.parseInt(m.group(1)))) {
                k.setSoTimeout(30_000);
                k.getOutputStream().write("GET /metr".getBytes(StandardCharsets.US_ASCII));
                k.getOutputStream().flush();
                long t0 = System.nanoTime();
                int read;
                try {
                    read = k.getInputStream().read();
                } catch (SocketException reset) {
                    read = -1;
                }
                long ms = (System.nanoTime() - t0) / 1_000_000;
                System.out.println("exporter: a half-sent request was closed after " + ms + " ms");
                assertEquals(-1, read, "the server closes the connection without an answer");
                assertTrue(ms >= 1_500 && ms < 8_000, "closed after " + ms + " ms; the request timeout is "
                        + ExporterServer.REQUEST_TIMEOUT_SECONDS + " s, checked every " + ExporterServer.TIMER_MILLIS + " ms");
            }
        } finally {
            p.destroy();
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
        }
    }

    @Test
    void basicAuthenticationRefusesAWrongPasswordAndAcceptsTheRightOne() throws Exception {
        Path password = Files.writeString(tmp.resolve("password"), "s3cret\n");
        try (ExporterServer s = start("--basic-auth-user", "prom", "--basic-auth-password-file", password.toString());
             HttpClient http = http()) {
            HttpResponse<String> none = get(http, s.metricsUri(), null);
            assertEquals(401, none.statusCode());
            assertTrue(none.headers().firstValue("WWW-Authenticate").orElse("").startsWith("Basic"), none.headers().map()
                    .toString());
            assertEquals(401, get(http, s.metricsUri(), "prom:wrong").statusCode());
            assertEquals(401, get(http, s.metricsUri(), "prom:s3cret\n").statusCode(), "the file's line end is not part of it");
            assertEquals(401, get(http, s.metricsUri(), "other:s3cret").statusCode());
            HttpResponse<String> ok = get(http, s.metricsUri(), "prom:s3cret");
            assertEquals(200, ok.statusCode());
            assertEquals(1000, sample(SENT, ok.body()));
        }
    }

    @Test
    void theBasicAuthenticationPasswordMayComeFromTheEnvironment() throws Exception {
        ExporterCommand cmd = command("--basic-auth-user", "prom", "--basic-auth-password-env", "EXPORTER_PASSWORD");
        cmd.environment = name -> name.equals("EXPORTER_PASSWORD") ? "from-env" : null;
        try (ExporterServer s = cmd.start(); HttpClient http = http()) {
            assertEquals(401, get(http, s.metricsUri(), "prom:wrong").statusCode());
            assertEquals(200, get(http, s.metricsUri(), "prom:from-env").statusCode());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "--basic-auth-user prom",
        "--basic-auth-user prom --basic-auth-password-file PASSWORD --basic-auth-password-env EXPORTER_PASSWORD",
        "--basic-auth-password-file PASSWORD",
        "--basic-auth-user prom --basic-auth-password-env NO_SUCH_VARIABLE_IS_SET",
        "--basic-auth-user prom --basic-auth-password-file EMPTY",
        "--tls-keystore PASSWORD",
        "--tls-keystore-password-file PASSWORD",
        "--interval NaN", "--interval Infinity", "--interval 0", "--interval 0.0009", "--interval -1",
        "--bind [::1"})
    void refusedOptionsExitWithTwoAndSayWhy(String options) throws Exception {
        Path password = Files.writeString(tmp.resolve("password"), "s3cret\n");
        Path empty = Files.writeString(tmp.resolve("empty"), "\n");
        List<String> args = new ArrayList<>(List.of("exporter", "--port", "0", "--once", "--sysfs-root", root.toString()));
        for (String a : options.split(" ")) {
            args.add(a.equals("PASSWORD") ? password.toString() : a.equals("EMPTY") ? empty.toString() : a);
        }
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = Main.commandLine();
        cl.setOut(new PrintWriter(out));
        cl.setErr(new PrintWriter(err));
        assertEquals(2, cl.execute(args.toArray(String[]::new)), err.toString());
        String first = err.toString().lines().findFirst().orElse("");
        String option = options.split(" ")[options.split(" ").length - 2];
        assertTrue(first.contains(option), "the message names " + option + ": " + first);
        assertFalse(out.toString().contains("rdma_"), "nothing served");
    }

    @Test
    void scrapesWithinTheIntervalAreServedFromOneRead() throws Exception {
        try (ExporterServer s = start("--interval", "60"); HttpClient http = http()) {
            assertEquals(1000, sample(SENT, get(http, s.metricsUri(), null).body()));
            FakeSysfs.set(root, "rxe0", 1, "hw_counters", "sent_pkts", 2000);
            for (int i = 0; i < 10; i++) {
                String body = get(http, s.metricsUri(), null).body();
                assertEquals(1000, sample(SENT, body), "scrape " + i + " serves the first read");
                assertEquals(1, sample(READS, body), "scrape " + i);
            }
        }
        try (ExporterServer s = start("--interval", "0.05"); HttpClient http = http()) {
            get(http, s.metricsUri(), null);
            FakeSysfs.set(root, "rxe0", 1, "hw_counters", "sent_pkts", 3000);
            Thread.sleep(60);
            String body = get(http, s.metricsUri(), null).body();
            assertEquals(3000, sample(SENT, body), "a scrape after the interval reads again");
            assertEquals(2, sample(READS, body));
        }
    }

    /** A PKCS12 key store with a fresh EC key and a self-signed certificate for 127.0.0.1, made by the JDK's keytool. */
    private Path keyStore(String password) throws Exception {
        Path ks = tmp.resolve("exporter.p12");
        Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
        Process p = new ProcessBuilder(keytool.toString(), "-genkeypair", "-alias", "exporter", "-keyalg", "EC", "-groupname",
                "secp256r1", "-dname", "CN=localhost", "-ext", "SAN=ip:127.0.0.1", "-validity", "2", "-storetype", "PKCS12",
                "-keystore", ks.toString(), "-storepass", password).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0, "keytool: " + output);
        return ks;
    }

    @Test
    void servesHttpsWithTheKeyStoresCertificate() throws Exception {
        Path ks = keyStore("changeit");
        Path password = Files.writeString(tmp.resolve("ks-password"), "changeit\n");
        try (ExporterServer s = start("--tls-keystore", ks.toString(), "--tls-keystore-password-file", password.toString())) {
            assertEquals("https", s.metricsUri().getScheme());
            KeyStore trusted = KeyStore.getInstance(ks.toFile(), "changeit".toCharArray());
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trusted);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, tmf.getTrustManagers(), null);
            try (HttpClient https = HttpClient.newBuilder().sslContext(context).version(HttpClient.Version.HTTP_1_1).build();
                 HttpClient plain = http()) {
                HttpResponse<String> r = get(https, s.metricsUri(), null);
                assertEquals(200, r.statusCode());
                assertEquals(1000, sample(SENT, r.body()));
                URI clear = URI.create("http://127.0.0.1:" + s.port() + "/metrics");
                assertThrows(IOException.class, () -> get(plain, clear, null), "no plain HTTP on the TLS port");
            }
        }
        // --once scrapes its own HTTPS endpoint, trusting the key store, with the credentials it asks for
        Path userPassword = Files.writeString(tmp.resolve("password"), "s3cret\n");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = Main.commandLine();
        cl.setOut(new PrintWriter(out));
        cl.setErr(new PrintWriter(err));
        int rc = cl.execute("exporter", "--port", "0", "--once", "--sysfs-root", root.toString(), "--tls-keystore", ks.toString(),
                "--tls-keystore-password-file", password.toString(), "--basic-auth-user", "prom", "--basic-auth-password-file",
                userPassword.toString());
        assertEquals(0, rc, err.toString());
        assertEquals(1000, sample(SENT, out.toString()));
    }
}
