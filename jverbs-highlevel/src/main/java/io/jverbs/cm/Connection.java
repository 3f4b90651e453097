package io.jverbs.cm;

import io.jverbs.CompletionHandler;
import io.jverbs.CompletionQueue;
import io.jverbs.IdleStrategy;
import io.jverbs.Poller;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.UnaryOperator;

/**
 * A reliable connection through rdma_cm that owns everything it runs on: its queue pair, its
 * completion queue, the rdma_cm id and, unless the caller polls, a {@link Poller}. The peer's
 * buffers arrive with it, in the handshake ({@link #peerBuffers()}); receives of a ring given in
 * the {@link Options} are posted before the connection exists, so the peer's first Send finds
 * them. {@link #close()} disconnects the peer and frees all of it.
 *
 * <pre>{@code
 * // server: one connection, its region opened to the client in the handshake
 * try (Connection.Server server = Connection.listen(pd, ip, 7471, Connection.Options.defaults()
 *         .offer(Handshake.offering(region.remote())));
 *      Connection c = server.accept(Duration.ofSeconds(30))) {
 *     c.awaitDisconnect(Duration.ofMinutes(1));
 * }
 * // client
 * try (Connection c = Connection.connect(pd, ip, 7471, Connection.Options.defaults())) {
 *     c.queuePair().writeAsync(local, 0, 64, c.peerBuffers().get(0), 0).get();
 * }
 * }</pre>
 *
 * <p>The protection domain (and the registered buffers in it) stay the caller's: the connection
 * uses them and closes neither. Thread-safe as its parts are; {@link #close()} is idempotent.
 */
