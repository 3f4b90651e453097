package io.jverbs.perftest;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code jverbs-perftest}: the C perftest's eight RDMA tools as subcommands, used like their C
 * counterparts ({@code jverbs-perftest write_bw -d rxe0 -x 1} as {@code ib_write_bw -d rxe0 -x 1}).
 * Exit codes: 0 success (also for {@code -h} and {@code -V}, where C exits 1); 1 the test failed
 * (peer, device, threshold) or its command line is one C refuses too; 2 a command line only jverbs
 * refuses (its own options' values, what it does not implement, the exporter's options).
 */
@Command(name = "jverbs-perftest", mixinStandardHelpOptions = true, versionProvider = Main.Version.class, description = "RDMA bandwidth and latency tests on jverbs, interoperable with the C perftest"
        + " (ib_write_bw, ...).", subcommandsRepeatable = false)
public final class Main implements Runnable {
    /** {@code --version}: the jar's Implementation-Version, and the perftest wire version it speaks. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = Main.class.getPackage().getImplementationVersion();
            return new String[] {"jverbs-perftest " + (v == null ? "(classes outside a jar: no version)" : v)
                    + " (perftest wire version " + Oob.VERSION + ")"};
        }
    }

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /**
     * Builds the command line with its eight subcommands.
     *
     * @return the picocli command line; {@code execute(args)} runs it and returns the exit code
     */
    public static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new Main());
        for (Verb verb : Verb.values()) {
            for (Kind kind : Kind.values()) {
                PerftestCommand c = new PerftestCommand(verb, kind);
                cl.addSubcommand(c.name(), CompatOptions.commandLine(c));
            }
        }
        cl.addSubcommand("exporter", new CommandLine(new ExporterCommand()));
        CompatOptions.exitAsC(cl);
        return cl;
    }

    /**
     * Runs the command line and exits with its code.
     *
     * @param args {@code write_bw -d rxe0 ...}
     */
    public static void main(String[] args) {
        CommandLine cl = commandLine();
        String[] expanded;
        try {
            expanded = expandAbbreviations(cl, args);
        } catch (CommandLine.ParameterException e) {
            System.err.println(e.getMessage());
            System.exit(PerftestException.FAILED); // as C's getopt: an ambiguous option is an error of the command line
            return;
        }
        System.exit(cl.execute(expanded));
    }

    /**
     * A test's long options abbreviated as C's {@code getopt_long} takes them: a prefix of exactly
     * one option's long names ({@code --report_gb} for {@code --report_gbits}) becomes that name,
     * with its {@code =value} kept. A prefix of several options is refused as getopt refuses it;
     * an exact name, an unknown option, a short option and whatever follows {@code --} are left as
     * they are.
     *
     * @param cl   the command line of {@link #commandLine()}
     * @param args the arguments, the test's name first
     * @return the arguments with the abbreviations written out
     * @throws CommandLine.ParameterException when an abbreviation names several options
     */
    static String[] expandAbbreviations(CommandLine cl, String[] args) {
        if (args.length == 0 || !cl.getSubcommands().containsKey(args[0])
                || !(cl.getSubcommands().get(args[0]).getCommand() instanceof PerftestCommand)) {
            return args;
        }
        CommandLine test = cl.getSubcommands().get(args[0]);
        String[] out = args.clone();
        for (int i = 1; i < out.length; i++) {
            String a = out[i];
            if (a.equals("--")) {
                break;
            }
            if (!a.startsWith("--") || a.length() == 2) {
                continue;
            }
            int eq = a.indexOf('=');
            String name = eq < 0 ? a : a.substring(0, eq);
            if (test.getCommandSpec().findOption(name) != null) {
                continue;
            }
            java.util.Set<CommandLine.Model.OptionSpec> matches = new java.util.LinkedHashSet<>();
            String match = null;
            for (CommandLine.Model.OptionSpec o : test.getCommandSpec().options()) {
                for (String n : o.names()) {
                    if (n.startsWith("--") && n.startsWith(name)) {
                        if (matches.add(o)) {
                            match = n;
                        }
                    }
                }
            }
            if (matches.size() == 1) {
                out[i] = match + (eq < 0 ? "" : a.substring(eq));
            } else if (matches.size() > 1) {
                throw new CommandLine.ParameterException(test, "option '" + name + "' is ambiguous; possibilities: "
                        + String.join(" ", matches.stream().map(CommandLine.Model.OptionSpec::longestName).toList()));
            }
        }
        return out;
    }

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "name a test: write_bw, write_lat, read_bw, read_lat,"
                + " send_bw, send_lat, atomic_bw, atomic_lat (or exporter)");
    }
}
