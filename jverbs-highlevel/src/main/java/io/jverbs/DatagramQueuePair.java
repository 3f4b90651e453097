package io.jverbs;

import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.VerbsException;
import io.jverbs.ibverbs.raw.ibv_ah_attr;
import io.jverbs.ibverbs.raw.ibv_context;
import io.jverbs.ibverbs.raw.ibv_context_ops;
import io.jverbs.ibverbs.raw.ibv_global_route;
import io.jverbs.ibverbs.raw.ibv_qp;
import io.jverbs.ibverbs.raw.ibv_qp_attr;
import io.jverbs.ibverbs.raw.ibv_qp_cap;
import io.jverbs.ibverbs.raw.ibv_qp_init_attr;
import io.jverbs.ibverbs.raw.ibv_send_wr;
import io.jverbs.ibverbs.raw.ibv_wc;
import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.HashSet;
import java.util.Set;


/**
 * An unreliable-datagram (UD) queue pair: Send and Receive of single messages up to the MTU to
 * any peer whose {@link Address} is known, without a connection. Usable as soon as it is made.
 * A receive buffer gets the 40-byte global routing header first, then the message
 * ({@link #GRH_BYTES}); {@link Completion#byteLength()} counts both.
 *
 * <p>Zero-allocation style only: the caller's work-request id, completions to the handler given
 * to {@link CompletionQueue#poll}. Every single {@link #send} is signaled; in a
 * {@link DatagramBatch} the sends asked for and the batch's last are. Thread-safety, bounds checks
 * and closing are as for {@link QueuePair}.
 */
public final class DatagramQueuePair extends QueueEndpoint {
    /** Bytes of the global routing header that precedes every received message. */
    public static final int GRH_BYTES = 40;
    /** The default Q_Key. */
    public static final int DEFAULT_QKEY = 0x11111111;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final long SEND_WR = WorkRequests.SEND_WR;
    private static final long SEND_SGE = WorkRequests.SEND_SGE;
    private static final long RECV_WR = WorkRequests.RECV_WR;
    private static final long RECV_SGE = WorkRequests.RECV_SGE;
    private static final long BAD_WR = WorkRequests.BAD_WR;


    /**
     * Where a datagram peer is: what {@link #destination} needs.
     *
     * @param qpn  its queue pair number (24 bits)
     * @param qkey its Q_Key
     * @param lid  its LID (0 on RoCE; 16 bits)
     * @param gid  its 16-byte GID
     */
    public record Address(int qpn, int qkey, int lid, byte[] gid) {
        /**
         * Validates and copies.
         *
         * @throws IllegalArgumentException when the queue pair number does not fit 24 bits (the
         *                                  device would drop the high bits and deliver to another
         *                                  queue pair), the LID does not fit 16 bits, or the GID
         *                                  is not 16 bytes
         */
        public Address {
            if ((qpn & ~0xffffff) != 0 || (lid & ~0xffff) != 0) {
                throw new IllegalArgumentException("invalid datagram address: qpn 0x" + Integer.toHexString(qpn)
                        + " (24 bits), lid " + lid + " (16 bits)");
            }
            if (gid.length != 16) {
                throw new IllegalArgumentException("a GID has 16 bytes");
            }
            gid = gid.clone();
        }

        /**
         * Returns the GID.
         *
         * @return a copy of the 16 bytes
         */
        @Override
        public byte[] gid() {
            return gid.clone();
        }

        /**
         * Returns whether the GID is all zeros (an InfiniBand peer reached by its LID alone).
         *
         * @return true when every byte of the GID is 0
         */
        public boolean hasZeroGid() {
            for (byte b : gid) {
                if (b != 0) {
                    return false;
                }
            }
            return true;
        }
    }

