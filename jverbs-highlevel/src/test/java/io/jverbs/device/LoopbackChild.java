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
            status = commit(prefix, name, c, lb, device);
        }
        System.out.println(prefix + "-done");
        System.out.flush();
        System.exit(status);
    }

    /** Commits one case and prints its verdict line; returns 0 for ok, 1 otherwise. */
    private static int commit(String prefix, String name, Case c, Loopback lb, TestDevice device) {
        try {
            System.out.println(prefix + "-ok: " + name + ": " + c.commit(lb, device));
            return 0;
        } catch (Unchecked u) {
            System.out.println(prefix + "-unchecked: " + name + ": " + u.getMessage());
        } catch (Throwable t) {
            System.out.println(prefix + "-failed: " + name + ": " + t);
            t.printStackTrace(System.out);
        }
        return 1;
    }

    /**
     * Runs several cases one after another in this (child) JVM, each on a loopback of its own,
     * for cases whose point is what a peer or a default does, not a crash of their JVM. Each
     * prints {@code PREFIX-case: NAME} and {@code PREFIX-ready on DEVICE} before it (the parent's
     * work deadline starts anew at each ready line), then its verdict line as {@link #run} does;
     * {@code PREFIX-done} follows the last. Exits 0 only when every case was ok.
     */
    static void runTogether(String prefix, List<String> names, java.util.Map<String, Case> cases) throws Exception {
        TestDevice device = TestDevice.fromEnvironment();
        int status = 0;
        for (String name : names) {
            Case c = cases.get(name);
            System.out.println(prefix + "-case: " + name);
            if (c == null) {
                System.out.println(prefix + "-failed: " + name + ": no such case");
                status = 1;
                continue;
            }
            try (Loopback lb = new Loopback(device, 4096)) {
                System.out.println(prefix + "-ready on " + device.name());
                status |= commit(prefix, name, c, lb, device);
            } catch (Throwable t) { // the loopback itself failed
                System.out.println(prefix + "-failed: " + name + ": " + t);
                t.printStackTrace(System.out);
                status = 1;
            }
        }
        System.out.println(prefix + "-done");
        System.out.flush();
        System.exit(status);
    }

    /**
     * Runs {@code names} through children that each run several of them ({@link #runTogether}),
     * and returns one result per name, as if each had had a child of its own: a case's lines are
     * those from its {@code PREFIX-case} line to the next, then {@code PREFIX-done}. When a child
     * dies or hangs inside a case, that case gets the child's ending (its exit status, or the
     * deadline that passed), and the cases after it run in a new child.
     *
     * @param command the child's command for a list of names
     */
    static java.util.Map<String, ChildJvm.Result> together(String prefix, List<String> names,
            java.util.function.Function<List<String>, List<String>> command, java.time.Duration startup,
            java.time.Duration work, String label) throws Exception {
        java.util.Map<String, ChildJvm.Result> results = new java.util.LinkedHashMap<>();
        List<String> left = names;
        while (!left.isEmpty()) {
            ChildJvm.Result r = ChildJvm.run(command.apply(left), prefix + "-ready", startup, work, label);
            java.util.Map<String, List<String>> lines = new java.util.LinkedHashMap<>();
            List<String> current = null;
            for (String line : r.output()) {
                if (line.startsWith(prefix + "-case: ")) {
                    current = new java.util.ArrayList<>();
                    lines.put(line.substring(prefix.length() + 7), current);
                } else if (current != null && !line.equals(prefix + "-done")) {
                    current.add(line);
                }
            }
            boolean finished = r.timedOutIn() == null && r.output().contains(prefix + "-done");
            int next = 0;
            for (String name : left) {
                List<String> own = lines.get(name);
                boolean verdict = own != null && own.stream().anyMatch(l -> l.startsWith(prefix + "-ok: " + name)
                        || l.startsWith(prefix + "-unchecked: " + name) || l.startsWith(prefix + "-failed: " + name));
                if (verdict) {
                    boolean ok = own.stream().anyMatch(l -> l.startsWith(prefix + "-ok: " + name));
                    List<String> out = new java.util.ArrayList<>(own);
                    out.add(prefix + "-done");
                    results.put(name, new ChildJvm.Result(null, ok ? 0 : 1, List.copyOf(out), r.workMs()));
                    next++;
                    continue;
                }
                // the case the child was in when it died or hung (or, when it ended normally, a case it never reported)
                results.put(name, new ChildJvm.Result(finished ? null : r.timedOutIn(), r.exitCode(),
                        own == null ? r.output() : List.copyOf(own), r.workMs()));
                next++;
                break;
            }
            left = left.subList(next, left.size());
        }
        return results;
    }

    /** The last lines a child printed, for a failure message. */
    static String tail(ChildJvm.Result r) {
        List<String> out = r.output();
        return String.join(" | ", out.subList(Math.max(0, out.size() - 6), out.size()));
    }
}
