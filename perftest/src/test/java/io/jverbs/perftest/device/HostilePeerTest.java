package io.jverbs.perftest.device;

import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Test;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Peers that are silent, truncated, speak garbage, claim an old version, or use another kind of
 * GID: jverbs-perftest ends with exit code 1 and a message naming the problem, within 5 s of
 * the handshake's start (default --handshake_timeout 4 s), never a hang.
 */
@DeviceTest
class HostilePeerTest {
    private static final long BOUND_MS = 5_000;

    interface Script {
        void play(Socket s) throws Exception;
    }

    /** Runs a jverbs-perftest client against a scripted fake server; returns its result and how long the handshake took. */
    private static Perf.Result clientAgainst(TestDevice device, Script script) throws Exception {
        try (ServerSocket listener = new ServerSocket(0)) {
            CompletableFuture<Long> connectedAt = new CompletableFuture<>();
            Thread fake = Thread.ofPlatform().daemon(true).start(() -> {
                try (Socket s = listener.accept()) {
                    connectedAt.complete(System.nanoTime());
                    script.play(s);
                    Thread.sleep(8_000); // stay silent and keep the connection open
                } catch (Exception e) {
                    connectedAt.complete(System.nanoTime());
                }
            });
            Perf.Result r = Perf.run(Perf.concat(List.of("write_bw"), Perf.concat(Perf.deviceArgs(device), "-n", "10", "-p",
                    Integer.toString(listener.getLocalPort()), "127.0.0.1")));
            long handshakeMs = (System.nanoTime() - connectedAt.getNow(System.nanoTime())) / 1_000_000;
            fake.interrupt();
            System.out.println("client against a hostile server: exit " + r.exit() + " after " + handshakeMs
                    + " ms of handshake: " + r.err().strip());
            assertEquals(1, r.exit(), "exit 1: " + r.all());
            assertTrue(handshakeMs <= BOUND_MS, "the error came " + handshakeMs + " ms into the handshake (bound "
                    + BOUND_MS + " ms): " + r.all());
            return r;
        }
    }

    private static byte[] read(Socket s, int n) throws IOException {
        byte[] b = new byte[n];
        new DataInputStream(s.getInputStream()).readFully(b);
        return b;
    }

    private static void preamble(Socket s) throws IOException {
        OutputStream out = s.getOutputStream();
        read(s, 16);
        out.write(Arrays.copyOf("6.06".getBytes(StandardCharsets.US_ASCII), 16));
        read(s, 4);
        out.write(ByteBuffer.allocate(4).putInt(4096).array());
        read(s, 4);
        out.write(ByteBuffer.allocate(4).putInt(64).array());
        read(s, 2);
        out.write(new byte[] {'3', 0});
        out.flush();
    }

    @Test
    void silentServer(TestDevice device) throws Exception {
        Perf.Result r = clientAgainst(device, s -> { });
        assertTrue(r.err().contains("sent nothing within 4 s") && r.err().contains("the perftest version"), r.err());
    }

    @Test
    void truncatedVersion(TestDevice device) throws Exception {
        Perf.Result r = clientAgainst(device, s -> {
            read(s, 16);
            s.getOutputStream().write("6.0".getBytes(StandardCharsets.US_ASCII));
        });
        assertTrue(r.err().contains("sent only 3 of the 16 bytes of the perftest version"), r.err());
    }

    @Test
    void truncatedThenClosed(TestDevice device) throws Exception {
        Perf.Result r = clientAgainst(device, s -> {
            preamble(s);
            read(s, 108);
            s.getOutputStream().write("0000:0001:0000".getBytes(StandardCharsets.US_ASCII));
            s.close();
        });
        assertTrue(r.err().contains("closed the connection after 14 of the 108 bytes of the QP records"), r.err());
    }

    @Test
    void garbage(TestDevice device) throws Exception {
        Perf.Result r = clientAgainst(device, s -> {
            read(s, 16);
            byte[] junk = new byte[16];
            new java.util.Random(7).nextBytes(junk);
            s.getOutputStream().write(junk);
        });
        assertTrue(r.err().contains("is not a perftest: its version field is"), r.err());
    }

    @Test
    void garbageRecord(TestDevice device) throws Exception {
        Perf.Result r = clientAgainst(device, s -> {
            preamble(s);
            read(s, 108);
            byte[] junk = new byte[108];
            Arrays.fill(junk, (byte) 'z');
            s.getOutputStream().write(junk);
        });
        assertTrue(r.err().contains("Couldn't parse line"), r.err());
    }

    @Test
    void wrongVersion(TestDevice device) throws Exception {
        Perf.Result r = clientAgainst(device, s -> {
            read(s, 16);
            s.getOutputStream().write(Arrays.copyOf("5.60".getBytes(StandardCharsets.US_ASCII), 16));
        });
        assertTrue(r.err().contains("not compatible with versions older than 5.70 (the peer says 5.60)"), r.err());
    }

    /** A peer whose GID is link-local (fe80::, GID index 0 on rxe) while this side uses the IPv4-mapped one. */
    @Test
    void gidTypeMismatch(TestDevice device) throws Exception {
        Perf.Result r = clientAgainst(device, s -> {
            preamble(s);
            byte[] mine = read(s, 108);
            String text = new String(mine, 0, 49, StandardCharsets.US_ASCII);
            StringBuilder rec = new StringBuilder(text).append(':');
            byte[] gid = {(byte) 0xfe, (byte) 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, (byte) 0xff, (byte) 0xfe, 0x12, 0x34, 0x56};
            for (byte b : gid) {
                rec.append(String.format("%02x:", b & 0xff));
            }
            rec.append("00000000:");
            byte[] out = Arrays.copyOf(rec.toString().getBytes(StandardCharsets.US_ASCII), 108);
            s.getOutputStream().write(out);
        });
        assertTrue(r.err().contains("Found Incompatibility issue with GID types") && r.err().contains("link-local"), r.err());
    }

    /** The server side: a client that connects and says nothing. */
    @Test
    void silentClient(TestDevice device) throws Exception {
        int port = Perf.freePort();
        CompletableFuture<Perf.Result> server = Perf.start(Perf.concat(List.of("write_bw"),
                Perf.concat(Perf.deviceArgs(device), "-n", "10", "-p", Integer.toString(port))));
        Perf.awaitListening(port, 60_000, server);
        try (Socket s = new Socket("127.0.0.1", port)) {
            long t0 = System.nanoTime();
            Perf.Result r = Perf.await(server);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            System.out.println("server against a silent client: exit " + r.exit() + " after " + ms + " ms: " + r.err().strip());
            assertEquals(1, r.exit(), r.all());
            assertTrue(ms <= BOUND_MS, ms + " ms");
            assertTrue(r.err().contains("sent nothing within 4 s"), r.err());
        }
    }
}
