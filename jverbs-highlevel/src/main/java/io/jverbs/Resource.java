package io.jverbs;


import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * A node of the ownership tree: a native object with a parent that closes it, children it
 * closes first (in reverse order of creation), and an idempotent {@link #close()}.
 *
 * <p>Thread-safety: {@link #close()} may be called from any thread, any number of times; the
 * subclass's operations and {@link #destroyNative()} run under this object's monitor (posts and
 * polls under the queue's own lighter lock, which the destroy also takes), so a close
 * waits for an operation in progress and an operation after close throws. A queue pair or
 * completion queue made confined to a thread ({@link QueuePairConfig#confined()},
 * {@link Context#createConfinedCompletionQueue}) is the exception: its {@link #close()}, and the
 * close of anything that would close it, is accepted only from that thread.
 */
public abstract sealed class Resource implements AutoCloseable
        permits Context, ProtectionDomain, RegisteredBuffer, CompletionQueue, QueueEndpoint, MemoryWindow {
    private final String kind;
    private final Resource parent;
    private final List<Resource> children = new ArrayList<>();
    /** Written under the monitor; volatile so {@link #isClosed()} and the posts and polls need no monitor. */
    private volatile boolean closed;
    /**
     * A close has taken its list of children (written under the monitor): no child is adopted
     * after it, so none outlives this object. Creations adopt under the monitor the destroy takes
     * too. Volatile so a wait that does not hold the monitor can see a close begin.
     */
    private volatile boolean closing;
    /** Children closed whose native destroy still waits (a completion queue closed from its own handler). */
    private int deferredChildren;
    /** Closed while {@link #deferredChildren} was not 0: the native destroy runs when the last of them is done. */
    private boolean destroyPending;

    Resource(String kind, Resource parent) {
        this.kind = kind;
        this.parent = parent;
    }

    /** Registers this object with its parent once its native object exists. */
    final void adoptedByParent() {
        if (parent != null) {
            parent.adopt(this);
        }
    }

    private synchronized void adopt(Resource child) {
        if (closing) {
            // The parent was closed while the child was being made: undo the child right away.
            throw new RefusedException(RefusedException.Reason.CLOSED, kind + " is closed: cannot create a " + child.kind
                    + " under it");
        }
        children.add(child);
    }

    private void forget(Resource child) {
        synchronized (this) {
            children.remove(child);
            if (!destroyIfDue()) {
                return;
            }
        }
        deferredDestroyDone();
    }

    /**
     * Runs the destroy a close left pending, once no child is left and no child's destroy waits;
     * under the monitor.
     *
     * @return true when it ran the destroy (the caller then tells the parent, outside the monitor)
     */
    private boolean destroyIfDue() {
        if (!destroyPending || deferredChildren > 0 || !children.isEmpty()) {
            return false;
        }
        destroyPending = false;
        try {
            destroyNative();
        } catch (RuntimeException e) {
            System.getLogger("io.jverbs").log(System.Logger.Level.WARNING, "deferred destroy of " + kind + " failed", e);
        }
        return true;
    }

    /**
     * Returns whether a close has begun (it may still be closing the children). Under the monitor
     * the answer holds until the monitor is released; without it, it may turn true just after.
     *
     * @return true from the moment a close took its list of children
     */
    final boolean closeBegun() {
        return closing;
    }

    /** The open children at this moment, in creation order. */
    final synchronized List<Resource> children() {
        return new ArrayList<>(children);
    }

    /**
     * Returns whether {@link #close()} has run.
     *
     * @return true once this object is closed: no operation on it is accepted any more (its
     *         native object is destroyed then, or as soon as a child's destroy still running on
     *         another thread is done)
     */
    public final boolean isClosed() {
        return closed;
    }

    /**
     * Throws when closed. Called by the operations under this object's monitor (posts and polls
     * under their queue's lock, which the destroy takes too).
     *
     * @param operation what the caller tried, for the message
     */
    final void ensureOpen(String operation) {
        if (closed) {
            throw new RefusedException(RefusedException.Reason.CLOSED, kind + " is closed: cannot " + operation);
        }
    }

    /**
     * The raw native handle (the C pointer of the object), an escape hatch to the thin bindings.
     * It is valid only until {@link #close()}; using it afterwards is use-after-free, which the
     * thin layer cannot detect.
     *
     * @return the C object as a zero-length segment
     * @throws IllegalStateException when closed
     */
    public abstract MemorySegment handle();

    /**
     * Closes the children (in reverse order of creation), then destroys this native object and
     * removes it from its parent. When a child's destroy is still running elsewhere (another
     * thread closing it, or a poll in progress whose handler closed its queue), this object's
     * destroy runs right after that child's, on that thread: a parent is never destroyed before
     * its children. Idempotent; safe from any thread, except that a confined object (or a parent
     * of one) is closed only from the confined object's thread.
     *
     * @throws WrongThreadException when this object, or one its close would close, is confined to
     *                              another thread (nothing is closed then)
     * @throws io.jverbs.ibverbs.VerbsException when the native destroy fails (the object is then
     *                                           still marked closed: it can no longer be used)
     */
    @Override
    public final void close() {
        if (closed) {
            return;
        }
        checkCloser(Thread.currentThread()); // before anything is closed
        List<Resource> toClose;
        synchronized (this) {
            if (closed) {
                return;
            }
            closing = true;
            toClose = new ArrayList<>(children);
        }
        RuntimeException failure = null;
        for (int i = toClose.size() - 1; i >= 0; i--) {
            try {
                toClose.get(i).close();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        beforeClose();
        synchronized (this) {
            if (!closed) {
                closed = true;
                if (deferredChildren > 0 || !children.isEmpty()) {
                    // a child's destroy waits for a poll in progress, or another thread is still
                    // closing a child: this object's destroy (and its ancestors') waits for it, so a
                    // parent is never destroyed before its children
                    destroyPending = true;
                    destroyDeferred();
                } else {
                    try {
                        destroyNative();
                    } catch (RuntimeException e) {
                        if (failure == null) {
                            failure = e;
                        } else {
                            failure.addSuppressed(e);
                        }
                    }
                }
            }
        }
        if (parent != null) {
            parent.forget(this);
        }
        if (failure != null) {
            throw failure;
        }
    }

    /**
     * The thread this object is confined to, or null when any thread may use and close it.
     *
     * @return the owner thread, or null
     */
    Thread confinedTo() {
        return null;
    }

    /**
     * Throws, before anything is closed, when this object or anything its close would close is
     * confined to another thread than {@code closer}.
     *
     * @param closer the thread closing
     * @throws WrongThreadException naming the confined object and its thread
     */
    void checkCloser(Thread closer) {
        Thread owner = confinedTo();
        if (owner != null && owner != closer && !closed && owner.isAlive()) { // an ended owner leaves the close to anyone
            throw wrongThread(owner, "close");
        }
        List<Resource> kids;
        synchronized (this) {
            kids = new ArrayList<>(children);
        }
        for (Resource k : kids) {
            k.checkCloser(closer);
        }
    }

    /**
     * The exception of a confined object used from another thread than its owner.
     *
     * @param owner     the thread it is confined to
     * @param operation what the caller tried
     * @return the exception to throw
     */
    final WrongThreadException wrongThread(Thread owner, String operation) {
        return new WrongThreadException(this + " is confined to thread \"" + owner.getName() + "\" (id "
                + owner.threadId() + "): " + operation + " refused on thread \"" + Thread.currentThread().getName()
                + "\"; call it from the owner thread, or create the object shared");
    }

    /**
     * Tells the parent that this object's native destroy waits (it runs later, on another path):
     * the parent, and its ancestors, then wait for it before their own destroy. A subclass that
     * defers its destroy calls this, and {@link #deferredDestroyDone()} once the destroy has run.
     */
    final void destroyDeferred() {
        if (parent != null) {
            parent.childDeferred();
        }
    }

    private synchronized void childDeferred() {
        deferredChildren++;
    }

    /** The deferred destroy of this object has run: a parent that waited for it may destroy now. */
    final void deferredDestroyDone() {
        if (parent != null) {
            parent.childDestroyed();
        }
    }

    private void childDestroyed() {
        synchronized (this) {
            deferredChildren--;
            if (!destroyIfDue()) {
                return;
            }
        }
        deferredDestroyDone();
    }

    /** Runs outside the monitor before the destroy (e.g. closing dependants held elsewhere). */
    void beforeClose() {
    }

    /** Destroys the native object; runs once, under this object's monitor. */
    abstract void destroyNative();

    @Override
    public String toString() {
        return kind + (isClosed() ? " (closed)" : "");
    }
}
