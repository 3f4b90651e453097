package io.jverbs.perftest;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The out-of-band TCP channel of the C perftest: one connection, messages of fixed length, the
 * client writes first and then reads, the server reads first and then writes. Every read has a
 * deadline, so a silent, slow or truncated peer ends in a {@link PerftestException} naming what
 * was awaited, never a hang.
 */
final class Oob implements AutoCloseable {
    /** The version this side announces: Debian 12's perftest 4.5 (see PERFTEST-WIRE.md §1.2). */
    static final String VERSION = "6.06";
    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;
    private final boolean server;
    private final long timeoutMs;
    private final String peer;

    private Oob(Socket socket, boolean server, long timeoutMs) throws IOException {
        this.socket = socket;
        this.in = socket.getInputStream();
        this.out = socket.getOutputStream();
        this.server = server;
        this.timeoutMs = timeoutMs;
        this.peer = socket.getRemoteSocketAddress().toString();
        socket.setTcpNoDelay(true);
    }

    /** Listens on {@code port} (all addresses), accepts one client within {@code acceptMs}, stops listening. */
    static Oob serve(int port, long acceptMs, long timeoutMs, Runnable listening) {
        try (ServerSocket listener = new ServerSocket()) {
            listener.setReuseAddress(true);
            listener.bind(new InetSocketAddress(port), 1);
            listening.run();
            listener.setSoTimeout(acceptMs <= 0 ? 0 : (int) Math.min(Integer.MAX_VALUE, acceptMs));
            Socket s = listener.accept();
            return new Oob(s, true, timeoutMs);
        } catch (SocketTimeoutException e) {
            throw new PerftestException("no client connected to port " + port + " within " + seconds(acceptMs)
                    + " (--connect_timeout)");
        } catch (IOException e) {
            throw new PerftestException("Unable to set up socket connection on port " + port + ": " + e.getMessage(), e);
        }
    }

    /** Connects to the server, retrying a refused connection (the server may still be starting) until {@code connectMs}. */
    static Oob connect(String host, int port, long connectMs, long timeoutMs) {
        long deadline = System.nanoTime() + connectMs * 1_000_000;
        IOException last = null;
        while (true) {
            Socket s = new Socket();
            try {
                long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
                s.connect(new InetSocketAddress(host, port), (int) Math.min(Integer.MAX_VALUE, left));
                return new Oob(s, false, timeoutMs);
            } catch (ConnectException e) {
                last = e;
                closeQuietly(s);
            } catch (IOException e) {
                closeQuietly(s);
                throw new PerftestException("Couldn't connect to " + host + ":" + port + ": " + e, e);
            }
            if (System.nanoTime() > deadline) {
                throw new PerftestException("Couldn't connect to " + host + ":" + port + " within " + seconds(connectMs)
                        + ": " + last.getMessage());
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new PerftestException("interrupted while connecting to " + host + ":" + port);
            }
        }
    }

    boolean isServer() {
        return server;
    }

    String peer() {
        return peer;
    }

    /** One exchange in the perftest order; the peer's message has {@code expect} bytes. */
    byte[] exchange(byte[] mine, int expect, String what) {
        return exchange(mine, expect, what, timeoutMs);
    }

    byte[] exchange(byte[] mine, int expect, String what, long waitMs) {
        byte[] theirs = new byte[expect];
        if (server) {
            readFully(theirs, what, waitMs);
            write(mine, what);
        } else {
            write(mine, what);
            readFully(theirs, what, waitMs);
        }
        return theirs;
    }

    private void write(byte[] bytes, String what) {
        try {
            out.write(bytes);
            out.flush();
        } catch (IOException e) {
            throw new PerftestException("couldn't send " + what + " to the peer " + peer + ": " + e.getMessage(), e);
        }
    }

