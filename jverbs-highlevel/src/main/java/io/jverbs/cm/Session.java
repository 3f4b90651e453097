package io.jverbs.cm;

import io.jverbs.Access;
import io.jverbs.Completion;
import io.jverbs.MemoryWindow;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.WcStatus;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;

/**
 * A reliable connection served by an {@link EventLoop}: messages, request/response calls and
 * the peer's buffers for one-sided RDMA, over one RC queue pair. Made by
 * {@link EventLoop#listen} (server side, handed to {@link SessionHandler#onOpen}) or
 * {@link EventLoop#connect} (client side).
 *
 * <h2>Messages and credits</h2>
 * Each side posts a receive ring of {@link Options#ringSlots()} slots of
 * {@link Options#slotBytes()} bytes and re-posts a slot as soon as its handler returned. A sender
 * holds one <em>credit</em> per free slot of the peer's ring: a message takes one, and the peer
 * gives them back with its own messages or, when it has nothing to say, with a small credit
 * message once half its ring was used. So a sender never overruns the peer, and the device's
 * receiver-not-ready retries never happen in normal operation. Without a credit,
 * {@link #offer} returns {@link #BACK_PRESSURED} at once, while {@link #send}, {@link #call} and
 * {@link #reply} queue a copy (at most {@link Options#maxQueued()}) that goes out, in order, as
 * credits return. A message holds at most {@link #maxMessageBytes()} bytes (the smaller slot of
 * the two sides, less a 16-byte header).
 *
 * <h2>Ordering</h2>
 * On one session, everything this side posts is carried in the order it was posted: RDMA Writes,
 * Sends (messages, calls, replies) and the data of RDMA Reads and atomics issued before them.
 * So a Write followed by a message telling the peer about it needs no wait in between: when the
 * peer's {@link SessionHandler#onMessage} runs, the Write's data is in its memory. An RDMA Read
 * or atomic may be passed by a later Send or Write (InfiniBand allows the responder to execute
 * them out of order relative to later requests): wait for its future before a message that
 * depends on what it read. Between sessions there is no order.
 *
 * <h2>Threads</h2>
 * A session has no thread of its own. Its handler runs on the loop's thread; {@link #offer},
 * {@link #send}, {@link #call}, {@link #reply}, {@link #fail}, {@link #offerBuffer} and
 * {@link #close} may be called from any thread, the handler's included. The one-sided operations
 * of {@link #queuePair()} are the queue pair's own (thread-safe); their futures complete on the
 * loop's thread.
 *
 * <h2>Memory</h2>
 * The message segments a handler receives are valid until it returns. The peer's buffers
 * ({@link #peerBuffers()}) stay usable until the session closes. The session's rings are
 * registered by the loop and reused for another session after this one closed.
 */
public final class Session implements AutoCloseable {
    /** {@link #offer} posted the message. */
    public static final int OK = 0;
    /** {@link #offer}: no credit or no free send slot now (or messages queued before it); try again later. */
    public static final int BACK_PRESSURED = -1;
    /** {@link #offer}: the session is closed or not open yet. */
    public static final int CLOSED = -2;

    static final int HEADER = 16;
    /** Receive slots beyond the credited ones: the peer's credit messages and its first message land there. */
    static final int RESERVE = 3;
    static final byte HELLO = 1;
    static final byte MESSAGE = 2;
    static final byte REQUEST = 3;
    static final byte REPLY = 4;
    static final byte REPLY_ERROR = 5;
    static final byte CREDIT = 6;
    static final byte BUFFER = 7;
    /** Work-request ids of the rings: bit 62 set, the session's index at bit 24, bit 23 for sends, the slot below. */
    static final long RING_TAG = 1L << 62;
    static final long SEND_BIT = 1L << 23;

    enum State { RESOLVING, HANDSHAKE, OPEN, CLOSED }

