package io.jverbs.perftest;

import java.nio.file.Path;
import java.util.List;

/**
 * The C checks of a test's command line (perftest_parameters.c), plus what this implementation
 * cannot honour, and C's resolution of what they leave. A combination C refuses ends with C's
 * one-line reason and C's exit code 1 ({@link PerftestException#refusedAsC}); one only jverbs
 * refuses (a value its own options cannot use, a connection type it does not make) with exit code
 * 2 ({@link PerftestException#refusedHere}). An accepted line is a {@link TestSpec}.
 * The checks run in C's order, so the first refusal of a line that breaks several rules is C's.
 */
final class SpecValidator {
    private final PerftestCommand c;
    private final boolean bw;
    private final List<String> notes;
    // resolved, in the order the steps resolve them
    private boolean cas;
    private int size;
    private int[] sizes;
    private int iters;
    private int durationSec;
    private int marginSec;
    private int tx;
    private int rx;
    private int cqMod;
    private int inline;
    private int mtuEnum;
    private boolean noPeak;
    private CReference cReference;
    private boolean postListNote;

    /**
     * A validator of one parsed command line.
     *
     * @param c the parsed options, read and never changed
     * @param notes where the notes on options that others override go, one line each
     */
    SpecValidator(PerftestCommand c, List<String> notes) {
        this.c = c;
        this.bw = c.kind == Kind.BW;
        this.notes = notes;
    }

    /**
     * Checks and resolves the command line.
     *
     * @return the test's spec
     * @throws PerftestException on the first refused option: exit code 1 with C's message where C
     *                           refuses it too, 2 where only jverbs does
     */
    TestSpec validate() {
        testShape();
        network();
        timeouts();
        runLength();
        sizes();
        queues();
        mtu();
        peak();
        reporting();
        return new TestSpec(c.verb, c.kind, c.host, c.device, c.ibPort, c.gidIndex, c.tcpPort, c.rdmaCm, c.connection,
                c.qps, c.bidirectional, size, sizes, c.sizeText != null && !c.all, iters, durationSec, marginSec,
                c.runInfinitely, tx, rx, cqMod, c.postList, inline, c.inlineSize != null, c.outs, mtuEnum, c.qpTimeout,
                c.events, cas, noPeak, c.histogram, c.unsorted, c.reportGbits, c.outJson,
                c.outJsonFile != null ? c.outJsonFile : Path.of("perftest_out.json"), c.handshakeTimeout,
                c.connectTimeout, c.completionTimeout, c.runTimeout, c.minBw, c.minMsgRate, c.maxLatP99, c.plot,
                cReference, c.hdrLog, c.allocReport, c.noWarmup, extras());
    }

    /** Whether C prints its note that the CQ moderation follows the post list (after {@link #validate}). */
    boolean postListNote() {
        return postListNote;
    }

