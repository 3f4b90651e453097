package io.jverbs.perftest.device;

import io.jverbs.ibverbs.device.TestDevice;
import io.jverbs.perftest.Main;
import picocli.CommandLine;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Runs jverbs-perftest in this JVM (one thread per side) and the C tools as child processes. */
final class Perf {
    static final long TIMEOUT_S = 120;

    record Result(int exit, String out, String err, long millis) {
        String all() {
            return out + err;
        }
    }

    private Perf() {
    }

    static Result run(String... args) {
        args = withoutWarmup(args);
        if (!Arrays.asList(args).contains("--connect_timeout")) {
            // a server waits for its client without limit by default, as C's: a test whose client
            // never came must not leave it listening (and holding the device) after the test. The
            // bound covers the client's warm-up, which on the emulated rig shares two vCPUs with the
            // server's (it runs while the server waits): together over 60 s in a cold JVM.
            args = concat(Arrays.asList(args), "--connect_timeout", "240");
        }
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = Main.commandLine();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        long t0 = System.nanoTime();
        int exit = cl.execute(args);
        return new Result(exit, out.toString(), err.toString(), (System.nanoTime() - t0) / 1_000_000);
    }

    /**
     * {@code args} with {@code --no_warmup}, unless the run reports its warm-up
     * ({@code --alloc_report}): the device tests check what a run does and prints, not its
     * speed, and the warm-up of a JVM under QEMU TCG takes seconds per run.
     * {@code JavaToJavaTest} runs it and checks what it did.
     */
    static String[] withoutWarmup(String... args) {
        List<String> a = Arrays.asList(args);
        return a.contains("--alloc_report") || a.contains("--no_warmup") || a.contains("-h") || a.contains("--help")
                || a.contains("--version") ? args : concat(a, "--no_warmup");
    }

