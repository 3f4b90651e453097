package io.jverbs.cm;

import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.DatagramQueuePair;
import io.jverbs.ibverbs.Errno;
import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.raw.ibv_ah_attr;
import io.jverbs.ibverbs.raw.ibv_context;
import io.jverbs.ibverbs.raw.ibv_global_route;
import io.jverbs.ibverbs.raw.ibv_qp_attr;
import io.jverbs.ibverbs.raw.verbs_h;
import io.jverbs.internal.Fds;
import io.jverbs.rdmacm.raw.rdma_addr;
import io.jverbs.rdmacm.raw.rdma_cm_event;
import io.jverbs.rdmacm.raw.rdma_cm_id;
import io.jverbs.rdmacm.raw.rdma_cma_h;
import io.jverbs.rdmacm.raw.rdma_conn_param;
import io.jverbs.rdmacm.raw.rdma_event_channel;
import io.jverbs.rdmacm.raw.rdma_route;
import io.jverbs.rdmacm.raw.rdma_ud_param;
import io.jverbs.rdmacm.raw.sockaddr_in;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;

/**
 * Connections through the RDMA connection manager (librdmacm): a {@link Listener} that accepts,
 * and {@link #connect} with a time limit. The queue pair is jverbs' own (made from the caller's
 * protection domain, on the context of the device the route goes through); rdma_cm resolves the
 * address and route, carries the handshake, moves the queue pair through INIT → RTR → RTS with
 * the attributes it computed, and reports the peer's disconnect ({@link CmConnection}).
 *
 * <p>Every wait is bounded: a refused, unreachable or silent peer is an exception naming the
 * rdma_cm event (REJECTED, UNREACHABLE, ADDR_ERROR, …) or a {@link TimeoutException} cause,
 * within the caller's timeout. A waiting call is interruptible: {@link Thread#interrupt()} ends it
 * within about 100 ms with an {@link RdmaCmException} whose errno is EINTR (the thread's interrupt
 * flag stays set). IPv4 only. Thread-safe (each call uses its own event channel).
 *
 * <p>Datagram (UD) queue pairs use rdma_cm's UDP port space: {@link #connectDatagram} resolves a
 * listener's datagram queue pair (its number, Q_Key and path) through a service-ID request
 * (SIDR), and {@link #listenDatagrams} with {@link Listener#acceptDatagram} answers such
 * requests. Nothing stays connected: the result is an address to send to. In that port space
 * every queue pair's Q_Key is {@link #UDP_QKEY}.
 */
public final class RdmaCm {
    private static final short AF_INET = 2;
    private static final short AF_INET6 = 10;
    /**
     * The Q_Key rdma_cm gives every datagram queue pair of its UDP port space
     * ({@code RDMA_UDP_QKEY}, 0x01234567): make a datagram queue pair with it to use
     * {@link #connectDatagram} or {@link Listener#acceptDatagram}.
     */
    public static final int UDP_QKEY = rdma_cma_h.RDMA_UDP_QKEY;

    private RdmaCm() {
    }

    /**
     * Connects a prepared queue pair to the listener at {@code host:port}.
     *
     * @param qp      a prepared queue pair on the device that routes to {@code host}
     * @param host    the peer's IPv4 address or name
     * @param port    the peer's rdma_cm port
     * @param timeout the most the whole connection may take
     * @return the connection; closing it disconnects and closes the queue pair
     * @throws RdmaCmException when the peer rejects, is unreachable, or does not answer in time, or
     *         the thread is interrupted while it waits (EINTR)
     * @throws IllegalStateException when the queue pair is not prepared
     * @throws IllegalArgumentException when the queue pair is not RC
     */
    public static CmConnection connect(QueuePair qp, String host, int port, Duration timeout) {
        return connect(qp, host, port, timeout, Handshake.empty());
    }

    /**
     * Connects a prepared queue pair to the listener at {@code host:port}, telling it
     * {@code offer} in the connection request; the listener's own handshake comes back with the
     * connection ({@link CmConnection#peerHandshake()}).
     *
     * @param qp      a prepared queue pair on the device that routes to {@code host}
     * @param host    the peer's IPv4 address or name
     * @param port    the peer's rdma_cm port
     * @param timeout the most the whole connection may take
     * @param offer   buffers and bytes for the listener (at most {@value Handshake#MAX_CONNECT_BYTES}
     *                bytes of private data in all)
     * @return the connection; closing it disconnects and closes the queue pair
     * @throws RdmaCmException when the peer rejects, is unreachable, or does not answer in time, or
     *         the thread is interrupted while it waits (EINTR)
     * @throws IllegalStateException when the queue pair is not prepared
     * @throws IllegalArgumentException when the queue pair is not RC, or the offer does not fit a
     *         connection request, offers memory that is not the queue pair's domain's, or offers
     *         rights the queue pair does not give peers ({@link QueuePair#remoteAccess()})
     */
    public static CmConnection connect(QueuePair qp, String host, int port, Duration timeout, Handshake offer) {
        return connect(qp, host, port, System.nanoTime() + timeout.toNanos(), offer);
    }

    /** {@link #connect(QueuePair, String, int, Duration, Handshake)} within a deadline ({@link System#nanoTime()}). */
    static CmConnection connect(QueuePair qp, String host, int port, long deadline, Handshake offer) {
        return connect(qp, host, port, deadline, offer, null);
    }

    /**
     * As {@link #connect(QueuePair, String, int, long, Handshake)}; {@code onReply}, when not null,
     * is given the listener's reply before the queue pair can take a request of the peer (receives
     * posted there are the first the peer's sends find).
     */
    static CmConnection connect(QueuePair qp, String host, int port, long deadline, Handshake offer,
                                java.util.function.Consumer<Handshake> onReply) {
        byte[] privateData = offer.encode(Handshake.MAX_CONNECT_BYTES, "a connection request");
        Core.requirePrepared(qp);
        requireReliable(qp);
        offer.requireGrantedBy(qp);
        Channel channel = Channel.create();
        MemorySegment id = MemorySegment.NULL;
        try (Arena arena = Arena.ofConfined()) {
            id = channel.createId();
            int tos = qp.config().route().trafficClass();
            if (tos != 0) { // the connection's type of service: rdma_cm puts it in the route it resolves
                MemorySegment value = arena.allocate(ValueLayout.JAVA_BYTE);
                value.set(ValueLayout.JAVA_BYTE, 0, (byte) tos);
                check("rdma_set_option(RDMA_OPTION_ID_TOS)", rdma_cma_h.rdma_set_option(id, rdma_cma_h.RDMA_OPTION_ID,
                        rdma_cma_h.RDMA_OPTION_ID_TOS, value, 1));
            }
            resolveRoute(channel, id, arena, host, port, deadline, Core.contextName(qp.config().sendQueue()));
            moveTo(id, qp, verbs_h.IBV_QPS_INIT);
            MemorySegment param = connParam(arena, qp, privateData);
            check("rdma_connect", rdma_cma_h.rdma_connect(id, param));
            Channel.Event reply = channel.expect(rdma_cma_h.RDMA_CM_EVENT_CONNECT_RESPONSE, deadline, host + ":" + port);
            Handshake theirs = Handshake.decode(reply.privateData());
            if (onReply != null) {
                onReply.accept(theirs);
            }
            moveTo(id, qp, verbs_h.IBV_QPS_RTR);
            moveTo(id, qp, verbs_h.IBV_QPS_RTS);
            check("rdma_establish", rdma_cma_h.rdma_establish(id));
            Core.markConnected(qp);
            return new CmConnection(qp, id, channel, theirs);
        } catch (RuntimeException | Error e) {
            Core.abandonConnect(qp); // the device may have moved it on: it must not answer the peer
            reap(id, channel);
            throw e;
        }
    }

