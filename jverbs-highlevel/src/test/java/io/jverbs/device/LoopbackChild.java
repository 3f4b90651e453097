package io.jverbs.device;

import io.jverbs.ibverbs.device.ChildJvm;
import io.jverbs.ibverbs.device.TestDevice;

import java.util.List;

/**
 * The child side of the suites that run one case per JVM ({@link MisuseChildTest},
 * {@link SafetyChildTest}): a loopback connection on the environment's device, the case, and
 * lines the parent reads — {@code PREFIX-ready on DEVICE}, then {@code PREFIX-ok: NAME: what it
 * saw}, {@code PREFIX-unchecked: NAME: …} (the mistake went through) or {@code PREFIX-failed: NAME:
 * …}, then {@code PREFIX-done} — and exit 0 only for ok.
 */
final class LoopbackChild {
    /** One case: what the child does once connected; returns what it saw. */
    @FunctionalInterface
    interface Case {
        String commit(Loopback lb, TestDevice device) throws Exception;
    }

    /** Thrown by a case when the mistake went through (no exception where one was due). */
    static final class Unchecked extends RuntimeException {
        Unchecked(String what) {
            super(what);
        }
    }

    private LoopbackChild() {
    }

    /** Runs {@code c} in this (child) JVM and exits with its status. */
    static void run(String prefix, String name, Case c) throws Exception {
        if (c == null) {
            System.out.println(prefix + "-failed: no such case " + name);
            System.exit(2);
        }
        TestDevice device = TestDevice.fromEnvironment();
        int status = 0;
        try (Loopback lb = new Loopback(device, 4096)) {
            System.out.println(prefix + "-ready on " + device.name());
            try {
                System.out.println(prefix + "-ok: " + name + ": " + c.commit(lb, device));
            } catch (Unchecked u) {
                System.out.println(prefix + "-unchecked: " + name + ": " + u.getMessage());
                status = 1;
            } catch (Throwable t) {
                System.out.println(prefix + "-failed: " + name + ": " + t);
                t.printStackTrace(System.out);
                status = 1;
            }
        }
        System.out.println(prefix + "-done");
        System.out.flush();
        System.exit(status);
    }

    /** The last lines a child printed, for a failure message. */
    static String tail(ChildJvm.Result r) {
        List<String> out = r.output();
        return String.join(" | ", out.subList(Math.max(0, out.size() - 6), out.size()));
    }
}
