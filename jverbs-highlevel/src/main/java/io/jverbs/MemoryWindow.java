package io.jverbs;

import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.VerbsException;
import io.jverbs.ibverbs.raw.ibv_mw;

import java.lang.foreign.MemorySegment;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * A type-2 memory window: one range of a {@link RegisteredBuffer} shared with the peer of one RC
 * queue pair, with its own rkey and its own rights, revocable at any time. What a peer holds
 * ({@link #remote()}) reaches only that range, only with those rights, only through that queue
 * pair, and only until the window is invalidated or closed; the buffer's own rkey is never sent.
 *
 * <p>Made by {@link #openAsync(QueuePair, RegisteredBuffer, long, long, Access...)}, which binds the window on the queue pair's send
 * queue ({@code IBV_WR_BIND_MW}), or by {@link #prepare} and then
 * {@link #bindAsync()}, when the peer must learn the rkey before the queue pair is connected. {@link #invalidateAsync()} revokes it there
 * ({@code IBV_WR_LOCAL_INV}); after that the peer's requests with its rkey fail with a remote
 * access error (and its queue pair with them). {@link #close()} frees the window
 * ({@code ibv_dealloc_mw}), which also revokes it.
 *
 * <p>Devices: memory windows need {@code IBV_DEVICE_MEM_WINDOW_TYPE_2B} and {@code max_mw > 0}
 * ({@code ibv_devinfo -v}). Soft-RoCE (rxe) has both on Linux 6.1 and 6.12; ConnectX (mlx5)
 * devices have them too. Where the device has none, {@code openAsync} throws
 * {@link UnsupportedOperationException}: share a buffer registered for just that purpose instead.
 *
 * <p><b>Soft-RoCE does not enforce a window's range.</b> On rxe (seen on Linux 6.1 and 6.12) the
 * rkey, the rights and the revocation hold, but the responder checks a peer's address range
 * against the whole registered region, not the window: a peer that claims a longer range than
 * {@link #remote()} gave it can write past the window's end, inside the region. A jverbs peer
 * cannot (its {@link RemoteBuffer} ranges are checked before posting); against an untrusted peer
 * on rxe, register the shared range as its own buffer.
 *
 * <p>Ownership: the window is a child of its queue pair (closed with it, before it) and is closed
 * when its buffer closes. Thread-safety: all methods may be called from any thread;
 * {@link #invalidateAsync()} posts on the queue pair, under its rules (a confined queue pair only
 * from its thread).
 */
public final class MemoryWindow extends Resource {
    private final QueuePair qp;
    private final RegisteredBuffer buffer;
    private final MemorySegment mw;
    private final long address;
    private final long length;
    private final Set<Access> rights;
    private final int rkey;
    /** Bound on the device and not revoked since. */
    private volatile boolean valid;
    /** A bind was posted (guarded by this): a window is bound once. */
    private boolean bindPosted;
    /** Revoked by an invalidation (guarded by this). */
    private boolean revoked;
    /** An invalidation is posted and has not completed (guarded by this). */
    private boolean invalidating;
    /** An invalidation failed after it was posted (guarded by this): {@link #invalidating} stays set. */
    private boolean invalidationFailed;

    private MemoryWindow(QueuePair qp, RegisteredBuffer buffer, MemorySegment mw, long address, long length,
                         Set<Access> rights) {
        super("memory window", qp);
        this.qp = qp;
        this.buffer = buffer;
        this.mw = mw;
        this.address = address;
        this.length = length;
        this.rights = Set.copyOf(rights);
        // the key a bind gives the window: its allocated key with the next value of its low byte,
        // so an rkey of an earlier binding of this window never matches
        this.rkey = InlineVerbs.ibv_inc_rkey(ibv_mw.rkey(mw));
    }

    /**
     * {@link #openAsync(QueuePair, RegisteredBuffer, long, long, Access...)} for a slice.
     *
     * @param qp     an RC queue pair, connected
     * @param range  the range to share
     * @param rights what the peer may do in it
     * @return completes with the bound window
     * @throws UnsupportedOperationException when the device has no type-2 windows, or the queue pair is not RC
     * @throws IllegalArgumentException      as the buffer form
     * @throws IllegalStateException         when not connected, in error, or closed
     */
    public static CompletableFuture<MemoryWindow> openAsync(QueuePair qp, Slice range, Access... rights) {
        return openAsync(qp, range.buffer(), range.offset(), range.length(), rights);
    }

    /**
     * Shares one range of a buffer with {@code qp}'s peer through a new type-2 memory
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
     * @param qp     an RC queue pair, connected (for a bind)
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
    public static CompletableFuture<MemoryWindow> openAsync(QueuePair qp, RegisteredBuffer buffer, long offset, long length,
                                                            Access... rights) {
        qp.ensureOpen("bind a memory window");
        if (qp.state != QueuePair.State.CONNECTED) {
            throw qp.notPostable("bind a memory window");
        }
        return prepare(qp, buffer, offset, length, rights).bindAsync();
    }

    /**
     * Allocates a type-2 memory window over one range of a buffer for {@code qp}'s peer,
     * without binding it yet: its rkey ({@link MemoryWindow#rkey()}, {@link MemoryWindow#remote()})
     * is known now, so it can be told to the peer in a connection's handshake, and the window is
     * bound once the queue pair is connected ({@link MemoryWindow#bindAsync()}). Until the bind
     * completes, a peer's request with the rkey fails with a remote access error. This is how a
     * {@link io.jverbs.cm.Connection} server grants each connection its own windows.
     *
     * @param qp     an RC queue pair, connected (for a bind)
     * @param buffer a buffer of this queue pair's protection domain
     * @param offset the range's first byte in {@code buffer}
     * @param length the range's bytes, at least 1
     * @param rights what the peer may do in the range: at least one of {@link Access}
     * @return the window, allocated and not bound
     * @throws UnsupportedOperationException when the device has no type-2 windows, or the queue pair is not RC
     * @throws IllegalArgumentException      as {@link #openAsync(QueuePair, RegisteredBuffer, long, long, Access...)}
     * @throws IndexOutOfBoundsException     when the range lies outside the buffer
     * @throws IllegalStateException         when the queue pair is closed
     * @throws io.jverbs.ibverbs.VerbsException when {@code ibv_alloc_mw} fails
     */
    public static MemoryWindow prepare(QueuePair qp, RegisteredBuffer buffer, long offset, long length, Access... rights) {
        String what = "bind a memory window";
        qp.requireReliable(what);
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
        buffer.checkUse(qp.protectionDomain(), offset, length, deviceWrites, what);
        if (qp.config().remoteAccess() != null && !qp.config().remoteAccess().containsAll(wanted)) {
            throw new IllegalArgumentException(what + ": queue pair " + qp.number() + " grants only " + qp.config().remoteAccess()
                    + " (QueuePairConfig.withRemoteAccess); the peer's requests through a window with " + wanted
                    + " would fail");
        }
        int windows = qp.protectionDomain().context().typeTwoWindows();
        if (windows == 0) {
            throw new UnsupportedOperationException(what + ": device " + qp.protectionDomain().context().name() + " has no type-2 memory"
                    + " windows (IBV_DEVICE_MEM_WINDOW_TYPE_2B, max_mw; see ibv_devinfo -v): share a buffer registered"
                    + " for the purpose instead");
        }
        qp.ensureOpen(what);
        qp.protectionDomain().grantRemoteAccess(wanted);
        return MemoryWindow.allocate(qp, buffer, buffer.address() + offset, length, wanted);
    }

    /** Allocates a window in {@code qp}'s domain for {@code [address, address + length)} of {@code buffer}; not bound yet. */
    static MemoryWindow allocate(QueuePair qp, RegisteredBuffer buffer, long address, long length, Set<Access> rights) {
        MemoryWindow w;
        synchronized (qp) { // adopted under the monitor the queue pair's destroy takes
            qp.ensureOpen("open a memory window");
            MemorySegment mw = InlineVerbs.ibv_alloc_mw(qp.protectionDomain().handle(),
                    io.jverbs.ibverbs.raw.verbs_h.IBV_MW_TYPE_2);
            if (mw.address() == 0) {
                throw VerbsException.of("ibv_alloc_mw", Native.lastErrno());
            }
            w = new MemoryWindow(qp, buffer, mw.reinterpret(ibv_mw.sizeof()), address, length, rights);
            try {
                w.adoptedByParent();
            } catch (RuntimeException e) {
                w.close();
                throw e;
            }
        }
        try {
            buffer.addWindow(w);
        } catch (RuntimeException e) {
            w.close();
            throw e;
        }
        return w;
    }

    /**
     * Binds the window prepared by {@link #prepare} on its queue pair's send queue
     * ({@code IBV_WR_BIND_MW}), with the rkey and rights it was prepared with. The bind takes
     * effect on the device in the order of the send queue; the future completes when the queue
     * pair's completions are polled, as any other future does.
     *
     * @return completes with this window once bound; fails as the queue pair's other operations
     *         do, and then frees the window
     * @throws IllegalStateException when the window was bound (or a bind was posted) before, is
     *                               closed, or its queue pair is not connected
     */
    public CompletableFuture<MemoryWindow> bindAsync() {
        return bind(false);
    }

    /** {@link #bindAsync()} as jverbs' own request, which no deadline fails (a connection server's grant). */
    CompletableFuture<MemoryWindow> bind(boolean quiet) {
        ensureOpen("bind it");
        synchronized (this) {
            if (bindPosted) {
                throw new IllegalStateException(this + " was bound before: a window is bound once");
            }
            bindPosted = true;
        }
        CompletableFuture<WorkResult> posted;
        try {
            posted = qp.bind(this, quiet);
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
        return posted.handle((r, failure) -> {
            if (failure != null) {
                close();
                throw failure instanceof CompletionException ce ? ce : new CompletionException(failure);
            }
            valid = true;
            return this;
        });
    }

    /** The rights the window gives. */
    Set<Access> rights() {
        return rights;
    }

    /**
     * Returns what the peer needs to reach the window's range: its address, length, rkey and
     * rights. Send it to the peer (in a {@link io.jverbs.cm.Handshake}, or as a message). A window prepared and
     * not bound yet already has it: the peer's requests fail until the bind completes.
     *
     * @return the window's range as the peer addresses it
     * @throws IllegalStateException when the window was invalidated or closed
     */
    public RemoteBuffer remote() {
        boolean gone;
        synchronized (this) {
            gone = revoked;
        }
        if (gone || isClosed()) {
            throw new IllegalStateException(this + " was " + (isClosed() ? "closed" : "invalidated")
                    + ": it shares nothing any more");
        }
        return new RemoteBuffer(address, length, rkey, rights);
    }

    /**
     * Whether the window is bound and not revoked.
     *
     * @return true until {@link #invalidateAsync()} completes or {@link #close()} is called
     */
    public boolean isValid() {
        return valid && !isClosed();
    }

    /**
     * Returns the buffer the window shares a range of.
     *
     * @return its buffer
     */
    public RegisteredBuffer buffer() {
        return buffer;
    }

    /**
     * Returns the queue pair the window is bound on: the only one through which the peer reaches it.
     *
     * @return its queue pair
     */
    public QueuePair queuePair() {
        return qp;
    }

    /**
     * Revokes the window on its queue pair's send queue ({@code IBV_WR_LOCAL_INV}). Once the
     * future completes, a peer's request with the window's rkey fails with a remote access error.
     * The window stays allocated until {@link #close()}. A window is invalidated once: a second
     * call, while the first is in flight or after it (even when the first failed or timed out: its
     * request may still be queued), is refused before anything is posted (some
     * providers do not survive the invalidation of a revoked window: Soft-RoCE on Linux 6.12
     * dereferences a NULL pointer in the kernel on it).
     *
     * @return completes when the device has revoked the window; fails as the queue pair's other
     *         operations do ({@link CompletionFailedException}, {@link QueueFullException})
     * @throws IllegalStateException when the window was invalidated already or is being
     *                               invalidated, when it or its queue pair is closed, or when the
     *                               queue pair is not connected
     */
    public CompletableFuture<Void> invalidateAsync() {
        ensureOpen("invalidate it");
        synchronized (this) {
            if (invalidating || !valid) {
                throw new IllegalStateException(this + (invalidationFailed ? " had an invalidation that failed or"
                        + " timed out: it may still be queued, and may or may not have run"
                        : invalidating ? " is being invalidated already" : " was invalidated already")
                        + ": a window is invalidated once (close() frees it)");
            }
            invalidating = true;
        }
        CompletableFuture<WorkResult> posted;
        try {
            posted = qp.invalidate(this, rkey);
        } catch (RuntimeException | Error e) {
            synchronized (this) {
                invalidating = false;
            }
            throw e;
        }
        return posted.handle((r, failure) -> {
            synchronized (this) {
                if (failure == null) {
                    invalidating = false;
                    valid = false;
                    revoked = true;
                } else if (unwrap(failure) instanceof QueueFullException) {
                    invalidating = false; // refused before the device saw it: nothing was posted
                } else {
                    // timed out (still queued, it may run later) or flushed: it is never posted again
                    invalidationFailed = true;
                }
            }
            if (failure != null) {
                throw failure instanceof CompletionException ce ? ce
                        : new CompletionException(failure);
            }
            return null;
        });
    }

    private static Throwable unwrap(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }

    long remoteAddress() {
        return address;
    }

    /**
     * The bytes the window covers.
     *
     * @return its length
     */
    public long length() {
        return length;
    }

    /**
     * The window's rkey, as the peer uses it.
     *
     * @return the rkey of the binding
     */
    public int rkey() {
        return rkey;
    }

    @Override
    public synchronized MemorySegment handle() {
        ensureOpen("use its handle");
        return mw;
    }

    MemorySegment raw() {
        return mw;
    }

    @Override
    void destroyNative() {
        valid = false;
        buffer.removeWindow(this);
        int rc = InlineVerbs.ibv_dealloc_mw(mw);
        VerbsException.check("ibv_dealloc_mw", rc, Native.lastErrno());
    }

    @Override
    public String toString() {
        return "memory window rkey 0x" + Integer.toHexString(rkey) + " over " + length + " B at 0x"
                + Long.toHexString(address) + " " + rights + " on queue pair " + qp.number()
                + (isClosed() ? " (closed)" : valid ? "" : " (not bound)");
    }
}
