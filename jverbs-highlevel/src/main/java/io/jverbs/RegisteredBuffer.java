package io.jverbs;

import io.jverbs.ibverbs.VerbsException;
import io.jverbs.ibverbs.raw.ibv_mr;
import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Set;

/**
 * Native memory registered with the device: a {@link MemorySegment} plus the local key (lkey)
 * that lets this side's work requests use it and, when remote rights were granted, the remote key
 * (rkey) a peer needs.
 *
 * <p>Lifetime: {@link #close()} deregisters the memory ({@code ibv_dereg_mr}) <em>before</em> its
 * memory is freed, so the device can never touch freed memory; work still in flight on it ends
 * with an error completion. A buffer made by {@link ProtectionDomain#allocate} owns its memory:
 * after close, {@link #segment()} (and every slice of it) throws on access. A buffer made by
 * {@link ProtectionDomain#register} leaves the memory to the caller and follows its scope: a
 * post that names it after its arena closed throws, and the registration is released when the
 * arena closes ({@link ProtectionDomain#register(Arena, MemorySegment, Access...)}: before the
 * memory is freed) or within about 20 ms after ({@link ProtectionDomain#register(MemorySegment,
 * Access...)}, by a jverbs thread that runs no user code). Its protection domain holds it until
 * it closes: a buffer dropped without {@code close()} stays registered, its pages pinned, until
 * the domain (or its context) closes.
 *
 * <p>Thread-safe; the bytes of the segment are shared with the device and with the peer (when
 * remote rights were granted): who writes when is the application's protocol.
 */
public final class RegisteredBuffer extends Resource {
    private final MemorySegment memory;
    private final Arena owned;
    private final MemorySegment mr;
    private final long address;
    private final long length;
    private final int lkey;
    private final int rkey;
    private final Set<Access> access;
    /** The domain it was registered in: a queue pair of another domain cannot use it. */
    private final ProtectionDomain domain;
    /** Memory the caller allocated and registered: its scope is checked before each use. */
    private final boolean callerMemory;
    /** Registered from a read-only segment: without local write, so nothing may land in it. */
    private final boolean readOnly;

    RegisteredBuffer(ProtectionDomain pd, MemorySegment memory, Arena owned, MemorySegment mr, Set<Access> access) {
        super("registered buffer", pd);
        this.domain = pd;
        this.memory = memory;
        this.owned = owned;
        this.callerMemory = owned == null && pd != null;
        this.readOnly = memory.isReadOnly();
        this.mr = mr;
        MemorySegment m = mr.reinterpret(ibv_mr.sizeof());
        this.address = memory.address();
        this.length = memory.byteSize();
        this.lkey = ibv_mr.lkey(m);
        this.rkey = ibv_mr.rkey(m);
        this.access = Set.copyOf(access);
    }

    static RegisteredBuffer adopt(ProtectionDomain pd, MemorySegment memory, Arena owned, MemorySegment mr,
                                  Set<Access> access) {
        RegisteredBuffer buffer = new RegisteredBuffer(pd, memory, owned, mr, access);
        try {
            buffer.adoptedByParent();
        } catch (IllegalStateException e) {
            verbs_h.ibv_dereg_mr(mr);
            if (owned != null) {
                owned.close();
            }
            throw e;
        }
        if (buffer.callerMemory) {
            Reaper.follow(buffer);
        }
        return buffer;
    }

    /**
     * Releases the registrations of caller memory whose arena closed, on a thread of its own (one
     * per JVM, started with the first such registration): no user code runs on it, so a blocked
     * callback elsewhere never holds a release back.
     */
    private static final class Reaper {
        /** How often the followed registrations are looked at. */
        static final long PERIOD_MILLIS = 20;
        private static final Set<RegisteredBuffer> FOLLOWED = java.util.concurrent.ConcurrentHashMap.newKeySet();
        private static Thread thread;

        static synchronized void follow(RegisteredBuffer buffer) {
            FOLLOWED.add(buffer);
            if (thread == null) {
                thread = Thread.ofPlatform().name("jverbs-memory-reaper").daemon(true).start(Reaper::run);
            }
        }

