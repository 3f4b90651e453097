package io.jverbs.perftest;

import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParseResult;

import java.util.ArrayList;
import java.util.List;

/**
 * The C perftest 4.5 options that are not fields of {@link PerftestCommand}: each is parsed (with
 * its value, when C's takes one) and is in one of two states. <em>Implemented</em>: {@link SpecValidator}
 * reads its value and the run acts on it with C's semantics. <em>Refused</em>: a command line that
 * gives it ends before any device is opened, with a line on stderr saying why and exit status 1
 * where C refuses it too, 2 where only jverbs does (hardware or a provider jverbs cannot use, or
 * what jverbs-perftest does not do). No option is accepted and ignored.
 */
final class CompatOptions {
    /** The two states of a C option. */
    enum State {
        IMPLEMENTED,
        REFUSED
    }

    /**
     * One C option.
     *
     * @param names      its short and long names, as C spells them
     * @param takesValue whether C's takes a value ({@code has_arg = 1})
     * @param state      implemented or refused
     * @param exitCode   for a refused option: 1 where C refuses it too, 2 where only jverbs does
     * @param note       what it does (implemented) or why it is refused
     */
    record Accepted(List<String> names, boolean takesValue, State state, int exitCode, String note) {
        String label() {
            return String.join("/", names);
        }
    }

    private static final String NO_RAW = "raw Ethernet only: jverbs-perftest has no raw_ethernet tools (C's RDMA tools"
            + " parse it and do not use it)";
    private static final String NO_ACCEL = "needs GPU memory (CUDA, ROCm, dma-buf): jverbs-perftest registers host memory";
    private static final String NO_CRYPTO = "needs the memory encryption offload of mlx5 devices, which jverbs does not drive";
    private static final String NO_DC = "needs mlx5's DC transport, which jverbs does not make (-c DC is refused too)";