    /**
     * Resolves the datagram queue pair of the listener at {@code host:port}
     * ({@link #listenDatagrams}) through rdma_cm's UDP port space: resolves the address and route,
     * sends a service-ID request naming {@code qp}, and returns what the listener answered.
     * Nothing stays connected; {@code qp} is not modified.
     *
     * @param qp      a datagram queue pair on the device that routes to {@code host}, with Q_Key {@link #UDP_QKEY}
     * @param host    the peer's IPv4 address or name
     * @param port    the peer's rdma_cm port (UDP port space)
     * @param timeout the most the whole resolution may take
     * @return the listener's datagram queue pair: its number, Q_Key, LID and GID (for {@link DatagramQueuePair#destination})
     * @throws RdmaCmException when the address does not resolve, nothing listens there ({@link RdmaCmException#isRefusal()}),
     *                         the listener refuses, the peer does not answer in time, or the route goes
     *                         through another device, port or GID index than the queue pair's (EINVAL, naming
     *                         both), or the thread is interrupted while it waits (EINTR)
     * @throws IllegalArgumentException when the queue pair's Q_Key is not {@link #UDP_QKEY}, the port is out
     *                                  of range or {@code host} is not an IPv4 address
     * @throws IllegalStateException when the queue pair is closed
     */
    public static DatagramQueuePair.Address connectDatagram(DatagramQueuePair qp, String host, int port, Duration timeout) {
        requireUdpQkey(qp);
        long deadline = System.nanoTime() + timeout.toNanos();
        Channel channel = Channel.create();
        MemorySegment id = MemorySegment.NULL;
        try (Arena arena = Arena.ofConfined()) {
            id = channel.createId(rdma_cma_h.RDMA_PS_UDP);
            resolveRoute(channel, id, arena, host, port, deadline, Core.deviceName(qp));
            MemorySegment param = arena.allocate(rdma_conn_param.LAYOUT);
            rdma_conn_param.qp_num(param, qp.number());
            check("rdma_connect", rdma_cma_h.rdma_connect(id, param));
            Channel.Event e = channel.expect(rdma_cma_h.RDMA_CM_EVENT_ESTABLISHED, deadline, host + ":" + port);
            MemorySegment ud = e.param();
            MemorySegment ah = rdma_ud_param.ah_attr(ud);
            int routePort = Byte.toUnsignedInt(ibv_ah_attr.port_num(ah));
            if (routePort != Core.portNumber(qp)) {
                throw new RdmaCmException("the route to " + host + " leaves through port " + routePort
                        + ", but the datagram queue pair is on port " + Core.portNumber(qp), 0, Errno.EINVAL);
            }
            byte[] gid = new byte[16]; // no routing header (InfiniBand within the subnet): the LID alone
            if (ibv_ah_attr.is_global(ah) != 0) {
                MemorySegment grh = ibv_ah_attr.grh(ah);
                int routeGid = Byte.toUnsignedInt(ibv_global_route.sgid_index(grh));
                if (routeGid != Core.gidIndex(qp)) {
                    throw new RdmaCmException("the route to " + host + " sends from GID index " + routeGid
                            + ", but the datagram queue pair sends from GID index " + Core.gidIndex(qp)
                            + ": make it with GID index " + routeGid, 0, Errno.EINVAL);
                }
                gid = ibv_global_route.dgid(grh).toArray(ValueLayout.JAVA_BYTE);
            }
            return new DatagramQueuePair.Address(rdma_ud_param.qp_num(ud), rdma_ud_param.qkey(ud),
                    Short.toUnsignedInt(ibv_ah_attr.dlid(ah)), gid);
        } finally {
            if (id.address() != 0) {
                rdma_cma_h.rdma_destroy_id(id);
            }
            channel.close();
        }
    }

    /**
     * Listens for datagram resolutions ({@link #connectDatagram}) on {@code host:port} of rdma_cm's
     * UDP port space (separate from the connections' port space: the same number may serve both).
     *
     * @param host the local IPv4 address to bind (the address of an RDMA device's interface)
     * @param port the port, or 0 for a free one ({@link Listener#port()})
     * @return the listener; answer requests with {@link Listener#acceptDatagram}
     * @throws RdmaCmException when binding or listening fails (EADDRINUSE, EADDRNOTAVAIL, …)
     */
    public static Listener listenDatagrams(String host, int port) {
        return listen(host, port, rdma_cma_h.RDMA_PS_UDP, 16);
    }

    /**
     * Listens for connections on {@code host:port}.
     *
     * @param host the local IPv4 address to bind (the address of an RDMA device's interface)
     * @param port the port, or 0 for a free one ({@link Listener#port()})
     * @return the listener
     * @throws RdmaCmException when binding or listening fails (EADDRINUSE, EADDRNOTAVAIL, …)
     */
    public static Listener listen(String host, int port) {
        return listen(host, port, rdma_cma_h.RDMA_PS_TCP, 16);
    }

    /** {@link #listen(String, int)} with the kernel's queue of requests not yet taken {@code backlog} long. */
    static Listener listen(String host, int port, int backlog) {
        return listen(host, port, rdma_cma_h.RDMA_PS_TCP, backlog);
    }

