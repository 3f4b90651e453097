package io.jverbs.ibverbs;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.VarHandle;

/**
 * errno and native access: what every caller of the thin bindings may need to know about the
 * native side. (Loading libraries and making downcall handles are jverbs-internal: they are
 * restricted powers, and no exported package hands them out.)
 *
 * <p>rdma-core's libraries are loaded by their run-time names ({@code libibverbs.so.1},
 * {@code librdmacm.so.1}) on first use and stay loaded for the life of the JVM. A missing
 * library ends in an {@link UnsatisfiedLinkError} that names the package to install.
 * Native access must be enabled for the module that holds jverbs
 * ({@code --enable-native-access=io.jverbs.ibverbs,io.jverbs.rdmacm} on the module path,
 * {@code --enable-native-access=ALL-UNNAMED} on the class path); when the JVM refuses it the
 * error names the exact flag, and when it merely warns, jverbs logs the flag once.
 *
 * <p>errno: handles made with {@code captureErrno} capture errno into this thread's
 * {@link #errnoState()} segment; {@link #lastErrno()} reads it. The segment is allocated on a
 * thread's first capturing call (a few bytes of native memory, freed by the garbage collector
 * once the thread is gone), so a virtual thread per request pays one small allocation per
 * request that makes such a call; the data path (post and poll) captures nothing.
 * All methods are thread-safe.
 */
public final class Native {
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(java.lang.foreign.MemoryLayout.PathElement.groupElement("errno"));
    private static final ThreadLocal<MemorySegment> ERRNO_STATE =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(CAPTURE_LAYOUT));

    private Native() {
    }

    /**
     * Returns this thread's errno capture segment, allocated on the thread's first use and freed.
     *
     * @return this thread's errno capture segment, allocated on the thread's first use and freed
     *         when the thread is gone; pass it to handles made with {@code captureErrno}
     */
    public static MemorySegment errnoState() {
        return ERRNO_STATE.get();
    }

    /**
     * Returns the errno captured by this thread's last capturing downcall (0 when none yet).
     *
     * @return the errno captured by this thread's last capturing downcall (0 when none yet)
     */
    public static int lastErrno() {
        return (int) ERRNO.get(ERRNO_STATE.get(), 0L);
    }

    /**
     * Sets this thread's recorded errno, as C code does with {@code errno = ret}: for helpers that
     * re-implement header code reporting through errno (such as rdma_verbs.h's {@code rdma_seterrno}).
     *
     * @param errno the value {@link #lastErrno()} returns next on this thread
     */
    public static void setLastErrno(int errno) {
        ERRNO.set(ERRNO_STATE.get(), 0L, errno);
    }

    /**
     * Returns the {@code --enable-native-access=} value this code needs where it runs now.
     *
     * @return the {@code --enable-native-access=} value this code needs where it runs now
     */
    public static String nativeAccessFlag() {
        Module module = Native.class.getModule();
        if (!module.isNamed()) {
            return "--enable-native-access=ALL-UNNAMED";
        }
        // jverbs-highlevel reinterprets C pointers (a restricted method) itself: name it when it is there.
        ModuleLayer layer = module.getLayer() != null ? module.getLayer() : ModuleLayer.boot();
        boolean highLevel = layer.findModule("io.jverbs.highlevel").isPresent();
        return "--enable-native-access=" + module.getName() + ",io.jverbs.rdmacm" + (highLevel ? ",io.jverbs.highlevel" : "");
    }

}