    /**
     * How a session is made; start from {@link #defaults()}.
     *
     * @param ringSlots    credited receive slots, 1 to 4096 (default 16): how many messages the
     *                     peer may have in flight to this side
     * @param slotBytes    bytes of one slot, 32 to 1 MiB (default 1024); a message is at most the
     *                     smaller slot of the two sides less 16
     * @param oneSidedDepth room in the send queue for the application's own RDMA Writes, Reads and
     *                     atomics beside the messages (default 32)
     * @param maxQueued    messages {@link #send}, {@link #call} and {@link #reply} may queue while
     *                     waiting for credits, 0 to 1,000,000 (default 1024); beyond it they fail
     *                     with {@link RdmaCmException.Reason#LIMIT}
     * @param offer        buffers and bytes for the peer in the handshake (this side's room is 8
     *                     bytes smaller than {@link Handshake}'s: the session's own parameters)
     * @param configure    adjusts the queue pair's config (rights, retries, inline size)
     */
    public record Options(int ringSlots, int slotBytes, int oneSidedDepth, int maxQueued, Handshake offer,
                          UnaryOperator<QueuePairConfig> configure) {
        /**
         * Validates.
         *
         * @throws IllegalArgumentException when a number is out of range
         * @throws NullPointerException     when {@code offer} or {@code configure} is null
         */
        public Options {
            Objects.requireNonNull(offer, "offer");
            Objects.requireNonNull(configure, "configure");
            if (ringSlots < 1 || ringSlots > 4096) {
                throw new IllegalArgumentException("ringSlots 1 to 4096, not " + ringSlots);
            }
            if (slotBytes < 32 || slotBytes > 1 << 20) {
                throw new IllegalArgumentException("slotBytes 32 to 1048576, not " + slotBytes);
            }
            if (oneSidedDepth < 0 || oneSidedDepth > 65536) {
                throw new IllegalArgumentException("oneSidedDepth 0 to 65536, not " + oneSidedDepth);
            }
            if (maxQueued < 0 || maxQueued > 1_000_000) {
                throw new IllegalArgumentException("maxQueued 0 to 1000000, not " + maxQueued);
            }
        }

        /**
         * The defaults: 16 slots of 1 KiB, room for 32 one-sided operations, 1024 queued
         * messages, nothing offered, the queue pair's defaults.
         *
         * @return the defaults
         */
        public static Options defaults() {
            return new Options(16, 1024, 32, 1024, Handshake.empty(), c -> c);
        }

        /**
         * Returns a copy with another ring.
         *
         * @param slots     credited receive slots
         * @param slotBytes bytes per slot
         * @return the copy
         */
        public Options ring(int slots, int slotBytes) {
            return new Options(slots, slotBytes, oneSidedDepth, maxQueued, offer, configure);
        }

        /**
         * Returns a copy that tells the peer {@code handshake}.
         *
         * @param handshake buffers and bytes for the peer
         * @return the copy
         */
        public Options offer(Handshake handshake) {
            return new Options(ringSlots, slotBytes, oneSidedDepth, maxQueued, handshake, configure);
        }

        /**
         * Returns a copy with other room for one-sided operations and queued messages.
         *
         * @param oneSided  send-queue room for the application's Writes, Reads and atomics
         * @param queued    messages that may wait for credits
         * @return the copy
         */
        public Options depth(int oneSided, int queued) {
            return new Options(ringSlots, slotBytes, oneSided, queued, offer, configure);
        }

        /**
         * Returns a copy that adjusts the queue pair's config.
         *
         * @param adjust applied to the RC config on the loop's completion queue
         * @return the copy
         */
        public Options configure(UnaryOperator<QueuePairConfig> adjust) {
            return new Options(ringSlots, slotBytes, oneSidedDepth, maxQueued, offer, adjust);
        }

        int receiveSlots() {
            return ringSlots + RESERVE;
        }

        int sendSlots() {
            return ringSlots + RESERVE;
        }

        long ringBytes() {
            return (long) (receiveSlots() + sendSlots()) * slotBytes;
        }

        int completionEntries() {
            return sendSlots() + oneSidedDepth + receiveSlots();
        }
    }

    /** A message waiting for a credit: a copy. */
    private record Outgoing(byte kind, long id, byte[] bytes) {
    }