    private static Listener listen(String host, int port, int portSpace, int backlog) {
        Channel channel = Channel.create();
        MemorySegment id = MemorySegment.NULL;
        try (Arena arena = Arena.ofConfined()) {
            id = channel.createId(portSpace);
            int rc = rdma_cma_h.rdma_bind_addr(id, sockaddr(arena, host, port));
            if (rc != 0) {
                int errno = Native.lastErrno();
                String hint = switch (errno) {
                    case Errno.EADDRINUSE -> ": another rdma_cm listener (this process or another) holds " + host + ":"
                            + port + "; choose another port, or 0 for a free one";
                    case Errno.EADDRNOTAVAIL -> ": " + host + " is no address of this host; give the IP address of an"
                            + " RDMA device's interface (rdma link show)";
                    case Errno.EACCES -> ": ports below 1024 need privilege";
                    default -> "";
                };
                throw new RdmaCmException("rdma_bind_addr(" + host + ":" + port + ") failed: " + Errno.name(errno)
                        + " (" + errno + ")" + hint, 0, errno);
            }
            check("rdma_listen", rdma_cma_h.rdma_listen(id, backlog));
            int bound = port(id, false);
            return new Listener(id, channel, bound, portSpace == rdma_cma_h.RDMA_PS_UDP);
        } catch (RuntimeException | Error e) {
            if (id.address() != 0) {
                rdma_cma_h.rdma_destroy_id(id);
            }
            channel.close();
            throw e;
        }
    }

    /**
     * A listening rdma_cm id: for connections ({@link RdmaCm#listen}, {@link #accept}) or for
     * datagram resolutions ({@link RdmaCm#listenDatagrams}, {@link #acceptDatagram}). Accepts from
     * several threads take turns. {@link #close()} returns at once, from any thread; a pending
     * accept ends within about 100 ms with an {@link IllegalStateException}, and listening stops; connections already accepted live on, and datagram peers already answered
     * keep their addresses.
     */
    public static final class Listener implements AutoCloseable {
        private final MemorySegment id;
        private final Channel channel;
        private final int port;
        private final boolean datagrams;
        /**
         * Serializes accepts, each waiting its turn within its own timeout; {@link #close()} never
         * waits for it (an accept's waits are 100 ms slices).
         */
        private final java.util.concurrent.locks.ReentrantLock acceptLock = new java.util.concurrent.locks.ReentrantLock();
        private volatile boolean closed;
        /** The event channel of the handshake an accept has under way, which {@link #close()} aborts. */
        private final java.util.concurrent.atomic.AtomicReference<Channel> handshaking =
                new java.util.concurrent.atomic.AtomicReference<>();
        private final java.util.concurrent.atomic.AtomicBoolean destroyed = new java.util.concurrent.atomic.AtomicBoolean();

        private Listener(MemorySegment id, Channel channel, int port, boolean datagrams) {
            this.id = id;
            this.channel = channel;
            this.port = port;
            this.datagrams = datagrams;
        }

        /**
         * Returns the port listened on.
         *
         * @return the bound port
         */
        public int port() {
            return port;
        }

        /** What runs, under the accept turn, before the listener's id and channel are destroyed. */
        private volatile Runnable beforeDestroy;
        /** Destroys of ids of this listener's channel that have not finished (its channel outlives them). */
        private final java.util.concurrent.atomic.AtomicInteger childDestroys = new java.util.concurrent.atomic.AtomicInteger();

        MemorySegment id() {
            return id;
        }

        Channel events() {
            return channel;
        }

        boolean isClosed() {
            return closed;
        }

        void beforeDestroy(Runnable hook) {
            beforeDestroy = hook;
        }

        /** Takes the accept turn within the deadline ({@link #leaveTurn()} gives it back). */
        void enterTurn(long deadline) {
            takeAcceptTurn(deadline);
        }

        void leaveTurn() {
            acceptLock.unlock();
            if (closed) {
                destroyListener();
            }
        }

        /** Rejects a request of this listener, telling the client why, and destroys its id. */
        void reject(MemorySegment child, String why) {
            rejectSaying(child, why);
            dropRequest(child);
        }

        /**
         * Destroys the id of a request of this listener on the reaper (after a reply, the destroy
         * cancels it and rejects the client); the listener's channel is closed only after it.
         */
        void dropRequest(MemorySegment child) {
            childDestroys.incrementAndGet();
            reap(child, null, childDestroys::decrementAndGet);
        }

        /** The least time an accept gives the handshake of a request it took, whatever its timeout left. */
        public static final int HANDSHAKE_ALLOWANCE_MS = 2000;

        /**
         * Waits for one connection request, connects the prepared queue pair {@code qp} to it and
         * accepts.
         *
         * @param qp      a prepared queue pair on the device the request arrived through
         * @param timeout the most to wait for a request; a request taken in time is given at least
         *                {@value #HANDSHAKE_ALLOWANCE_MS} ms for its handshake (the reply and the
         *                client's confirmation), so a short timeout in a loop loses no client
         * @return the connection
         * @throws RdmaCmException when no request comes in time or the handshake fails, or the
         *         thread is interrupted while it waits (EINTR)
         * @throws IllegalStateException when the listener is closed, before or during the wait or the handshake, or
         *         is for datagrams, or the queue pair is not prepared
         * @throws IllegalArgumentException when the queue pair is not RC
         */
        public CmConnection accept(QueuePair qp, Duration timeout) {
            return accept(qp, timeout, Handshake.empty(), requester -> true);
        }

        /**
         * Waits for one connection request, connects the prepared queue pair {@code qp} to it and
         * accepts, telling the client {@code offer} in the reply; the client's own handshake comes
         * with the connection ({@link CmConnection#peerHandshake()}).
         *
         * @param qp      a prepared queue pair on the device the request arrived through
         * @param timeout the most to wait for a request; a request taken in time is given at least
         *                {@value #HANDSHAKE_ALLOWANCE_MS} ms for its handshake (the reply and the
         *                client's confirmation), so a short timeout in a loop loses no client
         * @param offer   buffers and bytes for the client (at most
         *                {@value Handshake#MAX_ACCEPT_BYTES} bytes of private data in all)
         * @return the connection
         * @throws RdmaCmException when no request comes in time or the handshake fails, or the
         *         thread is interrupted while it waits (EINTR)
         * @throws IllegalStateException when the listener is closed, before or during the wait or the handshake, or
         *         is for datagrams, or the queue pair is not prepared
         * @throws IllegalArgumentException when the queue pair is not RC, or the offer does not fit
         *         the reply, offers memory that is not the queue pair's domain's, or offers rights
         *         the queue pair does not give peers ({@link QueuePair#remoteAccess()})
         */
        public CmConnection accept(QueuePair qp, Duration timeout, Handshake offer) {
            return accept(qp, timeout, offer, requester -> true);
        }

        /**
         * Waits for a connection request that {@code admit} accepts, connects the prepared queue
         * pair {@code qp} to it and accepts. A request {@code admit} refuses is rejected
         * ({@code rdma_reject}) and the wait goes on, within the same {@code timeout}; the queue
         * pair stays prepared for the next request.
         *
         * @param qp      a prepared queue pair on the device the request arrived through
         * @param timeout the most to wait for an admitted request (refused ones included); a request
         *                taken in time is given at least {@value #HANDSHAKE_ALLOWANCE_MS} ms for its
         *                handshake
         * @param admit   told each requester's IP address and rdma_cm port (null when neither
         *                IPv4 nor IPv6), on this thread, before anything is answered; true accepts
         * @return the connection
         * @throws RdmaCmException when no admitted request comes in time or the handshake fails,
         *         or the thread is interrupted while it waits (EINTR)
         * @throws IllegalStateException when the listener is closed, before or during the wait or the handshake, or
         *         is for datagrams, or the queue pair is not prepared
         * @throws IllegalArgumentException when the queue pair is not RC
         */
        public CmConnection accept(QueuePair qp, Duration timeout, Predicate<InetSocketAddress> admit) {
            return accept(qp, timeout, Handshake.empty(), admit);
        }

