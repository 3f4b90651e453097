package io.jverbs.perftest;

import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParseResult;

import java.util.ArrayList;
import java.util.List;

/**
 * The C perftest 4.5 options that jverbs-perftest accepts without acting on them: each is parsed
 * (with its value, when C's takes one) and, when given, prints one line on stderr saying what
 * jverbs does instead, so that a C command line runs unchanged instead of failing with "Unknown
 * option". The options jverbs implements are fields of {@link PerftestCommand}.
 */
final class CompatOptions {
    /**
     * One accepted option.
     *
     * @param names      its short and long names, as C spells them
     * @param takesValue whether C's takes a value ({@code has_arg = 1})
     * @param note       what jverbs does instead, printed after the option's names
     */
    record Accepted(List<String> names, boolean takesValue, String note) {
        String label() {
            return String.join("/", names);
        }
    }

    private static final String NO_RAW = "ignored: jverbs-perftest has no raw Ethernet tests";
    private static final String NO_ACCEL = "ignored: jverbs-perftest registers host memory only";

    /** Every accepted option, in C's {@code long_options} order. */
    static final List<Accepted> ALL = List.of(
            value("ignored: the service level stays 0 (the address handle's default)", "-S", "--sl"),
            value("ignored: the address vector's traffic class stays 0", "-T", "--tos"),
            value("ignored: the hop limit stays the address vector's default (64 on RoCE v2)", "-L", "--hop_limit"),
            value("ignored: multicast is not implemented", "-M", "--MGID"),
            flag("ignored: multicast is not implemented", "-g", "--mcg"),
            value("ignored: completion events use the completion queue's default vector", "-X", "--vector"),
            flag("ignored: the handshake goes over TCP unless -R is given (then over rdma_cm)", "-z", "--comm_rdma_cm"),
            flag("ignored: latencies are reported in microseconds", "-C", "--report-cycles"),
            flag("ignored: one port is used (-i)", "-O", "--dualport"),
            value(NO_RAW, "-B", "--source_mac"),
            value(NO_RAW, "-E", "--dest_mac"),
            value(NO_RAW, "-J", "--dest_ip"),
            value(NO_RAW, "-K", "--dest_port"),
            value(NO_RAW, "-k", "--source_port"),
            value(NO_RAW, "--ethertype"),
            flag(NO_RAW, "-Z", "--server"),
            flag("ignored: without <host> this is the server, with it the client", "-P", "--client"),
            flag(NO_RAW, "-v", "--mac_fwd"),
            flag(NO_RAW, "--use_rss"),
            value("ignored: port counters are exported by `jverbs-perftest exporter` (Prometheus)", "-W", "--report-counters"),
            value("ignored: the link layer is read from the port", "--force-link"),
            value(NO_RAW, "--remote_mac"),
            value(NO_RAW, "--local_mac"),
            value(NO_RAW, "--remote_ip"),
            value(NO_RAW, "--local_ip"),
            value(NO_RAW, "--remote_port"),
            value(NO_RAW, "--local_port"),
            flag("ignored: the receive queue of each queue pair is its own (no shared receive queue)", "--use-srq"),
            flag("ignored: the bandwidth row is the one side's (run -b for both directions)", "--report-both"),
            flag("ignored: the client sends, the server receives", "--reversed"),
            value("ignored: P_Key index 0 is used", "--pkey_index"),
            flag("ignored: the handshake already goes over TCP", "--tcp"),
            value("ignored: no rate limiter", "--burst_size"),
            value("ignored: no rate limiter", "--typical_pkt_size"),
            value("ignored: no rate limiter", "--rate_limit"),
            value("ignored: no rate limiter", "--rate_limit_type"),
            value("ignored: no rate limiter", "--rate_units"),
            value("ignored: the whole table is printed (scripts can read one column of it)", "--output"),
            flag("ignored: CPU utilization is not measured", "--cpu_util"),
            value("ignored: latency samples are taken back to back", "--latency_gap"),
            value("ignored: the flow label stays 0", "--flow_label"),
            value("ignored: the retry count stays 7", "--retry_count"),
            flag("ignored: the versions and MTU are exchanged (the wire handshake needs them)", "--dont_xchg_versions"),
            value("ignored: the buffers are filled by jverbs", "--payload_file_path"),
            value(NO_ACCEL, "--use_cuda"),
            value(NO_ACCEL, "--use_cuda_bus_id"),
            flag(NO_ACCEL, "--use_cuda_dmabuf"),
            value(NO_ACCEL, "--use_rocm"),
            value(NO_ACCEL, "--mmap"),
            value(NO_ACCEL, "--mmap-offset"),
            flag("ignored: the GID is chosen by -x (default: RoCE v2 IPv4-mapped)", "--ipv6"),
            flag(NO_RAW, "--raw_ipv6"),
            flag("ignored: one port is used (-i)", "--report-per-port"),
            flag("ignored: memory is registered and pinned (no on-demand paging)", "--odp"),
            flag(NO_ACCEL, "--use_hugepages"),
            flag("ignored: work requests are posted with ibv_post_send", "--use_old_post_send"),
            flag(NO_RAW, "--promiscuous"),
            flag(NO_RAW, "--sniffer"),
            flag(NO_RAW, "--raw_mcast"),
            flag("ignored: one memory region serves every queue pair", "--mr_per_qp"),
            value("ignored: the destination LID comes from the peer's handshake", "--dlid"),
            value("ignored: the traffic class stays 0", "--tclass"),
            value("ignored: resources are destroyed at once", "--wait_destroy"),
            value(NO_RAW, "--flows"),
            value(NO_RAW, "--flows_burst"),
            value(NO_RAW, "--reply_every"),
            flag("ignored: jverbs-perftest always warms its post/poll path up (--no_warmup skips it)", "--perform_warm_up"),
            flag(NO_RAW, "--vlan_en"),
            value(NO_RAW, "--vlan_pcp"),
            value("ignored: receives are posted one at a time", "--recv_post_list"),
            flag("ignored: no encryption offload", "--aes_xts"),
            flag("ignored: no encryption offload", "--encrypt_on_tx"),
            flag("ignored: no encryption offload", "--sig_before"),
            value("ignored: no encryption offload", "--aes_block_size"),
            value("ignored: no encryption offload", "--kek_path"),
            value("ignored: no encryption offload", "--credentials_path"),
            value("ignored: no encryption offload", "--data_enc_keys_number"),
            value("ignored: no encryption offload", "--data_enc_key_app_path"),
            value("ignored: DC transport is not implemented", "--log_dci_streams"),
            value("ignored: DC transport is not implemented", "--log_active_dci_streams"),
            flag("ignored: memory is registered without relaxed ordering", "--disable_pcie_relaxed"),
            flag("ignored: receives are consumed in order", "--use_ooo"),
            value("ignored: the local address is the one the route to <host> picks", "-j", "--source_ip"),
            value("ignored: the handshake connects to <host> as given (IPv4 or IPv6 name)", "--ipv6-addr"));

    private CompatOptions() {
    }

    private static Accepted value(String note, String... names) {
        return new Accepted(List.of(names), true, note);
    }

    private static Accepted flag(String note, String... names) {
        return new Accepted(List.of(names), false, note);
    }

    /**
     * Adds every accepted option to a test's command.
     *
     * @param spec the test's command spec
     */
    static void addTo(CommandSpec spec) {
        for (Accepted a : ALL) {
            OptionSpec.Builder b = OptionSpec.builder(a.names().toArray(String[]::new))
                    .description("C perftest option, " + a.note())
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
     * The notes of the accepted options a command line gave, one line each.
     *
     * @param parsed the parse result of one test's command line (null: none)
     * @return the lines to print on stderr, in the order of {@link #ALL}
     */
    static List<String> notes(ParseResult parsed) {
        List<String> lines = new ArrayList<>();
        if (parsed == null) {
            return lines;
        }
        for (Accepted a : ALL) {
            if (parsed.hasMatchedOption(a.names().getFirst())) {
                lines.add("note: " + a.label() + " " + a.note());
            }
        }
        return lines;
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
