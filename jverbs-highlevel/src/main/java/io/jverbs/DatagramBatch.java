package io.jverbs;

import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.MemorySegment;

/**
 * Datagram sends collected and then posted as one linked list with a single
 * {@code ibv_post_send} ({@link DatagramQueuePair#post(DatagramBatch)}): one doorbell for a burst of
 * datagrams, each to its own {@link DatagramQueuePair.Destination}. Made by
 * {@link DatagramQueuePair#newBatch(int)}, reused after each post; allocates nothing after creation.
 * Its memory belongs to the queue pair and is released when the queue pair closes.
 *
 * <p>Each add checks its range, its destination and the MTU as {@link DatagramQueuePair#send}
 * does, and records the buffer's address: the buffer must stay registered until the send's
 * completion (or a later signaled one) is polled. A destination closed between its add and the
 * post makes the post throw, before anything is posted. The last request of a posted batch is always
 * signaled, so that its completion frees the batch's room in the send queue. Not thread-safe:
 * fill and post a batch from one thread.
 */
public final class DatagramBatch extends PostList {
    private final DatagramQueuePair qp;
    /** The list's memory and its address (the superclass's, kept here for the adds). */
    private final MemorySegment memory;
    private final long base;
    /** Each request's destination, checked again when the batch is posted. */
    private final DatagramQueuePair.Destination[] to;

    DatagramBatch(DatagramQueuePair qp, int capacity, MemorySegment memory) {
        super(capacity, memory);
        this.qp = qp;
        this.memory = memory;
        this.base = memory.address();
        this.to = new DatagramQueuePair.Destination[capacity];
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
     * @throws IllegalStateException     when the batch is full, or the buffer or the destination is closed
     * @throws IllegalArgumentException  when the destination belongs to another queue pair, the id is
     *                                   negative or the length exceeds the MTU
     * @throws IndexOutOfBoundsException when the range lies outside the buffer
     */
    public DatagramBatch send(long wrId, DatagramQueuePair.Destination to, RegisteredBuffer local, long localOffset,
                              int length, boolean wantSignal) {
        int i = nextIndex(wrId);
        qp.checkSend(to, local, localOffset, length, "batch");
        long wr = PostList.wrOffset(i);
        WorkRequests.send(memory, base, wr, sgeOffset(i), wrId, verbs_h.IBV_WR_SEND,
                wantSignal ? verbs_h.IBV_SEND_SIGNALED : 0, 0, local.address() + localOffset, length, local.lkey());
        DatagramQueuePair.address(memory, wr, to);
        this.to[i] = to;
        added(i, local);
        return this;
    }

    /**
     * Called by the post under its queue pair's lock: a destination closed after it was added
     * would leave a freed address handle in the list.
     *
     * @throws IllegalStateException when one of the collected sends' destinations is closed
     */
    void checkDestinations() {
        for (int i = 0; i < size(); i++) {
            qp.checkOpenDestination(to[i], "post a batch");
        }
    }

    DatagramQueuePair owner() {
        return qp;
    }
}