    final EventLoop loop;
    final Options options;
    final SessionHandler handler;
    final boolean server;
    final int index;
    volatile State state = State.RESOLVING;
    MemorySegment id;
    QueuePair qp;
    RegisteredBuffer ring;
    /** Views of the receive slots' payloads, made once. */
    MemorySegment[] slotViews;
    InetSocketAddress remote;
    /** The peer's handshake (buffers and data, the session's parameters taken out). */
    volatile Handshake peer = Handshake.empty();
    final List<RemoteBuffer> peerBuffers = new CopyOnWriteArrayList<>();
    int peerSlots;
    int peerSlotBytes;
    long deadlineNanos;
    /** A client's request data (its handshake), kept until rdma_connect. */
    byte[] pendingRequest;
    /** Whom a client connects to (host:port), for messages. */
    String target;
    /** An accepted session counted among the loop's handshakes under way. */
    boolean countedHandshake;
    /** Set when an accept failed before its reply: the release rejects instead of disconnecting. */
    String rejectOnRelease;
    final CompletableFuture<Session> opened;
    boolean released;
    volatile RdmaCmException closeCause;
    private volatile Object attachment;

    // ---- send side, guarded by this ----
    private int credits;
    private int pendingReturn;
    private long sendHead;
    private long sendTail;
    private long nextCallId = 1;
    private final ArrayDeque<Outgoing> waiting = new ArrayDeque<>();
    private boolean closing;
    private long lingerUntilNanos;
    /** How long a close waits for the messages sent before it. */
    static final long LINGER_NANOS = 2_000_000_000L;
    private final ConcurrentHashMap<Long, PendingCall> calls = new ConcurrentHashMap<>();

    /** A call waiting for its reply, and when it gives up. */
    private record PendingCall(CompletableFuture<byte[]> reply, long deadlineNanos, long timeoutMillis) {
    }

    Session(EventLoop loop, int index, Options options, SessionHandler handler, boolean server) {
        this.loop = loop;
        this.index = index;
        this.options = options;
        this.handler = handler;
        this.server = server;
        this.opened = server ? null : new CompletableFuture<>();
    }

    // ------------------------------------------------------------------ public API

    /**
     * Returns the queue pair, for one-sided RDMA on the peer's buffers (its futures complete on
     * the loop's thread) or work posted with the application's own ids (completions go to
     * {@link SessionHandler#onCompletion}; ids must stay below 2^62).
     *
     * @return the connected queue pair, closed with the session
     * @throws IllegalStateException before the session is open
     */
    public QueuePair queuePair() {
        QueuePair q = qp;
        if (q == null || state == State.RESOLVING) {
            throw new IllegalStateException("the session is not connected yet");
        }
        return q;
    }

    /**
     * Returns the buffers the peer offered: in its handshake first, then with
     * {@link #offerBuffer} in the order they arrived.
     *
     * @return a live, thread-safe view (it grows when the peer offers more)
     */
    public List<RemoteBuffer> peerBuffers() {
        return java.util.Collections.unmodifiableList(peerBuffers);
    }

    /**
     * Returns the application bytes of the peer's handshake.
     *
     * @return a copy (empty when none)
     */
    public byte[] peerData() {
        return peer.data();
    }

    /**
     * Returns the peer's IP address and rdma_cm port.
     *
     * @return the address, or null when it is neither IPv4 nor IPv6 or not known yet
     */
    public InetSocketAddress remoteAddress() {
        return remote;
    }

    /**
     * Returns the largest message, request or reply the session may send.
     *
     * @return bytes: the smaller slot of the two sides, less the 16-byte header (0 before open)
     */
    public int maxMessageBytes() {
        return Math.max(0, Math.min(options.slotBytes(), peerSlotBytes) - HEADER);
    }

    /**
     * Returns the credits this side holds: messages it may send now without waiting.
     *
     * @return free slots of the peer's ring as this side knows them
     */
    public synchronized int credits() {
        return credits;
    }

    /**
     * Returns whether the session is open (established and not closed).
     *
     * @return true between {@link SessionHandler#onOpen} and the close
     */
    public boolean isOpen() {
        return state == State.OPEN && !closing;
    }

