package io.jverbs.ibverbs.internal;

import java.lang.foreign.MemorySegment;

/**
 * The checks the thin layer makes on every pointer argument before a native call, and the
 * messages they throw: one place, shared by {@code InlineVerbs} and {@code RdmaVerbs}.
 *
 * <p>Every check returns the address to pass on. A segment must be native (a heap segment's
 * "address" is an offset into a Java array, which C would take for an address near 0) and its
 * arena open; a heap segment or a NULL pointer is an {@link IllegalArgumentException}, a closed
 * arena an {@link IllegalStateException}. Beyond that:
 * <ul>
 *   <li>a <em>handle</em> (a verbs object that C handed out: qp, cq, context, mr, cm_id…) must be
 *       non-NULL; its size is not checked, since C pointers arrive as zero-length segments;</li>
 *   <li>a <em>struct</em>, an <em>array</em> or a <em>data buffer</em> that the verb reads or
 *       writes must be non-NULL and at least as long as what the verb touches: its byte size is
 *       compared, never widened (no {@code reinterpret}).</li>
 * </ul>
 * The checks are a few compares on fields of the segment, so the data path can afford them; the
 * failure paths, which build the messages, are kept out of line. All methods are thread-safe.
 */
public final class PointerArgs {
    /** The largest length an {@code ibv_sge} can carry ({@code uint32_t}). */
    private static final long MAX_SGE_LENGTH = 0xFFFF_FFFFL;

    private PointerArgs() {
    }

    /**
     * Checks a verbs object passed as a handle: native, alive and non-NULL.
     *
     * @param obj  the handle
     * @param verb the C verb, for the message
     * @param arg  the C argument name, for the message
     * @return its address
     */
    public static long handle(MemorySegment obj, String verb, String arg) {
        long address = nativeAddress(obj, verb, arg);
        if (address == 0) {
            throw isNull(verb, arg);
        }
        return address;
    }

    /**
     * Checks an optional verbs object (C allows NULL): native and alive.
     *
     * @param obj  the handle or {@link MemorySegment#NULL}
     * @param verb the C verb
     * @param arg  the C argument name
     * @return its address, 0 for NULL
     */
    public static long optionalHandle(MemorySegment obj, String verb, String arg) {
        return nativeAddress(obj, verb, arg);
    }

    /**
     * Checks a struct the verb reads or writes: native, alive, non-NULL, at least {@code size} bytes.
     *
     * @param seg  the struct
     * @param size the C {@code sizeof} the verb uses
     * @param type the C type, such as {@code "struct ibv_send_wr"}, for the message
     * @param verb the C verb
     * @param arg  the C argument name
     * @return its address
     */
    public static long struct(MemorySegment seg, long size, String type, String verb, String arg) {
        long address = nativeAddress(seg, verb, arg);
        if (address == 0 | seg.byteSize() < size) { // one branch on the data path; the cause is found when it fails
            throw address == 0 ? isNull(verb, arg) : structTooSmall(seg, size, type, verb, arg);
        }
        return address;
    }

    /**
     * As {@link #struct}, for an argument that C allows to be NULL.
     *
     * @param seg  the struct or {@link MemorySegment#NULL}
     * @param size the C {@code sizeof}
     * @param type the C type
     * @param verb the C verb
     * @param arg  the C argument name
     * @return its address, 0 for NULL
     */
    public static long optionalStruct(MemorySegment seg, long size, String type, String verb, String arg) {
        long address = nativeAddress(seg, verb, arg);
        if (address != 0 && seg.byteSize() < size) {
            throw structTooSmall(seg, size, type, verb, arg);
        }
        return address;
    }

    /**
     * Checks an array of {@code count} elements the verb reads or writes: {@code count >= 0}, and
     * the segment native, alive, non-NULL and at least {@code count × elementSize} bytes.
     *
     * @param seg         the array
     * @param count       the number of elements the verb touches (a C {@code size_t} or {@code int})
     * @param elementSize the C {@code sizeof} of one element, positive
     * @param type        the element's C type
     * @param verb        the C verb
     * @param arg         the C argument name of the array
     * @param countArg    the C argument name of the count
     * @return its address
     */
    public static long array(MemorySegment seg, long count, long elementSize, String type, String verb, String arg,
                             String countArg) {
        if (count < 0) {
            throw negative(count, verb, countArg);
        }
        long address = handle(seg, verb, arg);
        if (count > seg.byteSize() / elementSize) {
            throw arrayTooSmall(seg, count, elementSize, type, verb, arg, countArg);
        }
        return address;
    }

    /**
     * As {@link #array(MemorySegment, long, long, String, String, String, String)} for an {@code int}
     * count (such as {@code ibv_poll_cq}'s), which needs no division: {@code count × elementSize}
     * cannot overflow a {@code long}.
     *
     * @param seg         the array
     * @param count       the number of elements the verb touches
     * @param elementSize the C {@code sizeof} of one element, positive and below 2<sup>31</sup>
     * @param type        the element's C type
     * @param verb        the C verb
     * @param arg         the C argument name of the array
     * @param countArg    the C argument name of the count
     * @return its address
     */
    public static long array(MemorySegment seg, int count, long elementSize, String type, String verb, String arg,
                             String countArg) {
        long address = nativeAddress(seg, verb, arg);
        if (count < 0 | address == 0 | count * elementSize > seg.byteSize()) {
            throw count < 0 ? negative(count, verb, countArg) : address == 0 ? isNull(verb, arg)
                    : arrayTooSmall(seg, count, elementSize, type, verb, arg, countArg);
        }
        return address;
    }