    /**
     * Reads exactly {@code b.length} bytes within {@code waitMs} (0: no limit).
     *
     * @throws PerftestException on timeout (with the count received), end of stream or an error
     */
    void readFully(byte[] b, String what, long waitMs) {
        long deadline = waitMs <= 0 ? Long.MAX_VALUE : System.nanoTime() + waitMs * 1_000_000;
        int got = 0;
        try {
            while (got < b.length) {
                long left = deadline == Long.MAX_VALUE ? 0 : (deadline - System.nanoTime()) / 1_000_000;
                if (deadline != Long.MAX_VALUE && left <= 0) {
                    throw new SocketTimeoutException();
                }
                socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, left));
                int n = in.read(b, got, b.length - got);
                if (n < 0) {
                    throw new EOFException();
                }
                got += n;
            }
        } catch (SocketTimeoutException e) {
            throw new PerftestException(got == 0
                    ? "the peer " + peer + " sent nothing within " + seconds(waitMs) + " while this side waited for " + what
                      + " (" + b.length + " bytes; --handshake_timeout)"
                    : "the peer " + peer + " sent only " + got + " of the " + b.length + " bytes of " + what + " within "
                      + seconds(waitMs) + " (truncated: " + QpRecord.printable(Arrays.copyOf(b, got)) + ")", e);
        } catch (EOFException e) {
            throw new PerftestException("the peer " + peer + " closed the connection after " + got + " of the " + b.length
                    + " bytes of " + what, e);
        } catch (IOException e) {
            throw new PerftestException("couldn't read " + what + " from the peer " + peer + ": " + e.getMessage(), e);
        }
    }

    // ---- the preamble (PERFTEST-WIRE.md §1.2) ----

    /** Exchanges versions; refuses a peer that is not a perftest or is older than 5.70. */
    String exchangeVersion() {
        byte[] mine = Arrays.copyOf(VERSION.getBytes(StandardCharsets.US_ASCII), 16);
        byte[] theirs = exchange(mine, 16, "the perftest version");
        int end = 0;
        while (end < 16 && theirs[end] != 0) {
            end++;
        }
        String text = new String(theirs, 0, end, StandardCharsets.ISO_8859_1);
        if (!text.matches("[0-9]{1,3}\\.[0-9]{1,3}")) {
            throw new PerftestException("the peer " + peer + " is not a perftest: its version field is <"
                    + QpRecord.printable(theirs) + ">");
        }
        if (Double.parseDouble(text) < 5.70) {
            throw new PerftestException("Current implementation is not compatible with versions older than 5.70 (the peer"
                    + " says " + text + ")");
        }
        return text;
    }

    /** Exchanges a big-endian int; returns the peer's. */
    int exchangeInt(int mine, String what) {
        return ByteBuffer.wrap(exchange(ByteBuffer.allocate(4).putInt(mine).array(), 4, what)).getInt();
    }

    /** Exchanges the MTU as the ASCII digit of {@code enum ibv_mtu} plus NUL; returns the peer's (0 when not 1..5). */
    int exchangeMtu(int mine) {
        byte[] theirs = exchange(new byte[] {(byte) ('0' + mine), 0}, 2, "the MTU");
        int v = theirs[0] - '0';
        return theirs[1] == 0 && v >= 1 && v <= 5 ? v : 0;
    }

    QpRecord exchangeRecord(QpRecord mine, String what) {
        return exchangeRecord(mine, what, timeoutMs);
    }

    QpRecord exchangeRecord(QpRecord mine, String what, long waitMs) {
        byte[] theirs = exchange(mine.encode(), mine.length(), what, waitMs);
        return QpRecord.decode(theirs, mine.gid() != null);
    }

    /** One report field: 8 bytes each way, big-endian. */
    long exchangeLong(long mine, String what) {
        return ByteBuffer.wrap(exchange(ByteBuffer.allocate(8).putLong(mine).array(), 8, what)).getLong();
    }

    double exchangeDouble(double mine, String what) {
        return Double.longBitsToDouble(exchangeLong(Double.doubleToRawLongBits(mine), what));
    }

    /**
     * The end of a 4.5 session: "done\0" (which no version reads; errors ignored), then the
     * peer's remaining bytes until it closes (at most 2 s), then close.
     */
    void finish(boolean sayDone) {
        if (sayDone) {
            try {
                out.write(new byte[] {'d', 'o', 'n', 'e', 0});
                out.flush();
            } catch (IOException ignored) {
                // the peer may already be gone; it never reads these bytes
            }
        }
        try {
            socket.shutdownOutput();
            socket.setSoTimeout(2000);
            byte[] sink = new byte[64];
            long deadline = System.nanoTime() + 2_000_000_000L;
            while (in.read(sink) >= 0 && System.nanoTime() < deadline) {
                // drain
            }
        } catch (IOException ignored) {
            // a reset or a timeout: the session is over either way
        }
        close();
    }

    @Override
    public void close() {
        closeQuietly(socket);
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // nothing left to do
        }
    }

    static String seconds(long ms) {
        return ms % 1000 == 0 ? ms / 1000 + " s" : String.format(java.util.Locale.ROOT, "%.1f s", ms / 1000.0);
    }
}