        /**
         * Waits for a connection request that {@code admit} accepts and accepts it with
         * {@code offer} in the reply: {@link #accept(QueuePair, Duration, Handshake)} and
         * {@link #accept(QueuePair, Duration, Predicate)} in one.
         *
         * @param qp      a prepared queue pair on the device the request arrived through
         * @param timeout the most to wait for an admitted request (refused ones included); a request
         *                taken in time is given at least {@value #HANDSHAKE_ALLOWANCE_MS} ms for its
         *                handshake
         * @param offer   buffers and bytes for the client
         * @param admit   decides on each requester's address before anything is answered
         * @return the connection
         * @throws RdmaCmException when no admitted request comes in time or the handshake fails,
         *         or the thread is interrupted while it waits (EINTR)
         * @throws IllegalStateException when the listener is closed, before or during the wait or the handshake, or
         *         is for datagrams, or the queue pair is not prepared
         * @throws IllegalArgumentException when the queue pair is not RC, or the offer does not fit
         *         the reply, offers memory that is not the queue pair's domain's, or offers rights
         *         the queue pair does not give peers ({@link QueuePair#remoteAccess()})
         */
        public CmConnection accept(QueuePair qp, Duration timeout, Handshake offer,
                                   Predicate<InetSocketAddress> admit) {
            byte[] privateData = offer.encode(Handshake.MAX_ACCEPT_BYTES, "the reply to a connection request");
            if (datagrams) {
                throw new IllegalStateException("this listener answers datagram resolutions: use acceptDatagram");
            }
            requireReliable(qp);
            offer.requireGrantedBy(qp);
            long deadline = System.nanoTime() + timeout.toNanos();
            takeAcceptTurn(deadline);
            try {
                if (closed) {
                    throw new IllegalStateException("listener is closed");
                }
                Core.requirePrepared(qp);
                return acceptLocked(qp, deadline, privateData, admit);
            } finally {
                acceptLock.unlock();
                if (closed) {
                    destroyListener();
                }
            }
        }

