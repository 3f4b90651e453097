package io.jverbs.perftest;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;
import picocli.CommandLine.ParseResult;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * C perftest's command lines, as its usage() lists them per tool, go through the Java parser and
 * checks without a refusal; the options jverbs does not act on say so in one note each; C's
 * precedence rules and range refusals hold.
 */
class CCommandLinesTest {
    /** One line of the option list: the tools usage() prints it for, and the arguments. */
    record COption(String verbs, String kinds, List<String> args) {
        boolean listedFor(Verb verb, Kind kind) {
            String v = verb.name().toLowerCase(Locale.ROOT);
            boolean verbOk = verbs.equals("*") || (verbs.startsWith("!")
                    ? !Arrays.asList(verbs.substring(1).split(",")).contains(v)
                    : Arrays.asList(verbs.split(",")).contains(v));
            return verbOk && (kinds.equals("*") || kinds.equals(kind.name().toLowerCase(Locale.ROOT)));
        }
    }

    static List<COption> options() throws IOException {
        List<COption> list = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(
                CCommandLinesTest.class.getResourceAsStream("/c-perftest-4.5-options.txt"), StandardCharsets.UTF_8))) {
            for (String line = r.readLine(); line != null; line = r.readLine()) {
                if (line.isBlank() || line.startsWith("#")) {
                    continue;
                }
                String[] f = line.trim().split("\\s+");
                list.add(new COption(f[0], f[1], List.of(f).subList(2, f.length)));
            }
        }
        return list;
    }

    private static CommandLine commandLine(PerftestCommand c) {
        CommandLine cl = CompatOptions.commandLine(c);
        cl.setOut(new PrintWriter(new StringWriter()));
        cl.setErr(new PrintWriter(new StringWriter()));
        return cl;
    }

    private static PerftestCommand parsed(Verb verb, Kind kind, String... args) {
        PerftestCommand c = new PerftestCommand(verb, kind);
        commandLine(c).parseArgs(args);
        return c;
    }

    private static TestSpec checked(Verb verb, Kind kind, String... args) {
        return parsed(verb, kind, args).check();
    }

    /** A payload file in C's format, for the option list's --payload_file_path. */
    private static String payloadFile() throws IOException {
        java.nio.file.Path f = java.nio.file.Files.createTempFile("perftest-payload", ".txt");
        java.nio.file.Files.writeString(f, "0x11223344,0xaabbccdd");
        f.toFile().deleteOnExit();
        return f.toString();
    }

    /**
     * Each option of each tool through the real command line, on a device that does not exist:
     * an implemented option gets as far as opening the device (exit 1, naming it), a refused one
     * ends before with its reason and its exit status. Prints
     * {@code perftest-options: N implemented, M refused, 0 ignored} over every C option.
     */
    @TestFactory
    Stream<DynamicTest> everyListedOptionOfEveryToolIsImplementedOrRefused() throws IOException {
        List<COption> options = options();
        assertTrue(options.size() > 100, "the list was read: " + options.size());
        String payload = payloadFile();
        List<DynamicTest> tests = new ArrayList<>();
        for (Verb verb : Verb.values()) {
            for (Kind kind : Kind.values()) {
                String tool = verb.name().toLowerCase(Locale.ROOT) + "_" + kind.name().toLowerCase(Locale.ROOT);
                for (COption o : options) {
                    if (!o.listedFor(verb, kind)) {
                        continue;
                    }
                    List<String> args = new ArrayList<>(List.of(tool, "-d", "no-such-device"));
                    o.args().forEach(a -> args.add(a.equals("/tmp/payload.txt") ? payload : a));
                    tests.add(DynamicTest.dynamicTest("ib_" + tool + " " + String.join(" ", o.args()), () -> {
                        CommandLine cl = Main.commandLine();
                        StringWriter err = new StringWriter();
                        cl.setOut(new PrintWriter(new StringWriter()));
                        cl.setErr(new PrintWriter(err));
                        int exit = cl.execute(args.toArray(String[]::new));
                        String name = o.args().getFirst();
                        CompatOptions.Accepted refused = CompatOptions.ALL.stream()
                                .filter(a -> a.state() == CompatOptions.State.REFUSED && a.names().contains(name))
                                .findFirst().orElse(null);
                        assertFalse(err.toString().contains("ignored"), err.toString());
                        if (refused == null) {
                            assertEquals(1, exit, "an implemented option reaches the device: " + err);
                            assertTrue(err.toString().contains("IB device ") && err.toString().contains(" not found"),
                                    "it failed at the device: " + err);
                        } else {
                            assertEquals(refused.exitCode(), exit, err.toString());
                            assertTrue(err.toString().contains(refused.label() + ": refused: " + refused.note()),
                                    "the reason is on stderr: " + err);
                        }
                    }));
                }
            }
        }
        return tests.stream();
    }

    @Test
    void everyCOptionIsImplementedOrRefused() throws IOException {
        CommandLine cl = commandLine(new PerftestCommand(Verb.WRITE, Kind.BW));
        Set<String> listed = new HashSet<>();
        for (COption o : options()) {
            listed.add(o.args().getFirst());
            assertTrue(cl.getCommandSpec().findOption(o.args().getFirst()) != null, o.args().getFirst() + " is known to the parser");
        }
        // the C options of the tests' own fields (jverbs' own options and the help aside), and those of CompatOptions
        int own = 0;
        for (CommandLine.Model.OptionSpec o : new CommandLine(new PerftestCommand(Verb.WRITE, Kind.BW)).getCommandSpec().options()) {
            boolean c = o.names().length > 0 && !PerftestCommand.OWN_OPTIONS.contains(o.longestName())
                    && !o.longestName().equals("--help") && !o.longestName().equals("--version");
            own += c ? 1 : 0;
            for (String n : o.names()) {
                assertTrue(CompatOptions.ALL.stream().noneMatch(a -> a.names().contains(n)), n + " is both a field and a compat option");
            }
        }
        long implemented = own + CompatOptions.ALL.stream().filter(a -> a.state() == CompatOptions.State.IMPLEMENTED).count();
        long refused = CompatOptions.ALL.stream().filter(a -> a.state() == CompatOptions.State.REFUSED).count();
        assertTrue(CompatOptions.ALL.stream().allMatch(a -> a.state() == CompatOptions.State.IMPLEMENTED
                ? a.exitCode() == 0 : a.exitCode() == 1 || a.exitCode() == 2), "refusals exit 1 or 2");
        assertTrue(listed.size() > 100, "names: " + listed.size());
        System.out.println("perftest-options: " + implemented + " implemented, " + refused + " refused, 0 ignored (of "
                + (implemented + refused) + " C perftest 4.5 options)");
    }

    /** One row of perftest/README.md's table of the C options that are not the tests' own fields. */
    static String readmeRow(CompatOptions.Accepted a) {
        return "| `" + a.label() + (a.takesValue() ? " <v>" : "") + "` | "
                + (a.state() == CompatOptions.State.IMPLEMENTED ? "implemented" : "refused, exit " + a.exitCode()) + " | "
                + a.note().replace("|", "\\|") + " |";
    }

    @Test
    void theReadmeTableIsTheOptionsTable() throws IOException {
        String readme = java.nio.file.Files.readString(java.nio.file.Path.of("README.md"));
        StringBuilder table = new StringBuilder();
        for (CompatOptions.Accepted a : CompatOptions.ALL) {
            table.append(readmeRow(a)).append('\n');
        }
        assertTrue(readme.contains(table), "perftest/README.md's option table differs from CompatOptions.ALL; it should read:\n"
                + table);
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(delimiter = '|', value = {
        "--report_gb|--report_gbits", "--run_inf|--run_infinitely", "--bidir|--bidirectional",
        "--report-hist|--report-histogram", "--out_json_f=x.json|--out_json_file=x.json", "--size|--size"})
    void longOptionsAbbreviateAsGetoptLong(String given, String meant) {
        String[] out = Main.expandAbbreviations(Main.commandLine(), new String[] {"write_bw", given});
        String m = out[1].contains("=") ? out[1] : out[1];
        CommandLine cl = Main.commandLine().getSubcommands().get("write_bw");
        assertEquals(cl.getCommandSpec().findOption(meant.split("=")[0]), cl.getCommandSpec().findOption(m.split("=")[0]), m);
        if (meant.contains("=")) {
            assertEquals(meant.substring(meant.indexOf('=')), m.substring(m.indexOf('=')));
        }
    }

    @Test
    void anAmbiguousAbbreviationIsRefused() {
        CommandLine.ParameterException e = assertThrows(CommandLine.ParameterException.class,
                () -> Main.expandAbbreviations(Main.commandLine(), new String[] {"write_bw", "--report"}));
        assertTrue(e.getMessage().contains("ambiguous"), e.getMessage());
    }

    @Test
    void outputModeAndIterationsFollowC() {
        TestSpec bw = checked(Verb.WRITE, Kind.BW, "--output", "bandwidth");
        assertEquals("bandwidth", bw.extras().output());
        assertEquals("Output verbosity level for BW can be: bandwidth, message_rate",
                assertThrows(PerftestException.class, () -> checked(Verb.WRITE, Kind.BW, "--output", "latency")).getMessage());
        assertEquals("Output verbosity level for LAT can be: latency",
                assertThrows(PerftestException.class, () -> checked(Verb.SEND, Kind.LAT, "--output", "bandwidth")).getMessage());
        assertEquals("Hop limit only valid for RawEth QP",
                assertThrows(PerftestException.class, () -> checked(Verb.WRITE, Kind.BW, "-L", "32")).getMessage());
        assertEquals("Only 15 Service levels",
                assertThrows(PerftestException.class, () -> checked(Verb.WRITE, Kind.BW, "-S", "16")).getMessage());
        assertEquals("Latency gap feature is only for latency tests",
                assertThrows(PerftestException.class, () -> checked(Verb.WRITE, Kind.BW, "--latency_gap", "5")).getMessage());
        TestSpec route = checked(Verb.WRITE, Kind.BW, "-q", "3", "--tclass", "106", "-S", "3", "--flow_label", "7,9");
        assertEquals(new io.jverbs.Route(3, 106, 9, 255), route.extras().route(1));
        assertEquals(7, route.extras().route(2).flowLabel(), "the list is dealt in turn");
        assertEquals(100, checked(Verb.SEND, Kind.BW, "-c", "UD").cqMod(), "UD keeps C's moderation of 100");
        assertEquals(1, checked(Verb.SEND, Kind.BW, "-c", "RC").cqMod(), "above 8 KiB RC moderates every 1, as C");
    }

    @Test
    void aPayloadFileIsReadAsCReadsIt() throws IOException {
        java.nio.file.Path f = java.nio.file.Files.createTempFile("payload", ".txt");
        try {
            java.nio.file.Files.writeString(f, "0x11223344,0xaabbccdd");
            assertTrue(Arrays.equals(new byte[] {0x44, 0x33, 0x22, 0x11, (byte) 0xdd, (byte) 0xcc, (byte) 0xbb, (byte) 0xaa},
                    Extras.readPayload(f)));
            java.nio.file.Files.writeString(f, "0x11223344, 0xaabbccdd");
            assertEquals("Failed to parse DWORD number: 1",
                    assertThrows(PerftestException.class, () -> Extras.readPayload(f)).getMessage());
        } finally {
            java.nio.file.Files.delete(f);
        }
    }

    @Test
    void allOverridesSizeWithANote() {
        PerftestCommand c = parsed(Verb.WRITE, Kind.LAT, "-a", "-s", "64");
        TestSpec t = c.check();
        assertEquals(23, t.sizes().length);
        assertEquals(2, t.sizes()[0]);
        assertEquals(1, c.notes.size(), c.notes.toString());
        assertTrue(c.notes.getFirst().contains("-s/--size 64 is ignored"), c.notes.toString());
    }

    @Test
    void durationOverridesIterationsWithANote() {
        PerftestCommand c = parsed(Verb.WRITE, Kind.BW, "-D", "3", "-n", "100");
        TestSpec t = c.check();
        assertEquals(3, t.durationSec());
        assertTrue(t.duration());
        assertTrue(c.notes.getFirst().contains("-n/--iters 100 is ignored"), c.notes.toString());
        PerftestCommand plain = parsed(Verb.WRITE, Kind.BW, "-n", "100");
        TestSpec plainSpec = plain.check();
        assertFalse(plainSpec.duration());
        assertEquals(100, plainSpec.iters());
        assertTrue(plain.notes.isEmpty());
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "1025", "5000"})
    void cqModerationOutsideCsRangeIsRefused(String value) {
        PerftestException e = assertThrows(PerftestException.class, () -> checked(Verb.WRITE, Kind.BW, "-Q", value));
        assertEquals("CQ moderation should be between 1 and 1024", e.getMessage());
    }

    @Test
    void cqModerationAtCsBoundsIsAccepted() {
        assertEquals(1, checked(Verb.WRITE, Kind.BW, "-Q", "1").cqMod());
        assertEquals(128, checked(Verb.WRITE, Kind.BW, "-Q", "1024").cqMod(), "at most the tx depth, as C");
    }

    @Test
    void refusalsCMakes() {
        assertEquals("Inline feature not available on READ/Atomic verbs",
                assertThrows(PerftestException.class, () -> checked(Verb.READ, Kind.BW, "-I", "64")).getMessage());
        assertEquals("On RDMA verbs rx depth can be only 1",
                assertThrows(PerftestException.class, () -> checked(Verb.WRITE, Kind.BW, "-r", "64")).getMessage());
        assertEquals("Setting Outstanding reads only available on READ verb",
                assertThrows(PerftestException.class, () -> checked(Verb.WRITE, Kind.BW, "-o", "4")).getMessage());
        assertEquals("Gid index should be between 0 and 64",
                assertThrows(PerftestException.class, () -> checked(Verb.WRITE, Kind.BW, "-x", "65")).getMessage());
    }

    /**
     * The process's exit code for a refused line, as C's: 1 for what C refuses too (its rules, an
     * unknown option, a value that is not a number), 2 only for what jverbs alone refuses. A device
     * that cannot exist shows the refusal comes before any device is opened.
     */
    @ParameterizedTest(name = "{1} -> {0}")
    @CsvSource(delimiter = '|', value = {
        "1|read_bw -I 64", "1|write_bw -r 64", "1|write_bw -Q 5000", "1|write_lat -q 2", "1|atomic_bw -s 64",
        "1|write_bw --no-such-option", "1|write_bw -n many", "1|write_bw -s", "1|send_lat -c XY",
        "2|send_bw -c XRC", "2|write_bw --run_timeout NaN", "2|write_bw --connect_timeout -Infinity",
        "2|write_bw --hdr_log h.log", "0|write_bw -h", "0|write_lat -V"})
    void exitCodesAreCs(int expected, String line) {
        CommandLine cl = Main.commandLine();
        StringWriter err = new StringWriter();
        cl.setOut(new PrintWriter(new StringWriter()));
        cl.setErr(new PrintWriter(err));
        List<String> args = new java.util.ArrayList<>(List.of(line.split(" ")));
        args.addAll(1, List.of("-d", "no-such-device"));
        assertEquals(expected, cl.execute(args.toArray(String[]::new)), err.toString());
        assertEquals(expected != 0, !err.toString().isBlank(), "a refusal says why on stderr: " + err);
    }

    @Test
    void outstandingReadsAreClampedToTheDeviceMaxAsC() {
        assertEquals(128, Session.outstandingReads(checked(Verb.READ, Kind.BW, "-o", "300"), new PrintWriter(new StringWriter()), 128));
        assertEquals(16, Session.outstandingReads(checked(Verb.READ, Kind.BW, "-o", "16"), new PrintWriter(new StringWriter()), 128));
        assertEquals(128, Session.outstandingReads(checked(Verb.READ, Kind.BW, "-o", "0"), new PrintWriter(new StringWriter()), 128), "0: the device max");
        assertEquals(128, Session.outstandingReads(checked(Verb.READ, Kind.BW), new PrintWriter(new StringWriter()), 128), "absent: the device max");
    }

    @Test
    void outstandingReadsAboveTheMaxPrintCsNote() {
        PerftestCommand c = new PerftestCommand(Verb.READ, Kind.BW);
        CommandLine cl = CompatOptions.commandLine(c);
        StringWriter err = new StringWriter();
        cl.setErr(new PrintWriter(err, true));
        cl.parseArgs("-o", "300");
        TestSpec t = c.check();
        assertEquals(128, Session.outstandingReads(t, cl.getErr(), 128));
        assertTrue(err.toString().contains(" Number of outstanding reads is above max = 128"), err.toString());
    }

    @Test
    void limitBwIsTheThresholdOption() {
        assertEquals(100.0, checked(Verb.WRITE, Kind.BW, "-w", "100").minBw());
        assertEquals(100.0, checked(Verb.WRITE, Kind.BW, "--limit_bw", "100").minBw());
        assertEquals(100.0, checked(Verb.WRITE, Kind.BW, "--min-bw", "100").minBw());
        assertEquals(0.5, checked(Verb.WRITE, Kind.BW, "-y", "0.5").minMsgRate());
        assertNull(checked(Verb.WRITE, Kind.BW).minMsgRate());
    }

    @Test
    void runInfinitelyIgnoresIterationsWithANote() {
        PerftestCommand c = parsed(Verb.WRITE, Kind.BW, "--run_infinitely", "-n", "100");
        assertTrue(c.check().runInfinitely());
        assertTrue(c.notes.getFirst().contains("--run_infinitely"), c.notes.toString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"-V", "--version"})
    void versionPrintsCsLine(String flag) {
        for (Verb verb : Verb.values()) {
            for (Kind kind : Kind.values()) {
                CommandLine cl = Main.commandLine();
                StringWriter out = new StringWriter();
                cl.setOut(new PrintWriter(out));
                String test = verb.name().toLowerCase(Locale.ROOT) + "_" + kind.name().toLowerCase(Locale.ROOT);
                assertEquals(0, cl.execute(test, flag));
                assertEquals("Version: " + Oob.VERSION, out.toString().strip(), test);
            }
        }
    }

    @Test
    void anImplementedOptionAfterARefusedOneIsStillParsed() {
        PerftestCommand c = new PerftestCommand(Verb.SEND, Kind.BW);
        CommandLine cl = CompatOptions.commandLine(c);
        ParseResult parsed = cl.parseArgs("--use-srq", "-S", "3", "--tclass", "2", "-s", "64");
        assertEquals("--use-srq", CompatOptions.firstRefused(parsed).names().getFirst());
        assertEquals("64", c.sizeText, "an implemented option after refused ones is still read");
    }

    @Test
    void cLongOptionsOutsideUsageAreRefusedWithTheirReason() {
        // options in C's long_options table that usage() prints only for raw Ethernet tests, or not at all
        for (String[] args : new String[][] {{"-B", "00:11:22:33:44:55"}, {"--ethertype", "0x0800"}, {"-Z"}, {"-P"},
                {"--use_rss"}, {"--tcp"}, {"--promiscuous"}, {"--flows", "2"}, {"--vlan_en"}, {"--raw_ipv6"}}) {
            CommandLine cl = Main.commandLine();
            StringWriter err = new StringWriter();
            cl.setOut(new PrintWriter(new StringWriter()));
            cl.setErr(new PrintWriter(err));
            List<String> line = new ArrayList<>(List.of("write_bw", "-d", "no-such-device"));
            line.addAll(List.of(args));
            assertEquals(2, cl.execute(line.toArray(String[]::new)), err.toString());
            assertTrue(err.toString().contains("refused: raw Ethernet only"), err.toString());
        }
    }

    @Test
    void anOptionGivenTwiceTakesItsLastValueAsCsGetopt() {
        TestSpec c = checked(Verb.WRITE, Kind.LAT, "-n", "100", "-s", "4", "-n", "200");
        assertEquals(200, c.iters());
        assertEquals(4, c.size());
    }

}
