package io.jverbs.cm;

import io.jverbs.Completion;
import io.jverbs.CompletionHandler;
import io.jverbs.CompletionQueue;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePairConfig;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.ibverbs.Errno;
import io.jverbs.ibverbs.raw.verbs_h;
import io.jverbs.internal.Fds;
import io.jverbs.rdmacm.raw.rdma_cma_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Consumer;

/**
 * One thread that serves any number of {@link Session}s: it accepts and makes their connections
 * (all rdma_cm ids of the loop share one event channel), polls the one completion queue all their
 * queue pairs use, re-posts their receive rings, returns credits, completes calls and runs their
 * {@link SessionHandler}s. A server of many clients is one loop: 64 sessions are served by this
 * thread and the {@link io.jverbs.Context}'s event thread, with no thread per connection.
 *
 * <pre>{@code
 * try (EventLoop loop = EventLoop.start(pd, EventLoop.Options.defaults());
 *      EventLoop.Listener server = loop.listen(ip, 7471, Session.Options.defaults(), new SessionHandler() {
 *          public void onRequest(Session s, long id, MemorySegment request, int length) {
 *              s.reply(id, request.asSlice(0, length));        // echo
 *          }
 *      })) {
 *     Thread.sleep(Long.MAX_VALUE);
 * }
 * // a client
 * Session s = loop.connect(ip, 7471, Session.Options.defaults(), new SessionHandler() { }, Duration.ofSeconds(10));
 * byte[] echo = s.call("hi".getBytes(), Duration.ofSeconds(1)).get();
 * }</pre>
 *
 * <h2>Idle</h2>
 * {@link Idle#SLEEP} (the default) polls {@link Options#spinBeforeSleep()} past its last work, then
 * waits in {@code poll(2)} on the completion channel, the rdma_cm channel and a wake-up descriptor;
 * asleep, it wakes once a second. The first completion after a quiet spell pays one wake-up.
 * One-sided RDMA a peer does on this side's memory never wakes it.
 * {@link Idle#SPIN} polls without pause (one core, the lowest latency); {@link Idle#BACKOFF}
 * spins, yields, then parks up to a millisecond.
 *
 * <h2>Admission</h2>
 * A connection request is answered at once, without waiting for others' handshakes: several
 * handshakes run at a time, at most {@link Options#maxHandshakes()} in all and
 * {@link Options#maxHandshakesPerSource()} from one IP address, each within
 * {@link Options#handshakeTimeout()}; at most {@link Options#maxSessions()} sessions live (and
 * {@link Options#maxSessionsPerSource()} from one address). A request beyond a limit is rejected
 * with a reason the client's {@link RdmaCmException} carries. The accepting side's queue pair
 * gives the peer no remote rights and sends nothing until the handshake's last step arrived: a
 * peer that never completes it reaches no memory.
 *
 * <h2>Threads and errors</h2>
 * Every method is thread-safe. Handlers run on the loop's thread; what they throw goes to
 * {@link #onHandlerError} and the loop goes on. {@link #close()} closes every session and
 * listener.
 */
