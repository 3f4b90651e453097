package io.jverbs;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * A peer's registered memory as seen from here: where it is, how long, the key that lets this
 * side's RDMA Write, Read and atomics reach it, and the rights the peer granted. A plain,
 * immutable value: exchange it over any channel with {@link #toBytes()} /
 * {@link #fromBytes(byte[])}, or in the rdma_cm handshake.
 *
 * <p>A post that the rights forbid (an RDMA Read of a buffer granted only
 * {@link Access#REMOTE_WRITE}, say) is refused with an {@link IllegalArgumentException} before it
 * reaches the device, which would otherwise fail the request and the queue pair with it. A value
 * made with the three-argument constructor (a buffer learned from a peer that does not say its
 * rights, such as C perftest) assumes every right and leaves the check to the device.
 *
 * <p>Thread-safe (immutable).
 */
public final class RemoteBuffer {
    /** Bytes of {@link #toBytes()}. */
    public static final int BYTES = 4 + 8 + 8 + 4 + 1;
    private static final int MAGIC = 0x4a565243; // "JVRC"
    private static final Set<Access> ALL = Collections.unmodifiableSet(EnumSet.allOf(Access.class));

    private final long address;
    private final long length;
    private final int rkey;
    private final Set<Access> rights;
    /** {@link #rights} as verbs access bits, for the posting check. */
    private final int rightsMask;

    /**
     * A remote buffer whose rights are not known: every right is assumed.
     *
     * @param address the remote virtual address (the peer's I/O virtual address)
     * @param length  bytes, at least 0
     * @param rkey    the remote key
     * @throws IllegalArgumentException when length is negative or the range wraps around
     */
    public RemoteBuffer(long address, long length, int rkey) {
        this(address, length, rkey, ALL);
    }

    /**
     * A remote buffer with the rights the peer granted on it.
     *
     * @param address the remote virtual address (the peer's I/O virtual address)
     * @param length  bytes, at least 0
     * @param rkey    the remote key
     * @param rights  what this side may do there
     * @throws IllegalArgumentException when length is negative or the range wraps around
     * @throws NullPointerException     when {@code rights} is null
     */
    public RemoteBuffer(long address, long length, int rkey, Set<Access> rights) {
        // unsigned: an address is a 64-bit unsigned number; a range may end exactly at 2^64
        if (length < 0 || Long.compareUnsigned(address + length, address) < 0 && address + length != 0) {
            throw new IllegalArgumentException("invalid remote buffer: address 0x" + Long.toHexString(address)
                    + ", length " + length);
        }
        this.address = address;
        this.length = length;
        this.rkey = rkey;
        this.rights = rights.isEmpty() ? Collections.unmodifiableSet(EnumSet.noneOf(Access.class))
                : Collections.unmodifiableSet(EnumSet.copyOf(rights));
        this.rightsMask = Access.flags(this.rights, false);
    }

    /**
     * Returns the remote virtual address.
     *
     * @return the peer's I/O virtual address of the first byte
     */
    public long address() {
        return address;
    }

    /**
     * Returns the length.
     *
     * @return bytes
     */
    public long length() {
        return length;
    }

    /**
     * Returns the remote key.
     *
     * @return the rkey
     */
    public int rkey() {
        return rkey;
    }

    /**
     * Returns the rights the peer granted.
     *
     * @return an unmodifiable set
     */
    public Set<Access> rights() {
        return rights;
    }

    /**
     * Throws unless the rights allow {@code needed} (a verbs access bit); the posting check.
     *
     * @param needed    {@code IBV_ACCESS_REMOTE_WRITE}, {@code _READ} or {@code _ATOMIC}
     * @param operation what the caller tried, for the message
     */
    void requireRight(int needed, String operation) {
        if ((rightsMask & needed) == 0) {
            throw new IllegalArgumentException(operation + " refused: " + this + " grants only " + rights
                    + " (the device would fail the request and the queue pair with it)");
        }
    }

    /**
     * A part of this buffer.
     *
     * @param offset bytes from the start
     * @param bytes  length of the part
     * @return the part, with the same key and rights (the peer's memory window, not a narrower
     *         key: the key still reaches the whole registered region)
     * @throws IndexOutOfBoundsException when the part is not inside this buffer
     */
    public RemoteBuffer slice(long offset, long bytes) {
        Objects.checkFromIndexSize(offset, bytes, length);
        return new RemoteBuffer(address + offset, bytes, rkey, rights);
    }

    /**
     * Serializes this value: a magic number, address, length, key and rights, big-endian.
     *
     * @return {@value #BYTES} bytes
     */
    public byte[] toBytes() {
        return write(ByteBuffer.allocate(BYTES).order(ByteOrder.BIG_ENDIAN)).array();
    }

    /** Writes the {@value #BYTES} bytes of {@link #toBytes()} at the buffer's position. */
    ByteBuffer write(ByteBuffer b) {
        return b.putInt(MAGIC).putLong(address).putLong(length).putInt(rkey).put((byte) rightsBits());
    }

    private int rightsBits() {
        int bits = 0;
        for (Access a : rights) {
            bits |= 1 << a.ordinal();
        }
        return bits;
    }

    /**
     * Reads a value written by {@link #toBytes()}.
     *
     * @param bytes exactly {@value #BYTES} bytes
     * @return the remote buffer
     * @throws IllegalArgumentException when the bytes are not a remote buffer (wrong size or magic,
     *                                  negative length, unknown rights)
     */
    public static RemoteBuffer fromBytes(byte[] bytes) {
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException("a remote buffer is " + BYTES + " bytes, got " + bytes.length);
        }
        return read(ByteBuffer.wrap(bytes).order(ByteOrder.BIG_ENDIAN));
    }

    /** Reads {@value #BYTES} bytes at the buffer's position. */
    static RemoteBuffer read(ByteBuffer b) {
        if (b.getInt() != MAGIC) {
            throw new IllegalArgumentException("not a jverbs remote buffer (bad magic)");
        }
        long address = b.getLong();
        long length = b.getLong();
        int rkey = b.getInt();
        int bits = b.get() & 0xff;
        if ((bits & ~((1 << Access.values().length) - 1)) != 0) {
            throw new IllegalArgumentException("not a jverbs remote buffer (unknown rights 0x" + Integer.toHexString(bits) + ")");
        }
        Set<Access> rights = EnumSet.noneOf(Access.class);
        for (Access a : Access.values()) {
            if ((bits & 1 << a.ordinal()) != 0) {
                rights.add(a);
            }
        }
        return new RemoteBuffer(address, length, rkey, rights);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RemoteBuffer r && r.address == address && r.length == length && r.rkey == rkey
                && r.rights.equals(rights);
    }

    @Override
    public int hashCode() {
        return Objects.hash(address, length, rkey, rights);
    }

    @Override
    public String toString() {
        return "remote buffer " + length + " B at 0x" + Long.toHexString(address) + " rkey 0x" + Integer.toHexString(rkey)
                + " " + rights;
    }
}