        private static void run() {
            while (true) {
                for (java.util.Iterator<RegisteredBuffer> it = FOLLOWED.iterator(); it.hasNext(); ) {
                    RegisteredBuffer b = it.next();
                    try {
                        if (b.isClosed()) {
                            it.remove();
                        } else if (b.memoryGone()) {
                            b.closeQuietly();
                            it.remove();
                        }
                    } catch (RuntimeException | Error e) {
                        it.remove(); // closeQuietly logged it; never retried
                    }
                }
                try {
                    Thread.sleep(PERIOD_MILLIS);
                } catch (InterruptedException e) {
                    // a daemon that only stops with the JVM
                }
            }
        }
    }

    /**
     * The registered memory. For an owned buffer the segment becomes inaccessible when the buffer
     * is closed (access then throws {@link IllegalStateException}).
     *
     * @return the memory, {@link #length()} bytes, page-aligned when allocated by jverbs
     * @throws IllegalStateException when the buffer owns its memory and is closed: the memory was
     *                               freed with it
     */
    public MemorySegment segment() {
        if (owned != null && !memory.scope().isAlive()) {
            throw new IllegalStateException(this + " was closed, and its memory freed with it"
                    + " (ProtectionDomain.allocate): use the segment only while the buffer is open");
        }
        return memory;
    }

    /** {@link #segment()} without its check, for posts that checked the buffer already. */
    MemorySegment memory() {
        return memory;
    }

    /**
     * Returns the start address.
     *
     * @return the start address (also the I/O virtual address peers use)
     */
    public long address() {
        return address;
    }

    /**
     * Returns the size.
     *
     * @return bytes registered
     */
    public long length() {
        return length;
    }

    /**
     * Returns the local key.
     *
     * @return the lkey, for this side's work requests
     */
    public int lkey() {
        return lkey;
    }

    /**
     * Returns the remote key.
     *
     * @return the rkey, meaningful to a peer only when remote rights were granted
     */
    public int rkey() {
        return rkey;
    }

    /**
     * Returns the rights granted at registration.
     *
     * @return the remote rights (empty: local use only)
     */
    public Set<Access> access() {
        return access;
    }

    /**
     * This buffer as a peer addresses it, to send to the peer.
     *
     * @return address, length and rkey
     * @throws IllegalStateException when no remote right was granted (the rkey would be useless)
     *                               or the buffer is closed
     */
    public RemoteBuffer remote() {
        if (access.isEmpty()) {
            throw new IllegalStateException("this buffer was registered for local use only: grant Access.REMOTE_WRITE,"
                    + " REMOTE_READ or REMOTE_ATOMIC to let a peer reach it");
        }
        checkOpen();
        return new RemoteBuffer(address, length, rkey, access);
    }

    /**
     * A part of this buffer as a peer addresses it. It carries the whole region's rkey: a peer
     * that ignores the range can reach the rest of the buffer. To share only the part, with
     * rights of its own and revocable, bind a memory window over it
     * ({@link MemoryWindow#openAsync(QueuePair, Slice, Access...)}).
     *
     * @param offset bytes from the start
     * @param bytes  length
     * @return the part
     * @throws IndexOutOfBoundsException when the part is not inside the buffer
     */
    public RemoteBuffer remote(long offset, long bytes) {
        return remote().slice(offset, bytes);
    }

    /**
     * A range of this buffer as a value, for the slice-taking operations of {@link QueuePair}.
     *
     * @param offset the first byte
     * @param bytes  the range's length
     * @return the slice
     * @throws IndexOutOfBoundsException when the range lies outside the buffer
     */
    public Slice slice(long offset, int bytes) {
        return new Slice(this, offset, bytes);
    }

    @Override
    public synchronized MemorySegment handle() {
        ensureOpen("use its handle");
        return mr;
    }

    /**
     * The posting checks: the buffer belongs to {@code pd} (the queue pair's domain), is open, its
     * memory is alive, {@code [offset, offset + bytes)} lies inside, and, when the device writes
     * into it ({@code deviceWrites}: a receive, an RDMA Read's or an atomic's destination), it is
     * not read-only.
     */
    void checkUse(ProtectionDomain pd, long offset, long bytes, boolean deviceWrites, String operation) {
        if (pd != domain) {
            throw foreignDomain(pd, operation);
        }
        if (deviceWrites && readOnly) {
            throw new IllegalArgumentException(operation + ": " + this + " was registered from a read-only segment:"
                    + " the device may not write into it (register a writable segment for receives, reads and atomics)");
        }
        checkRange(offset, bytes, operation);
    }

