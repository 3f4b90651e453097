package io.jverbs;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Both sides of an exchange write first; records larger than a socket's buffers must not wait on each other. */
class EndpointExchangeTest {
    private static final int LARGE = 8 << 20;

    @Test
    void twoLargeRecordsWrittenFirstByBothSidesArrive() {
        // preemptive: a send that waits for the peer's read, while the peer's send waits for ours, never returns
        assertTimeoutPreemptively(Duration.ofSeconds(60), EndpointExchangeTest::exchangeTwoLargeRecords);
    }

    private static void exchangeTwoLargeRecords() throws Exception {
        byte[] fromServer = filled(LARGE, (byte) 's');
        byte[] fromClient = filled(LARGE, (byte) 'c');
        try (ServerSocket listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            CompletableFuture<byte[]> server = onOwnThread(() -> {
                try (Socket s = EndpointExchange.accept(listener, Duration.ofSeconds(10))) {
                    return EndpointExchange.exchange(s, fromServer, LARGE, Duration.ofSeconds(20), b -> b);
                }
            });
            byte[] atClient;
            try (Socket c = EndpointExchange.connect("127.0.0.1", listener.getLocalPort(), Duration.ofSeconds(10))) {
                atClient = EndpointExchange.exchange(c, fromClient, LARGE, Duration.ofSeconds(20), b -> b);
            }
            assertArrayEquals(fromServer, atClient);
            assertArrayEquals(fromClient, server.get(30, TimeUnit.SECONDS));
        }
    }

    @Test
    void aLargeRecordThePeerNeverReadsEndsAtTheTimeout() {
        assertTimeoutPreemptively(Duration.ofSeconds(60), EndpointExchangeTest::sendToAPeerThatNeverReads);
    }

    private static void sendToAPeerThatNeverReads() throws Exception {
        try (ServerSocket listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
             Socket c = EndpointExchange.connect("127.0.0.1", listener.getLocalPort(), Duration.ofSeconds(10));
             Socket silent = listener.accept()) {
            long start = System.nanoTime();
            assertThrows(IOException.class, () -> EndpointExchange.exchange(c, new byte[LARGE], 16,
                    Duration.ofMillis(500), b -> b));
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(ms < 5000, "the exchange ended after " + ms + " ms, its timeout was 500 ms; peer " + silent);
        }
    }

    @Test
    void timeoutsOutsideOneMillisecondToTwentyFourDaysAreRefusedClearly() throws Exception {
        try (ServerSocket listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            for (Duration bad : new Duration[] {Duration.ZERO, Duration.ofNanos(1), Duration.ofMillis(-5),
                    Duration.ofSeconds(Long.MAX_VALUE), Duration.ofDays(25)}) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> EndpointExchange.connect("127.0.0.1", listener.getLocalPort(), bad), bad.toString());
                assertTrue(e.getMessage().contains("1 ms to 24 days"), e.getMessage());
                assertThrows(IllegalArgumentException.class, () -> EndpointExchange.accept(listener, bad));
            }
        }
    }

    private interface Call<T> {
        T call() throws Exception;
    }

    private static <T> CompletableFuture<T> onOwnThread(Call<T> call) {
        CompletableFuture<T> f = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> {
            try {
                f.complete(call.call());
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        return f;
    }

    private static byte[] filled(int n, byte b) {
        byte[] bytes = new byte[n];
        Arrays.fill(bytes, b);
        return bytes;
    }

    @Test
    void anInterruptEndsAWaitingAcceptAndRead() throws Exception {
        try (java.net.ServerSocket listener = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            assertInterrupted(() -> EndpointExchange.accept(listener, java.time.Duration.ofSeconds(60)));
            try (java.net.Socket client = new java.net.Socket(java.net.InetAddress.getLoopbackAddress(),
                    listener.getLocalPort());
                 java.net.Socket server = listener.accept()) {
                assertInterrupted(() -> EndpointExchange.readFully(server, 8, java.time.Duration.ofSeconds(60)));
            }
        }
    }

    /** Runs {@code wait} on a thread interrupted 200 ms in: it must end within 1 s with InterruptedIOException. */
    private static void assertInterrupted(org.junit.jupiter.api.function.Executable wait) throws Exception {
        InterruptProbe.Ended e = InterruptProbe.interrupt(wait, 200);
        assertFalse(e.stillWaiting(), "still waiting after the interrupt");
        assertTrue(e.end() instanceof java.io.InterruptedIOException, "ended with " + e.end());
        assertTrue(e.ms() < 1_000, "ended " + e.ms() + " ms after the interrupt");
    }
}
