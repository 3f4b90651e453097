package io.jverbs.perftest;

import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The TCP channel's waits on loopback, no device: the first message's wait counts from when the
 * channel was made, and a watched wait ends when the port stays still, not at its long deadline.
 */
class OobWaitTest {
    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** A connected pair: [server, client]. */
    private static TcpOob[] pair(long handshakeMs) throws Exception {
        int port = freePort();
        CompletableFuture<TcpOob> server = CompletableFuture.supplyAsync(() -> TcpOob.serve(port, 10_000, handshakeMs));
        TcpOob client = TcpOob.connect("127.0.0.1", port, 10_000, handshakeMs);
        return new TcpOob[] {server.get(10, TimeUnit.SECONDS), client};
    }

    @Test
    void theFirstWaitCountsFromTheConnection() throws Exception {
        TcpOob[] p = pair(1_000);
        try {
            Thread.sleep(700); // as a server's warm-up grace: the silent client's second counts from the connection
            long t0 = System.nanoTime();
            PerftestException e = assertThrows(PerftestException.class, p[0]::exchangeVersion);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(e.getMessage().contains("the perftest version"), e.getMessage());
            assertTrue(ms < 600, "the wait ended " + ms + " ms after it began, not a full second");
        } finally {
            p[0].close();
            p[1].close();
        }
    }

    @Test
    void aWatchedWaitEndsWhenThePortStaysStill() throws Exception {
        TcpOob[] p = pair(4_000);
        try {
            p[0].watch(() -> 42, 500);
            long t0 = System.nanoTime();
            PerftestException e = assertThrows(PerftestException.class, () -> p[0].exchange(new byte[4], 4, "the end of run", 60_000));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(e.getMessage().contains("stopped mid-run"), e.getMessage());
            assertTrue(ms >= 450 && ms < 3_000, ms + " ms: after the 0.5 s stillness, long before the 60 s deadline");
        } finally {
            p[0].close();
            p[1].close();
        }
    }

    @Test
    void aWatchedWaitGoesOnWhileThePortMoves() throws Exception {
        TcpOob[] p = pair(4_000);
        try {
            AtomicLong packets = new AtomicLong();
            p[0].watch(packets::incrementAndGet, 300);
            CompletableFuture<byte[]> got = CompletableFuture.supplyAsync(() -> p[0].exchange(new byte[] {9, 9, 9, 9}, 4,
                    "the end of run", 60_000));
            Thread.sleep(1_200); // four times the stillness bound, the port moving all along
            assertTrue(!got.isDone(), "still waiting: " + (got.isDone() ? got.join().length : 0));
            byte[] theirs = p[1].exchange(new byte[] {1, 2, 3, 4}, 4, "the end of run", 4_000);
            assertArrayEquals(new byte[] {1, 2, 3, 4}, got.get(5, TimeUnit.SECONDS));
            assertArrayEquals(new byte[] {9, 9, 9, 9}, theirs);
        } finally {
            p[0].close();
            p[1].close();
        }
    }
}
