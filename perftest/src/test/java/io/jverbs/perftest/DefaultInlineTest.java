package io.jverbs.perftest;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The inline size without {@code -I}, as C perftest picks it: 220 for write_lat and 236 for
 * send_lat on an NVIDIA/Mellanox device, 0 on rxe (vendor 0xffffff, which C does not recognise),
 * 0 for bandwidth tests, read and atomics; {@code -I} always wins.
 */
class DefaultInlineTest {
    private static final int RXE = 0xffffff;

    private static TestSpec parsed(Verb verb, Kind kind, String... args) {
        PerftestCommand c = new PerftestCommand(verb, kind);
        new CommandLine(c).parseArgs(args);
        return c.check();
    }

    @Test
    void latencyTestsOnConnectXInlineAsC() {
        assertEquals(220, parsed(Verb.WRITE, Kind.LAT, "-d", "mlx5_0").defaultInline(TestSpec.MELLANOX_VENDOR_ID));
        assertEquals(236, parsed(Verb.SEND, Kind.LAT, "-d", "mlx5_0").defaultInline(TestSpec.MELLANOX_VENDOR_ID));
        assertEquals(0, parsed(Verb.READ, Kind.LAT, "-d", "mlx5_0").defaultInline(TestSpec.MELLANOX_VENDOR_ID));
        assertEquals(0, parsed(Verb.ATOMIC, Kind.LAT, "-d", "mlx5_0").defaultInline(TestSpec.MELLANOX_VENDOR_ID));
    }

    @Test
    void bandwidthTestsAndUnrecognisedDevicesDoNotInline() {
        assertEquals(0, parsed(Verb.WRITE, Kind.BW, "-d", "mlx5_0").defaultInline(TestSpec.MELLANOX_VENDOR_ID));
        assertEquals(0, parsed(Verb.WRITE, Kind.LAT, "-d", "rxe0").defaultInline(RXE));
        assertEquals(0, parsed(Verb.SEND, Kind.LAT, "-d", "rxe0").defaultInline(RXE));
    }

    @Test
    void anExplicitInlineSizeWins() {
        assertEquals(16, parsed(Verb.WRITE, Kind.LAT, "-d", "mlx5_0", "-I", "16").defaultInline(TestSpec.MELLANOX_VENDOR_ID));
        assertEquals(0, parsed(Verb.WRITE, Kind.LAT, "-d", "mlx5_0", "-I", "0").defaultInline(TestSpec.MELLANOX_VENDOR_ID));
        assertEquals(0, parsed(Verb.WRITE, Kind.LAT, "-d", "rxe0", "-I", "64").defaultInline(RXE),
                "C disables inline on a device it does not recognise, -I included");
        assertEquals(64, parsed(Verb.WRITE, Kind.BW, "-d", "bnxt_re0", "-I", "64").defaultInline(0x14e4));
    }

    /** C's note on a device it does not recognise, when the inline size was set: by -I, or by read and atomics. */
    @Test
    void csNoteWhereCPrintsIt() {
        assertEquals(true, parsed(Verb.WRITE, Kind.LAT, "-d", "rxe0", "-I", "64").inlineNote(RXE));
        assertEquals(true, parsed(Verb.READ, Kind.BW, "-d", "rxe0").inlineNote(RXE));
        assertEquals(true, parsed(Verb.ATOMIC, Kind.LAT, "-d", "rxe0").inlineNote(RXE));
        assertEquals(false, parsed(Verb.WRITE, Kind.LAT, "-d", "rxe0").inlineNote(RXE));
        assertEquals(false, parsed(Verb.SEND, Kind.BW, "-d", "rxe0").inlineNote(RXE));
        assertEquals(false, parsed(Verb.READ, Kind.BW, "-d", "mlx5_0").inlineNote(TestSpec.MELLANOX_VENDOR_ID));
    }
}
