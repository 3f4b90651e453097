package io.jverbs.ibverbs.testing;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Stream;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Crash tests of the thin layer: each misuse (a NULL, heap, closed or too small argument) runs
 * alone in a child JVM, because a check that is missing shows up as a SIGSEGV or a corrupted heap,
 * which would take the test JVM down with it. The child must exit normally, leave no
 * {@code hs_err} file, and print the exception class and message the check promises.
 *
 * <p>A case list lives in a class whose {@code main} calls {@link #childMain}: the parent reads
 * the list (names and expectations) and the child runs the one case it is given. The children
 * load the fake provider the parent compiled ({@link FakeProvider#LIBRARY_PROPERTY}).
 */
public final class Misuse {
    private static final long PAGE = 4096;
    private static final int PROT_NONE = 0;
    private static final int PROT_READ = 1;
    private static final int PROT_WRITE = 2;
    private static final int MAP_PRIVATE = 0x02;
    private static final int MAP_ANONYMOUS = 0x20;
    private static final MethodHandle MMAP = libc("mmap",
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));
    private static final MethodHandle MPROTECT = libc("mprotect", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    /** What a child prints for the exception its misuse threw; the parent compares the whole line. */
    private static final String THROWN = "THROWN ";
    private static final long CHILD_TIMEOUT_SECONDS = 120;

    private Misuse() {
    }

    /**
     * One misuse.
     *
     * @param name    unique, human-readable ("ibv_poll_cq: NULL wc")
     * @param thrown  the exception the thin layer must throw
     * @param message its exact message
     * @param misuse  the one wrong call, made in the child
     */
    public record Case(String name, Class<? extends Throwable> thrown, String message, Consumer<Fixture> misuse) {
        /** The line the child prints when the case behaves. */
        String expectedLine() {
            return THROWN + thrown.getName() + ": " + message;
        }
    }

    /** What a case may use in the child: a fake world with every op and a confined arena. */
    public static final class Fixture implements AutoCloseable {
        private final FakeProvider.World world = new FakeProvider.World(true, 0, true);
        private final Arena arena = Arena.ofConfined();

        /** @return the fake world (context, qp, cq, srq, qp_ex, cq_ex and the other objects) */
        public FakeProvider.World world() {
            return world;
        }

        /** @return this case's arena */
        public Arena arena() {
            return arena;
        }

        /** @return {@code size} zeroed bytes, 8-aligned, from the case's arena */
        public MemorySegment buf(long size) {
            return arena.allocate(size, 8);
        }

        /**
         * A buffer of {@code size} bytes that ends where an inaccessible page begins: reading or
         * writing one byte past it is a SIGSEGV, so an overrun crashes instead of corrupting quietly.
         * Never freed (the child exits).
         *
         * @param size bytes
         * @return the buffer
         */
        public MemorySegment guarded(long size) {
            long pages = (size + PAGE - 1) / PAGE + 1;
            try {
                MemorySegment base = (MemorySegment) MMAP.invokeExact(MemorySegment.NULL, pages * PAGE,
                        PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
                if (base.address() == -1L) {
                    throw new IllegalStateException("mmap failed");
                }
                long guard = base.address() + (pages - 1) * PAGE;
                if ((int) MPROTECT.invokeExact(MemorySegment.ofAddress(guard), PAGE, PROT_NONE) != 0) {
                    throw new IllegalStateException("mprotect failed");
                }
                return MemorySegment.ofAddress(guard - size).reinterpret(size);
            } catch (Throwable t) {
                throw new IllegalStateException("cannot make a guarded buffer: " + t, t);
            }
        }

        /** @return a segment of {@code size} bytes whose arena is already closed */
        public MemorySegment closed(long size) {
            try (Arena gone = Arena.ofConfined()) {
                return gone.allocate(size, 8);
            }
        }

        /** @return a heap segment of {@code size} bytes */
        public MemorySegment heap(int size) {
            return MemorySegment.ofArray(new byte[size]);
        }

        @Override
        public void close() {
            arena.close();
            world.close();
        }
    }

    /**
     * The child's {@code main}: runs the case named by {@code args[0]} and prints what it threw.
     * Exits 0 when it threw (whatever it threw: the parent judges), 3 when it threw nothing, 2 for
     * an unknown case; a missing check ends in a crash instead.
     *
     * @param cases the case list of the calling class
     * @param args  the child's arguments: the case name
     */
    public static void childMain(List<Case> cases, String[] args) {
        Case c = cases.stream().filter(x -> x.name().equals(args[0])).findFirst().orElse(null);
        if (c == null) {
            System.out.println("unknown case " + args[0]);
            System.exit(2);
        }
        try (Fixture fixture = new Fixture()) {
            c.misuse().accept(fixture);
            System.out.println("NO EXCEPTION from " + c.name());
            System.out.flush();
            System.exit(3);
        } catch (Throwable t) {
            System.out.println(THROWN + t.getClass().getName() + ": " + t.getMessage());
            System.out.flush();
            System.exit(0);
        }
    }

    /**
     * How one child ended.
     *
     * @param c        the case
     * @param exitCode the child's exit code (-1 when it timed out)
     * @param hsErr    whether the JVM left an {@code hs_err} crash report
     * @param output   what it printed (stdout and stderr)
     */
    public record Result(Case c, int exitCode, boolean hsErr, String output) {
        /**
         * Died by a signal (exit code above 128, as the shell reports it) or left a crash report (a
         * JVM that crashed with core dumps off writes hs_err and exits with 1).
         */
        public boolean crashed() {
            return exitCode > 128 || hsErr;
        }

        /** Exited 0, no crash report, and printed exactly the expected exception line. */
        public boolean behaved() {
            return exitCode == 0 && !hsErr && output.lines().anyMatch(c.expectedLine()::equals);
        }

        /** @return a one-paragraph account for a failure message */
        public String describe() {
            return c.name() + ": exit " + exitCode + (hsErr ? ", hs_err written" : "") + "; expected\n  "
                    + c.expectedLine() + "\ngot\n  " + output.strip().replace("\n", "\n  ");
        }
    }

    /**
     * Runs every case in its own child JVM, {@code parallelism} at a time.
     *
     * @param cases       case lists by the class whose {@code main} runs them
     * @param workDir     a folder for the children's working directories and crash reports
     * @param parallelism children at a time
     * @return the results, in the order of the cases
     */
    public static List<Result> runAll(Map<Class<?>, List<Case>> cases, Path workDir, int parallelism)
            throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElse(System.getProperty("java.home") + "/bin/java");
        Path library = FakeProvider.library().toAbsolutePath();
        deleteTree(workDir);
        Files.createDirectories(workDir);
        Map<Case, Class<?>> all = new LinkedHashMap<>();
        cases.forEach((main, list) -> list.forEach(c -> {
            if (all.keySet().stream().anyMatch(x -> x.name().equals(c.name()))) {
                throw new IllegalArgumentException("two misuse cases named " + c.name());
            }
            all.put(c, main);
        }));
        ExecutorService pool = Executors.newFixedThreadPool(parallelism);
        try {
            List<Future<Result>> futures = new ArrayList<>();
            int i = 0;
            for (Map.Entry<Case, Class<?>> e : all.entrySet()) {
                Path dir = workDir.resolve(String.format("%03d", i++));
                futures.add(pool.submit(() -> runChild(java, library, e.getValue(), e.getKey(), dir)));
            }
            List<Result> results = new ArrayList<>();
            for (Future<Result> f : futures) {
                try {
                    results.add(f.get());
                } catch (java.util.concurrent.ExecutionException ex) {
                    throw new IllegalStateException("cannot run a misuse child: " + ex.getCause(), ex.getCause());
                }
            }
            return results;
        } finally {
            pool.shutdownNow();
        }
    }

    private static Result runChild(String java, Path library, Class<?> main, Case c, Path dir)
            throws IOException, InterruptedException {
        Files.createDirectories(dir);
        List<String> cmd = List.of(java,
                "--enable-native-access=ALL-UNNAMED",
                "-D" + FakeProvider.LIBRARY_PROPERTY + "=" + library,
                "-XX:ErrorFile=" + dir.resolve("hs_err_pid%p.log"),
                "-XX:-CreateCoredumpOnCrash",
                "-XX:TieredStopAtLevel=1",
                "-XX:+UseSerialGC",
                "-cp", System.getProperty("java.class.path"),
                main.getName(), c.name());
        Path output = dir.resolve("output.txt");
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(output.toFile()).start();
        int exit;
        if (p.waitFor(CHILD_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            exit = p.exitValue();
        } else {
            p.destroyForcibly().waitFor();
            exit = -1;
        }
        boolean hsErr;
        try (Stream<Path> files = Files.list(dir)) {
            hsErr = files.anyMatch(f -> f.getFileName().toString().startsWith("hs_err"));
        }
        return new Result(c, exit, hsErr, new String(Files.readAllBytes(output), StandardCharsets.UTF_8));
    }

    private static MethodHandle libc(String name, FunctionDescriptor descriptor) {
        Linker linker = Linker.nativeLinker();
        return linker.downcallHandle(linker.defaultLookup().find(name).orElseThrow(), descriptor);
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
