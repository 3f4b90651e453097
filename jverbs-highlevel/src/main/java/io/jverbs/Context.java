package io.jverbs;

import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.VerbsException;
import io.jverbs.ibverbs.raw.ibv_async_event;
import io.jverbs.ibverbs.raw.ibv_context;
import io.jverbs.ibverbs.raw.ibv_device_attr;
import io.jverbs.ibverbs.raw.ibv_port_attr;
import io.jverbs.ibverbs.raw.verbs_h;
import io.jverbs.internal.Fds;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * An opened RDMA device: the root of the ownership tree. Protection domains and completion
 * queues are made from it; {@link #close()} closes them (and everything under them) in reverse
 * order, then closes the device. A close from anywhere (another thread, a completion handler, a
 * {@link Poller}'s thread) destroys children before parents: when a completion queue closed from
 * its own handler destroys itself after that poll returns, the device is closed after it.
 *
 * <p>Each open context runs one daemon thread, {@code jverbs-events-DEVICE}, that reads the
 * device's asynchronous events ({@code ibv_get_async_event}) and acts on them: a completion queue
 * overrun ({@code IBV_EVENT_CQ_ERR}) or a queue pair's fatal or access error puts the queue pairs
 * concerned in ERROR with the event's name and fails their futures; a port going down or up is
 * reported to {@link #onAsyncEvent} listeners. Every 100 ms the same thread fails futures past
 * their {@link QueuePairConfig#operationTimeout()} (or that nobody polls for: see
 * {@link QueuePair}) and releases registrations whose caller memory was freed
 * ({@link ProtectionDomain#register(MemorySegment, Access...)}). It never blocks longer than 100 ms
 * and stops before the device is closed.
 *
 * <p>Thread-safe. Attribute records are snapshots.
 */
public final class Context extends Resource {
    private final String name;
    private final MemorySegment context;

    private final Thread events;
    private volatile boolean stopEvents;
    private final java.util.List<java.util.function.Consumer<AsyncEvent>> listeners =
            new java.util.concurrent.CopyOnWriteArrayList<>();
    private final java.util.concurrent.atomic.AtomicLong eventCount = new java.util.concurrent.atomic.AtomicLong();

    /**
     * {@link System#nanoTime()} as the event threads last read it (every 100 ms at most): the
     * post time of a future, for its deadline, without a clock read on the post path.
     */
    private static volatile long coarseNanos = System.nanoTime();

    /** A clock good to about 100 ms, read with one volatile load. */
    static long coarseNanos() {
        return coarseNanos;
    }

    private Context(String name, MemorySegment context) {
        super("context " + name, null);
        this.name = name;
        this.context = context;
        coarseNanos = System.nanoTime();
        this.events = new EventThread("jverbs-events-" + name, this::watchEvents);
        events.start();
    }

    /**
     * An asynchronous event of the device ({@code struct ibv_async_event}), as jverbs read it.
     *
     * @param type   the {@code IBV_EVENT_*} value
     * @param name   its name as libibverbs spells it ({@code ibv_event_type_str}), such as
     *               {@code "CQ overrun"}, {@code "local work queue catastrophic error"} or
     *               {@code "port error"}
     * @param port   the port of a port event, else 0
     * @param target what it concerns in jverbs' terms ({@code "queue pair 17"}, a completion
     *               queue, {@code "port 1"}, {@code "device"}), or {@code "unknown"} for an object
     *               jverbs did not make
     */
    public record AsyncEvent(int type, String name, int port, String target) {
    }

    /**
     * Adds a listener of the device's asynchronous events (port up and down, errors). It runs on
     * the context's event thread, after jverbs acted on the event; it must return quickly and may
     * not close this context from there.
     *
     * @param listener called once per event; an exception it throws is logged and ignored
     */
    public void onAsyncEvent(java.util.function.Consumer<AsyncEvent> listener) {
        listeners.add(java.util.Objects.requireNonNull(listener));
    }

    /**
     * Returns how many asynchronous events the device reported since this context was opened.
     *
     * @return the count
     */
    public long asyncEventCount() {
        return eventCount.get();
    }

    private void watchEvents() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pollFd = arena.allocate(Fds.POLLFD_BYTES);
            MemorySegment event = arena.allocate(ibv_async_event.LAYOUT);
            int fd = ibv_context.async_fd(context.reinterpret(ibv_context.sizeof()));
            while (!stopEvents) {
                boolean ready = Fds.readable(pollFd, fd, 100);
                if (stopEvents) {
                    return;
                }
                try {
                    if (ready && verbs_h.ibv_get_async_event(context, event) == 0) {
                        int type = ibv_async_event.event_type(event);
                        MemorySegment element = ibv_async_event.element(event);
                        long target = ibv_async_event.element.qp(element).address(); // cq, qp, srq: one pointer
                        int port = ibv_async_event.element.port_num(element);
                        // ack first: a destroy of the object waits for its events to be acknowledged
                        verbs_h.ibv_ack_async_event(event);
                        eventCount.incrementAndGet();
                        dispatch(type, target, port);
                    }
                    long now = System.nanoTime();
                    coarseNanos = now;
                    sweep(now);
                } catch (RuntimeException | Error e) { // a listener's or a future callback's: the thread must live on
                    System.getLogger("io.jverbs").log(System.Logger.Level.WARNING,
                            "the event thread of " + name + " met an error; it goes on", e);
                }
            }
        }
    }

    private void dispatch(int type, long target, int port) {
        String eventName = verbs_h.ibv_event_type_str(type).reinterpret(128).getString(0);
        String what = "unknown";
        switch (type) {
            case verbs_h.IBV_EVENT_CQ_ERR -> {
                for (CompletionQueue cq : queues()) {
                    if (cq.rawAddress() == target) {
                        what = cq.toString();
                        cq.overrun(eventName);
                    }
                }
            }
            case verbs_h.IBV_EVENT_QP_FATAL, verbs_h.IBV_EVENT_QP_REQ_ERR, verbs_h.IBV_EVENT_QP_ACCESS_ERR,
                 verbs_h.IBV_EVENT_PATH_MIG_ERR, verbs_h.IBV_EVENT_COMM_EST, verbs_h.IBV_EVENT_SQ_DRAINED,
                 verbs_h.IBV_EVENT_PATH_MIG, verbs_h.IBV_EVENT_QP_LAST_WQE_REACHED -> {
                boolean fatal = type == verbs_h.IBV_EVENT_QP_FATAL || type == verbs_h.IBV_EVENT_QP_REQ_ERR
                        || type == verbs_h.IBV_EVENT_QP_ACCESS_ERR || type == verbs_h.IBV_EVENT_PATH_MIG_ERR;
                for (QueueEndpoint qp : queuePairs()) {
                    if (qp.nativeAddress() == target) {
                        what = qp.kindAndNumber();
                        if (fatal) {
                            qp.asyncError(eventName);
                        }
                    }
                }
            }
            case verbs_h.IBV_EVENT_DEVICE_FATAL -> {
                what = "device";
                for (QueueEndpoint qp : queuePairs()) {
                    qp.asyncError(eventName);
                }
            }
            default -> what = port > 0 ? "port " + port : "device";
        }
        boolean portEvent = type == verbs_h.IBV_EVENT_PORT_ACTIVE || type == verbs_h.IBV_EVENT_PORT_ERR
                || type == verbs_h.IBV_EVENT_LID_CHANGE || type == verbs_h.IBV_EVENT_PKEY_CHANGE
                || type == verbs_h.IBV_EVENT_SM_CHANGE || type == verbs_h.IBV_EVENT_CLIENT_REREGISTER
                || type == verbs_h.IBV_EVENT_GID_CHANGE;
        AsyncEvent e = new AsyncEvent(type, eventName, portEvent ? port : 0, what);
        System.getLogger("io.jverbs").log(System.Logger.Level.INFO, "{0}: asynchronous event {1} on {2}", name,
                eventName, what);
        for (java.util.function.Consumer<AsyncEvent> l : listeners) {
            try {
                l.accept(e);
            } catch (RuntimeException | Error failure) {
                System.getLogger("io.jverbs").log(System.Logger.Level.WARNING, "an async event listener threw", failure);
            }
        }
    }

    /** The periodic duty: futures past their deadline. */
    private void sweep(long now) {
        for (QueueEndpoint qp : queuePairs()) {
            try {
                qp.expireFutures(now); // one queue pair's failure leaves the others' deadlines kept
            } catch (RuntimeException | Error e) {
                System.getLogger("io.jverbs").log(System.Logger.Level.WARNING,
                        "failing the late futures of " + qp.kindAndNumber() + " failed", e);
            }
        }
    }

    private List<CompletionQueue> queues() {
        List<CompletionQueue> out = new ArrayList<>();
        for (Resource r : children()) {
            if (r instanceof CompletionQueue cq) {
                out.add(cq);
            }
        }
        return out;
    }

    private java.util.Set<QueueEndpoint> queuePairs() {
        java.util.Set<QueueEndpoint> out = new java.util.LinkedHashSet<>();
        for (CompletionQueue cq : queues()) {
            java.util.Collections.addAll(out, cq.attached());
        }
        return out;
    }

    /** Whether the calling thread is the event thread of a context (which fails late futures). */
    static boolean onEventThread() {
        return Thread.currentThread() instanceof EventThread;
    }

    /** The thread of a context that reads asynchronous events and fails late futures. */
    private static final class EventThread extends Thread {
        EventThread(String name, Runnable task) {
            super(null, task, name);
            setDaemon(true);
        }
    }

    /** Stops the event thread (at most its 100 ms wait) before the device is closed. */
    @Override
    void beforeClose() {
        stopEvents = true;
        if (Thread.currentThread() != events) {
            try {
                events.join(java.time.Duration.ofSeconds(2));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    static Context open(String deviceName) {
        List<String> seen = new ArrayList<>();
        MemorySegment[] opened = {MemorySegment.NULL};
        int[] errno = {0};
        boolean listed = Rdma.forEachDevice((name, device) -> {
            seen.add(name);
            if (!name.equals(deviceName)) {
                return false;
            }
            opened[0] = verbs_h.ibv_open_device(device);
            errno[0] = Native.lastErrno();
            return true;
        });
        if (!listed || !seen.contains(deviceName)) {
            throw new NoSuchElementException("no RDMA device " + deviceName + (seen.isEmpty()
                    ? ": " + Rdma.devices().reason() : "; devices here: " + String.join(", ", seen)));
        }
        if (opened[0].address() == 0) {
            throw VerbsException.of("ibv_open_device", errno[0]);
        }
        return new Context(deviceName, opened[0]);
    }

    /**
     * Returns the device name.
     *
     * @return the device name, such as {@code rxe0}
     */
    public String name() {
        return name;
    }

    @Override
    public synchronized MemorySegment handle() {
        ensureOpen("use its handle");
        return context;
    }

    /**
     * {@code ibv_query_device}.
     *
     * @return the device's limits and capabilities
     * @throws VerbsException when the query fails
     * @throws IllegalStateException when closed
     */
    public synchronized DeviceAttributes deviceAttributes() {
        ensureOpen("query the device");
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment a = scratch.allocate(ibv_device_attr.LAYOUT);
            int rc = verbs_h.ibv_query_device(context, a);
            VerbsException.check("ibv_query_device", rc, Native.lastErrno());
            return new DeviceAttributes(ibv_device_attr.fw_ver(a).getString(0),
                    ibv_device_attr.max_mr_size(a) < 0 ? Long.MAX_VALUE : ibv_device_attr.max_mr_size(a),
                    ibv_device_attr.max_qp(a), ibv_device_attr.max_qp_wr(a), ibv_device_attr.max_sge(a),
                    ibv_device_attr.max_cq(a), ibv_device_attr.max_cqe(a), ibv_device_attr.max_mr(a),
                    ibv_device_attr.max_pd(a), ibv_device_attr.max_qp_rd_atom(a), ibv_device_attr.max_qp_init_rd_atom(a),
                    ibv_device_attr.atomic_cap(a) != verbs_h.IBV_ATOMIC_NONE, ibv_device_attr.max_srq(a),
                    ibv_device_attr.phys_port_cnt(a) & 0xff, ibv_device_attr.vendor_id(a),
                    ibv_device_attr.vendor_part_id(a), ibv_device_attr.max_ah(a), Math.max(0, ibv_device_attr.max_mw(a)),
                    (ibv_device_attr.device_cap_flags(a) & verbs_h.IBV_DEVICE_MEM_WINDOW_TYPE_2B) != 0);
        }
    }

    /** The device's attributes as first asked ({@link #limits()}); null before, or when the query failed. */
    private DeviceAttributes limits;
    private boolean limitsAsked;

    /** The device's attributes, asked once (they do not change while it is open); null when it cannot be asked. */
    private synchronized DeviceAttributes limits() {
        if (!limitsAsked) {
            try {
                limits = deviceAttributes();
            } catch (VerbsException e) {
                limits = null; // a device that cannot be queried: the callers' defaults apply
            }
            limitsAsked = true;
        }
        return limits;
    }

    /**
     * The most outstanding RDMA Reads and atomics the device takes in each direction
     * ({@code max_qp_rd_atom}, {@code max_qp_init_rd_atom}, the lower); 255 when the device cannot
     * be asked.
     */
    int rdAtomicLimit() {
        DeviceAttributes a = limits();
        int n = a == null ? 0 : Math.min(a.maxQpRdAtomic(), a.maxQpInitRdAtomic());
        return n > 0 ? n : 255;
    }

    /**
     * How many type-2 memory windows the device offers ({@code max_mw}, when its capability flags
     * include {@code IBV_DEVICE_MEM_WINDOW_TYPE_2B}), or 0 when it has none or cannot be asked.
     */
    int typeTwoWindows() {
        DeviceAttributes a = limits();
        return a != null && a.typeTwoWindows() ? a.maxMw() : 0;
    }

    /**
     * {@code ibv_query_port}.
     *
     * @param port the port number, from 1
     * @return the port's state and limits
     * @throws VerbsException when the query fails (EINVAL for a port the device does not have)
     * @throws IllegalStateException when closed
     */
    public synchronized PortAttributes port(int port) {
        ensureOpen("query a port");
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment a = scratch.allocate(ibv_port_attr.LAYOUT);
            VerbsException.check("ibv_query_port", InlineVerbs.ibv_query_port(context, port, a), 0);
            return new PortAttributes(port, ibv_port_attr.state(a), ibv_port_attr.active_mtu(a),
                    ibv_port_attr.max_mtu(a), ibv_port_attr.link_layer(a) & 0xff, ibv_port_attr.gid_tbl_len(a),
                    ibv_port_attr.lid(a) & 0xffff, ibv_port_attr.max_msg_sz(a) & 0xffffffffL);
        }
    }

    /**
     * Reads one GID table entry ({@code ibv_query_gid}) and its type (from sysfs).
     *
     * @param port  the port, from 1
     * @param index the GID index
     * @return the entry
     * @throws VerbsException when the query fails
     */
    public synchronized Gid gid(int port, int index) {
        ensureOpen("query a GID");
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment g = scratch.allocate(16);
            int rc = verbs_h.ibv_query_gid(context, (byte) port, index, g);
            VerbsException.check("ibv_query_gid", rc, Native.lastErrno());
            String type = Rdma.readQuietly(Path.of("/sys/class/infiniband", name, "ports", Integer.toString(port),
                    "gid_attrs", "types", Integer.toString(index)));
            return new Gid(index, g.toArray(ValueLayout.JAVA_BYTE), type);
        }
    }

    /**
     * Chooses the GID a queue pair uses on this port: on RoCE the first RoCE v2 entry that maps an
     * IPv4 address ({@code ::ffff:a.b.c.d}), else the first RoCE v2 entry, else index 0; on
     * InfiniBand index 0.
     *
     * @param port the port, from 1
     * @return the chosen entry
     * @throws VerbsException when the GID table cannot be read
     * @throws IllegalStateException when the table has no usable entry
     */
    public Gid chooseGid(int port) {
        PortAttributes attrs = port(port);
        if (!attrs.isEthernet()) {
            return gid(port, 0);
        }
        Gid firstV2 = null;
        for (int i = 0; i < attrs.gidTableLength(); i++) {
            Gid g;
            try {
                g = gid(port, i);
            } catch (VerbsException e) {
                continue;
            }
            if (g.isEmpty() || !g.isRoceV2()) {
                continue;
            }
            if (g.isIpv4Mapped()) {
                return g;
            }
            if (firstV2 == null) {
                firstV2 = g;
            }
        }
        if (firstV2 != null) {
            return firstV2;
        }
        throw new IllegalStateException(name + " port " + port + " has no RoCE v2 GID: is its network interface up and"
                + " does it have an IP address?");
    }

    /**
     * {@code ibv_alloc_pd}: a protection domain, owned by this context.
     *
     * @return the protection domain
     * @throws VerbsException when the allocation fails
     * @throws IllegalStateException when closed
     */
    public ProtectionDomain allocateProtectionDomain() {
        MemorySegment pd;
        synchronized (this) {
            ensureOpen("allocate a protection domain");
            pd = verbs_h.ibv_alloc_pd(context);
            if (pd.address() == 0) {
                throw VerbsException.of("ibv_alloc_pd", Native.lastErrno());
            }
            // adopted under the monitor the destroy takes: a close never misses it, nor runs between
            return ProtectionDomain.adopt(this, pd);
        }
    }

    /**
     * A completion queue polled by the caller (busy or with an idle strategy).
     *
     * @param capacity entries, at least 1 (the device may round up)
     * @return the completion queue, owned by this context
     * @throws VerbsException when {@code ibv_create_cq} fails
     * @throws IllegalArgumentException when capacity is below 1
     */
    public CompletionQueue createCompletionQueue(int capacity) {
        return CompletionQueue.create(this, capacity, false, false);
    }

    /**
     * A completion queue confined to the calling thread, like a confined
     * {@link java.lang.foreign.Arena}: {@link CompletionQueue#poll} and {@code close()} (also the
     * close of this context while the queue is open) are accepted only from this thread, others
     * get {@link WrongThreadException}, until the thread ends (then any thread may close it); in
     * exchange a poll takes no lock. For a thread that owns
     * its connection and polls it itself; a {@link Poller} refuses it (it polls on its own thread).
     *
     * @param capacity entries, at least 1 (the device may round up)
     * @return the completion queue, owned by this context
     * @throws VerbsException when {@code ibv_create_cq} fails
     * @throws IllegalArgumentException when capacity is below 1
     */
    public CompletionQueue createConfinedCompletionQueue(int capacity) {
        return CompletionQueue.create(this, capacity, false, true);
    }

    /**
     * A completion queue with a completion channel, so that an idle poller can sleep until a
     * completion arrives ({@link CompletionQueue#waitForEvent(long)}).
     *
     * @param capacity entries, at least 1
     * @return the completion queue, owned by this context
     * @throws VerbsException when {@code ibv_create_comp_channel} or {@code ibv_create_cq} fails
     */
    public CompletionQueue createCompletionQueueWithEvents(int capacity) {
        return CompletionQueue.create(this, capacity, true, false, 0);
    }

    /**
     * As {@link #createCompletionQueueWithEvents(int)}, its events raised on completion vector
     * {@code vector}: the device's interrupt (and so the CPU) that serves it, where the device has
     * several ({@link #completionVectors()}).
     *
     * @param capacity entries, at least 1
     * @param vector   0 to {@link #completionVectors()} &minus; 1
     * @return the completion queue, owned by this context
     * @throws IllegalArgumentException when capacity is below 1 or the vector is not the device's
     * @throws VerbsException when {@code ibv_create_comp_channel} or {@code ibv_create_cq} fails
     */
    public CompletionQueue createCompletionQueueWithEvents(int capacity, int vector) {
        return CompletionQueue.create(this, capacity, true, false, vector);
    }

    /**
     * How many completion vectors the device has ({@code num_comp_vectors}).
     *
     * @return the count (at least 1 on every provider jverbs knows)
     * @throws IllegalStateException when this context is closed
     */
    public synchronized int completionVectors() {
        ensureOpen("read the completion vectors");
        return ibv_context.num_comp_vectors(context.reinterpret(ibv_context.sizeof()));
    }

    MemorySegment raw() {
        return context;
    }

    @Override
    void destroyNative() {
        int rc = verbs_h.ibv_close_device(context);
        VerbsException.check("ibv_close_device", rc, Native.lastErrno());
    }

    /**
     * A device's limits and capabilities ({@code struct ibv_device_attr}).
     *
     * @param firmware        firmware version
     * @param maxMrSizeBytes  largest memory region; {@link Long#MAX_VALUE} when the device reports more (rxe: 2<sup>64</sup>&minus;1)
     * @param maxQp           queue pairs
     * @param maxQpWr         work requests per queue
     * @param maxSge          scatter/gather entries per work request
     * @param maxCq           completion queues
     * @param maxCqe          entries per completion queue
     * @param maxMr           memory regions
     * @param maxPd           protection domains
     * @param maxQpRdAtomic   outstanding RDMA Read/atomic operations a QP can be the target of
     * @param maxQpInitRdAtomic outstanding RDMA Read/atomic operations a QP can initiate
     * @param atomics         whether compare-and-swap and fetch-and-add are supported
     * @param maxSrq          shared receive queues
     * @param ports           physical ports
     * @param vendorId        the IEEE OUI of the vendor ({@code 0x02c9} Mellanox/NVIDIA; rxe reports {@code 0xffffff})
     * @param vendorPartId    the vendor's part number (the PCI device id on NICs)
     * @param maxAh           address handles (each {@link DatagramQueuePair.Destination} holds one)
     * @param maxMw           memory windows ({@code max_mw})
     * @param typeTwoWindows  whether the device binds type-2 windows
     *                        ({@code IBV_DEVICE_MEM_WINDOW_TYPE_2B}), which
     *                        {@link MemoryWindow#openAsync} needs
     */
    public record DeviceAttributes(String firmware, long maxMrSizeBytes, int maxQp, int maxQpWr, int maxSge, int maxCq,
                                   int maxCqe, int maxMr, int maxPd, int maxQpRdAtomic, int maxQpInitRdAtomic,
                                   boolean atomics, int maxSrq, int ports, int vendorId, int vendorPartId,
                                   int maxAh, int maxMw, boolean typeTwoWindows) {
    }

    /**
     * A port's state ({@code struct ibv_port_attr}).
     *
     * @param port            the port number
     * @param state           {@code IBV_PORT_*} (4 = ACTIVE)
     * @param activeMtu       {@code IBV_MTU_*} in use
     * @param maxMtu          largest {@code IBV_MTU_*}
     * @param linkLayer       {@code IBV_LINK_LAYER_*}
     * @param gidTableLength  entries in the GID table
     * @param lid             the LID (0 on RoCE)
     * @param maxMessageBytes largest message
     */
    public record PortAttributes(int port, int state, int activeMtu, int maxMtu, int linkLayer, int gidTableLength,
                                 int lid, long maxMessageBytes) {
        /**
         * Returns whether the port is ACTIVE.
         *
         * @return true when the port can carry traffic
         */
        public boolean isActive() {
            return state == verbs_h.IBV_PORT_ACTIVE;
        }

        /**
         * Returns whether this is a RoCE (Ethernet) port.
         *
         * @return true for RoCE, false for InfiniBand
         */
        public boolean isEthernet() {
            return linkLayer == verbs_h.IBV_LINK_LAYER_ETHERNET;
        }

        /**
         * Returns the active MTU in bytes.
         *
         * @return 256 to 4096
         */
        public int activeMtuBytes() {
            return 128 << activeMtu;
        }
    }
}
