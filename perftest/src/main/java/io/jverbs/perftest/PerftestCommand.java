package io.jverbs.perftest;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * One test (write_bw, read_lat, ...): the C perftest's flags, checked the way C checks them (a
 * refused combination is exit code 2 with a one-line reason), then {@link Run}. Without a host
 * argument it is the server; with one, the client.
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

    // resolved by check()
    /** What check() changed in the command line as C does (a flag that another overrides), one line each. */
    final java.util.List<String> notes = new java.util.ArrayList<>();
    int size;
    int[] sizes;
    int itersResolved;
    int durationSec;
    int marginSec;
    int tx;
    int rx;
    int cqModResolved;
    int inline;

    /**
     * C perftest's inline size when {@code -I} is not given: on a device it recognises, 220 bytes
     * for the RC write latency test and 236 for the RC send latency test, 0 for every bandwidth
     * test and for read and atomics; on a device it does not recognise (rxe among them), 0 even with
     * {@code -I}, as C. jverbs gives the latency defaults for NVIDIA/Mellanox (vendor {@code 0x02c9});
     * C's own sizes for other vendors' NICs (Broadcom 96, EFA 32, …) are not copied: pass {@code -I} there.
     *
     * @param vendorId the device's {@code vendor_id}
     * @return the inline size C would use
     */
    int defaultInline(int vendorId) {
        if (!inlineRecognised(vendorId)) {
            return 0; // C: "Device not recognized to implement inline feature. Disabling it" (-I included)
        }
        if (vendorId != MELLANOX_VENDOR_ID || kind != Kind.LAT || inlineSize != null) {
            return inline;
        }
        return switch (verb) {
            case WRITE -> 220; // RC and UC alike
            case SEND -> 236;
            default -> 0;
        };
    }

    static final int MELLANOX_VENDOR_ID = 0x02c9;
    /**
     * The vendors whose devices C perftest's {@code ib_dev_name} knows (Mellanox/NVIDIA, Chelsio,
     * Intel, Broadcom, Amazon EFA, Huawei, QLogic/Marvell); C goes by part number, jverbs by vendor.
     * Soft-RoCE ({@code 0xffffff}) and siw are not among them.
     */
    private static final java.util.Set<Integer> INLINE_VENDORS = java.util.Set.of(0x02c9, 0x15b3, 0x1425, 0x8086, 0x14e4,
            0x1d0f, 0x19e5, 0x1077, 0x1fc1);

    /** Whether C perftest recognises the device's inline support (else it disables inline). */
    static boolean inlineRecognised(int vendorId) {
        return INLINE_VENDORS.contains(vendorId);
    }

    /**
     * Whether C prints "Device not recognized to implement inline feature. Disabling it" here: on a
     * device it does not recognise, when the inline size was set (by {@code -I}, or to 0 by read and
     * atomic tests) rather than left to the device.
     */
    boolean inlineNote(int vendorId) {
        return !inlineRecognised(vendorId) && (inlineSize != null || verb == Verb.READ || verb == Verb.ATOMIC);
    }
    /** C's default receive depth of send tests ({@code DEF_RX_SEND}). */
    static final int DEFAULT_RX_SEND = 512;
    /** C's receive depth of UC and UD tests that kept the default ({@code UC_MAX_RX}), at most the iterations. */
    static final int UC_MAX_RX = 16000;

    /** Whether the queue pairs are unreliable datagram ones ({@code -c UD}: send tests only). */
    boolean ud() {
        return connection.equals("UD");
    }

    /**
     * {@code -c UD}, once the MTU is agreed: a datagram carries at most the MTU, so a larger
     * message size becomes the MTU when it was not asked for ({@code -a}, or the default size),
     * and is an error when {@code -s} asked for it, as the distribution's C perftest decides
     * ("Max message size in UD cannot be greater than MTU", exit 1).
     *
     * @param mtuBytes the agreed MTU in bytes
     * @return C's note on the change, or null when the size fits
     * @throws PerftestException when {@code -s} asked for more than the MTU
     */
    String fitDatagramSize(int mtuBytes) {
        if (!ud() || size <= mtuBytes) {
            return null;
        }
        if (sizeText != null && !all) {
            throw new PerftestException(" Max message size in UD cannot be greater than MTU (" + mtuBytes
                    + " bytes; -s " + size + ")");
        }
        size = mtuBytes;
        sizes = java.util.Arrays.stream(sizes).filter(v -> v <= mtuBytes).toArray();
        if (sizes.length == 0 || sizes[sizes.length - 1] != mtuBytes) {
            sizes = java.util.stream.IntStream.concat(java.util.Arrays.stream(sizes), java.util.stream.IntStream.of(mtuBytes))
                    .toArray();
        }
        return " Max msg size in UD is MTU " + mtuBytes + "\n Changing to this MTU";
    }
    int mtuEnum;
    boolean cas;
    boolean postListNote;
    CReference cReference;

    PerftestCommand(Verb verb, Kind kind) {
        this.verb = verb;
        this.kind = kind;
    }

    boolean isServer() {
        return host == null;
    }

    boolean duration() {
        return durationSec > 0;
    }

    String name() {
        return verb.name().toLowerCase(Locale.ROOT) + "_" + kind.name().toLowerCase(Locale.ROOT);
    }

    PrintWriter out() {
        return spec.commandLine().getOut();
    }

    PrintWriter err() {
        return spec.commandLine().getErr();
    }

    @Override
    public Integer call() {
        try {
            check();
            if (spec != null) {
                notes.addAll(0, CompatOptions.notes(spec.commandLine().getParseResult()));
            }
            for (String note : notes) {
                err().println(note);
            }
            err().flush();
            if (postListNote) {
                out().println("Post List requested - CQ moderation will be the size of the post list");
            }
            return new Run(this).execute();
        } catch (PerftestException e) {
            err().println(name() + ": " + e.getMessage());
            err().flush();
            out().flush();
            return e.exitCode;
        }
    }

    /** The C checks (perftest_parameters.c), plus what this implementation cannot honour: exit 2. */
    void check() {
        boolean bw = kind == Kind.BW;
        notes.clear();
        refuse(postList < 1, "-l/--post_list must be 1 or more");
        refuse(postList > 1 && !bw, "Post list is supported in BW tests only");
        switch (connection) {
            case "RC" -> { }
            case "UC" -> {
                refuse(verb == Verb.READ || verb == Verb.ATOMIC, "UC connection not possible in READ/ATOMIC verbs");
                refuse(rdmaCm, "UC is not supported in librdmacm");
            }
            case "UD" -> {
                refuse(verb != Verb.SEND, "UD connection only possible in SEND verb");
            }
            case "XRC", "DC", "SRD", "RawEth" -> refuse(true, "-c " + connection
                    + " is not supported: jverbs-perftest makes RC, UC and UD queue pairs only");
            default -> refuse(true, "Invalid Connection type. Please choose from {RC,UC,UD,XRC,DC,SRD}");
        }
        refuse(qps < 1 || qps > 16384, "num of Qps must be 1..16384");
        refuse(!bw && qps != 1, "Multiple QPs only available on bw tests");
        refuse(!bw && bidirectional, "Bidirectional is only available in BW test");
        refuse(!bw && noPeak, "NoPeak only valid for BW tests");
        refuse(bw && (histogram || unsorted), "Available only on Latency tests (-H/-U)");
        refuse(events && verb == Verb.WRITE, "Events feature not available on WRITE verb");
        refuse(atomicType != null && verb != Verb.ATOMIC, "-A/--atomic_type is for atomic tests only");
        cas = false;
        if (atomicType != null) {
            switch (atomicType) {
                case "CMP_AND_SWAP" -> cas = true;
                case "FETCH_AND_ADD" -> cas = false;
                default -> refuse(true, "Invalid Atomic type! please choose from {CMP_AND_SWAP,FETCH_AND_ADD}");
            }
        }
        // -o above the device's max_qp_rd_atom is lowered to it, and 0 or less means that max, as C (Session)
        refuse(outs != null && verb != Verb.READ && verb != Verb.ATOMIC, "Setting Outstanding reads only available on READ verb");
        refuse(inlineSize != null && (verb == Verb.READ || verb == Verb.ATOMIC), "Inline feature not available on READ/Atomic verbs");
        refuse(rxDepth != null && verb != Verb.SEND && rxDepth > 1, "On RDMA verbs rx depth can be only 1");
        refuse(cqMod != null && (cqMod < 1 || cqMod > 1024), "CQ moderation should be between 1 and 1024");
        refuse(ibPort < 1 || ibPort > 255, "IB Port can't be less than 1");
        refuse(tcpPort < 1 || tcpPort > 65535, "-p/--port must be 1..65535");
        refuse(gidIndex != null && (gidIndex < 0 || gidIndex > 64), "Gid index should be between 0 and 64");
        refuse(qpTimeout < 0 || qpTimeout > 31, "-u/--qp-timeout must be 0..31");
        refuseSeconds("--handshake_timeout", handshakeTimeout, null);
        if (connectTimeout != null) {
            refuseSeconds("--connect_timeout", connectTimeout, null);
        }
        refuseSeconds("--completion_timeout", completionTimeout, null);
        refuseSeconds("--run_timeout", runTimeout, "no limit");

        // run length: iterations, duration, or forever
        refuse(duration != null && duration < 1, "Duration period must be positive");
        // what C ignores is ignored here too, the parsed options kept as given
        Integer itersGiven = iters;
        String sizeGiven = all ? null : sizeText;
        if (duration != null && iters != null) {
            notes.add("note: -D/--duration runs for a time: -n/--iters " + iters + " is ignored, as C does");
            itersGiven = null;
        }
        refuse(all && duration != null, "Duration mode currently doesn't support running on all sizes.");
        if (all && sizeText != null) {
            notes.add("note: -a/--all runs every size from 2 to 2^23: -s/--size " + sizeText + " is ignored, as C does");
        }
        refuse(events && duration != null, "Duration mode doesn't work with events.");
        if (runInfinitely) {
            refuse(!bw, "run_infinitely exists only in BW tests for now.");
            refuse(events, "run_infinitely does not support events feature yet.");
            refuse(bidirectional && verb == Verb.SEND, "run_infinitely mode is not supported in SEND Bidirectional BW test");
            refuse(all, "run_infinitely does not run all sizes");
            if (itersGiven != null) {
                notes.add("note: --run_infinitely runs until killed: -n/--iters " + iters + " is ignored, as C does");
                itersGiven = null;
            }
        }
        durationSec = duration != null ? duration : runInfinitely ? 5 : 0;
        marginSec = margin != null ? margin : durationSec / 4;
        refuse(margin != null && margin < 0, "Margin must be 0 or more");
        refuse(durationSec > 0 && !runInfinitely && !(durationSec > 2 * marginSec), "please check that DURATION > 2*MARGIN");
        if (runInfinitely) {
            marginSec = 0;
        }
        int defaultIters = verb == Verb.WRITE && bw ? 5000 : 1000;
        itersResolved = itersGiven != null ? itersGiven : defaultIters;
        refuse(itersResolved < 5 || itersResolved > 100_000_000, "Iteration num must be 5..100000000");

        // sizes
        int defaultSize = verb == Verb.ATOMIC ? 8 : bw ? 65536 : 2;
        size = sizeGiven != null ? parseSize(sizeGiven) : defaultSize;
        refuse(size < 1 || size > MAX_SIZE, "Size of message must be 1.." + MAX_SIZE);
        refuse(verb == Verb.ATOMIC && (size != 8 || all), "Message size cannot be changed for Atomic tests");
        if (all) {
            sizes = new int[23];
            for (int i = 1; i <= 23; i++) {
                sizes[i - 1] = 1 << i;
            }
            size = MAX_SIZE;
        } else {
            sizes = new int[] {size};
        }

        // queues
        tx = txDepth != null ? txDepth : bw ? 128 : 1;
        refuse(tx < 1 || tx > 15000, "Tx depth must be 1..15000");
        if (!duration() && tx > itersResolved) {
            tx = itersResolved;
        }
        rx = rxDepth != null ? rxDepth : verb == Verb.SEND ? DEFAULT_RX_SEND : 1;
        refuse(rx < 1 || rx > 16384, "Rx depth must be 1..16384");
        if (verb == Verb.SEND && !duration() && rx > itersResolved) {
            rx = itersResolved;
        }
        if (rx == DEFAULT_RX_SEND && !duration() && !runInfinitely && (ud() || connection.equals("UC"))) {
            // C's rule for the unreliable transports: no receiver-not-ready retry holds the sender
            // back, so the receiver keeps up to UC_MAX_RX (16000) receives posted, not 512. With 512,
            // send_bw -c UD -s 64 -n 20000 lost 271-6,430 datagrams a run in the emulated guest when
            // this side received (rxe's rcvd_pkts minus rdma_recvs), while the C server lost none.
            rx = Math.min(itersResolved, UC_MAX_RX);
        }
        if (verb == Verb.SEND && rx % 2 == 1 && bw && !all && !runInfinitely && rxDepth == null) {
            rx += 1; // C's work-around for odd receive depths in send tests
        }
        cqModResolved = cqMod != null ? cqMod : 100;
        refuse(cqModResolved < 1, "CQ moderation must be 1 or more");
        if (size > 8192 && !all && !events && cqMod == null) {
            cqModResolved = 1;
        }
        if (!bw) {
            cqModResolved = 1;
        }
        postListNote = false;
        if (postList > 1) {
            refuse(!duration() && !runInfinitely && itersResolved % postList != 0,
                    "Number of iterations must be a multiple of post list size");
            refuse(postList > tx, "Post list size (" + postList + ") must not exceed the tx depth (" + tx + ")");
            if (cqMod == null) {
                cqModResolved = postList; // as C: one completion per list
                postListNote = true;
            } else {
                refuse(postList % cqModResolved != 0, "Post list size must be a multiple of CQ moderation");
            }
        }
        cqModResolved = Math.min(cqModResolved, tx);
        inline = inlineSize != null ? inlineSize : 0; // without -I, Session sets the device's default (defaultInline)
        refuse(inline < 0 || inline > MAX_INLINE, "Max inline must be 0.." + MAX_INLINE);
        if (verb == Verb.READ || verb == Verb.ATOMIC) {
            inline = 0;
        }
        mtuEnum = 0;
        if (mtu != null) {
            mtuEnum = switch (mtu) {
                case 256 -> 1;
                case 512 -> 2;
                case 1024 -> 3;
                case 2048 -> 4;
                case 4096 -> 5;
                default -> {
                    refuse(true, "Invalid MTU - " + mtu + ". Please choose mtu from {256,512,1024,2048,4096}");
                    yield 0;
                }
            };
        }
        if (bw && !duration() && !runInfinitely && (long) itersResolved * qps > 20000) {
            noPeak = true; // as C: no peak above 20000 iterations
        }
        if (duration()) {
            noPeak = true;
        }
        refuse(plotCompare != null && plot == null, "--plot-compare needs --plot <file.png>");
        cReference = plotCompare != null ? CReference.read(plotCompare, bw) : null;
        refuse(minBw != null && !bw, "-w/--limit_bw is for BW tests");
        refuse(minMsgRate != null && !bw, "-y/--limit_msgrate is for BW tests");
        refuse(maxLatP99 != null && bw, "--max-lat-p99 is for latency tests");
        refuse(maxLatP99 != null && duration(), "--max-lat-p99 needs iterations (duration mode reports no percentiles)");
        refuse(hdrLog != null && bw, "--hdr_log is for latency tests");
        refuse(isServer() && !bw && (verb == Verb.READ || verb == Verb.ATOMIC) && (maxLatP99 != null || hdrLog != null),
                "the read/atomic latency server measures nothing: give --max-lat-p99/--hdr_log to the client");
        if (outJsonFile == null) {
            outJsonFile = Path.of("perftest_out.json");
        }
    }

    private static int parseSize(String text) {
        String t = text.trim();
        long factor = 1;
        if (t.endsWith("K")) {
            factor = 1024;
            t = t.substring(0, t.length() - 1);
        } else if (t.endsWith("M")) {
            factor = 1024 * 1024;
            t = t.substring(0, t.length() - 1);
        }
        try {
            long v = Long.parseLong(t) * factor;
            if (v < 1 || v > MAX_SIZE) {
                throw PerftestException.usage("Size of message must be 1.." + MAX_SIZE + ", not " + text);
            }
            return (int) v;
        } catch (NumberFormatException e) {
            throw PerftestException.usage("Size of message is not a number: " + text);
        }
    }

    /** Refuses a time in seconds the deadlines cannot use (below 1 ms, NaN, infinite; see {@link Seconds}). */
    private static void refuseSeconds(String option, double value, String zeroMeaning) {
        String why = Seconds.refusal(option, value, zeroMeaning);
        refuse(why != null, why);
    }

    private static void refuse(boolean condition, String message) {
        if (condition) {
            throw PerftestException.usage(message);
        }
    }

    long handshakeMs() {
        return (long) (handshakeTimeout * 1000);
    }

    /** The client's bound to reach the server (default 60 s); the server's to be reached (default 0: no limit, as C). */
    long connectMs() {
        if (connectTimeout == null) {
            return isServer() ? 0 : 60_000;
        }
        return (long) (connectTimeout * 1000);
    }

    long completionNs() {
        return (long) (completionTimeout * 1e9);
    }

    long runMs() {
        return (long) (runTimeout * 1000);
    }
}
