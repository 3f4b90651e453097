package io.jverbs;

import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.VerbsException;
import io.jverbs.latency.LatencyTracker;
import io.jverbs.ibverbs.raw.ibv_ah_attr;
import io.jverbs.ibverbs.raw.ibv_context;
import io.jverbs.ibverbs.raw.ibv_context_ops;
import io.jverbs.ibverbs.raw.ibv_global_route;
import io.jverbs.ibverbs.raw.ibv_qp;
import io.jverbs.ibverbs.raw.ibv_qp_attr;
import io.jverbs.ibverbs.raw.ibv_qp_cap;
import io.jverbs.ibverbs.raw.ibv_qp_init_attr;
import io.jverbs.ibverbs.raw.ibv_send_wr;
import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
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
 * <li>futures: {@link #writeAsync}, {@link #readAsync}, … return a {@link CompletableFuture}
 *     completed by whoever polls the completion queue ({@link Poller}); a failed completion fails
 *     it with {@link CompletionFailedException} naming the status.</li>
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
public final class QueuePair extends QueueEndpoint {
    /** A post was accepted. */
    public static final int OK = 0;
    /** The send queue is full: poll completions, then post again. */
    public static final int SEND_QUEUE_FULL = -1;
    /** The receive queue is full. */
    public static final int RECEIVE_QUEUE_FULL = -2;
    /** Work-request ids with this bit belong to futures; callers' ids must not use it. */
    static final long FUTURE_TAG = 1L << 63;

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final long SEND_WR = 0;
    private static final long SEND_SGE = SEND_WR + 128;
    private static final long RECV_WR = SEND_SGE + 16;
    private static final long RECV_SGE = RECV_WR + 32;
    private static final long BAD_WR = RECV_SGE + 16;
    private static final long INLINE = BAD_WR + 16;
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

    private final ProtectionDomain pd;
    private final QueuePairConfig config;
    private final MemorySegment qp;
    private final long qpAddress;
    private final int number;
    private final int psn;
    private final Gid gid;
    private final Context.PortAttributes port;
    private final int maxInline;
    /** Outstanding RDMA Reads/atomics in each direction: the config's, capped by the device when created. */
    private int rdAtomic;
    private final Arena arena = Arena.ofShared();
    /** Per-connection latency, or null: set before connect ({@link #trackLatency}), read by posts and polls. */
    private volatile LatencyTracker latency;
    /** The trackers live queue pairs time with: a tracker pairs one queue pair's completions with its posts. */
    private static final java.util.Set<LatencyTracker> TRACKERS_IN_USE = java.util.Collections.synchronizedSet(
            java.util.Collections.newSetFromMap(new java.util.WeakHashMap<>()));
    /**
     * Taken by every post and by the destroy: posts from any thread are serialized, and close
     * waits for one in progress. A confined queue pair's lock ({@link QueuePairConfig#confined()})
     * is only its owner thread's, and takes no compare-and-set.
     */
    private final PostLock posting;
    private final MemorySegment scratch;
    private final long scratchAddress;
    private final MemorySegment postSendFn;
    private final MemorySegment postRecvFn;
    /** Written under the monitor; volatile because posts read it holding only {@link #posting}. */
    private volatile State state = State.PREPARED;
    private volatile String errorText;
    // Queue accounting without a lock on the completion path: the send queue's in SendQueue;
    // posters (serialized by `posting`) own recvCount, the thread polling the completion queue
    // (one at a time) owns recvDone, published with a release store and read with an acquire load.
    private final SendQueue sendQueue;
    private long recvCount;
    private long recvDone;
    private static final java.lang.invoke.VarHandle RECV_DONE;

    static {
        try {
            java.lang.invoke.MethodHandles.Lookup l = java.lang.invoke.MethodHandles.lookup();
            RECV_DONE = l.findVarHandle(QueuePair.class, "recvDone", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private int sendOutstanding() {
        return sendQueue.outstanding();
    }
    private final OperationFuture<?>[] pending;
    private final String[] pendingWhat;
    /** Slots of jverbs' own requests (a window's bind, a ready message), which no deadline fails. */
    private final boolean[] pendingQuiet;
    /** When each pending future's request was posted ({@link System#nanoTime()}), for its deadline. */
    private final long[] pendingSince;
    /** The access flags the device has for this queue pair (set at connect, widened with the domain's). */
    private int accessFlags;
    /** Releases the rdma_cm connection that owns this queue pair, if any: run by its close. */
    private volatile Runnable connectionRelease;
    private final int[] freeSlots;
    private int freeCount;

    QueuePair(ProtectionDomain pd, QueuePairConfig config, MemorySegment qp, int maxInline, Gid gid,
                      Context.PortAttributes port) {
        super("queue pair", pd);
        this.pd = pd;
        this.config = config;
        this.qp = qp;
        this.qpAddress = qp.address();
        MemorySegment q = qp.reinterpret(ibv_qp.sizeof());
        this.number = ibv_qp.qp_num(q);
        this.psn = PSN.nextInt(1 << 24);
        this.gid = gid;
        this.port = port;
        this.maxInline = maxInline;
        this.rdAtomic = config.maxRdAtomic();
        this.posting = new PostLock(this, config.confined() ? Thread.currentThread() : null);
        this.scratch = arena.allocate(INLINE + Math.max(8, maxInline), 64);
        this.scratchAddress = scratch.address();
        WorkRequests.link(scratchAddress + SEND_WR, scratchAddress + SEND_SGE); // kept: only fill() writes this request
        // The provider's post_send / post_recv, resolved once per queue pair (a context's ops never change).
        MemorySegment ctx = ibv_qp.context(q).reinterpret(ibv_context.sizeof());
        this.postSendFn = WorkRequests.postSendOp(ctx);
        this.postRecvFn = WorkRequests.postRecvOp(ctx);
        this.sendQueue = new SendQueue(config.maxSendWr());
        int slots = config.maxSendWr() + config.maxRecvWr();
        this.pending = new OperationFuture<?>[slots];
        this.pendingWhat = new String[slots];
        this.pendingQuiet = new boolean[slots];
        this.pendingSince = new long[slots];
        this.freeSlots = new int[slots];
        for (int i = 0; i < slots; i++) {
            freeSlots[i] = slots - 1 - i;
        }
        this.freeCount = slots;
    }

    static QueuePair create(ProtectionDomain pd, QueuePairConfig config) {
        Context context = pd.context();
        boolean oneQueue = config.sendQueue() == config.receiveQueue();
        config.sendQueue().requireServes(pd, config.maxSendWr() + (oneQueue ? config.maxRecvWr() : 0), "queue pair");
        if (!oneQueue) {
            config.receiveQueue().requireServes(pd, config.maxRecvWr(), "queue pair");
        }
        Context.PortAttributes port = context.port(config.port());
        Gid gid = config.gidIndex() >= 0 ? context.gid(config.port(), config.gidIndex()) : context.chooseGid(config.port());
        int rdAtomic = Math.min(config.maxRdAtomic(), context.rdAtomicLimit()); // the device caps it
        try {
            synchronized (pd) {
                pd.ensureOpen("create a queue pair");
                // the queues' handles are read by ibv_create_qp: their destroys wait until the attach
                MemorySegment sendCq = config.sendQueue().lendForCreation("create a queue pair");
                try {
                    return create(pd, config, gid, port, rdAtomic, sendCq, oneQueue ? sendCq
                            : config.receiveQueue().lendForCreation("create a queue pair"));
                } finally {
                    config.sendQueue().creationEnded();
                }
            }
        } catch (VerbsException e) {
            if (!"ibv_create_qp".equals(e.verb()) || e.errno() != io.jverbs.ibverbs.Errno.EINVAL) {
                throw e;
            }
            // outside the domain's monitor: the query takes the context's
            String hint = limitsHint(context, config.maxSendWr(), config.maxRecvWr(), config.maxInlineData());
            throw hint == null ? e : new VerbsException("ibv_create_qp", e.errno(), hint);
        }
    }

    /**
     * What to say when {@code ibv_create_qp} refused a queue pair's sizes (EINVAL): the device's
     * limits beside what was asked.
     *
     * @param context the device
     * @param send    send-queue depth asked for
     * @param receive receive-queue depth asked for
     * @param inline  inline bytes asked for
     * @return the hint, or null when the device could not be asked (closed meanwhile)
     */
    static String limitsHint(Context context, int send, int receive, int inline) {
        Context.DeviceAttributes a;
        try {
            a = context.deviceAttributes();
        } catch (RuntimeException closed) {
            return null;
        }
        return "the device refused the queue pair's sizes: it takes at most " + a.maxQpWr() + " work requests per"
                + " queue (max_qp_wr), asked for " + send + " send and " + receive + " receive; and this many bytes"
                + " inline, asked for " + inline + ", may be more than it takes: lower withDepth or withMaxInlineData";
    }

    /** The rest of {@link #create(ProtectionDomain, QueuePairConfig)}: the queues are lent to it. */
    private static QueuePair create(ProtectionDomain pd, QueuePairConfig config, Gid gid, Context.PortAttributes port,
                                    int rdAtomic, MemorySegment sendCq, MemorySegment recvCq) {
        boolean oneQueue = config.sendQueue() == config.receiveQueue();
        MemorySegment qp;
        int maxInline;
        try {
            try (Arena scratch = Arena.ofConfined()) {
                MemorySegment attr = scratch.allocate(ibv_qp_init_attr.LAYOUT);
                ibv_qp_init_attr.send_cq(attr, sendCq);
                ibv_qp_init_attr.recv_cq(attr, recvCq);
                MemorySegment cap = ibv_qp_init_attr.cap(attr);
                ibv_qp_cap.max_send_wr(cap, config.maxSendWr());
                ibv_qp_cap.max_recv_wr(cap, config.maxRecvWr());
                ibv_qp_cap.max_send_sge(cap, 1);
                ibv_qp_cap.max_recv_sge(cap, 1);
                ibv_qp_cap.max_inline_data(cap, config.maxInlineData());
                ibv_qp_init_attr.qp_type(attr, config.transport() == QueuePairConfig.Transport.UC ? verbs_h.IBV_QPT_UC
                        : verbs_h.IBV_QPT_RC);
                ibv_qp_init_attr.sq_sig_all(attr, 0);
                qp = verbs_h.ibv_create_qp(pd.raw(), attr);
                if (qp.address() == 0) {
                    throw VerbsException.of("ibv_create_qp", Native.lastErrno());
                }
                maxInline = Math.min(ibv_qp_cap.max_inline_data(cap), config.maxInlineData());
            }
            // adopted under the monitor the domain's destroy takes: a close never misses it, nor runs between
            QueuePair pair = null;
            try {
                pair = new QueuePair(pd, config, qp, maxInline, gid, port);
                pair.rdAtomic = rdAtomic;
                config.sendQueue().attach(pair);
                if (config.receiveQueue() != config.sendQueue()) {
                    config.receiveQueue().attach(pair);
                }
                pair.toInit();
                pair.adoptedByParent();
            } catch (RuntimeException e) {
                if (pair != null) {
                    config.sendQueue().detach(pair);
                    config.receiveQueue().detach(pair);
                }
                verbs_h.ibv_destroy_qp(qp);
                throw e;
            }
            return pair;
        } finally {
            if (!oneQueue) {
                config.receiveQueue().creationEnded();
            }
        }
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
                if (port.isEthernet() || remote.lid() == 0) {
                    ibv_ah_attr.is_global(ah, (byte) 1);
                    MemorySegment grh = ibv_ah_attr.grh(ah);
                    ibv_global_route.dgid(grh).copyFrom(MemorySegment.ofArray(remote.gid()));
                    ibv_global_route.sgid_index(grh, (byte) gid.index());
                    ibv_global_route.hop_limit(grh, (byte) 64);
                }
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
        RECV_DONE.setRelease(this, recvCount);
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
    private void abandonInDevice(String what) {
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
        posting.lock("post a batch");
        try {
            return postLocked(batch);
        } finally {
            posting.unlock();
        }
    }

    private int postLocked(WorkBatch batch) {
        checkPostable("post a batch");
        if (batch.owner() != this) {
            throw new IllegalArgumentException("the batch belongs to another queue pair");
        }
        batch.recheck("post a batch");
        batch.copyInline();
        int n = batch.size();
        if (n == 0) {
            return OK;
        }
        if (!sendQueue.fits(n)) {
            return SEND_QUEUE_FULL;
        }
        int run = sendQueue.run();
        for (int i = 0; i < n; i++) {
            boolean signal = batch.wantsSignal(i) || run + 1 >= config.signalEvery() || i == n - 1
                    && sendOutstanding() + n >= config.maxSendWr();
            batch.signal(i, signal);
            run = signal ? 0 : run + 1;
        }
        // Publish every entry first (a completion may be polled before post_send returns), then
        // take back those of requests the provider refused.
        int runBefore = sendQueue.run();
        long tailBefore = sendQueue.countingList(batch, n);
        LatencyTracker tracker = latency;
        if (tracker != null) {
            for (int i = 0; i < n; i++) {
                tracker.posted(batch.lengthOf(i), batch.signalFlag(i)); // before: completions may come at once
            }
        }
        scratch.set(LONG, BAD_WR, 0L); // a provider that fails without naming the request leaves it unknown, not stale
        int rc = WorkRequests.post(postSendFn, qpAddress, batch.firstAddress(), scratchAddress + BAD_WR);
        int posted = n;
        if (rc != 0) {
            posted = batch.postedBefore(scratch.get(LONG, BAD_WR));
            sendQueue.listRefused(batch, n, posted, tailBefore, runBefore);
        }
        if (tracker != null) {
            for (int i = n - 1; i >= posted; i--) {
                tracker.refused(batch.lengthOf(i), batch.signalFlag(i));
            }
        }
        batch.clear();
        if (rc != 0) {
            throw new VerbsException("ibv_post_send", rc, posted + " of " + n + " requests of the batch were posted");
        }
        return OK;
    }

    // ---- future style ----

    /**
     * RDMA Write, completed asynchronously (always signaled).
     *
     * @param local        the source
     * @param localOffset  offset in {@code local}
     * @param length       bytes
     * @param remote       the peer's buffer
     * @param remoteOffset offset in {@code remote}
     * @return completes when the write is done; fails with {@link CompletionFailedException} on a
     *         failed completion, {@link QueueFullException} when the send queue is full
     * @throws IllegalStateException     when not connected, in error, or closed
     * @throws WrongThreadException     when the queue pair is confined to another thread
     * @throws IndexOutOfBoundsException when a range lies outside its buffer
     */
    public CompletableFuture<WorkResult> writeAsync(RegisteredBuffer local, long localOffset, int length,
                                                    RemoteBuffer remote, long remoteOffset) {
        return async("RDMA Write", id -> postSend(id, verbs_h.IBV_WR_RDMA_WRITE, local, localOffset, length, remote,
                remoteOffset, 0, 0, 0, true, "RDMA Write"));
    }

    /**
     * RDMA Write with immediate, completed asynchronously.
     *
     * @param local        the source
     * @param localOffset  offset in {@code local}
     * @param length       bytes
     * @param remote       the peer's buffer
     * @param remoteOffset offset in {@code remote}
     * @param immediate    32 bits for the peer
     * @return the future
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException when the queue pair is confined to another thread
     */
    public CompletableFuture<WorkResult> writeWithImmediateAsync(RegisteredBuffer local, long localOffset, int length,
                                                                 RemoteBuffer remote, long remoteOffset, int immediate) {
        return async("RDMA Write with immediate", id -> postSend(id, verbs_h.IBV_WR_RDMA_WRITE_WITH_IMM, local,
                localOffset, length, remote, remoteOffset, immediate, 0, 0, true, "RDMA Write with immediate"));
    }

    /**
     * RDMA Read, completed asynchronously.
     *
     * @param local        the destination
     * @param localOffset  offset in {@code local}
     * @param length       bytes
     * @param remote       the peer's buffer
     * @param remoteOffset offset in {@code remote}
     * @return the future
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException when the queue pair is confined to another thread
     * @throws UnsupportedOperationException when the queue pair is UC ({@link QueuePairConfig.Transport}): RC only
     */
    public CompletableFuture<WorkResult> readAsync(RegisteredBuffer local, long localOffset, int length,
                                                   RemoteBuffer remote, long remoteOffset) {
        requireReliable("RDMA Read");
        return async("RDMA Read", id -> postSend(id, verbs_h.IBV_WR_RDMA_READ, local, localOffset, length, remote,
                remoteOffset, 0, 0, 0, true, "RDMA Read"));
    }

    /**
     * Send, completed asynchronously.
     *
     * @param local       the source
     * @param localOffset offset in {@code local}
     * @param length      bytes
     * @return the future
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException when the queue pair is confined to another thread
     */
    public CompletableFuture<WorkResult> sendAsync(RegisteredBuffer local, long localOffset, int length) {
        return async("Send", id -> postSend(id, verbs_h.IBV_WR_SEND, local, localOffset, length, null, 0, 0, 0, 0, true,
                "Send"));
    }

    /**
     * Send with immediate, completed asynchronously.
     *
     * @param local       the source
     * @param localOffset offset in {@code local}
     * @param length      bytes
     * @param immediate   32 bits for the peer
     * @return the future
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException when the queue pair is confined to another thread
     */
    public CompletableFuture<WorkResult> sendWithImmediateAsync(RegisteredBuffer local, long localOffset, int length,
                                                                int immediate) {
        return async("Send with immediate", id -> postSend(id, verbs_h.IBV_WR_SEND_WITH_IMM, local, localOffset, length,
                null, 0, immediate, 0, 0, true, "Send with immediate"));
    }

    /**
     * Receive, completed asynchronously with the byte count (and immediate data, if any).
     *
     * @param local       where the message lands
     * @param localOffset offset in {@code local}
     * @param length      room for the message
     * @return the future
     * @throws IllegalStateException when closed or in error
     */
    public CompletableFuture<WorkResult> receiveAsync(RegisteredBuffer local, long localOffset, int length) {
        return async("Receive", id -> postReceive(id, local, localOffset, length));
    }

    /**
     * Compare-and-swap, completed asynchronously; the original value is in the local 8 bytes.
     *
     * @param local        where the original value lands
     * @param localOffset  offset in {@code local}
     * @param remote       the peer's buffer
     * @param remoteOffset offset in {@code remote}
     * @param compare      the expected value
     * @param swap         the new value
     * @return the future
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException when the queue pair is confined to another thread
     * @throws UnsupportedOperationException when the queue pair is UC ({@link QueuePairConfig.Transport}): RC only
     */
    public CompletableFuture<WorkResult> compareAndSwapAsync(RegisteredBuffer local, long localOffset,
                                                             RemoteBuffer remote, long remoteOffset, long compare,
                                                             long swap) {
        requireReliable("compare-and-swap");
        return async("compare-and-swap", id -> postSend(id, verbs_h.IBV_WR_ATOMIC_CMP_AND_SWP, local, localOffset, 8,
                remote, remoteOffset, 0, compare, swap, true, "compare-and-swap"));
    }

    /**
     * Fetch-and-add, completed asynchronously; the original value is in the local 8 bytes.
     *
     * @param local        where the original value lands
     * @param localOffset  offset in {@code local}
     * @param remote       the peer's buffer
     * @param remoteOffset offset in {@code remote}
     * @param add          the value to add
     * @return the future
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException when the queue pair is confined to another thread
     * @throws UnsupportedOperationException when the queue pair is UC ({@link QueuePairConfig.Transport}): RC only
     */
    public CompletableFuture<WorkResult> fetchAndAddAsync(RegisteredBuffer local, long localOffset, RemoteBuffer remote,
                                                          long remoteOffset, long add) {
        requireReliable("fetch-and-add");
        return async("fetch-and-add", id -> postSend(id, verbs_h.IBV_WR_ATOMIC_FETCH_AND_ADD, local, localOffset, 8,
                remote, remoteOffset, 0, add, 0, true, "fetch-and-add"));
    }

    // ---- the same with slices: both ranges as values ----

    /**
     * RDMA Write of a local slice into a remote range of the same length, completed asynchronously.
     *
     * @param from the source
     * @param to   the destination, exactly {@code from.length()} bytes (needs {@link Access#REMOTE_WRITE})
     * @return as {@link #writeAsync(RegisteredBuffer, long, int, RemoteBuffer, long)}
     * @throws IllegalArgumentException when the lengths differ, or {@code to} lacks the right
     * @throws IllegalStateException    when not connected, in error, or closed
     * @throws WrongThreadException     when the queue pair is confined to another thread
     */
    public CompletableFuture<WorkResult> writeAsync(Slice from, RemoteBuffer to) {
        from.requireSameLength(to, "RDMA Write");
        return writeAsync(from.buffer(), from.offset(), from.length(), to, 0);
    }

    /**
     * RDMA Write with immediate of a local slice into a remote range of the same length.
     *
     * @param from      the source
     * @param to        the destination, exactly {@code from.length()} bytes
     * @param immediate 32 bits for the peer's receive
     * @return as {@link #writeWithImmediateAsync(RegisteredBuffer, long, int, RemoteBuffer, long, int)}
     * @throws IllegalArgumentException when the lengths differ, or {@code to} lacks the right
     * @throws IllegalStateException    when not connected, in error, or closed
     * @throws WrongThreadException     when the queue pair is confined to another thread
     */
    public CompletableFuture<WorkResult> writeWithImmediateAsync(Slice from, RemoteBuffer to, int immediate) {
        from.requireSameLength(to, "RDMA Write with immediate");
        return writeWithImmediateAsync(from.buffer(), from.offset(), from.length(), to, 0, immediate);
    }

    /**
     * RDMA Read of a remote range into a local slice of the same length.
     *
     * @param into the destination
     * @param from the source, exactly {@code into.length()} bytes (needs {@link Access#REMOTE_READ})
     * @return as {@link #readAsync(RegisteredBuffer, long, int, RemoteBuffer, long)}
     * @throws IllegalArgumentException      when the lengths differ, {@code from} lacks the right, or
     *                                       {@code into} is read-only
     * @throws IllegalStateException         when not connected, in error, or closed
     * @throws WrongThreadException          when the queue pair is confined to another thread
     * @throws UnsupportedOperationException when the queue pair is UC
     */
    public CompletableFuture<WorkResult> readAsync(Slice into, RemoteBuffer from) {
        into.requireSameLength(from, "RDMA Read");
        return readAsync(into.buffer(), into.offset(), into.length(), from, 0);
    }

    /**
     * Send of a local slice.
     *
     * @param from the message
     * @return as {@link #sendAsync(RegisteredBuffer, long, int)}
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException  when the queue pair is confined to another thread
     */
    public CompletableFuture<WorkResult> sendAsync(Slice from) {
        return sendAsync(from.buffer(), from.offset(), from.length());
    }

    /**
     * Send with immediate of a local slice.
     *
     * @param from      the message
     * @param immediate 32 bits for the peer
     * @return as {@link #sendWithImmediateAsync(RegisteredBuffer, long, int, int)}
     * @throws IllegalStateException when not connected, in error, or closed
     * @throws WrongThreadException  when the queue pair is confined to another thread
     */
    public CompletableFuture<WorkResult> sendWithImmediateAsync(Slice from, int immediate) {
        return sendWithImmediateAsync(from.buffer(), from.offset(), from.length(), immediate);
    }

    /**
     * Receive into a local slice.
     *
     * @param into where the peer's message lands (at most {@code into.length()} bytes)
     * @return as {@link #receiveAsync(RegisteredBuffer, long, int)}
     * @throws IllegalArgumentException when {@code into} is read-only
     * @throws IllegalStateException    when closed
     */
    public CompletableFuture<WorkResult> receiveAsync(Slice into) {
        return receiveAsync(into.buffer(), into.offset(), into.length());
    }

    /**
     * Compare-and-swap on an 8-byte remote range; the old value lands in an 8-byte local slice.
     *
     * @param result  8 bytes for the value found
     * @param target  8 bytes, 8-aligned (needs {@link Access#REMOTE_ATOMIC})
     * @param compare the expected value
     * @param swap    the new value
     * @return as {@link #compareAndSwapAsync(RegisteredBuffer, long, RemoteBuffer, long, long, long)}
     * @throws IllegalArgumentException      when a range is not 8 bytes, or {@code target} lacks the right
     * @throws IllegalStateException         when not connected, in error, or closed
     * @throws UnsupportedOperationException when the queue pair is UC
     */
    public CompletableFuture<WorkResult> compareAndSwapAsync(Slice result, RemoteBuffer target, long compare,
                                                             long swap) {
        requireAtomicWidth(result, target, "compare-and-swap");
        return compareAndSwapAsync(result.buffer(), result.offset(), target, 0, compare, swap);
    }

    /**
     * Fetch-and-add on an 8-byte remote range; the old value lands in an 8-byte local slice.
     *
     * @param result 8 bytes for the value found
     * @param target 8 bytes, 8-aligned (needs {@link Access#REMOTE_ATOMIC})
     * @param add    the value to add
     * @return as {@link #fetchAndAddAsync(RegisteredBuffer, long, RemoteBuffer, long, long)}
     * @throws IllegalArgumentException      when a range is not 8 bytes, or {@code target} lacks the right
     * @throws IllegalStateException         when not connected, in error, or closed
     * @throws UnsupportedOperationException when the queue pair is UC
     */
    public CompletableFuture<WorkResult> fetchAndAddAsync(Slice result, RemoteBuffer target, long add) {
        requireAtomicWidth(result, target, "fetch-and-add");
        return fetchAndAddAsync(result.buffer(), result.offset(), target, 0, add);
    }

    private static void requireAtomicWidth(Slice result, RemoteBuffer target, String what) {
        if (result.length() != 8 || target.length() != 8) {
            throw new IllegalArgumentException(what + " works on 8 bytes: the local slice has " + result.length()
                    + " and the remote range " + target.length());
        }
    }

    /**
     * {@link #openWindowAsync(RegisteredBuffer, long, long, Access...)} for a slice.
     *
     * @param range  the range to share
     * @param rights what the peer may do in it
     * @return completes with the bound window
     * @throws UnsupportedOperationException when the device has no type-2 windows, or the queue pair is not RC
     * @throws IllegalArgumentException      as the buffer form
     * @throws IllegalStateException         when not connected, in error, or closed
     */
    public CompletableFuture<MemoryWindow> openWindowAsync(Slice range, Access... rights) {
        return openWindowAsync(range.buffer(), range.offset(), range.length(), rights);
    }

    // ---- memory windows ----

    /**
     * Shares one range of a buffer with this queue pair's peer through a new type-2 memory
     * window, with its own rkey and only the rights given: the peer reaches nothing outside the
     * range, nothing beyond the rights, and only through this queue pair, until the window is
     * invalidated or closed ({@link MemoryWindow}). The buffer's own rkey is never involved, so a
     * buffer registered with no remote rights at all can be shared this way.
     *
     * <p>The window is bound on this queue pair's send queue ({@code IBV_WR_BIND_MW}), so the
     * future completes when this queue pair's completions are polled, as any other future does.
     * The queue pair's own remote access is widened to {@code rights} when it follows its domain's
     * rights (the default); a queue pair given explicit rights
     * ({@link QueuePairConfig#withRemoteAccess}) must already include them.
     *
     * @param buffer a buffer of this queue pair's protection domain; it stays registered while
     *               the window is open (closing it closes the window first)
     * @param offset the range's first byte in {@code buffer}
     * @param length the range's bytes, at least 1
     * @param rights what the peer may do in the range: at least one of {@link Access}
     * @return completes with the bound window (send {@link MemoryWindow#remote()} to the peer);
     *         fails as the queue pair's other operations do, and then frees the window
     * @throws UnsupportedOperationException when the device has no type-2 windows (see
     *                                       {@link MemoryWindow}), or the queue pair is not RC
     * @throws IllegalArgumentException      when {@code rights} is empty, grants write or atomics
     *                                       over a read-only buffer, exceeds this queue pair's
     *                                       explicit remote access, or the buffer belongs to another
     *                                       protection domain
     * @throws IndexOutOfBoundsException     when the range lies outside the buffer
     * @throws IllegalStateException         when not connected, in error, or closed
     * @throws io.jverbs.ibverbs.VerbsException when {@code ibv_alloc_mw} fails
     */
    public CompletableFuture<MemoryWindow> openWindowAsync(RegisteredBuffer buffer, long offset, long length,
                                                           Access... rights) {
        ensureOpen("bind a memory window");
        if (state != State.CONNECTED) {
            throw notPostable("bind a memory window");
        }
        return prepareWindow(buffer, offset, length, rights).bindAsync();
    }

    /**
     * Allocates a type-2 memory window over one range of a buffer for this queue pair's peer,
     * without binding it yet: its rkey ({@link MemoryWindow#rkey()}, {@link MemoryWindow#remote()})
     * is known now, so it can be told to the peer in a connection's handshake, and the window is
     * bound once the queue pair is connected ({@link MemoryWindow#bindAsync()}). Until the bind
     * completes, a peer's request with the rkey fails with a remote access error. This is how a
     * {@link io.jverbs.cm.Connection} server grants each connection its own windows.
     *
     * @param buffer a buffer of this queue pair's protection domain
     * @param offset the range's first byte in {@code buffer}
     * @param length the range's bytes, at least 1
     * @param rights what the peer may do in the range: at least one of {@link Access}
     * @return the window, allocated and not bound
     * @throws UnsupportedOperationException when the device has no type-2 windows, or the queue pair is not RC
     * @throws IllegalArgumentException      as {@link #openWindowAsync(RegisteredBuffer, long, long, Access...)}
     * @throws IndexOutOfBoundsException     when the range lies outside the buffer
     * @throws IllegalStateException         when the queue pair is closed
     * @throws io.jverbs.ibverbs.VerbsException when {@code ibv_alloc_mw} fails
     */
    public MemoryWindow prepareWindow(RegisteredBuffer buffer, long offset, long length, Access... rights) {
        String what = "bind a memory window";
        requireReliable(what);
        java.util.Set<Access> wanted = rights.length == 0 ? java.util.EnumSet.noneOf(Access.class)
                : java.util.EnumSet.of(rights[0], rights);
        if (wanted.isEmpty()) {
            throw new IllegalArgumentException(what + ": give the peer at least one right (REMOTE_READ, REMOTE_WRITE,"
                    + " REMOTE_ATOMIC)");
        }
        if (length <= 0) {
            throw new IllegalArgumentException(what + ": a window covers at least 1 byte, not " + length);
        }
        boolean deviceWrites = wanted.contains(Access.REMOTE_WRITE) || wanted.contains(Access.REMOTE_ATOMIC);
        buffer.checkUse(pd, offset, length, deviceWrites, what);
        if (config.remoteAccess() != null && !config.remoteAccess().containsAll(wanted)) {
            throw new IllegalArgumentException(what + ": queue pair " + number + " grants only " + config.remoteAccess()
                    + " (QueuePairConfig.withRemoteAccess); the peer's requests through a window with " + wanted
                    + " would fail");
        }
        int windows = pd.context().typeTwoWindows();
        if (windows == 0) {
            throw new UnsupportedOperationException(what + ": device " + pd.context().name() + " has no type-2 memory"
                    + " windows (IBV_DEVICE_MEM_WINDOW_TYPE_2B, max_mw; see ibv_devinfo -v): share a buffer registered"
                    + " for the purpose instead");
        }
        ensureOpen(what);
        pd.grantRemoteAccess(wanted);
        return MemoryWindow.allocate(this, buffer, buffer.address() + offset, length, wanted);
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
        return async(what, id -> postWindowRequest(id, window, window.buffer(), access, true, what), quiet);
    }

    /** jverbs' own Send of {@code length} bytes of {@code local}, which no deadline fails. */
    CompletableFuture<WorkResult> sendQuietly(RegisteredBuffer local, int length) {
        return async("Send", id -> postSend(id, verbs_h.IBV_WR_SEND, local, 0, length, null, 0, 0, 0, 0, true,
                "Send"), true);
    }

    /** Revokes {@code window}'s binding on this send queue ({@code IBV_WR_LOCAL_INV}). */
    CompletableFuture<WorkResult> invalidate(MemoryWindow window, int rkey) {
        String what = "invalidate a memory window";
        return async(what, id -> postWindowRequest(id, window, null, rkey, false, what));
    }

    /** Posts a window's bind ({@code bind}: {@code value} is the access flags) or invalidation ({@code value} is the rkey). */
    private int postWindowRequest(long wrId, MemoryWindow window, RegisteredBuffer buffer, int value, boolean bind,
                                  String what) {
        posting.lock(what);
        try {
            checkPostable(what);
            if (signalOrFull(true) == FULL) {
                return SEND_QUEUE_FULL;
            }
            long wr = scratchAddress + SEND_WR;
            if (bind) {
                WorkRequests.bindWindow(wr, wrId, verbs_h.IBV_SEND_SIGNALED, window.raw().address(), window.rkey(),
                        buffer.handle().address(), window.remoteAddress(), window.length(), value);
            } else {
                WorkRequests.localInvalidate(wr, wrId, verbs_h.IBV_SEND_SIGNALED, value);
            }
            return submit(wr, 0, true);
        } finally {
            posting.unlock();
        }
    }

    private interface Poster {
        int post(long wrId);
    }

    private CompletableFuture<WorkResult> async(String what, Poster poster) {
        return async(what, poster, false);
    }

    /**
     * Posts through a future slot; a {@code quiet} one is jverbs' own request, which no deadline
     * fails (a queue the caller does not poll must not put the queue pair in error for it).
     */
    private CompletableFuture<WorkResult> async(String what, Poster poster, boolean quiet) {
        CompletionQueue queue = queueOf(what);
        OperationFuture<WorkResult> future = new OperationFuture<>(queue, what);
        synchronized (this) {
            ensureOpen(what);
            if (freeCount == 0) {
                future.fail(new QueueFullException("queue pair " + number + ": every slot has work"
                        + " in flight"));
                return future;
            }
            int slot = freeSlots[--freeCount];
            pending[slot] = future;
            pendingWhat[slot] = what;
            pendingQuiet[slot] = quiet;
            pendingSince[slot] = Context.coarseNanos(); // a deadline is good to 100 ms; no clock read per post
            int rc;
            try {
                rc = poster.post(FUTURE_TAG | slot);
            } catch (RuntimeException e) {
                releaseSlot(slot);
                throw e;
            }
            if (rc != OK) {
                releaseSlot(slot);
                future.fail(new QueueFullException("queue pair " + number + ": "
                        + (rc == SEND_QUEUE_FULL ? "send queue full (" + config.maxSendWr() + " in flight)"
                                                 : "receive queue full (" + config.maxRecvWr() + " posted)")));
            }
        }
        return future;
    }

    private void releaseSlot(int slot) {
        pending[slot] = null;
        pendingWhat[slot] = null;
        pendingQuiet[slot] = false;
        freeSlots[freeCount++] = slot;
    }

    /** The queue whose poll completes an operation of this kind: receives on the receive queue, the rest on the send queue. */
    private CompletionQueue queueOf(String what) {
        return "Receive".equals(what) ? config.receiveQueue() : config.sendQueue();
    }

    @Override
    void failPending(Throwable cause, CompletionQueue queue) {
        List<OperationFuture<?>> fail = new ArrayList<>();
        synchronized (this) {
            for (int i = 0; i < pending.length; i++) {
                OperationFuture<?> f = pending[i];
                CompletionQueue of = queueOf(pendingWhat[i]);
                if (f != null && !f.isDone() && (queue == null || queue == of)) {
                    fail.add(f); // the slot stays taken: the request may still be in the device
                }
            }
        }
        if (!fail.isEmpty()) {
            abandonInDevice("its futures failed with their requests in the device (" + cause.getMessage() + ")");
        }
        for (OperationFuture<?> f : fail) {
            f.fail(cause);
        }
    }

    /** How long a future may wait on a completion queue that nobody polls before it fails. */
    static final long UNATTENDED_NANOS = 2_000_000_000L;

    @Override
    void expireFutures(long now) {
        long limit = config.operationTimeout().toNanos();
        boolean sendUnattended = config.sendQueue().unattendedFor(now, UNATTENDED_NANOS);
        boolean recvUnattended = config.receiveQueue() == config.sendQueue() ? sendUnattended
                : config.receiveQueue().unattendedFor(now, UNATTENDED_NANOS);
        List<OperationFuture<?>> late = null;
        List<String> lateWhat = null;
        synchronized (this) {
            for (int i = 0; i < pending.length; i++) {
                OperationFuture<?> f = pending[i];
                if (pendingQuiet[i]) {
                    continue;
                }
                // a receive waits for the peer's message, which may legitimately take any time: no deadline
                boolean receive = "Receive".equals(pendingWhat[i]);
                boolean unattended = receive ? recvUnattended : sendUnattended;
                if (f != null && !f.isDone() && (!receive && now - pendingSince[i] >= limit
                        || unattended && now - pendingSince[i] >= UNATTENDED_NANOS)) {
                    if (late == null) {
                        late = new ArrayList<>();
                        lateWhat = new ArrayList<>();
                    }
                    late.add(f);
                    lateWhat.add(pendingWhat[i]);
                }
            }
        }
        if (late == null) {
            return;
        }
        abandonInDevice(late.size() + " of its futures failed by deadline with their requests in the device");
        for (int i = 0; i < late.size(); i++) {
            CompletionQueue queue = queueOf(lateWhat.get(i));
            late.get(i).fail(queue.isServed() || !queue.unattendedFor(now, UNATTENDED_NANOS)
                    ? new java.util.concurrent.TimeoutException(lateWhat.get(i) + " on queue pair " + number
                            + " had no completion within its operation timeout of " + config.operationTimeout().toMillis()
                            + " ms (QueuePairConfig.withOperationTimeout)")
                    : new IllegalStateException(lateWhat.get(i) + " on queue pair " + number + " cannot complete: no"
                            + " Poller serves " + queue + " and nobody polls it; start one (Poller.start) or poll the"
                            + " queue yourself"));
        }
        // The queue pair is in error now: the device flushes every other request it holds and no
        // longer touches their buffers. Their futures end here rather than when the flushes are
        // polled, which a poller blocked on one of them (in a callback) would never do.
        failPending(new IllegalStateException("queue pair " + number + " was put in error when " + lateWhat.get(0)
                + " passed its deadline: this request is flushed"), null);
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

    private static long userId(long wrId) {
        if (wrId < 0) {
            throw new IllegalArgumentException("work-request ids are 0 to 2^63-1, not " + wrId);
        }
        return wrId;
    }

    @Override
    Thread confinedTo() {
        return posting.confinedTo();
    }

    /** One volatile read on the data path: the destroy sets {@link State#CLOSED} under the posting lock. */
    private void checkPostable(String what) {
        if (state != State.CONNECTED) {
            throw notPostable(what);
        }
    }

    private IllegalStateException notPostable(String what) {
        ensureOpen(what);
        return new IllegalStateException(state == State.PREPARED
                    ? "queue pair " + number + " is not connected yet: connect(peerEndpoint) before " + what
                    : "queue pair " + number + " is in error (" + errorText + "): " + what + " refused; make a new one");
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
        local.checkUse(pd, localOffset, length, opcode == verbs_h.IBV_WR_RDMA_READ, what);
        long remoteAddress = remote == null ? 0 : remoteTarget(remote, remoteOffset, length, opcode, what);
        boolean inline = inlines(opcode, length);
        MemorySegment m = arena.allocate(SEND_SGE + 16, 64); // the layout of the queue pair's own request
        long wr = m.address() + SEND_WR;
        long sge = m.address() + SEND_SGE;
        WorkRequests.send(wr, sge, 0, opcode, inline ? verbs_h.IBV_SEND_INLINE : 0, 0, local.address() + localOffset,
                length, local.lkey());
        if (remote != null) {
            WorkRequests.rdma(wr, remoteAddress, remote.rkey());
        }
        return new PreparedRequest(this, opcode, local, localOffset, length, inline, wr, sge);
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
        posting.lock("post a prepared request");
        try {
            return postLocked(request, wrId, signaled);
        } finally {
            posting.unlock();
        }
    }

    private int postLocked(PreparedRequest request, long wrId, boolean signaled) {
        checkPostable("post a prepared request");
        if (request.queuePair() != this) {
            throw new IllegalArgumentException("the prepared request belongs to queue pair " + request.queuePair().number()
                    + ", not " + number);
        }
        RegisteredBuffer local = request.local();
        local.checkOpen("post a prepared request"); // its range was checked when it was prepared
        long id = userId(wrId);
        int room = signalOrFull(signaled);
        if (room == FULL) {
            return SEND_QUEUE_FULL;
        }
        boolean signal = room == SIGNALED;
        int flags = signal ? verbs_h.IBV_SEND_SIGNALED : 0;
        if (request.isInline()) {
            flags |= verbs_h.IBV_SEND_INLINE;
            WorkRequests.dataAddress(request.sgeAddress, copyInline(local, request.localOffset(), request.length()));
        }
        WorkRequests.idAndFlags(request.wrAddress, id, flags);
        return submit(request.wrAddress, request.length(), signal);
    }

    private int postSend(long wrId, int opcode, RegisteredBuffer local, long localOffset, int length,
                         RemoteBuffer remote, long remoteOffset, int immediate, long compareAdd, long swap,
                         boolean signaled, String what) {
        posting.lock(what);
        try {
            return postSendLocked(wrId, opcode, local, localOffset, length, remote, remoteOffset, immediate,
                    compareAdd, swap, signaled, what);
        } finally {
            posting.unlock();
        }
    }

    private int postSendLocked(long wrId, int opcode, RegisteredBuffer local, long localOffset, int length,
                               RemoteBuffer remote, long remoteOffset, int immediate, long compareAdd, long swap,
                               boolean signaled, String what) {
        checkPostable(what);
        local.checkUse(pd, localOffset, length, opcode == verbs_h.IBV_WR_RDMA_READ || isAtomic(opcode), what);
        long remoteAddress = remote == null ? 0 : remoteTarget(remote, remoteOffset, length, opcode, what);
        int room = signalOrFull(signaled);
        if (room == FULL) {
            return SEND_QUEUE_FULL;
        }
        boolean signal = room == SIGNALED;
        fill(wrId, opcode, local, localOffset, length, remoteAddress, remote == null ? 0 : remote.rkey(), immediate,
                compareAdd, swap, signal);
        return submit(scratchAddress + SEND_WR, length, signal);
    }

    private static final int FULL = SendQueue.FULL;
    private static final int SIGNALED = SendQueue.SIGNALED;

    /**
     * Whether one more send request fits ({@link #FULL} when not), and whether it is signaled:
     * when the caller wants it, when {@code signalEvery} is reached, or when it fills the queue.
     */
    private int signalOrFull(boolean signaled) {
        return sendQueue.room(signaled, config.signalEvery());
    }

    /** Whether a payload of {@code length} bytes goes inline for {@code opcode}: Write and Send up to the limit. */
    boolean inlines(int opcode, int length) {
        return length <= maxInline && length > 0 && !isAtomic(opcode) && opcode != verbs_h.IBV_WR_RDMA_READ;
    }

    /**
     * Posts one filled send request: publishes its ring entry when signaled, counts it, tells the
     * latency tracker, calls the provider's post_send, and undoes the accounting when refused.
     */
    private int submit(long wrAddress, int length, boolean signal) {
        sendQueue.counting(signal);
        LatencyTracker tracker = latency;
        if (tracker != null) {
            tracker.posted(length, signal); // before: the completion may be polled before post_send returns
        }
        int rc = WorkRequests.post(postSendFn, qpAddress, wrAddress, scratchAddress + BAD_WR);
        if (rc != 0) {
            if (tracker != null) {
                tracker.refused(length, signal);
            }
            return refused(rc, signal);
        }
        sendQueue.posted(signal);
        return OK;
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

    /** The right an operation needs on the remote buffer (a constant once the opcode is). */
    static int remoteRight(int opcode) {
        return opcode == verbs_h.IBV_WR_RDMA_READ ? verbs_h.IBV_ACCESS_REMOTE_READ
                : isAtomic(opcode) ? verbs_h.IBV_ACCESS_REMOTE_ATOMIC : verbs_h.IBV_ACCESS_REMOTE_WRITE;
    }

    static boolean isAtomic(int opcode) {
        return opcode == verbs_h.IBV_WR_ATOMIC_CMP_AND_SWP || opcode == verbs_h.IBV_WR_ATOMIC_FETCH_AND_ADD;
    }

    /** The remote address of a checked remote range (8-byte aligned for atomics). */
    static long remoteTarget(RemoteBuffer remote, long remoteOffset, int length, int opcode, String what) {
        remote.requireRight(remoteRight(opcode), what);
        long remoteAddress = WorkRequests.remoteAddress(remote, remoteOffset, length, what);
        if (isAtomic(opcode) && (remoteAddress & 7) != 0) { // opcode first: folds away for a constant one
            throw misaligned(what, remoteAddress);
        }
        return remoteAddress;
    }

    /** Fills the send request (inline copy when small enough) for one post. */
    private void fill(long wrId, int opcode, RegisteredBuffer local, long localOffset, int length, long remoteAddress,
                      int rkey, int immediate, long compareAdd, long swap, boolean signal) {
        boolean atomic = isAtomic(opcode);
        int flags = signal ? verbs_h.IBV_SEND_SIGNALED : 0;
        long dataAddress = local.address() + localOffset;
        if (inlines(opcode, length)) {
            dataAddress = copyInline(local, localOffset, length);
            flags |= verbs_h.IBV_SEND_INLINE;
        }
        WorkRequests.sendPrelinked(scratchAddress + SEND_WR, scratchAddress + SEND_SGE, wrId, opcode, flags, immediate,
                dataAddress, length, local.lkey()); // scratch lives until the destroy, which waits for this post
        if (atomic) {
            WorkRequests.atomic(scratchAddress + SEND_WR, remoteAddress, rkey, compareAdd, swap);
        } else {
            WorkRequests.rdma(scratchAddress + SEND_WR, remoteAddress, rkey);
        }
    }

    /**
     * Inline: the bytes are copied now (checked against a closed buffer), so the device never
     * reads the caller's memory after the post.
     */
    private long copyInline(RegisteredBuffer local, long localOffset, int length) {
        MemorySegment.copy(local.memory(), localOffset, scratch, INLINE, length);
        return scratchAddress + INLINE;
    }

    private static IllegalArgumentException misaligned(String what, long remoteAddress) {
        return new IllegalArgumentException(what + " needs an 8-byte aligned remote address, not 0x"
                + Long.toHexString(remoteAddress));
    }

    /** Undoes the accounting of a send the provider refused. */
    private int refused(int rc, boolean signal) {
        sendQueue.refused(signal);
        if (rc == io.jverbs.ibverbs.Errno.ENOMEM) {
            return SEND_QUEUE_FULL; // the provider's queue is fuller than ours says (device rounding)
        }
        throw VerbsException.of("ibv_post_send", rc);
    }

    private int postReceive(long wrId, RegisteredBuffer local, long localOffset, int length) {
        posting.lock("receive");
        try {
            return postReceiveLocked(wrId, local, localOffset, length);
        } finally {
            posting.unlock();
        }
    }

    private int postReceiveLocked(long wrId, RegisteredBuffer local, long localOffset, int length) {
        if (state != State.CONNECTED && state != State.PREPARED) { // receives may wait in INIT for the connect
            throw notPostable("receive");
        }
        local.checkUse(pd, localOffset, length, true, "receive");
        if (recvCount - (long) RECV_DONE.getAcquire(this) >= config.maxRecvWr()) {
            return RECEIVE_QUEUE_FULL;
        }
        MemorySegment s = scratch;
        WorkRequests.receive(s, scratchAddress, RECV_WR, RECV_SGE, wrId, local.address() + localOffset, length,
                local.lkey());
        int rc = WorkRequests.postReceive(postRecvFn, qpAddress, scratchAddress + RECV_WR, scratchAddress + BAD_WR);
        if (rc != 0) {
            if (rc == io.jverbs.ibverbs.Errno.ENOMEM) {
                return RECEIVE_QUEUE_FULL;
            }
            throw VerbsException.of("ibv_post_recv", rc);
        }
        recvCount++;
        return OK;
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
            // The polling thread's side of the accounting: no lock (see the fields).
            if (c.isReceive()) {
                RECV_DONE.setRelease(this, recvDone + 1);
            } else {
                sendQueue.retireOne();
                LatencyTracker tracker = latency;
                if (tracker != null) {
                    try {
                        tracker.completed();
                    } catch (RuntimeException | Error e) {
                        from.handlerFailed(e); // the recorder threw: the completion is still routed
                    }
                }
            }
            if ((wrId & FUTURE_TAG) == 0) {
                return true;
            }
        }
        return settle(c, wrId, status);
    }

    /** The rest of {@link #onCompletion}, out of line so the hot success path stays small enough to inline. */
    private boolean settle(Completion c, long wrId, int status) {
        LatencyTracker tracker = latency;
        if (status != WcStatus.SUCCESS && tracker != null) {
            tracker.failed(); // any failure errors the queue pair (a failed completion's opcode is not defined)
        }
        OperationFuture<?> future = null;
        String what = null;
        synchronized (this) {
            if (status != WcStatus.SUCCESS && state != State.ERROR && !isClosed()) {
                state = State.ERROR;
                errorText = WcStatus.name(status) + " (vendor error 0x" + Integer.toHexString(c.vendorError())
                        + ") on work request " + ((wrId & FUTURE_TAG) != 0 ? "of a future" : Long.toString(wrId));
            }
            if ((wrId & FUTURE_TAG) != 0) {
                int slot = (int) (wrId & Integer.MAX_VALUE);
                if (slot < pending.length && pending[slot] != null) {
                    future = pending[slot];
                    what = pendingWhat[slot];
                    releaseSlot(slot);
                }
            }
        }
        if ((wrId & FUTURE_TAG) == 0) {
            return true;
        }
        if (future != null) {
            @SuppressWarnings("unchecked")
            OperationFuture<WorkResult> f = (OperationFuture<WorkResult>) future;
            if (status == WcStatus.SUCCESS) {
                f.finish(new WorkResult(c.opcode(), c.byteLength(), c.hasImmediate() ? c.immediateData() : 0,
                        c.hasImmediate()));
            } else {
                f.fail(new CompletionFailedException(what, status, c.vendorError(), number));
            }
        }
        return false;
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
        if (state != State.PREPARED || latency != null) {
            throw new IllegalStateException("queue pair " + number + ": trackLatency before connect, once"
                    + (latency != null ? " (it already has a tracker)" : " (it is " + state + ")"));
        }
        if (tracker.capacity() < config.maxSendWr()) {
            throw new IllegalArgumentException("queue pair " + number + ": the latency tracker times "
                    + tracker.capacity() + " signaled requests in flight, the send queue holds " + config.maxSendWr()
                    + ": with more in flight it would pair completions with the wrong posts; size it for "
                    + config.maxSendWr());
        }
        if (!TRACKERS_IN_USE.add(tracker)) {
            throw new IllegalStateException("queue pair " + number + ": the latency tracker already times another"
                    + " queue pair, and pairs each completion with that one's posts: give each queue pair its own");
        }
        latency = tracker;
    }

    /**
     * Why a peer could not use {@code offered} through this queue pair, or null when it can: it
     * must be an open buffer of this queue pair's domain (its rkey, inside its range) or an open
     * memory window bound on this queue pair.
     */
    String offerProblem(RemoteBuffer offered) {
        for (Resource r : pd.children()) {
            if (r instanceof RegisteredBuffer b && !b.isClosed() && b.rkey() == offered.rkey()) {
                if (!b.holds(offered.address() - b.address(), offered.length())) {
                    return "its range lies outside " + b;
                }
                if (!offered.rights().containsAll(b.access())) {
                    return "the buffer's own rkey gives " + b.access() + ", not the " + offered.rights() + " offered:"
                            + " a peer that ignores the offer can do all of " + b.access() + " (and reach the whole"
                            + " buffer); offer what the registration gives, or share it through a window with fewer"
                            + " rights (QueuePair.openWindowAsync, Connection.Options.grant)";
                }
                return null;
            }
        }
        for (Resource r : children()) {
            if (r instanceof MemoryWindow w && !w.isClosed() && w.rkey() == offered.rkey()) {
                return null;
            }
        }
        return "its rkey 0x" + Integer.toHexString(offered.rkey()) + " is no open buffer of " + pd
                + " (the queue pair's protection domain) nor a window bound on queue pair " + number;
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
        List<OperationFuture<?>> orphans = new ArrayList<>();
        for (int i = 0; i < pending.length; i++) {
            if (pending[i] != null) {
                orphans.add(pending[i]);
                pending[i] = null;
            }
        }
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
        LatencyTracker tracker = latency;
        if (tracker != null) {
            TRACKERS_IN_USE.remove(tracker);
        }
        VerbsException.check("ibv_destroy_qp", rc, 0);
    }

    @Override
    public String toString() {
        return "queue pair " + number + " " + state();
    }
}
