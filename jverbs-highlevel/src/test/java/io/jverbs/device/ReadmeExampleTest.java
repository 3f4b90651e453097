package io.jverbs.device;

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
 * The README's first program on a real device, as a user runs it: the server in one JVM, then the
 * client in another; the server prints what the client wrote.
 */
@DeviceTest
class ReadmeExampleTest {
    @Test
    void theReadmesFirstProgramRunsAsTwoJvms(TestDevice device) throws Exception {
        assertNotNull(device.ip(), "the rig sets JVERBS_TEST_IP");
        String port = Integer.toString(20000 + (int) (ProcessHandle.current().pid() % 20000));
        List<String> flags = List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC");
        File serverOut = File.createTempFile("readme-server", ".txt");
        File clientOut = File.createTempFile("readme-client", ".txt");
        Process server = new ProcessBuilder(ChildJvm.command(FirstWrite.class, flags,
                List.of(device.name(), "server", device.ip(), port))).redirectErrorStream(true).redirectOutput(serverOut).start();
        Thread.sleep(5000); // the client retries until the server listens; it need not wait this long
        Process client = new ProcessBuilder(ChildJvm.command(FirstWrite.class, flags,
                List.of(device.name(), "client", device.ip(), port))).redirectErrorStream(true).redirectOutput(clientOut).start();
        try {
            boolean clientDone = client.waitFor(150, TimeUnit.SECONDS);
            boolean serverDone = server.waitFor(30, TimeUnit.SECONDS);
            String s = Files.readString(serverOut.toPath(), StandardCharsets.UTF_8);
            String c = Files.readString(clientOut.toPath(), StandardCharsets.UTF_8);
            System.out.print("server JVM:\n" + s + "client JVM:\n" + c);
            assertTrue(clientDone && serverDone, "both JVMs ended (client " + clientDone + ", server " + serverDone + ")");
            assertEquals(0, client.exitValue(), "the client's exit status");
            assertEquals(0, server.exitValue(), "the server's exit status");
            assertTrue(s.contains("server: hello over RDMA"), "the server printed the client's message");
            System.out.println("readme example: PASSED on " + device.name() + " (two JVMs)");
        } finally {
            client.destroyForcibly();
            server.destroyForcibly();
            serverOut.delete();
            clientOut.delete();
        }
    }
}