    /**
     * An address handle ({@code ibv_ah}) to one peer, made by {@link #destination} or
     * {@link #replyTo}. It lives until {@link #close()} or until its queue pair closes, whichever
     * comes first; a server that answers many peers closes the destinations it no longer needs,
     * since a device holds a bounded number of address handles (rxe: about 16 000).
     *
     * <p>Thread-safe: {@link #close()} takes its queue pair's lock, as every send does, so a send on
     * another thread either precedes the close or is refused.
     */
    public static final class Destination implements AutoCloseable {
        private final MemorySegment ah;
        private final int qpn;
        private final int qkey;
        private final DatagramQueuePair owner;
        /** Set under the owner's lock. */
        private boolean closed;
        /** Sends the owner must have retired before the handle may go ({@link #close}). */
        private long retireAfter;

        private Destination(DatagramQueuePair owner, MemorySegment ah, int qpn, int qkey) {
            this.owner = owner;
            this.ah = ah;
            this.qpn = qpn;
            this.qkey = qkey;
        }

        /**
         * Returns the peer's queue pair number.
         *
         * @return the remote QPN
         */
        public int qpn() {
            return qpn;
        }

        /**
         * Returns whether {@link #close()} was called or its queue pair closed.
         *
         * @return true when no send may use it any more
         */
        public boolean isClosed() {
            synchronized (owner) {
                return closed || owner.isClosed();
            }
        }

        /**
         * Stops sends to this destination and releases its address handle: at once when none of
         * its queue pair's sends is outstanding, otherwise once every send posted before this call
         * has completed (sends complete in order), which the queue pair's completion handling
         * notices; at the latest when the queue pair closes. A datagram already posted to it is
         * therefore still sent. Idempotent; a no-op after the queue pair closed.
         *
         * <p>A later {@link #send}, {@link #sendWithImmediate} or post of a {@link DatagramBatch}
         * that holds this destination throws {@link IllegalStateException}.
         */
        @Override
        public void close() {
            owner.retire(this);
        }
    }

    private final CompletionQueue cq;
    private final MemorySegment qp;
    private final long qpAddress;
    private final int number;
    private final int qkey;
    private final Gid gid;
    private final Context.PortAttributes port;
    private final int depth;
    private final ProtectionDomain pd;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment scratch;
    private final long scratchAddress;
    private final MemorySegment postSendFn;
    private final MemorySegment postRecvFn;
    /** Live address handles, destroyed with the queue pair. */
    private final Set<Destination> destinations = new HashSet<>();
    /** Closed destinations waiting for the sends posted before their close, in close order. */
    private final ArrayDeque<Destination> retiring = new ArrayDeque<>();
    /** The send queue's accounting, shared with {@link QueuePair}'s (here also under this monitor). */
    private final SendQueue sendQueue;
    private int recvOutstanding;
    private String errorText;

    private DatagramQueuePair(ProtectionDomain pd, CompletionQueue cq, MemorySegment qp, int qkey, Gid gid,
                              Context.PortAttributes port, int depth) {
        super("datagram queue pair", pd);
        this.pd = pd;
        this.cq = cq;
        this.qp = qp;
        this.qpAddress = qp.address();
        MemorySegment q = qp.reinterpret(ibv_qp.sizeof());
        this.number = ibv_qp.qp_num(q);
        this.qkey = qkey;
        this.gid = gid;
        this.port = port;
        this.depth = depth;
        this.sendQueue = new SendQueue(depth);
        this.scratch = arena.allocate(WorkRequests.INLINE, 64);
        this.scratchAddress = scratch.address();
        MemorySegment ctx = ibv_qp.context(q).reinterpret(ibv_context.sizeof());
        this.postSendFn = WorkRequests.postSendOp(ctx);
        this.postRecvFn = WorkRequests.postRecvOp(ctx);
    }


