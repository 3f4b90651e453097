package io.jverbs.perftest;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * One test (write_bw, read_lat, ...): the C perftest's flags, checked the way C checks them (a
 * combination C refuses exits 1 with C's one-line reason, as C does; one only jverbs refuses exits 2), resolved into a {@link TestSpec},
 * then {@link Run}. Without a host argument it is the server; with one, the client.
 */
@Command(mixinStandardHelpOptions = true, sortOptions = false, usageHelpAutoWidth = true, version = "Version: " + Oob.VERSION,
        description = "Without <host>: start a server and wait for a connection. With <host>: connect to that server.")
final class PerftestCommand implements Callable<Integer> {
    static final int MAX_SIZE = 8_388_608;
    static final int MAX_INLINE = 912;

    final Verb verb;
    final Kind kind;

    @Spec
    CommandSpec spec;

    @Parameters(arity = "0..1", paramLabel = "<host>", description = "the server to connect to (absent: be the server)")
    String host;

    @Option(names = {"-d", "--ib-dev"}, paramLabel = "<dev>", description = "RDMA device (default: the first one found)")
    String device;
    @Option(names = {"-i", "--ib-port"}, paramLabel = "<port>", description = "device port (default 1)")
    int ibPort = 1;
    @Option(names = {"-x", "--gid-index"}, paramLabel = "<index>", description = "GID index (default: RoCE v2 IPv4-mapped on Ethernet, none on IB)")
    Integer gidIndex;
    @Option(names = {"-s", "--size"}, paramLabel = "<size>", description = "message size, bytes (K and M suffixes; default 65536 BW, 2 LAT, 8 atomic)")
    String sizeText;
    @Option(names = {"-n", "--iters"}, paramLabel = "<iters>", description = "iterations (5..100000000; default 5000 write_bw, 1000 otherwise)")
    Integer iters;
    @Option(names = {"-a", "--all"}, description = "run sizes from 2 to 2^23")
    boolean all;
    @Option(names = {"-D", "--duration"}, paramLabel = "<sec>", description = "run for this many seconds instead of -n")
    Integer duration;
    @Option(names = {"-f", "--margin"}, paramLabel = "<sec>", description = "duration mode: seconds left out at each end (default duration/4)")
    Integer margin;
    @Option(names = {"-q", "--qp"}, paramLabel = "<n>", description = "queue pairs (BW tests; default 1)")
    int qps = 1;
    @Option(names = {"-t", "--tx-depth"}, paramLabel = "<dep>", description = "send queue depth (default 128 BW, 1 LAT)")
    Integer txDepth;
    @Option(names = {"-r", "--rx-depth"}, paramLabel = "<dep>", description = "receive queue depth for send tests (default 512)")
    Integer rxDepth;
    @Option(names = {"-I", "--inline_size"}, paramLabel = "<size>", description = "most bytes sent inline (default as C: 220 for write_lat and 236 for send_lat on NVIDIA/Mellanox devices, 0 otherwise)")
    Integer inlineSize;
    @Option(names = {"-R", "--rdma_cm"}, description = "connect the queue pairs with rdma_cm; the handshake then goes over an rdma_cm control queue pair on -p, no TCP")
    boolean rdmaCm;
    @Option(names = {"-b", "--bidirectional"}, description = "bidirectional bandwidth (BW tests)")
    boolean bidirectional;
    @Option(names = {"-p", "--port"}, paramLabel = "<port>", description = "TCP port of the handshake (default 18515)")
    int tcpPort = 18515;
    @Option(names = {"-c", "--connection"}, paramLabel = "<type>", description = "connection type: RC (default), UC (write and send tests) or UD (send tests; a message is at most the MTU)")
    String connection = "RC";
    @Option(names = {"-m", "--mtu"}, paramLabel = "<mtu>", description = "MTU 256..4096 (default: the port's active MTU)")
    Integer mtu;
    @Option(names = {"-F", "--CPU-freq"}, description = "accepted for C compatibility (jverbs-perftest reads no CPU frequency: nothing to warn about)")
    boolean cpuFreq;
    @Option(names = {"-Q", "--cq-mod"}, paramLabel = "<n>", description = "one completion every <n> work requests (default 100; 1 above 8 KiB)")
    Integer cqMod;
    @Option(names = {"-l", "--post_list"}, paramLabel = "<n>", description = "work requests per ibv_post_send (BW tests; default 1)")
    int postList = 1;
    @Option(names = {"-e", "--events"}, description = "sleep on completion events instead of polling")
    boolean events;
    @Option(names = {"-o", "--outs"}, paramLabel = "<n>", description = "outstanding reads/atomics (default: the device's max_qp_rd_atom)")
    Integer outs;
    @Option(names = {"-A", "--atomic_type"}, paramLabel = "<type>", description = "CMP_AND_SWAP or FETCH_AND_ADD (default)")
    String atomicType;
    @Option(names = {"-N", "--noPeak"}, description = "do not compute the peak bandwidth")
    boolean noPeak;
    @Option(names = {"-H", "--report-histogram", "--report-histogrm"}, description = "print every latency sample, sorted")
    boolean histogram;
    @Option(names = {"-U", "--report-unsorted"}, description = "print every latency sample, in order")
    boolean unsorted;
    @Option(names = "--report_gbits", description = "report bandwidth in Gb/s instead of MiB/s")
    boolean reportGbits;
    @Option(names = "--run_infinitely", description = "BW: run until killed, printing a row every -D seconds (default 5)")
    boolean runInfinitely;
    @Option(names = "--out_json", description = "write the report as JSON")
    boolean outJson;
    @Option(names = "--out_json_file", paramLabel = "<file>", description = "the JSON file (default perftest_out.json)")
    Path outJsonFile;
    @Option(names = {"-u", "--qp-timeout"}, paramLabel = "<t>", description = "ACK timeout exponent: 4.096 us * 2^t (default 14)")
    int qpTimeout = 14;

