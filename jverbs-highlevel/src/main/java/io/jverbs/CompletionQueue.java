package io.jverbs;

import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.VerbsException;
import io.jverbs.ibverbs.internal.DataPath;
import io.jverbs.ibverbs.raw.ibv_comp_channel;
import io.jverbs.ibverbs.raw.ibv_context;
import io.jverbs.ibverbs.raw.ibv_context_ops;
import io.jverbs.ibverbs.raw.ibv_cq;
import io.jverbs.ibverbs.raw.verbs_h;
import io.jverbs.internal.Fds;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.function.Consumer;


/**
 * A completion queue: where the device reports finished work requests. {@link #poll} takes them
 * and routes each to the operation that caused it — a future of the asynchronous style, or the
 * caller's {@link CompletionHandler} for work posted with the caller's work-request id.
 *
 * <p>Thread-safety: one {@link #poll} runs at a time (a second thread waits for the first: call
 * {@code poll} from one thread, typically a {@link Poller}); one {@link #waitForEvent(long)} runs at
 * a time (a second waits for the first), and {@link #armEvents()} may run beside it;
 * {@link #close()} waits for a poll or an arm in progress, and ends a wait for an event within
 * about 50 ms. Closing from inside a handler is allowed: the queue is destroyed when that
 * poll returns. Calling {@code poll} from a handler of the same queue throws. A queue made by
 * {@link Context#createConfinedCompletionQueue} belongs to the thread that created it: its polls
 * take no lock, and {@code poll} or {@link #close()} from another thread throws
 * {@link WrongThreadException}.
 *
 * <p>Closing the queue first closes the queue pairs that use it (a device refuses to destroy a
 * completion queue that queue pairs still use).
 */
public final class CompletionQueue extends Resource {
    /** How many completions one {@link #poll} can take at most. */
    public static final int MAX_BATCH = 64;
    private static final System.Logger LOG = System.getLogger("io.jverbs");

    private final Context context;
    private final MemorySegment cq;
    private final MemorySegment channel;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment pollFd;
    private final MemorySegment pollFn;
    private final long cqAddress;
    private final long wcAddress;
    private final int capacity;
    /** The entries the device gave (it may round the capacity up): what attached queue pairs may fill. */
    private final int deviceCapacity;
    private final Completion view;
    /** The poller serving this queue, or null (one at a time). */
    private volatile Poller poller;
    /** Counts polls (a plain field: read by other threads only to see whether anybody polls). */
    private long pollCount;
    /** The event thread's last look at {@link #pollCount}: the count then, and when it last moved. */
    private long sweptCount;
    private long sweptAt = System.nanoTime();
    /** Copy-on-write under {@link #attachLock}; read without a lock by each poll. */
    private volatile QueueEndpoint[] attached = new QueueEndpoint[0];
    /** Numbers of queue pairs detached from this queue (closed), the last {@value #DEPARTED_KEPT}. */
    private volatile int[] departed = new int[0];
    private static final int DEPARTED_KEPT = 256;
    /** Serializes the copy-on-write of {@link #attached} (attach also holds the monitor, detach does not). */
    private final Object attachLock = new Object();
    /**
     * Taken by each poll and by the destroy (which so waits for a poll in progress on another
     * thread); a confined queue's lock is only its owner thread's, and takes no compare-and-set.
     */
    private final PostLock polls;
    /**
     * The queue is closed and its native destroy waits for the poll in progress (closed from a
     * handler, or a handler on another thread did not return within {@link #CLOSE_WAIT_NANOS}):
     * whoever next holds {@link #polls} destroys it. Set under the monitor, read and cleared under
     * {@link #polls}.
     */
    private volatile boolean destroyAfterPoll;
    /**
     * Held by a {@link #waitForEvent} (not the monitor, which a close needs first) and by the
     * native destroy, so the channel is never freed under a wait.
     */
    private final java.util.concurrent.locks.ReentrantLock eventWait = new java.util.concurrent.locks.ReentrantLock();
    /** A wait for an event looks at {@link #closeBegun()} at least this often. */
    private static final int EVENT_WAIT_SLICE_MS = 50;
    /** Queue pairs being created with this queue's handle ({@link #lendForCreation}); under the monitor. */
    private int creating;
    /** How long a close waits for a poll in progress on another thread before leaving the destroy to it. */
    private static final long CLOSE_WAIT_NANOS = 1_000_000_000L;
    /** Written by the polling thread only (under {@link #polls}); read by any thread. */
    private volatile long handlerFailures;
    private volatile Consumer<Throwable> errorListener = e -> LOG.log(System.Logger.Level.WARNING,
            "a completion handler threw; polling goes on", e);


