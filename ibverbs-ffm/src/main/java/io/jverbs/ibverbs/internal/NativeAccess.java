package io.jverbs.ibverbs.internal;

import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.UnsupportedVerbException;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.MutableCallSite;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The restricted powers of jverbs — loading libraries, making downcall handles, reading memory by
 * absolute address — kept out of the public API. This package is exported only to jverbs' own
 * modules, so a module that was never granted native access cannot use jverbs to obtain an
 * all-of-memory segment or a call-any-address handle.
 *
 * <p>Libraries are loaded by their run-time names into the global arena, once, and stay loaded
 * for the life of the JVM. All methods are thread-safe.
 */
public final class NativeAccess {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    private static final ConcurrentHashMap<String, SymbolLookup> LIBRARIES = new ConcurrentHashMap<>();
    private static final AtomicBoolean WARNED_NATIVE_ACCESS = new AtomicBoolean();

    private NativeAccess() {
    }

    /**
     * Loads a shared library once and returns its symbols.
     *
     * @param soname        the run-time name, such as {@code "libibverbs.so.1"}
     * @param debianPackage the Debian/Ubuntu package that ships it, named in the error
     * @return the library's symbols; the library stays loaded for the life of the JVM
     * @throws UnsatisfiedLinkError   when the library cannot be loaded (the message names the package)
     * @throws IllegalCallerException when native access is denied (the message names the flag)
     */
    public static SymbolLookup load(String soname, String debianPackage) {
        return LIBRARIES.computeIfAbsent(soname, name -> {
            checkArchitecture(System.getProperty("os.name"), System.getProperty("os.arch"));
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

    /** Where the generated layouts were made and checked against the C compiler (ibverbs-ffm's layout test). */
    static final java.util.Set<String> CHECKED_ARCHITECTURES = java.util.Set.of("amd64", "x86_64");

    /**
     * Refuses to load rdma-core where jverbs' generated struct layouts were never checked: they
     * were generated from the x86-64 headers, and another ABI may place fields elsewhere, so a
     * call would read or write the wrong bytes.
     *
     * @param os   the {@code os.name} property
     * @param arch the {@code os.arch} property
     * @throws UnsupportedOperationException on another OS or architecture, naming the checked ones
     */
    static void checkArchitecture(String os, String arch) {
        if (!"Linux".equals(os) || !CHECKED_ARCHITECTURES.contains(arch)) {
            throw new UnsupportedOperationException("jverbs runs on Linux x86-64 (amd64) only, where its generated"
                    + " struct layouts were checked against the C headers; this is " + os + " " + arch + ". Another"
                    + " architecture needs the generator (scripts/build/gen-bindings) and the layout test run on it first");
        }
    }

    /**
     * Returns the symbols of {@code libibverbs.so.1}, loaded on first use.
     *
     * @return the symbols of {@code libibverbs.so.1}
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
     *                     {@link Native#errnoState()} as a leading {@code MemorySegment} argument
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
     * @param critical   true only for short calls that never block, never wait on a lock that
     *                   another Java thread can hold, and never call back into Java (post and
     *                   poll); such a call holds up safepoints while it runs
     * @return the handle, taking the function address as a leading {@code MemorySegment}
     */
    public static MethodHandle pointerDowncall(FunctionDescriptor descriptor, boolean critical) {
        try {
            return LINKER.downcallHandle(descriptor, options(critical));
        } catch (IllegalCallerException e) {
            throw nativeAccessDenied(e);
        }
    }

    /**
     * Makes a function-pointer downcall like {@link #pointerDowncall} that can be compiled as a
     * call to a constant address: see {@link PinnedDowncall}.
     *
     * @param descriptor the C signature
     * @param critical   as for {@link #pointerDowncall}
     * @return the downcall; its {@link PinnedDowncall#invoker()} takes the function address first
     * @throws IllegalCallerException when native access is denied (the message names the flag)
     */
    public static PinnedDowncall pinnableDowncall(FunctionDescriptor descriptor, boolean critical) {
        try {
            return new PinnedDowncall(descriptor, options(critical));
        } catch (IllegalCallerException e) {
            throw nativeAccessDenied(e);
        }
    }

    private static Linker.Option[] options(boolean critical) {
        return critical ? new Linker.Option[] {Linker.Option.critical(false)} : new Linker.Option[0];
    }

    /**
     * A function-pointer downcall that the JIT compiles as a call to a constant address. A process
     * almost always calls one provider through each data-path entry point (rxe's post_send,
     * mlx5's poll_cq), and a downcall whose address is bound into the handle skips, once
     * compiled, the per-call handling of the address argument (its NULL check, its scope's
     * acquire and release): about 1.5 ns a call on the JMH fake provider.
     *
     * <p>{@link #invoker()} is a {@link MutableCallSite}'s invoker, address-less until
     * {@link #pin} names the address to bind; from then on it is a guard: that address, bound, when
     * a call's address equals it, the address-less handle for any other. Every target is correct
     * for every address, so a second provider only takes the slower branch.
     *
     * <p>Pinning changes the call site's target, a VM operation that may wait for every thread to
     * reach a safepoint, so it is done when a queue is made, never lazily inside a post or a poll:
     * a thread there may hold a provider's lock that another thread spins on inside a critical
     * downcall, which holds up safepoints (the deadlock {@code ProviderLockSafepointTest} guards).
     * Thread-safe; the first {@link #pin} wins.
     */
    public static final class PinnedDowncall {
        private static final MethodHandle SAME_ADDRESS;

        static {
            try {
                SAME_ADDRESS = MethodHandles.lookup().findStatic(PinnedDowncall.class, "sameAddress",
                        MethodType.methodType(boolean.class, long.class, MemorySegment.class));
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private final FunctionDescriptor descriptor;
        private final Linker.Option[] options;
        private final MethodHandle unbound;
        private final MutableCallSite site;
        private final MethodHandle invoker;
        private final AtomicBoolean pinned = new AtomicBoolean();

        private PinnedDowncall(FunctionDescriptor descriptor, Linker.Option[] options) {
            this.descriptor = descriptor;
            this.options = options;
            this.unbound = LINKER.downcallHandle(descriptor, options);
            this.site = new MutableCallSite(unbound);
            this.invoker = site.dynamicInvoker();
        }

        /**
         * The handle to call: the function address first, then the C arguments. Keep it in a
         * {@code static final} field, so the JIT sees the call site.
         *
         * @return the invoker, the same for the life of this object
         */
        public MethodHandle invoker() {
            return invoker;
        }

        /**
         * Binds {@code function} as the constant address, if no address was bound before. Call it
         * where no provider lock is held (when a queue is made).
         *
         * @param function a provider entry point (native, not NULL; anything else is ignored)
         */
        public void pin(MemorySegment function) {
            if (function == null || !function.isNative() || function.address() == 0
                    || !pinned.compareAndSet(false, true)) {
                return;
            }
            MethodHandle bound = MethodHandles.dropArguments(LINKER.downcallHandle(function, descriptor, options), 0,
                    MemorySegment.class);
            MethodHandle test = MethodHandles.insertArguments(SAME_ADDRESS, 0, function.address());
            site.setTarget(MethodHandles.guardWithTest(test, bound, unbound));
        }

        private static boolean sameAddress(long pinnedAddress, MemorySegment function) {
            return function.address() == pinnedAddress && function.isNative();
        }
    }

    /**
     * Makes an address-less ordinary downcall handle that captures errno (for provider functions
     * that return NULL and set errno).
     *
     * @param descriptor the C signature
     * @return the handle, taking the function address and then this thread's {@link Native#errnoState()}
     */
    public static MethodHandle pointerDowncallCapturingErrno(FunctionDescriptor descriptor) {
        try {
            return LINKER.downcallHandle(descriptor, CAPTURE_ERRNO);
        } catch (IllegalCallerException e) {
            throw nativeAccessDenied(e);
        }
    }

    private static void checkNativeAccess() {
        if (!NativeAccess.class.getModule().isNativeAccessEnabled() && WARNED_NATIVE_ACCESS.compareAndSet(false, true)) {
            System.getLogger("io.jverbs").log(System.Logger.Level.WARNING,
                    "jverbs calls native code; native access is not enabled for it. Add " + Native.nativeAccessFlag()
                    + " to the java command line (a future JDK will refuse to run without it)");
        }
    }

    private static IllegalCallerException nativeAccessDenied(IllegalCallerException cause) {
        return new IllegalCallerException("jverbs needs native access: add " + Native.nativeAccessFlag()
                + " to the java command line", cause);
    }
}
