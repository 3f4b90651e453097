package io.jverbs.cm;

/**
 * A connection through rdma_cm that could not be made or was lost: the message names the
 * rdma_cm verb or event (REJECTED, UNREACHABLE, ADDR_ERROR, …) and the errno.
 */
public class RdmaCmException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    /** The rdma_cm event that ended the attempt, or 0. */
    private final int event;
    /** The errno, or 0. */
    private final int errno;
    /** An answer that nothing accepts, which no event type alone says (a datagram resolution's UNREACHABLE with a SIDR status). */
    private final boolean refused;

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

    RdmaCmException(String message, int event, int errno, boolean refused) {
        super(message);
        this.event = event;
        this.errno = errno;
        this.refused = refused;
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
