package io.jverbs.cm;

import io.jverbs.Access;
import io.jverbs.CompletionHandler;
import io.jverbs.CompletionQueue;
import io.jverbs.Context;
import io.jverbs.IdleStrategy;
import io.jverbs.Poller;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.ibverbs.Errno;
import io.jverbs.rdmacm.raw.rdma_cma_h;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.UnaryOperator;

/**
 * A reliable connection through rdma_cm that owns everything it runs on: its queue pair, its
 * completion queue, the rdma_cm id and, unless the caller polls, a {@link Poller}. The peer's
 * buffers arrive with it, in the handshake ({@link #peerBuffers()}); receives of a ring given in
 * the {@link Options} are posted before the peer can send, so the peer's first Send finds them.
 * {@link #close()} disconnects the peer and frees all of it.
 *
 * <pre>{@code
 * // server: one connection, a window of its own over the region (registered without remote rights)
 * try (Connection.Server server = Connection.listen(pd, ip, 7471, Connection.Options.defaults()
 *         .grant(region, Access.REMOTE_WRITE));
 *      Connection c = server.accept(Duration.ofSeconds(30))) {
 *     c.awaitDisconnect(Duration.ofMinutes(1));
 * }
 * // client
 * try (Connection c = Connection.connect(pd, ip, 7471, Connection.Options.defaults())) {
 *     c.queuePair().async().write(local, 0, 64, c.peerBuffers().get(0), 0).get();
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

    /** The server that accepted it, or null. */
    private final Server server;
    private final java.net.InetAddress source;
    private final java.util.concurrent.atomic.AtomicBoolean released = new java.util.concurrent.atomic.AtomicBoolean();

    private Connection(CmConnection cm, Parts parts, Server server, java.net.InetAddress source) {
        this.cm = cm;
        this.parts = parts;
        this.server = server;
        this.source = source;
    }

    /**
     * A range of one of this side's buffers that the accepting side opens to one connection
     * through a type-2 memory window bound on that connection's queue pair
     * ({@link Options#grant(RegisteredBuffer, Access...)}).
     *
     * @param buffer the buffer, registered in the server's protection domain (no remote rights
     *               needed: the window carries them)
     * @param offset the range's first byte
     * @param length the range's bytes
     * @param rights what the peer may do in it, at least one
     */
    public record Grant(RegisteredBuffer buffer, long offset, long length, Set<Access> rights) {
        /**
         * Validates.
         *
         * @throws NullPointerException      when {@code buffer} or {@code rights} is null
         * @throws IllegalArgumentException  when {@code rights} is empty
         * @throws IndexOutOfBoundsException when the range lies outside the buffer
         */
        public Grant {
            Objects.requireNonNull(buffer, "buffer");
            rights = Set.copyOf(Objects.requireNonNull(rights, "rights"));
            if (rights.isEmpty()) {
                throw new IllegalArgumentException("a grant gives the peer at least one right (REMOTE_READ,"
                        + " REMOTE_WRITE, REMOTE_ATOMIC)");
            }
            Objects.checkFromIndexSize(offset, length, buffer.length());
            if (length < 1) {
                throw new IllegalArgumentException("a grant covers at least 1 byte, not " + length);
            }
        }
    }

    /**
     * How a {@link Connection} is made. Start from {@link #defaults()}.
     *
     * @param sendDepth       the queue pair's send depth (default 128)
     * @param receiveDepth    its receive depth (default 128); the completion queue has room for both
     * @param configure       adjusts the queue pair's config (retries, inline, rights, …) made on
     *                        the connection's own completion queue
     * @param offer           what this side tells the peer in the handshake
     * @param grants          ranges the accepting side opens to each connection through a memory
     *                        window of that connection's own; told to the peer before the
     *                        {@code offer}'s buffers ({@link #peerBuffers()} order)
     * @param receiveRing     a buffer whose slots get a posted receive each before the peer can
     *                        send (work-request id = slot index), or null
     * @param receiveSlotBytes the bytes of one slot of {@code receiveRing}
     * @param polling         the idle strategy of the connection's own {@link Poller}, or null when
     *                        the caller polls {@link #completionQueue()} (the lowest latency: no
     *                        hand-off between threads)
     * @param handler         the poller's handler for zero-allocation completions (the ring's
     *                        receives among them), or null
     * @param connectAttempts how many times a client tries when the peer refuses (nothing listens
     *                        yet), at least 1
     * @param retryInterval   the pause between two attempts
     * @param timeout         the most one attempt (or an accept) may take, first use of the
     *                        library and the device included
     */
    public record Options(int sendDepth, int receiveDepth, UnaryOperator<QueuePairConfig> configure, Handshake offer,
                          List<Grant> grants, RegisteredBuffer receiveRing, int receiveSlotBytes, IdleStrategy polling,
                          CompletionHandler handler, int connectAttempts, Duration retryInterval, Duration timeout) {
        /**
         * Validates.
         *
         * @throws IllegalArgumentException when a count or a duration is out of range
         * @throws NullPointerException     when {@code configure}, {@code offer}, {@code grants} or a
         *                                  duration is null
         */
        public Options {
            Objects.requireNonNull(configure, "configure");
            Objects.requireNonNull(offer, "offer");
            grants = List.copyOf(Objects.requireNonNull(grants, "grants"));
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
         * The defaults: RC with {@link QueuePairConfig#rc} defaults, nothing offered or granted, no
         * ring, a back-off poller (little CPU when idle; a completion after a quiet spell waits for
         * the poller's park, so use {@link #polling(IdleStrategy, CompletionHandler)} with
         * {@link IdleStrategy#busySpin()}, or {@link #callerPolls()}, for latency), one attempt,
         * 30 s.
         *
         * @return the defaults
         */
        public static Options defaults() {
            return new Options(128, 128, c -> c, Handshake.empty(), List.of(), null, 0, IdleStrategy.backoff(), null, 1,
                    Duration.ofMillis(200), Duration.ofSeconds(30));
        }

        /** A mutable copy, so that each {@code with} method names only what it changes. */
        private static final class Copy {
            int sendDepth;
            int receiveDepth;
            UnaryOperator<QueuePairConfig> configure;
            Handshake offer;
            List<Grant> grants;
            RegisteredBuffer receiveRing;
            int receiveSlotBytes;
            IdleStrategy polling;
            CompletionHandler handler;
            int connectAttempts;
            Duration retryInterval;
            Duration timeout;

            Copy(Options o) {
                sendDepth = o.sendDepth;
                receiveDepth = o.receiveDepth;
                configure = o.configure;
                offer = o.offer;
                grants = o.grants;
                receiveRing = o.receiveRing;
                receiveSlotBytes = o.receiveSlotBytes;
                polling = o.polling;
                handler = o.handler;
                connectAttempts = o.connectAttempts;
                retryInterval = o.retryInterval;
                timeout = o.timeout;
            }

            Options build() {
                return new Options(sendDepth, receiveDepth, configure, offer, grants, receiveRing, receiveSlotBytes,
                        polling, handler, connectAttempts, retryInterval, timeout);
            }
        }

        private Options with(java.util.function.Consumer<Copy> change) {
            Copy c = new Copy(this);
            change.accept(c);
            return c.build();
        }

        /**
         * Returns a copy with other queue depths.
         *
         * @param send    send depth
         * @param receive receive depth
         * @return the copy
         */
        public Options depth(int send, int receive) {
            return with(c -> {
                c.sendDepth = send;
                c.receiveDepth = receive;
            });
        }

        /**
         * Returns a copy that tells the peer {@code handshake}. On a server that isolates its
         * connections ({@link Isolation#WINDOWS}, the default) the handshake carries bytes only:
         * memory is opened through {@link #grant(RegisteredBuffer, Access...)}.
         *
         * @param handshake buffers and bytes for the peer
         * @return the copy
         */
        public Options offer(Handshake handshake) {
            return with(c -> c.offer = handshake);
        }

        /**
         * Returns a copy whose accepted connections each get a memory window of their own over the
         * whole of {@code buffer}, with {@code rights}: what one connection's peer is given, no other
         * connection reaches, and the window ends with the connection. The accepting side binds the
         * window once the connection is established, then sends a ready message the client's
         * {@link Connection#connect} waits for: when connect returns, the window works. Only the
         * accepting side grants: a client offers its buffers with {@link #offer}.
         *
         * @param buffer a buffer of the server's protection domain
         * @param rights what the peer may do in it, at least one
         * @return the copy
         */
        public Options grant(RegisteredBuffer buffer, Access... rights) {
            return grant(new Grant(buffer, 0, buffer.length(), rightsOf(rights)));
        }

        /**
         * Returns a copy with one more {@link Grant}: a window over part of a buffer. On Soft-RoCE
         * the device checks a peer's range against the whole buffer, not the window (see
         * {@link io.jverbs.MemoryWindow}): against untrusted peers grant whole buffers there.
         *
         * @param grant the range and its rights
         * @return the copy
         */
        public Options grant(Grant grant) {
            Objects.requireNonNull(grant, "grant");
            return with(c -> {
                List<Grant> all = new java.util.ArrayList<>(c.grants);
                all.add(grant);
                c.grants = all;
            });
        }

        /**
         * Returns a copy that posts a receive per slot of {@code ring} before the peer can send.
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
            return with(c -> {
                c.receiveRing = ring;
                c.receiveSlotBytes = slotBytes;
            });
        }

        /**
         * Returns a copy whose connection runs a {@link Poller} with {@code idle}.
         *
         * @param idle    the idle strategy
         * @param handler receives zero-allocation completions, or null
         * @return the copy
         */
        public Options polling(IdleStrategy idle, CompletionHandler handler) {
            Objects.requireNonNull(idle);
            return with(c -> {
                c.polling = idle;
                c.handler = handler;
            });
        }

        /**
         * Returns a copy whose connection has no poller: the caller polls
         * {@link Connection#completionQueue()} (futures complete in that call).
         *
         * @return the copy
         */
        public Options callerPolls() {
            return with(c -> {
                c.polling = null;
                c.handler = null;
            });
        }

        /**
         * Returns a copy that retries a refused connect.
         *
         * @param attempts at least 1
         * @param interval the pause between two attempts
         * @return the copy
         */
        public Options retry(int attempts, Duration interval) {
            return with(c -> {
                c.connectAttempts = attempts;
                c.retryInterval = interval;
            });
        }

        /**
         * Returns a copy with another time limit.
         *
         * @param limit the most one attempt or accept may take
         * @return the copy
         */
        public Options timeout(Duration limit) {
            return with(c -> c.timeout = limit);
        }

        /**
         * Returns a copy that adjusts the queue pair's config.
         *
         * @param adjust applied to {@code QueuePairConfig.rc(cq).withDepth(send, receive)}
         * @return the copy
         */
        public Options configure(UnaryOperator<QueuePairConfig> adjust) {
            return with(c -> c.configure = adjust);
        }

        private static Set<Access> rightsOf(Access... rights) {
            return rights.length == 0 ? Set.of() : java.util.EnumSet.of(rights[0], rights);
        }
    }

    /** How a server keeps its clients' memory apart. */
    public enum Isolation {
        /**
         * Each connection reaches only what was granted to it: the server's protection domain is
         * restricted to windows ({@link ProtectionDomain#windowsOnly()}), so no buffer of it has
         * an rkey of its own that a peer could guess, and each {@link Options#grant} is a type-2
         * window bound on that connection's queue pair alone, with exactly the granted rights,
         * gone when the connection closes. Needs a device with type-2 windows (rxe on Linux 6.1
         * and 6.12, ConnectX); elsewhere {@link Connection#listen} refuses it.
         */
        WINDOWS,
        /**
         * Every connection shares the protection domain: an rkey offered to one client (a buffer's
         * own, {@link Handshake#offering}) reaches every queue pair of the domain, and so does any
         * buffer registered there with remote rights, offered or not. A client that guesses the
         * rkeys of the server's buffers (on rxe the region's index and one random byte) reaches
         * them. Choose it only when every client is trusted, or the device has no windows.
         */
        SHARED_DOMAIN
    }

    /**
     * What a server admits, and how it keeps clients apart. Requests beyond a limit are rejected
     * at once with the reason, which the client's {@link RdmaCmException} quotes
     * ({@link RdmaCmException.Reason#REFUSED}).
     *
     * @param isolation               how connections' memory is kept apart (default {@link Isolation#WINDOWS})
     * @param maxConnections          live connections at most, handshakes under way included (default 1024)
     * @param maxConnectionsPerSource of those, from one IP address (default 256)
     * @param maxHandshakes           handshakes under way at once (default 64)
     * @param maxHandshakesPerSource  of those, from one IP address (default 16)
     * @param handshakeTimeout        the most a client may take between the server's reply and its
     *                                last step; a request that takes longer is dropped and its
     *                                resources freed (default 2 s)
     * @param backlog                 connection requests the kernel queues before the server takes
     *                                them ({@code rdma_listen}'s backlog, default 256)
     */
    public record Policy(Isolation isolation, int maxConnections, int maxConnectionsPerSource, int maxHandshakes,
                         int maxHandshakesPerSource, Duration handshakeTimeout, int backlog) {
        /**
         * Validates.
         *
         * @throws IllegalArgumentException when a number is below 1 or a per-source limit exceeds its total
         * @throws NullPointerException     when {@code isolation} or {@code handshakeTimeout} is null
         */
        public Policy {
            Objects.requireNonNull(isolation, "isolation");
            Objects.requireNonNull(handshakeTimeout, "handshakeTimeout");
            if (maxConnections < 1 || maxConnectionsPerSource < 1 || maxHandshakes < 1 || maxHandshakesPerSource < 1
                    || backlog < 1) {
                throw new IllegalArgumentException("limits are at least 1: " + maxConnections + ", "
                        + maxConnectionsPerSource + ", " + maxHandshakes + ", " + maxHandshakesPerSource + ", backlog "
                        + backlog);
            }
            if (maxConnectionsPerSource > maxConnections || maxHandshakesPerSource > maxHandshakes) {
                throw new IllegalArgumentException("a per-source limit exceeds its total: " + maxConnectionsPerSource
                        + " of " + maxConnections + " connections, " + maxHandshakesPerSource + " of " + maxHandshakes
                        + " handshakes");
            }
            if (handshakeTimeout.isNegative() || handshakeTimeout.isZero()) {
                throw new IllegalArgumentException("handshakeTimeout must be positive");
            }
        }

        /**
         * The defaults: windows, 1024 connections (256 per source), 64 handshakes under way (16
         * per source), 2 s per handshake, a backlog of 256.
         *
         * @return the defaults
         */
        public static Policy defaults() {
            return new Policy(Isolation.WINDOWS, 1024, 256, 64, 16, Duration.ofSeconds(2), 256);
        }

        /**
         * Returns a copy with another isolation.
         *
         * @param how the isolation
         * @return the copy
         */
        public Policy isolation(Isolation how) {
            return new Policy(how, maxConnections, maxConnectionsPerSource, maxHandshakes, maxHandshakesPerSource,
                    handshakeTimeout, backlog);
        }

        /**
         * Returns a copy with other connection limits.
         *
         * @param total     live connections at most
         * @param perSource of those from one IP address
         * @return the copy
         */
        public Policy connections(int total, int perSource) {
            return new Policy(isolation, total, perSource, maxHandshakes, maxHandshakesPerSource, handshakeTimeout,
                    backlog);
        }

        /**
         * Returns a copy with other handshake limits.
         *
         * @param total     handshakes under way at most
         * @param perSource of those from one IP address
         * @param timeout   the most one handshake may take after the reply
         * @return the copy
         */
        public Policy handshakes(int total, int perSource, Duration timeout) {
            return new Policy(isolation, maxConnections, maxConnectionsPerSource, total, perSource, timeout, backlog);
        }

        /**
         * Returns a copy with another listen backlog.
         *
         * @param requests requests the kernel queues
         * @return the copy
         */
        public Policy backlog(int requests) {
            return new Policy(isolation, maxConnections, maxConnectionsPerSource, maxHandshakes, maxHandshakesPerSource,
                    handshakeTimeout, requests);
        }
    }

    /**
     * A queue pair on a completion queue of its own; once the connection is under way, the ring's
     * receives posted (the ring claimed for it) and a poller if asked.
     */
    private record Parts(CompletionQueue cq, QueuePair qp, Poller poller, RegisteredBuffer ring, RegisteredBuffer ready) {
        /** The queue and the queue pair; on any failure nothing is left made. */
        static Parts open(ProtectionDomain pd, Options options) {
            CompletionQueue cq = pd.context().createCompletionQueue(options.sendDepth() + options.receiveDepth());
            try {
                QueuePair qp = pd.createQueuePair(options.configure().apply(QueuePairConfig.rc(cq)
                        .withDepth(options.sendDepth(), options.receiveDepth())));
                return new Parts(cq, qp, null, null, null);
            } catch (RuntimeException | Error e) {
                cq.close();
                throw e;
            }
        }

        /**
         * Claims the options' ring and posts its receives, then starts the poller; on failure
         * this is closed.
         */
        Parts serve(Options options) {
            return withRing(options).withPoller(options);
        }

        /** Claims the options' ring and posts its receives; on failure this is closed. */
        Parts withRing(Options options) {
            RegisteredBuffer claimed = null;
            try {
                claimed = claimRing(options);
                postRing(qp, options);
                return new Parts(cq, qp, poller, claimed, ready);
            } catch (RuntimeException | Error e) {
                new Parts(cq, qp, poller, claimed, ready).close();
                throw e;
            }
        }

        /** Starts the options' poller, if any; on failure this is closed. */
        Parts withPoller(Options options) {
            try {
                Poller started = options.polling() == null ? null
                        : Poller.start(options.handler(), options.polling(), cq);
                return new Parts(cq, qp, started, ring, ready);
            } catch (RuntimeException | Error e) {
                close();
                throw e;
            }
        }

        /** With the small buffer of the ready message (see {@link Connection}). */
        Parts withReady(RegisteredBuffer buffer) {
            return new Parts(cq, qp, poller, ring, buffer);
        }

        /**
         * Stops the poller, closes the queue (and with it the queue pair and its windows) and
         * releases the ring and the ready message's buffer. Bounded: a handler still running is logged, not thrown, and the queue
         * waits for it at most 1 s, then leaves its destroy to that poll.
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
                    if (ready != null) {
                        ready.close();
                    }
                }
            }
        }
    }

    /** Refuses a ring that could not serve a connection made with {@code options}, claiming nothing. */
    private static void requireRingUsable(Options options) {
        RegisteredBuffer ring = options.receiveRing();
        if (ring != null && options.polling() != null && options.handler() == null) {
            throw new IllegalArgumentException("a receive ring with a Poller but no handler: the ring's messages would"
                    + " be dropped unseen and its slots never posted again; give the Poller a handler"
                    + " (Options.polling(idle, handler)), or poll the connection's queue yourself");
        }
        if (ring != null) {
            synchronized (RINGS_IN_USE) {
                if (RINGS_IN_USE.contains(ring)) {
                    throw ringInUse(ring);
                }
            }
        }
    }

    private static IllegalStateException ringInUse(RegisteredBuffer ring) {
        return new IllegalStateException("the receive ring " + ring + " is posted for another live"
                + " connection: two connections' messages would land in the same slots; give each"
                + " connection a ring of its own (Server.accept(timeout, options.receiveRing(...)))"
                + " or close the other connection first");
    }

    /**
     * Claims the options' ring for one connection; the caller releases it when that connection
     * closes or is not made.
     */
    private static RegisteredBuffer claimRing(Options options) {
        requireRingUsable(options);
        RegisteredBuffer ring = options.receiveRing();
        if (ring != null) {
            synchronized (RINGS_IN_USE) {
                if (!RINGS_IN_USE.add(ring)) {
                    throw ringInUse(ring);
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
     * offer; a refusal (nothing listens there yet, or a limit of the server) is retried as the
     * options say. Each attempt keeps the options' timeout, the first use of the library and
     * of the device included.
     *
     * @param pd      the protection domain (its buffers are what the connection may post)
     * @param host    the listener's IPv4 address or name
     * @param port    its port
     * @param options how
     * @return the connection, with the peer's handshake
     * @throws RdmaCmException when the peer refuses on every attempt (a server's limit: the
     *         message quotes its reason), is unreachable or silent, or the thread is interrupted
     * @throws IllegalArgumentException when the offer does not fit a connection request, offers rights
     *         the queue pair does not give peers ({@link QueuePair#remoteAccess()}), or the options
     *         grant windows (only the accepting side grants)
     */
    public static Connection connect(ProtectionDomain pd, String host, int port, Options options) {
        options.offer().requireFits(Handshake.MAX_CONNECT_BYTES, "a connection request"); // before anything is made
        if (!options.grants().isEmpty()) {
            throw new IllegalArgumentException("a connecting side cannot grant windows (Options.grant): it knows its"
                    + " queue pair's peer only once connected; offer its buffers (Options.offer), or bind a window"
                    + " on the connection (QueuePair.openWindowAsync) and send its RemoteBuffer");
        }
        requireRingUsable(options);
        for (int attempt = 1; ; attempt++) {
            // the attempt's time runs from here: making its queues and the first use of the
            // library and the device count; the wait ends a little early, leaving the failed
            // attempt's teardown (its queue pair reset) room within the timeout
            long timeoutNanos = options.timeout().toNanos();
            long deadline = System.nanoTime() + timeoutNanos - Math.min(timeoutNanos / 20, TEARDOWN_NANOS);
            // a queue pair of its own for each attempt: nothing of a refused request (its queue
            // pair number, which the listener's kernel may remember) is carried into the next
            Parts[] made = {Parts.open(pd, options)};
            @SuppressWarnings("unchecked")
            CompletableFuture<io.jverbs.WorkResult>[] ready = new CompletableFuture[1];
            try {
                CmConnection cm = RdmaCm.connect(made[0].qp(), host, port, deadline, options.offer(), reply -> {
                    // before the queue pair takes a request: the ready message's receive first
                    // (the peer's first Send lands in the first receive posted), then the ring
                    if (reply.readyFollows()) {
                        made[0] = made[0].withReady(pd.allocate(READY_BYTES));
                        ready[0] = made[0].qp().async().receive(made[0].ready(), 0, READY_BYTES);
                    }
                    made[0] = made[0].withRing(options);
                });
                try {
                    if (ready[0] != null) {
                        awaitReady(made[0], ready[0], deadline, host + ":" + port);
                    }
                    made[0] = made[0].withPoller(options);
                } catch (RuntimeException | Error e) {
                    cm.close();
                    throw e;
                }
                return new Connection(cm, made[0], null, null);
            } catch (RdmaCmException e) {
                closeLater(made[0]); // the attempt's bound holds: its queues are freed off this thread
                if (!e.isRefusal() || attempt >= options.connectAttempts()) {
                    throw e;
                }
            } catch (RuntimeException | Error e) {
                made[0].close();
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

    /** Frees the queues of failed connect attempts, so that a connect returns when its time is up. */
    private static final java.util.concurrent.Executor CLEANER = java.util.concurrent.Executors.newSingleThreadExecutor(
            r -> Thread.ofPlatform().name("jverbs-connect-cleanup").daemon(true).unstarted(r));

    private static void closeLater(Parts parts) {
        // the queue pair answers nothing any more (RdmaCm reset it): the ring may serve the next attempt
        releaseRing(parts.ring());
        try {
            CLEANER.execute(parts::close);
        } catch (RuntimeException rejected) {
            parts.close();
        }
    }

    /** The most of a connect attempt's time kept for tearing down a failed one. */
    private static final long TEARDOWN_NANOS = 250_000_000L;

    /** The bytes of the ready message's receive. */
    private static final int READY_BYTES = 64;

    /**
     * Waits, polling the connection's own queue (no poller runs yet), for the accepting side's
     * ready message: it comes once the peer's queue pair takes requests and its windows are bound.
     */
    private static void awaitReady(Parts parts, CompletableFuture<io.jverbs.WorkResult> ready, long deadline,
                                   String peer) {
        while (!ready.isDone()) {
            if (parts.cq().poll(null, 1) == 0) {
                if (System.nanoTime() - deadline >= 0) {
                    throw new RdmaCmException("connected to " + peer + ", but it did not say it was ready in time",
                            RdmaCmException.Reason.TIMEOUT, Errno.ETIMEDOUT);
                }
                if (Thread.currentThread().isInterrupted()) {
                    throw new RdmaCmException("interrupted while waiting for " + peer + " to say it was ready",
                            RdmaCmException.Reason.INTERRUPTED, Errno.EINTR);
                }
                Thread.onSpinWait();
            }
        }
        if (ready.isCompletedExceptionally()) {
            Throwable t = ready.exceptionNow();
            throw new RdmaCmException("connected to " + peer + ", but its ready message failed: " + t,
                    RdmaCmException.Reason.DISCONNECTED, 0);
        }
    }

    /**
     * Listens on {@code host:port} for connections made as {@link #connect} makes them, with the
     * {@link Policy#defaults()}: each connection isolated by windows, flood limits.
     *
     * @param pd      the protection domain of the connections' queue pairs; restricted to windows
     *                ({@link ProtectionDomain#windowsOnly()})
     * @param host    the local IPv4 address to bind (an RDMA device's interface)
     * @param port    the port, or 0 for a free one ({@link Server#port()})
     * @param options how each accepted connection is made (its offer and grants are the reply's)
     * @return the server
     * @throws RdmaCmException when binding or listening fails (EADDRINUSE names the address and port)
     * @throws IllegalStateException when a buffer of {@code pd} has remote rights of its own (any
     *         client could reach it by its rkey): see {@link Isolation}
     * @throws UnsupportedOperationException when the device has no type-2 memory windows
     * @throws IllegalArgumentException when the options offer buffers instead of granting them
     */
    public static Server listen(ProtectionDomain pd, String host, int port, Options options) {
        return listen(pd, host, port, options, Policy.defaults());
    }

    /**
     * Listens on {@code host:port} with the given policy.
     *
     * @param pd      the protection domain of the connections' queue pairs
     * @param host    the local IPv4 address to bind (an RDMA device's interface)
     * @param port    the port, or 0 for a free one ({@link Server#port()})
     * @param options how each accepted connection is made (its offer and grants are the reply's)
     * @param policy  isolation and limits
     * @return the server
     * @throws RdmaCmException when binding or listening fails (EADDRINUSE names the address and port)
     * @throws IllegalStateException with {@link Isolation#WINDOWS}, when a buffer of {@code pd}
     *         has remote rights of its own
     * @throws UnsupportedOperationException with {@link Isolation#WINDOWS}, when the device has no
     *         type-2 memory windows
     * @throws IllegalArgumentException with {@link Isolation#WINDOWS}, when the options offer buffers
     */
    public static Server listen(ProtectionDomain pd, String host, int port, Options options, Policy policy) {
        Objects.requireNonNull(policy, "policy");
        if (policy.isolation() == Isolation.WINDOWS) {
            Context.DeviceAttributes device = pd.context().deviceAttributes();
            if (!device.typeTwoWindows() || device.maxMw() == 0) {
                throw new UnsupportedOperationException("device " + pd.context().name() + " has no type-2 memory"
                        + " windows (IBV_DEVICE_MEM_WINDOW_TYPE_2B, max_mw): a server cannot keep its clients'"
                        + " memory apart on it. Listen with Policy.isolation(Isolation.SHARED_DOMAIN) only if every"
                        + " client is trusted: each can reach every buffer of the domain that has remote rights");
            }
            requireNoBuffers(options);
            pd.windowsOnly();
        }
        return new Server(pd, RdmaCm.listen(host, port, policy.backlog()), options, policy);
    }

    private static void requireNoBuffers(Options options) {
        if (!options.offer().buffers().isEmpty()) {
            throw new IllegalArgumentException("a server with Isolation.WINDOWS offers no buffer's own rkey (it would"
                    + " reach every connection): grant the buffers (Options.grant), one window per connection");
        }
    }

    /**
     * Accepts {@link Connection}s, as a {@link java.net.ServerSocket} accepts sockets. Several
     * handshakes run at once while an accept waits, within the {@link Policy}'s limits, so a
     * flood of requests that never complete does not keep other clients out: a request beyond a
     * limit is rejected at once with the reason, and one whose client does not finish within the
     * policy's handshake timeout is dropped. A connection's queue pair takes no request of the
     * peer and grants no remote access until the peer's last handshake step arrives
     * (ESTABLISHED); then the ring's receives are posted, the queue pair moved on, the windows
     * bound, and a one-byte ready message sent, which {@link Connection#connect} waits for (so a
     * client never sends before this side takes it).
     *
     * <p>Handshakes advance while an accept waits; requests that arrive between accepts wait in
     * the kernel's backlog. Accepts from several threads take turns; {@link #close()} ends a
     * waiting one within 100 ms. Connections already accepted live on.
     */
    public static final class Server implements AutoCloseable {
        private final ProtectionDomain pd;
        private final RdmaCm.Listener listener;
        private final Options options;
        private final Policy policy;
        /** Handshakes under way by their rdma_cm id's address (guarded by the listener's accept turn). */
        private final java.util.Map<Long, Pending> pending = new java.util.HashMap<>();
        /** Per source address: {handshakes under way, live connections} (guarded by itself). */
        private final java.util.Map<java.net.InetAddress, int[]> sources = new java.util.HashMap<>();
        /** Live connections accepted and not closed (guarded by {@link #sources}). */
        private int live;
        /** Parts made before a wait, so that what the options cannot do is refused before any client comes. */
        private Parts spare;
        private Options spareFor;

        /** A request replied to, waiting for the client's last step. */
        private record Pending(MemorySegment id, Parts parts, List<io.jverbs.MemoryWindow> windows, byte[] request,
                               InetSocketAddress from, long deadline) {
        }

        private Server(ProtectionDomain pd, RdmaCm.Listener listener, Options options, Policy policy) {
            this.pd = pd;
            this.listener = listener;
            this.options = options;
            this.policy = policy;
            listener.beforeDestroy(this::dropAll);
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
         * Returns the server's policy.
         *
         * @return isolation and limits
         */
        public Policy policy() {
            return policy;
        }

        /**
         * Returns how many connections this server accepted that are not closed yet.
         *
         * @return live connections
         */
        public int liveConnections() {
            synchronized (sources) {
                return live;
            }
        }

        /**
         * Waits for one connection: its own completion queue and queue pair, its windows, the ring's
         * receives posted, the reply carrying the options' offer and grants. What the options
         * cannot do (an offer the queue pair cannot honour, a ring in use) is refused before any
         * client comes.
         *
         * @param timeout the most to wait for a client whose handshake completes; handshakes still
         *                under way when it ends carry on in the next accept
         * @return the connection, with the client's handshake
         * @throws RdmaCmException when no client completes a handshake in time (TIMEOUT), or the
         *         thread is interrupted (INTERRUPTED, its flag kept)
         * @throws IllegalStateException when the server is closed, or the options' receive ring is
         *                               posted for another live connection
         * @throws IllegalArgumentException when the offer does not fit the reply, or offers rights the
         *         queue pair does not give peers ({@link QueuePair#remoteAccess()})
         */
        public Connection accept(Duration timeout) {
            return accept(timeout, options);
        }

        /**
         * Waits for one connection made as {@code options} say instead of the server's own (a
         * receive ring of its own for each connection, say). The queues of a connection are made
         * when its request arrives, with the options of the accept waiting then; its ring and
         * poller are those of the accept that returns it.
         *
         * @param timeout the most to wait for a client whose handshake completes
         * @param options how this connection is made (its offer and grants are the reply's)
         * @return the connection, with the client's handshake
         * @throws RdmaCmException when no client completes a handshake in time, or the thread is interrupted
         * @throws IllegalStateException when the server is closed, or the options' receive ring is
         *                               posted for another live connection
         * @throws IllegalArgumentException when the offer does not fit the reply, offers rights the
         *         queue pair does not give peers, or offers buffers on a server with {@link Isolation#WINDOWS}
         */
        public Connection accept(Duration timeout, Options options) {
            Objects.requireNonNull(options, "options");
            options.offer().requireFits(Handshake.MAX_ACCEPT_BYTES - options.grants().size() * io.jverbs.RemoteBuffer.BYTES,
                    "the reply to a connection request, with " + options.grants().size() + " granted windows,");
            if (policy.isolation() == Isolation.WINDOWS) {
                requireNoBuffers(options);
            }
            requireRingUsable(options);
            long deadline = System.nanoTime() + timeout.toNanos();
            listener.enterTurn(deadline);
            try {
                if (spare == null || !options.equals(spareFor)) {
                    closeSpare();
                    spare = Parts.open(pd, options);
                    spareFor = options;
                }
                check(spare, options);
                return pump(deadline, options);
            } catch (RuntimeException | Error e) {
                if (listener.isClosed()) {
                    closeSpare();
                }
                throw e;
            } finally {
                listener.leaveTurn();
            }
        }

        /** Refuses what {@code parts}' queue pair cannot give a peer, as the reply would promise it. */
        private void check(Parts parts, Options options) {
            options.offer().requireGrantedBy(parts.qp());
            QueuePairConfig config = parts.qp().config();
            for (Grant g : options.grants()) {
                if (g.buffer().protectionDomain() != pd) {
                    throw new IllegalArgumentException("a grant of " + g.buffer() + ", which the server's queue pairs"
                            + " cannot use: it is registered in another protection domain than the server's " + pd);
                }
                if (config.remoteAccess() != null && !config.remoteAccess().containsAll(g.rights())) {
                    throw new IllegalArgumentException("a grant of " + g.rights() + " over " + g.buffer() + ", but the"
                            + " connections' queue pairs let a peer do only " + config.remoteAccess()
                            + " (QueuePairConfig.withRemoteAccess): the peer's requests would fail");
                }
            }
        }

        private void closeSpare() {
            if (spare != null) {
                Parts p = spare;
                spare = null;
                spareFor = null;
                p.close();
            }
        }

        /** Runs handshakes until one completes within the deadline; holds the accept turn. */
        private Connection pump(long deadline, Options options) {
            RdmaCm.Channel channel = listener.events();
            while (true) {
                // what is queued already comes first (a client's last step among it), then the
                // handshakes past their time go, then the wait
                RdmaCm.Channel.Event e = channel.next(System.nanoTime());
                if (e == null) {
                    expire(System.nanoTime());
                    long wake = deadline;
                    for (Pending p : pending.values()) {
                        wake = Math.min(wake, p.deadline());
                    }
                    e = channel.next(wake);
                }
                if (e == null) {
                    if (System.nanoTime() - deadline >= 0) {
                        throw new RdmaCmException("no client completed a handshake with port " + port()
                                + " before the accept's timeout" + (pending.isEmpty() ? ""
                                : " (" + pending.size() + " under way carry on in the next accept)"),
                                RdmaCmException.Reason.TIMEOUT, Errno.ETIMEDOUT);
                    }
                    continue;
                }
                if (e.type() == rdma_cma_h.RDMA_CM_EVENT_CONNECT_REQUEST) {
                    onRequest(e, options);
                    continue;
                }
                Pending p = pending.get(e.id().address());
                if (p == null) {
                    if (e.id().address() == listener.id().address()
                            && e.type() == rdma_cma_h.RDMA_CM_EVENT_DEVICE_REMOVAL) {
                        throw new RdmaCmException("the device of port " + port() + " was removed", e.type(), 0);
                    }
                    continue; // an id dropped before its event was read
                }
                if (e.type() == rdma_cma_h.RDMA_CM_EVENT_ESTABLISHED) {
                    Connection c = established(p, options);
                    if (c != null) {
                        return c;
                    }
                } else {
                    drop(p); // the client gave up, or its node did not answer the reply
                }
            }
        }

        /** A connection request: rejected with the reason when over a limit, else replied to. */
        private void onRequest(RdmaCm.Channel.Event e, Options options) {
            MemorySegment child = e.id();
            InetSocketAddress from = RdmaCm.address(child, true);
            java.net.InetAddress source = from == null ? null : from.getAddress();
            String refusal = admission(source);
            if (refusal != null) {
                listener.reject(child, refusal);
                return;
            }
            Parts parts = spare != null && options.equals(spareFor) ? spare : null;
            spare = null;
            spareFor = null;
            List<io.jverbs.MemoryWindow> windows = new java.util.ArrayList<>();
            boolean replied = false;
            try {
                if (parts == null) {
                    parts = Parts.open(pd, options);
                }
                RdmaCm.requireSameDevice(child, pd.context().name());
                java.util.List<io.jverbs.RemoteBuffer> told = new java.util.ArrayList<>();
                for (Grant g : options.grants()) {
                    io.jverbs.MemoryWindow w = io.jverbs.MemoryWindow.prepare(parts.qp(), g.buffer(), g.offset(), g.length(),
                            g.rights().toArray(Access[]::new));
                    windows.add(w);
                    told.add(w.remote());
                }
                told.addAll(options.offer().buffers());
                Handshake reply = Handshake.of(options.offer().data(), told.toArray(io.jverbs.RemoteBuffer[]::new))
                        .withReadyFollows();
                RdmaCm.replyWithoutRights(child, parts.qp(), reply.encode(Handshake.MAX_ACCEPT_BYTES,
                        "the reply to a connection request"));
                replied = true;
                pending.put(child.address(), new Pending(child, parts, windows, e.privateData(), from,
                        System.nanoTime() + policy.handshakeTimeout().toNanos()));
                count(source, 0, 1);
            } catch (RuntimeException | Error failure) {
                if (parts != null) {
                    Core.abandonConnect(parts.qp());
                    parts.close(); // its windows with its queue pair
                }
                if (replied) {
                    listener.dropRequest(child);
                } else {
                    listener.reject(child, "the server could not take the request: " + failure.getMessage());
                }
                if (failure instanceof IllegalArgumentException || failure instanceof IllegalStateException
                        || failure instanceof Error) {
                    throw failure; // the options or the server are at fault: the caller hears it
                }
                System.getLogger("io.jverbs").log(System.Logger.Level.WARNING, "a connection request to port "
                        + port() + " from " + from + " failed", failure);
            }
        }

        /** Why a request from {@code source} is refused now, or null. */
        private String admission(java.net.InetAddress source) {
            if (listener.isClosed()) {
                return "not listening any more";
            }
            if (pending.size() >= policy.maxHandshakes()) {
                return policy.maxHandshakes() + " handshakes are under way (Connection.Policy.handshakes)";
            }
            synchronized (sources) {
                if (live + pending.size() >= policy.maxConnections()) {
                    return "it serves " + policy.maxConnections() + " connections (Connection.Policy.connections)";
                }
                int[] n = source == null ? null : sources.get(source);
                if (n != null && n[0] >= policy.maxHandshakesPerSource()) {
                    return policy.maxHandshakesPerSource() + " handshakes from " + source.getHostAddress()
                            + " are under way (Connection.Policy.handshakes)";
                }
                if (n != null && n[0] + n[1] >= policy.maxConnectionsPerSource()) {
                    return "it serves " + policy.maxConnectionsPerSource() + " connections from "
                            + source.getHostAddress() + " (Connection.Policy.connections)";
                }
            }
            return null;
        }

        private void count(java.net.InetAddress source, int liveDelta, int handshakeDelta) {
            synchronized (sources) {
                live += liveDelta;
                if (source == null) {
                    return;
                }
                int[] n = sources.computeIfAbsent(source, a -> new int[2]);
                n[0] += handshakeDelta;
                n[1] += liveDelta;
                if (n[0] == 0 && n[1] == 0) {
                    sources.remove(source);
                }
            }
        }

        /** The client's last step came: rights, windows, ring and poller, and the connection. */
        private Connection established(Pending p, Options options) {
            pending.remove(p.id().address());
            java.net.InetAddress source = p.from() == null ? null : p.from().getAddress();
            Parts parts = p.parts();
            RdmaCm.Channel own = null;
            try {
                parts = parts.serve(options); // the ring's receives, before the queue pair takes a request
                RdmaCm.takeRequests(p.id(), parts.qp());
                for (io.jverbs.MemoryWindow w : p.windows()) {
                    Core.bindQuietly(w); // on the send queue before anything the caller posts; a failure shows on the queue pair
                }
                // after the binds on the same send queue: the client hears it once its windows work
                parts = parts.withReady(pd.allocate(READY_BYTES));
                Core.sendQuietly(parts.qp(), parts.ready(), 1);
                own = RdmaCm.Channel.create();
                RdmaCm.check("rdma_migrate_id", rdma_cma_h.rdma_migrate_id(p.id(), own.channel));
                CmConnection cm = new CmConnection(parts.qp(), p.id(), own, Handshake.decode(p.request()));
                count(source, 1, -1);
                return new Connection(cm, parts, this, source);
            } catch (RuntimeException | Error failure) {
                count(source, 0, -1);
                Core.abandonConnect(parts.qp());
                parts.close();
                if (own != null) {
                    own.close();
                }
                listener.dropRequest(p.id());
                System.getLogger("io.jverbs").log(System.Logger.Level.WARNING, "a connection from " + p.from()
                        + " to port " + port() + " failed as it was established", failure);
                if (failure instanceof IllegalStateException && listener.isClosed()) {
                    throw failure;
                }
                return null;
            }
        }

        /** Drops the handshakes whose client did not finish in time. */
        private void expire(long now) {
            if (pending.isEmpty()) {
                return;
            }
            for (Pending p : List.copyOf(pending.values())) {
                if (now - p.deadline() >= 0) {
                    drop(p);
                }
            }
        }

        /** Frees a handshake that will not complete: its queue pair answers nothing more, its id is destroyed. */
        private void drop(Pending p) {
            pending.remove(p.id().address());
            count(p.from() == null ? null : p.from().getAddress(), 0, -1);
            try {
                Core.abandonConnect(p.parts().qp());
            } finally {
                p.parts().close(); // its windows with its queue pair
                listener.dropRequest(p.id());
            }
        }

        /** The listener goes: every handshake under way is dropped, the spare freed (under the accept turn). */
        private void dropAll() {
            for (Pending p : List.copyOf(pending.values())) {
                drop(p);
            }
            closeSpare();
        }

        /** A connection of this server closed. */
        void released(java.net.InetAddress source) {
            count(source, -1, 0);
        }

        /** Stops listening; handshakes under way are dropped. Idempotent. */
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
     * still running (blocked in user code) is waited for at most 2 s (1 s for the poller to stop,
     * 1 s for the queue's poll to end), then logged, and the native queues are destroyed by that
     * poll when the handler returns; with the disconnect, such a close took about 3.4 s on the
     * emulated rig. Its receive ring may then be given to another connection.
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
            closeParts();
            throw e;
        }
        closeParts();
    }

    private void closeParts() {
        try {
            parts.close();
        } finally {
            if (server != null && released.compareAndSet(false, true)) {
                server.released(source);
            }
        }
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
