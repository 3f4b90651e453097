package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.VerbsException;

import java.lang.foreign.MemorySegment;

/** Turns C results into exceptions that name the verb and errno, the way the bindings report them. */
public final class Checks {
    private Checks() {
    }

    /**
     * @param verb the C name of the call
     * @param ptr  what a pointer-returning verb returned
     * @param size the size of the pointed-to struct
     * @return {@code ptr} resized to {@code size}
     * @throws VerbsException naming the verb and the captured errno when {@code ptr} is NULL
     */
    public static MemorySegment nonNull(String verb, MemorySegment ptr, long size) {
        if (ptr.address() == 0) {
            throw VerbsException.of(verb, Native.lastErrno());
        }
        return ptr.reinterpret(size);
    }

    /**
     * @param verb the C name of the call
     * @param rc   what an int-returning verb returned (0, an errno, or -1 with errno set)
     * @throws VerbsException when {@code rc != 0}
     */
    public static void ok(String verb, int rc) {
        VerbsException.check(verb, rc, Native.lastErrno());
    }
}
