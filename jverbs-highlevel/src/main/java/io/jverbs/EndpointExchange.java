package io.jverbs;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Exchanges small fixed-size records ({@link Endpoint}, {@link RemoteBuffer}, or the caller's
 * bytes) with a peer over a TCP socket, each side writing its own and reading the peer's, with a
 * time limit on every wait: a silent, slow or truncated peer is an {@link IOException} within the
 * timeout, a malformed record an {@link IllegalArgumentException}, never a hang. When a record
 * could not be sent in time, the socket is closed to end the send.
 *
 * <p>Stateless and thread-safe; the socket belongs to the caller.
 */
public final class EndpointExchange {
    private EndpointExchange() {
    }

    /**
     * Connects to a peer that {@link #accept} waits on.
     *
     * @param host    the peer's host
     * @param port    its TCP port
     * @param timeout for the connection
     * @return the connected socket, with {@code timeout} as its read timeout
     * @throws IOException when the peer refuses or does not answer within the timeout
     * @throws IllegalArgumentException when the timeout is below 1 ms or above about 24 days
     */
    public static Socket connect(String host, int port, Duration timeout) throws IOException {
        Socket socket = new Socket();
        try {
            socket.connect(new InetSocketAddress(host, port), timeoutMillis(timeout));
            socket.setSoTimeout(timeoutMillis(timeout));
            socket.setTcpNoDelay(true);
            return socket;
        } catch (IOException e) {
            socket.close();
            throw new IOException("cannot reach the peer at " + host + ":" + port + " within " + timeout.toMillis()
                    + " ms: " + e.getMessage(), e);
        }
    }