    /**
     * Returns why the session closed.
     *
     * @return the cause, or null while it is open
     */
    public RdmaCmException closeCause() {
        return closeCause;
    }

    /**
     * Returns the loop serving the session.
     *
     * @return the loop
     */
    public EventLoop loop() {
        return loop;
    }

    /**
     * Attaches an application object (per-connection state), as a selection key does.
     *
     * @param value anything, or null
     */
    public void attach(Object value) {
        attachment = value;
    }

    /**
     * Returns the attached object.
     *
     * @return what {@link #attach} set, or null
     */
    public Object attachment() {
        return attachment;
    }

    /**
     * Sends a message now if a credit and a send slot are free, without allocating.
     *
     * @param message the bytes (any segment; copied into a registered send slot before this returns)
     * @return {@link #OK}, {@link #BACK_PRESSURED} (no credit now, or queued messages go first) or
     *         {@link #CLOSED}
     * @throws IllegalArgumentException when the message is longer than {@link #maxMessageBytes()}
     */
    public int offer(MemorySegment message) {
        requireFits(message.byteSize());
        synchronized (this) {
            if (!isOpen()) {
                return CLOSED;
            }
            if (!waiting.isEmpty()) {
                return BACK_PRESSURED;
            }
            return post(MESSAGE, 0, message, null);
        }
    }

    /**
     * Sends a message: now, or queued (a copy) until the peer returns a credit.
     *
     * @param message the bytes (copied before this returns)
     * @throws IllegalArgumentException when the message is longer than {@link #maxMessageBytes()}
     * @throws RdmaCmException {@link RdmaCmException.Reason#DISCONNECTED} when the session is
     *         closed; {@link RdmaCmException.Reason#LIMIT} when {@link Options#maxQueued()}
     *         messages wait already
     */
    public void send(MemorySegment message) {
        sendOrQueue(MESSAGE, 0, message, null);
    }

    /**
     * Sends a message: now, or queued (a copy) until the peer returns a credit.
     *
     * @param message the bytes
     * @throws IllegalArgumentException when the message is longer than {@link #maxMessageBytes()}
     * @throws RdmaCmException as {@link #send(MemorySegment)}
     */
    public void send(byte[] message) {
        sendOrQueue(MESSAGE, 0, MemorySegment.ofArray(message), message);
    }

    /**
     * Calls the peer: its {@link SessionHandler#onRequest} gets {@code request}, and its
     * {@link #reply} completes the future. Many calls may be in flight; each has its id.
     *
     * @param request the bytes (copied before this returns)
     * @param timeout the most the call may take, the wait for a credit included; counted without
     *                the loop's thread (one timer thread for the process, {@code jverbs-call-timeouts},
     *                looks every 10 ms while calls wait, and is gone 10 s after the last), so a call
     *                ends in time (within 10 ms after it) even when a handler blocks the loop
     * @return the reply's bytes; fails with {@link RdmaCmException}: {@code TIMEOUT} after
     *         {@code timeout}, {@code DISCONNECTED} when the session closes first,
     *         {@code REMOTE_FAILURE} when the peer's handler failed or answered with
     *         {@link #fail}, {@code LIMIT} when too many messages wait for credits
     * @throws IllegalArgumentException when the request is longer than {@link #maxMessageBytes()}
     */
    public CompletableFuture<byte[]> call(MemorySegment request, Duration timeout) {
        requireFits(request.byteSize());
        CompletableFuture<byte[]> reply = new CompletableFuture<>();
        long callId;
        synchronized (this) {
            callId = nextCallId++;
        }
        calls.put(callId, new PendingCall(reply, System.nanoTime() + timeout.toNanos(), timeout.toMillis()));
        Timers.watch(this);
        try {
            sendOrQueue(REQUEST, callId, request, null);
        } catch (RdmaCmException e) {
            calls.remove(callId);
            reply.completeExceptionally(e);
        }
        return reply;
    }