    CompletionQueue(Context context, MemorySegment cq, MemorySegment channel, int capacity, boolean confined) {
        super("completion queue", context);
        this.polls = new PostLock(this, confined ? Thread.currentThread() : null);
        this.context = context;
        this.cq = cq;
        this.channel = channel;
        this.capacity = capacity;
        this.deviceCapacity = context == null ? Integer.MAX_VALUE : ibv_cq.cqe(cq.reinterpret(ibv_cq.sizeof()));
        this.pollFd = arena.allocate(Fds.POLLFD_BYTES);
        this.view = new Completion(MAX_BATCH);
        this.cqAddress = cq.address();
        this.wcAddress = view.arrayAddress();
        // The provider's poll_cq, resolved once: a context's ops table never changes.
        MemorySegment ctx = ibv_cq.context(cq.reinterpret(ibv_cq.sizeof())).reinterpret(ibv_context.sizeof());
        this.pollFn = DataPath.providerOp(ctx, ibv_context_ops.poll_cq$OFFSET, "ibv_poll_cq");
        // the provider's poll_cq as a constant address; here, not in a poll: pinning is a VM operation
        DataPath.pinPollCq(pollFn);
    }

    static CompletionQueue create(Context context, int capacity, boolean events, boolean confined) {
        return create(context, capacity, events, confined, 0);
    }

    static CompletionQueue create(Context context, int capacity, boolean events, boolean confined, int vector) {
        if (capacity < 1) {
            throw new IllegalArgumentException("a completion queue needs at least 1 entry, not " + capacity);
        }
        MemorySegment channel = MemorySegment.NULL;
        MemorySegment cq;
        synchronized (context) {
            context.ensureOpen("create a completion queue");
            if (events) {
                channel = verbs_h.ibv_create_comp_channel(context.raw());
                if (channel.address() == 0) {
                    throw VerbsException.of("ibv_create_comp_channel", Native.lastErrno());
                }
            }
            int vectors = ibv_context.num_comp_vectors(context.raw().reinterpret(ibv_context.sizeof()));
            if (vector < 0 || vector >= Math.max(1, vectors)) {
                if (events) {
                    verbs_h.ibv_destroy_comp_channel(channel);
                }
                throw new IllegalArgumentException("completion vector " + vector + ": " + context.name() + " has "
                        + vectors + " (0.." + (Math.max(1, vectors) - 1) + ")");
            }
            cq = verbs_h.ibv_create_cq(context.raw(), capacity, MemorySegment.NULL, channel, vector);
            if (cq.address() == 0) {
                int errno = Native.lastErrno();
                if (events) {
                    verbs_h.ibv_destroy_comp_channel(channel);
                }
                if (errno == io.jverbs.ibverbs.Errno.EINVAL) {
                    throw new VerbsException("ibv_create_cq", errno, "the device takes at most "
                            + context.deviceAttributes().maxCqe() + " entries per completion queue (max_cqe), not "
                            + capacity + ": make it smaller");
                }
                throw VerbsException.of("ibv_create_cq", errno);
            }
            // adopted under the monitor the context's destroy takes: a close never misses it, nor runs between
            CompletionQueue queue = new CompletionQueue(context, cq, channel, capacity, confined);
            try {
                queue.adoptedByParent();
            } catch (IllegalStateException e) {
                synchronized (queue) {
                    queue.destroyNative();
                }
                throw e;
            }
            return queue;
        }
    }

    /**
     * Returns the capacity asked for.
     *
     * @return entries
     */
    public int capacity() {
        return capacity;
    }