    /**
     * As {@link #array}, except that with {@code count == 0} the array is not read and may be NULL.
     *
     * @param seg         the array, or {@link MemorySegment#NULL} when {@code count == 0}
     * @param count       the number of elements
     * @param elementSize the C {@code sizeof} of one element
     * @param type        the element's C type
     * @param verb        the C verb
     * @param arg         the C argument name of the array
     * @param countArg    the C argument name of the count
     * @return its address (0 only for an empty NULL array)
     */
    public static long arrayOrEmpty(MemorySegment seg, long count, long elementSize, String type, String verb, String arg,
                                    String countArg) {
        if (count == 0) {
            return nativeAddress(seg, verb, arg);
        }
        return array(seg, count, elementSize, type, verb, arg, countArg);
    }

    /**
     * Checks a data buffer of {@code length} bytes: {@code 0 <= length <= seg.byteSize()}, the
     * segment native, alive and non-NULL.
     *
     * @param seg       the buffer
     * @param length    the bytes the verb (or the device) reads or writes
     * @param verb      the C verb
     * @param arg       the C argument name of the buffer
     * @param lengthArg the C argument name of the length
     * @return its address
     */
    public static long bytes(MemorySegment seg, long length, String verb, String arg, String lengthArg) {
        if (length < 0) {
            throw negative(length, verb, lengthArg);
        }
        long address = handle(seg, verb, arg);
        if (length > seg.byteSize()) {
            throw bytesTooMany(seg, length, verb, arg, lengthArg);
        }
        return address;
    }

    /**
     * As {@link #bytes}, for a length that goes into an {@code ibv_sge} ({@code uint32_t}): it must
     * also be below 2<sup>32</sup>.
     *
     * @param seg       the buffer
     * @param length    bytes
     * @param verb      the C verb
     * @param arg       the C argument name of the buffer
     * @param lengthArg the C argument name of the length
     * @return its address
     */
    public static long sgeBytes(MemorySegment seg, long length, String verb, String arg, String lengthArg) {
        if (length > MAX_SGE_LENGTH) {
            throw new IllegalArgumentException(verb + ": " + lengthArg + " " + length
                    + " does not fit an ibv_sge (uint32_t length, below 2^32)");
        }
        return bytes(seg, length, verb, arg, lengthArg);
    }

    /**
     * Refuses a NULL pointer read from a struct (such as {@code rdma_cm_id.qp}).
     *
     * @param address the pointer read
     * @param verb    the C verb
     * @param what    what the pointer is, for the message (such as {@code "the id has no QP"})
     * @return the address
     */
    public static long present(long address, String verb, String what) {
        if (address == 0) {
            throw new IllegalArgumentException(verb + ": " + what);
        }
        return address;
    }

    private static long nativeAddress(MemorySegment seg, String verb, String arg) {
        if (!seg.isNative() | !seg.scope().isAlive()) {
            throw notUsable(seg, verb, arg);
        }
        return seg.address();
    }

    private static RuntimeException notUsable(MemorySegment seg, String verb, String arg) {
        return !seg.isNative() ? heap(verb, arg) : closed(verb, arg);
    }

    private static IllegalArgumentException isNull(String verb, String arg) {
        return new IllegalArgumentException(verb + ": " + arg + " is NULL");
    }

    private static IllegalArgumentException heap(String verb, String arg) {
        return new IllegalArgumentException(verb + ": " + arg + " is a heap segment, which native code cannot use:"
                + " allocate it from an Arena");
    }

    private static IllegalStateException closed(String verb, String arg) {
        return new IllegalStateException(verb + ": " + arg + " belongs to an arena that is already closed");
    }

    private static IllegalArgumentException negative(long count, String verb, String countArg) {
        return new IllegalArgumentException(verb + ": " + countArg + " is " + count + "; it must be >= 0");
    }

    private static IllegalArgumentException structTooSmall(MemorySegment seg, long size, String type, String verb,
                                                           String arg) {
        return new IllegalArgumentException(verb + ": " + arg + " has " + seg.byteSize() + " bytes; sizeof(" + type
                + ") is " + size);
    }

    private static IllegalArgumentException arrayTooSmall(MemorySegment seg, long count, long elementSize, String type,
                                                          String verb, String arg, String countArg) {
        return new IllegalArgumentException(verb + ": " + arg + " has " + seg.byteSize() + " bytes; " + countArg + " "
                + count + " needs " + count + " x sizeof(" + type + ") = " + product(count, elementSize) + " bytes");
    }

    private static String product(long count, long elementSize) {
        long bytes = count * elementSize;
        return Math.multiplyHigh(count, elementSize) != 0 || bytes < 0 ? "more than 2^63" : Long.toString(bytes);
    }

    private static IllegalArgumentException bytesTooMany(MemorySegment seg, long length, String verb, String arg,
                                                         String lengthArg) {
        return new IllegalArgumentException(verb + ": " + lengthArg + " " + length + " is more than the "
                + seg.byteSize() + " bytes of " + arg);
    }
}