    private IllegalArgumentException foreignDomain(ProtectionDomain pd, String operation) {
        return new IllegalArgumentException(operation + ": " + this + " belongs to " + describe(domain)
                + ", but the queue pair belongs to " + describe(pd) + ": a queue pair can use only buffers registered"
                + " in its own protection domain (the device would fail the request and the queue pair with it)");
    }

    private static String describe(ProtectionDomain pd) {
        return pd == null ? "no protection domain" : pd + " 0x" + Long.toHexString(pd.raw().address())
                + " of context " + pd.context().name() + " 0x" + Long.toHexString(pd.context().raw().address());
    }

    /**
     * Returns the protection domain the buffer was registered in.
     *
     * @return its domain
     */
    public ProtectionDomain protectionDomain() {
        return domain;
    }

    /**
     * Returns whether the buffer was registered from a read-only segment (see
     * {@link ProtectionDomain#register(MemorySegment, Access...)}).
     *
     * @return true when nothing may be written into it, by the device or a peer
     */
    public boolean isReadOnly() {
        return readOnly;
    }

    /** Caller memory whose arena has closed: the registration must go (the pages may be reused). */
    boolean memoryGone() {
        return callerMemory && !isClosed() && !memory.scope().isAlive();
    }

    /** Whether {@code [offset, offset + bytes)} lies inside the buffer. */
    boolean holds(long offset, long bytes) {
        return (offset | bytes) >= 0 && offset <= length - bytes;
    }

    /** Throws unless open and {@code [offset, offset + bytes)} lies inside; the hot path's check. */
    void checkRange(long offset, long bytes, String operation) {
        checkOpen(operation);
        if (!holds(offset, bytes)) {
            throw new IndexOutOfBoundsException(operation + ": local range [" + offset + ", " + offset + " + " + bytes
                    + ") is outside the registered buffer of " + length + " bytes");
        }
    }

    /**
     * Throws unless open and, for caller memory, alive; without the monitor: a race with close
     * ends in an error completion.
     */
    void checkOpen(String operation) {
        if (isClosed()) {
            throw new RefusedException(RefusedException.Reason.CLOSED, "registered buffer is closed: cannot " + operation);
        }
        if (callerMemory && !memory.scope().isAlive()) {
            throw new RefusedException(RefusedException.Reason.CLOSED, "the memory of " + this + " was freed (its arena is closed): cannot "
                    + operation + "; close the registration before its arena, or register with"
                    + " ProtectionDomain.register(arena, segment), which does it for you");
        }
    }

    private void checkOpen() {
        if (isClosed()) {
            throw new RefusedException(RefusedException.Reason.CLOSED, "registered buffer is closed");
        }
    }

    /** Closes, reporting a failure to the log instead of throwing (an arena's cleanup must not throw). */
    void closeQuietly() {
        try {
            close();
        } catch (RuntimeException e) {
            System.getLogger("io.jverbs").log(System.Logger.Level.WARNING, "releasing " + this + " failed", e);
        }
    }

    /** Memory windows bound over this buffer: closed before it, since a bound window keeps the region busy. */
    private final java.util.List<MemoryWindow> windows = new java.util.ArrayList<>();

    synchronized void addWindow(MemoryWindow window) {
        ensureOpen("bind a memory window");
        windows.add(window);
    }

    synchronized void removeWindow(MemoryWindow window) {
        windows.remove(window);
    }

    @Override
    void beforeClose() {
        java.util.List<MemoryWindow> open;
        synchronized (this) {
            open = new java.util.ArrayList<>(windows);
        }
        for (MemoryWindow w : open) {
            w.close();
        }
    }

    @Override
    void destroyNative() {
        int rc = verbs_h.ibv_dereg_mr(mr);
        // Only once the device can no longer reach the pages are they freed (or left to the caller).
        if (rc == 0 && owned != null) {
            owned.close();
        }
        VerbsException.check("ibv_dereg_mr", rc, 0);
    }

    @Override
    public String toString() {
        return "registered buffer " + length + " B at 0x" + Long.toHexString(address) + " lkey 0x"
                + Integer.toHexString(lkey) + (access.isEmpty() ? "" : " rkey 0x" + Integer.toHexString(rkey) + " " + access)
                + (isClosed() ? " (closed)" : "");
    }
}
