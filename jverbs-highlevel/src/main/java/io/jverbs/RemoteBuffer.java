package io.jverbs;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A peer's registered memory as seen from here: where it is, how long, and the key that lets
 * this side's RDMA Write, Read and atomics reach it. A plain value: exchange it over any channel
 * with {@link #toBytes()} / {@link #fromBytes(byte[])}.
 *
 * @param address the remote virtual address (the peer's I/O virtual address)
 * @param length  bytes, at least 0
 * @param rkey    the remote key
 */
public record RemoteBuffer(long address, long length, int rkey) {
    /** Bytes of {@link #toBytes()}. */
    public static final int BYTES = 4 + 8 + 8 + 4;
    private static final int MAGIC = 0x4a565242; // "JVRB"

    /**
     * Validates.
     *
     * @throws IllegalArgumentException when length is negative or the range wraps around
     */
    public RemoteBuffer {
        if (length < 0 || address + length < address && address + length != 0) {
            throw new IllegalArgumentException("invalid remote buffer: address 0x" + Long.toHexString(address)
                    + ", length " + length);
        }
    }

    /**
     * A part of this buffer.
     *
     * @param offset bytes from the start
     * @param bytes  length of the part
     * @return the part, with the same key
     * @throws IndexOutOfBoundsException when the part is not inside this buffer
     */
    public RemoteBuffer slice(long offset, long bytes) {
        java.util.Objects.checkFromIndexSize(offset, bytes, length);
        return new RemoteBuffer(address + offset, bytes, rkey);
    }

    /**
     * Serializes this value: a magic number, address, length and key, big-endian.
     *
     * @return {@value #BYTES} bytes
     */
    public byte[] toBytes() {
        return ByteBuffer.allocate(BYTES).order(ByteOrder.BIG_ENDIAN).putInt(MAGIC).putLong(address).putLong(length)
                .putInt(rkey).array();
    }

    /**
     * Reads a value written by {@link #toBytes()}.
     *
     * @param bytes exactly {@value #BYTES} bytes
     * @return the remote buffer
     * @throws IllegalArgumentException when the bytes are not a remote buffer (wrong size or magic,
     *                                  negative length)
     */
    public static RemoteBuffer fromBytes(byte[] bytes) {
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException("a remote buffer is " + BYTES + " bytes, got " + bytes.length);
        }
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.BIG_ENDIAN);
        if (b.getInt() != MAGIC) {
            throw new IllegalArgumentException("not a jverbs remote buffer (bad magic)");
        }
        return new RemoteBuffer(b.getLong(), b.getLong(), b.getInt());
    }

    @Override
    public String toString() {
        return "remote buffer " + length + " B at 0x" + Long.toHexString(address) + " rkey 0x" + Integer.toHexString(rkey);
    }
}
