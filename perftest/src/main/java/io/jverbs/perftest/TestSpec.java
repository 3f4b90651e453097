package io.jverbs.perftest;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.IntStream;

/**
 * What one test runs, resolved from its command line as C perftest resolves it: the options that
 * override others already applied, the clamps and the defaults filled in ({@link SpecValidator}
 * makes it). Immutable: the run, its loops and its reports read it and never the command line.
 * The one value known only later, the message size under {@code -c UD} (at most the MTU the sides
 * agree on), makes a new spec ({@link #fitDatagramSize}).
 *
 * @param verb write, read, send or atomic
 * @param kind bandwidth or latency
 * @param host the server to connect to; null on the server
 * @param device {@code -d}: the RDMA device, null for the first one found
 * @param ibPort {@code -i}: the device port
 * @param gidIndex {@code -x}: the GID index, null for the default choice
 * @param tcpPort {@code -p}: the handshake's TCP port (or rdma_cm port under {@code -R})
 * @param rdmaCm {@code -R}: the queue pairs are connected by rdma_cm
 * @param connection {@code -c}: RC, UC or UD
 * @param qps {@code -q}: the number of queue pairs
 * @param bidirectional {@code -b}
 * @param size the message size ({@code -s}, the default, or 2^23 under {@code -a})
 * @param sizes the sizes run, in order (one, or 2..2^23 under {@code -a}); copied in and out
 * @param sizeAsked whether {@code -s} chose the size (not {@code -a}, not the default)
 * @param iters the iterations ({@code -n} or its default)
 * @param durationSec the run's seconds ({@code -D}; 5 under {@code --run_infinitely}; 0 in iteration mode)
 * @param marginSec the seconds left out at each end of a timed run
 * @param runInfinitely {@code --run_infinitely}
 * @param tx the send queue depth, clamped as C clamps it
 * @param rx the receive queue depth, clamped and rounded as C does
 * @param cqMod the completion moderation, as C resolves it from {@code -Q}, {@code -l} and the size
 * @param postList {@code -l}: work requests per post
 * @param inline the inline size from {@code -I} (0 without it, and for read and atomics)
 * @param inlineGiven whether {@code -I} was given
 * @param outs {@code -o}: the outstanding reads/atomics, null when absent
 * @param mtuEnum {@code -m} as the verbs MTU enum (1..5), 0 for the port's active MTU
 * @param qpTimeout {@code -u}: the ACK timeout exponent
 * @param events {@code -e}: sleep on completion events
 * @param cas {@code -A CMP_AND_SWAP}: compare-and-swap instead of fetch-and-add
 * @param noPeak no peak bandwidth ({@code -N}, duration mode, or more than 20000 iterations)
 * @param histogram {@code -H}
 * @param unsorted {@code -U}
 * @param reportGbits {@code --report_gbits}
 * @param outJson {@code --out_json}
 * @param outJsonFile the JSON report's file
 * @param handshakeTimeout {@code --handshake_timeout}, seconds
 * @param connectTimeout {@code --connect_timeout}, seconds; null for the role's default
 * @param completionTimeout {@code --completion_timeout}, seconds
 * @param runTimeout {@code --run_timeout}, seconds (0: no limit)
 * @param minBw {@code -w}: the least average bandwidth, or null
 * @param minMsgRate {@code -y}: the least message rate, or null
 * @param maxLatP99 {@code --max-lat-p99}: the largest 99% latency, or null
 * @param plot {@code --plot}: the PNG, or null
 * @param cReference {@code --plot-compare}: C's result read, or null
 * @param hdrLog {@code --hdr_log}: the HdrHistogram log, or null
 * @param allocReport {@code --alloc_report}
 * @param noWarmup {@code --no_warmup}
 */