public final class Connection implements AutoCloseable {
    private final CmConnection cm;
    /** Its completion queue, queue pair, poller and receive ring (released to another connection at close). */
    private final Parts parts;
    /** Rings posted for a live connection: a ring's slots belong to one connection's receives at a time. */
    private static final java.util.Set<RegisteredBuffer> RINGS_IN_USE =
            java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());

    private Connection(CmConnection cm, Parts parts) {
        this.cm = cm;
        this.parts = parts;
    }

    /**
     * How a {@link Connection} is made. Start from {@link #defaults()}.
     *
     * @param sendDepth       the queue pair's send depth (default 128)
     * @param receiveDepth    its receive depth (default 128); the completion queue has room for both
     * @param configure       adjusts the queue pair's config (retries, inline, rights, …) made on
     *                        the connection's own completion queue
     * @param offer           what this side tells the peer in the handshake
     * @param receiveRing     a buffer whose slots get a posted receive each before the connection
     *                        exists (work-request id = slot index), or null
     * @param receiveSlotBytes the bytes of one slot of {@code receiveRing}
     * @param polling         the idle strategy of the connection's own {@link Poller}, or null when
     *                        the caller polls {@link #completionQueue()} (the lowest latency: no
     *                        hand-off between threads)
     * @param handler         the poller's handler for zero-allocation completions (the ring's
     *                        receives among them), or null
     * @param connectAttempts how many times a client tries when the peer refuses (nothing listens
     *                        yet), at least 1
     * @param retryInterval   the pause between two attempts
     * @param timeout         the most one attempt (or an accept) may take
     */
    public record Options(int sendDepth, int receiveDepth, UnaryOperator<QueuePairConfig> configure, Handshake offer, RegisteredBuffer receiveRing,
                          int receiveSlotBytes, IdleStrategy polling, CompletionHandler handler, int connectAttempts,
                          Duration retryInterval, Duration timeout) {
        /**
         * Validates.
         *
         * @throws IllegalArgumentException when a count or a duration is out of range
         * @throws NullPointerException     when {@code configure}, {@code offer} or a duration is null
         */
        public Options {
            Objects.requireNonNull(configure, "configure");
            Objects.requireNonNull(offer, "offer");
            Objects.requireNonNull(retryInterval, "retryInterval");
            Objects.requireNonNull(timeout, "timeout");
            if (sendDepth < 1 || receiveDepth < 1) {
                throw new IllegalArgumentException("depths at least 1, not " + sendDepth + "/" + receiveDepth);
            }
            if (connectAttempts < 1) {
                throw new IllegalArgumentException("connectAttempts at least 1, not " + connectAttempts);
            }
            if (receiveRing != null && (receiveSlotBytes < 1 || receiveSlotBytes > receiveRing.length())) {
                throw new IllegalArgumentException("a receive slot is 1 to " + receiveRing.length() + " bytes, not "
                        + receiveSlotBytes);
            }
            if (timeout.isNegative() || timeout.isZero() || retryInterval.isNegative()) {
                throw new IllegalArgumentException("timeout must be positive, retryInterval not negative");
            }
        }

        /**
         * The defaults: RC with {@link QueuePairConfig#rc} defaults, nothing offered, no ring, a
         * back-off poller (little CPU when idle; a completion after a quiet spell waits for the
         * poller's park, so use {@link #polling(IdleStrategy, CompletionHandler)} with
         * {@link IdleStrategy#busySpin()}, or {@link #callerPolls()}, for latency), one attempt,
         * 30 s.
         *
         * @return the defaults
         */
        public static Options defaults() {
            return new Options(128, 128, c -> c, Handshake.empty(), null, 0, IdleStrategy.backoff(), null, 1,
                    Duration.ofMillis(200), Duration.ofSeconds(30));
        }

        /**
         * Returns a copy with other queue depths.
         *
         * @param send    send depth
         * @param receive receive depth
         * @return the copy
         */
        public Options depth(int send, int receive) {
            return new Options(send, receive, configure, offer, receiveRing, receiveSlotBytes, polling, handler,
                    connectAttempts, retryInterval, timeout);
        }

        /**
         * Returns a copy that tells the peer {@code handshake}.
         *
         * @param handshake buffers and bytes for the peer
         * @return the copy
         */
        public Options offer(Handshake handshake) {
            return new Options(sendDepth, receiveDepth, configure, handshake, receiveRing, receiveSlotBytes, polling, handler, connectAttempts,
                    retryInterval, timeout);
        }

        /**
         * Returns a copy that posts a receive per slot of {@code ring} before connecting.
         *
         * @param ring      registered in the connection's protection domain; one live connection
         *                  at a time may use it (a server gives each accept a ring of its own:
         *                  {@link Server#accept(Duration, Options)})
         * @param slotBytes bytes per slot; {@code ring.length() / slotBytes} slots (at most the
         *                  receive depth)
         * @return the copy; a connection made with a ring and a {@link Poller} but no handler is
         *         refused ({@link IllegalArgumentException}): the ring's messages would reach nobody
         */
        public Options receiveRing(RegisteredBuffer ring, int slotBytes) {
            return new Options(sendDepth, receiveDepth, configure, offer, ring, slotBytes, polling, handler, connectAttempts, retryInterval,
                    timeout);
        }

        /**
         * Returns a copy whose connection runs a {@link Poller} with {@code idle}.
         *
         * @param idle    the idle strategy
         * @param handler receives zero-allocation completions, or null
         * @return the copy
         */
        public Options polling(IdleStrategy idle, CompletionHandler handler) {
            return new Options(sendDepth, receiveDepth, configure, offer, receiveRing, receiveSlotBytes, Objects.requireNonNull(idle), handler,
                    connectAttempts, retryInterval, timeout);
        }

        /**
         * Returns a copy whose connection has no poller: the caller polls
         * {@link Connection#completionQueue()} (futures complete in that call).
         *
         * @return the copy
         */
        public Options callerPolls() {
            return new Options(sendDepth, receiveDepth, configure, offer, receiveRing, receiveSlotBytes, null, null, connectAttempts,
                    retryInterval, timeout);
        }

        /**
         * Returns a copy that retries a refused connect.
         *
         * @param attempts at least 1
         * @param interval the pause between two attempts
         * @return the copy
         */
        public Options retry(int attempts, Duration interval) {
            return new Options(sendDepth, receiveDepth, configure, offer, receiveRing, receiveSlotBytes, polling, handler, attempts, interval,
                    timeout);
        }

        /**
         * Returns a copy with another time limit.
         *
         * @param limit the most one attempt or accept may take
         * @return the copy
         */
        public Options timeout(Duration limit) {
            return new Options(sendDepth, receiveDepth, configure, offer, receiveRing, receiveSlotBytes, polling, handler, connectAttempts,
                    retryInterval, limit);
        }

        /**
         * Returns a copy that adjusts the queue pair's config.
         *
         * @param adjust applied to {@code QueuePairConfig.rc(cq).withDepth(send, receive)}
         * @return the copy
         */
        public Options configure(UnaryOperator<QueuePairConfig> adjust) {
            return new Options(sendDepth, receiveDepth, adjust, offer, receiveRing, receiveSlotBytes, polling, handler, connectAttempts,
                    retryInterval, timeout);
        }
    }

    /**
     * A queue pair on a completion queue of its own, the ring's receives posted (the ring claimed
     * for it), a poller if asked.
     */
    private record Parts(CompletionQueue cq, QueuePair qp, Poller poller, RegisteredBuffer ring) {
        /** Makes them; on any failure nothing is left made or claimed. */
        static Parts open(ProtectionDomain pd, Options options) {
            RegisteredBuffer ring = claimRing(options);
            CompletionQueue cq;
            try {
                cq = pd.context().createCompletionQueue(options.sendDepth() + options.receiveDepth());
            } catch (RuntimeException | Error e) {
                releaseRing(ring);
                throw e;
            }
            Poller poller = null;
            try {
                QueuePair qp = pd.createQueuePair(options.configure().apply(QueuePairConfig.rc(cq)
                        .withDepth(options.sendDepth(), options.receiveDepth())));
                poller = options.polling() == null ? null : Poller.start(options.handler(), options.polling(), cq);
                Parts parts = new Parts(cq, qp, poller, ring);
                postRing(qp, options);
                return parts;
            } catch (RuntimeException | Error e) {
                new Parts(cq, null, poller, ring).close();
                throw e;
            }
        }

        /**
         * Stops the poller, closes the queue (and with it the queue pair) and releases the ring.
         * Bounded: a handler still running is logged, not thrown, and the queue waits for it at
         * most 1 s, then leaves its destroy to that poll.
         */
        void close() {
            try {
                if (poller != null) {
                    stopPoller(poller);
                }
            } finally {
                try {
                    cq.close();
                } finally {
                    releaseRing(ring); // the queue pair is gone: no receive of it is posted any more
                }
            }
        }
    }

    /**
     * Claims the options' ring for one connection; the caller releases it when that connection
     * closes or is not made.
     */
    private static RegisteredBuffer claimRing(Options options) {
        RegisteredBuffer ring = options.receiveRing();
        if (ring != null && options.polling() != null && options.handler() == null) {
            throw new IllegalArgumentException("a receive ring with a Poller but no handler: the ring's messages would"
                    + " be dropped unseen and its slots never posted again; give the Poller a handler"
                    + " (Options.polling(idle, handler)), or poll the connection's queue yourself");
        }
        if (ring != null) {
            synchronized (RINGS_IN_USE) {
                if (!RINGS_IN_USE.add(ring)) {
                    throw new IllegalStateException("the receive ring " + ring + " is posted for another live"
                            + " connection: two connections' messages would land in the same slots; give each"
                            + " connection a ring of its own (Server.accept(timeout, options.receiveRing(...)))"
                            + " or close the other connection first");
                }
            }
        }
        return ring;
    }

    private static void releaseRing(RegisteredBuffer ring) {
        if (ring != null) {
            synchronized (RINGS_IN_USE) {
                RINGS_IN_USE.remove(ring);
            }
        }
    }

    private static void postRing(QueuePair qp, Options options) {
        RegisteredBuffer ring = options.receiveRing();
        if (ring == null) {
            return;
        }
        long slots = Math.min(ring.length() / options.receiveSlotBytes(), qp.config().maxRecvWr());
        for (int i = 0; i < slots; i++) {
            if (qp.receive(i, ring, (long) i * options.receiveSlotBytes(), options.receiveSlotBytes()) != QueuePair.OK) {
                throw new IllegalStateException("the receive queue took only " + i + " of the ring's " + slots + " slots");
            }
        }
    }

    /**
     * Connects to the listener at {@code host:port}: a completion queue and a queue pair of its
     * own in {@code pd}'s context, the ring's receives posted, then rdma_cm's handshake with the
     * offer; a refusal (nothing listens there yet) is retried as the options say.
     *
     * @param pd      the protection domain (its buffers are what the connection may post)
     * @param host    the listener's IPv4 address or name
     * @param port    its port
     * @param options how
     * @return the connection, with the peer's handshake
     * @throws RdmaCmException when the peer refuses on every attempt, is unreachable or silent
     * @throws IllegalArgumentException when the offer does not fit a connection request, or offers rights
     *         the queue pair does not give peers ({@link QueuePair#remoteAccess()})
     */
    public static Connection connect(ProtectionDomain pd, String host, int port, Options options) {
        options.offer().requireFits(Handshake.MAX_CONNECT_BYTES, "a connection request"); // before anything is made
        for (int attempt = 1; ; attempt++) {
            // a queue pair of its own for each attempt: nothing of a refused request (its queue
            // pair number, which the listener's kernel may remember) is carried into the next
            Parts parts = Parts.open(pd, options);
            try {
                CmConnection cm = RdmaCm.connect(parts.qp(), host, port, options.timeout(), options.offer());
                return new Connection(cm, parts);
            } catch (RdmaCmException e) {
                parts.close();
                if (!e.isRefusal() || attempt >= options.connectAttempts()) {
                    throw e;
                }
            } catch (RuntimeException | Error e) {
                parts.close();
                throw e;
            }
            try {
                Thread.sleep(options.retryInterval());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new RdmaCmException("interrupted between connect attempts", 0, io.jverbs.ibverbs.Errno.EINTR);
            }
        }
    }

    /**
     * Listens on {@code host:port} for connections made as {@link #connect} makes them.
     *
     * @param pd      the protection domain of the connections' queue pairs
     * @param host    the local IPv4 address to bind (an RDMA device's interface)
     * @param port    the port, or 0 for a free one ({@link Server#port()})
     * @param options how each accepted connection is made (its offer is the reply's)
     * @return the server
     * @throws RdmaCmException when binding or listening fails
     */
    public static Server listen(ProtectionDomain pd, String host, int port, Options options) {
        return new Server(pd, RdmaCm.listen(host, port), options);
    }

    /**
     * Accepts {@link Connection}s, as a {@link java.net.ServerSocket} accepts sockets. Its accepts
     * take turns; {@link #close()} ends a waiting one within 100 ms. Connections already accepted
     * live on.
     */
    public static final class Server implements AutoCloseable {
        private final ProtectionDomain pd;
        private final RdmaCm.Listener listener;
        private final Options options;

        private Server(ProtectionDomain pd, RdmaCm.Listener listener, Options options) {
            this.pd = pd;
            this.listener = listener;
            this.options = options;
        }

        /**
         * Returns the port listened on.
         *
         * @return the bound port
         */
        public int port() {
            return listener.port();
        }

        /**
         * Waits for one connection: its own completion queue and queue pair, the ring's receives
         * posted, the reply carrying the options' offer. They are made before the wait, so that an
         * offer the queue pair cannot honour is refused before any client comes (a server that
         * accepts many clients without this cost is an {@link EventLoop}).
         *
         * @param timeout the most to wait for a client; a client's request taken in time is given at
         *                least {@link RdmaCm.Listener#HANDSHAKE_ALLOWANCE_MS} ms for its handshake
         * @return the connection, with the client's handshake
         * @throws RdmaCmException when no client comes in time or the handshake fails
         * @throws IllegalStateException when the server is closed
         * @throws IllegalArgumentException when the offer does not fit the reply, or offers rights the
         *         queue pair does not give peers ({@link QueuePair#remoteAccess()})
         */
        public Connection accept(Duration timeout) {
            return accept(timeout, options);
        }

        /**
         * Waits for one connection made as {@code options} say instead of the server's own (a
         * receive ring of its own for each connection, say).
         *
         * @param timeout the most to wait for a client; a client's request taken in time is given at
         *                least {@link RdmaCm.Listener#HANDSHAKE_ALLOWANCE_MS} ms for its handshake
         * @param options how this connection is made (its offer is the reply's)
         * @return the connection, with the client's handshake
         * @throws RdmaCmException when no client comes in time or the handshake fails
         * @throws IllegalStateException when the server is closed, or the options' receive ring is
         *                               posted for another live connection
         * @throws IllegalArgumentException when the offer does not fit the reply, or offers rights the
         *         queue pair does not give peers ({@link QueuePair#remoteAccess()})
         */
        public Connection accept(Duration timeout, Options options) {
            Parts parts = Parts.open(pd, options);
            try {
                CmConnection cm = listener.accept(parts.qp(), timeout, options.offer());
                return new Connection(cm, parts);
            } catch (RuntimeException | Error e) {
                parts.close();
                throw e;
            }
        }

        /** Stops listening. Idempotent. */
        @Override
        public void close() {
            listener.close();
        }
    }

    /**
     * Returns the queue pair.
     *
     * @return the connected queue pair, closed with this connection
     */
    public QueuePair queuePair() {
        return cm.queuePair();
    }

    /**
     * Returns the completion queue of both directions.
     *
     * @return the queue (poll it yourself when the options said {@link Options#callerPolls()})
     */
    public CompletionQueue completionQueue() {
        return parts.cq();
    }

    /**
     * Returns the buffers the peer opened in its handshake, with their rights.
     *
     * @return unmodifiable, in the peer's order (empty when it offered none)
     */
    public List<RemoteBuffer> peerBuffers() {
        return cm.peerHandshake().buffers();
    }

    /**
     * Returns the application bytes of the peer's handshake.
     *
     * @return a copy (empty when none)
     */
    public byte[] peerData() {
        return cm.peerHandshake().data();
    }

    /**
     * Returns the peer's address.
     *
     * @return its IP address and rdma_cm port
     */
    public InetSocketAddress remoteAddress() {
        return cm.remoteAddress();
    }

    /**
     * Returns whether the peer disconnected.
     *
     * @return true once rdma_cm reported it
     */
    public boolean isDisconnected() {
        return cm.isDisconnected();
    }

    /**
     * Waits for the peer to disconnect.
     *
     * @param timeout the most to wait
     * @return true when it did
     * @throws InterruptedException when interrupted
     */
    public boolean awaitDisconnect(Duration timeout) throws InterruptedException {
        return cm.awaitDisconnect(timeout);
    }

    /**
     * Disconnects the peer, stops the poller (its futures in flight fail) and frees the queue
     * pair, the completion queue and the rdma_cm id. Idempotent; bounded: a handler of the poller
     * still running (blocked in user code) is waited for about 2 s, then logged, and the native
     * queues are destroyed by that poll when the handler returns. Its receive ring may then be
     * given to another connection.
     *
     * @throws WrongThreadException when the queue pair is confined to another thread (nothing is
     *                              closed then)
     */
    @Override
    public void close() {
        try {
            cm.close();
        } catch (WrongThreadException e) {
            throw e; // a confined queue pair closed from another thread: nothing is closed
        } catch (RuntimeException | Error e) {
            parts.close();
            throw e;
        }
        parts.close();
    }

    /** Stops the poller; a handler still running after the poller's wait is logged, not thrown: close stays bounded. */
    private static void stopPoller(Poller poller) {
        try {
            poller.close();
        } catch (IllegalStateException stillRunning) {
            System.getLogger("io.jverbs").log(System.Logger.Level.WARNING, "closing a connection: the poller's handler"
                    + " is still running; the completion queue is destroyed when it returns", stillRunning);
        }
    }
}
