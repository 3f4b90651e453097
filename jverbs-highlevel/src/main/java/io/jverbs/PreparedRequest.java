package io.jverbs;

/**
 * A send-queue request filled once and posted many times: the RDMA Write, RDMA Read or Send of
 * one local range (and, for Write and Read, one remote range), made by
 * {@link QueuePair#prepareWrite}, {@link QueuePair#prepareRead} or {@link QueuePair#prepareSend}
 * and posted with {@link QueuePair#post(PreparedRequest, long, boolean)}. Like C perftest's
 * reused {@code ibv_send_wr}, a post writes only what changes (the work-request id and the
 * signal flag; an inline payload is copied), and the ranges were checked once, when it was made.
 *
 * <p>Memory: the request lives in native memory of its queue pair (144 bytes), freed when the
 * queue pair closes; prepare once, not per post. The local buffer must stay open while the
 * request is posted: a post checks that it is (and throws when it is not), and a buffer closed
 * while its work is in flight ends that work in an error completion, as for any post.
 *
 * <p>Thread-safety: immutable once made; posts of it are serialized by its queue pair like any
 * other post (a confined queue pair's only from its owner thread).
 */
public final class PreparedRequest {
    private final QueuePair owner;
    private final int opcode;
    private final RegisteredBuffer local;
    private final long localOffset;
    private final int length;
    private final boolean inline;
    /** Addresses of the request and its SGE in the queue pair's memory. */
    final long wrAddress;
    final long sgeAddress;

    PreparedRequest(QueuePair owner, int opcode, RegisteredBuffer local, long localOffset, int length, boolean inline,
                    long wrAddress, long sgeAddress) {
        this.owner = owner;
        this.opcode = opcode;
        this.local = local;
        this.localOffset = localOffset;
        this.length = length;
        this.inline = inline;
        this.wrAddress = wrAddress;
        this.sgeAddress = sgeAddress;
    }

    /**
     * The queue pair that made it, the only one it can be posted on.
     *
     * @return its queue pair
     */
    public QueuePair queuePair() {
        return owner;
    }

    /**
     * The verbs opcode: {@code IBV_WR_RDMA_WRITE}, {@code IBV_WR_RDMA_READ} or {@code IBV_WR_SEND}.
     *
     * @return the opcode
     */
    public int opcode() {
        return opcode;
    }

    /**
     * The local buffer the request reads from (Write, Send) or writes into (Read).
     *
     * @return the local buffer
     */
    public RegisteredBuffer local() {
        return local;
    }

    /**
     * The offset of the local range in {@link #local()}.
     *
     * @return the offset
     */
    public long localOffset() {
        return localOffset;
    }

    /**
     * The number of bytes each post moves.
     *
     * @return the length
     */
    public int length() {
        return length;
    }

    /**
     * Whether the payload goes inline (Write and Send up to {@link QueuePair#maxInlineData()}
     * bytes): copied when posted, so the device never reads the local buffer afterwards.
     *
     * @return true when inline
     */
    public boolean isInline() {
        return inline;
    }

    @Override
    public String toString() {
        return "PreparedRequest[" + (opcode == io.jverbs.ibverbs.raw.verbs_h.IBV_WR_RDMA_WRITE ? "RDMA Write"
                : opcode == io.jverbs.ibverbs.raw.verbs_h.IBV_WR_RDMA_READ ? "RDMA Read" : "Send") + " of " + length
                + " bytes at offset " + localOffset + (inline ? ", inline" : "") + ", queue pair " + owner.number() + "]";
    }
}
