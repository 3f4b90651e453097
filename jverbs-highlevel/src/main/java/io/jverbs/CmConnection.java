package io.jverbs;

import io.jverbs.rdmacm.raw.rdma_cma_h;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A queue pair connected through rdma_cm, and the watch on its peer: when the peer disconnects
 * (or its node goes away and rdma_cm notices), the queue pair is moved to error, its work in
 * flight is flushed (futures fail with WR_FLUSH_ERR), later posts are refused naming the
 * disconnect, and {@link #awaitDisconnect} returns.
 *
 * <p>{@link #close()} disconnects, closes the queue pair and releases the rdma_cm id; it is
 * idempotent and bounded (the watcher thread stops within 100 ms). Thread-safe.
 */
public final class CmConnection implements AutoCloseable {
    private final QueuePair qp;
    private final MemorySegment id;
    private final RdmaCm.Channel channel;
    private final CountDownLatch disconnected = new CountDownLatch(1);
    /**
     * Set before the queue pair is moved to error, so that whoever sees a post refused for the
     * disconnect also sees {@link #isDisconnected()} true (volatile write, then the queue pair's
     * volatile state).
     */
    private volatile boolean peerGone;
    private final Thread watcher;
    private final InetSocketAddress local;
    private final InetSocketAddress remote;
    private volatile boolean closing;
    private boolean closed;

    CmConnection(QueuePair qp, MemorySegment id, RdmaCm.Channel channel) {
        this.qp = qp;
        this.id = id;
        this.channel = channel;
        this.local = RdmaCm.address(id, false);
        this.remote = RdmaCm.address(id, true);
        this.watcher = Thread.ofPlatform().name("jverbs-cm-" + qp.number()).daemon(true).start(this::watch);
    }

    private void watch() {
        while (!closing) {
            RdmaCm.Channel.Event e;
            try {
                e = channel.next(System.nanoTime() + 100_000_000L);
            } catch (RuntimeException failure) {
                return;
            }
            if (e != null && (e.type() == rdma_cma_h.RDMA_CM_EVENT_DISCONNECTED
                    || e.type() == rdma_cma_h.RDMA_CM_EVENT_DEVICE_REMOVAL)) {
                peerGone = true;
                try {
                    qp.peerDisconnected("peer disconnected (rdma_cm " + RdmaCm.name(e.type()) + ")");
                } finally {
                    disconnected.countDown();
                }
                return;
            }
        }
    }

    /**
     * Returns the connected queue pair.
     *
     * @return the queue pair (closed with this connection)
     */
    public QueuePair queuePair() {
        return qp;
    }

    /**
     * Returns the peer's IP address and rdma_cm port, as rdma_cm saw them when the connection was
     * made (kept after close).
     *
     * @return the remote address, or null when it is neither IPv4 nor IPv6
     */
    public InetSocketAddress remoteAddress() {
        return remote;
    }

    /**
     * Returns this side's IP address and rdma_cm port (kept after close).
     *
     * @return the local address, or null when it is neither IPv4 nor IPv6
     */
    public InetSocketAddress localAddress() {
        return local;
    }

    /**
     * Returns whether the peer has disconnected. It is true no later than the queue pair starts
     * refusing posts for the disconnect: a thread whose post was refused naming the disconnect
     * sees true here.
     *
     * @return true once rdma_cm reported the disconnect
     */
    public boolean isDisconnected() {
        return peerGone;
    }

    /**
     * Waits for the peer to disconnect.
     *
     * @param timeout the most to wait
     * @return true when it did, false on timeout
     * @throws InterruptedException when interrupted
     */
    public boolean awaitDisconnect(Duration timeout) throws InterruptedException {
        return disconnected.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** Disconnects, closes the queue pair, releases the id and the channel. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        rdma_cma_h.rdma_disconnect(id);
        closing = true;
        try {
            watcher.join(Duration.ofSeconds(2));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            qp.close();
        } finally {
            rdma_cma_h.rdma_destroy_id(id);
            channel.close();
        }
    }
}
