package io.jverbs.ibverbs.testing;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The fake libibverbs provider ({@code fake_provider.c}), compiled once per JVM: fake verbs
 * objects whose ops record the arguments they got. Not thread-safe (one global record).
 */
public final class FakeProvider {
    private static final Linker LINKER = Linker.nativeLinker();
    private static SymbolLookup lookup;

    private FakeProvider() {
    }

    /**
     * Set to the path of an already compiled fake provider (see {@link #library()}) to load it
     * instead of compiling: child JVMs of a test use it, so that they neither pay for gcc nor
     * race each other writing the same file.
     */
    public static final String LIBRARY_PROPERTY = "jverbs.fake.provider";

    private static Path library;

    /** Compiles and loads the fake provider on first use (or loads {@link #LIBRARY_PROPERTY}). */
    public static synchronized SymbolLookup lookup() {
        if (lookup == null) {
            lookup = SymbolLookup.libraryLookup(library(), Arena.global());
        }
        return lookup;
    }

    /** The compiled fake provider: {@link #LIBRARY_PROPERTY} when set, else compiled on first use. */
    public static synchronized Path library() {
        if (library == null) {
            String prebuilt = System.getProperty(LIBRARY_PROPERTY);
            try {
                library = prebuilt != null ? Path.of(prebuilt) : CBuild.sharedLibrary("jverbs_fake_provider",
                        CBuild.resource(FakeProvider.class, "/io/jverbs/ibverbs/fake_provider.c"));
            } catch (Exception e) {
                throw new IllegalStateException("cannot build the fake provider: " + e.getMessage(), e);
            }
        }
        return library;
    }

    /** A handle on a function of the fake provider. */
    public static MethodHandle fn(String name, FunctionDescriptor fd) {
        return LINKER.downcallHandle(lookup().find(name).orElseThrow(), fd);
    }

    /** A fake world: context (with verbs_context), qp, cq, srq, qp_ex, cq_ex. Freed by {@link #close()}. */
    public static final class World implements AutoCloseable {
        private final MemorySegment world;

        /**
         * @param extended whether {@code abi_compat} marks the context as extended
         * @param sz       the {@code verbs_context.sz} to claim, 0 for the real size
         * @param withOps  false leaves every op NULL
         */
        public World(boolean extended, long sz, boolean withOps) {
            this.world = (MemorySegment) call("fake_new", FunctionDescriptor.of(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_INT),
                    extended ? 1 : 0, sz, withOps ? 1 : 0);
        }

        public MemorySegment context() { return get("fake_context"); }
        public MemorySegment qp() { return get("fake_qp"); }
        public MemorySegment cq() { return get("fake_cq"); }
        public MemorySegment srq() { return get("fake_srq"); }
        public MemorySegment qpx() { return get("fake_qpx"); }
        public MemorySegment cqx() { return get("fake_cqx"); }
        public MemorySegment handle() { return world; }

        /**
         * Another object of the world by its C struct name without {@code ibv_}: pd, mr, mw, wq, dm,
         * xrcd, td, flow, flow_action, counters, rwq_ind_table.
         */
        public MemorySegment object(String name) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment found = (MemorySegment) call("fake_object", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS),
                        world, arena.allocateFrom(name));
                if (found.address() == 0) {
                    throw new IllegalArgumentException("the fake world has no " + name);
                }
                return found;
            }
        }

        /** Switches poll_cq and req_notify_cq to ops of an empty CQ that arms without error (both return 0). */
        public void useIdleCq() {
            call("fake_use_idle_cq", FunctionDescriptor.ofVoid(ADDRESS), world);
        }

        /** Switches post_send and poll_cq to the minimal ops the benchmark uses. */
        public void useBenchOps() {
            call("fake_use_bench_ops", FunctionDescriptor.ofVoid(ADDRESS), world);
        }

        private MemorySegment get(String name) {
            return (MemorySegment) call(name, FunctionDescriptor.of(ADDRESS, ADDRESS), world);
        }

        @Override
        public void close() {
            call("fake_free", FunctionDescriptor.ofVoid(ADDRESS), world);
        }
    }

    /** Clears the record of the last call. */
    public static void reset() {
        call("fake_reset", FunctionDescriptor.ofVoid());
    }

    /** The op the provider saw last, such as {@code "post_send"}. */
    public static String lastName() {
        MemorySegment s = (MemorySegment) call("fake_last_name", FunctionDescriptor.of(ADDRESS));
        return s.reinterpret(64).getString(0);
    }

    /** Argument {@code i} of the last call, as a 64-bit value. */
    public static long lastArg(int i) {
        return (long) call("fake_last_arg", FunctionDescriptor.of(JAVA_LONG, JAVA_INT), i);
    }

    /** How many arguments the last op recorded. */
    public static int lastArgCount() {
        return (int) call("fake_last_nargs", FunctionDescriptor.of(JAVA_INT));
    }

    /** The value an op named {@code name} returns (the sum of its name's bytes). */
    public static int expected(String name) {
        int h = 0;
        for (byte b : name.getBytes(java.nio.charset.StandardCharsets.US_ASCII)) {
            h += b & 0xff;
        }
        return h;
    }

    private static Object call(String name, FunctionDescriptor fd, Object... args) {
        try {
            return fn(name, fd).invokeWithArguments(args);
        } catch (Throwable t) {
            throw new IllegalStateException(name + ": " + t, t);
        }
    }
}
