package io.jverbs.perftest;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The time options in seconds: a value below 1 ms, NaN, infinite or beyond 10^6 s is refused
 * with exit code 2 and a message naming the option, before any device is opened.
 */
class TimeoutOptionsTest {
    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({
        "--handshake_timeout, NaN", "--handshake_timeout, Infinity",
        "--handshake_timeout, 0.0009", "--handshake_timeout, 0", "--handshake_timeout, -1", "--handshake_timeout, 1e7",
        "--connect_timeout, NaN", "--connect_timeout, Infinity", "--connect_timeout, 0.0009", "--connect_timeout, 0",
        "--connect_timeout, 1e300",
        "--completion_timeout, NaN", "--completion_timeout, Infinity", "--completion_timeout, 1e-4",
        "--completion_timeout, 0",
        "--run_timeout, NaN", "--run_timeout, Infinity", "--run_timeout, 0.0005", "--run_timeout, -0.5"})
    void refusedWithExitCodeTwo(String option, String value) {
        StringWriter err = new StringWriter();
        // a device that cannot exist: the refusal must come before any attempt to open it
        assertEquals(2, run(err, "write_bw", "-d", "no-such-device", option + "=" + value), err.toString());
        String message = err.toString();
        assertTrue(message.startsWith("write_bw: " + option + " must be a number of seconds from 0.001 (1 ms) to 1000000"),
                message);
        assertTrue(message.contains("not " + Double.parseDouble(value)), "the message repeats the value: " + message);
        assertEquals(option.equals("--run_timeout"), message.contains("or 0 (no limit)"), message);
    }

    private static int run(StringWriter err, String... args) {
        CommandLine cl = Main.commandLine();
        cl.setOut(new PrintWriter(new StringWriter()));
        cl.setErr(new PrintWriter(err));
        return cl.execute(args);
    }

    /** picocli itself refuses "-Infinity", which reads like the short options -I -n ...: exit 2 as well. */
    @ParameterizedTest
    @ValueSource(strings = {"--handshake_timeout", "--connect_timeout", "--completion_timeout", "--run_timeout"})
    void minusInfinityIsRefusedByTheParser(String option) {
        StringWriter err = new StringWriter();
        assertEquals(2, run(err, "write_bw", "-d", "no-such-device", option, "-Infinity"), err.toString());
        assertTrue(err.toString().contains(option), err.toString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"--handshake_timeout", "--connect_timeout", "--completion_timeout", "--run_timeout"})
    void oneMillisecondAndTheLargestValueAreAccepted(String option) {
        for (String value : new String[] {"0.001", "1000000"}) {
            PerftestCommand c = new PerftestCommand(Verb.WRITE, Kind.BW);
            new CommandLine(c).parseArgs(option, value);
            c.check();
        }
        PerftestCommand c = new PerftestCommand(Verb.WRITE, Kind.BW);
        new CommandLine(c).parseArgs("--handshake_timeout", "0.001", "--run_timeout", "0");
        TestSpec t = c.check();
        assertEquals(1, t.handshakeMs(), "1 ms stays 1 ms");
        assertEquals(0, t.runMs(), "--run_timeout 0: no limit");
    }

    /** C's server waits for its client without limit; its client gives up after 60 s; the option bounds either. */
    @org.junit.jupiter.api.Test
    void theServerWaitsForItsClientWithoutLimitByDefault() {
        PerftestCommand server = new PerftestCommand(Verb.WRITE, Kind.BW);
        new CommandLine(server).parseArgs();
        assertEquals(0, server.check().connectMs(), "0: no limit");
        PerftestCommand client = new PerftestCommand(Verb.WRITE, Kind.BW);
        new CommandLine(client).parseArgs("192.0.2.1");
        assertEquals(60_000, client.check().connectMs());
        PerftestCommand bounded = new PerftestCommand(Verb.WRITE, Kind.BW);
        new CommandLine(bounded).parseArgs("--connect_timeout", "2.5");
        assertEquals(2_500, bounded.check().connectMs());
    }


}