    /** The options C perftest does not have: a refusal of one of their values exits 2, not C's 1. */
    static final Set<String> OWN_OPTIONS = Set.of("--handshake_timeout", "--connect_timeout",
            "--completion_timeout", "--run_timeout", "--max-lat-p99", "--plot", "--plot-compare", "--hdr_log",
            "--alloc_report", "--no_warmup");

    @Option(names = "--handshake_timeout", paramLabel = "<sec>", description = "most seconds to wait for each handshake message (default 4)")
    double handshakeTimeout = 4;
    @Option(names = "--connect_timeout", paramLabel = "<sec>", description = "most seconds for the client to reach the"
            + " server (default 60) / for the server to be reached (default: no limit, as C)")
    Double connectTimeout;
    @Option(names = "--completion_timeout", paramLabel = "<sec>", description = "most seconds without progress during the run (default 10)")
    double completionTimeout = 10;
    @Option(names = "--run_timeout", paramLabel = "<sec>", description = "BW server: most seconds to wait for the client's run (default 600; 0: no limit)")
    double runTimeout = 600;
    @Option(names = {"-w", "--limit_bw", "--min-bw"}, paramLabel = "<MB/s>",
            description = "exit 1 when the average bandwidth is below this (MiB/s)")
    Double minBw;
    @Option(names = {"-y", "--limit_msgrate"}, paramLabel = "<Mpps>", description = "exit 1 when the message rate is below this (Mpps)")
    Double minMsgRate;
    @Option(names = "--max-lat-p99", paramLabel = "<usec>", description = "exit 1 when the 99%% latency percentile is above this")
    Double maxLatP99;
    @Option(names = "--plot", paramLabel = "<file.png>", description = "draw a PNG: latency percentiles, or bandwidth over time")
    Path plot;
    @Option(names = "--plot-compare", paramLabel = "<c-output>", description = "with --plot: draw C perftest's result of the"
            + " same test beside jverbs' (the C tool's printed output saved to a file, or its --out_json file)")
    Path plotCompare;
    @Option(names = "--hdr_log", paramLabel = "<file>", description = "latency: write the HdrHistogram log of the run")
    Path hdrLog;
    @Option(names = "--alloc_report", description = "print the bytes the measured loop allocated")
    boolean allocReport;
    @Option(names = "--no_warmup", description = "skip the warm-up of the post/poll path on a loopback queue-pair pair"
            + " before the handshake (the first run of a fresh JVM then allocates in its measured loop)")
    boolean noWarmup;

    /** What check() noted of the command line as C does (a flag that another overrides), one line each. */
    final java.util.List<String> notes = new java.util.ArrayList<>();
    /** Whether check() found the CQ moderation set by the post list, which C notes on stdout. */
    boolean postListNote;

    /** C's default receive depth of send tests ({@code DEF_RX_SEND}). */
    static final int DEFAULT_RX_SEND = 512;
    /** C's receive depth of UC and UD tests that kept the default ({@code UC_MAX_RX}), at most the iterations. */
    static final int UC_MAX_RX = 16000;

    PerftestCommand(Verb verb, Kind kind) {
        this.verb = verb;
        this.kind = kind;
    }

    /** The test's name, the subcommand: {@code write_bw}, {@code send_lat}, ... */
    String name() {
        return verb.name().toLowerCase(Locale.ROOT) + "_" + kind.name().toLowerCase(Locale.ROOT);
    }

    /** The command line's standard output. */
    PrintWriter out() {
        return spec.commandLine().getOut();
    }

    /** The command line's standard error. */
    PrintWriter err() {
        return spec.commandLine().getErr();
    }

    @Override
    public Integer call() {
        try {
            CompatOptions.Accepted refused = spec == null ? null
                    : CompatOptions.firstRefused(spec.commandLine().getParseResult());
            if (refused != null) {
                throw new PerftestException(refused.label() + ": refused: " + refused.note(), refused.exitCode(), null);
            }
            TestSpec test = check();
            for (String note : notes) {
                err().println(note);
            }
            err().flush();
            if (postListNote) {
                out().println("Post List requested - CQ moderation will be the size of the post list");
            }
            return Run.of(test, new Streams(out(), err())).execute();
        } catch (PerftestException e) {
            err().println(name() + ": " + e.getMessage());
            err().flush();
            out().flush();
            return e.exitCode;
        }
    }

    /**
     * The C checks (perftest_parameters.c), plus what this implementation cannot honour
     * ({@link SpecValidator}; exit code 1 where C refuses too, 2 where only jverbs does). The parsed options stay as given; {@link #notes} and
     * {@link #postListNote} say what C would say of them.
     *
     * @return the test's resolved spec
     */
    TestSpec check() {
        notes.clear();
        postListNote = false;
        SpecValidator validator = new SpecValidator(this, notes);
        TestSpec test = validator.validate();
        postListNote = validator.postListNote();
        return test;
    }
}
