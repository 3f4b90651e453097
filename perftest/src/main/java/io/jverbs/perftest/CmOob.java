package io.jverbs.perftest;

import io.jverbs.cm.CmConnection;
import io.jverbs.Completion;
import io.jverbs.CompletionHandler;
import io.jverbs.CompletionQueue;
import io.jverbs.DatagramQueuePair;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.cm.RdmaCm;
import io.jverbs.cm.RdmaCmException;
import io.jverbs.RegisteredBuffer;
import io.jverbs.WcStatus;
import io.jverbs.ibverbs.VerbsException;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;

/**
 * The out-of-band channel of {@code -R} (PERFTEST-WIRE.md §2): no TCP at all, but an RC control
 * queue pair connected through rdma_cm on the test's port. Every message is one signaled SEND;
 * each side keeps one receive posted and reposts it as soon as a message arrived (before it
 * answers). The QP records travel as C's binary {@code struct pingpong_dest} (56 bytes; 64 from
 * a 6.29 peer are read too). Every wait — the connection, each send's completion, each message —
 * has a deadline.
 */
final class CmOob extends Oob implements CompletionHandler {
    /** Room for any message of the protocol (the largest is a 64-byte record); more is a peer error. */
    private static final int SLOT = 1024;
    private static final long RECV_ID = 5;
    private static final long SEND_ID = 6;
    private final CompletionQueue cq;
    private final RegisteredBuffer buf;
    private final MemorySegment mem;
    private final QueuePair qp;
    private final CmConnection connection;
    private final int gidIndex;
    // the completion the last poll saw
    private boolean sendDone;
    private boolean received;
    private int receivedBytes;
    private int failedStatus = -1;
    private boolean failedReceive;
    private boolean peerGone;
    /** IBV_WC_WR_FLUSH_ERR. */
    private static final int FLUSH = WcStatus.WR_FLUSH_ERR;

    private CmOob(boolean server, long timeoutMs, String peer, CompletionQueue cq, RegisteredBuffer buf, QueuePair qp,
                  CmConnection connection, int gidIndex) {
        super(server, timeoutMs, peer);
        this.cq = cq;
        this.buf = buf;
        this.mem = buf.segment();
        this.qp = qp;
        this.connection = connection;
        this.gidIndex = gidIndex;
    }

    /** The control queue pair's resources, on the test's device. */
    private record Parts(CompletionQueue cq, RegisteredBuffer buf, QueuePair qp) {
        void close() {
            qp.close();
            buf.close();
            cq.close();
        }
    }

    private static Parts parts(Session s) {
        CompletionQueue cq = s.context.createCompletionQueue(4);
        RegisteredBuffer buf = null;
        try {
            buf = s.pd.allocate(2 * SLOT);
            // SEND only: no remote rights, no rd_atomic beyond the minimum, RNR retries forever (as C's 7)
            QueuePairConfig config = new QueuePairConfig(cq, cq, 2, 2, 0, s.port.port(),
                    s.gid != null ? s.gid.index() : -1, 1, 14, 7, 7, 1, false, QueuePairConfig.Transport.RC, 12,
                    java.util.Set.of(), QueuePairConfig.DEFAULT_OPERATION_TIMEOUT, io.jverbs.Route.DEFAULT);
            return new Parts(cq, buf, s.pd.createQueuePair(config));
        } catch (RuntimeException e) {
            if (buf != null) {
                buf.close();
            }
            cq.close();
            throw e;
        }
    }

