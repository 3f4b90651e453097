package io.jverbs.cm;

import io.jverbs.Access;
import io.jverbs.QueuePair;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * What one side of an rdma_cm connection tells the other in the handshake itself (the private
 * data of the connection request and of its reply): remote buffers it opens to the peer, with
 * their rights, and a few bytes of the application's. The peer has them as soon as the
 * connection exists ({@link CmConnection#peerHandshake()}), with no message of its own.
 *
 * <p>Room is the transport's: a connection request carries {@value #MAX_CONNECT_BYTES} bytes of
 * private data, the reply {@value #MAX_ACCEPT_BYTES} (InfiniBand CM, as rdma_cm uses it on RoCE and
 * InfiniBand). jverbs takes 4 of them for its header and {@value RemoteBuffer#BYTES} per buffer,
 * so a connecting side can offer 2 buffers (and 2 bytes) or 52 bytes, an accepting side 7 buffers
 * (and 17 bytes) or 192 bytes. Private data a peer that is not jverbs sent comes back as
 * {@link #data()} unparsed (padded with zeros to the transport's size).
 *
 * <p>Thread-safe (immutable).
 */
public final class Handshake {
    /** Bytes of private data a connection request carries. */
    public static final int MAX_CONNECT_BYTES = 56;
    /** Bytes of private data the reply to a connection request carries. */
    public static final int MAX_ACCEPT_BYTES = 196;
    private static final int HEADER = 4;
    private static final byte MARK = 0x4a; // 'J'
    private static final byte VERSION = 1;
    /** The version byte of a reply after which the accepting side sends a ready message. */
    private static final byte VERSION_READY = 2;
    private static final Handshake EMPTY = new Handshake(List.of(), new byte[0]);

    private final List<RemoteBuffer> buffers;
    private final byte[] data;
    /** The accepting side sends one message once its queue pair takes requests (see {@link Connection}). */
    private final boolean readyFollows;

    private Handshake(List<RemoteBuffer> buffers, byte[] data) {
        this(buffers, data, false);
    }

    private Handshake(List<RemoteBuffer> buffers, byte[] data, boolean readyFollows) {
        this.buffers = List.copyOf(buffers);
        this.data = data.clone();
        this.readyFollows = readyFollows;
    }

    /** This handshake, telling the peer that a ready message follows the connection's establishment. */
    Handshake withReadyFollows() {
        return new Handshake(buffers, data, true);
    }

    /** Whether the peer sends a ready message once its queue pair takes requests. */
    boolean readyFollows() {
        return readyFollows;
    }

    /** A handshake the application made: it must fit at least a reply's private data. */
    private static Handshake made(List<RemoteBuffer> buffers, byte[] data) {
        Handshake h = new Handshake(buffers, data);
        h.requireFits(MAX_ACCEPT_BYTES, "either side's private data (a reply, the larger)");
        return h;
    }

    /**
     * Returns a handshake that says nothing.
     *
     * @return the empty handshake
     */
    public static Handshake empty() {
        return EMPTY;
    }

    /**
     * Returns a handshake that opens {@code buffers} to the peer.
     *
     * @param buffers remote buffers (typically {@link RegisteredBuffer#remote()}), with their rights
     * @return the handshake
     * @throws IllegalArgumentException when more than 7 buffers are given: no private data holds them
     * @throws NullPointerException     when a buffer is null
     */
    public static Handshake offering(RemoteBuffer... buffers) {
        return made(Arrays.asList(buffers), new byte[0]);
    }

    /**
     * Returns a handshake with the application's bytes and buffers.
     *
     * @param data    the application's bytes, within the room left by the buffers: a reply carries
     *                192 bytes of data with no buffer, a request 52
     * @param buffers remote buffers to open to the peer
     * @return the handshake
     * @throws IllegalArgumentException when {@code data} with the buffers exceeds {@value #MAX_ACCEPT_BYTES} bytes (a
     *                                  connecting side's limit, {@value #MAX_CONNECT_BYTES}, is
     *                                  checked by {@link Connection#connect} before it sends)
     */
    public static Handshake of(byte[] data, RemoteBuffer... buffers) {
        if (data.length > MAX_ACCEPT_BYTES - HEADER) {
            throw new IllegalArgumentException("handshake data of " + data.length + " bytes does not fit: a reply"
                    + " carries at most " + (MAX_ACCEPT_BYTES - HEADER) + " bytes of data, a request "
                    + (MAX_CONNECT_BYTES - HEADER) + " (each less " + RemoteBuffer.BYTES + " per buffer offered);"
                    + " send more after the connection is made");
        }
        return made(Arrays.asList(buffers), data);
    }

    /**
     * Returns the buffers the side opened.
     *
     * @return unmodifiable, in the order given
     */
    public List<RemoteBuffer> buffers() {
        return buffers;
    }

    /**
     * Returns the application's bytes.
     *
     * @return a copy
     */
    public byte[] data() {
        return data.clone();
    }

    /**
     * Returns the bytes this handshake takes in the private data.
     *
     * @return 0 for the empty handshake, else the header, the buffers and the data
     */
    public int encodedBytes() {
        return this == EMPTY || buffers.isEmpty() && data.length == 0 && !readyFollows ? 0
                : HEADER + buffers.size() * RemoteBuffer.BYTES + data.length;
    }

    /** The private data, or null when there is nothing to say; refused when over {@code limit}. */
    byte[] encode(int limit, String where) {
        int size = encodedBytes();
        if (size == 0) {
            return null;
        }
        requireFits(limit, where);
        ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.BIG_ENDIAN);
        b.put(MARK).put(readyFollows ? VERSION_READY : VERSION).put((byte) buffers.size()).put((byte) data.length);
        for (RemoteBuffer r : buffers) {
            b.put(r.toBytes());
        }
        b.put(data);
        return b.array();
    }

    /** Refuses a handshake over {@code limit} bytes, naming what it takes and where it was to go. */
    void requireFits(int limit, String where) {
        int size = encodedBytes();
        if (size > limit) {
            throw new IllegalArgumentException("the handshake takes " + size + " bytes (" + buffers.size()
                    + " buffers of " + RemoteBuffer.BYTES + ", " + data.length + " bytes of data, a header of " + HEADER
                    + "), but " + where + " carries at most " + limit);
        }
    }

    /**
     * Refuses an offer {@code qp}'s peer could not use: memory that is not an open buffer of the
     * queue pair's domain (or a window bound on it), or rights the queue pair does not give peers.
     * The peer's first operation on it would fail its own queue pair (a remote access error), far
     * from the cause.
     */
    void requireGrantedBy(QueuePair qp) {
        Set<Access> granted = qp.remoteAccess();
        for (RemoteBuffer r : buffers) {
            String problem = Core.offerProblem(qp, r);
            if (problem != null && problem.startsWith("the buffer's own rkey")) {
                throw new IllegalArgumentException("the handshake offers " + r + " to a peer of queue pair "
                        + qp.number() + ", but " + problem);
            }
            if (problem != null) {
                throw new IllegalArgumentException("the handshake offers " + r + ", which a peer of queue pair "
                        + qp.number() + " cannot use: " + problem + ". A peer's request would fail with a remote"
                        + " access error; offer a buffer registered in the queue pair's protection domain");
            }
            if (!granted.containsAll(r.rights())) {
                throw new IllegalArgumentException("the handshake offers " + r + ", but queue pair " + qp.number()
                        + " lets a peer do only " + granted + ": a peer's request with the rest would fail with a"
                        + " remote access error. Offer fewer rights, register the buffer with them, or widen"
                        + " QueuePairConfig.withRemoteAccess");
            }
        }
    }

    /** What the peer sent: parsed when it is jverbs' frame, else its bytes as data. */
    static Handshake decode(byte[] privateData) {
        if (privateData == null || privateData.length == 0) {
            return EMPTY;
        }
        ByteBuffer b = ByteBuffer.wrap(privateData).order(ByteOrder.BIG_ENDIAN);
        byte version = privateData.length < HEADER || b.get() != MARK ? 0 : b.get();
        if (version != VERSION && version != VERSION_READY) {
            return new Handshake(List.of(), privateData);
        }
        int n = b.get() & 0xff;
        int u = b.get() & 0xff;
        if (HEADER + n * RemoteBuffer.BYTES + u > privateData.length) {
            return new Handshake(List.of(), privateData);
        }
        List<RemoteBuffer> buffers = new ArrayList<>(n);
        try {
            for (int i = 0; i < n; i++) {
                byte[] raw = new byte[RemoteBuffer.BYTES];
                b.get(raw);
                buffers.add(RemoteBuffer.fromBytes(raw));
            }
        } catch (IllegalArgumentException notOurs) {
            return new Handshake(List.of(), privateData);
        }
        byte[] data = new byte[u];
        b.get(data);
        return new Handshake(buffers, data, version == VERSION_READY);
    }

    @Override
    public String toString() {
        return "handshake " + buffers + (data.length == 0 ? "" : " and " + data.length + " bytes");
    }
}