        /**
         * Waits for the accepts before this one, within the caller's deadline and interruptibly:
         * a timeout bounds the whole accept, its turn included.
         */
        private void takeAcceptTurn(long deadline) {
            try {
                long left = Math.max(0, deadline - System.nanoTime());
                if (!acceptLock.tryLock(left, java.util.concurrent.TimeUnit.NANOSECONDS)) {
                    throw new RdmaCmException("no turn to accept on port " + port + " in time: another accept of"
                            + " this listener waited all along", 0, Errno.ETIMEDOUT);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new RdmaCmException(acceptLock.isLocked() ? "interrupted while another accept of port " + port
                        + " waited" : "interrupted before the accept of port " + port + " began", 0, Errno.EINTR);
            }
            if (closed) {
                acceptLock.unlock();
                destroyListener();
                throw new IllegalStateException("listener is closed");
            }
        }

        private CmConnection acceptLocked(QueuePair qp, long deadline, byte[] privateData,
                                          Predicate<InetSocketAddress> admit) {
            return handshake(admitted(deadline, admit), qp, deadline, privateData);
        }

        /** Connects {@code qp} to a taken request and waits for the client's last step. */
        private CmConnection handshake(Channel.Event request, QueuePair qp, long deadline, byte[] privateData) {
            MemorySegment child = request.id();
            Channel own = Channel.create();
            handshaking.set(own);
            boolean replied = false;
            try (Arena arena = Arena.ofConfined()) {
                requireOpenDuringHandshake(null);
                check("rdma_migrate_id", rdma_cma_h.rdma_migrate_id(child, own.channel));
                requireSameDevice(child, Core.contextName(qp.config().sendQueue()));
                replyWithoutRights(child, qp, privateData);
                replied = true;
                // A request taken just before the deadline still gets its handshake: failing it would
                // lose a client that did nothing wrong, one per call of an accept polled in a loop.
                long handshakeDeadline = Math.max(deadline, System.nanoTime() + HANDSHAKE_ALLOWANCE_MS * 1_000_000L);
                own.expect(rdma_cma_h.RDMA_CM_EVENT_ESTABLISHED, handshakeDeadline, "the connecting peer");
                requireOpenDuringHandshake(own); // past this, a close leaves the connection alone
                takeRequests(child, qp);
                return new CmConnection(qp, child, own, Handshake.decode(request.privateData()));
            } catch (RuntimeException | Error e) {
                // The queue pair stops answering first (a peer that never completed the handshake
                // must not keep writing into this side), then the request is refused and its id
                // reaped off this thread. Once the reply went out, the id is destroyed without
                // rdma_reject: the destroy cancels the reply's retransmissions and sends the
                // reject itself, where rdma_reject would leave the reply retransmitting (and the
                // id, with the process's exit, held by the kernel) until its retries run out.
                Core.abandonConnect(qp);
                if (!replied) {
                    rdma_cma_h.rdma_reject(child, MemorySegment.NULL, (byte) 0);
                }
                reap(child, own);
                throw e;
            } finally {
                handshaking.compareAndSet(own, null);
            }
        }

        /**
         * A close while a handshake is under way rejects it: no connection comes out of a closed
         * listener. Given the handshake's channel, also takes it back from {@link #close()}, which
         * then no longer aborts it.
         */
        private void requireOpenDuringHandshake(Channel own) {
            if (own != null && !handshaking.compareAndSet(own, null) || closed) {
                throw new IllegalStateException("listener on port " + port + " was closed while an accept's handshake"
                        + " was under way: the request is rejected");
            }
        }

        /**
         * Waits for one datagram resolution ({@link RdmaCm#connectDatagram}) and answers it with
         * {@code qp}'s number and Q_Key. The requester learns this queue pair's address; this
         * side learns the requester's IP address and rdma_cm port, not its queue pair (a protocol
         * on top tells it, as perftest's first datagram does: {@link DatagramQueuePair#replyTo}).
         * Post any receive the requester's first datagram needs before calling this.
         *
         * @param qp      a datagram queue pair on the device the request arrives through, with Q_Key {@link #UDP_QKEY}
         * @param timeout the most to wait for the request
         * @return who asked: the requester's IP address and rdma_cm port (null if neither IPv4 nor IPv6)
         * @throws RdmaCmException when no request comes in time or the answer cannot be sent, or the
         *         thread is interrupted while it waits (EINTR)
         * @throws IllegalStateException when the listener (before or during the wait) or the queue pair is closed, or this
         *         listener is for connections
         * @throws IllegalArgumentException when the queue pair's Q_Key is not {@link #UDP_QKEY}
         */
        public InetSocketAddress acceptDatagram(DatagramQueuePair qp, Duration timeout) {
            return acceptDatagram(qp, timeout, requester -> true);
        }

        /**
         * Waits for a datagram resolution that {@code admit} accepts and answers it with
         * {@code qp}'s number and Q_Key, as {@link #acceptDatagram(DatagramQueuePair, Duration)}
         * does. A resolution {@code admit} refuses is rejected and the wait goes on, within the
         * same {@code timeout}.
         *
         * @param qp      a datagram queue pair on the device the request arrives through, with Q_Key {@link #UDP_QKEY}
         * @param timeout the most to wait for an admitted request (refused ones included)
         * @param admit   told each requester's IP address and rdma_cm port (null when neither
         *                IPv4 nor IPv6), on this thread, before anything is answered; true answers
         * @return who asked: the requester's IP address and rdma_cm port
         * @throws RdmaCmException when no admitted request comes in time or the answer cannot be
         *         sent, or the thread is interrupted while it waits (EINTR)
         * @throws IllegalStateException when the listener (before or during the wait) or the queue pair is closed, or this
         *         listener is for connections
         * @throws IllegalArgumentException when the queue pair's Q_Key is not {@link #UDP_QKEY}
         */
        public InetSocketAddress acceptDatagram(DatagramQueuePair qp, Duration timeout,
                                                Predicate<InetSocketAddress> admit) {
            takeAcceptTurn(System.nanoTime() + timeout.toNanos());
            try {
                if (closed) {
                    throw new IllegalStateException("listener is closed");
                }
                return acceptDatagramLocked(qp, timeout, admit);
            } finally {
                acceptLock.unlock();
                if (closed) {
                    destroyListener();
                }
            }
        }

        private InetSocketAddress acceptDatagramLocked(DatagramQueuePair qp, Duration timeout,
                                                       Predicate<InetSocketAddress> admit) {
            if (!datagrams) {
                throw new IllegalStateException("this listener accepts connections: use accept (or listen with listenDatagrams)");
            }
            requireUdpQkey(qp);
            long deadline = System.nanoTime() + timeout.toNanos();
            MemorySegment child = admitted(deadline, admit).id();
            InetSocketAddress requester = address(child, true);
            try (Arena arena = Arena.ofConfined()) {
                requireOpenDuringHandshake(null);
                requireSameDevice(child, Core.deviceName(qp));
                MemorySegment param = arena.allocate(rdma_conn_param.LAYOUT);
                rdma_conn_param.qp_num(param, qp.number());
                check("rdma_accept", rdma_cma_h.rdma_accept(child, param));
            } catch (RuntimeException | Error e) {
                rdma_cma_h.rdma_reject(child, MemorySegment.NULL, (byte) 0);
                reap(child, null);
                throw e;
            }
            // the answer is on its way (the kernel's reply holds its own reference): nothing stays
            // connected for a datagram peer, so its id goes now rather than piling up
            reap(child, null);
            return requester;
        }

        /**
         * The id of the next connection request {@code admit} accepts within the deadline; each
         * refused one is rejected and destroyed.
         */
        private Channel.Event admitted(long deadline, Predicate<InetSocketAddress> admit) {
            while (true) {
                Channel.Event request = channel.next(deadline);
                if (request == null) {
                    throw new RdmaCmException("no client asked to connect to port " + port + " before the accept's"
                            + " timeout", RdmaCmException.Reason.TIMEOUT, Errno.ETIMEDOUT);
                }
                if (request.type() != rdma_cma_h.RDMA_CM_EVENT_CONNECT_REQUEST) {
                    throw new RdmaCmException("rdma_cm: " + name(request.type()) + " (status " + request.status()
                            + ") on the listener of port " + port + " while waiting for a client", request.type(),
                            Math.abs(request.status()));
                }
                MemorySegment child = request.id();
                boolean admitted = false;
                try {
                    admitted = admit.test(address(child, true));
                } finally {
                    if (!admitted) {
                        rdma_cma_h.rdma_reject(child, MemorySegment.NULL, (byte) 0);
                        reap(child, null);
                    }
                }
                if (admitted) {
                    return request;
                }
            }
        }

        /**
         * Stops listening. An {@link #accept} or {@link #acceptDatagram} waiting on another thread
         * ends within about 100 ms with an {@link IllegalStateException}. So does one whose
         * handshake is under way (its admit check included): the peer is refused and its queue pair
         * left unanswered, so no connection comes out of a closed listener. Connections accepts
         * returned before live on. Idempotent; safe from any thread.
         */
        @Override
        public void close() {
            closed = true;
            channel.abort("listener on port " + port + " was closed while an accept waited");
            Channel underWay = handshaking.getAndSet(null); // after closed is set: an accept sets it, then reads closed
            if (underWay != null) {
                underWay.abort("listener on port " + port + " was closed while an accept's handshake was under way:"
                        + " the request is rejected");
            }
            if (acceptLock.tryLock()) {
                try {
                    destroyListener();
                } finally {
                    acceptLock.unlock();
                }
            } // else the accept in progress sees the abort within 100 ms and destroys the listener as it leaves
        }

        private void destroyListener() {
            if (destroyed.compareAndSet(false, true)) {
                Runnable hook = beforeDestroy;
                try {
                    if (hook != null) {
                        hook.run();
                    }
                } finally {
                    REAPER.execute(() -> {
                        // the ids of requests still being destroyed use the channel: it goes after them
                        while (childDestroys.get() > 0) {
                            java.util.concurrent.locks.LockSupport.parkNanos(10_000_000L);
                        }
                        destroy(id, channel);
                    });
                }
            }
        }
    }

    // ---- helpers ----

    /**
     * Destroys rdma_cm ids (and then their event channels) on background threads: the kernel may
     * hold {@code rdma_destroy_id} for minutes, uninterruptibly, when the peer vanished in the
     * middle of a handshake, and no caller's thread may wait that long. At most four destroys run
     * at once; the rest queue.
     */
    private static final java.util.concurrent.ThreadPoolExecutor REAPER = reaper();

    private static java.util.concurrent.ThreadPoolExecutor reaper() {
        java.util.concurrent.ThreadPoolExecutor pool = new java.util.concurrent.ThreadPoolExecutor(4, 4, 10,
                java.util.concurrent.TimeUnit.SECONDS, new java.util.concurrent.LinkedBlockingQueue<>(),
                r -> Thread.ofPlatform().name("jverbs-cm-reaper").daemon(true).unstarted(r));
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }

