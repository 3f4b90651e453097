package io.jverbs;

import io.jverbs.ibverbs.VerbsException;
import io.jverbs.latency.LatencyTracker;
import io.jverbs.ibverbs.raw.ibv_ah_attr;
import io.jverbs.ibverbs.raw.ibv_global_route;
import io.jverbs.ibverbs.raw.ibv_qp;
import io.jverbs.ibverbs.raw.ibv_qp_attr;
import io.jverbs.ibverbs.raw.ibv_qp_init_attr;
import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;


/**
 * A connected queue pair: reliable (RC, every operation) or unreliable (UC, RDMA Write and Send
 * only; see {@link QueuePairConfig.Transport}). It is born <em>prepared</em>: it can tell its
 * {@link #localEndpoint()}, which the peer needs; {@link #connect(Endpoint)} with the peer's
 * endpoint makes it <em>connected</em>, and only then can work be posted.
 *
 * <p>Two styles of operation, freely mixed:
 * <ul>
 * <li>zero allocation: {@link #write}, {@link #read}, {@link #send}, {@link #receive},
 *     {@link #compareAndSwap}, {@link #fetchAndAdd} … take the caller's work-request id (0 to
 *     2<sup>63</sup>−1) and return {@link #OK} or a full-queue code; the completion goes to the
 *     {@link CompletionHandler} given to {@link CompletionQueue#poll};</li>
 * <li>futures: {@link #async()}{@code .write(...)}, {@code .read(...)}, … return a
 *     {@link CompletableFuture} completed by whoever polls the completion queue ({@link Poller});
 *     a failed completion fails it with {@link CompletionFailedException} naming the status.</li>
 * </ul>
 *
 * <p>Checks made before anything reaches the device: the queue pair is open and connected and
 * not in error; the local range lies inside its registered buffer (which is open); the remote
 * range lies inside the {@link RemoteBuffer}; atomics are 8 bytes at an 8-byte aligned address.
 * A full queue is a return value (or {@link QueueFullException}), never a wait. Payloads up to
 * {@link #maxInlineData()} bytes are sent inline (copied when posted).
 *
 * <p>Thread-safety: every method may be called from any thread; posts are serialized per queue
 * pair (a compare-and-set lock, not a monitor: a waiting poster spins, yields, then parks, and is
 * never inside native code meanwhile), and {@link #close()} waits for a post in progress, so
 * closing never races the device. A queue pair made with {@link QueuePairConfig#confined()}
 * instead belongs to the thread that created it: posts and {@link #close()} from any other thread
 * throw {@link WrongThreadException} (before anything is posted or closed), and its posts take no
 * lock. Its completions may be polled on any thread.
 * Closing fails the futures of work still in flight ({@code IllegalStateException}); the
 * zero-allocation style hears nothing more of such work.
 */
public final class QueuePair extends PostingEndpoint {
    /** A post was accepted. */
    public static final int OK = 0;
    /** The send queue is full: poll completions, then post again. */
    public static final int SEND_QUEUE_FULL = -1;
    /** The receive queue is full. */
    public static final int RECEIVE_QUEUE_FULL = -2;
    /** Work-request ids with this bit belong to futures; callers' ids must not use it. */
    static final long FUTURE_TAG = 1L << 63;

    private static final SecureRandom PSN = new SecureRandom();

    /** The states a queue pair goes through, as jverbs tracks them. */
    public enum State {
        /** Created; its endpoint is known; not yet connected. */
        PREPARED,
        /** Connected (RTS): work can be posted. */
        CONNECTED,
        /** A work request failed: the queue pair no longer executes work (flushes it). */
        ERROR,
        /** Closed. */
        CLOSED
    }

    private final MemorySegment qp;
    private final long qpAddress;
    private final int number;
    private final int psn;
    private final Gid gid;
    private final Context.PortAttributes port;
    /** Outstanding RDMA Reads/atomics in each direction: the config's, capped by the device when created. */
    private final int rdAtomic;
    /** The futures' face of this queue pair and their slots. */
    private final Async async;
    private volatile String errorText;
    /** The access flags the device has for this queue pair (set at connect, widened with the domain's). */
    private int accessFlags;
    /** Releases the rdma_cm connection that owns this queue pair, if any: run by its close. */
    private volatile Runnable connectionRelease;

    QueuePair(ProtectionDomain pd, QueuePairConfig config, MemorySegment qp, int maxInline, Gid gid,
              Context.PortAttributes port, int rdAtomic) {
        super(pd, config, qp, maxInline);
        this.qp = qp;
        this.qpAddress = qp.address();
        MemorySegment q = qp.reinterpret(ibv_qp.sizeof());
        this.number = ibv_qp.qp_num(q);
        this.psn = PSN.nextInt(1 << 24);
        this.gid = gid;
        this.port = port;
        this.rdAtomic = rdAtomic;
        this.async = new Async(this, config.maxSendWr() + config.maxRecvWr());
    }


    @Override
    protected long nativeAddress() {
        return qpAddress;
    }

