package io.jverbs;

import java.util.Objects;

/**
 * How a connected queue pair is made and connected: reliable ({@link #rc}, the usual choice) or
 * unreliable ({@link #uc}). Start from one of the two and adjust with the {@code with…} methods
 * (one per attribute); the defaults suit ConnectX and Soft-RoCE alike and always give up.
 *
 * <p>What the defaults give up after, on a peer that stopped answering: a request is retried
 * {@code retryCount} times after an ACK timeout of 4.096 µs × 2^{@code timeout} each, so with 14
 * and 6 it ends in {@code RETRY_EXC_ERR} after about 7 × 67 ms ≈ 0.5 s (seen: 0.6 s on rxe); a
 * Send that finds no receive posted is retried {@code rnrRetry} times after the receiver's
 * {@code minRnrTimer} each, so with 6 and 24 (40.96 ms) it ends in {@code RNR_RETRY_EXC_ERR}
 * after about 7 × 41 ms ≈ 0.3 s. A count of 7 means "retry forever" (by the InfiniBand
 * specification for RNR, and in rxe for transport retries too): no default uses it, and a caller
 * who sets it (as C perftest does) accepts that a dead peer is noticed only by a deadline of its
 * own. A future of the queue pair fails at its {@code operationTimeout} (default 10 s) even when
 * no completion ever arrives.
 *
 * <p>On a wire that drops, reorders or repeats packets, RoCE retransmits from the first missing
 * packet (go-back-N), and a finite {@code retryCount} can run out while every byte would still
 * arrive: on rxe with 25 % of packets reordered, a 1 MiB stream with the default 6 once ended in
 * {@code RETRY_EXC_ERR}. There, raise {@code timeout} or use 7 and rely on the
 * {@code operationTimeout}.
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
 * @param timeout       local ACK timeout exponent, 1 to 31: 4.096 µs × 2^timeout (default 14, about
 *                      67 ms); 0, which the verbs read as "no timeout", is refused
 * @param retryCount    transport retries before RETRY_EXC_ERR, 0 to 7 (default 6; 7 never gives up on rxe)
 * @param rnrRetry      receiver-not-ready retries before RNR_RETRY_EXC_ERR, 0 to 7 (default 6; 7 = forever)
 * @param maxRdAtomic   outstanding RDMA Read/atomics in each direction (default 1)
 * @param confined      whether the queue pair is confined to the thread that creates it (default
 *                      false): its posts and its {@code close()} are accepted only from that thread
 *                      (others get {@link WrongThreadException}), like a confined
 *                      {@link java.lang.foreign.Arena}, and in exchange a post takes no lock. Its
 *                      completions may still be polled on any thread. Once that thread has ended,
 *                      any thread may close it (directly or through its context).
 * @param transport     {@link Transport#RC} (default) or {@link Transport#UC}; a UC queue pair does
 *                      RDMA Write and Send only (Read and atomics are refused before posting), and
 *                      ignores {@code timeout}, {@code retryCount}, {@code rnrRetry},
 *                      {@code minRnrTimer} and {@code maxRdAtomic}
 * @param minRnrTimer   how long a peer whose Send found no receive posted here waits before it
 *                      retries, as the InfiniBand encoding 1 to 31 (12 = 0.64 ms, 20 = 10.24 ms,
 *                      24 = 40.96 ms, 31 = 491.52 ms; 0 = 655.36 ms), default 24
 * @param remoteAccess  what a peer may do through this queue pair (RDMA Write, Read, atomics into
 *                      this side's registered buffers), or {@code null} (default) for exactly the
 *                      remote rights granted to buffers registered in the queue pair's protection
 *                      domain, widened when a buffer with new rights is registered; an empty set
 *                      lets a peer only Send. UC admits {@link Access#REMOTE_WRITE} only.
 * @param operationTimeout the most a future of a send-side operation (Write, Read, Send, atomics)
 *                      waits for its completion: it then fails with a
 *                      {@link java.util.concurrent.TimeoutException} naming the operation (default
 *                      10 s; 1 ms to 365 days). A receive's future has no deadline (it waits for the
 *                      peer's message); it fails when the queue pair errors or closes, or when the
 *                      poller serving it ends. Any future whose completion queue nobody polls
 *                      (no {@link Poller}, no call to {@link CompletionQueue#poll} for 2 s) fails
 *                      with an {@link IllegalStateException} naming {@code Poller}.
 * @param route         how its packets are marked: service level, and on a routed path (RoCE)
 *                      traffic class, flow label and hop limit ({@link Route#DEFAULT}: 0, 0, 0, 64)
 */
