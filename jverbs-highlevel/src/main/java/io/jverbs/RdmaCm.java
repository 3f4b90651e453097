package io.jverbs;

import io.jverbs.ibverbs.Errno;
import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.raw.ibv_context;
import io.jverbs.ibverbs.raw.ibv_qp_attr;
import io.jverbs.ibverbs.raw.verbs_h;
import io.jverbs.rdmacm.raw.rdma_cm_event;
import io.jverbs.rdmacm.raw.rdma_cm_id;
import io.jverbs.rdmacm.raw.rdma_cma_h;
import io.jverbs.rdmacm.raw.rdma_conn_param;
import io.jverbs.rdmacm.raw.rdma_event_channel;
import io.jverbs.rdmacm.raw.sockaddr_in;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.concurrent.TimeoutException;

/**
 * Connections through the RDMA connection manager (librdmacm): a {@link Listener} that accepts,
 * and {@link #connect} with a time limit. The queue pair is jverbs' own (made from the caller's
 * protection domain, on the context of the device the route goes through); rdma_cm resolves the
 * address and route, carries the handshake, moves the queue pair through INIT → RTR → RTS with
 * the attributes it computed, and reports the peer's disconnect ({@link CmConnection}).
 *
 * <p>Every wait is bounded: a refused, unreachable or silent peer is an exception naming the
 * rdma_cm event (REJECTED, UNREACHABLE, ADDR_ERROR, …) or a {@link TimeoutException} cause,
 * within the caller's timeout. IPv4 only. Thread-safe (each call uses its own event channel).
 */
public final class RdmaCm {
    private static final short AF_INET = 2;

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
     * @throws RdmaCmException when the peer rejects, is unreachable, or does not answer in time
     * @throws IllegalStateException when the queue pair is not prepared
     */
    public static CmConnection connect(QueuePair qp, String host, int port, Duration timeout) {
        qp.requirePrepared();
        long deadline = System.nanoTime() + timeout.toNanos();
        Channel channel = Channel.create();
        MemorySegment id = MemorySegment.NULL;
        try (Arena arena = Arena.ofConfined()) {
            id = channel.createId();
            int ms = remainingMs(deadline, "resolve the address of " + host);
            check("rdma_resolve_addr", rdma_cma_h.rdma_resolve_addr(id, MemorySegment.NULL, sockaddr(arena, host, port), ms));
            channel.expect(rdma_cma_h.RDMA_CM_EVENT_ADDR_RESOLVED, deadline, host + ":" + port);
            check("rdma_resolve_route", rdma_cma_h.rdma_resolve_route(id, remainingMs(deadline, "resolve the route")));
            channel.expect(rdma_cma_h.RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, host + ":" + port);
            requireSameDevice(id, qp);
            moveTo(id, qp, verbs_h.IBV_QPS_INIT);
            MemorySegment param = connParam(arena, qp);
            check("rdma_connect", rdma_cma_h.rdma_connect(id, param));
            channel.expect(rdma_cma_h.RDMA_CM_EVENT_CONNECT_RESPONSE, deadline, host + ":" + port);
            moveTo(id, qp, verbs_h.IBV_QPS_RTR);
            moveTo(id, qp, verbs_h.IBV_QPS_RTS);
            check("rdma_establish", rdma_cma_h.rdma_establish(id));
            qp.markConnected();
            return new CmConnection(qp, id, channel);
        } catch (RuntimeException | Error e) {
            if (id.address() != 0) {
                rdma_cma_h.rdma_destroy_id(id);
            }
            channel.close();
            throw e;
        }
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
        Channel channel = Channel.create();
        MemorySegment id = MemorySegment.NULL;
        try (Arena arena = Arena.ofConfined()) {
            id = channel.createId();
            check("rdma_bind_addr", rdma_cma_h.rdma_bind_addr(id, sockaddr(arena, host, port)));
            check("rdma_listen", rdma_cma_h.rdma_listen(id, 16));
            int bound = Short.toUnsignedInt(Short.reverseBytes(rdma_cma_h.rdma_get_src_port(id)));
            return new Listener(id, channel, bound);
        } catch (RuntimeException | Error e) {
            if (id.address() != 0) {
                rdma_cma_h.rdma_destroy_id(id);
            }
            channel.close();
            throw e;
        }
    }