    /**
     * Creates a UD queue pair on port 1 and brings it to RTS: {@link #create(ProtectionDomain,
     * CompletionQueue, int, int, int, int) create(pd, cq, depth, qkey, 1, gidIndex)}.
     *
     * @param pd    its protection domain (owns it)
     * @param cq    the completion queue of both directions
     * @param depth send and receive queue depth
     * @param qkey  its Q_Key (peers send with it)
     * @param gidIndex the GID index, or -1 to choose
     * @return the queue pair, ready to send and receive
     * @throws VerbsException when creation or a transition fails
     */
    public static DatagramQueuePair create(ProtectionDomain pd, CompletionQueue cq, int depth, int qkey, int gidIndex) {
        return create(pd, cq, depth, qkey, 1, gidIndex);
    }

    /**
     * Creates a UD queue pair on one port of the device and brings it to RTS. Its
     * {@link #address() address} carries that port's LID and GID, and its
     * {@link #destination destinations} leave through that port.
     *
     * @param pd       its protection domain (owns it)
     * @param cq       the completion queue of both directions
     * @param depth    send and receive queue depth
     * @param qkey     its Q_Key (peers send with it)
     * @param portNum  the device port, 1 to the device's port count (a dual-port ConnectX has 1 and 2)
     * @param gidIndex the GID index on that port, or -1 to choose
     * @return the queue pair, ready to send and receive
     * @throws IllegalArgumentException when the depth or the port number is out of range
     * @throws VerbsException when the port cannot be queried, or creation or a transition fails
     */
    public static DatagramQueuePair create(ProtectionDomain pd, CompletionQueue cq, int depth, int qkey, int portNum,
                                           int gidIndex) {
        if (depth < 1) {
            throw new IllegalArgumentException("depth must be at least 1");
        }
        if (portNum < 1 || portNum > 255) {
            throw new IllegalArgumentException("port must be 1 to 255, not " + portNum);
        }
        Context context = pd.context();
        cq.requireServes(pd, 2 * depth, "datagram queue pair");
        Context.PortAttributes port = context.port(portNum);
        Gid gid = gidIndex >= 0 ? context.gid(portNum, gidIndex) : context.chooseGid(portNum);
        synchronized (pd) {
            pd.ensureOpen("create a queue pair");
            // the queue's handle is read by ibv_create_qp: its destroy waits until the attach
            MemorySegment cqHandle = cq.lendForCreation("create a queue pair");
            try {
                return create(pd, cq, qkey, gid, port, depth, cqHandle);
            } finally {
                cq.creationEnded();
            }
        }
    }

