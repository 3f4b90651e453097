package io.jverbs;

import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.VerbsException;
import io.jverbs.ibverbs.raw.ibv_qp_cap;
import io.jverbs.ibverbs.raw.ibv_qp_init_attr;
import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.EnumSet;
import java.util.Set;

/**
 * A protection domain: registered buffers and queue pairs made from it can reach each other, and
 * nothing else can. Closing it closes them first.
 *
 * <p>Thread-safe.
 */
public final class ProtectionDomain extends Resource {
    /** Buffers are page-aligned, so that a registration covers whole pages of its own. */
    static final long PAGE = 4096;
    private final Context context;
    private final MemorySegment pd;
    /** The remote rights of every buffer registered here so far (guarded by this). */
    private final Set<Access> granted = EnumSet.noneOf(Access.class);
    /** Buffers registered here get no remote rights of their own (guarded by this). */
    private boolean windowsOnly;

    private ProtectionDomain(Context context, MemorySegment pd) {
        super("protection domain", context);
        this.context = context;
        this.pd = pd;
    }

    static ProtectionDomain adopt(Context context, MemorySegment pd) {
        ProtectionDomain domain = new ProtectionDomain(context, pd);
        try {
            domain.adoptedByParent();
        } catch (IllegalStateException e) {
            verbs_h.ibv_dealloc_pd(pd);
            throw e;
        }
        return domain;
    }

    /**
     * Returns the context this domain belongs to.
     *
     * @return its context
     */
    public Context context() {
        return context;
    }

    @Override
    public synchronized MemorySegment handle() {
        ensureOpen("use its handle");
        return pd;
    }

    /**
     * Allocates a zeroed, page-aligned native buffer and registers it. The buffer owns its memory:
     * closing it deregisters it first, then frees the memory, after which its
     * {@link RegisteredBuffer#segment()} throws on access.
     *
     * @param bytes  the size, at least 1
     * @param access remote rights (none: local use only)
     * @return the registered buffer
     * @throws IllegalArgumentException when bytes is below 1
     * @throws VerbsException when {@code ibv_reg_mr} fails (ENOMEM: the message says whether the
     *                         memlock limit, free memory or Soft-RoCE's 1 GiB per region is the cause)
     */
    public RegisteredBuffer allocate(long bytes, Access... access) {
        return allocate(bytes, false, access);
    }

