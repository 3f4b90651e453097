package io.jverbs.perftest.device;

import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import io.jverbs.perftest.Main;
import org.junit.jupiter.api.Test;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hostile peers against jverbs-perftest as a user runs it, a process of its own: a silent, a
 * truncated and a dripping peer during the handshake each end it with exit 1 and a message
 * within 5 s of the stall, measured to the process's exit (JVM teardown included); a client
 * that stops mid-run ends the bandwidth server within {@code --completion_timeout} plus that
 * bound, not {@code --run_timeout}. Each side is a child JVM of this one's java and class path.
 */
@DeviceTest
class HostileProcessTest {
    private static final long BOUND_MS = 5_000;

    /** A jverbs-perftest process: this JVM's java and class path, native access enabled. */
    static Process start(List<String> args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString());
        // C1 only, as the suite's other child JVMs: under QEMU TCG two of these JVMs, with the
        // tiered compilers, died in C1 code just replaced by a newer compilation of the same
        // method (Completion.opcode, BwLoop.postSends), at addresses no Java code reaches
        cmd.addAll(List.of("--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"));
        cmd.addAll(io.jverbs.ibverbs.device.ChildJvm.aotCacheFlags());
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName()));
        cmd.addAll(List.of(Perf.withoutWarmup(args.toArray(String[]::new))));
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }

    /** Everything the process prints (stdout and stderr), once it ends. */
    private static CompletableFuture<String> output(Process p) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                return e.toString();
            }
        });
    }

    interface Script {
        /** Plays the fake server; returns System.nanoTime() of the stall (when it stops sending). */
        long play(Socket s) throws Exception;
    }

    private static String clientAgainst(TestDevice device, Script script, String expected) throws Exception {
        try (ServerSocket listener = new ServerSocket(0)) {
            CompletableFuture<Long> stalledAt = new CompletableFuture<>();
            Thread fake = Thread.ofPlatform().daemon(true).start(() -> {
                try (Socket s = listener.accept()) {
                    stalledAt.complete(script.play(s));
                    Thread.sleep(30_000); // silent from here, the connection open
                } catch (Exception e) {
                    stalledAt.complete(System.nanoTime());
                }
            });
            List<String> args = new ArrayList<>(List.of("write_bw"));
            args.addAll(Perf.deviceArgs(device));
            args.addAll(List.of("-n", "10", "-p", Integer.toString(listener.getLocalPort()), "127.0.0.1"));
            Process p = start(args);
            CompletableFuture<String> output = output(p);
            assertTrue(p.waitFor(Perf.TIMEOUT_S, TimeUnit.SECONDS), "the process ended");
            long exitedAt = System.nanoTime();
            // the fake server may still be dripping when the client exits: wait for its end
            long ms = (exitedAt - stalledAt.get(30, TimeUnit.SECONDS)) / 1_000_000;
            fake.interrupt();
            String out = output.get(10, TimeUnit.SECONDS);
            System.out.println("client process against a hostile server on " + device.name() + ": exit " + p.exitValue()
                    + ", " + ms + " ms from the stall to the process's exit: " + out.strip().lines().reduce((a, b) -> b).orElse(""));
            assertEquals(1, p.exitValue(), out);
            assertTrue(out.contains(expected), out);
            assertTrue(ms <= BOUND_MS, ms + " ms from the stall to the exit (bound " + BOUND_MS + " ms):\n" + out);
            return out;
        }
    }

    private static byte[] read(Socket s, int n) throws IOException {
        byte[] b = new byte[n];
        new DataInputStream(s.getInputStream()).readFully(b);
        return b;
    }

    @Test
    void silentServer(TestDevice device) throws Exception {
        clientAgainst(device, s -> System.nanoTime(), "sent nothing within");
    }

    @Test
    void truncatedVersion(TestDevice device) throws Exception {
        clientAgainst(device, s -> {
            read(s, 16);
            OutputStream out = s.getOutputStream();
            out.write("6.0".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            return System.nanoTime();
        }, "sent only 3 of the 16 bytes of the perftest version");
    }

    /** One byte every 600 ms: the whole message's wait is bounded, not each byte's. */
    @Test
    void drippingVersion(TestDevice device) throws Exception {
        clientAgainst(device, s -> {
            read(s, 16);
            OutputStream out = s.getOutputStream();
            byte[] version = Arrays.copyOf("6.06".getBytes(StandardCharsets.US_ASCII), 16);
            long first = System.nanoTime();
            try {
                for (int i = 0; i < 15; i++) {
                    out.write(version[i]);
                    out.flush();
                    Thread.sleep(600);
                }
            } catch (IOException e) {
                // the client gave up and closed the connection before the 15th byte
            }
            return first; // the message is late from its first byte on
        }, "of the 16 bytes of the perftest version");
    }

    /** The server side: a client that connects and says nothing. */
    @Test
    void silentClient(TestDevice device) throws Exception {
        int port = Perf.freePort();
        List<String> args = new ArrayList<>(List.of("write_bw"));
        args.addAll(Perf.deviceArgs(device));
        args.addAll(List.of("-n", "10", "-p", Integer.toString(port)));
        Process p = start(args);
        CompletableFuture<String> output = output(p);
        Perf.awaitListening(port, 60_000, null);
        try (Socket s = new Socket("127.0.0.1", port)) {
            long t0 = System.nanoTime();
            assertTrue(p.waitFor(Perf.TIMEOUT_S, TimeUnit.SECONDS));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            String out = output.get(10, TimeUnit.SECONDS);
            System.out.println("server process against a silent client: exit " + p.exitValue() + " after " + ms + " ms");
            assertEquals(1, p.exitValue(), out);
            assertTrue(out.contains("sent nothing within"), out);
            assertTrue(ms <= BOUND_MS, ms + " ms from the connection to the exit (bound " + BOUND_MS + " ms):\n" + out);
        }
    }

    /**
     * A client stopped (SIGSTOP) in the middle of its write_bw run: the passive server sees nothing
     * move on its port and ends within --completion_timeout (3 s here) plus the bound, not at
     * --run_timeout (600 s).
     */
    @Test
    void clientStoppedMidRun(TestDevice device) throws Exception {
        int port = Perf.freePort();
        List<String> common = new ArrayList<>(List.of("write_bw"));
        common.addAll(Perf.deviceArgs(device));
        common.addAll(List.of("-s", "65536", "-n", "100000000", "-p", Integer.toString(port), "--completion_timeout", "3"));
        Process server = start(common);
        StringBuffer serverOut = new StringBuffer();
        Thread.ofPlatform().daemon(true).start(() -> copy(server, serverOut));
        Perf.awaitListening(port, 60_000, null);
        List<String> clientArgs = new ArrayList<>(common);
        clientArgs.add(Perf.host(device));
        Process client = start(clientArgs);
        StringBuffer clientOut = new StringBuffer();
        Thread.ofPlatform().daemon(true).start(() -> copy(client, clientOut));
        try {
            long deadline = System.nanoTime() + 120_000_000_000L;
            while (!clientOut.toString().contains(" #bytes") && System.nanoTime() < deadline && client.isAlive()) {
                Thread.sleep(50);
            }
            assertTrue(clientOut.toString().contains(" #bytes"), "the client started its run:\n" + clientOut);
            Thread.sleep(500); // into the run
            assertEquals(0, new ProcessBuilder("kill", "-STOP", Long.toString(client.pid())).start().waitFor());
            long t0 = System.nanoTime();
            assertTrue(server.waitFor(60, TimeUnit.SECONDS), "the server ended:\n" + serverOut);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            System.out.println("server process with its client stopped mid-run: exit " + server.exitValue() + " after " + ms
                    + " ms");
            assertEquals(1, server.exitValue(), serverOut.toString());
            assertTrue(serverOut.toString().contains("the peer stopped mid-run"), serverOut.toString());
            assertTrue(ms <= 3_000 + BOUND_MS, ms + " ms after the client stopped (bound 3 s + " + BOUND_MS + " ms)");
        } finally {
            client.destroyForcibly();
            server.destroyForcibly();
        }
    }

    private static void copy(Process p, StringBuffer into) {
        try (var in = p.inputReader(StandardCharsets.UTF_8)) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                into.append(line).append('\n');
            }
        } catch (IOException e) {
            into.append(e);
        }
    }

}