public final class EventLoop implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("io.jverbs");
    /** The session's own parameters, first in the handshake's data: a mark, a version, slots, slot bytes. */
    private static final int PARAMS = 8;
    private static final byte PARAMS_MARK = 0x53; // 'S'
    private static final byte PARAMS_VERSION = 1;
    /** Bytes a session's queue pair sends inline (ConnectX and rxe give at least this much). */
    private static final int INLINE_BYTES = 128;

    /** How the loop waits when it has nothing to do. */
    public enum Idle {
        /** Polls without pause: one core busy, the lowest latency. */
        SPIN,
        /** Spins, yields, then parks up to 1 ms: little CPU, up to a millisecond added after a quiet spell. */
        BACKOFF,
        /** Polls briefly after work, then sleeps on the completion channel: one wake-up per quiet spell. */
        SLEEP
    }

    /**
     * How a loop runs; start from {@link #defaults()}.
     *
     * @param idle                  how it waits
     * @param maxSessions           sessions (accepted and connected) at once, 1 to 65536 (default 256)
     * @param maxSessionsPerSource  accepted sessions from one IP address, 1 to {@code maxSessions} (default: all)
     * @param maxHandshakes         accepted handshakes under way at once, 1 to 4096 (default 128)
     * @param maxHandshakesPerSource accepted handshakes under way from one IP address (default 32)
     * @param handshakeTimeout      the most an accepted handshake may take, its last step included (default 10 s)
     * @param backlog               the listeners' rdma_cm backlog (default 128)
     * @param spinBeforeSleep       how long a {@link Idle#SLEEP} loop goes on polling after its last
     *                              work before it sleeps, 0 to 1 s (default 50 µs): traffic that keeps
     *                              coming finds it awake; an idle loop still sleeps
     */
    public record Options(Idle idle, int maxSessions, int maxSessionsPerSource, int maxHandshakes,
                          int maxHandshakesPerSource, Duration handshakeTimeout, int backlog,
                          Duration spinBeforeSleep) {
        /**
         * Validates.
         *
         * @throws IllegalArgumentException when a number is out of range
         * @throws NullPointerException     when {@code idle}, {@code handshakeTimeout} or
         *                                  {@code spinBeforeSleep} is null
         */
        public Options {
            Objects.requireNonNull(idle, "idle");
            Objects.requireNonNull(handshakeTimeout, "handshakeTimeout");
            Objects.requireNonNull(spinBeforeSleep, "spinBeforeSleep");
            if (spinBeforeSleep.isNegative() || spinBeforeSleep.toMillis() > 1000) {
                throw new IllegalArgumentException("spinBeforeSleep 0 to 1 s, not " + spinBeforeSleep);
            }
            if (maxSessions < 1 || maxSessions > 65536) {
                throw new IllegalArgumentException("maxSessions 1 to 65536, not " + maxSessions);
            }
            if (maxSessionsPerSource < 1 || maxSessionsPerSource > maxSessions) {
                throw new IllegalArgumentException("maxSessionsPerSource 1 to maxSessions, not " + maxSessionsPerSource);
            }
            if (maxHandshakes < 1 || maxHandshakes > 4096) {
                throw new IllegalArgumentException("maxHandshakes 1 to 4096, not " + maxHandshakes);
            }
            if (maxHandshakesPerSource < 1 || maxHandshakesPerSource > maxHandshakes) {
                throw new IllegalArgumentException("maxHandshakesPerSource 1 to maxHandshakes, not "
                        + maxHandshakesPerSource);
            }
            if (handshakeTimeout.toMillis() < 1 || handshakeTimeout.toSeconds() > 3600) {
                throw new IllegalArgumentException("handshakeTimeout 1 ms to 1 h, not " + handshakeTimeout);
            }
            if (backlog < 1 || backlog > 65535) {
                throw new IllegalArgumentException("backlog 1 to 65535, not " + backlog);
            }
        }

        /**
         * The defaults: sleeping, 256 sessions, 128 handshakes under way (32 from one address),
         * 10 s for a handshake (a client's first connection in a cold JVM on an emulated host took
         * 2.2 s), a backlog of 128, 50 µs of polling before the loop sleeps.
         *
         * @return the defaults
         */
        public static Options defaults() {
            return new Options(Idle.SLEEP, 256, 256, 128, 32, Duration.ofSeconds(10), 128, Duration.ofNanos(50_000));
        }

        /**
         * Returns a copy that waits as {@code how}.
         *
         * @param how the idle mode
         * @return the copy
         */
        public Options idle(Idle how) {
            return new Options(how, maxSessions, maxSessionsPerSource, maxHandshakes, maxHandshakesPerSource,
                    handshakeTimeout, backlog, spinBeforeSleep);
        }

        /**
         * Returns a copy that sleeps as {@code how} and, when sleeping, polls {@code spin} after its
         * last work first.
         *
         * @param how  the idle mode
         * @param spin how long a {@link Idle#SLEEP} loop polls before it sleeps
         * @return the copy
         */
        public Options idle(Idle how, Duration spin) {
            return new Options(how, maxSessions, maxSessionsPerSource, maxHandshakes, maxHandshakesPerSource,
                    handshakeTimeout, backlog, spin);
        }

        /**
         * Returns a copy with other session limits.
         *
         * @param total     sessions at once
         * @param perSource accepted sessions from one IP address
         * @return the copy
         */
        public Options sessions(int total, int perSource) {
            return new Options(idle, total, perSource, maxHandshakes, maxHandshakesPerSource,
                    handshakeTimeout, backlog, spinBeforeSleep);
        }

        /**
         * Returns a copy with other handshake limits.
         *
         * @param total     handshakes under way at once
         * @param perSource from one IP address
         * @param timeout   the most one may take
         * @return the copy
         */
        public Options handshakes(int total, int perSource, Duration timeout) {
            return new Options(idle, maxSessions, maxSessionsPerSource, total, perSource, timeout, backlog,
                    spinBeforeSleep);
        }
    }

    /** A listening rdma_cm id of this loop. Close it to stop accepting; its sessions live on. */
    public final class Listener implements AutoCloseable {
        private final MemorySegment id;
        private final int port;
        private final Session.Options options;
        private final SessionHandler handler;
        private final AtomicBoolean closed = new AtomicBoolean();

        private Listener(MemorySegment id, int port, Session.Options options, SessionHandler handler) {
            this.id = id;
            this.port = port;
            this.options = options;
            this.handler = handler;
        }

        /**
         * Returns the port listened on.
         *
         * @return the bound port
         */
        public int port() {
            return port;
        }

        /** Stops listening: later requests are refused by the kernel. Idempotent; any thread. */
        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                listeners.remove(id.address());
                reapId(id);
            }
        }
    }

    private final ProtectionDomain pd;
    private final Options options;
    private final CompletionQueue cq;
    private final RdmaCm.Channel cm;
    private final Thread thread;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment pollFds = arena.allocate(3 * Fds.POLLFD_BYTES);
    private final MemorySegment wakeScratch = arena.allocate(8);
    private final MemorySegment drainScratch = arena.allocate(8);
    private final int wakeFd;
    private final AtomicReferenceArray<Session> table;
    private final ArrayDeque<Integer> freeIndices = new ArrayDeque<>();
    private final Map<Long, Session> byId = new ConcurrentHashMap<>();
    private final Map<Long, Listener> listeners = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<Object[]> releases = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Session> lingering = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean stopping = new AtomicBoolean();
    private final AtomicInteger pendingReaps = new AtomicInteger();
    private final java.util.concurrent.CountDownLatch stopped = new java.util.concurrent.CountDownLatch(1);
    // ---- the loop thread's own ----
    private final Map<Long, ArrayDeque<RegisteredBuffer>> ringPool = new HashMap<>();
    private final Map<InetAddress, int[]> perSource = new HashMap<>();
    private final QpMap byQp = new QpMap();
    private int handshakes;
    private int accepted;
    private int anyUnopened;
    private volatile Consumer<Throwable> errorListener = e -> LOG.log(System.Logger.Level.WARNING,
            "a session handler threw; the loop goes on", e);
    private volatile long handlerFailures;
    private volatile Throwable failure;
    private final CompletionHandler dispatcher = this::dispatch;

    private EventLoop(ProtectionDomain pd, Options options) {
        this.pd = pd;
        this.options = options;
        int perSession = Session.Options.defaults().completionEntries();
        int deviceMax = pd.context().deviceAttributes().maxCqe();
        this.cq = pd.context().createCompletionQueueWithEvents(
                (int) Math.min(deviceMax, (long) options.maxSessions() * perSession));
        RdmaCm.Channel channel = null;
        int fd = -1;
        try {
            channel = RdmaCm.Channel.create();
            fd = Fds.eventFd();
        } catch (RuntimeException | Error e) {
            if (channel != null) {
                channel.close();
            }
            cq.close();
            arena.close();
            throw e;
        }
        this.cm = channel;
        this.wakeFd = fd;
        int slots = options.maxSessions() + options.maxHandshakes();
        this.table = new AtomicReferenceArray<>(slots);
        for (int i = 0; i < slots; i++) {
            freeIndices.add(i);
        }
        this.thread = Thread.ofPlatform().name("jverbs-loop-" + pd.context().name()).daemon(true).unstarted(this::run);
    }

    /**
     * Starts a loop whose sessions use {@code pd}: their queue pairs and rings are made in it,
     * and the buffers they offer must be registered in it.
     *
     * @param pd      the protection domain (stays the caller's: closing it closes the sessions'
     *                queue pairs, and the loop then ends)
     * @param options how the loop runs
     * @return the running loop
     * @throws IllegalStateException when the domain or its context is closed
     * @throws RdmaCmException when rdma_cm is missing ({@link RdmaCmException.Reason#NO_DEVICE})
     */
    public static EventLoop start(ProtectionDomain pd, Options options) {
        EventLoop loop = new EventLoop(Objects.requireNonNull(pd, "pd"), Objects.requireNonNull(options, "options"));
        loop.thread.start();
        return loop;
    }

    /**
     * Listens on {@code host:port} and serves every session accepted there with {@code handler}
     * (one handler for all of them: the {@link Session} comes with each call; keep per-session
     * state with {@link Session#attach}).
     *
     * @param host    the local IPv4 address to bind (an RDMA device's interface; not a wildcard
     *                unless you mean every interface)
     * @param port    the port, or 0 for a free one ({@link Listener#port()})
     * @param options how each session is made (its offer goes in every reply)
     * @param handler what the sessions tell the application
     * @return the listener
     * @throws RdmaCmException when binding or listening fails (EADDRINUSE names the address)
     * @throws IllegalArgumentException when the offer does not fit a reply
     * @throws IllegalStateException when the loop is closed
     */
    public Listener listen(String host, int port, Session.Options options, SessionHandler handler) {
        Objects.requireNonNull(handler, "handler");
        requireRunning();
        encodeOffer(options, Handshake.MAX_ACCEPT_BYTES, "the reply to a connection request");
        MemorySegment id = cm.createId();
        try (Arena a = Arena.ofConfined()) {
            if (rdma_cma_h.rdma_bind_addr(id, RdmaCm.sockaddr(a, host, port)) != 0) {
                int errno = io.jverbs.ibverbs.Native.lastErrno();
                throw new RdmaCmException("rdma_bind_addr " + host + ":" + port + " failed: " + Errno.name(errno) + " ("
                        + errno + ")" + (errno == 98 ? ": something listens there already (EADDRINUSE)" : "")
                        + (errno == 99 ? ": no RDMA device has that address" : ""), 0, errno);
            }
            int bound = Short.toUnsignedInt(Short.reverseBytes(rdma_cma_h.rdma_get_src_port(id)));
            Listener l = new Listener(id, bound, options, handler);
            listeners.put(id.address(), l);
            RdmaCm.check("rdma_listen", rdma_cma_h.rdma_listen(id, this.options.backlog()));
            return l;
        } catch (RuntimeException | Error e) {
            listeners.remove(id.address());
            reapId(id);
            throw e;
        }
    }

    /**
     * Connects to a listener at {@code host:port} (an {@link EventLoop}'s) and waits until the
     * session is open. Not from this loop's thread (a handler): use {@link #connectAsync}.
     *
     * @param host    the listener's IPv4 address or name
     * @param port    its port
     * @param options how the session is made (its offer goes in the request)
     * @param handler what the session tells the application
     * @param timeout the most the whole connection may take (address and route resolution, the
     *                handshake and the listener's first message)
     * @return the open session
     * @throws RdmaCmException with its {@link RdmaCmException#reason()}: {@code REFUSED} (nothing
     *         listens, or a limit of the listener; the message carries its words), {@code TIMEOUT},
     *         {@code UNREACHABLE}, {@code INTERRUPTED}
     * @throws IllegalArgumentException when the offer does not fit a request
     * @throws IllegalStateException when called on this loop's thread, or the loop is closed
     */
    public Session connect(String host, int port, Session.Options options, SessionHandler handler, Duration timeout) {
        if (Thread.currentThread() == thread) {
            throw new IllegalStateException("connect would wait on the loop's own thread for the loop: use connectAsync"
                    + " from a handler");
        }
        CompletableFuture<Session> f = connectAsync(host, port, options, handler, timeout);
        try {
            return f.get(timeout.toNanos() + 100_000_000L, TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new RdmaCmException("connecting to " + host + ":" + port + " failed: " + e.getCause(),
                    RdmaCmException.Reason.OTHER, 0);
        } catch (TimeoutException e) {
            f.completeExceptionally(timedOut(host, port, timeout));
            throw timedOut(host, port, timeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            RdmaCmException cause = new RdmaCmException("interrupted while connecting to " + host + ":" + port,
                    RdmaCmException.Reason.INTERRUPTED, Errno.EINTR);
            f.completeExceptionally(cause);
            throw cause;
        }
    }

    private static RdmaCmException timedOut(String host, int port, Duration timeout) {
        return new RdmaCmException("no session with " + host + ":" + port + " within " + timeout.toMillis() + " ms",
                RdmaCmException.Reason.TIMEOUT, Errno.ETIMEDOUT);
    }

    /**
     * Starts connecting to a listener at {@code host:port}; the future completes when the
     * session is open (after its handler's {@link SessionHandler#onOpen}).
     *
     * @param host    the listener's IPv4 address or name
     * @param port    its port
     * @param options how the session is made
     * @param handler what the session tells the application
     * @param timeout the most the whole connection may take; the future fails with
     *                {@link RdmaCmException.Reason#TIMEOUT} after it
     * @return the future session; failing as {@link #connect} throws
     * @throws IllegalArgumentException when the offer does not fit a request
     * @throws IllegalStateException when the loop is closed
     */
    public CompletableFuture<Session> connectAsync(String host, int port, Session.Options options,
                                                   SessionHandler handler, Duration timeout) {
        Objects.requireNonNull(handler, "handler");
        requireRunning();
        byte[] privateData = encodeOffer(options, Handshake.MAX_CONNECT_BYTES, "a connection request");
        MemorySegment id = cm.createId();
        Session s = newSession(options, handler, false, System.nanoTime() + timeout.toNanos(), host + ":" + port,
                privateData, id);
        if (s == null) {
            reapId(id);
            return CompletableFuture.failedFuture(new RdmaCmException("this loop serves " + options().maxSessions()
                    + " sessions already (EventLoop.Options.sessions)", RdmaCmException.Reason.LIMIT, 0));
        }
        try (Arena a = Arena.ofConfined()) {
            byId.put(s.id.address(), s);
            anyUnopened = 1;
            MemorySegment addr = RdmaCm.sockaddr(a, host, port);
            RdmaCm.check("rdma_resolve_addr", rdma_cma_h.rdma_resolve_addr(s.id, MemorySegment.NULL, addr,
                    (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis()))));
        } catch (RuntimeException | Error e) {
            RdmaCmException cause = e instanceof RdmaCmException r ? r : new RdmaCmException("connecting to " + host
                    + ":" + port + " failed: " + e.getMessage(), RdmaCmException.Reason.OTHER, 0);
            requestRelease(s, cause);
            if (!(e instanceof RdmaCmException)) {
                throw e;
            }
        }
        CompletableFuture<Session> result = s.opened;
        java.util.concurrent.ScheduledFuture<?> timer = Timers.schedule(() -> {
            if (!result.isDone()) {
                requestRelease(s, timedOut(host, port, timeout));
            }
        }, timeout);
        result.whenComplete((r, t) -> timer.cancel(false));
        return result;
    }

    /**
     * Sets who hears of exceptions thrown by handlers (default: a WARNING through
     * {@code System.Logger} "io.jverbs"). Runs on the loop's thread.
     *
     * @param listener receives each exception
     */
    public void onHandlerError(Consumer<Throwable> listener) {
        errorListener = Objects.requireNonNull(listener, "listener");
    }

    /**
     * Returns how many handler calls threw.
     *
     * @return the count since start
     */
    public long handlerFailures() {
        return handlerFailures;
    }

    /**
     * Returns the completion queue all sessions of this loop use (its fd, capacity, counters);
     * the loop polls it: do not poll it yourself.
     *
     * @return the queue
     */
    public CompletionQueue completionQueue() {
        return cq;
    }

    /**
     * Returns the options the loop runs with.
     *
     * @return the options
     */
    public Options options() {
        return options;
    }

    /**
     * Returns how many sessions exist (open, or with a handshake under way).
     *
     * @return the count
     */
    public int sessionCount() {
        int n = 0;
        for (int i = 0; i < table.length(); i++) {
            if (table.get(i) != null) {
                n++;
            }
        }
        return n;
    }

    /**
     * Returns whether the calling thread is this loop's (a handler runs there).
     *
     * @return true on the loop's thread
     */
    public boolean inLoop() {
        return Thread.currentThread() == thread;
    }

    /**
     * Returns why the loop stopped on its own, if it did.
     *
     * @return the failure (its completion queue or domain was closed under it, …), or null
     */
    public Throwable failure() {
        return failure;
    }

    /**
     * Closes every session (their peers see a disconnect, their calls fail with
     * {@link RdmaCmException.Reason#DISCONNECTED}) and listener, and stops the thread. Waits up
     * to 2 s for a handler still running; past that, the loop's thread frees the rest when the
     * handler returns. Idempotent; any thread, a handler's included.
     */
    @Override
    public void close() {
        if (!stopping.compareAndSet(false, true)) {
            return;
        }
        wake();
        if (Thread.currentThread() != thread) {
            try {
                if (!stopped.await(2, TimeUnit.SECONDS)) {
                    LOG.log(System.Logger.Level.WARNING, "closing " + this + ": a handler still runs after 2 s; the"
                            + " loop's thread frees its sessions when it returns");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public String toString() {
        return "EventLoop[" + pd.context().name() + ", " + options.idle() + "]";
    }

    // ------------------------------------------------------------------ the loop

    private void run() {
        int[] fds = {cq.eventFd(), rdmaEventFd(), wakeFd};
        long now = System.nanoTime();
        long nextSweep = now;
        long nextLook = now; // when a spinning loop looks at its descriptors next
        long lastWork = now; // a sleeping loop spins options.spinBeforeSleep() after its last work
        long spinNanos = options.spinBeforeSleep().toNanos();
        int idleRounds = 0;
        try {
            while (!stopping.get()) {
                int work = cq.poll(dispatcher, CompletionQueue.MAX_BATCH);
                if (!releases.isEmpty()) {
                    work += releasePending();
                }
                now = System.nanoTime();
                if (work > 0) {
                    lastWork = now;
                    idleRounds = 0;
                }
                if (now - nextSweep >= 0) {
                    sweep(now);
                    nextSweep = now + (anyUnopened != 0 ? 10_000_000L : 1_000_000_000L);
                }
                if (now - nextLook >= 0) {
                    nextLook = now + 1_000_000L;
                    take(Fds.readableOf(pollFds, fds, 3, 0));
                }
                if (work > 0) {
                    continue;
                }
                switch (options.idle()) {
                    case SPIN -> Thread.onSpinWait();
                    case BACKOFF -> {
                        idleRounds++;
                        if (idleRounds < 100) {
                            Thread.onSpinWait();
                        } else if (idleRounds < 110) {
                            Thread.yield();
                        } else {
                            java.util.concurrent.locks.LockSupport.parkNanos(
                                    Math.min(1_000_000L, 1_000L << Math.min(10, idleRounds - 110)));
                        }
                    }
                    case SLEEP -> {
                        if (now - lastWork < spinNanos) {
                            Thread.onSpinWait();
                            continue;
                        }
                        cq.armEvents();
                        // a completion that came before the arm raised no event: look once more
                        if (cq.poll(dispatcher, CompletionQueue.MAX_BATCH) > 0 || !releases.isEmpty()) {
                            lastWork = System.nanoTime();
                            continue;
                        }
                        int waitMs = (int) Math.max(1, Math.min(1000, (nextSweep - System.nanoTime()) / 1_000_000));
                        take(Fds.readableOf(pollFds, fds, 3, waitMs));
                        lastWork = System.nanoTime();
                    }
                }
            }
        } catch (Throwable t) {
            failure = t;
            if (!cq.isClosed()) {
                LOG.log(System.Logger.Level.ERROR, this + " stopped: " + t, t);
            }
        } finally {
            shutdown();
        }
    }

    /** Acts on the descriptors {@code ready} names: the completion channel's event, rdma_cm events, a wake-up. */
    private void take(int ready) {
        if ((ready & 1) != 0) {
            Thread.interrupted(); // the loop's own thread: an interrupt a handler left means nothing here
            cq.waitForEvent(0); // takes and acknowledges the event without waiting
        }
        if ((ready & 2) != 0) {
            pollCm();
        }
        if ((ready & 4) != 0) {
            Fds.drain(drainScratch, wakeFd);
        }
    }

    private int rdmaEventFd() {
        return io.jverbs.rdmacm.raw.rdma_event_channel.fd(cm.channel.reinterpret(
                io.jverbs.rdmacm.raw.rdma_event_channel.sizeof()));
    }

    private void pollCm() {
        RdmaCm.Channel.Event e;
        while ((e = cm.next(System.nanoTime() - 1_000_000_000L)) != null) {
            try {
                onCmEvent(e);
            } catch (RuntimeException ex) {
                LOG.log(System.Logger.Level.WARNING, this + ": handling rdma_cm " + RdmaCm.name(e.type()) + " failed", ex);
            }
        }
    }

    private void onCmEvent(RdmaCm.Channel.Event e) {
        if (e.type() == rdma_cma_h.RDMA_CM_EVENT_CONNECT_REQUEST) {
            onRequest(e);
            return;
        }
        Session s = byId.get(e.id().address());
        if (s == null || s.released) {
            return; // a late event of an id already given up
        }
        switch (e.type()) {
            case rdma_cma_h.RDMA_CM_EVENT_ADDR_RESOLVED -> step(s, () -> {
                RdmaCm.requireSameDevice(s.id, pd.context().name());
                RdmaCm.check("rdma_resolve_route", rdma_cma_h.rdma_resolve_route(s.id,
                        RdmaCm.remainingMs(s.deadlineNanos, "resolve the route to " + s.target)));
            });
            case rdma_cma_h.RDMA_CM_EVENT_ROUTE_RESOLVED -> step(s, () -> {
                RdmaCm.requireSameDevice(s.id, pd.context().name());
                build(s);
                s.remote = RdmaCm.address(s.id, true);
                RdmaCm.moveTo(s.id, s.qp, verbs_h.IBV_QPS_INIT);
                try (Arena a = Arena.ofConfined()) {
                    RdmaCm.check("rdma_connect", rdma_cma_h.rdma_connect(s.id, RdmaCm.connParam(a, s.qp, s.pendingRequest)));
                }
                s.state = Session.State.HANDSHAKE;
            });
            case rdma_cma_h.RDMA_CM_EVENT_CONNECT_RESPONSE -> step(s, () -> {
                if (!takeParameters(s, e.privateData())) {
                    throw new RdmaCmException(s.target + " answered, but not as a jverbs EventLoop (no session parameters"
                            + " in its reply): connect to it with Connection.connect", RdmaCmException.Reason.PROTOCOL, 0);
                }
                RdmaCm.moveTo(s.id, s.qp, verbs_h.IBV_QPS_RTR);
                RdmaCm.moveTo(s.id, s.qp, verbs_h.IBV_QPS_RTS);
                RdmaCm.check("rdma_establish", rdma_cma_h.rdma_establish(s.id));
                Core.markConnected(s.qp);
                // open on the listener's first message, sent once its side saw the handshake end
            });
            case rdma_cma_h.RDMA_CM_EVENT_ESTABLISHED -> {
                if (s.server && s.state == Session.State.HANDSHAKE) {
                    step(s, () -> {
                        RdmaCm.moveTo(s.id, s.qp, verbs_h.IBV_QPS_RTS, Core.connectAccessFlags(s.qp));
                        Core.markConnected(s.qp);
                        handshakeEnded(s);
                        accepted++;
                        s.open();
                    });
                }
            }
            case rdma_cma_h.RDMA_CM_EVENT_DISCONNECTED, rdma_cma_h.RDMA_CM_EVENT_DEVICE_REMOVAL -> {
                // what the peer sent before its disconnect is in the queue already: delivered first
                while (cq.poll(dispatcher, CompletionQueue.MAX_BATCH) > 0) {
                    releasePending();
                }
                release(s, new RdmaCmException("the session with " + s.remote + " ended: rdma_cm "
                        + RdmaCm.name(e.type()), e.type(), 0, false));
            }
            case rdma_cma_h.RDMA_CM_EVENT_TIMEWAIT_EXIT -> { }
            default -> release(s, failedEvent(s, e));
        }
    }

    private RdmaCmException failedEvent(Session s, RdmaCm.Channel.Event e) {
        String said = RdmaCm.listenerSaid(e.privateData());
        said = said == null ? "" : said;
        String peer = s.server ? "the client " + s.remote : s.target;
        return new RdmaCmException("rdma_cm: " + RdmaCm.name(e.type()) + " (status " + e.status() + ") from " + peer
                + (said.isEmpty() ? RdmaCm.hint(e.type()) : said), e.type(), Math.abs(e.status()),
                e.type() == rdma_cma_h.RDMA_CM_EVENT_REJECTED);
    }

    /** Runs a step of a handshake; a failure ends the session with it. */
    private void step(Session s, Runnable action) {
        try {
            action.run();
        } catch (RdmaCmException e) {
            release(s, e);
        } catch (RuntimeException e) {
            release(s, new RdmaCmException("the handshake with " + (s.server ? s.remote : s.target) + " failed: " + e,
                    e instanceof IllegalArgumentException ? RdmaCmException.Reason.PROTOCOL : RdmaCmException.Reason.OTHER,
                    0));
        }
    }

    /** A connection request to one of the listeners: admitted, or rejected with the reason, at once. */
    private void onRequest(RdmaCm.Channel.Event e) {
        MemorySegment child = e.id();
        Listener l = listeners.get(e.listenId().address());
        InetSocketAddress from = RdmaCm.address(child, true);
        String refusal = null;
        if (l == null || l.closed.get() || stopping.get()) {
            refusal = "not listening any more";
        } else if (handshakes >= options.maxHandshakes()) {
            refusal = options.maxHandshakes() + " handshakes are under way (EventLoop.Options.handshakes)";
        } else if (accepted + handshakes >= options.maxSessions()) {
            refusal = "it serves " + options.maxSessions() + " sessions (EventLoop.Options.sessions)";
        } else if (from != null && source(from)[0] >= options.maxHandshakesPerSource()) {
            refusal = options.maxHandshakesPerSource() + " handshakes from " + from.getAddress().getHostAddress()
                    + " are under way";
        } else if (from != null && source(from)[1] >= options.maxSessionsPerSource()) {
            refusal = "it serves " + options.maxSessionsPerSource() + " sessions from "
                    + from.getAddress().getHostAddress() + " (EventLoop.Options.sessions)";
        }
        Session s = refusal == null ? newSession(l.options, l.handler, true,
                System.nanoTime() + options.handshakeTimeout().toNanos(), String.valueOf(from), null, child) : null;
        if (refusal == null && s == null) {
            refusal = "no session slot is free";
        }
        if (refusal != null) {
            reject(child, refusal);
            return;
        }
        s.remote = from;
        byId.put(child.address(), s);
        handshakes++;
        if (from != null) {
            source(from)[0]++;
        }
        s.countedHandshake = true;
        anyUnopened = 1;
        try {
            if (!takeParameters(s, e.privateData())) {
                throw new RdmaCmException("the client " + from + " is not a jverbs EventLoop session (no session"
                        + " parameters in its request)", RdmaCmException.Reason.PROTOCOL, 0);
            }
            RdmaCm.requireSameDevice(child, pd.context().name());
            build(s);
            // No remote rights and no requests of the peer served until its last step arrives:
            // INIT without rights, then RTR (it may receive Sends, which reach no handler yet).
            RdmaCm.moveTo(child, s.qp, verbs_h.IBV_QPS_INIT, 0);
            RdmaCm.moveTo(child, s.qp, verbs_h.IBV_QPS_RTR);
            byte[] reply = encodeOffer(s.options, Handshake.MAX_ACCEPT_BYTES, "the reply to a connection request");
            try (Arena a = Arena.ofConfined()) {
                RdmaCm.check("rdma_accept", rdma_cma_h.rdma_accept(child, RdmaCm.connParam(a, s.qp, reply)));
            }
            s.state = Session.State.HANDSHAKE;
        } catch (RuntimeException ex) {
            s.rejectOnRelease = ex.getMessage();
            release(s, ex instanceof RdmaCmException r ? r : new RdmaCmException("accepting " + from + " failed: " + ex,
                    RdmaCmException.Reason.OTHER, 0));
        }
    }

    private int[] source(InetSocketAddress from) {
        return perSource.computeIfAbsent(from.getAddress(), a -> new int[2]);
    }

    private void handshakeEnded(Session s) {
        if (!s.countedHandshake) {
            return;
        }
        s.countedHandshake = false;
        handshakes--;
        if (s.remote != null) {
            int[] n = source(s.remote);
            n[0]--;
            n[1]++;
        }
    }

    private void reject(MemorySegment child, String why) {
        RdmaCm.rejectSaying(child, why);
        reapId(child);
    }

    /** The session's queue pair and rings, on the loop's completion queue. */
    private void build(Session s) {
        Session.Options o = s.options;
        s.ring = takeRing(o.ringBytes());
        // small messages go inline (the header and up to 112 bytes): no DMA read of the send slot
        QueuePairConfig config = o.configure().apply(QueuePairConfig.rc(cq)
                .withDepth(o.sendSlots() + o.oneSidedDepth(), o.receiveSlots()).withMaxInlineData(INLINE_BYTES));
        s.qp = pd.createQueuePair(config);
        byQp.put(s.qp.number(), s);
        o.offer().requireGrantedBy(s.qp);
        s.postRing();
    }

    private RegisteredBuffer takeRing(long bytes) {
        ArrayDeque<RegisteredBuffer> pool = ringPool.get(bytes);
        RegisteredBuffer b = pool == null ? null : pool.poll();
        return b != null ? b : pd.allocate(bytes);
    }

    private void returnRing(RegisteredBuffer ring) {
        ArrayDeque<RegisteredBuffer> pool = ringPool.computeIfAbsent(ring.length(), k -> new ArrayDeque<>());
        if (pool.size() < 64 && !ring.isClosed()) {
            pool.add(ring);
        } else {
            ring.close();
        }
    }

    /**
     * A session in a free slot of the table, its id, deadline and target set before the loop's
     * thread can see it there; null when no slot is free.
     */
    private Session newSession(Session.Options o, SessionHandler handler, boolean server, long deadlineNanos,
                               String target, byte[] request, MemorySegment id) {
        Integer index;
        synchronized (freeIndices) {
            index = freeIndices.poll();
        }
        if (index == null) {
            return null;
        }
        Session s = new Session(this, index, o, handler, server);
        s.deadlineNanos = deadlineNanos;
        s.target = target;
        s.pendingRequest = request;
        s.id = id;
        table.set(index, s);
        return s;
    }

    /** Encodes the session's parameters and the application's offer as a handshake. */
    static byte[] encodeOffer(Session.Options o, int limit, String where) {
        Handshake offer = o.offer();
        byte[] user = offer.data();
        ByteBuffer b = ByteBuffer.allocate(PARAMS + user.length);
        b.put(PARAMS_MARK).put(PARAMS_VERSION).putShort((short) o.ringSlots()).putInt(o.slotBytes()).put(user);
        Handshake h;
        try {
            h = Handshake.of(b.array(), offer.buffers().toArray(RemoteBuffer[]::new));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the session's offer does not fit " + where + ": " + e.getMessage()
                    + " (a session takes " + PARAMS + " of those bytes for its own parameters)", e);
        }
        try {
            return h.encode(limit, where);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(e.getMessage() + " (a session takes " + PARAMS
                    + " of those bytes for its own parameters)", e);
        }
    }

    /** Reads the peer's session parameters and handshake; false when it sent none. */
    private static boolean takeParameters(Session s, byte[] privateData) {
        Handshake h = Handshake.decode(privateData);
        byte[] data = h.data();
        if (data.length < PARAMS || data[0] != PARAMS_MARK || data[1] != PARAMS_VERSION) {
            return false;
        }
        ByteBuffer b = ByteBuffer.wrap(data);
        b.position(2);
        int slots = Short.toUnsignedInt(b.getShort());
        int slotBytes = b.getInt();
        if (slots < 1 || slots > 4096 || slotBytes < 32 || slotBytes > 1 << 20) {
            return false;
        }
        s.peerParameters(slots, slotBytes);
        s.peer = Handshake.of(Arrays.copyOfRange(data, PARAMS, data.length), h.buffers().toArray(RemoteBuffer[]::new));
        s.peerBuffers.addAll(h.buffers());
        return true;
    }

    /** Ends handshakes past their deadline, and closes that waited for their messages. */
    private void sweep(long now) {
        if (anyUnopened == 0) {
            return;
        }
        boolean any = false;
        for (java.util.Iterator<Session> it = lingering.iterator(); it.hasNext(); ) {
            Session s = it.next();
            if (s.released || s.lingerOver(now)) {
                it.remove();
                release(s, new RdmaCmException("the session with " + s.remote + " was closed by this side",
                        RdmaCmException.Reason.DISCONNECTED, 0));
            } else {
                any = true;
            }
        }
        for (int i = 0; i < table.length(); i++) {
            Session s = table.get(i);
            if (s == null || s.released || s.state == Session.State.OPEN) {
                continue;
            }
            if (now - s.deadlineNanos >= 0) {
                release(s, s.server
                        ? new RdmaCmException("the client " + s.remote + " did not complete its handshake within "
                                + options.handshakeTimeout().toMillis() + " ms", RdmaCmException.Reason.TIMEOUT,
                                Errno.ETIMEDOUT)
                        : new RdmaCmException("no session with " + s.target + " in time", RdmaCmException.Reason.TIMEOUT,
                                Errno.ETIMEDOUT));
            } else {
                any = true;
            }
        }
        anyUnopened = any ? 1 : 0;
    }

    private void dispatch(Completion c) {
        long wrId = c.wrId();
        if ((wrId & Session.RING_TAG) != 0) {
            int index = (int) ((wrId >>> 24) & 0xfffff);
            Session s = index < table.length() ? table.get(index) : null;
            if (s == null || s.released || s.qp == null || s.qp.number() != c.qpNumber()) {
                return; // a completion of a session already freed
            }
            s.onRingCompletion(c, wrId);
            return;
        }
        Session s = byQp.get(c.qpNumber());
        if (s != null) {
            try {
                s.handler.onCompletion(s, c);
            } catch (RuntimeException | Error e) {
                handlerFailed(e);
            }
        }
    }

    /** A session closed with messages still going out: the sweep releases it once they went. */
    void linger(Session s) {
        lingering.add(s);
        anyUnopened = 1;
        if (Thread.currentThread() != thread) {
            wake();
        }
    }

    void requestRelease(Session s, RdmaCmException cause) {
        releases.add(new Object[] {s, cause});
        if (Thread.currentThread() != thread) {
            wake();
        }
    }

    private int releasePending() {
        int n = 0;
        Object[] r;
        while ((r = releases.poll()) != null) {
            release((Session) r[0], (RdmaCmException) r[1]);
            n++;
        }
        return n;
    }

    /** Frees a session: on the loop's thread, once. */
    private void release(Session s, RdmaCmException cause) {
        if (s.released) {
            return;
        }
        s.released = true;
        boolean wasOpen = s.state == Session.State.OPEN;
        s.markClosed(cause);
        handshakeEnded(s);
        if (s.server && wasOpen) {
            accepted--;
            if (s.remote != null) {
                source(s.remote)[1]--;
            }
        }
        if (s.id != null) {
            byId.remove(s.id.address());
            if (s.rejectOnRelease != null) {
                rdma_cma_h.rdma_reject(s.id, MemorySegment.NULL, (byte) 0);
            } else if (s.state != Session.State.RESOLVING) {
                rdma_cma_h.rdma_disconnect(s.id);
            }
        }
        if (s.qp != null) {
            byQp.remove(s.qp.number());
            try {
                s.qp.close();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "closing the queue pair of " + s + " failed", e);
            }
        }
        if (s.ring != null) {
            returnRing(s.ring);
        }
        table.set(s.index, null);
        synchronized (freeIndices) {
            freeIndices.add(s.index);
        }
        if (s.id != null) {
            reapId(s.id);
        }
        if (wasOpen) {
            try {
                s.handler.onClose(s, cause);
            } catch (RuntimeException | Error e) {
                handlerFailed(e);
            }
        }
    }

    private void reapId(MemorySegment id) {
        pendingReaps.incrementAndGet();
        RdmaCm.reap(id, null, pendingReaps::decrementAndGet);
    }

    private void shutdown() {
        try {
            RdmaCmException cause = new RdmaCmException("the event loop " + this + " closed",
                    RdmaCmException.Reason.DISCONNECTED, 0);
            for (Listener l : listeners.values().toArray(Listener[]::new)) {
                l.close();
            }
            releasePending();
            for (int i = 0; i < table.length(); i++) {
                Session s = table.get(i);
                if (s != null) {
                    release(s, cause);
                }
            }
            try {
                cq.close();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "closing the completion queue of " + this + " failed", e);
            }
            for (ArrayDeque<RegisteredBuffer> pool : ringPool.values()) {
                for (RegisteredBuffer b : pool) {
                    b.close();
                }
            }
            ringPool.clear();
            // the ids' destroys write to the channel's descriptor: it closes after the last of them
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (pendingReaps.get() > 0 && System.nanoTime() < deadline) {
                java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L);
            }
            if (pendingReaps.get() == 0) {
                cm.close();
            } else {
                LOG.log(System.Logger.Level.WARNING, this + ": " + pendingReaps.get() + " rdma_cm ids are still being"
                        + " destroyed after 10 s (a peer vanished mid-handshake); their channel is left open");
            }
            Fds.close(wakeFd);
        } finally {
            stopping.set(true);
            stopped.countDown();
        }
    }

    private void wake() {
        if (stopped.getCount() == 0) {
            return;
        }
        synchronized (wakeScratch) {
            Fds.signal(wakeScratch, wakeFd);
        }
    }

    private void requireRunning() {
        if (stopping.get()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    void handlerFailed(Throwable e) {
        handlerFailures++;
        try {
            errorListener.accept(e);
        } catch (RuntimeException ignored) {
            // the listener failed too: nothing left to tell
        }
    }

    void callOpen(Session s) {
        try {
            s.handler.onOpen(s);
        } catch (RuntimeException | Error e) {
            handlerFailed(e);
        }
    }

    void callMessage(Session s, MemorySegment view, int length) {
        try {
            s.handler.onMessage(s, view, length);
        } catch (RuntimeException | Error e) {
            handlerFailed(e);
        }
    }

    void callRequest(Session s, long id, MemorySegment view, int length) {
        try {
            s.handler.onRequest(s, id, view, length);
        } catch (RuntimeException | Error e) {
            handlerFailed(e);
            try {
                s.fail(id, "the request handler threw " + e);
            } catch (RdmaCmException closed) {
                // the session closed meanwhile: the caller's future fails with it
            }
        }
    }

    void callBuffer(Session s, RemoteBuffer b) {
        try {
            s.handler.onBuffer(s, b);
        } catch (RuntimeException | Error e) {
            handlerFailed(e);
        }
    }

    /**
     * Sessions by queue pair number, for completions of the application's own work: open
     * addressing on ints, so a lookup allocates nothing. The loop's thread only.
     */
    private static final class QpMap {
        private int[] keys = new int[64];
        private Session[] values = new Session[64];
        private int size;

        Session get(int qpn) {
            int mask = keys.length - 1;
            for (int i = mix(qpn) & mask; values[i] != null; i = (i + 1) & mask) {
                if (keys[i] == qpn) {
                    return values[i];
                }
            }
            return null;
        }

        void put(int qpn, Session s) {
            if ((size + 1) * 2 > keys.length) {
                grow();
            }
            int mask = keys.length - 1;
            int i = mix(qpn) & mask;
            while (values[i] != null && keys[i] != qpn) {
                i = (i + 1) & mask;
            }
            if (values[i] == null) {
                size++;
            }
            keys[i] = qpn;
            values[i] = s;
        }

        void remove(int qpn) {
            int mask = keys.length - 1;
            int i = mix(qpn) & mask;
            while (values[i] != null && keys[i] != qpn) {
                i = (i + 1) & mask;
            }
            if (values[i] == null) {
                return;
            }
            values[i] = null;
            size--;
            // shift back the entries that probed past the freed slot
            for (int j = (i + 1) & mask; values[j] != null; j = (j + 1) & mask) {
                int home = mix(keys[j]) & mask;
                if (((j - home) & mask) >= ((j - i) & mask)) {
                    keys[i] = keys[j];
                    values[i] = values[j];
                    values[j] = null;
                    i = j;
                }
            }
        }

        private void grow() {
            int[] oldKeys = keys;
            Session[] oldValues = values;
            keys = new int[oldKeys.length * 2];
            values = new Session[oldValues.length * 2];
            size = 0;
            for (int i = 0; i < oldKeys.length; i++) {
                if (oldValues[i] != null) {
                    put(oldKeys[i], oldValues[i]);
                }
            }
        }

        private static int mix(int qpn) {
            return qpn * 0x9e3779b9 >>> 7;
        }
    }
}