    @Override
    protected String kindAndNumber() {
        return "queue pair " + number;
    }

    /**
     * Returns the queue pair number.
     *
     * @return the QP number
     */
    @Override
    public int number() {
        return number;
    }

    /**
     * Returns how many bytes a post sends inline.
     *
     * @return the inline limit granted by the device (and asked for in the config)
     */
    public int maxInlineData() {
        return maxInline;
    }

    /**
     * Returns how many RDMA Reads and atomics may be outstanding in each direction.
     *
     * @return {@link QueuePairConfig#maxRdAtomic()}, capped by the device's limit
     */
    public int maxRdAtomic() {
        return rdAtomic;
    }

    @Override
    protected int entriesOn(CompletionQueue queue) {
        return (queue == config.sendQueue() ? config.maxSendWr() : 0)
                + (queue == config.receiveQueue() ? config.maxRecvWr() : 0);
    }

    /**
     * Returns the protection domain this queue pair belongs to: only buffers registered there can
     * be posted on it.
     *
     * @return its domain
     */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /**
     * Returns what a peer may do through this queue pair: the config's explicit rights
     * ({@link QueuePairConfig#withRemoteAccess}) or, by default, the rights its domain's buffers
     * were registered with so far (widened as buffers with new rights are registered), less what
     * the transport does not carry (UC carries writes only). Thread-safe.
     *
     * @return a copy; empty when a peer may only send to it
     */
    public java.util.Set<Access> remoteAccess() {
        return Access.of(config.accessFlags(pd == null ? java.util.EnumSet.noneOf(Access.class) : pd.grantedRights()));
    }

    /**
     * Returns the config this queue pair was made with.
     *
     * @return the config
     */
    public QueuePairConfig config() {
        return config;
    }

    /**
     * Returns the GID this side uses.
     *
     * @return the local GID entry
     */
    public Gid gid() {
        return gid;
    }

    /**
     * What the peer needs to connect to this queue pair.
     *
     * @return this side's endpoint
     */
    public Endpoint localEndpoint() {
        return new Endpoint(number, psn, port.lid(), gid.bytes(), port.activeMtu(), config.transport());
    }

    /**
     * Returns the state as jverbs tracks it.
     *
     * @return PREPARED, CONNECTED, ERROR (after a failed completion) or CLOSED
     */
    public synchronized State state() {
        return isClosed() ? State.CLOSED : state;
    }

    /**
     * Returns why the queue pair is in error.
     *
     * @return the first cause, as text (a failed completion, an asynchronous event, the peer's
     *         disconnect, or futures jverbs failed with their requests still in the device), or
     *         {@code null} when not in error
     */
    public synchronized String error() {
        return errorText;
    }

    /**
     * Asks the device for the queue pair's state ({@code ibv_query_qp}).
     *
     * @return the device's {@code IBV_QPS_*} value (6 = ERR)
     * @throws VerbsException when the query fails
     * @throws IllegalStateException when closed
     */
    public synchronized int deviceState() {
        ensureOpen("query its state");
        try (Arena scratchArena = Arena.ofConfined()) {
            MemorySegment attr = scratchArena.allocate(ibv_qp_attr.LAYOUT);
            MemorySegment init = scratchArena.allocate(ibv_qp_init_attr.LAYOUT);
            VerbsException.check("ibv_query_qp", verbs_h.ibv_query_qp(qp, attr, verbs_h.IBV_QP_STATE, init), 0);
            return ibv_qp_attr.qp_state(attr);
        }
    }

