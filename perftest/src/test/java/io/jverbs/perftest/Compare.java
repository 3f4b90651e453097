package io.jverbs.perftest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Not a user command: the harness behind {@code scripts/bench/compare-perftest}. In one JVM it runs,
 * the C perftest (server and client as child processes) and jverbs-perftest (server and client as
 * two threads of this JVM, which saves the JVM starts) with the same flags, back to back,
 * alternating which goes first; round by round, every case once a round, so each case's runs
 * spread over the whole boot. It writes the medians side by side as a table and as JSON.
 *
 * <p>It lives in perftest's test sources, out of the user's jar: {@code java -cp
 * perftest/target/jverbs-perftest.jar:perftest/target/test-classes io.jverbs.perftest.Compare --dev rxe0 --gid 1 --ip 10.0.2.15
 * --json out.json --work DIR write_bw:64:1000:3 write_lat:2:200:5 ...} (case = test:size:iters:runs;
 * {@code --pin} binds servers to CPU 1 and clients to CPU 0). {@code Compare --table FILE...} prints the
 * table of a JSON it wrote again, or of several boots' JSONs with their runs pooled case by case
 * (medians, ratios and intervals computed again from the runs); {@code --replot FILE} its charts.
 */
public final class Compare {
    private static final long TIMEOUT_S = 300;

    private Compare() {
    }

    /**
     * {@code --pin}: every server (C process or Java thread) on CPU 1 and every client on CPU 0,
     * the C tools through {@code taskset}, the Java threads through {@code sched_setaffinity}
     * ({@code -Djverbs.compare.serverCpu=N} and {@code -Djverbs.compare.clientCpu=N} choose
     * others: with the clients on CPU 1, C's read_lat 2 B runs reached its fastest mode in three of
     * five and Java's in none, as unpinned in the same boot).
     */
    static boolean pin;

    /** {@code --processes LAUNCHER}: run jverbs-perftest's sides as processes of this launcher; null: threads of this JVM. */
    static String launcher;
    private static final int SERVER_CPU = Integer.getInteger("jverbs.compare.serverCpu", 1);
    private static final int CLIENT_CPU = Integer.getInteger("jverbs.compare.clientCpu", 0);

    private static final MethodHandle SCHED_SETAFFINITY;

