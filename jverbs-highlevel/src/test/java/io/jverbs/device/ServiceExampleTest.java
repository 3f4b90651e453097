package io.jverbs.device;

import io.jverbs.example.kv.KvClient;
import io.jverbs.example.kv.KvServer;
import io.jverbs.ibverbs.device.ChildJvm;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The key-value service of {@code io.jverbs.example.kv} on a real device: {@link KvServer} in a
 * child JVM, four {@link KvClient}s of 16 sessions each in this one, every value checked on both
 * sides. Counts the jverbs threads of the server's process while all 64 sessions are open, and the
 * example's lines of code. Prints
 * {@code service-example: PASSED on DEVICE, 4 clients, 64 connections, T server threads, L lines}.
 */
@DeviceTest
class ServiceExampleTest {
    private static final int CLIENTS = 4;
    private static final int SESSIONS_EACH = 16;
    private static final Path SOURCES = Path.of("jverbs-highlevel/src/test/java/io/jverbs/example/kv");

    @Test
    void fourClientsOfSixteenSessionsEachGetEveryValueBack(TestDevice device) throws Exception {
        assertNotNull(device.ip(), "the rig sets JVERBS_TEST_IP");
        int port = 20000 + (int) ((ProcessHandle.current().pid() + 7) % 20000);
        int sessions = CLIENTS * SESSIONS_EACH;
        List<String> command = ChildJvm.command(KvServer.class, List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"),
                List.of(device.name(), device.ip(), Integer.toString(port), Integer.toString(sessions)));
        Process server = new ProcessBuilder(command).redirectErrorStream(true).start();
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Thread.ofPlatform().daemon().start(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                    System.out.println("[kv-server] " + line);
                    lines.add(line);
                }
            } catch (java.io.IOException ignored) {
                // the process ended
            }
        });
        try {
            String listening = awaitLine(lines, "kv-server: listening", 120);
            assertNotNull(listening, "the server did not listen within 120 s");
            assertTrue(KvClient.run(device.name(), device.ip(), port, CLIENTS, SESSIONS_EACH),
                    "a client got a wrong value or failed (its trace is above)");
            assertTrue(server.waitFor(60, TimeUnit.SECONDS), "the server did not end after its sessions closed");
            assertEquals(0, server.exitValue(), "the server's exit status");
        } finally {
            server.destroyForcibly();
        }
        String open = String.join("\n", lines);
        Matcher threads = Pattern.compile("kv-server: (\\d+) sessions open on (\\d+) jverbs threads").matcher(open);
        Matcher done = Pattern.compile("kv-server: done, (\\d+) writes confirmed, (\\d+) wrong").matcher(open);
        if (!threads.find() || !done.find()) {
            fail("the server did not report its sessions and writes:\n" + open);
        }
        int serverThreads = Integer.parseInt(threads.group(2));
        assertEquals(1024, Integer.parseInt(done.group(1)), "writes the server confirmed against its store");
        assertEquals(0, Integer.parseInt(done.group(2)), "writes whose message arrived before their data");
        assertTrue(serverThreads <= 3, "jverbs threads in the server: " + serverThreads);
        long lineCount = 0;
        for (String file : List.of("KvServer.java", "KvClient.java")) {
            lineCount += Files.readAllLines(SOURCES.resolve(file)).stream().map(String::strip)
                    .filter(l -> !l.isEmpty() && !l.startsWith("//") && !l.startsWith("/*") && !l.startsWith("*"))
                    .count();
        }
        assertTrue(lineCount <= 120, "the example's server and client take " + lineCount + " lines");
        System.out.println("service-example: PASSED on " + device.name() + ", " + CLIENTS + " clients, " + sessions
                + " connections, " + serverThreads + " server threads, " + lineCount + " lines");
    }

    private static String awaitLine(BlockingQueue<String> lines, String prefix, int seconds) throws InterruptedException {
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        while (System.nanoTime() < deadline) {
            String line = lines.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
            if (line != null && line.startsWith(prefix)) {
                return line;
            }
        }
        return null;
    }
}
