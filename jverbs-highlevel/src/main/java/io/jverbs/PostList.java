package io.jverbs;

import io.jverbs.ibverbs.raw.ibv_send_wr;
import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * What {@link WorkBatch} and {@link DatagramBatch} share: a queue pair's memory holding up to
 * {@link #capacity()} send requests and their SGEs, linked in order as they are added and posted
 * from the first with one {@code ibv_post_send}. Not thread-safe: fill and post from one thread.
 */
public abstract sealed class PostList permits WorkBatch, DatagramBatch {
    static final long WR_BYTES = io.jverbs.ibverbs.raw.ibv_send_wr.sizeof();
    static final long SGE_BYTES = io.jverbs.ibverbs.raw.ibv_sge.sizeof();
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;

    private final int capacity;
    final MemorySegment memory;
    final long base;
    private final long sgeBase;
    private int size;
    /** The buffer each request reads or writes, checked again at the post. */
    private final RegisteredBuffer[] buffers;

    /**
     * Makes a list in {@code memory}, made by its queue pair ({@link QueuePair#newBatch},
     * {@link io.jverbs.DatagramQueuePair#newBatch}).
     *
     * @param capacity the most requests it holds
     * @param memory   at least {@code capacity} requests and their SGEs
     */
    protected PostList(int capacity, MemorySegment memory) {
        this.capacity = capacity;
        this.memory = memory;
        this.base = memory.address();
        this.sgeBase = capacity * WR_BYTES;
        this.buffers = new RegisteredBuffer[capacity];
    }

    /** The bytes of {@code capacity} requests and their SGEs; a subclass's own room comes after. */
    static long listBytes(int capacity) {
        return capacity * (WR_BYTES + SGE_BYTES);
    }

    /**
     * Returns how many requests are collected.
     *
     * @return requests waiting for their queue pair's {@code post}
     */
    public final int size() {
        return size;
    }

    /**
     * Returns the most requests one batch holds.
     *
     * @return the capacity
     */
    public final int capacity() {
        return capacity;
    }

    /** Drops the collected requests. */
    public final void clear() {
        java.util.Arrays.fill(buffers, 0, size, null);
        size = 0;
    }

    /**
     * The index the next request takes, after the checks every add makes.
     *
     * @throws IllegalArgumentException when the id is negative
     * @throws IllegalStateException    when the batch is full
     */
    final int nextIndex(long wrId) {
        if (wrId < 0) {
            throw new IllegalArgumentException("work-request ids are 0 to 2^63-1, not " + wrId);
        }
        if (size == capacity) {
            throw new IllegalStateException("the batch is full (" + capacity + " requests): post it first");
        }
        return size;
    }

    /** Offset of request {@code i} in {@link #memory}. */
    static long wrOffset(int i) {
        return i * WR_BYTES;
    }

    /** Offset of request {@code i}'s SGE in {@link #memory}. */
    final long sgeOffset(int i) {
        return sgeBase + i * SGE_BYTES;
    }

    /** Counts request {@code i}, filled by the caller, and links the one before it to it. */
    final void added(int i, RegisteredBuffer local) {
        buffers[i] = local;
        if (i > 0) {
            memory.set(LONG, wrOffset(i - 1) + ibv_send_wr.next$OFFSET, base + wrOffset(i));
        }
        size = i + 1;
    }

    /** Sets or clears request {@code i}'s signaled flag. */
    final void signal(int i, boolean on) {
        long at = wrOffset(i) + ibv_send_wr.send_flags$OFFSET;
        int flags = memory.get(INT, at);
        memory.set(INT, at, on ? flags | verbs_h.IBV_SEND_SIGNALED : flags & ~verbs_h.IBV_SEND_SIGNALED);
    }

    final boolean signalFlag(int i) {
        return (memory.get(INT, wrOffset(i) + ibv_send_wr.send_flags$OFFSET) & verbs_h.IBV_SEND_SIGNALED) != 0;
    }

    /** The local buffer of request {@code i}. */
    final RegisteredBuffer buffer(int i) {
        return buffers[i];
    }

    /** The payload length of request {@code i} (its SGE's). */
    final int lengthOf(int i) {
        return memory.get(INT, sgeOffset(i) + io.jverbs.ibverbs.raw.ibv_sge.length$OFFSET);
    }

    /**
     * Records in {@code queue}'s ring what each signaled request among the first {@code count}
     * retires ({@link QueueEndpoint#pushCover}), starting after {@code run} unsignaled requests
     * posted before this list.
     *
     * @return the unsignaled requests after the last signaled one, for the queue's next post
     */
    final int recordCovers(SendQueue queue, int count, int run) {
        for (int i = 0; i < count; i++) {
            if (signalFlag(i)) {
                queue.push(run + 1);
                run = 0;
            } else {
                run++;
            }
        }
        return run;
    }

    /**
     * Checks again, at the post, that every buffer the requests name is open and its memory alive:
     * a buffer closed (or its caller's arena closed) after it was added would let the device read
     * or write memory that is no longer the buffer's.
     */
    final void recheck(String what) {
        for (int i = 0; i < size; i++) {
            buffers[i].checkOpen(what);
        }
    }

    final long firstAddress() {
        return base;
    }

    /**
     * How many requests of a refused post went to the device: those before {@code badWr}, the
     * request post_send stopped at; 0 when it names none of this list's.
     */
    final int postedBefore(long badWr) {
        long offset = badWr - base;
        return offset >= 0 && offset < size * WR_BYTES && offset % WR_BYTES == 0 ? (int) (offset / WR_BYTES) : 0;
    }
}
