package io.jverbs.ibverbs;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Loads rdma-core's libraries and makes the downcall handles that the generated bindings and
 * the inline verbs use.
 *
 * <p>Libraries are loaded by their run-time names ({@code libibverbs.so.1},
 * {@code librdmacm.so.1}) into the global arena, once, and stay loaded for the life of the JVM.
 * A missing library ends in an {@link UnsatisfiedLinkError} that names the package to install.
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
    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(java.lang.foreign.MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    private static final ThreadLocal<MemorySegment> ERRNO_STATE =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(CAPTURE_LAYOUT));
    private static final ConcurrentHashMap<String, SymbolLookup> LIBRARIES = new ConcurrentHashMap<>();
    private static final AtomicBoolean WARNED_NATIVE_ACCESS = new AtomicBoolean();

    private Native() {
    }

    /**
     * Loads a shared library once and returns its symbols.
     *
     * @param soname        the run-time name, such as {@code "libibverbs.so.1"}
     * @param debianPackage the Debian/Ubuntu package that ships it, named in the error
     * @return the library's symbols; the library stays loaded for the life of the JVM
     * @throws UnsatisfiedLinkError  when the library cannot be loaded (the message names the package)
     * @throws IllegalCallerException when native access is denied (the message names the flag)
     */
    public static SymbolLookup load(String soname, String debianPackage) {
        return LIBRARIES.computeIfAbsent(soname, name -> {
            checkNativeAccess();
            try {
                return SymbolLookup.libraryLookup(name, Arena.global());
            } catch (IllegalArgumentException e) {
                UnsatisfiedLinkError error = new UnsatisfiedLinkError("cannot load " + name + " (rdma-core): install it"
                        + " (Debian/Ubuntu: apt-get install " + debianPackage + " ibverbs-providers;"
                        + " Fedora/RHEL: dnf install rdma-core) — " + e.getMessage());
                error.initCause(e);
                throw error;
            } catch (IllegalCallerException e) {
                throw nativeAccessDenied(e);
            }
        });
    }

    /**
     * Returns the symbols of {@code libibverbs.so.1}, loaded on first use.
     *
     * @return the symbols of {@code libibverbs.so.1}, loaded on first use
     * @throws UnsatisfiedLinkError when rdma-core's libibverbs is not installed
     */
    public static SymbolLookup libibverbs() {
        return load("libibverbs.so.1", "libibverbs1");
    }

    /**
     * Makes a downcall handle for an exported function.
     *
     * @param lib          the library's symbols
     * @param libName      the library's name, for the error
     * @param symbol       the C symbol
     * @param descriptor   the C signature
     * @param captureErrno whether errno is captured; the handle then takes this thread's
     *                     {@link #errnoState()} as a leading {@code MemorySegment} argument
     * @return the handle
     * @throws UnsupportedVerbException when the library does not export the symbol (rdma-core too old)
     */
    public static MethodHandle downcall(SymbolLookup lib, String libName, String symbol, FunctionDescriptor descriptor,
                                        boolean captureErrno) {
        MemorySegment address = lib.find(symbol).orElseThrow(() -> new UnsupportedVerbException(symbol,
                "not exported by the installed " + libName + " (rdma-core too old for this verb?)"));
        try {
            return captureErrno ? LINKER.downcallHandle(address, descriptor, CAPTURE_ERRNO)
                                : LINKER.downcallHandle(address, descriptor);
        } catch (IllegalCallerException e) {
            throw nativeAccessDenied(e);
        }
    }

    /**
     * A segment spanning the whole address space, for reading native structs by absolute
     * address without making a segment per read. Reads through it are unchecked: callers must
     * only use addresses of live native objects.
     *
     * @return the segment (global scope, never closed)
     * @throws IllegalCallerException when native access is denied (the message names the flag)
     */
    public static MemorySegment everything() {
        try {
            return MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
        } catch (IllegalCallerException e) {
            throw nativeAccessDenied(e);
        }
    }

    /**
     * Makes an address-less downcall handle, whose first argument is the function's address: how
     * the inline verbs call a provider's function pointer.
     *
     * @param descriptor the C signature
     * @param critical   true only for short calls that never block and never call back into Java
     *                   (post and poll); such a call holds up garbage collection while it runs
     * @return the handle, taking the function address as a leading {@code MemorySegment}
     */
    public static MethodHandle pointerDowncall(FunctionDescriptor descriptor, boolean critical) {
        try {
            return critical ? LINKER.downcallHandle(descriptor, Linker.Option.critical(false))
                            : LINKER.downcallHandle(descriptor);
        } catch (IllegalCallerException e) {
            throw nativeAccessDenied(e);
        }
    }

    /**
     * Makes an address-less ordinary downcall handle that captures errno (for provider functions
     * that return NULL and set errno).
     *
     * @param descriptor the C signature
     * @return the handle, taking the function address and then this thread's {@link #errnoState()}
     */
    public static MethodHandle pointerDowncallCapturingErrno(FunctionDescriptor descriptor) {
        try {
            return LINKER.downcallHandle(descriptor, CAPTURE_ERRNO);
        } catch (IllegalCallerException e) {
            throw nativeAccessDenied(e);
        }
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
        String name = module.isNamed() ? module.getName() + ",io.jverbs.rdmacm" : "ALL-UNNAMED";
        return "--enable-native-access=" + name;
    }

    private static void checkNativeAccess() {
        if (!Native.class.getModule().isNativeAccessEnabled() && WARNED_NATIVE_ACCESS.compareAndSet(false, true)) {
            System.getLogger("io.jverbs").log(System.Logger.Level.WARNING,
                    "jverbs calls native code; native access is not enabled for it. Add " + nativeAccessFlag()
                    + " to the java command line (a future JDK will refuse to run without it)");
        }
    }

    private static IllegalCallerException nativeAccessDenied(IllegalCallerException cause) {
        return new IllegalCallerException("jverbs needs native access: add " + nativeAccessFlag()
                + " to the java command line", cause);
    }

}