public record QueuePairConfig(CompletionQueue sendQueue, CompletionQueue receiveQueue, int maxSendWr, int maxRecvWr,
                              int maxInlineData, int port, int gidIndex, int signalEvery, int timeout, int retryCount,
                              int rnrRetry, int maxRdAtomic, boolean confined, Transport transport, int minRnrTimer,
                              java.util.Set<Access> remoteAccess, java.time.Duration operationTimeout, Route route) {
    /** The longest {@link #operationTimeout()}: 365 days. */
    public static final java.time.Duration MAX_OPERATION_TIMEOUT = java.time.Duration.ofDays(365);
    /** The default {@link #operationTimeout()}. */
    public static final java.time.Duration DEFAULT_OPERATION_TIMEOUT = java.time.Duration.ofSeconds(10);

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
        check(timeout >= 1 && timeout <= 31, "timeout 1..31 (0 would turn the ACK timeout off: a request to a dead peer"
                + " would never end)");
        check(retryCount >= 0 && retryCount <= 7, "retryCount 0..7");
        check(rnrRetry >= 0 && rnrRetry <= 7, "rnrRetry 0..7");
        check(maxRdAtomic >= 1 && maxRdAtomic <= 255, "maxRdAtomic 1..255");
        check(minRnrTimer >= 0 && minRnrTimer <= 31, "minRnrTimer 0..31");
        Objects.requireNonNull(operationTimeout, "operationTimeout");
        Objects.requireNonNull(route, "route");
        check(operationTimeout.compareTo(java.time.Duration.ofMillis(1)) >= 0
                && operationTimeout.compareTo(MAX_OPERATION_TIMEOUT) <= 0, "operationTimeout 1 ms to 365 days");
        if (remoteAccess != null) {
            remoteAccess = java.util.Set.copyOf(remoteAccess);
            check(transport == Transport.RC || !remoteAccess.contains(Access.REMOTE_READ)
                    && !remoteAccess.contains(Access.REMOTE_ATOMIC), "UC admits REMOTE_WRITE only");
        }
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
        return new QueuePairConfig(cq, cq, 128, 128, 64, 1, -1, 16, 14, 6, 6, 1, false, Transport.RC, 24, null,
                DEFAULT_OPERATION_TIMEOUT, Route.DEFAULT);
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
     * @throws IllegalArgumentException when the remote rights do not suit the transport
     */
    public QueuePairConfig withTransport(Transport transport) {
        return with(c -> c.transport = transport);
    }

    /**
     * Returns a copy with other completion queues (they must belong to the same context as the
     * protection domain the queue pair is made in, and have room for its depths).
     *
     * @param send    the completion queue of send-side work
     * @param receive the completion queue of receives (may be {@code send})
     * @return the copy
     * @throws NullPointerException when a queue is null
     */
    public QueuePairConfig withQueues(CompletionQueue send, CompletionQueue receive) {
        return with(c -> {
            c.sendQueue = send;
            c.receiveQueue = receive;
        });
    }

    /**
     * Returns a copy with other queue depths.
     *
     * @param send    send-queue depth
     * @param receive receive-queue depth
     * @return the copy
     * @throws IllegalArgumentException when a depth is below 1
     */
    public QueuePairConfig withDepth(int send, int receive) {
        return with(c -> {
            c.maxSendWr = send;
            c.maxRecvWr = receive;
            c.signalEvery = Math.min(c.signalEvery, send);
        });
    }

    /**
     * Returns a copy with another inline limit.
     *
     * @param bytes the most bytes sent inline
     * @return the copy
     * @throws IllegalArgumentException when negative
     */
    public QueuePairConfig withMaxInlineData(int bytes) {
        return with(c -> c.maxInlineData = bytes);
    }

    /**
     * Returns a copy on another device port.
     *
     * @param port the port number, 1 to 255
     * @return the copy
     * @throws IllegalArgumentException when out of range
     */
    public QueuePairConfig withPort(int port) {
        return with(c -> c.port = port);
    }

    /**
     * Returns a copy with another GID index.
     *
     * @param index the GID index, or -1 to choose
     * @return the copy
     */
    public QueuePairConfig withGidIndex(int index) {
        return with(c -> c.gidIndex = index);
    }

    /**
     * Returns a copy with other retry settings: the time to RETRY_EXC_ERR on a dead link is about
     * 4.096 µs × 2^ackTimeout × (retries + 1).
     *
     * @param ackTimeout the ACK timeout exponent, 1 to 31 (0, "no ACK timeout" in the verbs, is
     *                   refused: a request to a dead peer would never end)
     * @param retries    the retry count, 0 to 7 (7 never gives up on rxe)
     * @return the copy
     * @throws IllegalArgumentException when out of range
     */
    public QueuePairConfig withRetry(int ackTimeout, int retries) {
        return with(c -> {
            c.timeout = ackTimeout;
            c.retryCount = retries;
        });
    }

    /**
     * Returns a copy with other receiver-not-ready settings: a Send that finds no receive posted
     * at the peer ends in RNR_RETRY_EXC_ERR after about (retries + 1) × the peer's timer.
     *
     * @param retries    the RNR retry count, 0 to 7 (7 = forever)
     * @param minRnrTimer this side's timer a peer's Send waits when it finds no receive here, 0 to 31
     *                    (see {@link #minRnrTimer()})
     * @return the copy
     * @throws IllegalArgumentException when out of range
     */
    public QueuePairConfig withRnrRetry(int retries, int minRnrTimer) {
        return with(c -> {
            c.rnrRetry = retries;
            c.minRnrTimer = minRnrTimer;
        });
    }

    /**
     * Returns a copy with another number of outstanding RDMA Reads and atomics (as initiator and
     * as target; the device caps it, rxe at 128: {@link QueuePair#maxRdAtomic()} says what was granted).
     *
     * @param outstanding 1 to 255
     * @return the copy
     * @throws IllegalArgumentException when out of range
     */
    public QueuePairConfig withMaxRdAtomic(int outstanding) {
        return with(c -> c.maxRdAtomic = outstanding);
    }

    /**
     * Returns a copy with another completion moderation.
     *
     * @param every one request in this many is signaled even when posted unsignaled
     * @return the copy
     */
    public QueuePairConfig withSignalEvery(int every) {
        return with(c -> c.signalEvery = every);
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
        return with(c -> c.confined = confined);
    }

    /**
     * Returns a copy that lets a peer do exactly {@code rights} through the queue pair, instead of
     * what the protection domain's buffers were granted (see {@link #remoteAccess()}).
     *
     * @param rights the remote rights; none: a peer may only Send
     * @return the copy
     * @throws IllegalArgumentException when a UC queue pair is given more than REMOTE_WRITE
     */
    public QueuePairConfig withRemoteAccess(Access... rights) {
        java.util.Set<Access> set = java.util.EnumSet.noneOf(Access.class);
        java.util.Collections.addAll(set, rights);
        return with(c -> c.remoteAccess = set);
    }

    /**
     * Returns a copy whose futures fail after {@code timeout} without a completion.
     *
     * @param limit 1 ms to {@link #MAX_OPERATION_TIMEOUT} (365 days)
     * @return the copy
     * @throws IllegalArgumentException when outside that range
     */
    public QueuePairConfig withOperationTimeout(java.time.Duration limit) {
        return with(c -> c.operationTimeout = limit);
    }

    /**
     * Returns a copy whose packets carry {@code route}: its service level, and on a routed path
     * (RoCE) its traffic class, flow label and hop limit. Applied when the queue pair connects.
     *
     * @param route the route (not null; {@link Route#DEFAULT} unless set)
     * @return the copy
     * @throws NullPointerException when {@code route} is null
     */
    public QueuePairConfig withRoute(Route route) {
        return with(c -> c.route = route);
    }

    /**
     * Every {@code with…} method is one change to a copy of all the components, validated again
     * by the canonical constructor: a new component is added here once, not in every method.
     */
    private QueuePairConfig with(java.util.function.Consumer<Components> change) {
        Components c = new Components(this);
        change.accept(c);
        return c.build();
    }

    /** The components of a config being changed, mutable. */
    private static final class Components {
        CompletionQueue sendQueue;
        CompletionQueue receiveQueue;
        int maxSendWr;
        int maxRecvWr;
        int maxInlineData;
        int port;
        int gidIndex;
        int signalEvery;
        int timeout;
        int retryCount;
        int rnrRetry;
        int maxRdAtomic;
        boolean confined;
        Transport transport;
        int minRnrTimer;
        java.util.Set<Access> remoteAccess;
        java.time.Duration operationTimeout;
        Route route;

        Components(QueuePairConfig c) {
            sendQueue = c.sendQueue;
            receiveQueue = c.receiveQueue;
            maxSendWr = c.maxSendWr;
            maxRecvWr = c.maxRecvWr;
            maxInlineData = c.maxInlineData;
            port = c.port;
            gidIndex = c.gidIndex;
            signalEvery = c.signalEvery;
            timeout = c.timeout;
            retryCount = c.retryCount;
            rnrRetry = c.rnrRetry;
            maxRdAtomic = c.maxRdAtomic;
            confined = c.confined;
            transport = c.transport;
            minRnrTimer = c.minRnrTimer;
            remoteAccess = c.remoteAccess;
            operationTimeout = c.operationTimeout;
            route = c.route;
        }

        QueuePairConfig build() {
            return new QueuePairConfig(sendQueue, receiveQueue, maxSendWr, maxRecvWr, maxInlineData, port, gidIndex,
                    signalEvery, timeout, retryCount, rnrRetry, maxRdAtomic, confined, transport, minRnrTimer,
                    remoteAccess, operationTimeout, route);
        }
    }

    /** The verbs access flags a peer gets through this queue pair, given the domain's granted rights. */
    int accessFlags(java.util.Set<Access> domainRights) {
        java.util.Set<Access> rights = remoteAccess != null ? remoteAccess : domainRights;
        int flags = Access.flags(rights);
        if (transport == Transport.UC) {
            flags &= io.jverbs.ibverbs.raw.verbs_h.IBV_ACCESS_LOCAL_WRITE | io.jverbs.ibverbs.raw.verbs_h.IBV_ACCESS_REMOTE_WRITE;
        }
        return flags;
    }
}
