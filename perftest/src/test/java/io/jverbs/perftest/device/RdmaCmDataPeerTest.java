package io.jverbs.perftest.device;

import io.jverbs.cm.RdmaCm;
import io.jverbs.cm.RdmaCmException;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import io.jverbs.perftest.device.RdmaCmModeTest.FakePeer;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code -R} server: a data queue pair's connection request from an address other than the
 * handshake peer's is rejected, named on stderr, and does not take the queue pair; the control
 * peer's own request, after it, is accepted. The other address is a second IPv4 address put on
 * the device's network interface for the test (root, {@code ip}), from which rdma_cm on this node
 * connects with that address as its source.
 */
@DeviceTest
class RdmaCmDataPeerTest {
    /** A documentation address (TEST-NET-1), added as /32 and removed after the test. */
    private static final String OTHER = "192.0.2.77";
    /** Its RoCE v2 GID, IPv4-mapped, as sysfs prints it. */
    private static final String OTHER_GID = "0000:0000:0000:0000:0000:ffff:c000:024d";

    private static void ip(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("ip"));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0, String.join(" ", command) + ": " + out);
    }

    /** Waits until the device's GID table holds {@code gid} (rxe adds one per address of its interface). */
    private static void awaitGid(TestDevice device, String gid) throws Exception {
        Path gids = device.sysfsPort().resolve("gids");
        long deadline = System.currentTimeMillis() + 10_000;
        while (System.currentTimeMillis() < deadline) {
            try (Stream<Path> entries = Files.list(gids)) {
                for (Path e : entries.toList()) {
                    if (Files.readString(e).strip().equals(gid)) {
                        return;
                    }
                }
            }
            Thread.sleep(100);
        }
        throw new AssertionError("no GID " + gid + " on " + device.name() + " 10 s after adding " + OTHER);
    }

    @Test
    void aDataConnectionFromAnotherAddressIsRefusedAndDoesNotCount(TestDevice device) throws Exception {
        String control = device.ip();
        assertNotNull(control, "JVERBS_TEST_IP names the device's IPv4 address, which rdma_cm connects to");
        NetworkInterface netdev = NetworkInterface.getByInetAddress(InetAddress.getByName(control));
        assertNotNull(netdev, "no interface holds " + control);
        ip("addr", "add", OTHER + "/32", "dev", netdev.getName());
        try {
            awaitGid(device, OTHER_GID);
            int port = Perf.freePort();
            List<String> server = new ArrayList<>(List.of("write_bw"));
            server.addAll(Perf.deviceArgs(device));
            server.addAll(List.of("-R", "-p", Integer.toString(port), "--handshake_timeout", "10"));
            CompletableFuture<Perf.Result> running = Perf.start(server.toArray(String[]::new));
            RdmaCmModeTest.awaitCmListener(port, 60_000, running);
            RdmaCmException refused;
            try (FakePeer handshake = new FakePeer(device); FakePeer intruder = new FakePeer(device);
                 FakePeer data = new FakePeer(device)) {
                handshake.conn = RdmaCm.connect(handshake.qp, control, port, Duration.ofSeconds(10));
                handshake.postReceive();
                handshake.preambleAsClient();
                handshake.send(new byte[56]); // the sync before the rdma_cm connections: the server listens for them now
                handshake.receive();
                refused = assertThrows(RdmaCmException.class,
                        () -> intruder.conn = RdmaCm.connect(intruder.qp, OTHER, port, Duration.ofSeconds(10)),
                        "a data connection from " + OTHER + " is refused");
                // QP 0 is still free: the handshake peer's own request takes it
                data.conn = RdmaCm.connect(data.qp, control, port, Duration.ofSeconds(10));
                assertFalse(data.conn.isDisconnected());
            }
            // the handshake peer has gone: the server ends while it waits for the sync after the connections
            Perf.Result s = Perf.await(running);
            System.out.println("-R data peer check on " + device.description() + ": the intruder got " + refused.getMessage()
                    + "; server exit " + s.exit() + ":\n" + s.err().strip());
            assertTrue(refused.isRefusal(), "REJECTED, not a timeout: " + refused.getMessage());
            assertTrue(s.err().contains("write_bw: refused an rdma_cm request for QP 0 from " + OTHER + " port ")
                    && s.err().contains("only the handshake's peer " + control + " may connect data queue pairs"), s.err());
            assertFalse(s.err().contains("did not arrive in time"), "the control peer's request was accepted: " + s.err());
            assertEquals(1, s.exit(), "the handshake peer left mid-handshake: " + s.all());
        } finally {
            ip("addr", "del", OTHER + "/32", "dev", netdev.getName());
        }
    }
}
