package io.jverbs.cm;

/**
 * A connection through rdma_cm that could not be made or was lost: the message names the
 * rdma_cm verb or event (REJECTED, UNREACHABLE, ADDR_ERROR, …) and the errno, and
 * {@link #reason()} tells a caller what to do about it without reading the message.
 */
public class RdmaCmException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    /** The rdma_cm event that ended the attempt, or 0. */
    private final int event;
    /** The errno, or 0. */
    private final int errno;
    /** An answer that nothing accepts, which no event type alone says (a datagram resolution's UNREACHABLE with a SIDR status). */
    private final boolean refused;
    /** Given by the thrower, or null: then derived from the event and the errno. */
    private final Reason given;

    /** What ended a connection or an attempt, for a caller that acts on it. */
    public enum Reason {
        /** Nothing answered in time: retry later, or with a longer timeout. */
        TIMEOUT,
        /** The peer's side answered no: nothing listens on that port, or the listener rejected (a limit, an admission check). */
        REFUSED,
        /** No route to the peer, or its node did not answer the request: check the address and the link. */
        UNREACHABLE,
        /** The connection was made and is gone: the peer disconnected or died, or this side closed it. */
        DISCONNECTED,
        /** The waiting thread was interrupted; its interrupt flag stays set. */
        INTERRUPTED,
        /** No RDMA device, or rdma_cm itself is missing (is {@code rdma_ucm} loaded?). */
        NO_DEVICE,
        /** Out of memory, or of locked memory ({@code ulimit -l}). */
        OUT_OF_MEMORY,
        /** A limit of this side refused it: too many connections, handshakes or messages waiting. */
        LIMIT,
        /** The peer's request handler failed: the message carries what it said. */
        REMOTE_FAILURE,
        /** The peer broke the protocol (a message it may not send, a handshake that is not jverbs'). */
        PROTOCOL,
        /** Anything else: the message and {@link #errno()} say what. */
        OTHER
    }

    /**
     * Creates one.
     *
     * @param message what failed
     * @param event   the {@code RDMA_CM_EVENT_*} seen, or 0
     * @param errno   the errno, or 0
     */
    public RdmaCmException(String message, int event, int errno) {
        this(message, event, errno, false);
    }

    /**
     * Creates one whose reason is given rather than derived.
     *
     * @param message what failed
     * @param reason  what a caller acts on
     * @param errno   the errno, or 0
     */
    public RdmaCmException(String message, Reason reason, int errno) {
        super(message);
        this.event = 0;
        this.errno = errno;
        this.refused = reason == Reason.REFUSED;
        this.given = java.util.Objects.requireNonNull(reason, "reason");
    }

    RdmaCmException(String message, int event, int errno, boolean refused) {
        super(message);
        this.event = event;
        this.errno = errno;
        this.refused = refused;
        this.given = null;
    }

    /**
     * Returns what ended the connection or the attempt.
     *
     * @return the reason: given by jverbs where it knew it, else derived from the rdma_cm event
     *         (REJECTED and ADDR_ERROR refuse, UNREACHABLE and ROUTE_ERROR are unreachable,
     *         DISCONNECTED) and the errno (ETIMEDOUT, EINTR, ENODEV/ENOENT, ENOMEM)
     */
    public Reason reason() {
        if (given != null) {
            return given;
        }
        if (isRefusal()) {
            return Reason.REFUSED;
        }
        switch (event) {
            case io.jverbs.rdmacm.raw.rdma_cma_h.RDMA_CM_EVENT_UNREACHABLE,
                 io.jverbs.rdmacm.raw.rdma_cma_h.RDMA_CM_EVENT_ROUTE_ERROR,
                 io.jverbs.rdmacm.raw.rdma_cma_h.RDMA_CM_EVENT_CONNECT_ERROR -> {
                return errno == io.jverbs.ibverbs.Errno.ETIMEDOUT && event != io.jverbs.rdmacm.raw.rdma_cma_h.RDMA_CM_EVENT_UNREACHABLE
                        ? Reason.TIMEOUT : Reason.UNREACHABLE;
            }
            case io.jverbs.rdmacm.raw.rdma_cma_h.RDMA_CM_EVENT_DISCONNECTED,
                 io.jverbs.rdmacm.raw.rdma_cma_h.RDMA_CM_EVENT_DEVICE_REMOVAL -> {
                return Reason.DISCONNECTED;
            }
            default -> { }
        }
        if (errno == io.jverbs.ibverbs.Errno.ETIMEDOUT) {
            return Reason.TIMEOUT;
        }
        if (errno == io.jverbs.ibverbs.Errno.EINTR) {
            return Reason.INTERRUPTED;
        }
        if (errno == io.jverbs.ibverbs.Errno.ENODEV || errno == io.jverbs.ibverbs.Errno.ENOENT) {
            return Reason.NO_DEVICE;
        }
        if (errno == io.jverbs.ibverbs.Errno.ENOMEM) {
            return Reason.OUT_OF_MEMORY;
        }
        return Reason.OTHER;
    }

    /**
     * Returns the event.
     *
     * @return the {@code RDMA_CM_EVENT_*} that ended the attempt, or 0
     */
    public int event() {
        return event;
    }

    /**
     * Returns the errno.
     *
     * @return the errno, or 0
     */
    public int errno() {
        return errno;
    }

    /**
     * Returns whether the attempt was refused rather than lost: the peer's node answered that
     * nothing accepts on that port (REJECTED; for a datagram resolution, UNREACHABLE carrying the
     * peer's answer), or the address did not resolve yet (ADDR_ERROR). A client that starts
     * before its server may retry these; a timeout or an unreachable peer is not one of them.
     *
     * @return true for REJECTED, ADDR_ERROR and an answered datagram resolution's UNREACHABLE
     */
    public boolean isRefusal() {
        return refused || event == io.jverbs.rdmacm.raw.rdma_cma_h.RDMA_CM_EVENT_REJECTED
                || event == io.jverbs.rdmacm.raw.rdma_cma_h.RDMA_CM_EVENT_ADDR_ERROR;
    }
}