    /**
     * The server: listens on {@code port} (all addresses), accepts the first connection request
     * within {@code acceptMs}, stops listening.
     */
    static CmOob serve(Session s, int port, long acceptMs, long timeoutMs) {
        Parts p = parts(s);
        CmConnection conn;
        try (RdmaCm.Listener listener = listen(port)) {
            conn = listener.accept(p.qp(), Duration.ofMillis(acceptMs <= 0 ? Long.MAX_VALUE / 2_000_000 : acceptMs));
        } catch (RdmaCmException e) {
            p.close();
            throw new PerftestException((e.errno() == io.jverbs.ibverbs.Errno.ETIMEDOUT
                    ? "no client connected over rdma_cm to port " + port + " within " + seconds(acceptMs) + " (--connect_timeout)"
                    : "the rdma_cm connection on port " + port + " failed: " + e.getMessage()), e);
        } catch (RuntimeException e) {
            p.close();
            throw e;
        }
        return start(true, timeoutMs, "rdma_cm client on port " + port, p, conn, s);
    }

    /** Listens with rdma_cm on every address of this node; the caller closes the listener. */
    static RdmaCm.Listener listen(int port) {
        return listen(port, false);
    }

    /**
     * Listens with rdma_cm on every address of this node, in the UDP port space for
     * {@code datagrams} ({@code -c UD}); the caller closes the listener.
     */
    static RdmaCm.Listener listen(int port, boolean datagrams) {
        try {
            return datagrams ? RdmaCm.listenDatagrams("0.0.0.0", port) : RdmaCm.listen("0.0.0.0", port);
        } catch (RdmaCmException e) {
            throw new PerftestException("Failed to listen with rdma_cm on port " + port
                    + (datagrams ? " (UDP port space)" : "") + ": " + e.getMessage(), e);
        }
    }

    /**
     * The client: connects the control queue pair to {@code host:port}, retrying while nothing
     * listens there yet (REJECTED, ADDR_ERROR) every 100 ms until {@code connectMs}.
     */
    static CmOob connect(Session s, String host, int port, long connectMs, long timeoutMs) {
        Parts p = parts(s);
        try {
            CmConnection conn = connectRetrying(p.qp(), host, port, connectMs, "the rdma_cm control connection",
                    "--connect_timeout");
            return start(false, timeoutMs, host + ":" + port + " (rdma_cm)", p, conn, s);
        } catch (RuntimeException e) {
            p.close();
            throw e;
        }
    }

    /**
     * Connects one prepared queue pair through rdma_cm, retrying a refusal (the server may still
     * be setting up its listener, as C's 10 × 100 ms retries allow) until {@code connectMs}.
     *
     * @param option the option that sets {@code connectMs}, named when it runs out
     * @throws PerftestException naming the rdma_cm event, or the time spent
     */
    static CmConnection connectRetrying(QueuePair qp, String host, int port, long connectMs, String what,
                                        String option) {
        return retrying(left -> RdmaCm.connect(qp, host, port, left), host, port, connectMs, what, option);
    }

    /**
     * Resolves the server's datagram queue pair through rdma_cm's UDP port space, retrying while
     * nothing listens there yet, as {@link #connectRetrying} does for connections.
     *
     * @throws PerftestException naming the rdma_cm event, or the time spent
     */
    static DatagramQueuePair.Address resolveRetrying(DatagramQueuePair qp, String host, int port, long connectMs,
                                                     String what, String option) {
        return retrying(left -> RdmaCm.connectDatagram(qp, host, port, left), host, port, connectMs, what, option);
    }

    /** One rdma_cm attempt within the time left. */
    private interface Attempt<T> {
        T run(Duration left);
    }