    /** Connection type, post list and the options each verb and test kind allows. */
    private void testShape() {
        refuse(c.postList < 1, "-l/--post_list must be 1 or more");
        refuse(c.postList > 1 && !bw, "Post list is supported in BW tests only");
        switch (c.connection) {
            case "RC" -> { }
            case "UC" -> {
                refuse(c.verb == Verb.READ || c.verb == Verb.ATOMIC, "UC connection not possible in READ/ATOMIC verbs");
                refuse(c.rdmaCm, "UC is not supported in librdmacm");
            }
            case "UD" -> {
                refuse(c.verb != Verb.SEND, "UD connection only possible in SEND verb");
            }
            case "XRC", "DC", "SRD", "RawEth" -> refuseHere(true, "-c " + c.connection
                    + " is not supported: jverbs-perftest makes RC, UC and UD queue pairs only");
            default -> refuse(true, "Invalid Connection type. Please choose from {RC,UC,UD,XRC,DC,SRD}");
        }
        refuse(c.qps < 1 || c.qps > 16384, "num of Qps must be 1..16384");
        refuse(!bw && c.qps != 1, "Multiple QPs only available on bw tests");
        refuse(!bw && c.bidirectional, "Bidirectional is only available in BW test");
        refuse(!bw && c.noPeak, "NoPeak only valid for BW tests");
        refuse(bw && (c.histogram || c.unsorted), "Available only on Latency tests (-H/-U)");
        refuse(c.events && c.verb == Verb.WRITE, "Events feature not available on WRITE verb");
        refuse(c.atomicType != null && c.verb != Verb.ATOMIC, "-A/--atomic_type is for atomic tests only");
        cas = false;
        if (c.atomicType != null) {
            switch (c.atomicType) {
                case "CMP_AND_SWAP" -> cas = true;
                case "FETCH_AND_ADD" -> cas = false;
                default -> refuse(true, "Invalid Atomic type! please choose from {CMP_AND_SWAP,FETCH_AND_ADD}");
            }
        }
        // -o above the device's max_qp_rd_atom is lowered to it, and 0 or less means that max, as C (Session)
        refuse(c.outs != null && c.verb != Verb.READ && c.verb != Verb.ATOMIC, "Setting Outstanding reads only available on READ verb");
        refuse(c.inlineSize != null && (c.verb == Verb.READ || c.verb == Verb.ATOMIC), "Inline feature not available on READ/Atomic verbs");
        refuse(c.rxDepth != null && c.verb != Verb.SEND && c.rxDepth > 1, "On RDMA verbs rx depth can be only 1");
        refuse(c.cqMod != null && (c.cqMod < 1 || c.cqMod > 1024), "CQ moderation should be between 1 and 1024");
    }

    /** The device port, the handshake port, the GID index and the ACK timeout. */
    private void network() {
        refuse(c.ibPort < 1 || c.ibPort > 255, "IB Port can't be less than 1");
        refuse(c.tcpPort < 1 || c.tcpPort > 65535, "-p/--port must be 1..65535");
        refuse(c.gidIndex != null && (c.gidIndex < 0 || c.gidIndex > 64), "Gid index should be between 0 and 64");
        refuse(c.qpTimeout < 0 || c.qpTimeout > 31, "-u/--qp-timeout must be 0..31");
    }

    /** The four timeouts: each a time the deadlines can use ({@link Seconds}). */
    private void timeouts() {
        refuseSeconds("--handshake_timeout", c.handshakeTimeout, null);
        if (c.connectTimeout != null) {
            refuseSeconds("--connect_timeout", c.connectTimeout, null);
        }
        refuseSeconds("--completion_timeout", c.completionTimeout, null);
        refuseSeconds("--run_timeout", c.runTimeout, "no limit");
    }

    /** Run length: iterations, duration and margin, or forever; what C ignores is noted and ignored. */
    private void runLength() {
        refuse(c.duration != null && c.duration < 1, "Duration period must be positive");
        // what C ignores is ignored here too, the parsed options kept as given
        Integer itersGiven = c.iters;
        if (c.duration != null && c.iters != null) {
            notes.add("note: -D/--duration runs for a time: -n/--iters " + c.iters + " is ignored, as C does");
            itersGiven = null;
        }
        refuse(c.all && c.duration != null, "Duration mode currently doesn't support running on all sizes.");
        if (c.all && c.sizeText != null) {
            notes.add("note: -a/--all runs every size from 2 to 2^23: -s/--size " + c.sizeText + " is ignored, as C does");
        }
        refuse(c.events && c.duration != null, "Duration mode doesn't work with events.");
        if (c.runInfinitely) {
            refuse(!bw, "run_infinitely exists only in BW tests for now.");
            refuse(c.events, "run_infinitely does not support events feature yet.");
            refuse(c.bidirectional && c.verb == Verb.SEND, "run_infinitely mode is not supported in SEND Bidirectional BW test");
            refuse(c.all, "run_infinitely does not run all sizes");
            if (itersGiven != null) {
                notes.add("note: --run_infinitely runs until killed: -n/--iters " + c.iters + " is ignored, as C does");
                itersGiven = null;
            }
        }
        durationSec = c.duration != null ? c.duration : c.runInfinitely ? 5 : 0;
        marginSec = c.margin != null ? c.margin : durationSec / 4;
        refuse(c.margin != null && c.margin < 0, "Margin must be 0 or more");
        refuse(durationSec > 0 && !c.runInfinitely && !(durationSec > 2 * marginSec), "please check that DURATION > 2*MARGIN");
        if (c.runInfinitely) {
            marginSec = 0;
        }
        int defaultIters = c.verb == Verb.WRITE && bw ? 5000 : 1000;
        iters = itersGiven != null ? itersGiven : defaultIters;
        refuse(iters < 5 || iters > 100_000_000, "Iteration num must be 5..100000000");
    }