    /** Destroys {@code id} (when not NULL), then closes {@code channel} (when not null), on the reaper. */
    static void reap(MemorySegment id, Channel channel) {
        reap(id, channel, null);
    }

    /**
     * Destroys {@code id} (when not NULL), then closes {@code channel} (when not null), on the
     * reaper; then runs {@code after} (when not null) there.
     */
    static void reap(MemorySegment id, Channel channel, Runnable after) {
        if ((id == null || id.address() == 0) && channel == null) {
            if (after != null) {
                after.run();
            }
            return;
        }
        REAPER.execute(() -> {
            try {
                destroy(id, channel);
            } finally {
                if (after != null) {
                    after.run();
                }
            }
        });
    }

    private static void destroy(MemorySegment id, Channel channel) {
        try {
            if (id != null && id.address() != 0) {
                rdma_cma_h.rdma_destroy_id(id);
            }
        } finally {
            if (channel != null) {
                channel.close();
            }
        }
    }

    /**
     * Returns how many rdma_cm ids wait for, or are in, their destroy on the reaper.
     *
     * @return ids not yet destroyed
     */
    public static int pendingDestroys() {
        return REAPER.getQueue().size() + REAPER.getActiveCount();
    }

    /**
     * Resolves {@code host:port}'s address and route on {@code id} within the deadline, and checks
     * that the route goes through {@code device}: what a connection and a datagram resolution
     * both do before their request.
     */
    static void resolveRoute(Channel channel, MemorySegment id, Arena arena, String host, int port,
                                     long deadline, String device) {
        int ms = remainingMs(deadline, "resolve the address of " + host);
        check("rdma_resolve_addr", rdma_cma_h.rdma_resolve_addr(id, MemorySegment.NULL, sockaddr(arena, host, port), ms));
        channel.expect(rdma_cma_h.RDMA_CM_EVENT_ADDR_RESOLVED, deadline, host + ":" + port);
        check("rdma_resolve_route", rdma_cma_h.rdma_resolve_route(id, remainingMs(deadline, "resolve the route")));
        channel.expect(rdma_cma_h.RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, host + ":" + port);
        requireSameDevice(id, device);
    }

    /**
     * The id's destination ({@code rdma_get_peer_addr}) or source ({@code rdma_get_local_addr})
     * address: its sockaddr read as IPv4 or IPv6; null for another family.
     */
    static InetSocketAddress address(MemorySegment id, boolean peer) {
        MemorySegment addr = rdma_route.addr(rdma_cm_id.route(id.reinterpret(rdma_cm_id.sizeof())));
        MemorySegment sa = peer ? rdma_addr.dst_storage(addr) : rdma_addr.src_storage(addr);
        int family = sa.get(ValueLayout.JAVA_SHORT, 0);
        byte[] ip;
        if (family == AF_INET) {
            ip = sa.asSlice(4, 4).toArray(ValueLayout.JAVA_BYTE);
        } else if (family == AF_INET6) {
            ip = sa.asSlice(8, 16).toArray(ValueLayout.JAVA_BYTE);
        } else {
            return null;
        }
        try {
            return new InetSocketAddress(InetAddress.getByAddress(ip), port(id, peer));
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e); // not reached: 4 or 16 bytes
        }
    }

    /** The id's destination or source port ({@code rdma_get_dst_port} / {@code rdma_get_src_port}, network order), in host order. */
    private static int port(MemorySegment id, boolean peer) {
        return Short.toUnsignedInt(Short.reverseBytes(peer ? rdma_cma_h.rdma_get_dst_port(id) : rdma_cma_h.rdma_get_src_port(id)));
    }

    private static void requireUdpQkey(DatagramQueuePair qp) {
        Core.ensureOpen(qp, "resolve a datagram peer through rdma_cm");
        int qkey = qp.address().qkey();
        if (qkey != UDP_QKEY) {
            throw new IllegalArgumentException("rdma_cm's UDP port space gives datagram queue pairs the Q_Key 0x"
                    + Integer.toHexString(UDP_QKEY) + " (RdmaCm.UDP_QKEY); this one has 0x" + Integer.toHexString(qkey)
                    + ": create it with RdmaCm.UDP_QKEY");
        }
    }

    static void requireSameDevice(MemorySegment id, String qpDevice) {
        MemorySegment verbs = rdma_cm_id.verbs(id.reinterpret(rdma_cm_id.sizeof()));
        String routeDevice = verbs.address() == 0 ? "?" : verbs_h.ibv_get_device_name(
                ibv_context.device(verbs.reinterpret(ibv_context.sizeof()))).reinterpret(256).getString(0);
        if (!routeDevice.equals(qpDevice)) {
            throw new RdmaCmException("the route goes through RDMA device " + routeDevice + ", but the queue pair is on "
                    + qpDevice + ": open " + routeDevice, 0, Errno.EINVAL);
        }
    }

    /** rdma_init_qp_attr for the target state, then ibv_modify_qp on jverbs' own queue pair. */
    static void moveTo(MemorySegment id, QueuePair qp, int state) {
        moveTo(id, qp, state, -1);
    }

