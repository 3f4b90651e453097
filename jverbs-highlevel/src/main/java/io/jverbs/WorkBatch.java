package io.jverbs;

import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.MemorySegment;

/**
 * Send-side work requests (RDMA Write, Read, Send, compare-and-swap, fetch-and-add) collected and
 * then posted as one linked list with a single {@code ibv_post_send} ({@link QueuePair#post(WorkBatch)}):
 * fewer doorbells for bursts of small operations. Made by {@link QueuePair#newBatch(int)}, reused after each post; allocates nothing
 * after creation. Its memory belongs to the queue pair and is released when the queue pair closes.
 *
 * <p>Each add checks its ranges (as the single-request methods do). The bytes of every request are
 * those of the moment of the post, as for the single-request methods and {@link PreparedRequest}:
 * the device reads the local buffer after the post, and a request small enough to go inline
 * ({@link QueuePair#maxInlineData()}) is copied when posted. Not thread-safe: fill and post a
 * batch from one thread.
 */
public final class WorkBatch extends PostList {
    private final QueuePair qp;
    private final long inlineBase;
    private final int inlineSlot;
    private final boolean[] signaled;
    /** The source offset in its buffer of each inline request, copied at the post; -1 when not inline. */
    private final long[] inlineFrom;

    WorkBatch(QueuePair qp, int capacity, MemorySegment memory, int inlineSlot) {
        super(capacity, memory);
        this.qp = qp;
        this.inlineBase = listBytes(capacity);
        this.inlineSlot = inlineSlot;
        this.signaled = new boolean[capacity];
        this.inlineFrom = new long[capacity];
    }

    static long bytes(int capacity, int inlineSlot) {
        return listBytes(capacity) + (long) capacity * inlineSlot;
    }

    /**
     * Adds an RDMA Write.
     *
     * @param wrId         the caller's id (0 to 2<sup>63</sup>−1)
     * @param local        the source
     * @param localOffset  offset in {@code local}
     * @param length       bytes
     * @param remote       the peer's buffer
     * @param remoteOffset offset in {@code remote}
     * @param wantSignal   whether a completion is wanted
     * @return this batch
     * @throws IllegalStateException     when the batch is full or a buffer is closed
     * @throws IndexOutOfBoundsException when a range lies outside its buffer
     */
    public WorkBatch write(long wrId, RegisteredBuffer local, long localOffset, int length, RemoteBuffer remote,
                           long remoteOffset, boolean wantSignal) {
        return add(wrId, verbs_h.IBV_WR_RDMA_WRITE, local, localOffset, length, remote, remoteOffset, 0, 0, wantSignal);
    }

    /**
     * Adds an RDMA Read.
     *
     * @param wrId         the caller's id
     * @param local        the destination
     * @param localOffset  offset in {@code local}
     * @param length       bytes
     * @param remote       the peer's buffer
     * @param remoteOffset offset in {@code remote}
     * @param wantSignal   whether a completion is wanted
     * @return this batch
     * @throws IllegalStateException     when the batch is full or a buffer is closed
     * @throws IndexOutOfBoundsException when a range lies outside its buffer
     * @throws UnsupportedOperationException when the queue pair is UC (Read needs RC)
     */
    public WorkBatch read(long wrId, RegisteredBuffer local, long localOffset, int length, RemoteBuffer remote,
                          long remoteOffset, boolean wantSignal) {
        qp.requireReliable("RDMA Read");
        return add(wrId, verbs_h.IBV_WR_RDMA_READ, local, localOffset, length, remote, remoteOffset, 0, 0, wantSignal);
    }

    /**
     * Adds a Send.
     *
     * @param wrId        the caller's id
     * @param local       the source
     * @param localOffset offset in {@code local}
     * @param length      bytes
     * @param wantSignal  whether a completion is wanted
     * @return this batch
     * @throws IllegalStateException     when the batch is full or the buffer is closed
     * @throws IndexOutOfBoundsException when the range lies outside the buffer
     */
    public WorkBatch send(long wrId, RegisteredBuffer local, long localOffset, int length, boolean wantSignal) {
        return add(wrId, verbs_h.IBV_WR_SEND, local, localOffset, length, null, 0, 0, 0, wantSignal);
    }