    /**
     * Calls the peer with {@code request}'s bytes; see {@link #call(MemorySegment, Duration)}.
     *
     * @param request the bytes
     * @param timeout the most the call may take
     * @return the reply's bytes
     * @throws IllegalArgumentException when the request is longer than {@link #maxMessageBytes()}
     */
    public CompletableFuture<byte[]> call(byte[] request, Duration timeout) {
        return call(MemorySegment.ofArray(request), timeout);
    }

    /**
     * Answers a request: now, or queued until a credit returns. An id answered twice, or one of
     * a request that never came, reaches the peer and is dropped there.
     *
     * @param requestId the id {@link SessionHandler#onRequest} was given
     * @param reply     the bytes (copied before this returns)
     * @throws IllegalArgumentException when the reply is longer than {@link #maxMessageBytes()}
     * @throws RdmaCmException as {@link #send(MemorySegment)}
     */
    public void reply(long requestId, MemorySegment reply) {
        sendOrQueue(REPLY, requestId, reply, null);
    }

    /**
     * Answers a request with {@code reply}'s bytes; see {@link #reply(long, MemorySegment)}.
     *
     * @param requestId the id {@link SessionHandler#onRequest} was given
     * @param reply     the bytes
     */
    public void reply(long requestId, byte[] reply) {
        sendOrQueue(REPLY, requestId, MemorySegment.ofArray(reply), reply);
    }

    /**
     * Answers a request with a failure: the caller's future fails with
     * {@link RdmaCmException.Reason#REMOTE_FAILURE} and {@code why} (cut to the message room).
     *
     * @param requestId the id {@link SessionHandler#onRequest} was given
     * @param why       what to tell the caller
     * @throws RdmaCmException as {@link #send(MemorySegment)}
     */
    public void fail(long requestId, String why) {
        byte[] text = String.valueOf(why).getBytes(StandardCharsets.UTF_8);
        int room = maxMessageBytes();
        byte[] cut = text.length <= room ? text : java.util.Arrays.copyOf(text, room);
        sendOrQueue(REPLY_ERROR, requestId, MemorySegment.ofArray(cut), cut);
    }

    /**
     * Offers the peer one of this side's buffers after the handshake: its
     * {@link SessionHandler#onBuffer} runs and {@link #peerBuffers()} grows. The rights the peer
     * may use are those of {@code buffer} (a {@link RegisteredBuffer#remote()} or a memory
     * window's), and what the session's queue pair grants.
     *
     * @param buffer the buffer and its rights
     * @throws RdmaCmException as {@link #send(MemorySegment)}
     */
    public void offerBuffer(RemoteBuffer buffer) {
        byte[] bytes = buffer.toBytes();
        sendOrQueue(BUFFER, 0, MemorySegment.ofArray(bytes), bytes);
    }

    /**
     * Offers the peer one range of a buffer through a type-2 memory window bound to the
     * session's queue pair: the peer reaches that range only, with {@code rights} only, through
     * the session only (another session's queue pair presenting the same rkey gets a remote
     * access error), and only until the window is invalidated
     * ({@link MemoryWindow#invalidateAsync()}) or the session closes. The buffer needs no remote
     * rights of its own. See {@link MemoryWindow} for the devices that have windows.
     *
     * @param buffer a buffer of the loop's protection domain
     * @param offset the range's first byte
     * @param length the range's bytes
     * @param rights what the peer may do there
     * @return completes with the window once it is bound and offered (on the loop's thread);
     *         fails as {@link MemoryWindow#openAsync(QueuePair, RegisteredBuffer, long, long, Access...)}
     *         and {@link #offerBuffer} do
     * @throws UnsupportedOperationException when the device has no type-2 windows
     * @throws IllegalArgumentException      when the rights or the range are refused
     * @throws IllegalStateException         before the session is open, or after its close
     */
    public CompletableFuture<MemoryWindow> offerWindow(RegisteredBuffer buffer, long offset, long length,
                                                       Access... rights) {
        return MemoryWindow.openAsync(queuePair(), buffer, offset, length, rights).thenApply(window -> {
            offerBuffer(window.remote());
            return window;
        });
    }

