package io.jverbs;

import io.jverbs.ibverbs.raw.ibv_send_wr;
import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Datagram sends collected and then posted as one linked list with a single
 * {@code ibv_post_send} ({@link DatagramQueuePair#post(DatagramBatch)}): one doorbell for a burst of
 * datagrams, each to its own {@link DatagramQueuePair.Destination}. Made by
 * {@link DatagramQueuePair#newBatch(int)}, reused after each post; allocates nothing after creation.
 * Its memory belongs to the queue pair and is released when the queue pair closes.
 *
 * <p>Each add checks its range, its destination and the MTU as {@link DatagramQueuePair#send}
 * does, and records the buffer's address: the buffer must stay registered until the send's
 * completion (or a later signaled one) is polled. The last request of a posted batch is always
 * signaled, so that its completion frees the batch's room in the send queue. Not thread-safe:
 * fill and post a batch from one thread.
 */
public final class DatagramBatch {
    static final long WR_BYTES = WorkBatch.WR_BYTES;
    static final long SGE_BYTES = WorkBatch.SGE_BYTES;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;

    private final DatagramQueuePair qp;
    private final int capacity;
    private final MemorySegment memory;
    private final long base;
    private final long sgeBase;
    private int size;

    DatagramBatch(DatagramQueuePair qp, int capacity, MemorySegment memory) {
        this.qp = qp;
        this.capacity = capacity;
        this.memory = memory;
        this.base = memory.address();
        this.sgeBase = capacity * WR_BYTES;
    }

    static long bytes(int capacity) {
        return capacity * (WR_BYTES + SGE_BYTES);
    }

    /**
     * Returns how many sends are collected.
     *
     * @return sends waiting for {@link DatagramQueuePair#post(DatagramBatch)}
     */
    public int size() {
        return size;
    }

    /**
     * Returns the most sends one batch holds.
     *
     * @return the capacity
     */
    public int capacity() {
        return capacity;
    }

    /** Drops the collected sends. */
    public void clear() {
        size = 0;
    }

    /**
     * Adds a datagram send.
     *
     * @param wrId        the caller's id (0 to 2<sup>63</sup>−1)
     * @param to          made by this batch's queue pair's {@link DatagramQueuePair#destination}
     * @param local       the source
     * @param localOffset offset in {@code local}
     * @param length      bytes, at most the path MTU
     * @param wantSignal  whether a completion is wanted (the batch's last send always gets one)
     * @return this batch
     * @throws IllegalStateException     when the batch is full or the buffer is closed
     * @throws IllegalArgumentException  when the destination belongs to another queue pair, the id is
     *                                   negative or the length exceeds the MTU
     * @throws IndexOutOfBoundsException when the range lies outside the buffer
     */
    public DatagramBatch send(long wrId, DatagramQueuePair.Destination to, RegisteredBuffer local, long localOffset,
                              int length, boolean wantSignal) {
        if (wrId < 0) {
            throw new IllegalArgumentException("work-request ids are 0 to 2^63-1, not " + wrId);
        }
        if (size == capacity) {
            throw new IllegalStateException("the batch is full (" + capacity + " requests): post it first");
        }
        qp.checkSend(to, local, localOffset, length, "batch");
        int i = size;
        long wr = i * WR_BYTES;
        long sge = sgeBase + i * SGE_BYTES;
        WorkRequests.send(memory, base, wr, sge, wrId, verbs_h.IBV_WR_SEND, wantSignal ? verbs_h.IBV_SEND_SIGNALED : 0,
                0, local.address() + localOffset, length, local.lkey());
        DatagramQueuePair.address(memory, wr, to);
        if (i > 0) {
            memory.set(LONG, (i - 1) * WR_BYTES + ibv_send_wr.next$OFFSET, base + wr);
        }
        size++;
        return this;
    }

    DatagramQueuePair owner() {
        return qp;
    }

    /** Signals the last request: its completion retires the batch's room in the send queue. */
    void signalLast() {
        long at = (size - 1) * WR_BYTES + ibv_send_wr.send_flags$OFFSET;
        memory.set(INT, at, memory.get(INT, at) | verbs_h.IBV_SEND_SIGNALED);
    }

    boolean signalFlag(int i) {
        return (memory.get(INT, i * WR_BYTES + ibv_send_wr.send_flags$OFFSET) & verbs_h.IBV_SEND_SIGNALED) != 0;
    }

    long firstAddress() {
        return base;
    }

    /** The index of the request at {@code address} (where post_send stopped), or -1. */
    int indexOf(long address) {
        long offset = address - base;
        return offset >= 0 && offset < size * WR_BYTES && offset % WR_BYTES == 0 ? (int) (offset / WR_BYTES) : -1;
    }
}
