package io.jverbs;

import java.util.Objects;

/**
 * How a connected queue pair is made and connected: reliable ({@link #rc}, the usual choice) or
 * unreliable ({@link #uc}). Start from one of the two and adjust with the {@code with…} methods;
 * the defaults suit ConnectX and Soft-RoCE alike.
 *
 * @param sendQueue     completion queue of send-side work (writes, reads, sends, atomics)
 * @param receiveQueue  completion queue of receives (may be the same queue)
 * @param maxSendWr     send-queue depth (default 128)
 * @param maxRecvWr     receive-queue depth (default 128)
 * @param maxInlineData bytes sent inline (copied at post time, no lkey needed), default 64;
 *                      the device may grant more
 * @param port          the device port, default 1
 * @param gidIndex      the GID index, or -1 to choose (IPv4-mapped RoCE v2 first)
 * @param signalEvery   with unsignaled posts, every this-many requests one is signaled anyway
 *                      so the send queue drains (completion moderation), default 16
 * @param timeout       local ACK timeout exponent: 4.096 µs × 2^timeout (default 14, about 67 ms)
 * @param retryCount    transport retries before RETRY_EXC_ERR (default 7)
 * @param rnrRetry      receiver-not-ready retries (default 7 = infinite)
 * @param maxRdAtomic   outstanding RDMA Read/atomics in each direction (default 1)
 * @param confined      whether the queue pair is confined to the thread that creates it (default
 *                      false): its posts and its {@code close()} are accepted only from that thread
 *                      (others get {@link WrongThreadException}), like a confined
 *                      {@link java.lang.foreign.Arena}, and in exchange a post takes no lock. Its
 *                      completions may still be polled on any thread.
 * @param transport     {@link Transport#RC} (default) or {@link Transport#UC}; a UC queue pair does
 *                      RDMA Write and Send only (Read and atomics are refused before posting), and
 *                      ignores {@code timeout}, {@code retryCount}, {@code rnrRetry} and
 *                      {@code maxRdAtomic}
 */
