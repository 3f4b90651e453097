package io.jverbs.device;

import io.jverbs.example.WriteReadExample;
import io.jverbs.ibverbs.device.ChildJvm;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import io.jverbs.readme.FirstWrite;
import org.junit.jupiter.api.Test;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The README's first program and the example service on a real device, as a user runs them: the
 * server in one JVM, then the client in another.
 */
@DeviceTest
class ReadmeExampleTest {
    private static final List<String> FLAGS = List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC");

    @Test
    void theReadmesFirstProgramRunsAsTwoJvms(TestDevice device) throws Exception {
        String[] out = twoJvms(FirstWrite.class, device, List.of(device.name(), "server", device.ip(), port(0)),
                List.of(device.name(), "client", device.ip(), port(0)));
        assertTrue(out[0].contains("server: hello over RDMA"), "the server printed the client's message");
        System.out.println("readme example: PASSED on " + device.name() + " (two JVMs)");
    }

    @Test
    void theExampleServiceChecksItsDataAndMeasuresBothStyles(TestDevice device) throws Exception {
        String[] out = twoJvms(WriteReadExample.class, device, List.of("server", device.name(), device.ip(), port(1)),
                List.of("client", device.name(), device.ip(), port(1)));
        assertTrue(out[1].contains("read back intact"), "the client checked the region's bytes");
        List<String> latency = out[1].lines().filter(l -> l.contains("64-byte RDMA Read")).toList();
        assertEquals(4, latency.size(), "a latency line per style: " + latency);
        assertTrue(out[0].contains("the client disconnected"), "the server saw the disconnect");
        System.out.println("example: PASSED on " + device.name() + " (two JVMs)");
        latency.forEach(System.out::println);
    }

    private static String port(int which) {
        return Integer.toString(20000 + (int) ((ProcessHandle.current().pid() * 2 + which) % 20000));
    }

    /** Runs the server, then the client (which retries until the server listens); returns both outputs. */
    private static String[] twoJvms(Class<?> main, TestDevice device, List<String> serverArgs, List<String> clientArgs)
            throws Exception {
        assertNotNull(device.ip(), "the rig sets JVERBS_TEST_IP");
        File serverOut = File.createTempFile("example-server", ".txt");
        File clientOut = File.createTempFile("example-client", ".txt");
        Process server = new ProcessBuilder(ChildJvm.command(main, FLAGS, serverArgs)).redirectErrorStream(true)
                .redirectOutput(serverOut).start();
        Process client = new ProcessBuilder(ChildJvm.command(main, FLAGS, clientArgs)).redirectErrorStream(true)
                .redirectOutput(clientOut).start();
        try {
            boolean clientDone = client.waitFor(150, TimeUnit.SECONDS);
            boolean serverDone = server.waitFor(30, TimeUnit.SECONDS);
            String s = Files.readString(serverOut.toPath(), StandardCharsets.UTF_8);
            String c = Files.readString(clientOut.toPath(), StandardCharsets.UTF_8);
            System.out.print("server JVM:\n" + s + "client JVM:\n" + c);
            assertTrue(clientDone && serverDone, "both JVMs ended (client " + clientDone + ", server " + serverDone + ")");
            assertEquals(0, client.exitValue(), "the client's exit status");
            assertEquals(0, server.exitValue(), "the server's exit status");
            return new String[] {s, c};
        } finally {
            client.destroyForcibly();
            server.destroyForcibly();
            serverOut.delete();
            clientOut.delete();
        }
    }
}