record TestSpec(Verb verb, Kind kind, String host, String device, int ibPort, Integer gidIndex, int tcpPort,
                boolean rdmaCm, String connection, int qps, boolean bidirectional, int size, int[] sizes,
                boolean sizeAsked, int iters, int durationSec, int marginSec, boolean runInfinitely, int tx, int rx,
                int cqMod, int postList, int inline, boolean inlineGiven, Integer outs, int mtuEnum, int qpTimeout,
                boolean events, boolean cas, boolean noPeak, boolean histogram, boolean unsorted, boolean reportGbits,
                boolean outJson, Path outJsonFile, double handshakeTimeout, Double connectTimeout,
                double completionTimeout, double runTimeout, Double minBw, Double minMsgRate, Double maxLatP99,
                Path plot, CReference cReference, Path hdrLog, boolean allocReport, boolean noWarmup,
                Extras extras) {
    /** NVIDIA/Mellanox's PCI vendor id, whose devices get C's latency inline defaults. */
    static final int MELLANOX_VENDOR_ID = 0x02c9;
    /**
     * The vendors whose devices C perftest's {@code ib_dev_name} knows (Mellanox/NVIDIA, Chelsio,
     * Intel, Broadcom, Amazon EFA, Huawei, QLogic/Marvell); C goes by part number, jverbs by vendor.
     * Soft-RoCE ({@code 0xffffff}) and siw are not among them.
     */
    private static final java.util.Set<Integer> INLINE_VENDORS = java.util.Set.of(0x02c9, 0x15b3, 0x1425, 0x8086, 0x14e4,
            0x1d0f, 0x19e5, 0x1077, 0x1fc1);

    /** Copies {@code sizes}, so the caller's array cannot change the spec. */
    TestSpec {
        sizes = sizes.clone();
    }

    /** The sizes run, in order: a copy. */
    @Override
    public int[] sizes() {
        return sizes.clone();
    }

    /** The number of sizes run (1, or more under {@code -a}) without copying them. */
    int sizeCount() {
        return sizes.length;
    }

    /** The first size run without copying them all. */
    int firstSize() {
        return sizes[0];
    }

    /** Whether this side is the server (no host given). */
    boolean isServer() {
        return host == null;
    }

    /** Whether the run is timed ({@code -D} or {@code --run_infinitely}) rather than counted. */
    boolean duration() {
        return durationSec > 0;
    }

    /** The test's name: {@code write_bw}, {@code send_lat}, ... */
    String name() {
        return verb.name().toLowerCase(Locale.ROOT) + "_" + kind.name().toLowerCase(Locale.ROOT);
    }

    /** Whether the queue pairs are unreliable datagram ones ({@code -c UD}: send tests only). */
    boolean ud() {
        return connection.equals("UD");
    }

    /** {@code --handshake_timeout} in milliseconds. */
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

    /** {@code --completion_timeout} in nanoseconds. */
    long completionNs() {
        return (long) (completionTimeout * 1e9);
    }

    /** {@code --run_timeout} in milliseconds (0: no limit). */
    long runMs() {
        return (long) (runTimeout * 1000);
    }

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
        if (vendorId != MELLANOX_VENDOR_ID || kind != Kind.LAT || inlineGiven) {
            return inline;
        }
        return switch (verb) {
            case WRITE -> 220; // RC and UC alike
            case SEND -> 236;
            default -> 0;
        };
    }

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
        return !inlineRecognised(vendorId) && (inlineGiven || verb == Verb.READ || verb == Verb.ATOMIC);
    }

    /**
     * A spec with a message size fitted to the MTU, and C's note on the change.
     *
     * @param spec the spec to run
     * @param note C's note, or null when the size fitted (then {@code spec} is the one asked)
     */
    record DatagramFit(TestSpec spec, String note) {
    }

    /**
     * {@code -c UD}, once the MTU is agreed: a datagram carries at most the MTU, so a larger
     * message size becomes the MTU when it was not asked for ({@code -a}, or the default size),
     * and is an error when {@code -s} asked for it, as the distribution's C perftest decides
     * ("Max message size in UD cannot be greater than MTU", exit 1).
     *
     * @param mtuBytes the agreed MTU in bytes
     * @return this spec and no note when the size fits; else the fitted spec and C's note
     * @throws PerftestException when {@code -s} asked for more than the MTU
     */
    DatagramFit fitDatagramSize(int mtuBytes) {
        if (!ud() || size <= mtuBytes) {
            return new DatagramFit(this, null);
        }
        if (sizeAsked) {
            throw new PerftestException(" Max message size in UD cannot be greater than MTU (" + mtuBytes
                    + " bytes; -s " + size + ")");
        }
        int[] fitted = Arrays.stream(sizes).filter(v -> v <= mtuBytes).toArray();
        if (fitted.length == 0 || fitted[fitted.length - 1] != mtuBytes) {
            fitted = IntStream.concat(Arrays.stream(fitted), IntStream.of(mtuBytes)).toArray();
        }
        TestSpec spec = new TestSpec(verb, kind, host, device, ibPort, gidIndex, tcpPort, rdmaCm, connection, qps,
                bidirectional, mtuBytes, fitted, sizeAsked, iters, durationSec, marginSec, runInfinitely, tx, rx, cqMod,
                postList, inline, inlineGiven, outs, mtuEnum, qpTimeout, events, cas, noPeak, histogram, unsorted,
                reportGbits, outJson, outJsonFile, handshakeTimeout, connectTimeout, completionTimeout, runTimeout,
                minBw, minMsgRate, maxLatP99, plot, cReference, hdrLog, allocReport, noWarmup, extras);
        return new DatagramFit(spec, " Max msg size in UD is MTU " + mtuBytes + "\n Changing to this MTU");
    }
}