    /** Every C option that is not a field of {@link PerftestCommand}, in C's {@code long_options} order. */
    static final List<Accepted> ALL = List.of(
            valueDone("the service level of the queue pairs' address vector (0..15; not with -R, whose"
                    + " address vector rdma_cm makes)", "-S", "--sl"),
            valueDone("with -R, the rdma_cm connections' type of service (rdma_set_option TOS), 0..255; without"
                    + " -R refused as C refuses it (TOS only valid for rdma_cm based QP and RawEth QP)", "-T", "--tos"),
            valueDone("64 only, as C: the RDMA tools' hop limit is not set from it (C: Hop limit only valid for"
                    + " RawEth QP)", "-L", "--hop_limit"),
            valueRefused(2, "UD multicast is not implemented in jverbs-perftest", "-M", "--MGID"),
            flagRefused(2, "UD multicast is not implemented in jverbs-perftest", "-g", "--mcg"),
            valueDone("with -e (not on write tests), the completion vector of the completion queue, as C",
                    "-X", "--vector"),
            flagDone("the handshake goes over an rdma_cm connection (as -R's), the test's queue pairs connected by"
                    + " their records, as C", "-z", "--comm_rdma_cm"),
            flagDone("latency tests: the latencies in CPU cycles (microseconds times the CPU's MHz from"
                    + " /proc/cpuinfo; the header still says usec, as C's)", "-C", "--report-cycles"),
            flagRefused(2, "jverbs-perftest runs on one port (-i); a second port's queue pairs are not made",
                    "-O", "--dualport"),
            valueRefused(2, NO_RAW, "-B", "--source_mac"),
            valueRefused(2, NO_RAW, "-E", "--dest_mac"),
            valueRefused(2, NO_RAW, "-J", "--dest_ip"),
            valueRefused(2, NO_RAW, "-K", "--dest_port"),
            valueRefused(2, NO_RAW, "-k", "--source_port"),
            valueRefused(2, NO_RAW, "--ethertype"),
            flagRefused(2, NO_RAW + "; without <host> this is the server", "-Z", "--server"),
            flagRefused(2, NO_RAW + "; with <host> this is the client", "-P", "--client"),
            flagRefused(2, NO_RAW, "-v", "--mac_fwd"),
            flagRefused(2, NO_RAW, "--use_rss"),
            valueDone("the port's sysfs counters named (paths under /sys/class/infiniband/<dev>/ports/<port>/,"
                    + " comma-separated), printed after the report as C's <name>=<delta> lines", "-W",
                    "--report-counters"),
            valueDone("IB or Ethernet: checked against the port's link layer (a port of the other kind is"
                    + " refused: jverbs does not override what the port says)", "--force-link"),
            valueRefused(2, NO_RAW, "--remote_mac"),
            valueRefused(2, NO_RAW, "--local_mac"),
            valueRefused(2, NO_RAW, "--remote_ip"),
            valueRefused(2, NO_RAW, "--local_ip"),
            valueRefused(2, NO_RAW, "--remote_port"),
            valueRefused(2, NO_RAW, "--local_port"),
            flagRefused(2, "shared receive queues are not implemented in jverbs-perftest", "--use-srq"),
            flagDone("with -b, this side's and the peer's tables after the summed row, as C (C prints them for"
                    + " one size, not under -a or --run_infinitely)", "--report-both"),
            flagRefused(2, "swapping the sender and the receiver is not implemented", "--reversed"),
            valueRefused(2, "P_Key indexes other than 0 are not implemented in jverbs-perftest", "--pkey_index"),
            flagRefused(2, NO_RAW, "--tcp"),
            valueDone("with --rate_limit_type SW, messages per burst (default: the send queue's depth, with C's"
                    + " note)", "--burst_size"),
            valueRefused(2, "packet pacing is for raw Ethernet only (C refuses it in the RDMA tools too)",
                    "--typical_pkt_size"),
            valueDone("the rate of the software limiter (--rate_limit_type SW: bursts of --burst_size opened no"
                    + " faster than the rate allows); the hardware limiter, C's default type, is refused", "--rate_limit"),
            valueDone("SW: paced by jverbs-perftest, as C's software limiter (BW tests, not atomics or"
                    + " bidirectional send, as C); HW: refused (not implemented); PP: refused as C refuses it",
                    "--rate_limit_type"),
            valueDone("M (MiB/s), g (Gbit/s, the default) or p (messages a second), as C", "--rate_units"),
            valueDone("bandwidth, message_rate (BW tests) or latency (latency tests): only that number, as C"
                    + " prints it", "--output"),
            flagDone("with -D, the system's CPU utilization over the measured window (/proc/stat's user and idle,"
                    + " as C) in a CPU_Util[%] column; without -D C's warning, and no column", "--cpu_util"),
            valueDone("latency tests: waits this many microseconds before each post (the samples include it, as"
                    + " C's)", "--latency_gap"),
            valueDone("the flow label of the queue pairs' address vector; a comma-separated list is dealt to the"
                    + " queue pairs in turn (as perftest 25.01 and later; not with -R)", "--flow_label"),
            valueDone("the queue pairs' retry count, 0..7 (C applies it with -R only; jverbs to every queue pair)",
                    "--retry_count"),
            flagRefused(1, "C's own run then fails (Current implementation is not compatible with versions older"
                    + " than 5.70): the handshake needs the versions", "--dont_xchg_versions"),
            valueDone("fills the buffers with the file's DWORDs (0xXXXXXXXX, comma-separated, stored little-endian),"
                    + " as C", "--payload_file_path"),
            valueRefused(2, NO_ACCEL, "--use_cuda"),
            valueRefused(2, NO_ACCEL, "--use_cuda_bus_id"),
            flagRefused(2, NO_ACCEL, "--use_cuda_dmabuf"),
            valueRefused(2, NO_ACCEL, "--use_rocm"),
            valueDone("the buffer is the file, mapped shared and registered (the run's fill writes into it), as"
                    + " C; it must exist, and grows when shorter", "--mmap"),
            valueDone("with --mmap, where the mapping starts: a multiple of the page size, as C", "--mmap-offset"),
            flagDone("without -x, prefers a GID that is not IPv4-mapped (an IPv6 GID)", "--ipv6"),
            flagRefused(2, NO_RAW, "--raw_ipv6"),
            flagRefused(2, "needs -O (dual port), which jverbs-perftest does not run", "--report-per-port"),
            flagRefused(2, "on-demand paging registration is not implemented in jverbs-perftest", "--odp"),
            flagRefused(2, "huge-page buffers are not implemented in jverbs-perftest", "--use_hugepages"),
            flagDone("posts with ibv_post_send, as jverbs-perftest always does", "--use_old_post_send"),
            flagRefused(2, NO_RAW, "--promiscuous"),
            flagRefused(2, NO_RAW, "--sniffer"),
            flagRefused(2, NO_RAW, "--raw_mcast"),
            flagRefused(2, "one memory region serves every queue pair in jverbs-perftest", "--mr_per_qp"),
            valueRefused(2, "the destination LID comes from the peer's handshake in jverbs-perftest", "--dlid"),
            valueDone("the traffic class of the queue pairs' address vector, 0..255 (on RoCE v2 the IP header's"
                    + " DSCP and ECN bits; not with -R)", "--tclass"),
            valueDone("waits this many seconds before the resources are released, as C", "--wait_destroy"),
            valueRefused(2, NO_RAW, "--flows"),
            valueRefused(2, NO_RAW, "--flows_burst"),
            valueRefused(2, NO_RAW, "--reply_every"),
            flagDone("write, read and atomic BW: one send queue's depth of operations on each queue pair, drained,"
                    + " before the measured loop, as C (no effect in send and latency tests, as C)", "--perform_warm_up"),
            flagRefused(2, NO_RAW, "--vlan_en"),
            valueRefused(2, NO_RAW, "--vlan_pcp"),
            valueRefused(2, "receives are posted one at a time in jverbs-perftest", "--recv_post_list"),
            flagRefused(2, NO_CRYPTO, "--aes_xts"),
            flagRefused(2, NO_CRYPTO, "--encrypt_on_tx"),
            flagRefused(2, NO_CRYPTO, "--sig_before"),
            valueRefused(2, NO_CRYPTO, "--aes_block_size"),
            valueRefused(2, NO_CRYPTO, "--kek_path"),
            valueRefused(2, NO_CRYPTO, "--credentials_path"),
            valueRefused(2, NO_CRYPTO, "--data_enc_keys_number"),
            valueRefused(2, NO_CRYPTO, "--data_enc_key_app_path"),
            valueRefused(2, NO_DC, "--log_dci_streams"),
            valueRefused(2, NO_DC, "--log_active_dci_streams"),
            flagDone("registers the buffer without relaxed ordering (by default it asks for it, as C; the header"
                    + " says PCIe relax order: ON or OFF)", "--disable_pcie_relaxed"),
            flagRefused(2, "needs out-of-order data placement (mlx5), which jverbs does not set", "--use_ooo"),
            valueRefused(2, NO_RAW + " (perftest 4.5's -j/--source_ip is its raw Ethernet source IP)", "-j",
                    "--source_ip"),
            valueRefused(2, "the handshake connects to <host> as the name resolves (IPv4 or IPv6); forcing IPv6 is"
                    + " not implemented", "--ipv6-addr"));