    /** Message sizes: {@code -s}, the test's default, or 2..2^23 under {@code -a}. */
    private void sizes() {
        String sizeGiven = c.all ? null : c.sizeText;
        int defaultSize = c.verb == Verb.ATOMIC ? 8 : bw ? 65536 : 2;
        size = sizeGiven != null ? parseSize(sizeGiven) : defaultSize;
        refuse(size < 1 || size > PerftestCommand.MAX_SIZE, "Size of message must be 1.." + PerftestCommand.MAX_SIZE);
        refuse(c.verb == Verb.ATOMIC && (size != 8 || c.all), "Message size cannot be changed for Atomic tests");
        if (c.all) {
            sizes = new int[23];
            for (int i = 1; i <= 23; i++) {
                sizes[i - 1] = 1 << i;
            }
            size = PerftestCommand.MAX_SIZE;
        } else {
            sizes = new int[] {size};
        }
    }

    /** Queue depths, CQ moderation and post lists, clamped as C clamps them; the inline size. */
    private void queues() {
        boolean duration = durationSec > 0;
        tx = c.txDepth != null ? c.txDepth : bw ? 128 : 1;
        refuse(tx < 1 || tx > 15000, "Tx depth must be 1..15000");
        if (!duration && tx > iters) {
            tx = iters;
        }
        rx = c.rxDepth != null ? c.rxDepth : c.verb == Verb.SEND ? PerftestCommand.DEFAULT_RX_SEND : 1;
        refuse(rx < 1 || rx > 16384, "Rx depth must be 1..16384");
        if (c.verb == Verb.SEND && !duration && rx > iters) {
            rx = iters;
        }
        boolean unreliable = c.connection.equals("UD") || c.connection.equals("UC");
        if (rx == PerftestCommand.DEFAULT_RX_SEND && !duration && !c.runInfinitely && unreliable) {
            // C's rule for the unreliable transports: no receiver-not-ready retry holds the sender
            // back, so the receiver keeps up to UC_MAX_RX (16000) receives posted, not 512. With 512,
            // send_bw -c UD -s 64 -n 20000 lost 271-6,430 datagrams a run in the emulated guest when
            // this side received (rxe's rcvd_pkts minus rdma_recvs), while the C server lost none.
            rx = Math.min(iters, PerftestCommand.UC_MAX_RX);
        }
        if (c.verb == Verb.SEND && rx % 2 == 1 && bw && !c.all && !c.runInfinitely && c.rxDepth == null) {
            rx += 1; // C's work-around for odd receive depths in send tests
        }
        cqMod = c.cqMod != null ? c.cqMod : 100;
        refuse(cqMod < 1, "CQ moderation must be 1 or more");
        if (size > 8192 && !c.all && !c.events && c.cqMod == null && !"UD".equalsIgnoreCase(c.connection)) {
            cqMod = 1; // as C: not under UD, whose size is fitted to the MTU later
        }
        if (!bw) {
            cqMod = 1;
        }
        postListNote = false;
        if (c.postList > 1) {
            refuse(!duration && !c.runInfinitely && iters % c.postList != 0,
                    "Number of iterations must be a multiple of post list size");
            refuse(c.postList > tx, "Post list size (" + c.postList + ") must not exceed the tx depth (" + tx + ")");
            if (c.cqMod == null) {
                cqMod = c.postList; // as C: one completion per list
                postListNote = true;
            } else {
                refuse(c.postList % cqMod != 0, "Post list size must be a multiple of CQ moderation");
            }
        }
        cqMod = Math.min(cqMod, tx);
        inline = c.inlineSize != null ? c.inlineSize : 0; // without -I, Session sets the device's default (defaultInline)
        refuse(inline < 0 || inline > PerftestCommand.MAX_INLINE, "Max inline must be 0.." + PerftestCommand.MAX_INLINE);
        if (c.verb == Verb.READ || c.verb == Verb.ATOMIC) {
            inline = 0;
        }
    }