    /** The rest of {@code create}: {@code cq} is lent to it; the caller holds the domain's monitor. */
    private static DatagramQueuePair create(ProtectionDomain pd, CompletionQueue cq, int qkey, Gid gid,
                                            Context.PortAttributes port, int depth, MemorySegment cqHandle) {
        MemorySegment qp;
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment attr = scratch.allocate(ibv_qp_init_attr.LAYOUT);
            ibv_qp_init_attr.send_cq(attr, cqHandle);
            ibv_qp_init_attr.recv_cq(attr, cqHandle);
            MemorySegment cap = ibv_qp_init_attr.cap(attr);
            ibv_qp_cap.max_send_wr(cap, depth);
            ibv_qp_cap.max_recv_wr(cap, depth);
            ibv_qp_cap.max_send_sge(cap, 1);
            ibv_qp_cap.max_recv_sge(cap, 1);
            ibv_qp_init_attr.qp_type(attr, verbs_h.IBV_QPT_UD);
            qp = verbs_h.ibv_create_qp(pd.raw(), attr);
            if (qp.address() == 0) {
                throw VerbsException.of("ibv_create_qp", Native.lastErrno());
            }
        }
        // adopted under the monitor the domain's destroy takes: a close never misses it, nor runs between
        DatagramQueuePair pair = null;
        try {
            pair = new DatagramQueuePair(pd, cq, qp, qkey, gid, port, depth);
            pair.toRts();
            cq.attach(pair);
            pair.adoptedByParent();
        } catch (RuntimeException e) {
            if (pair != null) {
                cq.detach(pair);
            }
            verbs_h.ibv_destroy_qp(qp);
            throw e;
        }
        return pair;
    }

    private void toRts() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(ibv_qp_attr.LAYOUT);
            ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_INIT);
            ibv_qp_attr.pkey_index(attr, (short) 0);
            ibv_qp_attr.port_num(attr, (byte) port.port());
            ibv_qp_attr.qkey(attr, qkey);
            VerbsException.check("ibv_modify_qp", verbs_h.ibv_modify_qp(qp, attr, verbs_h.IBV_QP_STATE
                    | verbs_h.IBV_QP_PKEY_INDEX | verbs_h.IBV_QP_PORT | verbs_h.IBV_QP_QKEY), 0);
            attr.fill((byte) 0);
            ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_RTR);
            VerbsException.check("ibv_modify_qp", verbs_h.ibv_modify_qp(qp, attr, verbs_h.IBV_QP_STATE), 0);
            attr.fill((byte) 0);
            ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_RTS);
            ibv_qp_attr.sq_psn(attr, 0);
            VerbsException.check("ibv_modify_qp", verbs_h.ibv_modify_qp(qp, attr, verbs_h.IBV_QP_STATE
                    | verbs_h.IBV_QP_SQ_PSN), 0);
        }
    }

    @Override
    protected long nativeAddress() {
        return qpAddress;
    }

    @Override
    protected String kindAndNumber() {
        return "datagram queue pair " + number;
    }

    @Override
    public int number() {
        return number;
    }

    /**
     * What a peer needs to send here.
     *
     * @return this queue pair's address
     */
    public Address address() {
        return new Address(number, qkey, port.lid(), gid.bytes());
    }

    @Override
    protected int entriesOn(CompletionQueue queue) {
        return queue == cq ? 2 * depth : 0;
    }

    /** The name of the device this queue pair is on. */
    String deviceName() {
        return cq.contextName();
    }

    /** The GID index its destinations send from. */
    int gidIndex() {
        return gid.index();
    }

    /** The device port it is on. */
    int portNumber() {
        return port.port();
    }

    /**
     * Makes an address handle ({@code ibv_create_ah}) for a peer; it lives until its
     * {@link Destination#close()} or this queue pair's close. The handle routes by the peer's GID from this queue pair's GID (hop limit 64),
     * unless the peer has a LID and an all-zero GID (InfiniBand within the subnet: by LID alone).
     *
     * @param peer the peer's address
     * @return the destination to send to
     * @throws IllegalStateException when this queue pair is closed
     * @throws VerbsException when the device refuses the address, or holds as many address handles
     *         as it can (ENOMEM, or EINVAL on rxe; the message then says how many this queue pair
     *         holds: close destinations no longer needed)
     */
    public Destination destination(Address peer) {
        return destination(peer, Route.DEFAULT);
    }

    /**
     * As {@link #destination(Address)}, with the datagrams to it carrying {@code route} (service
     * level; on a routed path, traffic class, flow label and hop limit).
     *
     * @param peer  the peer's address
     * @param route how its datagrams are marked
     * @return the destination to send to
     * @throws IllegalStateException when this queue pair is closed
     * @throws VerbsException as {@link #destination(Address)}
     */
    public synchronized Destination destination(Address peer, Route route) {
        java.util.Objects.requireNonNull(route, "route");
        ensureOpen("make a destination");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(ibv_ah_attr.LAYOUT);
            ibv_ah_attr.port_num(attr, (byte) port.port());
            ibv_ah_attr.dlid(attr, (short) peer.lid());
            // an all-zero GID with a LID is an InfiniBand peer in this subnet: no routing header (a
            // global route to GID 0 would lose every datagram); RoCE always routes by GID
            boolean global = peer.lid() == 0 || !peer.hasZeroGid();
            ibv_ah_attr.is_global(attr, (byte) (global ? 1 : 0));
            if (global) {
                MemorySegment grh = ibv_ah_attr.grh(attr);
                ibv_global_route.dgid(grh).copyFrom(MemorySegment.ofArray(peer.gid()));
                ibv_global_route.sgid_index(grh, (byte) gid.index());
            }
            route.writeTo(attr, global);
            MemorySegment pd = ibv_qp.pd(qp.reinterpret(ibv_qp.sizeof()));
            MemorySegment ah = verbs_h.ibv_create_ah(pd, attr);
            if (ah.address() == 0) {
                throw addressHandleRefused(Native.lastErrno());
            }
            return adopt(new Destination(this, ah, peer.qpn(), peer.qkey()));
        }
    }

    /**
     * Makes an address handle back to the sender of a datagram this queue pair received
     * ({@code ibv_init_ah_from_wc}, then {@code ibv_create_ah}): from the receive's completion and
     * the routing header at the start of its buffer (an IPv4 header under RoCE v2, which the
     * library reads as such). The destination's queue pair number is the sender's
     * ({@link Completion#sourceQueuePair()}); it lives until its {@link Destination#close()} or this
     * queue pair's close. A server answering many peers closes each reply's destination when done
     * with it.
     *
     * <p>Call it inside the {@link CompletionHandler} that got {@code received}: a completion is
     * valid only there. The buffer range must still hold what the receive wrote.
     *
     * @param received    a successful receive completion of this queue pair
     * @param local       the buffer the receive was posted with
     * @param localOffset where that receive started in {@code local} (its routing header)
     * @param qkey        the sender's Q_Key, which the completion does not carry (often this queue pair's own)
     * @return the destination to reply to
     * @throws IllegalStateException     when this queue pair or the buffer is closed
     * @throws IllegalArgumentException  when the completion is not a successful receive of this queue pair
     * @throws IndexOutOfBoundsException when the header's 40 bytes lie outside the buffer
     * @throws VerbsException when the library cannot make an address from the header, or the device refuses it
     */
    public synchronized Destination replyTo(Completion received, RegisteredBuffer local, long localOffset, int qkey) {
        ensureOpen("make a destination");
        if (!received.isSuccess() || !received.isReceive() || received.qpNumber() != number) {
            throw new IllegalArgumentException("not a successful receive of datagram queue pair " + number + ": " + received);
        }
        local.checkRange(localOffset, GRH_BYTES, "read the routing header");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(ibv_ah_attr.LAYOUT);
            MemorySegment q = qp.reinterpret(ibv_qp.sizeof());
            // copies of the completion and the header: the library reads them with the CPU, and a
            // copy through the buffer's segment throws if another thread closed the buffer meanwhile
            MemorySegment wc = a.allocate(ibv_wc.LAYOUT).copyFrom(
                    MemorySegment.ofAddress(received.currentAddress()).reinterpret(ibv_wc.sizeof()));
            MemorySegment grh = a.allocate(GRH_BYTES, 8).copyFrom(local.segment().asSlice(localOffset, GRH_BYTES));
            int rc = verbs_h.ibv_init_ah_from_wc(ibv_qp.context(q), (byte) port.port(), wc, grh, attr);
            if (rc != 0) {
                int errno = rc == -1 ? Native.lastErrno() : Math.abs(rc);
                throw VerbsException.of("ibv_init_ah_from_wc", errno == 0 ? io.jverbs.ibverbs.Errno.EINVAL : errno);
            }
            MemorySegment ah = verbs_h.ibv_create_ah(ibv_qp.pd(q), attr);
            if (ah.address() == 0) {
                throw addressHandleRefused(Native.lastErrno());
            }
            return adopt(new Destination(this, ah, received.sourceQueuePair(), qkey));
        }
    }

    /**
     * Sends one datagram (signaled).
     *
     * @param wrId        the caller's id (0 to 2<sup>63</sup>−1)
     * @param to          made by this queue pair's {@link #destination}
     * @param local       the source
     * @param localOffset offset in {@code local}
     * @param length      bytes, at most the path MTU
     * @return {@link QueuePair#OK} or {@link QueuePair#SEND_QUEUE_FULL}
     * @throws IllegalStateException     when closed or in error, or the destination is closed
     * @throws IllegalArgumentException  when the destination belongs to another queue pair or the id is negative
     * @throws IndexOutOfBoundsException when the range lies outside the buffer
     */
    public synchronized int send(long wrId, Destination to, RegisteredBuffer local, long localOffset, int length) {
        return postOne(wrId, to, local, localOffset, length, verbs_h.IBV_WR_SEND, 0, "send");
    }

    /**
     * Sends one datagram with 32 bits of immediate data (signaled): the receiver's completion
     * carries {@code immediate} ({@link Completion#immediateData()}). Otherwise as {@link #send}.
     *
     * @param wrId        the caller's id (0 to 2<sup>63</sup>−1)
     * @param to          made by this queue pair's {@link #destination}
     * @param local       the source
     * @param localOffset offset in {@code local}
     * @param length      bytes, at most the path MTU (0 sends the immediate alone)
     * @param immediate   32 bits for the receiver, in host order (sent big-endian, as {@code htonl})
     * @return {@link QueuePair#OK} or {@link QueuePair#SEND_QUEUE_FULL}
     * @throws IllegalStateException     when closed or in error, or the destination is closed
     * @throws IllegalArgumentException  when the destination belongs to another queue pair or the id is negative
     * @throws IndexOutOfBoundsException when the range lies outside the buffer
     */
    public synchronized int sendWithImmediate(long wrId, Destination to, RegisteredBuffer local, long localOffset,
                                              int length, int immediate) {
        return postOne(wrId, to, local, localOffset, length, verbs_h.IBV_WR_SEND_WITH_IMM, immediate,
                "send with immediate");
    }

    private int postOne(long wrId, Destination to, RegisteredBuffer local, long localOffset, int length, int opcode,
                        int immediate, String what) {
        check(what, wrId);
        checkSend(to, local, localOffset, length, what);
        if (!sendQueue.fits(1)) {
            return QueuePair.SEND_QUEUE_FULL;
        }
        MemorySegment s = scratch;
        WorkRequests.send(s, scratchAddress, SEND_WR, SEND_SGE, wrId, opcode, verbs_h.IBV_SEND_SIGNALED, immediate,
                local.address() + localOffset, length, local.lkey());
        address(s, SEND_WR, to);
        sendQueue.counting(true);
        int rc = WorkRequests.post(postSendFn, qpAddress, scratchAddress + SEND_WR, scratchAddress + BAD_WR);
        if (rc != 0) {
            sendQueue.refused(true);
            throw VerbsException.of("ibv_post_send", rc);
        }
        sendQueue.posted(true);
        return QueuePair.OK;
    }

    /** What every datagram send checks: its destination is this queue pair's, its range, the MTU. */
    void checkSend(Destination to, RegisteredBuffer local, long localOffset, int length, String what) {
        if (to.owner != this) {
            throw new IllegalArgumentException("the destination was made by another queue pair");
        }
        checkOpenDestination(to, what);
        local.checkUse(pd, localOffset, length, false, what);
        if (length > port.activeMtuBytes()) {
            throw new IllegalArgumentException("a datagram carries at most the MTU (" + port.activeMtuBytes()
                    + " bytes), not " + length);
        }
    }

    /** Throws when {@code to} was closed (read under this lock by the posts, which {@link Destination#close} takes). */
    void checkOpenDestination(Destination to, String what) {
        if (to.closed) {
            throw new RefusedException(RefusedException.Reason.CLOSED, "the destination to queue pair " + to.qpn + " is closed: "
                    + what + " refused");
        }
    }

    /** Writes a send request's datagram part: the address handle, the peer's QPN and Q_Key. */
    static void address(MemorySegment m, long wr, Destination to) {
        long ud = wr + ibv_send_wr.wr$OFFSET;
        m.set(LONG, ud + ibv_send_wr.wr.ud.ah$OFFSET, to.ah.address());
        m.set(INT, ud + ibv_send_wr.wr.ud.remote_qpn$OFFSET, to.qpn);
        m.set(INT, ud + ibv_send_wr.wr.ud.remote_qkey$OFFSET, to.qkey);
    }

    /**
     * A reusable batch of datagram sends for {@link #post(DatagramBatch)}.
     *
     * @param capacity the most sends in one post, 1 to the queue depth
     * @return the batch, valid until this queue pair closes
     * @throws IllegalArgumentException when capacity is out of range
     * @throws IllegalStateException    when closed
     */
    public synchronized DatagramBatch newBatch(int capacity) {
        ensureOpen("make a batch");
        if (capacity < 1 || capacity > depth) {
            throw new IllegalArgumentException("batch capacity 1.." + depth + ", not " + capacity);
        }
        return new DatagramBatch(this, capacity, arena.allocate(PostList.listBytes(capacity), 64));
    }

    /**
     * Posts a batch's sends as one list (one {@code ibv_post_send}) and clears the batch. Its last
     * send is signaled whatever was asked; a completion retires every send of the batch before it.
     *
     * @param batch made by {@link #newBatch(int)} of this queue pair
     * @return {@link QueuePair#OK}, or {@link QueuePair#SEND_QUEUE_FULL} when the whole list does not
     *         fit (nothing posted; the batch is kept)
     * @throws IllegalStateException    when closed or in error, or a destination of the batch was closed
     *                                  after it was added (nothing posted; the batch is kept)
     * @throws IllegalArgumentException when the batch belongs to another queue pair
     * @throws VerbsException when the provider refuses a send (the message says how many were posted)
     */
    public synchronized int post(DatagramBatch batch) {
        check("post a batch", 0);
        if (batch.owner() != this) {
            throw new IllegalArgumentException("the batch belongs to another queue pair");
        }
        batch.recheck("post a batch");
        int n = batch.size();
        if (n == 0) {
            return QueuePair.OK;
        }
        if (!sendQueue.fits(n)) {
            return QueuePair.SEND_QUEUE_FULL;
        }
        batch.checkDestinations(); // under this lock, as Destination.close: none is closed between here and the post
        batch.signal(n - 1, true); // its completion retires the whole list's room
        scratch.set(LONG, BAD_WR, 0L); // a provider that fails without naming the request leaves it unknown, not stale
        int runBefore = sendQueue.run();
        long tailBefore = sendQueue.countingList(batch, n); // before the post: a completion may come at once
        int rc = WorkRequests.post(postSendFn, qpAddress, batch.firstAddress(), scratchAddress + BAD_WR);
        int posted = rc == 0 ? n : batch.postedBefore(scratch.get(LONG, BAD_WR));
        if (rc != 0) {
            // the run left is > 0 only when the provider refused the list's signaled last send
            sendQueue.listRefused(batch, n, posted, tailBefore, runBefore);
        }
        batch.clear();
        if (rc != 0) {
            throw new VerbsException("ibv_post_send", rc, posted + " of " + n + " sends of the batch were posted");
        }
        return QueuePair.OK;
    }

    /**
     * Posts a receive: the first {@link #GRH_BYTES} bytes get the routing header, the rest the message.
     *
     * @param wrId        the caller's id
     * @param local       where it lands
     * @param localOffset offset in {@code local}
     * @param length      room, including the 40-byte header
     * @return {@link QueuePair#OK} or {@link QueuePair#RECEIVE_QUEUE_FULL}
     * @throws IllegalStateException     when closed or in error
     * @throws IllegalArgumentException  when length leaves no room after the header
     * @throws IndexOutOfBoundsException when the range lies outside the buffer
     */
    public synchronized int receive(long wrId, RegisteredBuffer local, long localOffset, int length) {
        check("receive", wrId);
        if (length < GRH_BYTES) {
            throw new IllegalArgumentException("a datagram receive needs at least " + GRH_BYTES
                    + " bytes (the routing header comes first), not " + length);
        }
        local.checkUse(pd, localOffset, length, true, "receive");
        if (recvOutstanding >= depth) {
            return QueuePair.RECEIVE_QUEUE_FULL;
        }
        int rc = WorkRequests.postScratchReceive(scratch, postRecvFn, qpAddress, wrId, local, localOffset, length);
        if (rc != 0) {
            throw VerbsException.of("ibv_post_recv", rc);
        }
        recvOutstanding++;
        return QueuePair.OK;
    }

    private void check(String what, long wrId) {
        ensureOpen(what);
        if (errorText != null) {
            throw new RefusedException(RefusedException.Reason.IN_ERROR, "datagram queue pair " + number + " is in error (" + errorText + "): "
                    + what + " refused");
        }
        if (wrId < 0) {
            throw new IllegalArgumentException("work-request ids are 0 to 2^63-1, not " + wrId);
        }
    }

    @Override
    protected synchronized boolean onCompletion(Completion c, CompletionQueue from) {
        if (c.isSuccess()) {
            if (c.isReceive()) {
                recvOutstanding--;
            } else {
                sendQueue.retireOne();
                if (!retiring.isEmpty()) {
                    destroyRetired();
                }
            }
        } else if (errorText == null) {
            errorText = c.statusName();
        }
        return true;
    }

    /** ibv_create_ah's failure; when this queue pair holds many handles, the likely cause (rxe says EINVAL). */
    private VerbsException addressHandleRefused(int errno) {
        int held = destinations.size();
        if (errno == io.jverbs.ibverbs.Errno.ETIMEDOUT) {
            return new VerbsException("ibv_create_ah", errno, "the peer's address did not resolve to a link-layer"
                    + " (MAC) address in time: RoCE sends to a neighbour the kernel knows; check that the peer's IP"
                    + " is reachable on this device's network interface (ping it, ip neigh)");
        }
        return held < 1024 ? VerbsException.of("ibv_create_ah", errno) : new VerbsException("ibv_create_ah", errno,
                "this queue pair holds " + held + " address handles: the device may hold no more (its max_ah);"
                        + " close the destinations no longer needed");
    }

    private Destination adopt(Destination d) {
        destinations.add(d);
        return d;
    }

    /** {@link Destination#close()}: destroys its handle now, or once the sends posted so far are retired. */
    private synchronized void retire(Destination d) {
        if (d.closed || isClosed()) {
            return;
        }
        d.closed = true;
        d.retireAfter = sendQueue.postedCount();
        retiring.add(d);
        destroyRetired();
    }

    /** Destroys the handles of closed destinations whose earlier sends have all been retired. */
    private void destroyRetired() {
        long retired = sendQueue.retired();
        while (!retiring.isEmpty() && retiring.peekFirst().retireAfter <= retired) {
            Destination d = retiring.pollFirst();
            destinations.remove(d);
            // an error here leaves nothing to undo: the handle is gone from this queue pair either way
            verbs_h.ibv_destroy_ah(d.ah);
        }
    }

    /**
     * Returns how many address handles this queue pair holds: its destinations not closed, and
     * closed ones still waiting for sends posted before their close. A count that only grows in a
     * long-running server is a leak of destinations (see {@link Destination#close()}).
     *
     * @return the handles, 0 after this queue pair closed
     */
    public synchronized int addressHandles() {
        return destinations.size();
    }

    @Override
    public synchronized MemorySegment handle() {
        ensureOpen("use its handle");
        return qp;
    }

    @Override
    protected void beforeDestroy() {
        cq.detach(this);
    }

    @Override
    protected void destroyQueuePair() {
        int rc = verbs_h.ibv_destroy_qp(qp);
        for (Destination d : destinations) {
            verbs_h.ibv_destroy_ah(d.ah);
        }
        destinations.clear();
        retiring.clear();
        arena.close();
        VerbsException.check("ibv_destroy_qp", rc, 0);
    }
}