    /**
     * Adds a compare-and-swap on 8 remote bytes ({@link QueuePair#compareAndSwap}): if they equal
     * {@code compare} they become {@code swap}, and the original value lands in the local 8 bytes.
     *
     * @param wrId         the caller's id
     * @param local        where the original value lands (8 bytes)
     * @param localOffset  offset in {@code local}
     * @param remote       the peer's buffer (needs REMOTE_ATOMIC there)
     * @param remoteOffset offset in {@code remote}; the address must be 8-byte aligned
     * @param compare      the expected value
     * @param swap         the new value
     * @param wantSignal   whether a completion is wanted
     * @return this batch
     * @throws IllegalStateException     when the batch is full or a buffer is closed
     * @throws IllegalArgumentException  when the remote address is not 8-byte aligned
     * @throws IndexOutOfBoundsException when a range lies outside its buffer
     * @throws UnsupportedOperationException when the queue pair is UC (atomics need RC)
     */
    public WorkBatch compareAndSwap(long wrId, RegisteredBuffer local, long localOffset, RemoteBuffer remote,
                                    long remoteOffset, long compare, long swap, boolean wantSignal) {
        qp.requireReliable("compare-and-swap");
        return add(wrId, verbs_h.IBV_WR_ATOMIC_CMP_AND_SWP, local, localOffset, 8, remote, remoteOffset, compare, swap,
                wantSignal);
    }

    /**
     * Adds a fetch-and-add on 8 remote bytes ({@link QueuePair#fetchAndAdd}); the original value
     * lands in the local 8 bytes.
     *
     * @param wrId         the caller's id
     * @param local        where the original value lands (8 bytes)
     * @param localOffset  offset in {@code local}
     * @param remote       the peer's buffer (needs REMOTE_ATOMIC there)
     * @param remoteOffset offset in {@code remote}; the address must be 8-byte aligned
     * @param add          the value to add
     * @param wantSignal   whether a completion is wanted
     * @return this batch
     * @throws IllegalStateException     when the batch is full or a buffer is closed
     * @throws IllegalArgumentException  when the remote address is not 8-byte aligned
     * @throws IndexOutOfBoundsException when a range lies outside its buffer
     * @throws UnsupportedOperationException when the queue pair is UC (atomics need RC)
     */
    public WorkBatch fetchAndAdd(long wrId, RegisteredBuffer local, long localOffset, RemoteBuffer remote,
                                 long remoteOffset, long add, boolean wantSignal) {
        qp.requireReliable("fetch-and-add");
        return add(wrId, verbs_h.IBV_WR_ATOMIC_FETCH_AND_ADD, local, localOffset, 8, remote, remoteOffset, add, 0,
                wantSignal);
    }

    private WorkBatch add(long wrId, int opcode, RegisteredBuffer local, long localOffset, int length,
                          RemoteBuffer remote, long remoteOffset, long compareAdd, long swap, boolean wantSignal) {
        int i = nextIndex(wrId);
        local.checkUse(qp.protectionDomain(), localOffset, length,
                opcode == verbs_h.IBV_WR_RDMA_READ || PostingEndpoint.isAtomic(opcode), "batch");
        long remoteAddress = 0;
        int rkey = 0;
        if (remote != null) {
            remoteAddress = PostingEndpoint.remoteTarget(remote, remoteOffset, length, opcode, "batch");
            rkey = remote.rkey();
        }
        long wr = wrOffset(i);
        long data = local.address() + localOffset;
        int flags = 0;
        inlineFrom[i] = -1;
        if (qp.inlines(opcode, length)) { // the queue pair's rule: its max inline, Write and Send only
            inlineFrom[i] = localOffset; // copied at the post, so that it carries that moment's bytes
            data = base + inlineSlotOffset(i);
            flags = verbs_h.IBV_SEND_INLINE;
        }
        WorkRequests.send(memory, base, wr, sgeOffset(i), wrId, opcode, flags, 0, data, length, local.lkey());
        if (PostingEndpoint.isAtomic(opcode)) {
            WorkRequests.atomic(memory, wr, remoteAddress, rkey, compareAdd, swap);
        } else {
            WorkRequests.rdma(memory, wr, remoteAddress, rkey);
        }
        signaled[i] = wantSignal;
        added(i, local);
        return this;
    }

    /** Offset in {@link #memory} of request {@code i}'s inline payload. */
    private long inlineSlotOffset(int i) {
        return inlineBase + (long) i * inlineSlot;
    }

    /** Copies the inline requests' payloads into their slots, just before the post; after {@link #recheck}. */
    void copyInline() {
        for (int i = 0, n = size(); i < n; i++) {
            long from = inlineFrom[i];
            if (from >= 0) {
                MemorySegment.copy(buffer(i).memory(), from, memory, inlineSlotOffset(i), lengthOf(i));
            }
        }
    }

    QueuePair owner() {
        return qp;
    }

    boolean wantsSignal(int i) {
        return signaled[i];
    }
}