    /**
     * Connects to the peer's queue pair: RESET → INIT → RTR → RTS with every remote right the
     * transport has enabled on the queue pair (each buffer still decides what it allows): Write,
     * Read and atomics on RC; Write on UC, whose RTR and RTS take no acknowledgement, retry or
     * read-depth attributes.
     *
     * @param remote the peer's endpoint
     * @throws IllegalStateException when not PREPARED (connect twice, or closed)
     * @throws IllegalArgumentException when the endpoint states a transport other than this queue
     *                                  pair's (an RC endpoint given to a UC queue pair, or the
     *                                  reverse); the queue pair stays PREPARED
     * @throws VerbsException when the device refuses a transition (the queue pair is then reset
     *                        and stays PREPARED)
     */
    public synchronized void connect(Endpoint remote) {
        ensureOpen("connect");
        if (state != State.PREPARED) {
            throw new IllegalStateException("queue pair " + number + " is " + state + ": connect works once, on a"
                    + " prepared queue pair");
        }
        if (remote.transport() != null && remote.transport() != config.transport()) {
            throw new IllegalArgumentException("queue pair " + number + " is " + config.transport() + ", the peer's"
                    + " queue pair 0x" + Integer.toHexString(remote.qpn()) + " is " + remote.transport()
                    + ": both ends of a connection need the same transport (QueuePairConfig.withTransport)");
        }
        boolean rc = config.transport() == QueuePairConfig.Transport.RC;
        try {
            toInit(); // INIT to INIT: the rights of the domain's buffers as they are now
            modify(attr -> {
                ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_RTR);
                ibv_qp_attr.path_mtu(attr, Math.min(port.activeMtu(), remote.mtu()));
                ibv_qp_attr.dest_qp_num(attr, remote.qpn());
                ibv_qp_attr.rq_psn(attr, remote.psn());
                ibv_qp_attr.max_dest_rd_atomic(attr, (byte) rdAtomic);
                ibv_qp_attr.min_rnr_timer(attr, (byte) config.minRnrTimer());
                MemorySegment ah = ibv_qp_attr.ah_attr(attr);
                ibv_ah_attr.dlid(ah, (short) remote.lid());
                ibv_ah_attr.port_num(ah, (byte) config.port());
                boolean global = port.isEthernet() || remote.lid() == 0;
                if (global) {
                    ibv_ah_attr.is_global(ah, (byte) 1);
                    MemorySegment grh = ibv_ah_attr.grh(ah);
                    ibv_global_route.dgid(grh).copyFrom(MemorySegment.ofArray(remote.gid()));
                    ibv_global_route.sgid_index(grh, (byte) gid.index());
                }
                config.route().writeTo(ah, global);
            }, verbs_h.IBV_QP_STATE | verbs_h.IBV_QP_AV | verbs_h.IBV_QP_PATH_MTU | verbs_h.IBV_QP_DEST_QPN
                    | verbs_h.IBV_QP_RQ_PSN
                    | (rc ? verbs_h.IBV_QP_MAX_DEST_RD_ATOMIC | verbs_h.IBV_QP_MIN_RNR_TIMER : 0));
            modify(attr -> {
                ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_RTS);
                ibv_qp_attr.timeout(attr, (byte) config.timeout());
                ibv_qp_attr.retry_cnt(attr, (byte) config.retryCount());
                ibv_qp_attr.rnr_retry(attr, (byte) config.rnrRetry());
                ibv_qp_attr.sq_psn(attr, psn);
                ibv_qp_attr.max_rd_atomic(attr, (byte) rdAtomic);
            }, verbs_h.IBV_QP_STATE | verbs_h.IBV_QP_SQ_PSN
                    | (rc ? verbs_h.IBV_QP_TIMEOUT | verbs_h.IBV_QP_RETRY_CNT | verbs_h.IBV_QP_RNR_RETRY
                          | verbs_h.IBV_QP_MAX_QP_RD_ATOMIC : 0));
        } catch (RuntimeException e) {
            try {
                resetToInit("the connect failed: " + e.getMessage());
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        state = State.CONNECTED;
        syncAccess();
    }

    /**
     * RESET (or INIT) to INIT: where a queue pair takes receives. A prepared queue pair is in
     * INIT on the device from its creation, so receives can be posted before it connects.
     */
    synchronized void toInit() {
        modify(attr -> {
            ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_INIT);
            ibv_qp_attr.pkey_index(attr, (short) 0);
            ibv_qp_attr.port_num(attr, (byte) config.port());
            ibv_qp_attr.qp_access_flags(attr, connectAccessFlags());
        }, verbs_h.IBV_QP_STATE | verbs_h.IBV_QP_PKEY_INDEX | verbs_h.IBV_QP_PORT | verbs_h.IBV_QP_ACCESS_FLAGS);
    }

    /**
     * A connect that failed after the device moved the queue pair on: RESET, so that it answers
     * no peer, then INIT again, prepared for another connect. Receives posted before are gone
     * (RESET drops them without completions): their futures fail and the receive queue is empty.
     */
    private void resetToInit(String why) {
        modify(attr -> ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_RESET), verbs_h.IBV_QP_STATE);
        receivesDropped();
        failPending(new IllegalStateException("queue pair " + number + " was reset, its receives dropped: " + why),
                config.receiveQueue());
        toInit();
    }

    /**
     * The remote rights a connect gives the device: the config's, or the domain's buffers' so far
     * (widened later by {@link #syncAccess}).
     */
    synchronized int connectAccessFlags() {
        accessFlags = config.accessFlags(pd == null ? java.util.EnumSet.noneOf(Access.class) : pd.grantedRights());
        return accessFlags;
    }

    /**
     * Brings a connected queue pair's remote rights up to its domain's (a buffer with new rights
     * was registered after the connect): an RTS to RTS transition of the access flags.
     */
    synchronized void syncAccess() {
        if (isClosed() || state != State.CONNECTED || config.remoteAccess() != null || pd == null) {
            return;
        }
        int flags = config.accessFlags(pd.grantedRights());
        if (flags != accessFlags) {
            modify(attr -> ibv_qp_attr.qp_access_flags(attr, flags), verbs_h.IBV_QP_ACCESS_FLAGS);
            accessFlags = flags;
        }
    }

    /** rdma_cm's path: one transition with attributes rdma_init_qp_attr filled. */
    synchronized void transition(MemorySegment attr, int mask) {
        ensureOpen("connect");
        if (state != State.PREPARED) {
            throw new IllegalStateException("queue pair " + number + " is " + state + ": connect works once, on a"
                    + " prepared queue pair");
        }
        VerbsException.check("ibv_modify_qp", verbs_h.ibv_modify_qp(qp, attr, mask), 0);
    }

    synchronized void markConnected() {
        if (state == State.PREPARED) {
            state = State.CONNECTED;
            syncAccess();
        }
    }

    /**
     * The connection through rdma_cm that owns this queue pair: closing the queue pair runs
     * {@code release} (which disconnects the peer) before the destroy.
     */
    void ownedBy(Runnable release) {
        connectionRelease = release;
    }

    /**
     * A connection attempt through rdma_cm failed after the device moved the queue pair on: back
     * to RESET, so that it stops answering the peer (no write of the peer's lands), and PREPARED
     * again for jverbs.
     */
    synchronized void abandonConnect() {
        if (isClosed() || state != State.PREPARED) {
            return;
        }
        try {
            resetToInit("the rdma_cm handshake failed");
        } catch (RuntimeException ignored) {
            // a queue pair the device cannot reset is closed by its owner; nothing more to do here
        }
    }

    synchronized void requirePrepared() {
        ensureOpen("connect");
        if (state != State.PREPARED) {
            throw new IllegalStateException("queue pair " + number + " is " + state + ": connect works once, on a"
                    + " prepared queue pair");
        }
    }

    /**
     * The peer is gone (rdma_cm DISCONNECTED): the queue pair goes to ERR, so work in flight is
     * flushed (its futures fail with WR_FLUSH_ERR) and later posts are refused with the reason.
     */
    void peerDisconnected(String why) {
        enterError(why);
    }

    /**
     * Futures were failed while their requests may still be in the device: the queue pair goes to
     * ERR, so the device flushes them and never touches their buffers afterwards.
     */
    void abandonInDevice(String what) {
        enterError(what + ": put in error so the device flushes them and no longer touches their buffers");
    }

    /**
     * Puts the queue pair in ERR with {@code why}, unless closed or in error already: the device
     * flushes its work (each request completes with WR_FLUSH_ERR) and touches no buffer of it
     * again; later posts are refused with the reason.
     */
    private void enterError(String why) {
        synchronized (this) {
            if (isClosed() || state == State.ERROR) {
                return;
            }
            state = State.ERROR;
            errorText = why;
            try {
                modify(attr -> ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_ERR), verbs_h.IBV_QP_STATE);
            } catch (RuntimeException ignored) {
                // already in error on the device: nothing more to flush
            }
        }
    }

    private interface AttrFill {
        void fill(MemorySegment attr);
    }

    private void modify(AttrFill fill, int mask) {
        try (Arena scratchArena = Arena.ofConfined()) {
            MemorySegment attr = scratchArena.allocate(ibv_qp_attr.LAYOUT);
            fill.fill(attr);
            VerbsException.check("ibv_modify_qp", verbs_h.ibv_modify_qp(qp, attr, mask), 0);
        }
    }

    // ---- zero-allocation style ----

    /**
     * RDMA Write: copies {@code length} bytes from the local buffer to the remote one.
     *
     * @param wrId         the caller's work-request id (0 to 2<sup>63</sup>−1), handed back in the completion
     * @param local        the source, registered
     * @param localOffset  bytes from the start of {@code local}
     * @param length       bytes to write
     * @param remote       the peer's buffer (needs REMOTE_WRITE there)
     * @param remoteOffset bytes from the start of {@code remote}
     * @param signaled     whether a completion is wanted (one in {@code signalEvery} is signaled anyway)
     * @return {@link #OK} or {@link #SEND_QUEUE_FULL}
     * @throws IllegalStateException     when not connected, in error, or closed (also a closed buffer)
     * @throws WrongThreadException     when the queue pair is confined to another thread
     * @throws IndexOutOfBoundsException when a range lies outside its buffer
     * @throws IllegalArgumentException  when {@code wrId} is negative
     * @throws VerbsException            when the provider refuses the post
     */
    public int write(long wrId, RegisteredBuffer local, long localOffset, int length, RemoteBuffer remote,
                     long remoteOffset, boolean signaled) {
        return postSend(userId(wrId), verbs_h.IBV_WR_RDMA_WRITE, local, localOffset, length, remote, remoteOffset, 0,
                0, 0, signaled, "RDMA Write");
    }

    /**
     * RDMA Write with immediate: as {@link #write}, and the peer gets a receive completion carrying
     * {@code immediate} (it must have a receive posted).
     *
     * @param wrId         the caller's id
     * @param local        the source
     * @param localOffset  offset in {@code local}
     * @param length       bytes
     * @param remote       the peer's buffer
     * @param remoteOffset offset in {@code remote}
     * @param immediate    32 bits for the peer
     * @param signaled     whether a completion is wanted
     * @return {@link #OK} or {@link #SEND_QUEUE_FULL}
     * @throws IllegalStateException     when not connected, in error, or closed
     * @throws WrongThreadException     when the queue pair is confined to another thread
     * @throws IndexOutOfBoundsException when a range lies outside its buffer
     */
    public int writeWithImmediate(long wrId, RegisteredBuffer local, long localOffset, int length, RemoteBuffer remote,
                                  long remoteOffset, int immediate, boolean signaled) {
        return postSend(userId(wrId), verbs_h.IBV_WR_RDMA_WRITE_WITH_IMM, local, localOffset, length, remote,
                remoteOffset, immediate, 0, 0, signaled, "RDMA Write with immediate");
    }

    /**
     * RDMA Read: copies {@code length} bytes from the remote buffer into the local one.
     *
     * @param wrId         the caller's id
     * @param local        the destination
     * @param localOffset  offset in {@code local}
     * @param length       bytes
     * @param remote       the peer's buffer (needs REMOTE_READ there)
     * @param remoteOffset offset in {@code remote}
     * @param signaled     whether a completion is wanted
     * @return {@link #OK} or {@link #SEND_QUEUE_FULL}
     * @throws IllegalStateException     when not connected, in error, or closed
     * @throws WrongThreadException     when the queue pair is confined to another thread
     * @throws IndexOutOfBoundsException when a range lies outside its buffer
     * @throws UnsupportedOperationException when the queue pair is UC ({@link QueuePairConfig.Transport}): RC only
     */
    public int read(long wrId, RegisteredBuffer local, long localOffset, int length, RemoteBuffer remote,
                    long remoteOffset, boolean signaled) {
        requireReliable("RDMA Read");
        return postSend(userId(wrId), verbs_h.IBV_WR_RDMA_READ, local, localOffset, length, remote, remoteOffset, 0, 0,
                0, signaled, "RDMA Read");
    }

    /**
     * Send: the peer's next posted receive gets the bytes.
     *
     * @param wrId        the caller's id
     * @param local       the source
     * @param localOffset offset in {@code local}
     * @param length      bytes
     * @param signaled    whether a completion is wanted
     * @return {@link #OK} or {@link #SEND_QUEUE_FULL}
     * @throws IllegalStateException     when not connected, in error, or closed
     * @throws WrongThreadException     when the queue pair is confined to another thread
     * @throws IndexOutOfBoundsException when the range lies outside the buffer
     */
    public int send(long wrId, RegisteredBuffer local, long localOffset, int length, boolean signaled) {
        return postSend(userId(wrId), verbs_h.IBV_WR_SEND, local, localOffset, length, null, 0, 0, 0, 0, signaled,
                "Send");
    }

    /**
     * Send with immediate data.
     *
     * @param wrId        the caller's id
     * @param local       the source
     * @param localOffset offset in {@code local}
     * @param length      bytes
     * @param immediate   32 bits for the peer's receive completion
     * @param signaled    whether a completion is wanted
     * @return {@link #OK} or {@link #SEND_QUEUE_FULL}
     * @throws IllegalStateException     when not connected, in error, or closed
     * @throws WrongThreadException     when the queue pair is confined to another thread
     * @throws IndexOutOfBoundsException when the range lies outside the buffer
     */
    public int sendWithImmediate(long wrId, RegisteredBuffer local, long localOffset, int length, int immediate,
                                 boolean signaled) {
        return postSend(userId(wrId), verbs_h.IBV_WR_SEND_WITH_IMM, local, localOffset, length, null, 0, immediate, 0,
                0, signaled, "Send with immediate");
    }

    /**
     * Compare-and-swap on 8 remote bytes: if they equal {@code compare} they become {@code swap};
     * the original value lands in the local 8 bytes (in the peer's byte order as stored).
     *
     * @param wrId         the caller's id
     * @param local        where the original value lands (8 bytes)
     * @param localOffset  offset in {@code local}
     * @param remote       the peer's buffer (needs REMOTE_ATOMIC there)
     * @param remoteOffset offset in {@code remote}; the address must be 8-byte aligned
     * @param compare      the expected value
     * @param swap         the new value
     * @param signaled     whether a completion is wanted
     * @return {@link #OK} or {@link #SEND_QUEUE_FULL}
     * @throws IllegalArgumentException  when the remote address is not 8-byte aligned
     * @throws IllegalStateException     when not connected, in error, or closed
     * @throws WrongThreadException     when the queue pair is confined to another thread
     * @throws IndexOutOfBoundsException when a range lies outside its buffer
     * @throws UnsupportedOperationException when the queue pair is UC ({@link QueuePairConfig.Transport}): RC only
     */
    public int compareAndSwap(long wrId, RegisteredBuffer local, long localOffset, RemoteBuffer remote,
                              long remoteOffset, long compare, long swap, boolean signaled) {
        requireReliable("compare-and-swap");
        return postSend(userId(wrId), verbs_h.IBV_WR_ATOMIC_CMP_AND_SWP, local, localOffset, 8, remote, remoteOffset, 0,
                compare, swap, signaled, "compare-and-swap");
    }

    /**
     * Fetch-and-add on 8 remote bytes; the original value lands in the local 8 bytes.
     *
     * @param wrId         the caller's id
     * @param local        where the original value lands (8 bytes)
     * @param localOffset  offset in {@code local}
     * @param remote       the peer's buffer (needs REMOTE_ATOMIC there)
     * @param remoteOffset offset in {@code remote}; the address must be 8-byte aligned
     * @param add          the value to add
     * @param signaled     whether a completion is wanted
     * @return {@link #OK} or {@link #SEND_QUEUE_FULL}
     * @throws IllegalArgumentException  when the remote address is not 8-byte aligned
     * @throws IllegalStateException     when not connected, in error, or closed
     * @throws WrongThreadException     when the queue pair is confined to another thread
     * @throws IndexOutOfBoundsException when a range lies outside its buffer
     * @throws UnsupportedOperationException when the queue pair is UC ({@link QueuePairConfig.Transport}): RC only
     */
    public int fetchAndAdd(long wrId, RegisteredBuffer local, long localOffset, RemoteBuffer remote, long remoteOffset,
                           long add, boolean signaled) {
        requireReliable("fetch-and-add");
        return postSend(userId(wrId), verbs_h.IBV_WR_ATOMIC_FETCH_AND_ADD, local, localOffset, 8, remote, remoteOffset,
                0, add, 0, signaled, "fetch-and-add");
    }

    /**
     * Posts a receive for the peer's next Send (or Write with immediate). Allowed on a prepared
     * queue pair too (it is in INIT on the device): post the receives before connecting, and the
     * peer's first Send never meets an empty receive queue.
     *
     * @param wrId        the caller's id
     * @param local       where the message lands
     * @param localOffset offset in {@code local}
     * @param length      room for the message
     * @return {@link #OK} or {@link #RECEIVE_QUEUE_FULL}
     * @throws IllegalStateException     when in error or closed (a peer that sends before the receive is
     *                                   posted is retried by the device: receiver-not-ready retry)
     * @throws WrongThreadException     when the queue pair is confined to another thread
     * @throws IndexOutOfBoundsException when the range lies outside the buffer
     */
    public int receive(long wrId, RegisteredBuffer local, long localOffset, int length) {
        return postReceive(userId(wrId), local, localOffset, length);
    }

    /**
     * The future-returning face of this queue pair: {@code qp.async().write(...)} posts what
     * {@link #write} posts, signaled, and returns a future completed by whoever polls the
     * completion queue (see {@link Async}).
     *
     * @return the same object each call (no allocation)
     */
    public Async async() {
        return async;
    }

    /**
     * A reusable batch of send-side requests for {@link #post(WorkBatch)}.
     *
     * @param capacity the most requests in one post, 1 to the send-queue depth
     * @return the batch, valid until this queue pair closes
     * @throws IllegalArgumentException when capacity is out of range
     * @throws IllegalStateException    when closed
     */
    public synchronized WorkBatch newBatch(int capacity) {
        ensureOpen("make a batch");
        if (capacity < 1 || capacity > config.maxSendWr()) {
            throw new IllegalArgumentException("batch capacity 1.." + config.maxSendWr() + ", not " + capacity);
        }
        int slot = (maxInline + 7) & ~7;
        return new WorkBatch(this, capacity, arena.allocate(WorkBatch.bytes(capacity, slot), 64), slot);
    }

    /**
     * Posts a batch's requests as one list (one {@code ibv_post_send}) and clears the batch.
     * Completion moderation applies across the list as for single posts.
     *
     * @param batch made by {@link #newBatch(int)} of this queue pair
     * @return {@link #OK}, or {@link #SEND_QUEUE_FULL} when the whole list does not fit (nothing posted)
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException when the queue pair is confined to another thread
     * @throws IllegalArgumentException when the batch belongs to another queue pair
     * @throws VerbsException when the provider refuses a request (the message says how many were posted)
     */
    public int post(WorkBatch batch) {
        return postBatch(batch);
    }


    /**
     * Posts {@code window}'s bind on this send queue ({@code IBV_WR_BIND_MW}); a {@code quiet} one
     * is jverbs' own, which no deadline fails.
     */
    CompletableFuture<WorkResult> bind(MemoryWindow window, boolean quiet) {
        String what = "bind a memory window";
        ensureOpen(what);
        if (state != State.CONNECTED) {
            throw notPostable(what);
        }
        int access = Access.flags(window.rights(), false);
        return async.post(what, id -> windowRequest(id, window, window.buffer(), access, true, what), quiet);
    }

    /** jverbs' own Send of {@code length} bytes of {@code local}, which no deadline fails. */
    CompletableFuture<WorkResult> sendQuietly(RegisteredBuffer local, int length) {
        return async.post("Send", id -> postSend(id, verbs_h.IBV_WR_SEND, local, 0, length, null, 0, 0, 0, 0, true,
                "Send"), true);
    }

    /** Revokes {@code window}'s binding on this send queue ({@code IBV_WR_LOCAL_INV}). */
    CompletableFuture<WorkResult> invalidate(MemoryWindow window, int rkey) {
        String what = "invalidate a memory window";
        return async.post(what, id -> windowRequest(id, window, null, rkey, false, what), false);
    }


    @Override
    void failPending(Throwable cause, CompletionQueue queue) {
        async.failPending(cause, queue);
    }

    @Override
    void expireFutures(long now) {
        async.expireFutures(now);
    }

    @Override
    void asyncError(String event) {
        synchronized (this) {
            if (isClosed() || state == State.ERROR) {
                return;
            }
            state = State.ERROR;
            errorText = "asynchronous event " + event;
            try {
                modify(attr -> ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_ERR), verbs_h.IBV_QP_STATE);
            } catch (RuntimeException ignored) {
                // already in error on the device
            }
        }
        failPending(new IllegalStateException("queue pair " + number + " is in error: asynchronous event " + event), null);
    }

    // ---- posting ----

    static long userId(long wrId) {
        if (wrId < 0) {
            throw new IllegalArgumentException("work-request ids are 0 to 2^63-1, not " + wrId);
        }
        return wrId;
    }

    @Override
    Thread confinedTo() {
        return posting.confinedTo();
    }


    @Override
    RefusedException notPostable(String what) {
        ensureOpen(what);
        return state == State.PREPARED
                ? new RefusedException(RefusedException.Reason.NOT_CONNECTED, "queue pair " + number
                        + " is not connected yet: connect(peerEndpoint) before " + what)
                : new RefusedException(RefusedException.Reason.IN_ERROR, "queue pair " + number + " is in error ("
                        + errorText + "): " + what + " refused; make a new one");
    }

    // ---- prepared requests ----

    /**
     * Prepares an RDMA Write of one local range to one remote range, to be posted many times with
     * {@link #post(PreparedRequest, long, boolean)}. The ranges are checked now; a payload of at
     * most {@link #maxInlineData()} bytes will go inline (copied at each post).
     *
     * @param local        the source, registered; must stay open while the request is posted
     * @param localOffset  bytes from the start of {@code local}
     * @param length       bytes each post writes
     * @param remote       the peer's buffer (needs REMOTE_WRITE there)
     * @param remoteOffset bytes from the start of {@code remote}
     * @return the request, in this queue pair's memory until it closes (144 bytes)
     * @throws IllegalStateException     when this queue pair or the buffer is closed
     * @throws IndexOutOfBoundsException when a range lies outside its buffer
     */
    public PreparedRequest prepareWrite(RegisteredBuffer local, long localOffset, int length, RemoteBuffer remote,
                                        long remoteOffset) {
        return prepare(verbs_h.IBV_WR_RDMA_WRITE, local, localOffset, length, remote, remoteOffset, "prepare an RDMA Write");
    }

    /**
     * Prepares an RDMA Read of one remote range into one local range (RC only), to be posted many
     * times with {@link #post(PreparedRequest, long, boolean)}.
     *
     * @param local        the destination, registered; must stay open while the request is posted
     * @param localOffset  bytes from the start of {@code local}
     * @param length       bytes each post reads
     * @param remote       the peer's buffer (needs REMOTE_READ there)
     * @param remoteOffset bytes from the start of {@code remote}
     * @return the request, in this queue pair's memory until it closes (144 bytes)
     * @throws UnsupportedOperationException on a UC queue pair
     * @throws IllegalStateException     when this queue pair or the buffer is closed
     * @throws IndexOutOfBoundsException when a range lies outside its buffer
     */
    public PreparedRequest prepareRead(RegisteredBuffer local, long localOffset, int length, RemoteBuffer remote,
                                       long remoteOffset) {
        requireReliable("RDMA Read");
        return prepare(verbs_h.IBV_WR_RDMA_READ, local, localOffset, length, remote, remoteOffset, "prepare an RDMA Read");
    }

    /**
     * Prepares a Send of one local range, to be posted many times with
     * {@link #post(PreparedRequest, long, boolean)}; a payload of at most
     * {@link #maxInlineData()} bytes will go inline (copied at each post).
     *
     * @param local       the source, registered; must stay open while the request is posted
     * @param localOffset bytes from the start of {@code local}
     * @param length      bytes each post sends
     * @return the request, in this queue pair's memory until it closes (144 bytes)
     * @throws IllegalStateException     when this queue pair or the buffer is closed
     * @throws IndexOutOfBoundsException when the range lies outside the buffer
     */
    public PreparedRequest prepareSend(RegisteredBuffer local, long localOffset, int length) {
        return prepare(verbs_h.IBV_WR_SEND, local, localOffset, length, null, 0, "prepare a Send");
    }


    private synchronized PreparedRequest prepare(int opcode, RegisteredBuffer local, long localOffset, int length,
                                                 RemoteBuffer remote, long remoteOffset, String what) {
        ensureOpen(what);
        return prepareRequest(opcode, local, localOffset, length, remote, remoteOffset, what);
    }

    /**
     * Posts a prepared request with this post's work-request id: the post writes the id and the
     * signal flag into the request (and copies an inline payload), checks what may have changed
     * since it was prepared (this queue pair connected and not in error, the local buffer open),
     * and hands it to the provider. Allocates nothing.
     *
     * @param request  made by this queue pair
     * @param wrId     the caller's work-request id (0 to 2<sup>63</sup>−1), handed back in the completion
     * @param signaled whether a completion is wanted (one in {@code signalEvery} is signaled anyway)
     * @return {@link #OK} or {@link #SEND_QUEUE_FULL}
     * @throws IllegalStateException    when not connected, in error, or closed, or the local buffer is closed
     * @throws IllegalArgumentException when the request was made by another queue pair, or {@code wrId} is negative
     * @throws WrongThreadException     when the queue pair is confined to another thread
     * @throws VerbsException           when the provider refuses the post
     */
    public int post(PreparedRequest request, long wrId, boolean signaled) {
        return postPrepared(request, wrId, signaled);
    }








    /**
     * Read and atomics need a reliable transport: on UC the verbs would accept the post and the
     * device fail it, so jverbs refuses it before anything is posted.
     */
    void requireReliable(String what) {
        if (config.transport() != QueuePairConfig.Transport.RC) {
            throw new UnsupportedOperationException(what + " needs an RC queue pair; queue pair " + number
                    + " is " + config.transport() + " (Write and Send only)");
        }
    }










    // ---- completions ----

    /**
     * Accounts for one completion of this queue pair; completes its future, if any.
     *
     * @return true when the completion belongs to the caller's handler (not a future)
     */
    @Override
    protected boolean onCompletion(Completion c, CompletionQueue from) {
        long wrId = c.wrId();
        int status = c.status();
        if (status == WcStatus.SUCCESS) {
            if (c.isReceive()) {
                receiveCompleted();
            } else {
                sendCompleted(from);
            }
            if ((wrId & FUTURE_TAG) == 0) {
                return true;
            }
            return async.complete(c, wrId, status);
        }
        return failed(c, wrId, status);
    }

    /** A failed completion, out of line so the hot success path stays small enough to inline. */
    private boolean failed(Completion c, long wrId, int status) {
        LatencyTracker tracker = latency;
        if (tracker != null) {
            tracker.failed(); // any failure errors the queue pair (a failed completion's opcode is not defined)
        }
        synchronized (this) {
            if (state != State.ERROR && !isClosed()) {
                state = State.ERROR;
                errorText = WcStatus.name(status) + " (vendor error 0x" + Integer.toHexString(c.vendorError())
                        + ") on work request " + ((wrId & FUTURE_TAG) != 0 ? "of a future" : Long.toString(wrId));
            }
        }
        return (wrId & FUTURE_TAG) == 0 || async.complete(c, wrId, status);
    }

    /**
     * Records this queue pair's latency from now on: each signaled send-side request's time from
     * post to completion goes to {@code tracker}'s recorder, and every post is counted (operations
     * and bytes). The hot path stays allocation-free (two calls per operation, see
     * {@link LatencyTracker}). Call it once, before {@link #connect} (or rdma_cm's connect/accept):
     * the tracker pairs completions with posts in order, so it must see every post.
     *
     * @param tracker sized for at least {@link QueuePairConfig#maxSendWr()} signaled requests in
     *                flight, and timing no other live queue pair (it is free again once that one closes)
     * @throws IllegalStateException when already connected, errored, closed, or already tracked, or
     *                               when {@code tracker} times another queue pair that is not closed
     * @throws IllegalArgumentException when the tracker's {@link LatencyTracker#capacity()} is
     *                                  below the send depth ({@link QueuePairConfig#maxSendWr()})
     * @throws NullPointerException  when {@code tracker} is null
     */
    public synchronized void trackLatency(LatencyTracker tracker) {
        java.util.Objects.requireNonNull(tracker, "tracker");
        ensureOpen("track latency");
        track(tracker);
    }


    /**
     * Returns the latency tracker given to {@link #trackLatency}, if any.
     *
     * @return the tracker, or null
     */
    public LatencyTracker latencyTracker() {
        return latency;
    }

    @Override
    public synchronized MemorySegment handle() {
        ensureOpen("use its handle");
        return qp;
    }

    @Override
    protected void beforeDestroy() {
        Runnable release = connectionRelease;
        if (release != null) {
            release.run(); // the owning CmConnection's: disconnects the peer; the rdma_cm id goes to the reaper
        }
        config.sendQueue().detach(this);
        config.receiveQueue().detach(this);
    }

    @Override
    protected void destroyQueuePair() {
        List<OperationFuture<?>> orphans = async.takeAll();
        int rc;
        posting.lock("close"); // waits for a post in progress; later posts see the queue pair closed
        try {
            state = State.CLOSED;
            rc = verbs_h.ibv_destroy_qp(qp);
            arena.close();
        } finally {
            posting.unlock();
        }
        for (OperationFuture<?> f : orphans) {
            f.fail(new IllegalStateException("queue pair " + number
                    + " was closed with this operation in flight"));
        }
        untrack();
        VerbsException.check("ibv_destroy_qp", rc, 0);
    }

    @Override
    public String toString() {
        return "queue pair " + number + " " + state();
    }
}
