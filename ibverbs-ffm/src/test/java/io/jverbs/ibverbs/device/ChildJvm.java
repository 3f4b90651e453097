package io.jverbs.ibverbs.device;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Runs a main class in a second JVM (this JVM's java, class path and flags) under a watchdog, for
 * tests whose failure is a hung JVM: a safepoint deadlock stops every Java thread of its JVM,
 * a watchdog thread included, so only another process can notice it and kill it.
 *
 * <p>Two deadlines: {@code startup} until the child prints a line starting with the ready
 * marker (JVM start and setup, slow under QEMU TCG), then {@code work} until it exits; a child
 * that runs several cases prints the marker before each, and each gets {@code work}. Its output
 * (stdout and stderr together) is echoed here as {@code [child] ...} lines and kept.
 */
public final class ChildJvm {
    private static final String EOF = new String("end of child output");

    /**
     * How the child ended.
     *
     * @param timedOutIn null when it exited by itself; otherwise {@code "startup"} or {@code "work"},
     *                   the phase whose deadline passed (it was then killed)
     * @param exitCode   its exit status (-1 when killed)
     * @param output     every line it printed
     * @param workMs     milliseconds from the ready marker to the end (or the kill); -1 when never ready
     */
    public record Result(String timedOutIn, int exitCode, List<String> output, long workMs) {
        /** @return the last output line starting with {@code prefix}, or {@code "(none)"} */
        public String last(String prefix) {
            for (int i = output.size() - 1; i >= 0; i--) {
                if (output.get(i).startsWith(prefix)) {
                    return output.get(i);
                }
            }
            return "(none)";
        }

        /** @return the lines containing {@code fragment}, joined by newlines */
        public String linesWith(String fragment) {
            return String.join("\n", output.stream().filter(l -> l.contains(fragment)).toList());
        }
    }

    private ChildJvm() {
    }

    /** Options of the java launcher whose value is the next argument. */
    private static final Set<String> TAKES_VALUE = Set.of("-cp", "-classpath", "--class-path", "-p", "--module-path",
            "--upgrade-module-path", "--add-modules", "--add-opens", "--add-exports", "--add-reads", "--patch-module",
            "--limit-modules", "--enable-native-access");
    /**
     * Dropped: the class path is set anew; agents, CDS dumping and AOT training must not run
     * twice; and the parent's class-data cache, which holds the test launcher's classes, not a
     * child's: under QEMU TCG mapping it made a child slower (7.7 s) than no cache (6.3 s).
     */
    private static final List<String> DROPPED = List.of("-cp", "-classpath", "--class-path", "-agentlib", "-javaagent",
            "-Xrunjdwp", "-XX:ArchiveClassesAtExit", "-XX:AOTCacheOutput", "-XX:AOTConfiguration", "-XX:AOTMode",
            "-XX:AOTCache", "-XX:SharedArchiveFile", "-Xlog:aot", "-Xlog:cds", "-Xshare");
    /**
     * An ahead-of-time cache trained on a child ({@code scripts/ci/device-tests} makes one in the
     * guest): {@code -Djverbs.childAotCache=FILE}; a child starts with it when the file exists
     * (4.3-4.8 s instead of 6.3 s in the rig).
     */
    private static final String CHILD_AOT_CACHE = System.getProperty("jverbs.childAotCache", "");

    /**
     * The java command: this JVM's executable and JVM options (from its command line, minus the
     * class path, agents and CDS dumping), its class path, then {@code main} and {@code args}.
     */
    public static List<String> command(Class<?> main, List<String> extraFlags, List<String> args) {
        ProcessHandle.Info self = ProcessHandle.current().info();
        List<String> cmd = new ArrayList<>(List.of(self.command().orElse(System.getProperty("java.home") + "/bin/java")));
        String[] ours = self.arguments().orElse(new String[0]);
        boolean nativeAccess = false;
        for (int i = 0; i < ours.length; i++) {
            String arg = ours[i];
            if (!arg.startsWith("-") || arg.equals("-jar") || arg.equals("-m") || arg.equals("--module")) {
                break; // the main class: what follows are its arguments
            }
            boolean separateValue = TAKES_VALUE.contains(arg) && i + 1 < ours.length;
            String value = separateValue ? ours[++i] : null;
            if (DROPPED.stream().anyMatch(arg::startsWith)) {
                continue;
            }
            nativeAccess |= arg.startsWith("--enable-native-access");
            cmd.add(arg);
            if (value != null) {
                cmd.add(value);
            }
        }
        if (!nativeAccess) {
            cmd.add("--enable-native-access=ALL-UNNAMED");
        }
        cmd.addAll(aotCacheFlags());
        cmd.addAll(extraFlags);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
        cmd.addAll(args);
        return cmd;
    }

    /** The flags that start a child with the suite's child cache, when it has one; else none. */
    public static List<String> aotCacheFlags() {
        return !CHILD_AOT_CACHE.isEmpty() && new java.io.File(CHILD_AOT_CACHE).isFile()
                ? List.of("-XX:AOTCache=" + CHILD_AOT_CACHE, "-Xlog:aot=off", "-Xlog:cds=off") : List.of();
    }

    /**
     * Runs one child per name, {@code parallel} at a time (each within its deadlines, its lines
     * echoed as {@code [label N]}), and returns their results by name once all have ended.
     */
    public static java.util.Map<String, Result> runSideBySide(List<String> names,
            java.util.function.Function<String, List<String>> command, String readyMarker, Duration startup,
            Duration work, int parallel, String label) throws Exception {
        List<java.util.concurrent.Callable<java.util.Map<String, Result>>> units = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            String name = names.get(i);
            String tag = label + " " + (i + 1);
            units.add(() -> java.util.Map.of(name, run(command.apply(name), readyMarker, startup, work, tag)));
        }
        return runSideBySide(units, parallel);
    }

    /**
     * Runs {@code units} (each one or more children, giving their results by name), {@code parallel}
     * at a time in the order given, and returns all their results once all have ended.
     */
    public static java.util.Map<String, Result> runSideBySide(
            List<java.util.concurrent.Callable<java.util.Map<String, Result>>> units, int parallel) throws Exception {
        java.util.Map<String, Result> results = new java.util.concurrent.ConcurrentHashMap<>();
        try (var pool = java.util.concurrent.Executors.newFixedThreadPool(parallel)) {
            List<java.util.concurrent.Future<?>> running = new ArrayList<>();
            for (java.util.concurrent.Callable<java.util.Map<String, Result>> unit : units) {
                running.add(pool.submit(() -> {
                    results.putAll(unit.call());
                    return null;
                }));
            }
            for (java.util.concurrent.Future<?> f : running) {
                f.get();
            }
        }
        return results;
    }

    /** Starts the child and waits for it within the two deadlines; kills it when one passes. */
    public static Result run(List<String> command, String readyMarker, Duration startup, Duration work)
            throws IOException, InterruptedException {
        return run(command, readyMarker, startup, work, "child");
    }

    /**
     * As {@link #run(List, String, Duration, Duration)}, echoing the child's lines as
     * {@code [label] line} (children run side by side tell their lines apart).
     */
    public static Result run(List<String> command, String readyMarker, Duration startup, Duration work, String label)
            throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Thread reader = Thread.ofPlatform().daemon().name("child-output").start(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                    System.out.println("[" + label + "] " + line);
                    lines.add(line);
                }
            } catch (IOException e) {
                lines.add("(reading the child's output failed: " + e + ")");
            } finally {
                lines.add(EOF);
            }
        });
        List<String> output = new ArrayList<>();
        long deadline = System.nanoTime() + startup.toNanos();
        long readyAt = -1;
        String timedOutIn = null;
        while (true) {
            String line = lines.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (line == null) {
                timedOutIn = readyAt < 0 ? "startup" : "work";
                break;
            }
            if (line == EOF) {
                break;
            }
            output.add(line);
            if (line.startsWith(readyMarker)) {
                long now = System.nanoTime();
                readyAt = readyAt < 0 ? now : readyAt;
                deadline = now + work.toNanos();
            }
        }
        int exitCode;
        if (timedOutIn != null) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly(); // SIGKILL: a JVM stuck at a safepoint ignores SIGTERM
            process.waitFor(10, TimeUnit.SECONDS);
            exitCode = -1;
        } else if (process.waitFor(10, TimeUnit.SECONDS)) {
            exitCode = process.exitValue();
        } else {
            process.destroyForcibly(); // closed its output but did not exit
            exitCode = -1;
            timedOutIn = "exit";
        }
        reader.join(2_000);
        long workMs = readyAt < 0 ? -1 : (System.nanoTime() - readyAt) / 1_000_000;
        return new Result(timedOutIn, exitCode, List.copyOf(output), workMs);
    }
}