    /** {@code -m}: one of the five verbs MTUs, or 0 for the port's active one. */
    private void mtu() {
        mtuEnum = 0;
        if (c.mtu != null) {
            mtuEnum = switch (c.mtu) {
                case 256 -> 1;
                case 512 -> 2;
                case 1024 -> 3;
                case 2048 -> 4;
                case 4096 -> 5;
                default -> {
                    refuse(true, "Invalid MTU - " + c.mtu + ". Please choose mtu from {256,512,1024,2048,4096}");
                    yield 0;
                }
            };
        }
    }

    /** Whether the peak bandwidth is left out: {@code -N}, and where C leaves it out anyway. */
    private void peak() {
        noPeak = c.noPeak;
        boolean duration = durationSec > 0;
        if (bw && !duration && !c.runInfinitely && (long) iters * c.qps > 20000) {
            noPeak = true; // as C: no peak above 20000 iterations
        }
        if (duration) {
            noPeak = true;
        }
    }

    /** The plot and C's result beside it, the thresholds and the HdrHistogram log: each for the test kinds that measure it. */
    private void reporting() {
        boolean duration = durationSec > 0;
        refuseHere(c.plotCompare != null && c.plot == null, "--plot-compare needs --plot <file.png>");
        cReference = c.plotCompare != null ? CReference.read(c.plotCompare, bw) : null;
        refuse(c.minBw != null && !bw, "-w/--limit_bw is for BW tests");
        refuse(c.minMsgRate != null && !bw, "-y/--limit_msgrate is for BW tests");
        refuseHere(c.maxLatP99 != null && bw, "--max-lat-p99 is for latency tests");
        refuseHere(c.maxLatP99 != null && duration, "--max-lat-p99 needs iterations (duration mode reports no percentiles)");
        refuseHere(c.hdrLog != null && bw, "--hdr_log is for latency tests");
        refuseHere(c.host == null && !bw && (c.verb == Verb.READ || c.verb == Verb.ATOMIC) && (c.maxLatP99 != null || c.hdrLog != null),
                "the read/atomic latency server measures nothing: give --max-lat-p99/--hdr_log to the client");
    }

