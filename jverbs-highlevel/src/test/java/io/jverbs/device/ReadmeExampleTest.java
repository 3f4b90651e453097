package io.jverbs.device;

import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import io.jverbs.readme.FirstWrite;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The README's first program, server and client, on a real device: the server prints what the client wrote. */
@DeviceTest
class ReadmeExampleTest {
    @Test
    void theReadmesFirstProgramRuns(TestDevice device) throws Exception {
        assertNotNull(device.ip(), "the rig sets JVERBS_TEST_IP");
        String port = Integer.toString(30000 + (int) (ProcessHandle.current().pid() % 20000));
        PrintStream out = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            CompletableFuture<Void> server = CompletableFuture.runAsync(() -> run(device.name(), "server", device.ip(), port));
            CompletableFuture<Void> client = CompletableFuture.runAsync(() -> run(device.name(), "client", device.ip(), port));
            client.get(90, TimeUnit.SECONDS);
            server.get(90, TimeUnit.SECONDS);
        } finally {
            System.setOut(out);
        }
        String printed = captured.toString(StandardCharsets.UTF_8);
        System.out.print(printed);
        assertTrue(printed.contains("server: hello over RDMA"), "the server printed the client's message: " + printed);
        System.out.println("readme example: PASSED on " + device.name());
    }

    private static void run(String... args) {
        try {
            FirstWrite.main(args);
        } catch (Exception e) {
            throw new IllegalStateException("FirstWrite " + String.join(" ", args) + " failed", e);
        }
    }
}
