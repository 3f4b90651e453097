package io.jverbs.perftest;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The out-of-band channel of the C perftest, whichever carries it: the TCP connection of the
 * default mode ({@link TcpOob}) or the rdma_cm control queue pair of {@code -R} ({@link CmOob}).
 * Every message goes both ways with the same length; the client sends first, then receives; the
 * server receives first, then sends. Every wait has a deadline.
 */
abstract class Oob implements AutoCloseable {
    /** The version this side announces: Debian 12's perftest 4.5 (see PERFTEST-WIRE.md §1.2). */
    static final String VERSION = "6.06";
    /** What the peer announced, once {@link #exchangeVersion} ran. */
    String peerVersion = "";

    /** This side's role: the server answers, the client speaks first. */
    final boolean server;
    final long timeoutMs;
    final String peer;
    /** When the channel was made: the wait for the first message counts from here ({@link #waitStartNs}). */
    private final long madeNs = System.nanoTime();
    private boolean waited;

    Oob(boolean server, long timeoutMs, String peer) {
        this.server = server;
        this.timeoutMs = timeoutMs;
        this.peer = peer;
    }

    /**
     * While set ({@link #watch}), a wait that sees no message also polls this side's port activity
     * and ends after {@link #stallMs} without a move: a peer that stopped mid-run sends nothing, on
     * the wire or on the control channel.
     */
    java.util.function.LongSupplier activity;
    long stallMs;

    /**
     * Makes the next waits also end when the port stays still for {@code stallMs} (null: only their deadline).
     *
     * @param activity the port's activity ({@link CounterWatch#activity}), or null
     * @param stallMs  the longest stillness
     */
    final void watch(java.util.function.LongSupplier activity, long stallMs) {
        this.activity = activity;
        this.stallMs = stallMs;
    }

    /**
     * When a wait for a message starts counting: now, but for the first message, when the channel
     * was made. The peer's silence began then, not when this side came to read (after a server's
     * warm-up grace or the counters' snapshot), so the stall bound holds from the stall.
     */
    final long waitStartNs() {
        if (waited) {
            return System.nanoTime();
        }
        waited = true;
        return madeNs;
    }

    /** The per-message wait (--handshake_timeout), ms. */
    final long timeoutMs() {
        return timeoutMs;
    }

    /** Who the peer is, for messages. */
    final String peer() {
        return peer;
    }

    /**
     * The peer's IP address, as the transport saw it when the channel was made.
     *
     * @return the address, or null when the transport gave none that Java represents
     */
    abstract java.net.InetAddress peerAddress();

    /**
     * One exchange in the perftest order; the peer's message has {@code expect} bytes.
     *
     * @throws PerftestException when the peer is silent past {@code waitMs} (0: no limit), sends
     *                           another length, closes or fails
     */
    abstract byte[] exchange(byte[] mine, int expect, String what, long waitMs);

    byte[] exchange(byte[] mine, int expect, String what) {
        return exchange(mine, expect, what, timeoutMs());
    }

    /** The end of a session after the last exchange ("done" in TCP mode when asked), then close. */
    abstract void finish(boolean sayDone);

    @Override
    public abstract void close();

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
        peerVersion = text;
        if (!text.matches("[0-9]{1,3}\\.[0-9]{1,3}")) {
            throw new PerftestException("the peer " + peer() + " is not a perftest: its version field is <"
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
        return exchangeRecord(mine, what, timeoutMs());
    }

    /** One QP-record exchange: text in TCP mode, the binary struct over rdma_cm. */
    abstract QpRecord exchangeRecord(QpRecord mine, String what, long waitMs);

    /** One report field: 8 bytes each way, big-endian. */
    long exchangeLong(long mine, String what) {
        return ByteBuffer.wrap(exchange(ByteBuffer.allocate(8).putLong(mine).array(), 8, what)).getLong();
    }

    double exchangeDouble(double mine, String what) {
        return Double.longBitsToDouble(exchangeLong(Double.doubleToRawLongBits(mine), what));
    }

    static String seconds(long ms) {
        return ms % 1000 == 0 ? ms / 1000 + " s" : String.format(java.util.Locale.ROOT, "%.1f s", ms / 1000.0);
    }
}
