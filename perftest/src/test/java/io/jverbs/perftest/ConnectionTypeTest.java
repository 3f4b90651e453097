package io.jverbs.perftest;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code -c}: RC, UC and UD where C perftest allows them, C's messages and exit code 2 where it does not. */
class ConnectionTypeTest {
    private static TestSpec parsed(Verb verb, Kind kind, String... args) {
        PerftestCommand c = new PerftestCommand(verb, kind);
        new CommandLine(c).parseArgs(args);
        return c.check();
    }

    /** A line C refuses too: C's message and C's exit code 1. */
    private static void refused(String expected, Verb verb, Kind kind, String... args) {
        refused(1, expected, verb, kind, args);
    }

    private static void refused(int exitCode, String expected, Verb verb, Kind kind, String... args) {
        PerftestException e = assertThrows(PerftestException.class, () -> parsed(verb, kind, args));
        assertEquals(exitCode, e.exitCode, e.getMessage());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }

    @Test
    void ucForWriteAndSend() {
        assertEquals("UC", parsed(Verb.WRITE, Kind.BW, "-c", "UC").connection());
        assertEquals("UC", parsed(Verb.WRITE, Kind.LAT, "-c", "UC").connection());
        assertEquals("UC", parsed(Verb.SEND, Kind.BW, "-c", "UC").connection());
        assertEquals("UC", parsed(Verb.SEND, Kind.LAT, "-c", "UC").connection());
        assertEquals("RC", parsed(Verb.READ, Kind.BW).connection());
    }

    @Test
    void whatCRefusesIsRefused() {
        refused("UC connection not possible in READ/ATOMIC verbs", Verb.READ, Kind.BW, "-c", "UC");
        refused("UC connection not possible in READ/ATOMIC verbs", Verb.ATOMIC, Kind.LAT, "-c", "UC");
        refused("UC is not supported in librdmacm", Verb.WRITE, Kind.BW, "-c", "UC", "-R");
        refused("UD connection only possible in SEND verb", Verb.WRITE, Kind.BW, "-c", "UD");
        refused("Invalid Connection type", Verb.WRITE, Kind.BW, "-c", "XY");
    }

    @Test
    void udForSendOnlyAndAtMostTheMtu() {
        TestSpec bw = parsed(Verb.SEND, Kind.BW, "-c", "UD");
        assertTrue(bw.ud());
        assertEquals(65536, bw.size(), "C's bandwidth default before the MTU is known");
        TestSpec.DatagramFit fit = bw.fitDatagramSize(1024);
        assertEquals(" Max msg size in UD is MTU 1024\n Changing to this MTU", fit.note());
        assertEquals(1024, fit.spec().size());
        assertArrayEquals(new int[] {1024}, fit.spec().sizes());
        TestSpec all = parsed(Verb.SEND, Kind.BW, "-c", "UD", "-a");
        assertArrayEquals(new int[] {2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}, all.fitDatagramSize(1024).spec().sizes(),
                "-a stops at the MTU");
        TestSpec lat = parsed(Verb.SEND, Kind.LAT, "-c", "UD");
        assertEquals(null, lat.fitDatagramSize(1024).note(), "2 bytes fit");
        assertEquals(null, parsed(Verb.SEND, Kind.BW, "-s", "4096").fitDatagramSize(1024).note(), "RC is not limited");
        PerftestException e = assertThrows(PerftestException.class,
                () -> parsed(Verb.SEND, Kind.BW, "-c", "UD", "-s", "4096").fitDatagramSize(1024));
        assertTrue(e.getMessage().contains("Max message size in UD cannot be greater than MTU"), e.getMessage());
        assertEquals(1, e.exitCode, "a run-time failure, as C's");
        assertEquals(null, parsed(Verb.SEND, Kind.BW, "-c", "UD", "-s", "1024").fitDatagramSize(1024).note());
    }

    @Test
    void whatJverbsDoesNotYetDoIsRefusedAndSaysSo() {
        refused(2, "-c XRC is not supported", Verb.SEND, Kind.BW, "-c", "XRC"); // C would run it: only jverbs refuses
    }

    @Test
    void datagramsOverRdmaCmAreTakenAndUcIsNot() {
        assertTrue(parsed(Verb.SEND, Kind.LAT, "-c", "UD", "-R").ud(), "rdma_cm's UDP port space, as C's -c UD -R");
        assertTrue(parsed(Verb.SEND, Kind.BW, "-c", "UD", "-R", "-b", "-q", "2").rdmaCm());
        refused("UC is not supported in librdmacm", Verb.SEND, Kind.BW, "-c", "UC", "-R");
    }

    @Test
    void postListsOfDatagramsAndAtomicsAreTaken() {
        assertEquals(4, parsed(Verb.SEND, Kind.BW, "-c", "UD", "-l", "4").cqMod(), "UD: moderation by the list, as C");
        assertEquals(4, parsed(Verb.ATOMIC, Kind.BW, "-l", "4").cqMod(), "atomics: moderation by the list, as C");
        refused("Post list is supported in BW tests only", Verb.ATOMIC, Kind.LAT, "-l", "4");
    }

    @Test
    void unreliableTransportsKeepUpToSixteenThousandReceivesAsC() {
        // C's force_dependecies: UC and UD with the default receive depth post min(iters, UC_MAX_RX)
        assertEquals(16000, parsed(Verb.SEND, Kind.BW, "-c", "UD", "-s", "64", "-n", "20000").rx());
        assertEquals(16000, parsed(Verb.SEND, Kind.BW, "-c", "UC", "-n", "20000").rx());
        assertEquals(16000, parsed(Verb.SEND, Kind.BW, "-c", "UD", "-n", "20000", "-r", "512").rx(), "C compares the value, 512 given or not");
        assertEquals(1000, parsed(Verb.SEND, Kind.BW, "-c", "UD", "-n", "1000").rx(), "at most the iterations");
        assertEquals(16000, parsed(Verb.SEND, Kind.LAT, "-c", "UD", "-n", "20000").rx());
        assertEquals(256, parsed(Verb.SEND, Kind.BW, "-c", "UD", "-n", "20000", "-r", "256").rx(), "another -r is kept");
        assertEquals(512, parsed(Verb.SEND, Kind.BW, "-n", "20000").rx(), "RC keeps 512");
        assertEquals(512, parsed(Verb.SEND, Kind.BW, "-c", "UD", "-D", "2").rx(), "duration mode keeps 512");
    }
}