    /**
     * Returns the entries the device made room for (at least {@link #capacity()}; devices round up).
     * The queue pairs attached must not be able to have more completions outstanding than this,
     * or the queue overruns and completions are lost: creating a queue pair checks it.
     *
     * @return entries
     */
    public int deviceCapacity() {
        return deviceCapacity;
    }

    /**
     * Returns the context this queue belongs to.
     *
     * @return its context
     */
    public Context context() {
        return context;
    }

    /**
     * Throws unless a queue pair of {@code pd} with {@code entries} outstanding completions on this
     * queue may be attached: same context, open, and room left.
     */
    synchronized void requireServes(ProtectionDomain pd, int entries, String kind) {
        if (context != pd.context()) {
            throw new IllegalArgumentException("a " + kind + " of " + pd + " of context " + pd.context().name() + " 0x"
                    + Long.toHexString(pd.context().raw().address()) + " cannot use " + this + " of context "
                    + contextName() + (context == null ? "" : " 0x" + Long.toHexString(context.raw().address()))
                    + ": a queue pair's completion queues and protection domain must come from the same Context");
        }
        ensureOpen("attach a " + kind);
        int used = entriesInUse();
        if (used + entries > deviceCapacity) {
            throw new IllegalArgumentException("the " + kind + " can have " + entries + " completions outstanding on "
                    + this + ", which has room for " + deviceCapacity + " and already serves queue pairs with " + used
                    + ": a completion queue smaller than its queue pairs' depths overruns and loses completions;"
                    + " create it with capacity " + (used + entries) + " or more, or use smaller depths");
        }
    }

    /** The completions the attached queue pairs can have outstanding here (their depths on this queue). */
    private int entriesInUse() {
        int used = 0;
        for (QueueEndpoint qp : attached) {
            used += qp.entriesOn(this);
        }
        return used;
    }

    /** Whether a {@link Poller} serves this queue. */
    boolean isServed() {
        return poller != null;
    }

    /**
     * Whether no {@link Poller} serves this queue and nobody polled it for {@code nanos}: futures
     * waiting on it would wait forever. Called by the context's event thread only.
     */
    boolean unattendedFor(long now, long nanos) {
        long count = pollCount;
        if (count != sweptCount || poller != null) {
            sweptCount = count;
            sweptAt = now;
            return false;
        }
        return now - sweptAt >= nanos;
    }

    /**
     * Whether the calling thread is the one that takes this queue's completions: its poller, a
     * thread inside its poll, or the owner of a confined queue (no other thread may poll it).
     */
    boolean isPollingThread() {
        Poller p = poller;
        return p != null && p.isPollerThread() || polls.heldByCurrentThread()
                || polls.confinedTo() == Thread.currentThread();
    }

    /** A poller takes this queue; refused when another serves it. */
    synchronized void claim(Poller by) {
        ensureOpen("be polled by a Poller");
        if (poller != null && poller != by) {
            throw new IllegalArgumentException(this + " is already served by another Poller: completions would be split"
                    + " between their handlers; close that Poller first, or give one Poller all the queues");
        }
        poller = by;
    }

    /** The poller stopped; futures it would have completed fail with {@code why}. */
    void release(Poller by, Throwable why) {
        QueueEndpoint[] users;
        synchronized (this) {
            if (poller != by) {
                return;
            }
            poller = null;
            users = attached.clone();
        }
        for (QueueEndpoint qp : users) {
            qp.failPending(why, this);
        }
    }

    /** The C object's address, to match asynchronous events. */
    long rawAddress() {
        return cqAddress;
    }

    /** The queue pairs attached now. */
    QueueEndpoint[] attached() {
        return attached;
    }

    /** The device reported that this queue overran: its queue pairs lost completions and are errored. */
    void overrun(String event) {
        for (QueueEndpoint qp : attached) {
            qp.asyncError(event + " on " + this);
        }
    }

    /**
     * Returns whether this queue has a completion channel.
     *
     * @return true when made by {@link Context#createCompletionQueueWithEvents}
     */
    public boolean hasEvents() {
        return channel.address() != 0;
    }