    static CompletableFuture<Result> start(String... args) {
        CompletableFuture<Result> f = new CompletableFuture<>();
        Thread.ofPlatform().name("perftest-" + args[0]).daemon(true).start(() -> {
            try {
                f.complete(run(args));
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        return f;
    }

    static Result await(CompletableFuture<Result> f) throws Exception {
        return f.get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** The client's host: the device's address from the rig, else loopback (the handshake is plain TCP). */
    static String host(TestDevice device) {
        return device.ip() != null ? device.ip() : "127.0.0.1";
    }

    static List<String> deviceArgs(TestDevice device) {
        List<String> a = new ArrayList<>(List.of("-d", device.name()));
        if (device.gidIndexEnv() >= 0) {
            a.add("-x");
            a.add(Integer.toString(device.gidIndexEnv()));
        }
        return a;
    }

    /** Waits until something listens on TCP {@code port} (read from /proc, so no connection is spent). */
    static void awaitListening(int port, long timeoutMs, CompletableFuture<?> server) throws Exception {
        String hex = String.format(Locale.ROOT, ":%04X ", port);
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            for (String table : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
                for (String line : Files.readAllLines(Path.of(table))) {
                    String[] f = line.trim().split("\\s+");
                    if (f.length > 3 && f[1].endsWith(hex.trim()) && f[3].equals("0A")) {
                        return;
                    }
                }
            }
            if (server != null && server.isDone()) {
                throw new AssertionError("the server ended before listening: " + server.get());
            }
            Thread.sleep(50);
        }
        throw new AssertionError("nothing listens on port " + port + " after " + timeoutMs + " ms");
    }

    /** A run of jverbs-perftest against a C perftest tool: each side's result. */
    record Versus(Result java, Result c) {
        /** Both outputs, for a failure message. */
        String both(String tool) {
            return "\n--- C (" + tool + "):\n" + c.out() + "\n--- Java:\n" + java.all();
        }
    }

    /**
     * Runs {@code test} with {@code args} (a free port added) as C's tool ({@code ib_TEST}, with
     * {@code -F}) on one side and jverbs-perftest (with {@code javaOnly} too) on the other: C as
     * the server when {@code cServer}, else as the client. The client starts once the server
     * listens (on TCP, or, under {@code -z} or {@code -R}, as an rdma_cm id).
     */
    static Versus versusC(String test, List<String> args, List<String> javaOnly, boolean cServer, TestDevice device)
            throws Exception {
        int port = freePort();
        List<String> common = new ArrayList<>(args);
        common.addAll(List.of("-p", Integer.toString(port)));
        List<String> cArgs = new ArrayList<>(common);
        cArgs.add("-F");
        List<String> javaArgs = new ArrayList<>(List.of(test));
        javaArgs.addAll(common);
        javaArgs.addAll(javaOnly);
        boolean cm = args.contains("-z") || args.contains("-R");
        String tool = "ib_" + test;
        if (cServer) {
            CTool cs = CTool.start(tool, cArgs);
            try {
                awaitServer(port, cm, null);
                Result java = run(concat(javaArgs, host(device)));
                return new Versus(java, cs.await());
            } finally {
                cs.kill();
            }
        }
        CompletableFuture<Result> js = start(javaArgs.toArray(String[]::new));
        awaitServer(port, cm, js);
        cArgs.add(host(device));
        CTool cc = CTool.start(tool, cArgs);
        Result c;
        try {
            c = cc.await();
        } finally {
            cc.kill();
        }
        return new Versus(await(js), c);
    }

    private static void awaitServer(int port, boolean cm, CompletableFuture<?> server) throws Exception {
        if (cm) {
            RdmaCmModeTest.awaitCmListener(port, 60_000, server);
        } else {
            awaitListening(port, 60_000, server);
        }
    }

    /** A C perftest tool running as a child process. */
    static final class CTool {
        final Process process;
        final Path log;
        final String command;

        CTool(List<String> command) throws IOException {
            this.command = String.join(" ", command);
            log = Files.createTempFile("perftest-c-", ".log");
            process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        }

        static CTool start(String tool, List<String> args) throws IOException {
            List<String> cmd = new ArrayList<>();
            cmd.add(tool);
            cmd.addAll(args);
            return new CTool(cmd);
        }

        Result await() throws Exception {
            long t0 = System.nanoTime();
            if (!process.waitFor(TIMEOUT_S, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError(command + " did not end within " + TIMEOUT_S + " s: " + output());
            }
            return new Result(process.exitValue(), output(), "", (System.nanoTime() - t0) / 1_000_000);
        }

        String output() throws IOException {
            return Files.readString(log, StandardCharsets.UTF_8);
        }

        void kill() {
            process.destroyForcibly();
        }
    }

    /**
     * Whether C perftest's clock calibration failed under emulation. Its cycles-per-µs estimate
     * is then 0, and the tool either aborts before its table or goes on, exits 0 and prints a
     * row computed with it: {@code inf} for every latency (seen with ib_write_lat -R) or
     * {@code 0.00} for every bandwidth (seen with ib_write_bw across the two-node rig in
     * CI). Either way the run says nothing about jverbs: retry it.
     *
     * @param output the C tool's output
     * @return true when the calibration message is there and no measured row follows it
     */
    static boolean clockCalibrationFailed(String output) {
        if (!output.contains("Correlation coefficient") || !output.contains("< 0.9")) {
            return false;
        }
        Matcher row = TABLE_ROW.matcher(output);
        if (!row.find()) {
            return true; // aborted before its table
        }
        // bytes, iterations, then the figures: all of them 0 or inf when the clock was not calibrated
        String[] f = row.group(1).trim().split("\\s+");
        for (int i = 2; i < f.length; i++) {
            try {
                double v = Double.parseDouble(f[i]);
                if (v > 0 && Double.isFinite(v)) {
                    return false;
                }
            } catch (NumberFormatException e) {
                // "inf" or a non-number: not a measurement
            }
        }
        return true;
    }

    /** The first line under C perftest's {@code #bytes} header. */
    private static final Pattern TABLE_ROW = Pattern.compile("#bytes[^\\n]*\\n([^\\n]*)");

    static String[] concat(List<String> a, String... b) {
        List<String> all = new ArrayList<>(a);
        all.addAll(List.of(b));
        return all.toArray(String[]::new);
    }
}