    /**
     * Closes the session: later sends are refused at once; messages sent or queued before the
     * close still go out (for at most 2 s: a peer that returns no credits loses them); then the
     * peer is disconnected, calls still in flight fail with
     * {@link RdmaCmException.Reason#DISCONNECTED}, and the loop frees the queue pair and reuses
     * the rings. Returns at once; idempotent; any thread.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closing) {
                return;
            }
            closing = true;
            lingerUntilNanos = System.nanoTime() + LINGER_NANOS;
            if (state == State.OPEN && !drainedLocked()) {
                loop.linger(this);
                return;
            }
        }
        loop.requestRelease(this, closedHere());
    }

    private RdmaCmException closedHere() {
        return new RdmaCmException("the session with " + remote + " was closed by this side",
                RdmaCmException.Reason.DISCONNECTED, 0);
    }

    /** Nothing waits for a credit and every posted message completed; caller holds this. */
    private boolean drainedLocked() {
        return waiting.isEmpty() && sendHead == sendTail;
    }

    /** A close that waited for the messages sent before it may end now (they went, or its time ran out). */
    synchronized boolean lingerOver(long now) {
        return drainedLocked() || now - lingerUntilNanos >= 0 || state != State.OPEN;
    }

    @Override
    public String toString() {
        return "Session[" + (server ? "from " : "to ") + remote + ", " + state + (qp == null ? "" : ", qp " + qp.number())
                + "]";
    }

    // ------------------------------------------------------------------ the loop's side

    private void requireFits(long bytes) {
        int max = maxMessageBytes();
        if (state == State.OPEN && bytes > max) {
            throw new IllegalArgumentException("a message of " + bytes + " bytes does not fit: the session carries at"
                    + " most " + max + " (the smaller ring slot of the two sides, " + Math.min(options.slotBytes(),
                    peerSlotBytes) + " bytes, less a " + HEADER + "-byte header); use one-sided RDMA for bulk data,"
                    + " or larger slots (Session.Options.ring)");
        }
    }

    private void sendOrQueue(byte kind, long callId, MemorySegment bytes, byte[] array) {
        requireFits(bytes.byteSize());
        synchronized (this) {
            if (closing || state == State.CLOSED) {
                RdmaCmException cause = closeCause;
                throw cause != null ? cause : new RdmaCmException("the session with " + remote + " is closed",
                        RdmaCmException.Reason.DISCONNECTED, 0);
            }
            if (state == State.OPEN && waiting.isEmpty() && post(kind, callId, bytes, null) == OK) {
                return;
            }
            if (waiting.size() >= options.maxQueued()) {
                throw new RdmaCmException(options.maxQueued() + " messages to " + remote + " already wait for credits:"
                        + " the peer consumes more slowly than this side sends (Session.Options.depth raises the"
                        + " bound)", RdmaCmException.Reason.LIMIT, 0);
            }
            waiting.add(new Outgoing(kind, callId, array != null ? array.clone() : bytes.toArray(ValueLayout.JAVA_BYTE)));
        }
    }