    /**
     * A listening rdma_cm id. Not thread-safe: accept from one thread. {@link #close()} stops
     * listening; connections already accepted live on.
     */
    public static final class Listener implements AutoCloseable {
        private final MemorySegment id;
        private final Channel channel;
        private final int port;
        private boolean closed;

        private Listener(MemorySegment id, Channel channel, int port) {
            this.id = id;
            this.channel = channel;
            this.port = port;
        }

        /**
         * Returns the port listened on.
         *
         * @return the bound port
         */
        public int port() {
            return port;
        }

        /**
         * Waits for one connection request, connects the prepared queue pair {@code qp} to it and
         * accepts.
         *
         * @param qp      a prepared queue pair on the device the request arrived through
         * @param timeout the most the wait and the handshake may take
         * @return the connection
         * @throws RdmaCmException when no request comes in time or the handshake fails
         */
        public synchronized CmConnection accept(QueuePair qp, Duration timeout) {
            if (closed) {
                throw new IllegalStateException("listener is closed");
            }
            qp.requirePrepared();
            long deadline = System.nanoTime() + timeout.toNanos();
            Channel.Event request = channel.expect(rdma_cma_h.RDMA_CM_EVENT_CONNECT_REQUEST, deadline, "port " + port);
            MemorySegment child = request.id();
            Channel own = Channel.create();
            try (Arena arena = Arena.ofConfined()) {
                check("rdma_migrate_id", rdma_cma_h.rdma_migrate_id(child, own.channel));
                requireSameDevice(child, qp);
                moveTo(child, qp, verbs_h.IBV_QPS_INIT);
                moveTo(child, qp, verbs_h.IBV_QPS_RTR);
                moveTo(child, qp, verbs_h.IBV_QPS_RTS);
                check("rdma_accept", rdma_cma_h.rdma_accept(child, connParam(arena, qp)));
                own.expect(rdma_cma_h.RDMA_CM_EVENT_ESTABLISHED, deadline, "the connecting peer");
                qp.markConnected();
                return new CmConnection(qp, child, own);
            } catch (RuntimeException | Error e) {
                rdma_cma_h.rdma_reject(child, MemorySegment.NULL, (byte) 0);
                rdma_cma_h.rdma_destroy_id(child);
                own.close();
                throw e;
            }
        }

        /** Stops listening. Idempotent. */
        @Override
        public synchronized void close() {
            if (!closed) {
                closed = true;
                rdma_cma_h.rdma_destroy_id(id);
                channel.close();
            }
        }
    }

    // ---- helpers ----

    private static void requireSameDevice(MemorySegment id, QueuePair qp) {
        MemorySegment verbs = rdma_cm_id.verbs(id.reinterpret(rdma_cm_id.sizeof()));
        String routeDevice = verbs.address() == 0 ? "?" : verbs_h.ibv_get_device_name(
                ibv_context.device(verbs.reinterpret(ibv_context.sizeof()))).reinterpret(256).getString(0);
        String qpDevice = qp.config().sendQueue().contextName();
        if (!routeDevice.equals(qpDevice)) {
            throw new RdmaCmException("the route goes through RDMA device " + routeDevice + ", but the queue pair is on "
                    + qpDevice + ": open " + routeDevice, 0, Errno.EINVAL);
        }
    }

