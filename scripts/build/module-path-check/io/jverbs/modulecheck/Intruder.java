package io.jverbs.modulecheck;

import io.jverbs.ibverbs.internal.NativeAccess;
import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.MemorySegment;

/**
 * Direct uses of jverbs' restricted packages. They compile only because the check compiles this
 * module with {@code --add-exports} for those packages; at run time the packages are not exported
 * to this module, so each method must throw {@link IllegalAccessError}.
 */
final class Intruder {
    private Intruder() {
    }

    /** The all-of-memory segment. */
    static long readAnywhere() {
        return NativeAccess.everything().byteSize();
    }

    /** A generated downcall. */
    static MemorySegment callGeneratedDowncall() {
        return verbs_h.ibv_get_device_list(MemorySegment.NULL);
    }
}