public record QueuePairConfig(CompletionQueue sendQueue, CompletionQueue receiveQueue, int maxSendWr, int maxRecvWr,
                              int maxInlineData, int port, int gidIndex, int signalEvery, int timeout, int retryCount,
                              int rnrRetry, int maxRdAtomic, boolean confined, Transport transport) {
    /** The connected transports: the verbs' {@code IBV_QPT_RC} and {@code IBV_QPT_UC}. */
    public enum Transport {
        /**
         * Reliable connected: acknowledged, retried, in order; every operation (Write, Read, Send,
         * atomics). A lost packet is resent; a peer that stops answering ends in RETRY_EXC_ERR.
         */
        RC,
        /**
         * Unreliable connected: RDMA Write and Send, no acknowledgements and no retries. A message
         * lost on the wire, or a Send that finds no receive posted, is dropped without an error on
         * either side; a send completion only says the message left.
         */
        UC
    }

    /**
     * Validates.
     *
     * @throws IllegalArgumentException when a value is out of range
     * @throws NullPointerException     when a queue is null
     */
    public QueuePairConfig {
        Objects.requireNonNull(sendQueue, "sendQueue");
        Objects.requireNonNull(receiveQueue, "receiveQueue");
        Objects.requireNonNull(transport, "transport");
        check(maxSendWr >= 1, "maxSendWr >= 1");
        check(maxRecvWr >= 1, "maxRecvWr >= 1");
        check(maxInlineData >= 0, "maxInlineData >= 0");
        check(port >= 1 && port <= 255, "port 1..255");
        check(gidIndex >= -1, "gidIndex >= -1");
        check(signalEvery >= 1 && signalEvery <= maxSendWr, "signalEvery 1..maxSendWr");
        check(timeout >= 0 && timeout <= 31, "timeout 0..31");
        check(retryCount >= 0 && retryCount <= 7, "retryCount 0..7");
        check(rnrRetry >= 0 && rnrRetry <= 7, "rnrRetry 0..7");
        check(maxRdAtomic >= 1 && maxRdAtomic <= 255, "maxRdAtomic 1..255");
    }

    private static void check(boolean ok, String rule) {
        if (!ok) {
            throw new IllegalArgumentException("queue pair config: " + rule);
        }
    }

    /**
     * A reliable-connected queue pair's defaults, both directions on one completion queue.
     *
     * @param cq the completion queue
     * @return the config
     */
    public static QueuePairConfig rc(CompletionQueue cq) {
        return new QueuePairConfig(cq, cq, 128, 128, 64, 1, -1, 16, 14, 7, 7, 1, false, Transport.RC);
    }

    /**
     * An unreliable-connected queue pair's defaults ({@link Transport#UC}), both directions on one
     * completion queue: as {@link #rc}, for RDMA Write and Send only.
     *
     * @param cq the completion queue
     * @return the config
     */
    public static QueuePairConfig uc(CompletionQueue cq) {
        return rc(cq).withTransport(Transport.UC);
    }

    /**
     * Returns a copy with another transport.
     *
     * @param transport RC or UC
     * @return the copy
     * @throws NullPointerException when {@code transport} is null
     */
    public QueuePairConfig withTransport(Transport transport) {
        return new QueuePairConfig(sendQueue, receiveQueue, maxSendWr, maxRecvWr, maxInlineData, port, gidIndex,
                signalEvery, timeout, retryCount, rnrRetry, maxRdAtomic, confined, transport);
    }

    /**
     * Returns a copy with other queue depths.
     *
     * @param send    send-queue depth
     * @param receive receive-queue depth
     * @return the copy
     */
    public QueuePairConfig withDepth(int send, int receive) {
        return new QueuePairConfig(sendQueue, receiveQueue, send, receive, maxInlineData, port, gidIndex,
                Math.min(signalEvery, send), timeout, retryCount, rnrRetry, maxRdAtomic, confined, transport);
    }

    /**
     * Returns a copy with another inline limit.
     *
     * @param bytes the most bytes sent inline
     * @return the copy
     */
    public QueuePairConfig withMaxInlineData(int bytes) {
        return new QueuePairConfig(sendQueue, receiveQueue, maxSendWr, maxRecvWr, bytes, port, gidIndex, signalEvery,
                timeout, retryCount, rnrRetry, maxRdAtomic, confined, transport);
    }

    /**
     * Returns a copy with another GID index.
     *
     * @param index the GID index, or -1 to choose
     * @return the copy
     */
    public QueuePairConfig withGidIndex(int index) {
        return new QueuePairConfig(sendQueue, receiveQueue, maxSendWr, maxRecvWr, maxInlineData, port, index,
                signalEvery, timeout, retryCount, rnrRetry, maxRdAtomic, confined, transport);
    }

    /**
     * Returns a copy with other retry settings: the time to RETRY_EXC_ERR on a dead link is about
     * 4.096 µs × 2^timeout × (retryCount + 1).
     *
     * @param ackTimeout the ACK timeout exponent
     * @param retries    the retry count
     * @return the copy
     */
    public QueuePairConfig withRetry(int ackTimeout, int retries) {
        return new QueuePairConfig(sendQueue, receiveQueue, maxSendWr, maxRecvWr, maxInlineData, port, gidIndex,
                signalEvery, ackTimeout, retries, rnrRetry, maxRdAtomic, confined, transport);
    }

    /**
     * Returns a copy with another completion moderation.
     *
     * @param every one request in this many is signaled even when posted unsignaled
     * @return the copy
     */
    public QueuePairConfig withSignalEvery(int every) {
        return new QueuePairConfig(sendQueue, receiveQueue, maxSendWr, maxRecvWr, maxInlineData, port, gidIndex, every,
                timeout, retryCount, rnrRetry, maxRdAtomic, confined, transport);
    }

    /**
     * Returns a copy that is, or is not, confined to the creating thread (see {@link #confined()}).
     * A confined queue pair suits a thread that owns its connection (posts, and closes it, itself):
     * its posts skip the compare-and-set lock that serializes posters from many threads.
     *
     * @param confined whether posts and close are accepted only from the thread that creates the queue pair
     * @return the copy
     */
    public QueuePairConfig withConfined(boolean confined) {
        return new QueuePairConfig(sendQueue, receiveQueue, maxSendWr, maxRecvWr, maxInlineData, port, gidIndex,
                signalEvery, timeout, retryCount, rnrRetry, maxRdAtomic, confined, transport);
    }
}