    /**
     * Sets who hears of exceptions thrown by user code on the polling thread: completion handlers,
     * and the {@link io.jverbs.latency.LatencyRecorder} of a queue pair on this queue (default: a
     * WARNING through {@code System.Logger} "io.jverbs"). Polling goes on after each; a
     * completion whose recorder threw is still routed to its future or handler. The listener runs
     * on the polling thread.
     *
     * @param listener receives each exception
     */
    public synchronized void onHandlerError(Consumer<Throwable> listener) {
        this.errorListener = java.util.Objects.requireNonNull(listener);
    }

    /**
     * Returns how many calls of user code on the polling thread (handlers, latency recorders) threw.
     *
     * @return the count since creation; any thread
     */
    public long handlerFailures() {
        return handlerFailures;
    }

    @Override
    public synchronized MemorySegment handle() {
        ensureOpen("use its handle");
        return cq;
    }

    /**
     * Takes up to {@code max} completions and routes each: to the future of an asynchronous
     * operation, or to {@code handler} for work posted with the caller's work-request id.
     * Allocates nothing (after warm-up) when only the zero-allocation style is used.
     *
     * @param handler receives completions of work posted with a caller's id; may be {@code null}
     *                when only futures are used (such completions are then dropped)
     * @param max     at most this many, 1 to {@value #MAX_BATCH}
     * @return how many completions were taken (0 when none was waiting): the duty-cycle count for
     *         an {@link IdleStrategy}
     * @throws IllegalStateException when the queue is closed, poll is re-entered from a handler, or
     *                               a {@link Poller} serves the queue and this is not its thread
     * @throws WrongThreadException when the queue is confined to another thread
     * @throws VerbsException when the provider reports a polling error
     */
    public int poll(CompletionHandler handler, int max) {
        if (max < 1 || max > MAX_BATCH) {
            throw new IllegalArgumentException("max must be 1 to " + MAX_BATCH + ", not " + max);
        }
        Poller served = poller;
        if (served != null && !served.isPollerThread()) {
            throw new IllegalStateException(this + " is served by a Poller: a poll on another thread would split"
                    + " its completions between two handlers; handle them in the Poller's handler, or close the"
                    + " Poller first");
        }
        polls.lock("poll");
        try {
            return pollLocked(handler, max);
        } finally {
            polls.unlock();
        }
    }