    /** The options that are implemented, by any of their names. */
    static boolean implemented(String name) {
        return ALL.stream().anyMatch(a -> a.state() == State.IMPLEMENTED && a.names().contains(name));
    }

    private CompatOptions() {
    }

    private static Accepted valueDone(String note, String... names) {
        return new Accepted(List.of(names), true, State.IMPLEMENTED, 0, note);
    }

    private static Accepted flagDone(String note, String... names) {
        return new Accepted(List.of(names), false, State.IMPLEMENTED, 0, note);
    }

    private static Accepted valueRefused(int exit, String why, String... names) {
        return new Accepted(List.of(names), true, State.REFUSED, exit, why);
    }

    private static Accepted flagRefused(int exit, String why, String... names) {
        return new Accepted(List.of(names), false, State.REFUSED, exit, why);
    }

    /**
     * Adds every accepted option to a test's command.
     *
     * @param spec the test's command spec
     */
    static void addTo(CommandSpec spec) {
        for (Accepted a : ALL) {
            OptionSpec.Builder b = OptionSpec.builder(a.names().toArray(String[]::new))
                    .description("C perftest option, " + (a.state() == State.REFUSED ? "refused: " : "") + a.note())
                    .hidden(true);
            if (a.takesValue()) {
                b.arity("1").type(String.class).paramLabel("<value>");
            } else {
                b.arity("0").type(boolean.class);
            }
            spec.addOption(b.build());
        }
    }