    /**
     * As {@link #moveTo(MemorySegment, QueuePair, int)}, with the remote rights the transition
     * sets given: at INIT (instead of the queue pair's), or at RTS (where RTR to RTS may change
     * them); -1 keeps the default (the queue pair's rights at INIT, none set at RTS).
     */
    static void moveTo(MemorySegment id, QueuePair qp, int state, int accessFlags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(ibv_qp_attr.LAYOUT);
            MemorySegment mask = arena.allocate(ValueLayout.JAVA_INT);
            ibv_qp_attr.qp_state(attr, state);
            check("rdma_init_qp_attr", rdma_cma_h.rdma_init_qp_attr(id, attr, mask));
            int m = mask.get(ValueLayout.JAVA_INT, 0);
            if (state == verbs_h.IBV_QPS_INIT) {
                ibv_qp_attr.qp_access_flags(attr, accessFlags >= 0 ? accessFlags : Core.connectAccessFlags(qp));
                m |= verbs_h.IBV_QP_ACCESS_FLAGS;
            } else if (state == verbs_h.IBV_QPS_RTR) {
                // The kernel CM leaves min_rnr_timer 0, which encodes the longest RNR wait (655 ms):
                // the config's, as in QueuePair.connect().
                ibv_qp_attr.min_rnr_timer(attr, (byte) qp.config().minRnrTimer());
                m |= verbs_h.IBV_QP_MIN_RNR_TIMER;
            } else if (state == verbs_h.IBV_QPS_RTS) {
                ibv_qp_attr.timeout(attr, (byte) qp.config().timeout());
                ibv_qp_attr.retry_cnt(attr, (byte) qp.config().retryCount());
                ibv_qp_attr.rnr_retry(attr, (byte) qp.config().rnrRetry());
                if (accessFlags >= 0) {
                    ibv_qp_attr.qp_access_flags(attr, accessFlags);
                    m |= verbs_h.IBV_QP_ACCESS_FLAGS;
                }
            }
            Core.transition(qp, attr, m);
        }
    }

    static MemorySegment connParam(Arena arena, QueuePair qp) {
        return connParam(arena, qp, null);
    }

    /** The connection parameters of {@code qp}, with {@code privateData} (or none when null). */
    static MemorySegment connParam(Arena arena, QueuePair qp, byte[] privateData) {
        MemorySegment p = arena.allocate(rdma_conn_param.LAYOUT);
        if (privateData != null) {
            rdma_conn_param.private_data(p, arena.allocateFrom(ValueLayout.JAVA_BYTE, privateData));
            rdma_conn_param.private_data_len(p, (byte) privateData.length);
        }
        rdma_conn_param.responder_resources(p, (byte) qp.maxRdAtomic());
        rdma_conn_param.initiator_depth(p, (byte) qp.maxRdAtomic());
        rdma_conn_param.retry_count(p, (byte) qp.config().retryCount());
        rdma_conn_param.rnr_retry_count(p, (byte) qp.config().rnrRetry());
        rdma_conn_param.qp_num(p, qp.number());
        return p;
    }

    static MemorySegment sockaddr(Arena arena, String host, int port) {
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port 0..65535, not " + port);
        }
        InetAddress address;
        try {
            address = InetAddress.getByName(host);
        } catch (UnknownHostException e) {
            throw new RdmaCmException("unknown host " + host, 0, Errno.EINVAL);
        }
        if (!(address instanceof Inet4Address)) {
            throw new IllegalArgumentException("rdma_cm in jverbs takes IPv4 addresses: " + host);
        }
        MemorySegment sin = arena.allocate(sockaddr_in.LAYOUT);
        sockaddr_in.sin_family(sin, AF_INET);
        sockaddr_in.sin_port(sin, Short.reverseBytes((short) port));
        MemorySegment.copy(address.getAddress(), 0, sockaddr_in.sin_addr(sin), ValueLayout.JAVA_BYTE, 0, 4);
        return sin;
    }

    static int remainingMs(long deadline, String what) {
        long left = (deadline - System.nanoTime()) / 1_000_000;
        if (left <= 0) {
            throw new RdmaCmException("timed out before it could " + what, 0, Errno.ETIMEDOUT);
        }
        return (int) Math.min(Integer.MAX_VALUE, left);
    }

    static void check(String verb, int rc) {
        if (rc != 0) {
            int errno = Native.lastErrno();
            throw new RdmaCmException(verb + " failed: " + Errno.name(errno) + " (" + errno + ")", 0, errno);
        }
    }

    /** An rdma_cm event channel with bounded, copying reads. */
    static final class Channel {
        final MemorySegment channel;
        private final Arena arena = Arena.ofShared();
        private final MemorySegment pollFd = arena.allocate(Fds.POLLFD_BYTES);
        /** How often a wait wakes to notice an abort or an interrupt. */
        static final int WAKE_MS = 100;
        private boolean closed;
        /** Why the waits must end ({@link #abort}), or null. */
        private volatile String aborted;

        /**
         * One event's fields, copied before the ack; {@code param} is a heap copy of its {@code param}
         * union; {@code listenId} is the listening id of a connection request (NULL otherwise).
         */
        record Event(int type, int status, MemorySegment id, MemorySegment param, byte[] privateData,
                     MemorySegment listenId) {
        }

        private Channel(MemorySegment channel) {
            this.channel = channel;
        }

        static Channel create() {
            MemorySegment ch = rdma_cma_h.rdma_create_event_channel();
            if (ch.address() == 0) {
                int errno = Native.lastErrno();
                throw new RdmaCmException("rdma_create_event_channel failed: " + Errno.name(errno) + " (" + errno + ")"
                        + (errno == Errno.ENODEV || errno == Errno.ENOENT ? ": is rdma_ucm loaded (/dev/infiniband/rdma_cm)?" : ""),
                        0, errno);
            }
            return new Channel(ch);
        }

        MemorySegment createId() {
            return createId(rdma_cma_h.RDMA_PS_TCP);
        }

        MemorySegment createId(int portSpace) {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment out = a.allocate(ValueLayout.ADDRESS);
                check("rdma_create_id", rdma_cma_h.rdma_create_id(channel, out, MemorySegment.NULL, portSpace));
                return out.get(ValueLayout.ADDRESS, 0);
            }
        }

        /**
         * Ends a wait in {@link #next} on another thread within {@link #WAKE_MS}, with an
         * IllegalStateException saying {@code why}. Takes no lock (the waiter holds them).
         */
        void abort(String why) {
            aborted = why;
        }

        /**
         * The next event within the deadline, or null when none came before it. The wait wakes
         * every {@link #WAKE_MS} to notice an {@link #abort} or the thread's interrupt.
         *
         * @throws IllegalStateException when {@link #abort} was called
         * @throws RdmaCmException (EINTR) when the waiting thread is interrupted (its flag stays set)
         */
        synchronized Event next(long deadline) {
            int fd = rdma_event_channel.fd(channel.reinterpret(rdma_event_channel.sizeof()));
            // A virtual thread must not wait in poll(2), which would pin its carrier for the whole
            // wait: it looks without waiting and parks in between (parking unmounts it), from 1 ms
            // up to 16 ms, which is nothing next to a connection's setup.
            boolean virtual = Thread.currentThread().isVirtual();
            long pauseNanos = 1_000_000L;
            while (true) {
                long left = (deadline - System.nanoTime() + 999_999) / 1_000_000;
                if (left <= 0) {
                    // past the deadline, an event already there is still taken: a caller with a
                    // short timeout would otherwise never see one
                    if (Fds.readable(pollFd, fd, 0)) {
                        break;
                    }
                    return null;
                }
                if (Fds.readable(pollFd, fd, virtual ? 0 : (int) Math.min(WAKE_MS, left))) {
                    break;
                }
                if (virtual) {
                    java.util.concurrent.locks.LockSupport.parkNanos(Math.min(pauseNanos, left * 1_000_000L));
                    pauseNanos = Math.min(pauseNanos * 2, 16_000_000L);
                }
                String why = aborted;
                if (why != null) {
                    throw new IllegalStateException(why);
                }
                if (Thread.currentThread().isInterrupted()) {
                    throw new RdmaCmException("interrupted while waiting for an rdma_cm event", 0, Errno.EINTR);
                }
            }
            try (Arena a = Arena.ofConfined()) {
                MemorySegment out = a.allocate(ValueLayout.ADDRESS);
                check("rdma_get_cm_event", rdma_cma_h.rdma_get_cm_event(channel, out));
                MemorySegment event = out.get(ValueLayout.ADDRESS, 0).reinterpret(rdma_cm_event.sizeof());
                // long[]-backed: 8-byte aligned, as the union's int and pointer fields need
                MemorySegment param = MemorySegment.ofArray(new long[(int) (rdma_cm_event.param.sizeof() + 7) / 8])
                        .asSlice(0, rdma_cm_event.param.sizeof());
                param.copyFrom(rdma_cm_event.param(event));
                // the private data lives in the event, freed by the ack: copied first (pointer at
                // offset 0 and length at offset 8 of both rdma_conn_param and rdma_ud_param)
                MemorySegment union = rdma_cm_event.param(event);
                MemorySegment data = union.get(ValueLayout.ADDRESS, 0);
                int dataLength = Byte.toUnsignedInt(union.get(ValueLayout.JAVA_BYTE, 8));
                byte[] privateData = data.address() == 0 || dataLength == 0 ? new byte[0]
                        : data.reinterpret(dataLength).toArray(ValueLayout.JAVA_BYTE);
                Event copy = new Event(rdma_cm_event.event(event), rdma_cm_event.status(event), rdma_cm_event.id(event),
                        param, privateData, rdma_cm_event.listen_id(event));
                check("rdma_ack_cm_event", rdma_cma_h.rdma_ack_cm_event(event));
                return copy;
            }
        }

        Event expect(int type, long deadline, String peer) {
            Event e = next(deadline);
            if (e == null) {
                throw new RdmaCmException("no answer from " + peer + " in time (waiting for " + name(type) + ")", 0,
                        Errno.ETIMEDOUT);
            }
            if (e.type() != type || e.status() != 0) {
                // a datagram resolution's negative answer is UNREACHABLE with the SIDR status (> 0),
                // where a lost request is UNREACHABLE with -ETIMEDOUT; only UNSUPPORTED (1), nothing
                // listens on that port, is a refusal a client may retry
                boolean sidr = e.type() == rdma_cma_h.RDMA_CM_EVENT_UNREACHABLE && e.status() > 0;
                String said = listenerSaid(e.privateData());
                throw new RdmaCmException("rdma_cm: " + name(e.type()) + " (status " + e.status() + ") from " + peer
                        + " while waiting for " + name(type) + (said != null ? said : sidr ? sidrHint(e.status())
                        : hint(e.type())), e.type(), sidr ? 0 : Math.abs(e.status()), sidr && e.status() == 1);
            }
            return e;
        }

        synchronized void close() {
            if (!closed) {
                closed = true;
                rdma_cma_h.rdma_destroy_event_channel(channel);
                arena.close();
            }
        }
    }

    /**
     * rdma_cm's connections (port space TCP) are reliable connected: a UC queue pair cannot take
     * part, and the kernel would refuse its transitions with a bare EINVAL.
     */
    private static void requireReliable(QueuePair qp) {
        if (qp.config().transport() != QueuePairConfig.Transport.RC) {
            throw new IllegalArgumentException("queue pair " + qp.number() + " is " + qp.config().transport()
                    + ": rdma_cm connects RC queue pairs only; connect a UC queue pair with its Endpoint"
                    + " (QueuePair.connect, EndpointExchange)");
        }
    }

    /**
     * Replies to the connection request of {@code child} with {@code qp} and {@code privateData},
     * the queue pair in INIT without rights: it takes no request of the peer (the device drops
     * what the peer sends, and the peer's device retries it) and grants nothing until the peer's
     * last step ({@link #takeRequests}).
     */
    static void replyWithoutRights(MemorySegment child, QueuePair qp, byte[] privateData) {
        moveTo(child, qp, verbs_h.IBV_QPS_INIT, 0);
        try (Arena arena = Arena.ofConfined()) {
            check("rdma_accept", rdma_cma_h.rdma_accept(child, connParam(arena, qp, privateData)));
        }
    }

    /** The peer's last step came (ESTABLISHED): {@code qp} takes its requests, with the rights, and is connected. */
    static void takeRequests(MemorySegment child, QueuePair qp) {
        moveTo(child, qp, verbs_h.IBV_QPS_RTR);
        moveTo(child, qp, verbs_h.IBV_QPS_RTS, Core.connectAccessFlags(qp));
        Core.markConnected(qp);
    }

    /** Rejects the connection request of {@code child}, telling a jverbs client why ({@link #listenerSaid}). */
    static void rejectSaying(MemorySegment child, String why) {
        byte[] text = (REJECT_PREFIX + why).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] data = java.util.Arrays.copyOf(text, Math.min(text.length, 140));
        try (Arena a = Arena.ofConfined()) {
            rdma_cma_h.rdma_reject(child, a.allocateFrom(ValueLayout.JAVA_BYTE, data), (byte) data.length);
        }
    }

    /** What a jverbs listener's rejection says: the text after the prefix. */
    static final String REJECT_PREFIX = "jverbs: ";

    /** {@code ": the listener said \"…\""} for a jverbs listener's rejection, else null. */
    static String listenerSaid(byte[] privateData) {
        if (privateData == null || privateData.length == 0) {
            return null;
        }
        String text = new String(privateData, java.nio.charset.StandardCharsets.UTF_8);
        int end = text.indexOf('\0');
        text = end >= 0 ? text.substring(0, end) : text;
        return text.startsWith(REJECT_PREFIX) ? ": the listener said \"" + text.substring(REJECT_PREFIX.length()) + "\""
                : null;
    }

    static String name(int type) {
        return rdma_cma_h.rdma_event_str(type).reinterpret(64).getString(0).replace("RDMA_CM_EVENT_", "");
    }

    /** What a negative answer to a datagram resolution (its SIDR reply status) means. */
    private static String sidrHint(int status) {
        return switch (status) {
            case 1 -> ": the peer's node answered that nothing listens for datagram resolutions on that port";
            case 2 -> ": the listener rejected the resolution";
            case 3 -> ": the listener has no queue pair for it";
            case 4 -> ": the listener redirects elsewhere (not followed)";
            case 5 -> ": the listener does not speak this version of the protocol";
            default -> ": the listener answered no";
        };
    }

    static String hint(int type) {
        return switch (type) {
            case rdma_cma_h.RDMA_CM_EVENT_REJECTED -> ": the peer refused (nothing listens on that port, or it rejected us)";
            case rdma_cma_h.RDMA_CM_EVENT_UNREACHABLE -> ": the peer did not answer the connection request";
            case rdma_cma_h.RDMA_CM_EVENT_ADDR_ERROR -> ": no RDMA device routes to that address";
            case rdma_cma_h.RDMA_CM_EVENT_ROUTE_ERROR -> ": no route to the peer";
            default -> "";
        };
    }
}