    /**
     * Accepts one peer.
     *
     * @param server  a bound server socket
     * @param timeout how long to wait for the peer
     * @return the accepted socket, with {@code timeout} as its read timeout
     * @throws IOException when no peer comes within the timeout ({@link java.io.InterruptedIOException}
     *                     when the thread is interrupted, within about 100 ms; its flag stays set)
     * @throws IllegalArgumentException when the timeout is below 1 ms or above about 24 days
     */
    public static Socket accept(ServerSocket server, Duration timeout) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis(timeout));
        while (true) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new IOException("no peer connected to port " + server.getLocalPort() + " within "
                        + timeout.toMillis() + " ms");
            }
            if (Thread.currentThread().isInterrupted()) {
                throw new java.io.InterruptedIOException("interrupted while waiting for a peer on port "
                        + server.getLocalPort() + "; the thread's interrupt flag stays set");
            }
            // in slices, so that an interrupt ends the wait (a socket accept does not)
            server.setSoTimeout((int) Math.max(1, Math.min(READ_SLICE_MS, left / 1_000_000)));
            try {
                Socket socket = server.accept();
                socket.setSoTimeout(timeoutMillis(timeout));
                socket.setTcpNoDelay(true);
                return socket;
            } catch (SocketTimeoutException e) {
                // the deadline and the interrupt are looked at again
            }
        }
    }

    /**
     * Sends this side's endpoint and reads the peer's.
     *
     * @param socket  connected, with a read timeout
     * @param local   this side's endpoint
     * @param timeout the most the read may take
     * @return the peer's endpoint
     * @throws IOException on timeout, a closed connection or a truncated record
     * @throws IllegalArgumentException when the peer sent something that is not an endpoint, or the
     *                                  timeout is below 1 ms or above about 24 days
     */
    public static Endpoint exchange(Socket socket, Endpoint local, Duration timeout) throws IOException {
        return exchange(socket, local.toBytes(), Endpoint.BYTES, timeout, Endpoint::fromBytes);
    }

    /**
     * Sends this side's remote buffer and reads the peer's.
     *
     * @param socket  connected
     * @param local   what this side offers (or a zero-length buffer when it offers nothing)
     * @param timeout the most the read may take
     * @return the peer's buffer
     * @throws IOException on timeout, a closed connection or a truncated record
     * @throws IllegalArgumentException when the peer sent something that is not a remote buffer, or the
     *                                  timeout is below 1 ms or above about 24 days
     */
    public static RemoteBuffer exchange(Socket socket, RemoteBuffer local, Duration timeout) throws IOException {
        return exchange(socket, local.toBytes(), RemoteBuffer.BYTES, timeout, RemoteBuffer::fromBytes);
    }

    /**
     * Records up to this size are written before the read: a socket's send buffer always holds
     * them, so the write cannot wait for the peer. Larger ones are written on a thread of their
     * own while this one reads, since both sides write first.
     */
    private static final int WRITTEN_AT_ONCE = 1024;

    /**
     * Sends {@code local} and reads exactly {@code peerLength} bytes, then parses them. Both
     * sides may send first: a record larger than a socket's buffers is sent while the peer's is
     * read, so two large records do not wait on each other.
     *
     * @param socket     connected
     * @param local      the bytes to send
     * @param peerLength how many bytes the peer sends
     * @param timeout    the most the whole exchange may take, the send included; when the send
     *                   has not ended by then, the socket is closed to end it
     * @param parse      turns the peer's bytes into a value (throws on malformed input)
     * @param <T>        the value type
     * @return the parsed value
     * @throws IOException on timeout, a closed connection or a truncated record
     * @throws IllegalArgumentException when the timeout is below 1 ms or above about 24 days
     */
    public static <T> T exchange(Socket socket, byte[] local, int peerLength, Duration timeout,
                                 Function<byte[], T> parse) throws IOException {
        long timeoutNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMillis(timeout)); // checked before anything is sent
        OutputStream out = socket.getOutputStream();
        if (local.length <= WRITTEN_AT_ONCE) {
            out.write(local);
            out.flush();
            return parse.apply(readFully(socket, peerLength, timeout));
        }
        long deadline = System.nanoTime() + timeoutNanos;
        IOException[] sendFailure = new IOException[1];
        Thread sender = Thread.ofVirtual().name("jverbs-exchange-send").start(() -> {
            try {
                out.write(local);
                out.flush();
            } catch (IOException e) {
                sendFailure[0] = e;
            }
        });
        byte[] peer;
        try {
            peer = readFully(socket, peerLength, timeout);
            long left = deadline - System.nanoTime();
            if (!sender.join(Duration.ofNanos(Math.max(1, left)))) {
                throw new SocketTimeoutException("the peer did not take this side's " + local.length + "-byte record"
                        + " within " + timeout.toMillis() + " ms");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            socket.close();
            throw new java.io.InterruptedIOException("interrupted while sending " + local.length + " bytes");
        } catch (IOException | RuntimeException e) {
            if (sender.isAlive()) {
                socket.close(); // ends the send, which would otherwise wait for the peer without a limit
            }
            throw e;
        }
        if (sendFailure[0] != null) {
            throw sendFailure[0];
        }
        return parse.apply(peer);
    }

    /**
     * Reads exactly {@code length} bytes within {@code timeout} (in total, not per read).
     *
     * @param socket  connected
     * @param length  bytes to read
     * @param timeout the most it may take
     * @return the bytes
     * @throws IOException on timeout, or when the peer closes early (the message says how much came);
     *                     {@link java.io.InterruptedIOException} when the thread is interrupted (within
     *                     about 100 ms; its flag stays set)
     * @throws IllegalArgumentException when the timeout is below 1 ms or above about 24 days
     */
    public static byte[] readFully(Socket socket, int length, Duration timeout) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis(timeout));
        byte[] bytes = new byte[length];
        InputStream in = socket.getInputStream();
        int got = 0;
        int saved = socket.getSoTimeout();
        try {
            while (got < length) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new SocketTimeoutException("peer sent " + got + " of " + length + " bytes within "
                            + timeout.toMillis() + " ms");
                }
                if (Thread.currentThread().isInterrupted()) {
                    throw new java.io.InterruptedIOException("interrupted while reading the peer's record (" + got
                            + " of " + length + " bytes); the thread's interrupt flag stays set");
                }
                // in slices of at most 100 ms, so that an interrupt ends the wait (a socket read does not)
                socket.setSoTimeout((int) Math.max(1, Math.min(READ_SLICE_MS, left / 1_000_000)));
                int n;
                try {
                    n = in.read(bytes, got, length - got);
                } catch (SocketTimeoutException e) {
                    continue; // the deadline and the interrupt are looked at again
                }
                if (n < 0) {
                    throw new EOFException("peer closed the connection after " + got + " of " + length + " bytes");
                }
                got += n;
            }
            return bytes;
        } finally {
            if (!socket.isClosed()) {
                socket.setSoTimeout(saved);
            }
        }
    }

    private static final Duration MAX_TIMEOUT = Duration.ofMillis(Integer.MAX_VALUE);
    /** The longest a blocking socket wait lasts before the interrupt flag is looked at. */
    private static final int READ_SLICE_MS = 100;

    /** The timeout in ms, checked: at least 1 ms and at most about 24 days (a socket's limit). */
    private static int timeoutMillis(Duration timeout) {
        if (timeout.compareTo(Duration.ofMillis(1)) < 0 || timeout.compareTo(MAX_TIMEOUT) > 0) {
            throw new IllegalArgumentException("timeout must be 1 ms to 24 days: " + timeout);
        }
        return (int) timeout.toMillis();
    }
}