    private static <T> T retrying(Attempt<T> attempt, String host, int port, long connectMs, String what, String option) {
        long deadline = System.nanoTime() + connectMs * 1_000_000;
        while (true) {
            long left = (deadline - System.nanoTime()) / 1_000_000;
            if (left <= 0) {
                throw new PerftestException("Couldn't make " + what + " to " + host + ":" + port + " within "
                        + seconds(connectMs) + " (" + option + "): nothing accepted it");
            }
            try {
                return attempt.run(Duration.ofMillis(left));
            } catch (RdmaCmException e) {
                if (!e.isRefusal()) {
                    // An attempt that used up the rest of the deadline is the option's bound running out.
                    String bound = System.nanoTime() >= deadline
                            ? " within " + seconds(connectMs) + " (" + option + ")" : "";
                    throw new PerftestException("Couldn't make " + what + " to " + host + ":" + port + bound + ": "
                            + e.getMessage(), e);
                }
                if (System.nanoTime() + 100_000_000L >= deadline) {
                    throw new PerftestException("Couldn't make " + what + " to " + host + ":" + port + " within "
                            + seconds(connectMs) + " (" + option + "): " + e.getMessage(), e);
                }
            } catch (VerbsException | IllegalStateException e) {
                throw new PerftestException("Couldn't make " + what + " to " + host + ":" + port + ": " + e.getMessage(), e);
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new PerftestException("interrupted while connecting to " + host + ":" + port);
            }
        }
    }

    private static CmOob start(boolean server, long timeoutMs, String peer, Parts p, CmConnection conn, Session s) {
        CmOob oob = new CmOob(server, timeoutMs, peer, p.cq(), p.buf(), p.qp(), conn, s.gid != null ? s.gid.index() : 0);
        try {
            oob.postReceive();
        } catch (RuntimeException e) {
            oob.close();
            throw e;
        }
        return oob;
    }

    private void postReceive() {
        try {
            if (qp.receive(RECV_ID, buf, 0, SLOT) != QueuePair.OK) {
                throw new PerftestException("Couldn't post the rdma_cm control receive: the receive queue is full");
            }
        } catch (IllegalStateException | VerbsException e) {
            throw new PerftestException("Couldn't post the rdma_cm control receive: " + e.getMessage(), e);
        }
    }

    @Override
    java.net.InetAddress peerAddress() {
        java.net.InetSocketAddress remote = connection.remoteAddress();
        return remote == null ? null : remote.getAddress();
    }

    @Override
    byte[] exchange(byte[] mine, int expect, String what, long waitMs) {
        if (server) {
            byte[] theirs = receive(expect, expect, what, waitMs);
            send(mine, what);
            return theirs;
        }
        send(mine, what);
        return receive(expect, expect, what, waitMs);
    }

    @Override
    QpRecord exchangeRecord(QpRecord mine, String what, long waitMs) {
        byte[] bytes = mine.encodeBinary(gidIndex);
        byte[] theirs;
        if (server) {
            theirs = receive(QpRecord.BINARY, QpRecord.BINARY_629, what, waitMs);
            send(bytes, what);
        } else {
            send(bytes, what);
            theirs = receive(QpRecord.BINARY, QpRecord.BINARY_629, what, waitMs);
        }
        return QpRecord.decodeBinary(theirs);
    }

    private void send(byte[] bytes, String what) {
        MemorySegment.copy(bytes, 0, mem, ValueLayout.JAVA_BYTE, SLOT, bytes.length);
        sendDone = false;
        try {
            if (qp.send(SEND_ID, buf, SLOT, bytes.length, true) != QueuePair.OK) {
                throw new PerftestException("couldn't send " + what + " to the peer " + peer + ": the send queue is full");
            }
        } catch (IllegalStateException | VerbsException e) {
            throw new PerftestException("couldn't send " + what + " to the peer " + peer + ": " + e.getMessage(), e);
        }
        long deadline = System.nanoTime() + timeoutMs * 1_000_000;
        while (!sendDone) {
            pollOnce(what);
            if (!sendDone && System.nanoTime() > deadline) {
                throw new PerftestException("the peer " + peer + " did not acknowledge " + what + " within "
                        + seconds(timeoutMs) + " (--handshake_timeout)");
            }
        }
    }