    static {
        Linker linker = Linker.nativeLinker();
        SCHED_SETAFFINITY = linker.defaultLookup().find("sched_setaffinity").map(a -> linker.downcallHandle(a,
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG,
                        ValueLayout.ADDRESS))).orElse(null);
    }

    /** {@code command}, run through {@code taskset -c cpu} with {@link #pin}. */
    private static List<String> onCpu(int cpu, List<String> command) {
        List<String> pinned = new ArrayList<>();
        if (pin) {
            pinned.addAll(List.of("taskset", "-c", Integer.toString(cpu)));
        }
        pinned.addAll(command);
        return pinned;
    }

    /** Binds the calling thread to the CPUs of {@code mask} (bit i = CPU i); a no-op without {@link #pin}. */
    static void bindThread(long mask) {
        if (!pin || SCHED_SETAFFINITY == null) {
            return;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment set = a.allocate(128);
            set.set(ValueLayout.JAVA_LONG, 0, mask);
            int rc = (int) SCHED_SETAFFINITY.invokeExact(0, 128L, set);
            if (rc != 0) {
                throw new IllegalStateException("sched_setaffinity failed");
            }
        } catch (Throwable t) {
            throw new IllegalStateException("cannot bind a thread to CPUs 0x" + Long.toHexString(mask), t);
        }
    }

    /**
     * One measured run: what the client reported, for Java the milliseconds the JIT compiled
     * while the client's loop ran ({@code jitMs}, -1 for C or when not seen), and for latency the
     * fastest iteration ({@code min}, t_min in usec; 0 for bandwidth).
     */
    record Sample(double bw, double msgRate, double typical, double p99, long allocated, long jitMs, double min) {
        Sample(double bw, double msgRate, double typical, double p99, long allocated) {
            this(bw, msgRate, typical, p99, allocated, -1, 0);
        }

        /** This sample with t_min {@code usec}. */
        Sample withMin(double usec) {
            return new Sample(bw, msgRate, typical, p99, allocated, jitMs, usec);
        }
    }

    /** {@code -Djverbs.compare.threadCpu=true}: each Java run also prints the CPU of every JVM thread during its run. */
    private static final boolean THREAD_CPU = Boolean.getBoolean("jverbs.compare.threadCpu");

    /**
     * CPU time of this JVM's threads by name, from {@code /proc/self/task/<tid>/stat} (utime +
     * stime, in clock ticks of 10 ms), native threads (the JIT's compilers, GC) included, which
     * {@code ThreadMXBean} does not list. With {@code -Djverbs.compare.threadCpu=true} the Java
     * side of a comparison reads it before and after each client's run: on the guest's 2 vCPUs
     * any thread of the JVM besides the measuring ones takes CPU from rxe's kernel work. Off by
     * default. For the measured loop alone, record the run with JFR: its
     * {@code io.jverbs.perftest.MeasuredLoop} event marks the loop.
     */
    static Map<String, Long> threadTicks() {
        Map<String, Long> ticks = new java.util.TreeMap<>();
        try (var tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path t : tasks.toList()) {
                try {
                    String stat = Files.readString(t.resolve("stat"));
                    int open = stat.indexOf('(');
                    int close = stat.lastIndexOf(')');
                    String name = stat.substring(open + 1, close).replaceAll("#?\\d+$", "").trim();
                    String[] f = stat.substring(close + 2).split(" ");
                    // after the name: state(0) ... utime(11) stime(12)
                    ticks.merge(name, Long.parseLong(f[11]) + Long.parseLong(f[12]), Long::sum);
                } catch (IOException | RuntimeException e) {
                    // the thread ended between the listing and the read
                }
            }
        } catch (IOException e) {
            return Map.of();
        }
        return ticks;
    }

    /** The threads whose CPU time grew between two {@link #threadTicks()}, largest first, in ms. */
    static String threadDelta(Map<String, Long> before, Map<String, Long> after) {
        List<Map.Entry<String, Long>> grew = new ArrayList<>();
        for (var e : after.entrySet()) {
            long d = e.getValue() - before.getOrDefault(e.getKey(), 0L);
            if (d > 0) {
                grew.add(Map.entry(e.getKey(), d * 10));
            }
        }
        grew.sort((a, b) -> Long.compare(b.getValue(), a.getValue()));
        StringBuilder sb = new StringBuilder();
        for (var e : grew) {
            sb.append(sb.isEmpty() ? "" : ", ").append(e.getKey()).append(' ').append(e.getValue()).append(" ms");
        }
        return sb.isEmpty() ? "none" : sb.toString();
    }

    /**
     * Runs the comparison.
     *
     * @param args options and cases, see the class comment
     * @throws Exception when a run fails
     */
    public static void main(String[] args) throws Exception {
        if (args.length >= 2 && args[0].equals("--table")) {
            // prints the table again from JSONs this harness wrote: one boot's, or several boots' runs pooled
            List<List<Map<String, Object>>> boots = new ArrayList<>();
            for (int i = 1; i < args.length; i++) {
                @SuppressWarnings("unchecked")
                Map<String, Object> saved = new ObjectMapper().readValue(Path.of(args[i]).toFile(), Map.class);
                @SuppressWarnings("unchecked")
                List<Map<String, Object>> savedRows = (List<Map<String, Object>>) saved.get("cases");
                boots.add(savedRows);
            }
            if (boots.size() > 1) {
                System.out.println(boots.size() + " boots, their runs pooled case by case");
            }
            printTable(pool(boots));
            return;
        }
        if (args.length == 2 && args[0].equals("--replot")) {
            // draws the charts again from a JSON this harness wrote (no device needed)
            Path in = Path.of(args[1]);
            @SuppressWarnings("unchecked")
            Map<String, Object> saved = new ObjectMapper().readValue(in.toFile(), Map.class);
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> savedRows = (List<Map<String, Object>>) saved.get("cases");
            plot(savedRows, in);
            return;
        }
        String dev = "rxe0";
        String gid = "1";
        String ip = "10.0.2.15";
        Path json = Path.of("compare-perftest.json");
        Path work = Files.createTempDirectory("compare-perftest");
        int port = 19000;
        List<String[]> cases = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--dev" -> dev = args[++i];
                case "--gid" -> gid = args[++i];
                case "--ip" -> ip = args[++i];
                case "--json" -> json = Path.of(args[++i]);
                case "--work" -> work = Path.of(args[++i]);
                case "--port" -> port = Integer.parseInt(args[++i]);
                case "--pin" -> pin = true;
                case "--processes" -> launcher = args[++i];
                default -> cases.add(args[i].split(":"));
            }
        }
        Files.createDirectories(work);
        List<Map<String, Object>> rows = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        List<Case> all = new ArrayList<>();
        for (String[] k : cases) {
            all.add(Case.of(k, dev, gid));
        }
        int[] runs = all.stream().mapToInt(Case::runs).toArray();
        for (int[] next : schedule(runs)) {
            int i = next[0];
            int r = next[1];
            Case k = all.get(i);
            boolean cFirst = (i + r) % 2 == 0;
            for (int side = 0; side < 2; side++) {
                boolean isC = (side == 0) == cFirst;
                port++;
                String tag = k.test() + (k.connection().equals("RC") ? "" : "-" + k.connection()) + "-" + k.size()
                        + "-" + r + (isC ? "-c" : "-java");
                Sample s;
                try {
                    s = isC ? runC(k.test(), k.flags(), ip, port, work, tag) : java(k.test(), k.flags(), ip, port, work, tag);
                } catch (Exception | AssertionError e) {
                    System.out.println("  " + tag + " failed, retrying once: " + e.getMessage().lines().findFirst().orElse(""));
                    port += 1;
                    try {
                        s = isC ? runC(k.test(), k.flags(), ip, port, work, tag) : java(k.test(), k.flags(), ip, port, work, tag);
                    } catch (Exception | AssertionError e2) {
                        System.out.println("  " + tag + " failed again, left out: " + e2);
                        failures.add(tag + ": " + e2.getMessage());
                        continue;
                    }
                }
                (isC ? k.cRun() : k.jRun())[r] = s;
                System.out.printf(Locale.ROOT, "  %-12s %6s B run %d %-4s %s%s%n", label(k.test(), k.connection()),
                        k.size(), r + 1, isC ? "C" : "Java",
                        k.bw() ? String.format(Locale.ROOT, "%.2f MB/s %.4f Mpps", s.bw(), s.msgRate())
                               : String.format(Locale.ROOT, "t_typical %.2f us p99 %.2f us", s.typical(), s.p99()),
                        s.jitMs() >= 0 ? " (JIT compiled " + s.jitMs() + " ms during the loop)" : "");
                System.out.flush();
            }
        }
        for (Case k : all) {
            rows.add(k.row());
        }
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("device", dev);
        root.put("note", "medians; C = C perftest server+client processes, Java = jverbs-perftest server+client "
                + (launcher != null ? "processes of " + launcher : "threads in one JVM (warm after the first case)")
                + "; ratio = Java/C of the medians; paired_ratio = the median of Java/C over the back-to-back pairs of runs;"
                + " ratio_ci95 = a 95% bootstrap interval of ratio");
        root.put("cases", rows);
        root.put("failed_runs", failures);
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(json.toFile(), root);
        printTable(rows);
        plot(rows, json);
        if (!failures.isEmpty()) {
            System.out.println(failures.size() + " run(s) failed and were left out: " + failures);
        }
    }

    /**
     * The order of the runs: round by round, every case once a round (a case with fewer runs
     * drops out of the later rounds), each entry {@code {case, round}}. A case's runs so spread
     * over the whole boot instead of one stretch of it (randomized-interleaved trials, without the
     * randomizing): a slow stretch of the shared host moves every case's medians a little instead
     * of one case's a lot (read_bw 64 KiB: 0.93 over one boot's seven back-to-back pairs, 1.01 over
     * nine pairs of it alone right after).
     *
     * @param runs each case's number of runs, in the order the cases were given
     * @return every {@code {case, round}} once, in the order to run them
     */
    static List<int[]> schedule(int[] runs) {
        List<int[]> order = new ArrayList<>();
        int rounds = Arrays.stream(runs).max().orElse(0);
        for (int r = 0; r < rounds; r++) {
            for (int i = 0; i < runs.length; i++) {
                if (r < runs[i]) {
                    order.add(new int[] {i, r});
                }
            }
        }
        return order;
    }

    /**
     * One case of the comparison ({@code test[/CONN]:size:iters:runs}): its flags, and run {@code r}'s
     * sample of each side in {@code cRun[r]} and {@code jRun[r]} (null when it failed twice).
     */
    private record Case(String test, String connection, String size, String iters, int runs, List<String> flags,
                        Sample[] cRun, Sample[] jRun) {
        /** The case a command-line argument names ("send_lat/UD": the test on -c UD; RC otherwise). */
        static Case of(String[] k, String dev, String gid) {
            String[] testAndConnection = k[0].split("/", 2);
            String connection = testAndConnection.length > 1 ? testAndConnection[1] : "RC";
            List<String> flags = new ArrayList<>(List.of("-d", dev, "-x", gid, "-s", k[1], "-n", k[2], "-F"));
            if (!connection.equals("RC")) {
                flags.addAll(List.of("-c", connection));
            }
            int runs = Integer.parseInt(k[3]);
            return new Case(testAndConnection[0], connection, k[1], k[2], runs, flags, new Sample[runs], new Sample[runs]);
        }

        boolean bw() {
            return test.endsWith("_bw");
        }

        /** This case's row of the JSON: medians of each side's runs, their ratios, every run's value. */
        Map<String, Object> row() {
            List<Sample> c = Arrays.stream(cRun).filter(java.util.Objects::nonNull).toList();
            List<Sample> j = Arrays.stream(jRun).filter(java.util.Objects::nonNull).toList();
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("test", test);
            row.put("connection", connection);
            row.put("size", Integer.parseInt(size));
            row.put("iters", Integer.parseInt(iters));
            row.put("runs", runs);
            if (bw()) {
                put(row, "bw_avg_MBps", c, j, cRun, jRun, Sample::bw);
                put(row, "msg_rate_Mpps", c, j, cRun, jRun, Sample::msgRate);
            } else {
                put(row, "t_typical_usec", c, j, cRun, jRun, Sample::typical);
                put(row, "p99_usec", c, j, cRun, jRun, Sample::p99);
                put(row, "t_min_usec", c, j, cRun, jRun, Sample::min);
            }
            row.put("java_allocated_bytes_median", (long) median(j, Sample::allocated));
            row.put("java_allocated_bytes", j.stream().mapToLong(Sample::allocated).toArray());
            row.put("java_jit_ms_during_loop", j.stream().mapToLong(Sample::jitMs).toArray());
            return row;
        }
    }

    /** Next to the JSON: {@code NAME-bw.png} and {@code NAME-lat.png}, C's and jverbs' medians per case as bars. */
    @SuppressWarnings("unchecked")
    private static void plot(List<Map<String, Object>> rows, Path json) {
        String base = json.toString().replaceFirst("\\.json$", "");
        for (boolean bw : new boolean[] {true, false}) {
            List<String> names = new ArrayList<>();
            List<double[]> values = new ArrayList<>();
            for (Map<String, Object> r : rows) {
                if (((String) r.get("test")).endsWith("_bw") != bw) {
                    continue;
                }
                Map<String, Object> m = (Map<String, Object>) r.get(bw ? "bw_avg_MBps" : "t_typical_usec");
                if (m.get("c") instanceof Double cv && m.get("java") instanceof Double jv && !cv.isNaN() && !jv.isNaN()) {
                    names.add(label(r) + " " + r.get("size") + " B");
                    values.add(new double[] {cv, jv});
                }
            }
            if (names.isEmpty()) {
                continue;
            }
            Path png = Path.of(base + (bw ? "-bw.png" : "-lat.png"));
            plotComparison(png, bw ? "BW average, median of the runs (higher is better)"
                            : "t_typical, median of the runs (lower is better)", bw ? "MB/sec" : "usec", names,
                    values.stream().mapToDouble(v -> v[0]).toArray(), values.stream().mapToDouble(v -> v[1]).toArray());
            System.out.println("plot: " + png);
        }
    }

    private static void put(Map<String, Object> row, String name, List<Sample> c, List<Sample> j, Sample[] cRun,
                            Sample[] jRun, java.util.function.ToDoubleFunction<Sample> f) {
        double mc = median(c, f);
        double mj = median(j, f);
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("c", round(mc));
        o.put("java", round(mj));
        o.put("ratio", mc > 0 ? round(mj / mc) : null);
        double paired = pairedRatio(cRun, jRun, f);
        o.put("paired_ratio", Double.isNaN(paired) ? null : round(paired));
        double[] cValues = c.stream().mapToDouble(f).toArray();
        double[] ci = ratioInterval(cValues, j.stream().mapToDouble(f).toArray());
        o.put("ratio_ci95", ci == null ? null : new double[] {round(ci[0]), round(ci[1])});
        judge(o, name, mc > 0 ? mj / mc : Double.NaN, ci, cValues);
        o.put("c_runs", c.stream().mapToDouble(f).map(Compare::round).toArray());
        o.put("java_runs", j.stream().mapToDouble(f).map(Compare::round).toArray());
        row.put(name, o);
    }

    /** Bootstrap resamples behind {@link #ratioInterval}; its seed is fixed, so a JSON gives the same interval again. */
    private static final int RESAMPLES = 10_000;

    /**
     * A 95 % interval for Java/C of the medians: the 2.5th and 97.5th percentiles of that ratio
     * over {@value #RESAMPLES} bootstrap resamples, each side's runs drawn again with replacement
     * (percentile bootstrap, fixed seed). It says how far the ratio could move with the same runs'
     * spread: on the emulated rig one tool's runs of a case spread 1.5-2x within a boot, so a
     * ratio of 0.96 whose interval reaches past 1.0 is not a measured loss. Null when a side has
     * fewer than two runs.
     *
     * @param c C's values, one per run
     * @param j Java's values, one per run
     * @return {lower, upper}, or null
     */
    static double[] ratioInterval(double[] c, double[] j) {
        if (c.length < 2 || j.length < 2) {
            return null;
        }
        java.util.SplittableRandom random = new java.util.SplittableRandom(42);
        double[] ratios = new double[RESAMPLES];
        double[] cs = new double[c.length];
        double[] js = new double[j.length];
        int n = 0;
        for (int b = 0; b < RESAMPLES; b++) {
            for (int i = 0; i < cs.length; i++) {
                cs[i] = c[random.nextInt(c.length)];
            }
            for (int i = 0; i < js.length; i++) {
                js[i] = j[random.nextInt(j.length)];
            }
            double mc = median(cs);
            if (mc > 0) {
                ratios[n++] = median(js) / mc;
            }
        }
        if (n == 0) {
            return null;
        }
        double[] kept = Arrays.copyOf(ratios, n);
        Arrays.sort(kept);
        return new double[] {kept[(int) Math.floor(0.025 * (n - 1))], kept[(int) Math.ceil(0.975 * (n - 1))]};
    }

    /**
     * The noise of the same boot: a 95 % interval of C/C, the ratio of the medians of two
     * independent bootstrap resamples of C's own runs ({@link #ratioInterval} of C against itself).
     * A Java/C ratio whose interval overlaps it cannot be told from a second C run.
     *
     * @param c C's values, one per run
     * @return {lower, upper}, or null when C has fewer than two runs
     */
    static double[] noiseInterval(double[] c) {
        return ratioInterval(c, c);
    }

    /** The verdicts of {@link #verdict}. */
    enum Verdict {
        /** The ratio's interval overlaps C's own noise. */
        INDISTINGUISHABLE,
        /** Java measured slower than C beyond C's noise. */
        SLOWER,
        /** Java measured faster than C beyond C's noise. */
        FASTER;

        String word() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * Judges a Java/C ratio against the noise of the same boot: indistinguishable when its 95 %
     * interval overlaps the C/C interval, else slower or faster, by the direction that is better
     * for the metric.
     *
     * @param ci             the ratio's 95 % interval
     * @param noise          C against C ({@link #noiseInterval})
     * @param higherIsBetter true for bandwidth and message rate, false for latency
     * @return the verdict, or null when an interval is missing
     */
    static Verdict verdict(double[] ci, double[] noise, boolean higherIsBetter) {
        if (ci == null || noise == null) {
            return null;
        }
        if (ci[0] <= noise[1] && ci[1] >= noise[0]) {
            return Verdict.INDISTINGUISHABLE;
        }
        boolean higher = ci[0] > noise[1];
        return higher == higherIsBetter ? Verdict.FASTER : Verdict.SLOWER;
    }

    /** Whether a metric of the JSON is better higher (bandwidth, message rate) rather than lower (latency). */
    static boolean higherIsBetter(String metric) {
        return metric.startsWith("bw") || metric.startsWith("msg_rate");
    }

    /** Adds {@code noise_ci95} and {@code verdict} ("slower: Java/C 0.82 [0.78,0.86], C/C [0.95,1.05]") to a metric. */
    private static void judge(Map<String, Object> metric, String name, double ratio, double[] ci, double[] c) {
        double[] noise = noiseInterval(c);
        metric.put("noise_ci95", noise == null ? null : new double[] {round(noise[0]), round(noise[1])});
        Verdict v = verdict(ci, noise, higherIsBetter(name));
        metric.put("verdict", v == null ? null : String.format(Locale.ROOT, "%s: Java/C %.2f [%.2f,%.2f], C/C [%.2f,%.2f]",
                v.word(), ratio, ci[0], ci[1], noise[0], noise[1]));
    }

    /**
     * The median of Java/C over the runs where both sides ran, each pair back to back in the same
     * boot: slow drift of the emulated rig (runs of one case moved by two-fold within a boot)
     * cancels in each pair, which the ratio of the two medians does not do.
     */
    static double pairedRatio(Sample[] cRun, Sample[] jRun, java.util.function.ToDoubleFunction<Sample> f) {
        List<Double> ratios = new ArrayList<>();
        for (int r = 0; r < cRun.length; r++) {
            if (cRun[r] != null && jRun[r] != null && f.applyAsDouble(cRun[r]) > 0) {
                ratios.add(f.applyAsDouble(jRun[r]) / f.applyAsDouble(cRun[r]));
            }
        }
        return median(ratios.stream().mapToDouble(Double::doubleValue).toArray());
    }

    private static double round(double v) {
        return Math.round(v * 10_000) / 10_000.0;
    }

    private static double median(List<Sample> l, java.util.function.ToDoubleFunction<Sample> f) {
        return median(l.stream().mapToDouble(f).toArray());
    }

    /** The median of {@code values} (NaN when there are none). */
    private static double median(double[] values) {
        double[] v = values.clone();
        java.util.Arrays.sort(v);
        if (v.length == 0) {
            return Double.NaN;
        }
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    /** A case's name in the tables and charts: the test, and its connection type when not RC. */
    private static String label(String test, String connection) {
        return connection == null || connection.equals("RC") ? test : test + " " + connection;
    }

    private static String label(Map<String, Object> row) {
        return label((String) row.get("test"), (String) row.get("connection"));
    }

    /**
     * The rows of one table from the rows of one or more boots' JSONs: each case's runs of every
     * boot together, its medians, ratio and interval computed again from them; the paired ratio
     * over the pairs of every boot whose two sides have as many runs (none failed), so its pairs
     * still line up.
     *
     * @param boots each boot's {@code cases} rows, as read from its JSON
     * @return one row per case (test, connection, size), in the order first seen
     */
    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> pool(List<List<Map<String, Object>>> boots) {
        Map<String, Map<String, Object>> pooled = new LinkedHashMap<>();
        for (List<Map<String, Object>> rows : boots) {
            for (Map<String, Object> row : rows) {
                String key = row.get("test") + "/" + row.get("connection") + "/" + row.get("size");
                Map<String, Object> into = pooled.computeIfAbsent(key, k -> {
                    Map<String, Object> fresh = new LinkedHashMap<>();
                    for (String field : List.of("test", "connection", "size", "iters")) {
                        fresh.put(field, row.get(field));
                    }
                    fresh.put("runs", 0);
                    fresh.put("java_allocated_bytes", new ArrayList<Long>());
                    return fresh;
                });
                into.put("runs", (Integer) into.get("runs") + ((Number) row.get("runs")).intValue());
                if (row.get("java_allocated_bytes") instanceof List<?> bytes) {
                    for (Object b : bytes) {
                        ((List<Long>) into.get("java_allocated_bytes")).add(((Number) b).longValue());
                    }
                }
                for (Map.Entry<String, Object> e : row.entrySet()) {
                    if (e.getValue() instanceof Map<?, ?> m && m.get("c_runs") instanceof List<?> cr
                            && m.get("java_runs") instanceof List<?> jr) {
                        Map<String, Object> metric = (Map<String, Object>) into.computeIfAbsent(e.getKey(), k -> {
                            Map<String, Object> fresh = new LinkedHashMap<>();
                            fresh.put("c_runs", new ArrayList<Double>());
                            fresh.put("java_runs", new ArrayList<Double>());
                            fresh.put("pairs", new ArrayList<Double>());
                            return fresh;
                        });
                        double[] c = numbers(cr);
                        double[] j = numbers(jr);
                        for (double v : c) {
                            ((List<Double>) metric.get("c_runs")).add(v);
                        }
                        for (double v : j) {
                            ((List<Double>) metric.get("java_runs")).add(v);
                        }
                        if (c.length == j.length) {
                            for (int i = 0; i < c.length; i++) {
                                if (c[i] > 0) {
                                    ((List<Double>) metric.get("pairs")).add(j[i] / c[i]);
                                }
                            }
                        }
                    }
                }
            }
        }
        List<Map<String, Object>> rows = new ArrayList<>();
        for (Map<String, Object> row : pooled.values()) {
            for (Map.Entry<String, Object> e : row.entrySet()) {
                if (e.getValue() instanceof Map<?, ?> m) {
                    Map<String, Object> metric = (Map<String, Object>) m;
                    double[] c = numbers((List<?>) metric.get("c_runs"));
                    double[] j = numbers((List<?>) metric.get("java_runs"));
                    double mc = median(c);
                    double mj = median(j);
                    metric.put("c", round(mc));
                    metric.put("java", round(mj));
                    metric.put("ratio", mc > 0 ? round(mj / mc) : null);
                    double paired = median(numbers((List<?>) metric.remove("pairs")));
                    metric.put("paired_ratio", Double.isNaN(paired) ? null : round(paired));
                    double[] ci = ratioInterval(c, j);
                    metric.put("ratio_ci95", ci == null ? null : new double[] {round(ci[0]), round(ci[1])});
                    judge(metric, e.getKey(), mc > 0 ? mj / mc : Double.NaN, ci, c);
                }
            }
            List<Long> bytes = (List<Long>) row.get("java_allocated_bytes");
            row.put("java_allocated_bytes_median", (long) median(bytes.stream().mapToDouble(Long::doubleValue).toArray()));
            rows.add(row);
        }
        return rows;
    }

    /** A metric's {@code ratio_ci95} as {@code [0.91,1.06]}, or "-" when there is none. */
    private static String interval(Map<String, Object> metric) {
        return metric.get("ratio_ci95") instanceof double[] ci
                ? String.format(Locale.ROOT, "[%.2f,%.2f]", ci[0], ci[1]) : "-";
    }

    /** The numbers of a JSON array. */
    private static double[] numbers(List<?> values) {
        return values.stream().mapToDouble(v -> ((Number) v).doubleValue()).toArray();
    }

    @SuppressWarnings("unchecked")
    private static void printTable(List<Map<String, Object>> rows) {
        System.out.println();
        System.out.println("ratio: Java/C of the medians; paired: the median of Java/C over each back-to-back pair of runs;"
                + " 95% interval: of the ratio, bootstrapped from each side's runs");
        System.out.println("test          size   iters runs | C BW MB/s  Java BW   ratio paired 95% interval | C Mpps   Java Mpps ratio paired | Java alloc B (median)");
        for (Map<String, Object> r : rows) {
            if (!((String) r.get("test")).endsWith("_bw")) {
                continue;
            }
            Map<String, Object> b = (Map<String, Object>) r.get("bw_avg_MBps");
            Map<String, Object> m = (Map<String, Object>) r.get("msg_rate_Mpps");
            System.out.printf(Locale.ROOT, "%-12s %6d %6d %4d | %9.2f %9.2f %6.2f %6.2f %-12s | %7.4f %8.4f %6.2f %6.2f | %d%n",
                    label(r), r.get("size"), r.get("iters"), r.get("runs"), b.get("c"), b.get("java"), b.get("ratio"),
                    b.get("paired_ratio"), interval(b), m.get("c"), m.get("java"), m.get("ratio"), m.get("paired_ratio"),
                    r.get("java_allocated_bytes_median"));
        }
        System.out.println("test          size   iters runs | C t_typ us Java t_typ ratio paired 95% interval | C p99 us Java p99  ratio paired"
                + " | C t_min Java t_min ratio | Java alloc B (median)");
        for (Map<String, Object> r : rows) {
            if (((String) r.get("test")).endsWith("_bw")) {
                continue;
            }
            Map<String, Object> t = (Map<String, Object>) r.get("t_typical_usec");
            Map<String, Object> p = (Map<String, Object>) r.get("p99_usec");
            Map<String, Object> m = (Map<String, Object>) r.get("t_min_usec");
            System.out.printf(Locale.ROOT, "%-12s %6d %6d %4d | %9.2f %9.2f %6.2f %6.2f %-12s | %8.2f %8.2f %6.2f %6.2f"
                            + " | %7.2f %7.2f %5.2f | %d%n",
                    label(r), r.get("size"), r.get("iters"), r.get("runs"), t.get("c"), t.get("java"), t.get("ratio"),
                    t.get("paired_ratio"), interval(t), p.get("c"), p.get("java"), p.get("ratio"), p.get("paired_ratio"),
                    m.get("c"), m.get("java"), m.get("ratio"), r.get("java_allocated_bytes_median"));
        }
        System.out.println("against the noise of the same boot (the ratio's 95% interval against C/C's, C's runs against"
                + " themselves):");
        for (Map<String, Object> r : rows) {
            boolean bw = ((String) r.get("test")).endsWith("_bw");
            for (String metric : bw ? List.of("bw_avg_MBps", "msg_rate_Mpps") : List.of("t_typical_usec", "p99_usec")) {
                if (r.get(metric) instanceof Map<?, ?> m && m.get("verdict") != null) {
                    System.out.printf(Locale.ROOT, "  %-12s %6d %-15s %s%n", label(r), r.get("size"), metric, m.get("verdict"));
                }
            }
        }
        List<String> verdicts = verdicts(rows);
        if (!verdicts.isEmpty()) {
            System.out.println("targets (\"within the interval\": the target lies inside the ratio's 95% interval):");
            verdicts.forEach(v -> System.out.println("  " + v));
        }
        System.out.flush();
    }

    /**
     * The ratio targets jverbs-perftest is held to, one line per case present in {@code rows}:
     * Java/C of the median BW average at 64 KiB at least 0.97, of the median message rate at 64 B
     * at least 0.9, of the median t_typical at 2 B at most 1.1 (write, read and send, RC), and 0
     * bytes allocated in every measured loop. Each says "met" or "missed", and for a miss whether
     * the target lies inside the ratio's 95 % interval (the runs' spread cannot tell it from a
     * hit) or outside it (a measured miss).
     *
     * @param rows the table's rows (one boot's, or pooled)
     * @return the lines, in the table's order
     */
    @SuppressWarnings("unchecked")
    static List<String> verdicts(List<Map<String, Object>> rows) {
        List<String> lines = new ArrayList<>();
        for (Map<String, Object> r : rows) {
            String test = (String) r.get("test");
            if (!"RC".equals(r.get("connection")) || !List.of("write", "read", "send").contains(test.replaceFirst("_(bw|lat)$", ""))) {
                continue;
            }
            int size = ((Number) r.get("size")).intValue();
            String metric;
            double target;
            boolean atLeast;
            if (test.endsWith("_bw") && size == 65536) {
                metric = "bw_avg_MBps";
                target = 0.97;
                atLeast = true;
            } else if (test.endsWith("_bw") && size == 64) {
                metric = "msg_rate_Mpps";
                target = 0.9;
                atLeast = true;
            } else if (test.endsWith("_lat") && size == 2) {
                metric = "t_typical_usec";
                target = 1.1;
                atLeast = false;
            } else {
                continue;
            }
            Map<String, Object> m = (Map<String, Object>) r.get(metric);
            if (m == null || !(m.get("ratio") instanceof Number ratioValue)) {
                continue;
            }
            double ratio = ratioValue.doubleValue();
            boolean met = atLeast ? ratio >= target : ratio <= target;
            String verdict = "met";
            if (!met) {
                Object ci = m.get("ratio_ci95");
                double lo = ci instanceof double[] d ? d[0] : ci instanceof List<?> l ? ((Number) l.get(0)).doubleValue() : Double.NaN;
                double hi = ci instanceof double[] d ? d[1] : ci instanceof List<?> l ? ((Number) l.get(1)).doubleValue() : Double.NaN;
                verdict = Double.isNaN(lo) ? "MISSED" : lo <= target && target <= hi ? "missed, within the interval" : "MISSED, outside the interval";
            }
            lines.add(String.format(Locale.ROOT, "%-9s %6d B %-10s Java/C %s %.2f: %.2f %s", test, size,
                    metric.equals("bw_avg_MBps") ? "BW average" : metric.equals("msg_rate_Mpps") ? "msg rate" : "t_typical",
                    atLeast ? ">=" : "<=", target, ratio, verdict));
        }
        if (!lines.isEmpty()) {
            List<Long> bytes = new ArrayList<>();
            for (Map<String, Object> r : rows) {
                Object v = r.get("java_allocated_bytes");
                if (v instanceof long[] a) {
                    Arrays.stream(a).forEach(bytes::add);
                } else if (v instanceof List<?> l) {
                    l.forEach(b -> bytes.add(((Number) b).longValue()));
                }
            }
            long allocating = bytes.stream().filter(b -> b > 0).count();
            long unmeasured = bytes.stream().filter(b -> b < 0).count();
            lines.add("bytes allocated in Java's measured loops: " + (allocating == 0 && unmeasured == 0
                    ? "0 in every one of " + bytes.size() + " runs: met"
                    : allocating + " of " + bytes.size() + " runs allocated, " + unmeasured + " not measured: MISSED"));
        }
        return lines;
    }

    // ---- Java: server and client as threads of this JVM ----

    /** One Java run: two threads of this JVM, or under {@code --processes} two launcher processes. */
    private static Sample java(String test, List<String> flags, String ip, int port, Path work, String tag) throws Exception {
        return launcher != null ? runJavaProcesses(test, flags, ip, port, work, tag) : runJava(test, flags, ip, port, work, tag);
    }

    private static Sample runJava(String test, List<String> flags, String ip, int port, Path work, String tag) throws Exception {
        Path serverJson = work.resolve(tag + "-server.json");
        Path clientJson = work.resolve(tag + "-client.json");
        List<String> common = new ArrayList<>();
        common.add(test);
        common.addAll(flags);
        common.addAll(List.of("-p", Integer.toString(port), "--out_json"));
        List<String> server = new ArrayList<>(common);
        server.addAll(List.of("--out_json_file", serverJson.toString()));
        List<String> client = new ArrayList<>(common);
        client.addAll(List.of("--out_json_file", clientJson.toString(), ip));
        CompletableFuture<String[]> sf = new CompletableFuture<>();
        Thread.ofPlatform().name("compare-server").daemon(true).start(() -> {
            try {
                bindThread(1L << SERVER_CPU);
                sf.complete(runInProcess(server));
            } catch (Throwable t) {
                sf.completeExceptionally(t);
            }
        });
        awaitListening(port, 60_000, sf);
        Map<String, Long> ticksBefore = THREAD_CPU ? threadTicks() : null;
        String[] cr;
        try {
            bindThread(1L << CLIENT_CPU);
            cr = runInProcess(client);
        } finally {
            bindThread(-1L); // every CPU again
        }
        String[] sr = sf.get(TIMEOUT_S, TimeUnit.SECONDS);
        if (THREAD_CPU) {
            System.out.println("    " + tag + " CPU of this JVM's threads during the client's run (set-up included): "
                    + threadDelta(ticksBefore, threadTicks()));
        }
        if (!cr[0].equals("0") || !sr[0].equals("0")) {
            throw new IllegalStateException("jverbs-perftest " + tag + " failed: client exit " + cr[0] + ":\n" + cr[1]
                    + "\nserver exit " + sr[0] + ":\n" + sr[1]);
        }
        Files.writeString(work.resolve(tag + "-client.txt"), cr[1]);
        return javaSample(clientJson);
    }

    /** A jverbs-perftest client's run, from its JSON (the JIT's milliseconds in the loop: -1 when not seen). */
    private static Sample javaSample(Path clientJson) throws IOException {
        JsonNode root = new ObjectMapper().readTree(clientJson.toFile());
        JsonNode res = root.path("results");
        return new Sample(res.path("BW_average").asDouble(0), res.path("MsgRate").asDouble(0), res.path("t_typical").asDouble(0),
                res.path("percentile_99").asDouble(0), root.path("allocated_bytes").asLong(-1),
                root.path("jit_ms_during_loop").asLong(-1), res.path("t_min").asDouble(0));
    }

    private static String[] runInProcess(List<String> args) {
        StringWriter out = new StringWriter();
        picocli.CommandLine cl = Main.commandLine();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(out, true));
        int exit = cl.execute(args.toArray(String[]::new));
        return new String[] {Integer.toString(exit), out.toString()};
    }

    // ---- processes: C's tools, and the Java launcher under --processes ----

    /** What a server and a client process printed, and their exit codes. */
    private record Pair(int clientExit, int serverExit, String client, String server) {
        boolean ok() {
            return clientExit == 0 && serverExit == 0;
        }
    }

    /**
     * Starts {@code common + serverTail} as the server, waits (at most {@code listenMs}) until it
     * listens on {@code port} and, when {@code ready} is not null, has printed a line containing
     * it, then runs {@code common + clientTail} as the client; each process's output goes to
     * {@code tag}-server.txt and -client.txt in {@code work}.
     *
     * @throws IllegalStateException when the server ends before listening or the client does not end
     */
    private static Pair runProcesses(List<String> common, List<String> serverTail, String ready, List<String> clientTail,
                                     int port, Path work, String tag, long listenMs) throws Exception {
        Path serverLog = work.resolve(tag + "-server.txt");
        Path clientLog = work.resolve(tag + "-client.txt");
        List<String> serverArgs = onCpu(SERVER_CPU, common);
        serverArgs.addAll(serverTail);
        Process server = new ProcessBuilder(serverArgs).redirectErrorStream(true).redirectOutput(serverLog.toFile()).start();
        CompletableFuture<String[]> sf = new CompletableFuture<>();
        server.onExit().thenRun(() -> sf.complete(new String[] {"exited"}));
        List<String> client = onCpu(CLIENT_CPU, common);
        client.addAll(clientTail);
        Process cp;
        try {
            awaitListening(port, listenMs, sf);
            long deadline = System.currentTimeMillis() + listenMs;
            while (ready != null && !Files.readString(serverLog, StandardCharsets.UTF_8).contains(ready)
                    && server.isAlive() && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
            }
            cp = new ProcessBuilder(client).redirectErrorStream(true).redirectOutput(clientLog.toFile()).start();
            if (!cp.waitFor(TIMEOUT_S, TimeUnit.SECONDS)) {
                cp.destroyForcibly();
                throw new IllegalStateException(common.get(0) + " client did not end: " + tag);
            }
            if (!server.waitFor(30, TimeUnit.SECONDS)) {
                server.destroyForcibly();
            }
        } catch (IllegalStateException | AssertionError e) {
            server.destroyForcibly();
            throw e;
        }
        return new Pair(cp.exitValue(), server.exitValue(), Files.readString(clientLog, StandardCharsets.UTF_8),
                Files.readString(serverLog, StandardCharsets.UTF_8));
    }

    /**
     * {@code --processes}: jverbs-perftest's two sides as two launcher processes, as a user runs
     * them and as C's run (a fresh JVM each, warm-up included, which the one-JVM harness pays
     * once); the launcher's options come from {@code JVERBS_PERFTEST_JAVA_OPTS}.
     */
    private static Sample runJavaProcesses(String test, List<String> flags, String ip, int port, Path work, String tag)
            throws Exception {
        Path clientJson = work.resolve(tag + "-client.json");
        Files.deleteIfExists(clientJson);
        List<String> common = new ArrayList<>(List.of(launcher, test));
        common.addAll(flags);
        common.addAll(List.of("-p", Integer.toString(port)));
        // the server warms up while it waits (--alloc_report prints when it is done): the client
        // comes once it is warm, as to a server started well before its client
        Pair r = runProcesses(common, List.of("--alloc_report"), "Warm-up:",
                List.of("--out_json", "--out_json_file", clientJson.toString(), ip), port, work, tag, 180_000);
        if (!r.ok()) {
            throw new IllegalStateException("jverbs-perftest " + tag + " failed: client exit " + r.clientExit() + ":\n"
                    + r.client() + "\nserver exit " + r.serverExit() + ":\n" + r.server());
        }
        return javaSample(clientJson);
    }

    private static Sample runC(String test, List<String> flags, String ip, int port, Path work, String tag) throws Exception {
        String tool = "ib_" + test;
        for (int attempt = 1; ; attempt++) {
            Path clientJson = work.resolve(tag + "-client.json");
            Files.deleteIfExists(clientJson);
            List<String> common = new ArrayList<>();
            common.add(tool);
            common.addAll(flags);
            common.addAll(List.of("-p", Integer.toString(port)));
            Pair r = runProcesses(common, List.of(), null, List.of("--out_json", "--out_json_file=" + clientJson, ip), port,
                    work, tag, 60_000);
            String out = r.client();
            String sout = r.server();
            if (!r.ok()) {
                boolean calibration = (out + sout).contains("Correlation");
                if (calibration && attempt < 4) {
                    port += 1000;
                    continue; // perftest's clock calibration under emulation: retry
                }
                throw new IllegalStateException(tool + " " + tag + " failed (client " + r.clientExit() + ", server "
                        + r.serverExit() + "):\n" + out + "\n" + sout);
            }
            Sample sample = parseC(test.endsWith("_bw"), out, clientJson);
            if (!measured(test.endsWith("_bw"), sample)) {
                if (attempt < 4) {
                    port += 1000;
                    continue; // exit 0 with 0.00 (or inf): its clock calibration failed under emulation
                }
                throw new IllegalStateException(tool + " " + tag + " measured nothing (" + sample + "):\n" + out);
            }
            return sample;
        }
    }

    /**
     * Whether a run's figure is a measurement: C perftest can exit 0 and print a bandwidth of
     * 0.00 or a latency of inf when its cycle-counter calibration failed (seen under QEMU TCG:
     * read_bw 64 KiB "0.00 0.00 0.000000" once in a boot); such a run is retried, never averaged.
     */
    static boolean measured(boolean bw, Sample s) {
        double v = bw ? s.bw() : s.typical();
        return v > 0 && Double.isFinite(v);
    }

    /** The C client's JSON when it parses and has the fields, else its table row. */
    static Sample parseC(boolean bw, String out, Path json) {
        try {
            if (Files.exists(json)) {
                JsonNode res = new ObjectMapper().readTree(json.toFile()).path("results");
                if (bw && res.has("BW_average") && res.has("MsgRate")) {
                    return new Sample(res.path("BW_average").asDouble(), res.path("MsgRate").asDouble(), 0, 0, -1);
                }
                if (!bw && res.has("t_typical") && res.has("percentile_99")) {
                    return new Sample(0, 0, res.path("t_typical").asDouble(), res.path("percentile_99").asDouble(), -1)
                            .withMin(res.path("t_min").asDouble(0));
                }
            }
        } catch (IOException | RuntimeException e) {
            // fall back to the table
        }
        double[] v = row(out);
        // bw: bytes iters peak avg msgrate; lat: bytes iters min max typical avg stdev p99 p99.9
        return bw ? new Sample(v[3], v[4], 0, 0, -1) : new Sample(0, 0, v[4], v[7], -1).withMin(v[2]);
    }

    private static double[] row(String out) {
        String[] lines = out.split("\n");
        for (int i = 0; i < lines.length; i++) {
            if (lines[i].trim().startsWith("#bytes") && i + 1 < lines.length) {
                return Arrays.stream(lines[i + 1].trim().split("\\s+")).mapToDouble(Compare::number).toArray();
            }
        }
        throw new IllegalStateException("no result row in:\n" + out);
    }

    /** A number of C's table; C prints {@code inf} and {@code -nan} where it divided by zero. */
    private static double number(String t) {
        return switch (t.toLowerCase(Locale.ROOT)) {
            case "inf", "+inf" -> Double.POSITIVE_INFINITY;
            case "-inf" -> Double.NEGATIVE_INFINITY;
            case "nan", "-nan", "+nan" -> Double.NaN;
            default -> Double.parseDouble(t);
        };
    }

    /** Waits until something listens on TCP {@code port} (read from /proc, no connection spent). */
    private static void awaitListening(int port, long timeoutMs, CompletableFuture<?> server) throws Exception {
        String hex = String.format(Locale.ROOT, ":%04X", port);
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            for (String table : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
                for (String line : Files.readAllLines(Path.of(table))) {
                    String[] f = line.trim().split("\\s+");
                    if (f.length > 3 && f[1].endsWith(hex) && f[3].equals("0A")) {
                        return;
                    }
                }
            }
            if (server.isDone()) {
                throw new IllegalStateException("the server ended before listening: " + Arrays.toString((Object[]) server.get()));
            }
            Thread.sleep(20);
        }
        throw new IllegalStateException("nothing listens on port " + port + " after " + timeoutMs + " ms");
    }

    /**
     * compare-perftest's picture: per case, C's and jverbs' medians side by side (bars), one
     * chart for bandwidth (MB/s) and one for latency (t_typical, µs).
     */
    static void plotComparison(Path file, String title, String valueAxis, List<String> cases, double[] c, double[] java) {
        org.jfree.data.category.DefaultCategoryDataset d = new org.jfree.data.category.DefaultCategoryDataset();
        for (int i = 0; i < cases.size(); i++) {
            d.addValue(c[i], "C perftest", cases.get(i));
            d.addValue(java[i], "jverbs-perftest", cases.get(i));
        }
        org.jfree.chart.JFreeChart chart = org.jfree.chart.ChartFactory.createBarChart(title, "case", valueAxis, d, org.jfree.chart.plot.PlotOrientation.VERTICAL, true, false, false);
        org.jfree.chart.axis.CategoryAxis axis = chart.getCategoryPlot().getDomainAxis();
        axis.setCategoryLabelPositions(org.jfree.chart.axis.CategoryLabelPositions.UP_45);
        axis.setMaximumCategoryLabelWidthRatio(2.0f);
        Outputs.save(file, chart, Math.max(900, 110 * cases.size()), 560);
    }

}
