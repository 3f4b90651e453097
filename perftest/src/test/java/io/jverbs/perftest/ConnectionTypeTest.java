package io.jverbs.perftest;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code -c}: RC and UC where C perftest allows them, C's messages and exit code 2 where it does not. */
class ConnectionTypeTest {
    private static PerftestCommand parsed(Verb verb, Kind kind, String... args) {
        PerftestCommand c = new PerftestCommand(verb, kind);
        new CommandLine(c).parseArgs(args);
        c.check();
        return c;
    }

    private static void refused(String expected, Verb verb, Kind kind, String... args) {
        PerftestException e = assertThrows(PerftestException.class, () -> parsed(verb, kind, args));
        assertEquals(2, e.exitCode, e.getMessage());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }

    @Test
    void ucForWriteAndSend() {
        assertEquals("UC", parsed(Verb.WRITE, Kind.BW, "-c", "UC").connection);
        assertEquals("UC", parsed(Verb.WRITE, Kind.LAT, "-c", "UC").connection);
        assertEquals("UC", parsed(Verb.SEND, Kind.BW, "-c", "UC").connection);
        assertEquals("UC", parsed(Verb.SEND, Kind.LAT, "-c", "UC").connection);
        assertEquals("RC", parsed(Verb.READ, Kind.BW).connection);
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
    void whatJverbsDoesNotYetDoIsRefusedAndSaysSo() {
        refused("-c UD is not supported", Verb.SEND, Kind.BW, "-c", "UD");
        refused("-c XRC is not supported", Verb.SEND, Kind.BW, "-c", "XRC");
    }
}
