package io.jverbs.modulecheck;

import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.UnsupportedVerbException;
import io.jverbs.rdmacm.RdmaVerbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * jverbs used from a named module on the module path. {@code args[0]} says whether the JVM was
 * started with {@code --enable-native-access=io.jverbs.ibverbs,io.jverbs.rdmacm} ({@code enabled})
 * or without it ({@code disabled}). Prints {@code module-check: OK} when jverbs loaded libibverbs
 * and called into it through the public API, native access is what {@code args[0]} says, and
 * the restricted packages stay out of reach of this module; otherwise the problems, and exits 1.
 * Whether the JVM printed a native-access warning is for the caller to see on stderr. With
 * {@code device DEVICE enabled|thin-only} it runs {@link DeviceCheck} on that device instead,
 * with or without io.jverbs.highlevel in the flag.
 */
public final class Main {
    private static final String FLAG = "--enable-native-access=io.jverbs.ibverbs,io.jverbs.rdmacm";
    private static final List<String> PROBLEMS = new ArrayList<>();

    private Main() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 3 && args[0].equals("device")) {
            // device DEVICE enabled|thin-only: whether io.jverbs.highlevel is in the flag too
            PROBLEMS.addAll(DeviceCheck.run(args[1], args[2].equals("enabled")));
            report(" on " + args[1]);
            return;
        }
        boolean enabled = args.length == 1 && args[0].equals("enabled");
        Module ibverbs = InlineVerbs.class.getModule();
        Module rdmacm = RdmaVerbs.class.getModule();
        Module self = Main.class.getModule();
        check("io.jverbs.ibverbs".equals(ibverbs.getName()), "InlineVerbs is in module " + ibverbs);
        check("io.jverbs.rdmacm".equals(rdmacm.getName()), "RdmaVerbs is in module " + rdmacm);
        check(ibverbs.isNativeAccessEnabled() == enabled, "native access of io.jverbs.ibverbs: " + ibverbs.isNativeAccessEnabled());
        check(rdmacm.isNativeAccessEnabled() == enabled, "native access of io.jverbs.rdmacm: " + rdmacm.isNativeAccessEnabled());
        // This module requires io.jverbs.highlevel, so it is in the layer and the flag jverbs names must include it.
        check((FLAG + ",io.jverbs.highlevel").equals(Native.nativeAccessFlag()), "the flag jverbs names: " + Native.nativeAccessFlag());

        try (Arena arena = Arena.ofConfined()) {
            // Through libibverbs itself: ibv_qp_to_qp_ex reads a verbs_qp's comp_mask only; all zero: not a qp_ex.
            MemorySegment fakeQp = arena.allocate(4096, 64);
            check(InlineVerbs.ibv_qp_to_qp_ex(fakeQp).address() == 0, "ibv_qp_to_qp_ex of a zeroed QP is not NULL");
            // Through the inline verbs: qp->context (offset 0) points to a context whose ops are all empty.
            MemorySegment fakeContext = arena.allocate(4096, 64);
            fakeQp.set(ValueLayout.ADDRESS, 0, fakeContext);
            expectThrown(UnsupportedVerbException.class, () -> InlineVerbs.ibv_post_send(fakeQp, fakeContext, fakeContext),
                    "ibv_post_send on an empty ops table");
        }

        for (String pkg : List.of("io.jverbs.ibverbs.internal", "io.jverbs.ibverbs.raw")) {
            check(!ibverbs.isExported(pkg, self), pkg + " is exported to " + self.getName());
        }
        expectThrown(IllegalAccessError.class, Intruder::readAnywhere, "NativeAccess.everything()");
        expectThrown(IllegalAccessError.class, Intruder::callGeneratedDowncall, "verbs_h.ibv_get_device_list");
        expectThrown(IllegalAccessException.class, () -> {
            try {
                return Class.forName("io.jverbs.ibverbs.internal.NativeAccess").getMethod("everything").invoke(null);
            } catch (ReflectiveOperationException e) {
                throw new Wrapped(e);
            }
        }, "NativeAccess.everything() by reflection");

        // The high-level module exports its API packages, not the internals they share.
        Module highLevel = io.jverbs.Rdma.class.getModule();
        for (String pkg : List.of("io.jverbs", "io.jverbs.cm", "io.jverbs.counters",
                "io.jverbs.latency")) {
            check(highLevel.isExported(pkg, self), pkg + " is not exported to " + self.getName());
        }
        check(!highLevel.isExported("io.jverbs.internal", self), "io.jverbs.internal is exported to " + self.getName());
        expectThrown(IllegalAccessException.class, () -> {
            try {
                return Class.forName("io.jverbs.internal.Fds").getField("POLLFD_BYTES").get(null);
            } catch (ReflectiveOperationException e) {
                throw new Wrapped(e);
            }
        }, "Fds.POLLFD_BYTES by reflection");

        report("");
    }

    /** Prints {@code module-check: OK} (and {@code where}), or the problems and exits 1. */
    private static void report(String where) {
        if (PROBLEMS.isEmpty()) {
            System.out.println("module-check: OK" + where);
        } else {
            PROBLEMS.forEach(p -> System.out.println("module-check: FAILED " + p));
            System.exit(1);
        }
    }

    private static void check(boolean ok, String problem) {
        if (!ok) {
            PROBLEMS.add(problem);
        }
    }

    /** A checked exception carried out of a Supplier. */
    private static final class Wrapped extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Wrapped(Exception cause) {
            super(cause);
        }
    }

    /** Records a problem unless {@code action} throws an {@code expected}. */
    private static void expectThrown(Class<? extends Throwable> expected, Supplier<?> action, String what) {
        Throwable thrown = null;
        try {
            action.get();
        } catch (Wrapped w) {
            thrown = w.getCause();
        } catch (Throwable t) {
            thrown = t;
        }
        check(expected.isInstance(thrown), what + ": expected " + expected.getSimpleName() + ", got " + thrown);
    }
}