    /**
     * Polls this queue on the calling thread until {@code future} is done or {@code timeout}
     * passed: the caller-polled form of {@code future.get(timeout)}, for a queue no
     * {@link Poller} serves. Completions of work posted with the caller's ids go to
     * {@code handler}. Busy-polls, with {@link Thread#onSpinWait()} between empty polls.
     *
     * @param future  a future of work on a queue pair of this queue
     * @param handler receives completions of work posted with a caller's id, or null
     * @param timeout the most to poll
     * @param <T>     the future's value
     * @return the future's value
     * @throws java.util.concurrent.ExecutionException when the future failed (its cause: a
     *         {@link CompletionFailedException}, say)
     * @throws java.util.concurrent.TimeoutException when it is not done within {@code timeout}
     * @throws InterruptedException when the thread is interrupted (checked between polls)
     * @throws IllegalStateException as {@link #poll} (a Poller serves the queue, it is closed)
     */
    public <T> T await(java.util.concurrent.CompletableFuture<T> future, CompletionHandler handler,
                       java.time.Duration timeout)
            throws java.util.concurrent.ExecutionException, java.util.concurrent.TimeoutException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!future.isDone()) {
            if (poll(handler, MAX_BATCH) == 0) {
                if (System.nanoTime() - deadline >= 0) {
                    throw new java.util.concurrent.TimeoutException("not done within " + timeout.toMillis() + " ms of"
                            + " polling " + this);
                }
                if (Thread.interrupted()) {
                    throw new InterruptedException("interrupted while polling " + this);
                }
                Thread.onSpinWait();
            }
        }
        return future.get();
    }

    /**
     * Returns whether this queue is confined to the thread that created it.
     *
     * @return true when made by {@link Context#createConfinedCompletionQueue}
     */
    public boolean isConfined() {
        return polls.confinedTo() != null;
    }

    @Override
    Thread confinedTo() {
        return polls.confinedTo();
    }

    /** Closing this queue closes the queue pairs attached to it: they must allow this thread too. */
    @Override
    void checkCloser(Thread closer) {
        super.checkCloser(closer);
        for (QueueEndpoint qp : attached) {
            qp.checkCloser(closer);
        }
    }

    private int pollLocked(CompletionHandler handler, int max) {
        if (isClosed()) {
            finishDeferredDestroy(); // a close left the destroy to the next holder of the lock
            ensureOpen("poll");
        }
        pollCount++;
        int n;
        n = DataPath.pollCq(pollFn, cqAddress, max, wcAddress);
        if (n < 0) {
            throw new VerbsException("ibv_poll_cq", -n == 0 ? 5 : Math.abs(n), "the completion queue reported an error");
        }
        if (n == 0) {
            return 0;
        }
        try {
            for (int i = 0; i < n; i++) {
                view.at(i);
                dispatch(handler);
            }
        } finally {
            if (destroyAfterPoll) {
                finishDeferredDestroy();
            }
        }
        return n;
    }

    /** Runs a destroy a close left to the holder of {@link #polls}; the caller holds it. */
    private void finishDeferredDestroy() {
        if (!destroyAfterPoll) {
            return;
        }
        destroyAfterPoll = false;
        try {
            destroyNow();
        } finally {
            deferredDestroyDone();
        }
    }

    /**
     * Runs the native destroy a close left to a poll, if the poll lock is free (called by a
     * {@link Poller} that found this queue closed, and by the close that left it).
     *
     * @return true when no destroy is left to a poll any more
     */
    boolean finishClose() {
        if (!destroyAfterPoll) {
            return true;
        }
        if (!polls.tryLock("close")) {
            return false;
        }
        try {
            finishDeferredDestroy();
        } finally {
            polls.unlock();
        }
        return true;
    }

    private void dispatch(CompletionHandler handler) {
        int qpn = view.qpNumber();
        QueueEndpoint[] qps = attached;
        QueueEndpoint owner = null;
        for (QueueEndpoint qp : qps) {
            if (qp.number() == qpn) {
                owner = qp;
                break;
            }
        }
        boolean forCaller;
        try {
            if (owner == null && departed(qpn)) {
                return; // work of a closed queue pair: its handler was told nothing more comes
            }
            forCaller = owner == null ? (view.wrId() & QueuePair.FUTURE_TAG) == 0 : owner.onCompletion(view, this);
        } catch (RuntimeException | Error e) {
            handlerFailed(e); // the routing itself failed (e.g. a dependent stage threw an Error): go on with the batch
            return;
        }
        if (forCaller && handler != null) {
            try {
                handler.onCompletion(view);
            } catch (RuntimeException | Error e) {
                handlerFailed(e);
            }
        }
    }

    /**
     * User code called on the polling thread threw (a {@link CompletionHandler}, or a queue pair's
     * {@link io.jverbs.latency.LatencyRecorder}): counted and reported, and polling goes on.
     */
    void handlerFailed(Throwable e) {
        handlerFailures++;
        try {
            errorListener.accept(e);
        } catch (RuntimeException ignored) {
            // the listener itself failed: nothing sensible left to report to
        }
    }

    /**
     * Arms the queue ({@code ibv_req_notify_cq}) so the next completion raises an event on its
     * channel. Call {@link #poll} once more after arming (a completion may have arrived just
     * before), then {@link #waitForEvent(long)}.
     *
     * @throws IllegalStateException when the queue has no channel or is closed
     * @throws VerbsException when arming fails
     */
    public synchronized void armEvents() {
        ensureOpen("arm events");
        requireChannel();
        VerbsException.check("ibv_req_notify_cq", InlineVerbs.ibv_req_notify_cq(cq, 0), 0);
    }

    /**
     * Waits until the armed queue raises an event, or the timeout passes; acknowledges the event.
     * Blocks the calling thread in {@code poll(2)} (a virtual thread pins its carrier meanwhile:
     * wait from a platform thread, as {@link Poller} does).
     *
     * @param timeoutMillis at most this long, 0 to 60000
     * @return true when an event arrived; false on timeout, or when a close of the queue began
     *         meanwhile (on another thread: it ends the wait within about 50 ms)
     * @throws IllegalStateException when the queue has no channel or is closed
     * @throws WaitInterruptedException when the thread is interrupted before or during the wait
     *         (within about 50 ms); its interrupt flag stays set
     * @throws VerbsException when {@code poll(2)} or {@code ibv_get_cq_event} fails
     */
    public boolean waitForEvent(long timeoutMillis) {
        if (timeoutMillis < 0 || timeoutMillis > 60_000) {
            throw new IllegalArgumentException("timeout must be 0 to 60000 ms, not " + timeoutMillis);
        }
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
        eventWait.lock();
        try {
            ensureOpen("wait for events");
            requireChannel();
            // Under eventWait, so the destroy never frees the channel mid-wait; in slices, so a
            // close that began meanwhile ends the wait instead of waiting for its timeout.
            int fd = ibv_comp_channel.fd(channel.reinterpret(ibv_comp_channel.sizeof()));
            boolean ready;
            do {
                if (closeBegun()) {
                    return false;
                }
                if (Thread.currentThread().isInterrupted()) {
                    throw new WaitInterruptedException("waiting for a completion event of " + this);
                }
                long leftMillis = Math.max(0, (deadline - System.nanoTime() + 999_999) / 1_000_000);
                ready = Fds.readable(pollFd, fd, (int) Math.min(leftMillis, EVENT_WAIT_SLICE_MS));
            } while (!ready && deadline - System.nanoTime() > 0);
            if (!ready) {
                return false;
            }
            try (Arena scratch = Arena.ofConfined()) {
                MemorySegment outCq = scratch.allocate(ValueLayout.ADDRESS);
                MemorySegment outCtx = scratch.allocate(ValueLayout.ADDRESS);
                int rc = verbs_h.ibv_get_cq_event(channel, outCq, outCtx);
                VerbsException.check("ibv_get_cq_event", rc, Native.lastErrno());
            }
            verbs_h.ibv_ack_cq_events(cq, 1);
            return true;
        } finally {
            eventWait.unlock();
        }
    }

    /**
     * Returns the file descriptor of this queue's completion channel, for a loop that waits on
     * several descriptors at once ({@code poll(2)}, {@code epoll}): it turns readable when an
     * {@linkplain #armEvents() armed} queue has a completion. After it does, call
     * {@link #waitForEvent(long) waitForEvent(0)} to take and acknowledge the event (it does not
     * block then), {@link #poll} the queue, and arm it again. Read nothing from the descriptor
     * yourself, and do not close it: the queue owns it until {@link #close()}.
     *
     * @return the descriptor, valid while the queue is open
     * @throws IllegalStateException when the queue has no channel or is closed
     */
    public int eventFd() {
        ensureOpen("give its event descriptor");
        requireChannel();
        return ibv_comp_channel.fd(channel.reinterpret(ibv_comp_channel.sizeof()));
    }

    private void requireChannel() {
        if (channel.address() == 0) {
            throw new IllegalStateException("this completion queue has no completion channel: create it with"
                    + " Context.createCompletionQueueWithEvents");
        }
    }

    String contextName() {
        return context == null ? "" : context.name();
    }

    synchronized void attach(QueueEndpoint qp) {
        ensureOpen("attach a queue pair");
        if (closeBegun()) { // its close has taken the list of queue pairs to close first
            throw new IllegalStateException(this + " is being closed: cannot attach a queue pair");
        }
        int used = entriesInUse();
        if (used + qp.entriesOn(this) > deviceCapacity) {
            throw new IllegalArgumentException(this + " has room for " + deviceCapacity + " completions; its queue"
                    + " pairs could have " + (used + qp.entriesOn(this)) + " outstanding");
        }
        synchronized (attachLock) {
            QueueEndpoint[] next = Arrays.copyOf(attached, attached.length + 1);
            next[attached.length] = qp;
            attached = next;
            int n = qp.number(); // a number the device gives again: its completions are this queue pair's now
            departed = Arrays.stream(departed).filter(d -> d != n).toArray();
        }
    }

    /**
     * Not under the monitor, which {@link #waitForEvent} holds for its whole wait: a queue pair's
     * close must not wait for it.
     */
    void detach(QueueEndpoint qp) {
        synchronized (attachLock) {
            int before = attached.length;
            attached = Arrays.stream(attached).filter(q -> q != qp).toArray(QueueEndpoint[]::new);
            if (attached.length < before) {
                // its completions still in the queue belong to nobody now: dropped, not handed to a handler
                int[] d = departed.length < DEPARTED_KEPT ? Arrays.copyOf(departed, departed.length + 1)
                        : Arrays.copyOfRange(departed, 1, departed.length + 1);
                d[d.length - 1] = qp.number();
                departed = d;
            }
        }
    }

    /** Whether {@code qpn} is of a queue pair that left this queue (closed) and has no successor here. */
    private boolean departed(int qpn) {
        for (int d : departed) {
            if (d == qpn) {
                return true;
            }
        }
        return false;
    }

    @Override
    void beforeClose() {
        QueueEndpoint[] users;
        synchronized (this) {
            users = attached.clone();
        }
        for (QueueEndpoint qp : users) {
            qp.close();
        }
    }

    @Override
    void destroyNative() {
        if (polls.heldByCurrentThread()) {
            destroyAfterPoll = true; // closed from a handler: destroy once this poll is done with the array
            destroyDeferred(); // and the context's destroy waits for it
            return;
        }
        // Under this queue's monitor. The poll in progress on another thread may be inside a handler
        // that needs the monitor (its own close of this queue, handle()): wait with the monitor
        // released, so that handler sees the queue closed and returns, and its poll ends. A handler
        // that does not return within CLOSE_WAIT_NANOS (blocked in user code) gets the destroy: its
        // poll runs it on the way out, and the context's destroy waits for it.
        boolean interrupted = false;
        long deadline = System.nanoTime() + CLOSE_WAIT_NANOS;
        try {
            while (!polls.tryLock("close")) {
                if (System.nanoTime() - deadline > 0) {
                    destroyAfterPoll = true;
                    destroyDeferred();
                    // the poll may have passed its look at the flag and be about to let go of the lock
                    for (int i = 0; i < 1000 && !finishClose(); i++) {
                        Thread.onSpinWait();
                    }
                    return;
                }
                try {
                    wait(1);
                } catch (InterruptedException e) {
                    interrupted = true; // the destroy must still happen; the interrupt is kept
                }
            }
            try {
                destroyNow();
            } finally {
                polls.unlock();
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Lends this queue's handle to the creation of a queue pair, which reads it in
     * {@code ibv_create_qp}: until {@link #creationEnded()}, the native destroy waits.
     *
     * @param what the creation, for the message
     * @return the handle
     * @throws IllegalStateException when the queue is closed or being closed
     */
    synchronized MemorySegment lendForCreation(String what) {
        ensureOpen(what);
        if (closeBegun()) { // its close has taken the list of queue pairs to close first
            throw new IllegalStateException(this + " is being closed: cannot " + what);
        }
        creating++;
        return cq;
    }

    /** Ends a {@link #lendForCreation}: the queue pair is attached, or was destroyed. */
    synchronized void creationEnded() {
        creating--;
        notifyAll();
    }

    /** Waits until no creation holds the handle any more (each is one bounded kernel call). */
    private synchronized void awaitCreations() {
        boolean interrupted = false;
        while (creating > 0) {
            try {
                wait(1);
            } catch (InterruptedException e) {
                interrupted = true; // the destroy must still happen; the interrupt is kept
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void destroyNow() {
        awaitCreations();
        int rc;
        int rc2;
        // a wait for an event in progress sees the close begun within one slice and lets go
        eventWait.lock();
        try {
            rc = verbs_h.ibv_destroy_cq(cq);
            rc2 = channel.address() != 0 ? verbs_h.ibv_destroy_comp_channel(channel) : 0;
        } finally {
            eventWait.unlock();
        }
        arena.close();
        VerbsException.check("ibv_destroy_cq", rc, 0);
        VerbsException.check("ibv_destroy_comp_channel", rc2, Native.lastErrno());
    }

    @Override
    public String toString() {
        return "completion queue 0x" + Long.toHexString(cqAddress) + " of " + contextName() + (isClosed() ? " (closed)" : "");
    }

    static RuntimeException rethrow(Throwable t) {
        return io.jverbs.internal.Unchecked.of(t);
    }
}
