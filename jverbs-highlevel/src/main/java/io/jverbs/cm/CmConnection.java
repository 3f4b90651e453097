package io.jverbs.cm;

import io.jverbs.Context;
import io.jverbs.QueuePair;
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
 * <p>The connection is the queue pair's child in the ownership tree: {@link #close()}, and the
 * close of the queue pair or of anything above it (its protection domain, its completion queue,
 * its {@link Context}), disconnects the peer, closes the queue pair and releases the rdma_cm id.
 * It is idempotent and bounded: the watcher thread stops within 100 ms, and the id's destroy,
 * which the kernel may hold for a long time when the peer vanished mid-handshake, runs on a
 * background reaper thread, never on the caller's. Thread-safe.
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
    private final java.util.concurrent.atomic.AtomicBoolean released = new java.util.concurrent.atomic.AtomicBoolean();

    private final Handshake peer;

    CmConnection(QueuePair qp, MemorySegment id, RdmaCm.Channel channel, Handshake peer) {
        this.peer = peer;
        this.qp = qp;
        this.id = id;
        this.channel = channel;
        this.local = RdmaCm.address(id, false);
        this.remote = RdmaCm.address(id, true);
        this.watcher = Thread.ofPlatform().name("jverbs-cm-" + qp.number()).daemon(true).start(this::watch);
        Core.ownedBy(qp, this::release);
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
                    Core.peerDisconnected(qp, "peer disconnected (rdma_cm " + RdmaCm.name(e.type()) + ")");
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
     * Returns what the peer said in the handshake: the buffers it opened to this side (with their
     * rights) and its bytes.
     *
     * @return the peer's handshake (empty when it said nothing)
     */
    public Handshake peerHandshake() {
        return peer;
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
     * Waits for the connection to end: the peer disconnects, or this side closes it
     * ({@link #close()} on any thread ends the wait at once). Thread-safe.
     *
     * @param timeout the most to wait
     * @return true when it ended, false on timeout
     * @throws InterruptedException when interrupted
     */
    public boolean awaitDisconnect(Duration timeout) throws InterruptedException {
        return disconnected.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    /**
     * Disconnects, closes the queue pair, and hands the id and its channel to the reaper.
     * Idempotent; safe from any thread, a completion handler included, except that the connection
     * of a confined queue pair is closed from that queue pair's thread only.
     *
     * @throws WrongThreadException when the queue pair is confined to another thread (nothing is
     *                              closed then: the peer sees no disconnect)
     */
    @Override
    public void close() {
        try {
            qp.close(); // its close releases this connection first
        } catch (WrongThreadException e) {
            throw e; // a confined queue pair closed from another thread: nothing is closed, the peer sees nothing
        } catch (RuntimeException | Error e) {
            release();
            throw e;
        }
        release();
    }

    /** Disconnects the peer, stops the watcher, and reaps the id: once, before the queue pair's destroy. */
    void release() {
        if (!released.compareAndSet(false, true)) {
            return;
        }
        rdma_cma_h.rdma_disconnect(id);
        closing = true;
        disconnected.countDown(); // a thread waiting for the end of the connection is not left to its timeout
        if (Thread.currentThread() != watcher) {
            try {
                watcher.join(Duration.ofSeconds(2));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        RdmaCm.reap(id, channel);
    }
}