    /**
     * As {@link #allocate(long, Access...)}, registered with relaxed ordering when asked
     * ({@code IBV_ACCESS_RELAXED_ORDERING}): the device may then complete its PCIe writes to this
     * memory out of order, which raises throughput on some platforms (C perftest registers so by
     * default). An optional flag: a device or kernel without it registers the memory as usual.
     *
     * @param bytes           the size, at least 1
     * @param relaxedOrdering whether the registration asks for relaxed ordering
     * @param access          remote rights (none: local use only)
     * @return the registered buffer
     * @throws IllegalArgumentException when bytes is below 1
     * @throws VerbsException as {@link #allocate(long, Access...)}
     */
    public RegisteredBuffer allocate(long bytes, boolean relaxedOrdering, Access... access) {
        if (bytes < 1) {
            throw new IllegalArgumentException("a buffer needs at least 1 byte, not " + bytes);
        }
        Arena arena = Arena.ofShared();
        try {
            MemorySegment memory = arena.allocate(bytes, PAGE);
            return register(memory, arena, relaxedOrdering, access);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /**
     * Registers a native segment the caller allocated (and keeps owning), following the segment's
     * scope: a post that names the buffer after its arena closed throws
     * {@link IllegalStateException}, and a jverbs thread that runs no user code releases
     * ({@code ibv_dereg_mr}) a registration whose arena has closed within about 20 ms. In that
     * window a peer holding the rkey could still write into the freed pages: prefer
     * {@link #register(Arena, MemorySegment, Access...)}, which deregisters <em>before</em> the arena
     * frees the memory, or close the buffer before the arena. A segment of an automatic arena
     * ({@link Arena#ofAuto()}) stays alive while registered (the registration holds it).
     *
     * <p>A read-only segment ({@link MemorySegment#asReadOnly()}) is registered without local
     * write: it may be the source of writes and sends and be read by a peer
     * ({@link Access#REMOTE_READ}), but remote write or atomic rights are refused, and a receive,
     * RDMA Read or atomic into it is refused before posting.
     *
     * @param memory a native segment, not empty, alive
     * @param access remote rights
     * @return the registered buffer, which does not free {@code memory}
     * @throws IllegalArgumentException for a heap segment (the device can only reach native memory:
     *                                  allocate it from an {@link Arena}), an empty one, or a
     *                                  read-only one with {@link Access#REMOTE_WRITE} or
     *                                  {@link Access#REMOTE_ATOMIC}
     * @throws IllegalStateException when the segment's arena is closed
     * @throws VerbsException when {@code ibv_reg_mr} fails
     */
    public RegisteredBuffer register(MemorySegment memory, Access... access) {
        return register(memory, null, false, access);
    }

    /**
     * Registers a native segment allocated by {@code arena} and ties the registration to it: when
     * the arena closes, the registration is released ({@code ibv_dereg_mr}) before the arena frees
     * the memory, so neither this side nor a peer can reach the pages afterwards. Closing the
     * buffer earlier is allowed (the arena's close then does nothing more for it). Otherwise as
     * {@link #register(MemorySegment, Access...)}.
     *
     * @param arena  the arena that allocated {@code memory}; its close releases the registration
     *               (needs native access for the jverbs-highlevel module, as every jverbs call)
     * @param memory a native segment of {@code arena}, not empty
     * @param access remote rights
     * @return the registered buffer, which does not free {@code memory}
     * @throws IllegalArgumentException when {@code memory} is not {@code arena}'s, or as
     *                                  {@link #register(MemorySegment, Access...)}
     * @throws IllegalStateException when the arena is closed
     * @throws VerbsException when {@code ibv_reg_mr} fails
     */
    public RegisteredBuffer register(Arena arena, MemorySegment memory, Access... access) {
        return register(arena, memory, false, access);
    }

    /**
     * As {@link #register(Arena, MemorySegment, Access...)}, with relaxed ordering when asked (see
     * {@link #allocate(long, boolean, Access...)}).
     *
     * @param arena           the arena that allocated {@code memory}; its close releases the registration
     * @param memory          a native segment of {@code arena}, not empty
     * @param relaxedOrdering whether the registration asks for relaxed ordering
     * @param access          remote rights
     * @return the registered buffer, which does not free {@code memory}
     * @throws IllegalArgumentException as {@link #register(Arena, MemorySegment, Access...)}
     * @throws IllegalStateException when the arena is closed
     * @throws VerbsException when {@code ibv_reg_mr} fails
     */
    public RegisteredBuffer register(Arena arena, MemorySegment memory, boolean relaxedOrdering, Access... access) {
        java.util.Objects.requireNonNull(arena, "arena");
        if (!arena.scope().equals(memory.scope())) {
            throw new IllegalArgumentException("the segment was not allocated by this arena: pass the arena that owns it");
        }
        RegisteredBuffer buffer = register(memory, null, relaxedOrdering, access);
        try {
            // The cleanup runs when the arena closes, before the arena's earlier cleanups (LIFO),
            // among them the free of this memory.
            MemorySegment.NULL.reinterpret(arena, ignored -> buffer.closeQuietly());
        } catch (RuntimeException e) {
            buffer.close();
            throw e;
        }
        return buffer;
    }

    private RegisteredBuffer register(MemorySegment memory, Arena owned, boolean relaxedOrdering, Access... access) {
        if (!memory.isNative()) {
            throw new IllegalArgumentException("a heap segment cannot be registered (the garbage collector moves it):"
                    + " allocate the memory from an Arena, or use ProtectionDomain.allocate");
        }
        if (!memory.scope().isAlive()) {
            throw new IllegalStateException("the segment's arena is already closed");
        }
        if (memory.byteSize() == 0 || memory.address() == 0) {
            throw new IllegalArgumentException("an empty or NULL segment cannot be registered");
        }
        Set<Access> rights = access.length == 0 ? EnumSet.noneOf(Access.class) : EnumSet.of(access[0], access);
        boolean readOnly = memory.isReadOnly();
        if (readOnly && (rights.contains(Access.REMOTE_WRITE) || rights.contains(Access.REMOTE_ATOMIC))) {
            throw new IllegalArgumentException("a read-only segment cannot be registered with " + rights
                    + ": a peer could change it; grant REMOTE_READ only, or register a writable segment");
        }
        MemorySegment mr;
        RegisteredBuffer buffer;
        synchronized (this) {
            ensureOpen("register memory");
            if (windowsOnly && !rights.isEmpty()) {
                throw new IllegalStateException("protection domain " + this + " grants remote access through memory"
                        + " windows only (it serves isolated connections): a buffer registered with " + rights
                        + " would be reachable by every peer of the domain that guesses its rkey; register it"
                        + " without remote rights and grant it to one connection (Connection.Options.grant,"
                        + " QueuePair.openWindowAsync), or use a protection domain of its own");
            }
            // a device with type-2 windows may share a range of any buffer through one (QueuePair.openWindowAsync)
            int windows = context().typeTwoWindows() > 0 ? verbs_h.IBV_ACCESS_MW_BIND : 0;
            int relaxed = relaxedOrdering ? verbs_h.IBV_ACCESS_RELAXED_ORDERING : 0;
            mr = InlineVerbs.ibv_reg_mr(pd, memory, memory.byteSize(), Access.flags(rights, !readOnly) | windows | relaxed);
            if (mr.address() == 0) {
                int errno = Native.lastErrno();
                String hint = regionHint(errno, memory.byteSize(), isSoftRoce(context().name()));
                throw hint != null ? new VerbsException("ibv_reg_mr", errno, hint) : VerbsException.of("ibv_reg_mr", errno);
            }
            buffer = RegisteredBuffer.adopt(this, memory, owned, mr, rights); // under the monitor the destroy takes
        }
        grantRemoteAccess(rights);
        return buffer;
    }

    /**
     * Returns the remote rights granted to buffers registered in this domain so far: what a queue
     * pair of the domain lets a peer do unless its config says otherwise
     * ({@link QueuePairConfig#remoteAccess()}).
     *
     * @return a copy of the rights
     */
    public synchronized Set<Access> grantedRights() {
        return granted.isEmpty() ? EnumSet.noneOf(Access.class) : EnumSet.copyOf(granted);
    }

    /**
     * From now on, buffers registered in this domain carry no remote rights of their own: a peer
     * reaches memory of the domain only through a type-2 memory window bound for its queue pair
     * ({@link MemoryWindow#openAsync}, {@link MemoryWindow#prepare}). A buffer's own rkey
     * reaches every queue pair of its domain, so one peer of a server could guess the rkey of
     * memory meant for another (on rxe an rkey is the region's index and one random byte); a
     * window's rkey works only through the queue pair it is bound on. A
     * {@link io.jverbs.cm.Connection} server calls this on its domain unless told to share it.
     * Idempotent.
     *
     * @throws IllegalStateException when a buffer with remote rights is registered in the domain
     *                               already (it names the buffer), or the domain is closed
     */
    public void windowsOnly() {
        java.util.List<Resource> kids;
        synchronized (this) {
            ensureOpen("restrict remote access to windows");
            kids = children();
            for (Resource r : kids) {
                if (r instanceof RegisteredBuffer b && !b.isClosed() && !b.access().isEmpty()) {
                    throw new IllegalStateException(b + " of protection domain " + this + " was registered with "
                            + b.access() + ": every peer of the domain could reach it by its rkey, so the domain"
                            + " cannot be restricted to windows; register it without remote rights (grant it"
                            + " per connection) or in another protection domain");
                }
            }
            windowsOnly = true;
        }
    }

    /**
     * Returns whether the domain grants remote access through windows only ({@link #windowsOnly()}).
     *
     * @return true once restricted
     */
    public synchronized boolean isWindowsOnly() {
        return windowsOnly;
    }

    /** Adds {@code rights} to the domain's; connected queue pairs that follow the domain are widened. */
    void grantRemoteAccess(Set<Access> rights) {
        java.util.List<Resource> kids;
        synchronized (this) {
            if (granted.containsAll(rights)) {
                return;
            }
            granted.addAll(rights);
            kids = children();
        }
        for (Resource r : kids) {
            if (r instanceof QueuePair qp) {
                qp.syncAccess();
            }
        }
    }

    /** The largest region rxe registers where its page array is one allocation (4 MiB of 16-byte entries). */
    static final long RXE_REGION_LIMIT = 1L << 30;

    /**
     * What to say when a registration failed on a Soft-RoCE device: rxe (seen in Linux 6.12.117)
     * keeps one 16-byte entry per 4 KiB page in a single {@code kcalloc}, which the page allocator
     * caps at 4 MiB, so a region over 1 GiB fails with ENOMEM whatever the memory and the limits.
     *
     * @return the hint, or null when the failure is not that one
     */
    static String regionHint(int errno, long bytes, boolean softRoce) {
        if (errno == io.jverbs.ibverbs.Errno.EFAULT) {
            return "the kernel could not pin the memory's pages: the segment must be mapped, readable memory of"
                    + " this process (not a file mapping that was truncated, not memory unmapped meanwhile); register"
                    + " memory from an Arena, or ProtectionDomain.allocate";
        }
        if (errno != io.jverbs.ibverbs.Errno.ENOMEM || bytes <= RXE_REGION_LIMIT || !softRoce) {
            return null;
        }
        return "Soft-RoCE (rxe) in recent kernels (seen on Linux 6.12.117; 6.1 registers it) registers at most 1 GiB"
                + " per region: it keeps its page list in one allocation, which the kernel caps at 4 MiB. This region is "
                + bytes + " bytes: register it as pieces of at most 1 GiB, or use a hardware device";
    }

    /** Whether the device is Soft-RoCE: rxe devices have a {@code parent} (their network device) in sysfs. */
    private static boolean isSoftRoce(String device) {
        return java.nio.file.Files.exists(java.nio.file.Path.of("/sys/class/infiniband", device, "parent"));
    }

    /**
     * Creates a queue pair in the <em>prepared</em> state: it knows its
     * {@link QueuePair#localEndpoint()}, and {@link QueuePair#connect(Endpoint)} makes it usable.
     *
     * @param config its type, queues and limits
     * @return the queue pair, owned by this domain
     * @throws VerbsException when {@code ibv_create_qp} fails
     * @throws IllegalStateException when this domain or a completion queue is closed
     */
    public QueuePair createQueuePair(QueuePairConfig config) {
        return create(this, config);
    }

    MemorySegment raw() {
        return pd;
    }

    @Override
    void destroyNative() {
        VerbsException.check("ibv_dealloc_pd", verbs_h.ibv_dealloc_pd(pd), 0);
    }

    /**
     * Why a peer could not use {@code offered} through {@code qp}, a queue pair of this domain, or
     * null when it can: it must be an open buffer of this domain (its rkey, inside its range) or
     * an open memory window bound on {@code qp}.
     */
    String offerProblem(QueuePair qp, RemoteBuffer offered) {
        for (Resource r : children()) {
            if (r instanceof RegisteredBuffer b && !b.isClosed() && b.rkey() == offered.rkey()) {
                if (!b.holds(offered.address() - b.address(), offered.length())) {
                    return "its range lies outside " + b;
                }
                if (!offered.rights().containsAll(b.access())) {
                    return "the buffer's own rkey gives " + b.access() + ", not the " + offered.rights() + " offered:"
                            + " a peer that ignores the offer can do all of " + b.access() + " (and reach the whole"
                            + " buffer); offer what the registration gives, or share it through a window with fewer"
                            + " rights (MemoryWindow.openAsync, Connection.Options.grant)";
                }
                return null;
            }
        }
        for (Resource r : qp.children()) {
            if (r instanceof MemoryWindow w && !w.isClosed() && w.rkey() == offered.rkey()) {
                return null;
            }
        }
        return "its rkey 0x" + Integer.toHexString(offered.rkey()) + " is no open buffer of " + this
                + " (the queue pair's protection domain) nor a window bound on queue pair " + qp.number();
    }

    /** Makes a queue pair on {@code pd} (see {@link #createQueuePair}); the queues are checked and lent to ibv_create_qp. */
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
                pair = new QueuePair(pd, config, qp, maxInline, gid, port, rdAtomic);
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
}