    /** rdma_init_qp_attr for the target state, then ibv_modify_qp on jverbs' own queue pair. */
    private static void moveTo(MemorySegment id, QueuePair qp, int state) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(ibv_qp_attr.LAYOUT);
            MemorySegment mask = arena.allocate(ValueLayout.JAVA_INT);
            ibv_qp_attr.qp_state(attr, state);
            check("rdma_init_qp_attr", rdma_cma_h.rdma_init_qp_attr(id, attr, mask));
            int m = mask.get(ValueLayout.JAVA_INT, 0);
            if (state == verbs_h.IBV_QPS_INIT) {
                ibv_qp_attr.qp_access_flags(attr, verbs_h.IBV_ACCESS_LOCAL_WRITE | verbs_h.IBV_ACCESS_REMOTE_WRITE
                        | verbs_h.IBV_ACCESS_REMOTE_READ | verbs_h.IBV_ACCESS_REMOTE_ATOMIC);
                m |= verbs_h.IBV_QP_ACCESS_FLAGS;
            } else if (state == verbs_h.IBV_QPS_RTR) {
                // The kernel CM leaves min_rnr_timer 0, which encodes the longest RNR wait (655 ms):
                // a sender that finds no receive posted would stall that long. 12 (0.64 ms) as in connect().
                ibv_qp_attr.min_rnr_timer(attr, (byte) 12);
                m |= verbs_h.IBV_QP_MIN_RNR_TIMER;
            } else if (state == verbs_h.IBV_QPS_RTS) {
                ibv_qp_attr.timeout(attr, (byte) qp.config().timeout());
                ibv_qp_attr.retry_cnt(attr, (byte) qp.config().retryCount());
                ibv_qp_attr.rnr_retry(attr, (byte) qp.config().rnrRetry());
            }
            qp.transition(attr, m);
        }
    }

    private static MemorySegment connParam(Arena arena, QueuePair qp) {
        MemorySegment p = arena.allocate(rdma_conn_param.LAYOUT);
        rdma_conn_param.responder_resources(p, (byte) qp.config().maxRdAtomic());
        rdma_conn_param.initiator_depth(p, (byte) qp.config().maxRdAtomic());
        rdma_conn_param.retry_count(p, (byte) qp.config().retryCount());
        rdma_conn_param.rnr_retry_count(p, (byte) qp.config().rnrRetry());
        rdma_conn_param.qp_num(p, qp.number());
        return p;
    }

    private static MemorySegment sockaddr(Arena arena, String host, int port) {
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

    private static int remainingMs(long deadline, String what) {
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
        private boolean closed;

        /** One event's fields, copied before the ack. */
        record Event(int type, int status, MemorySegment id) {
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
            try (Arena a = Arena.ofConfined()) {
                MemorySegment out = a.allocate(ValueLayout.ADDRESS);
                check("rdma_create_id", rdma_cma_h.rdma_create_id(channel, out, MemorySegment.NULL, rdma_cma_h.RDMA_PS_TCP));
                return out.get(ValueLayout.ADDRESS, 0);
            }
        }

        /** The next event within the deadline, or null when none came before it. */
        synchronized Event next(long deadline) {
            int fd = rdma_event_channel.fd(channel.reinterpret(rdma_event_channel.sizeof()));
            long left = (deadline - System.nanoTime()) / 1_000_000;
            if (left <= 0 || !Fds.readable(pollFd, fd, (int) Math.min(Integer.MAX_VALUE, left))) {
                return null;
            }
            try (Arena a = Arena.ofConfined()) {
                MemorySegment out = a.allocate(ValueLayout.ADDRESS);
                check("rdma_get_cm_event", rdma_cma_h.rdma_get_cm_event(channel, out));
                MemorySegment event = out.get(ValueLayout.ADDRESS, 0).reinterpret(rdma_cm_event.sizeof());
                Event copy = new Event(rdma_cm_event.event(event), rdma_cm_event.status(event), rdma_cm_event.id(event));
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
                throw new RdmaCmException("rdma_cm: " + name(e.type()) + " (status " + e.status() + ") from " + peer
                        + " while waiting for " + name(type) + hint(e.type()), e.type(), Math.abs(e.status()));
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

    static String name(int type) {
        return rdma_cma_h.rdma_event_str(type).reinterpret(64).getString(0).replace("RDMA_CM_EVENT_", "");
    }

    private static String hint(int type) {
        return switch (type) {
            case rdma_cma_h.RDMA_CM_EVENT_REJECTED -> ": the peer refused (nothing listens on that port, or it rejected us)";
            case rdma_cma_h.RDMA_CM_EVENT_UNREACHABLE -> ": the peer did not answer the connection request";
            case rdma_cma_h.RDMA_CM_EVENT_ADDR_ERROR -> ": no RDMA device routes to that address";
            case rdma_cma_h.RDMA_CM_EVENT_ROUTE_ERROR -> ": no route to the peer";
            default -> "";
        };
    }
}