    /** The implemented options of {@link CompatOptions}, checked as C checks them. */
    private Extras extras() {
        picocli.CommandLine.ParseResult p = c.spec == null ? null : c.spec.commandLine().getParseResult();
        if (p == null) {
            return Extras.NONE;
        }
        String output = CompatOptions.value(p, "--output");
        if (output != null) {
            refuse(!List.of("bandwidth", "message_rate", "latency").contains(output),
                    "Invalid verbosity level output flag. Please use bandwidth, latency, message_rate");
            refuse(bw && output.equals("latency"), "Output verbosity level for BW can be: bandwidth, message_rate");
            refuse(!bw && !output.equals("latency"), "Output verbosity level for LAT can be: latency");
        }
        List<String> counters = List.of();
        String w = CompatOptions.value(p, "-W");
        if (w != null) {
            counters = java.util.Arrays.stream(w.split(",")).filter(x -> !x.isBlank()).toList();
            refuse(counters.isEmpty() || counters.stream().anyMatch(x -> x.contains("..")),
                    "Failed to parse the performance counter list");
        }
        int waitDestroy = intOf(p, "--wait_destroy", 0);
        refuse(waitDestroy < 0, "--wait_destroy must be 0 or more seconds");
        boolean cycles = CompatOptions.given(p, "-C");
        refuse(cycles && bw, "Available only on Latency tests");
        double gap = 0;
        String gapText = CompatOptions.value(p, "--latency_gap");
        if (gapText != null) {
            gap = intOf(p, "--latency_gap", 0);
            refuse(gap < 0, "Latency gap must be 0 or more microseconds");
            refuse(bw, "Latency gap feature is only for latency tests");
        }
        String payloadFile = CompatOptions.value(p, "--payload_file_path");
        byte[] payload = payloadFile == null ? null : Extras.readPayload(Path.of(payloadFile));
        int sl = intOf(p, "-S", 0);
        refuse(sl < 0 || sl > 15, "Only 15 Service levels");
        String hop = CompatOptions.value(p, "-L");
        if (hop != null) {
            int h = intOf(p, "-L", 64);
            refuse(h < 0 || h > 255, "Hop limit should be between 0 and 255");
            refuse(h != 64, "Hop limit only valid for RawEth QP");
        }
        int tclass = intOf(p, "--tclass", 0);
        refuseHere(tclass < 0 || tclass > 255, "--tclass must be 0..255 (the traffic class is 8 bits)");
        if (CompatOptions.given(p, "-T")) {
            int tos = intOf(p, "-T", 0);
            refuse(tos < 0 || tos > 255, "TOS should be between 0 and 255");
            refuse(!c.rdmaCm, " TOS only valid for rdma_cm based QP and RawEth QP ");
            refuseHere("UD".equalsIgnoreCase(c.connection), "-T with -c UD: the datagram resolution does not set a type"
                    + " of service in jverbs-perftest");
            tclass = tos; // the data connections' queue pairs carry it; rdma_cm sets it as their type of service
        }
        int[] labels = {0};
        String fl = CompatOptions.value(p, "--flow_label");
        if (fl != null) {
            try {
                labels = java.util.Arrays.stream(fl.split(",")).mapToInt(x -> Integer.parseInt(x.trim())).toArray();
            } catch (NumberFormatException e) {
                refuse(true, "Invalid flow label list: " + fl);
            }
            refuse(labels.length == 0 || java.util.Arrays.stream(labels).anyMatch(x -> x < 0), "Flow label must be non-negative");
            refuseHere(java.util.Arrays.stream(labels).anyMatch(x -> x > 0xFFFFF), "--flow_label must be 0..1048575 (20 bits)");
        }
        refuseHere(c.rdmaCm && (CompatOptions.given(p, "-S") || CompatOptions.given(p, "--tclass")
                || CompatOptions.given(p, "--flow_label")), "-S, --tclass and --flow_label set the address vector of"
                + " verbs queue pairs; with -R rdma_cm makes it (C does not use them there either)");
        int retry = intOf(p, "--retry_count", 7);
        refuse(retry < 0, "Retry Count value must be positive");
        refuseHere(retry > 7, "--retry_count must be 0..7 (the queue pair's retry count is 3 bits)");
        String link = CompatOptions.value(p, "--force-link");
        if (link != null) {
            String l = link.toLowerCase(java.util.Locale.ROOT);
            refuse(!(l.length() > 0 && ("ib".startsWith(l) || "ethernet".startsWith(l))),
                    "Invalid link layer value should be IB or ETHERNET.");
            link = "ib".startsWith(l) ? "IB" : "Ethernet";
        }
        double[] rate = rateLimiter(p);
        String mmap = CompatOptions.value(p, "--mmap");
        long mmapOffset = intOf(p, "--mmap-offset", 0);
        refuse(mmapOffset < 0, "--mmap-offset must be 0 or more");
        refuseHere(mmap == null && CompatOptions.given(p, "--mmap-offset"), "--mmap-offset needs --mmap");
        boolean cpuUtil = CompatOptions.given(p, "--cpu_util");
        if (cpuUtil && durationSec <= 0) {
            notes.add(" CPU Utilization works only with Duration mode."); // C's warning; it runs on without the column
            cpuUtil = false;
        }
        return new Extras(output, counters, waitDestroy, cycles, gap, payload, CompatOptions.given(p, "--ipv6"), sl,
                tclass, labels, retry, link, cpuUtil, CompatOptions.given(p, "--report-both"),
                CompatOptions.given(p, "--perform_warm_up"), vector(p), rate[0], (char) rate[1], (int) rate[2],
                mmap == null ? null : Path.of(mmap), mmapOffset, CompatOptions.given(p, "-z"),
                !CompatOptions.given(p, "--disable_pcie_relaxed"));
    }

