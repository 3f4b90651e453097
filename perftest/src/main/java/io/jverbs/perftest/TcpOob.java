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
import java.util.Arrays;

/**
 * The out-of-band TCP channel of the C perftest (its default mode): one connection, messages of fixed length, the
 * client writes first and then reads, the server reads first and then writes. Every read has a
 * deadline, so a silent, slow or truncated peer ends in a {@link PerftestException} naming what
 * was awaited, never a hang.
 */
final class TcpOob extends Oob {
    /** How often a watched wait ({@link Oob#watch}) looks at the port's activity. */
    private static final long WATCH_SLICE_MS = 250;
    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    private TcpOob(Socket socket, boolean server, long timeoutMs) throws IOException {
        super(server, timeoutMs, socket.getRemoteSocketAddress().toString());
        this.socket = socket;
        this.in = socket.getInputStream();
        this.out = socket.getOutputStream();
        socket.setTcpNoDelay(true);
    }

    /** Listens on {@code port} (all addresses), accepts one client within {@code acceptMs}, stops listening. */
    static TcpOob serve(int port, long acceptMs, long timeoutMs) {
        try (ServerSocket listener = new ServerSocket()) {
            listener.setReuseAddress(true);
            listener.bind(new InetSocketAddress(port), 1);
            listener.setSoTimeout(acceptMs <= 0 ? 0 : (int) Math.min(Integer.MAX_VALUE, acceptMs));
            Socket s = listener.accept();
            return new TcpOob(s, true, timeoutMs);
        } catch (SocketTimeoutException e) {
            throw new PerftestException("no client connected to port " + port + " within " + seconds(acceptMs)
                    + " (--connect_timeout)");
        } catch (IOException e) {
            throw new PerftestException("Unable to set up socket connection on port " + port + ": " + e.getMessage(), e);
        }
    }

    /** Connects to the server, retrying a refused connection (the server may still be starting) until {@code connectMs}. */
    static TcpOob connect(String host, int port, long connectMs, long timeoutMs) {
        long deadline = System.nanoTime() + connectMs * 1_000_000;
        IOException last = null;
        while (true) {
            Socket s = new Socket();
            try {
                long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
                s.connect(new InetSocketAddress(host, port), (int) Math.min(Integer.MAX_VALUE, left));
                return new TcpOob(s, false, timeoutMs);
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

    @Override
    java.net.InetAddress peerAddress() {
        return socket.getInetAddress();
    }

    @Override
    QpRecord exchangeRecord(QpRecord mine, String what, long waitMs) {
        byte[] theirs = exchange(mine.encode(), mine.length(), what, waitMs);
        return QpRecord.decode(theirs, mine.gid() != null);
    }

    @Override
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
        long start = waitStartNs();
        long deadline = waitMs <= 0 ? Long.MAX_VALUE : start + waitMs * 1_000_000;
        int got = 0;
        java.util.function.LongSupplier watched = activity;
        long lastActivity = watched != null ? watched.getAsLong() : 0;
        long movedAt = System.nanoTime();
        try {
            while (got < b.length) {
                long left = deadline == Long.MAX_VALUE ? 0 : (deadline - System.nanoTime()) / 1_000_000;
                if (deadline != Long.MAX_VALUE && left <= 0) {
                    throw new SocketTimeoutException();
                }
                if (watched != null) {
                    left = left == 0 ? WATCH_SLICE_MS : Math.min(left, WATCH_SLICE_MS);
                }
                socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, left));
                int n;
                try {
                    n = in.read(b, got, b.length - got);
                } catch (SocketTimeoutException slice) {
                    if (watched == null || System.nanoTime() >= deadline) {
                        throw slice;
                    }
                    long now = watched.getAsLong();
                    if (now != lastActivity || now == Long.MIN_VALUE) {
                        lastActivity = now;
                        movedAt = System.nanoTime();
                    } else if (System.nanoTime() - movedAt >= stallMs * 1_000_000) {
                        throw new PerftestException("nothing moved on this side's port for " + seconds(stallMs)
                                + " and the peer " + peer + " sent nothing while this side waited for " + what
                                + ": the peer stopped mid-run (--completion_timeout)");
                    }
                    continue;
                }
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

    /**
     * The end of a 4.5 session: "done\0" (which no version reads; errors ignored), then the
     * peer's remaining bytes until it closes (at most 2 s), then close.
     */
    @Override
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
}