    /**
     * The first refused option a command line gave, if any.
     *
     * @param parsed the parse result of one test's command line (null: none)
     * @return the refused option, or null when none was given
     */
    static Accepted firstRefused(ParseResult parsed) {
        if (parsed == null) {
            return null;
        }
        for (Accepted a : ALL) {
            if (a.state() == State.REFUSED && parsed.hasMatchedOption(a.names().getFirst())) {
                return a;
            }
        }
        return null;
    }

    /**
     * The value given to an implemented option, or null.
     *
     * @param parsed the parse result (null: none)
     * @param name   one of its names
     * @return its value as given (the last one, when given twice), or null when not given
     */
    static String value(ParseResult parsed, String name) {
        return parsed == null || !parsed.hasMatchedOption(name) ? null : parsed.matchedOptionValue(name, (String) null);
    }

    /**
     * Whether an implemented flag was given.
     *
     * @param parsed the parse result (null: none)
     * @param name   one of its names
     * @return true when given
     */
    static boolean given(ParseResult parsed, String name) {
        return parsed != null && parsed.hasMatchedOption(name);
    }

    /**
     * A test's command line with the accepted options added, where an option given twice takes its
     * last value, as C's {@code getopt} does.
     *
     * @param command the test
     * @return its picocli command line
     */
    static CommandLine commandLine(PerftestCommand command) {
        CommandLine cl = new CommandLine(command);
        addTo(cl.getCommandSpec());
        cl.setOverwrittenOptionsAllowed(true); // as C's getopt: an option given twice takes its last value
        exitAsC(cl);
        return cl;
    }

    /**
     * Makes a parse error of a test's command line (an unknown option, a value that is not a
     * number, a missing value) end with C's exit code 1, as C's {@code getopt} loop does, unless the
     * option at fault is one of jverbs' own ({@link PerftestCommand#OWN_OPTIONS}): that stays 2.
     * Errors of other commands (the exporter, no test named) keep picocli's 2. The message and the
     * usage help are picocli's.
     *
     * @param cl a command line holding tests as its command or its subcommands; set after they are added
     */
    static void exitAsC(CommandLine cl) {
        CommandLine.IParameterExceptionHandler standard = cl.getParameterExceptionHandler();
        cl.setParameterExceptionHandler((ex, args) -> {
            int code = standard.handleParseException(ex, args);
            boolean test = ex.getCommandLine().getCommand() instanceof PerftestCommand;
            List<CommandLine.Model.ArgSpec> atFault = new ArrayList<>();
            atFault.add(ex.getArgSpec());
            if (ex instanceof CommandLine.MissingParameterException missing) {
                atFault.addAll(missing.getMissing());
            }
            boolean own = atFault.stream().anyMatch(a -> a instanceof OptionSpec o
                    && PerftestCommand.OWN_OPTIONS.contains(o.longestName()));
            return code == CommandLine.ExitCode.USAGE && test && !own ? PerftestException.FAILED : code;
        });
    }
}