    /** Waits for the next message (between {@code min} and {@code max} bytes), reposts the receive, returns the bytes. */
    private byte[] receive(int min, int max, String what, long waitMs) {
        long start = waitStartNs();
        long deadline = waitMs <= 0 ? Long.MAX_VALUE : start + waitMs * 1_000_000;
        int idle = 0;
        while (!received) {
            if (peerGone) {
                throw new PerftestException("the peer " + peer + " disconnected (rdma_cm) while this side waited for " + what);
            }
            if (pollOnce(what) == 0) {
                if (System.nanoTime() > deadline) {
                    throw new PerftestException("the peer " + peer + " sent nothing within " + seconds(waitMs)
                            + " while this side waited for " + what + " (" + (min == max ? min + " bytes" : min + " or " + max
                            + " bytes") + " over rdma_cm; --handshake_timeout)");
                }
                if (++idle > 1000) {
                    Thread.onSpinWait();
                    if (idle > 100_000) {
                        sleepBriefly();
                    }
                }
            }
        }
        received = false;
        int n = receivedBytes;
        byte[] theirs = new byte[Math.min(n, SLOT)];
        MemorySegment.copy(mem, ValueLayout.JAVA_BYTE, 0, theirs, 0, theirs.length);
        try {
            postReceive();
        } catch (PerftestException e) {
            // After the session's last message the peer may disconnect at once: only a later
            // receive needs this one, and it then reports the disconnect.
            if (!awaitDisconnect()) {
                throw e;
            }
            peerGone = true;
        }
        if (n < min || n > max) {
            throw new PerftestException("the peer " + peer + " sent " + n + " bytes where " + what + " has "
                    + (min == max ? min : min + " or " + max) + " (" + QpRecord.printable(theirs) + ")");
        }
        return theirs;
    }

    private static void sleepBriefly() {
        try {
            Thread.sleep(1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PerftestException("interrupted during the rdma_cm handshake");
        }
    }

    private int pollOnce(String what) {
        int got;
        try {
            got = cq.poll(this, 4);
        } catch (IllegalStateException | VerbsException e) {
            throw new PerftestException("the rdma_cm control channel failed while waiting for " + what + ": " + e.getMessage(), e);
        }
        if (failedStatus == FLUSH && !failedReceive && awaitDisconnect()) {
            // our send was flushed because the peer disconnected right after it received it (the
            // end of a session, as C's peers do); a later receive reports the disconnect
            failedStatus = -1;
            sendDone = true;
            peerGone = true;
        }
        if (failedStatus >= 0) {
            String status = WcStatus.name(failedStatus);
            failedStatus = -1;
            throw new PerftestException("the rdma_cm control channel failed while " + (failedReceive ? "receiving " : "sending ")
                    + what + ": " + status + (connection.isDisconnected() ? " (the peer disconnected)"
                    : status.equals("LOC_LEN_ERR") ? " (the peer sent more than " + SLOT + " bytes)" : ""));
        }
        return got;
    }

    /**
     * Whether the peer disconnected, waiting for rdma_cm to say so at most the handshake timeout:
     * the flush of a send can be polled before the DISCONNECTED event that caused it has reached
     * the connection's watcher (seen once in CI, a closing sync ended as WR_FLUSH_ERR), and a
     * receive can be refused while the watcher is between moving the queue pair to error and
     * saying so (seen once in CI, atomic_bw -R, before CmConnection set its flag first).
     */
    private boolean awaitDisconnect() {
        try {
            return connection.awaitDisconnect(Duration.ofMillis(timeoutMs));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return connection.isDisconnected();
        }
    }

    @Override
    public void onCompletion(Completion wc) {
        if (!wc.isSuccess()) {
            if (failedStatus < 0) {
                failedStatus = wc.status();
                failedReceive = wc.isReceive();
            }
            return;
        }
        if (wc.isReceive()) {
            received = true;
            receivedBytes = wc.byteLength();
        } else {
            sendDone = true;
        }
    }

    /** No "done" over rdma_cm (C writes it to sockets only): disconnects and releases the control queue pair. */
    @Override
    void finish(boolean sayDone) {
        close();
    }

    private boolean closed;

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            connection.close();
        } finally {
            buf.close();
            cq.close();
        }
    }
}