    /** The rate limiter's options, checked as C checks them: {rate, units, burst}; rate 0 when off. */
    private double[] rateLimiter(picocli.CommandLine.ParseResult p) {
        String rateText = CompatOptions.value(p, "--rate_limit");
        String type = CompatOptions.value(p, "--rate_limit_type");
        String units = CompatOptions.value(p, "--rate_units");
        boolean burstGiven = CompatOptions.given(p, "--burst_size");
        if (units != null) {
            refuse(!List.of("M", "g", "p").contains(units), "Invalid rate limit units. Please use M,g or p");
        }
        if (type != null) {
            refuse(!List.of("HW", "SW", "PP").contains(type), "Rate limit type must be HW, SW or PP");
        }
        if (rateText == null) {
            refuse(burstGiven, "Can't enable burst mode when rate limiter is off");
            refuseHere(type != null || units != null, "--rate_limit_type and --rate_units need --rate_limit");
            return new double[] {0, 'g', 0};
        }
        double rate;
        try {
            rate = Double.parseDouble(rateText);
        } catch (NumberFormatException e) {
            throw PerftestException.refusedAsC("Rate limit must be non-negative floating point number");
        }
        refuse(!(rate > 0) || Double.isInfinite(rate), "Rate limit must be non-negative floating point number");
        String t = type == null ? "HW" : type; // as C: a rate without a type is the hardware limiter
        refuse(t.equals("PP"), "Packet Pacing is only supported for Raw Ethernet.");
        refuseHere(t.equals("HW"), "--rate_limit_type HW (C's default with --rate_limit): the hardware rate limiter is not"
                + " implemented in jverbs-perftest; --rate_limit_type SW paces the posts in software");
        refuse(!bw || c.verb == Verb.ATOMIC || (c.verb == Verb.SEND && c.bidirectional),
                "SW Rate limiter cann't be executed on non-BW, ATOMIC or bidirectional SEND tests");
        refuseHere(c.postList > 1, "--rate_limit_type SW with -l: the software limiter paces single posts in jverbs-perftest");
        int burst = burstGiven ? intOf(p, "--burst_size", 0) : 0;
        refuse(burstGiven && burst < 1, "Burst size must be 1 or more");
        if (!burstGiven) {
            notes.add(" Setting burst size to tx depth = " + tx); // C's note on stderr
        }
        return new double[] {rate, units == null ? 'g' : units.charAt(0), burst};
    }

    /** -X, checked as C checks it. */
    private int vector(picocli.CommandLine.ParseResult p) {
        if (!CompatOptions.given(p, "-X")) {
            return 0;
        }
        int v = intOf(p, "-X", 0);
        refuse(c.verb == Verb.WRITE, "Events feature not available on WRITE verb");
        refuse(v < 0 || v > 2048, "Completion vector must be between 0 and 2048");
        refuse(!c.events, "Events must be enabled to select a completion vector");
        return v;
    }

    private static int intOf(picocli.CommandLine.ParseResult p, String name, int absent) {
        String v = CompatOptions.value(p, name);
        if (v == null) {
            return absent;
        }
        try {
            return Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw PerftestException.refusedAsC("Invalid value for option '" + name + "': '" + v + "' is not an int");
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
            if (v < 1 || v > PerftestCommand.MAX_SIZE) {
                throw PerftestException.refusedAsC("Size of message must be 1.." + PerftestCommand.MAX_SIZE + ", not " + text);
            }
            return (int) v;
        } catch (NumberFormatException e) {
            throw PerftestException.refusedAsC("Size of message is not a number: " + text);
        }
    }

    /** Refuses a time in seconds the deadlines cannot use (below 1 ms, NaN, infinite; see {@link Seconds}). */
    private static void refuseSeconds(String option, double value, String zeroMeaning) {
        String why = Seconds.refusal(option, value, zeroMeaning);
        refuseHere(why != null, why);
    }

    /** A rule C enforces too: C's message, C's exit code. */
    private static void refuse(boolean condition, String message) {
        if (condition) {
            throw PerftestException.refusedAsC(message);
        }
    }

    /** A rule of jverbs' own (its options, what it does not implement): exit code 2. */
    private static void refuseHere(boolean condition, String message) {
        if (condition) {
            throw PerftestException.refusedHere(message);
        }
    }
}
