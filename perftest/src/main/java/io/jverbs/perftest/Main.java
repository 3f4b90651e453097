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
        System.exit(commandLine().execute(args));
    }

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "name a test: write_bw, write_lat, read_bw, read_lat,"
                + " send_bw, send_lat, atomic_bw, atomic_lat (or exporter)");
    }
}