    /** Posts one message if a credit (unless it is a credit or hello) and a send slot are free; caller holds this. */
    private int post(byte kind, long callId, MemorySegment bytes, byte[] array) {
        boolean credited = kind != CREDIT && kind != HELLO;
        int sendSlots = options.sendSlots();
        if (credited && credits == 0 || sendHead - sendTail >= sendSlots) {
            return BACK_PRESSURED;
        }
        int slot = (int) (sendHead % sendSlots);
        long offset = (long) (options.receiveSlots() + slot) * options.slotBytes();
        MemorySegment s = ring.segment();
        int returned = Math.min(pendingReturn, 0xffff);
        s.set(ValueLayout.JAVA_BYTE, offset, kind);
        s.set(ValueLayout.JAVA_BYTE, offset + 1, (byte) 0);
        s.set(ValueLayout.JAVA_SHORT_UNALIGNED, offset + 2, (short) returned);
        s.set(ValueLayout.JAVA_INT_UNALIGNED, offset + 4, 0);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, offset + 8, callId);
        int length = array != null ? array.length : (int) bytes.byteSize();
        if (array != null) {
            MemorySegment.copy(array, 0, s, ValueLayout.JAVA_BYTE, offset + HEADER, length);
        } else {
            MemorySegment.copy(bytes, 0, s, offset + HEADER, length);
        }
        int rc;
        try {
            rc = qp.send(RING_TAG | (long) index << 24 | SEND_BIT | slot, ring, offset, HEADER + length, true);
        } catch (IllegalStateException gone) {
            return CLOSED; // the queue pair failed or closed under this post: the loop closes the session
        }
        if (rc != QueuePair.OK) {
            return BACK_PRESSURED;
        }
        sendHead++;
        pendingReturn -= returned;
        if (credited) {
            credits--;
        }
        return OK;
    }

    /** Sends what waits, in order, while credits and slots last; caller holds this. */
    private void drainLocked() {
        Outgoing next;
        while (state == State.OPEN && (next = waiting.peek()) != null) {
            if (post(next.kind, next.id, null, next.bytes) != OK) {
                return;
            }
            waiting.poll();
        }
    }

    /** The loop made the queue pair and the ring: post every receive slot. */
    void postRing() {
        int slots = options.receiveSlots();
        slotViews = new MemorySegment[slots];
        for (int i = 0; i < slots; i++) {
            long offset = (long) i * options.slotBytes();
            slotViews[i] = ring.segment().asSlice(offset + HEADER, options.slotBytes() - HEADER);
            if (qp.receive(RING_TAG | (long) index << 24 | i, ring, offset, options.slotBytes()) != QueuePair.OK) {
                throw new IllegalStateException("the receive queue took only " + i + " of " + slots + " ring slots");
            }
        }
    }

    /** The peer's session parameters from its handshake: its credits. */
    void peerParameters(int slots, int slotBytes) {
        synchronized (this) {
            peerSlots = slots;
            peerSlotBytes = slotBytes;
            credits = slots;
        }
    }

    /** Established (server: after the RTU; client: on the server's hello). */
    void open() {
        state = State.OPEN;
        if (server) {
            synchronized (this) {
                post(HELLO, 0, MemorySegment.NULL, new byte[0]);
            }
        }
        loop.callOpen(this);
        if (opened != null) {
            opened.complete(this);
        }
        synchronized (this) {
            drainLocked();
        }
    }

    /** A completion of the rings, on the loop's thread. */
    void onRingCompletion(Completion c, long wrId) {
        int slot = (int) (wrId & (SEND_BIT - 1));
        if ((wrId & SEND_BIT) != 0) {
            synchronized (this) {
                sendTail++;
            }
            if (!c.isSuccess()) {
                failed("a message to " + remote + " failed: " + c.statusName() + " (vendor error 0x"
                        + Integer.toHexString(c.vendorError()) + ")", c.status());
                return;
            }
            boolean closeNow;
            synchronized (this) {
                drainLocked();
                returnCredits();
                closeNow = closing && drainedLocked();
            }
            if (closeNow) {
                loop.requestRelease(this, closedHere());
            }
            return;
        }
        if (!c.isSuccess()) {
            failed("a receive of " + remote + "'s message failed: " + c.statusName(), c.status());
            return;
        }
        received(slot, c.byteLength());
    }

    private void received(int slot, int bytes) {
        long offset = (long) slot * options.slotBytes();
        MemorySegment s = ring.segment();
        if (bytes < HEADER) {
            failed("the peer " + remote + " sent " + bytes + " bytes, less than a session header", -1);
            return;
        }
        byte kind = s.get(ValueLayout.JAVA_BYTE, offset);
        int returned = Short.toUnsignedInt(s.get(ValueLayout.JAVA_SHORT_UNALIGNED, offset + 2));
        long callId = s.get(ValueLayout.JAVA_LONG_UNALIGNED, offset + 8);
        int length = bytes - HEADER;
        if (returned > 0) {
            synchronized (this) {
                credits += returned;
                drainLocked();
            }
        }
        State now = state;
        MemorySegment view = slotViews[slot];
        if (kind == HELLO) {
            if (!server && now == State.HANDSHAKE) {
                open();
            }
        } else if (now != State.OPEN) {
            // before this side saw the connection established (a peer that skipped the handshake's
            // last step): nothing reaches the application
        } else if (kind == MESSAGE) {
            loop.callMessage(this, view, length);
        } else if (kind == REQUEST) {
            loop.callRequest(this, callId, view, length);
        } else if (kind == REPLY || kind == REPLY_ERROR) {
            PendingCall pending = calls.remove(callId);
            if (pending != null) {
                CompletableFuture<byte[]> call = pending.reply();
                byte[] body = view.asSlice(0, length).toArray(ValueLayout.JAVA_BYTE);
                if (kind == REPLY) {
                    call.complete(body);
                } else {
                    call.completeExceptionally(new RdmaCmException("call " + callId + " failed at " + remote + ": "
                            + new String(body, StandardCharsets.UTF_8), RdmaCmException.Reason.REMOTE_FAILURE, 0));
                }
            }
        } else if (kind == BUFFER) {
            RemoteBuffer b;
            try {
                b = RemoteBuffer.fromBytes(view.asSlice(0, length).toArray(ValueLayout.JAVA_BYTE));
            } catch (RuntimeException e) {
                failed("the peer " + remote + " offered a buffer that does not decode: " + e.getMessage(), -1);
                return;
            }
            peerBuffers.add(b);
            loop.callBuffer(this, b);
        } else if (kind != CREDIT) {
            failed("the peer " + remote + " sent a message of unknown kind " + kind, -1);
            return;
        }
        if (state == State.CLOSED || closing) {
            return;
        }
        try {
            if (qp.receive(RING_TAG | (long) index << 24 | slot, ring, offset, options.slotBytes()) != QueuePair.OK) {
                failed("the receive queue refused a ring slot back", -1);
                return;
            }
        } catch (IllegalStateException gone) {
            return; // the queue pair failed meanwhile: the loop closes the session
        }
        if (kind != CREDIT && kind != HELLO) {
            synchronized (this) {
                pendingReturn++;
                returnCredits();
            }
        }
    }

    /** Sends the credits back on their own once half the ring was used and nothing carried them; caller holds this. */
    private void returnCredits() {
        if (state == State.OPEN && pendingReturn >= (options.ringSlots() + 1) / 2) {
            post(CREDIT, 0, MemorySegment.NULL, new byte[0]);
        }
    }

    private void failed(String why, int status) {
        if (status == WcStatus.WR_FLUSH_ERR || closing || state == State.CLOSED) {
            loop.requestRelease(this, new RdmaCmException("the session with " + remote + " ended: " + why,
                    RdmaCmException.Reason.DISCONNECTED, 0));
        } else {
            loop.requestRelease(this, new RdmaCmException("the session with " + remote + " failed: " + why,
                    status < 0 ? RdmaCmException.Reason.PROTOCOL : RdmaCmException.Reason.DISCONNECTED, 0));
        }
    }

    /** Marks the session closed and fails what waits; on the loop's thread, once. */
    void markClosed(RdmaCmException cause) {
        synchronized (this) {
            closing = true;
            closeCause = cause;
            state = State.CLOSED;
            waiting.clear();
        }
        for (PendingCall call : calls.values()) {
            call.reply().completeExceptionally(cause);
        }
        calls.clear();
        if (opened != null) {
            opened.completeExceptionally(cause);
        }
    }

    /**
     * Fails the calls past their deadline (on the timer thread, never the loop's: a blocked
     * handler does not hold them up).
     *
     * @return how many calls still wait
     */
    int expireCalls(long now) {
        for (var e : calls.entrySet()) {
            PendingCall call = e.getValue();
            if (now - call.deadlineNanos() >= 0 && calls.remove(e.getKey(), call)) {
                call.reply().completeExceptionally(new RdmaCmException("call " + e.getKey() + " to " + remote
                        + " got no reply within " + call.timeoutMillis() + " ms", RdmaCmException.Reason.TIMEOUT,
                        io.jverbs.ibverbs.Errno.ETIMEDOUT));
            } else if (call.reply().isDone()) {
                calls.remove(e.getKey(), call); // completed by its caller (cancelled): nothing will answer it
            }
        }
        return calls.size();
    }
}
