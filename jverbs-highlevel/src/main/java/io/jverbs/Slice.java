package io.jverbs;

/**
 * A range of a registered buffer as one value: the local side of the slice-taking operations of
 * {@link QueuePair} ({@link Async#write(Slice, RemoteBuffer)},
 * {@link Async#read(Slice, RemoteBuffer)}, …), whose remote side is a
 * {@link RemoteBuffer} of the same length ({@link RemoteBuffer#slice}). With both ranges as
 * values, an offset cannot land in the wrong argument and a length cannot disagree with itself.
 * These calls are the safe form; the primitive overloads ({@code write(long wrId, …)}) are the
 * zero-allocation form for hot loops.
 *
 * <p>Made by {@link RegisteredBuffer#slice(long, int)}, which checks the range once; the buffer's
 * open state is checked again at each post. Immutable and thread-safe; it holds no native memory
 * and stays usable as long as its buffer is open.
 *
 * @param buffer the registered buffer
 * @param offset the first byte, from the start of {@code buffer}
 * @param length the bytes
 */
public record Slice(RegisteredBuffer buffer, long offset, int length) {
    /**
     * Checks the range.
     *
     * @throws NullPointerException      when {@code buffer} is null
     * @throws IndexOutOfBoundsException when the range lies outside the buffer
     */
    public Slice {
        java.util.Objects.requireNonNull(buffer, "buffer");
        java.util.Objects.checkFromIndexSize(offset, length, buffer.length());
    }

    /**
     * A sub-range of this slice.
     *
     * @param from  bytes from this slice's start
     * @param bytes the sub-range's length
     * @return the sub-range
     * @throws IndexOutOfBoundsException when it lies outside this slice
     */
    public Slice slice(long from, int bytes) {
        java.util.Objects.checkFromIndexSize(from, bytes, length);
        return new Slice(buffer, offset + from, bytes);
    }

    /** The remote range's length must be this slice's: the operation moves exactly that many bytes. */
    void requireSameLength(RemoteBuffer remote, String operation) {
        if (remote.length() != length) {
            throw new IllegalArgumentException(operation + ": the local slice has " + length + " bytes but the remote"
                    + " range " + remote.length() + "; slice the remote buffer to the same length (RemoteBuffer.slice)");
        }
    }
}
