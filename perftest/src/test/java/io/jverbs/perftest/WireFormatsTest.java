package io.jverbs.perftest;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The -R binary QP record (C's struct pingpong_dest) and the C result files --plot-compare reads; no device needed. */
class WireFormatsTest {
    private static final byte[] GID = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, 10, 0, 2, 15};

    @Test
    void binaryRecordHasCsLayout() {
        QpRecord r = new QpRecord(0, 0x80, 0x12, 0xbe1dad, 0x24e, 0x560bdda6a000L, GID, 0);
        byte[] b = r.encodeBinary(1);
        assertEquals(56, b.length);
        ByteBuffer be = ByteBuffer.wrap(b);
        assertEquals(0x80, be.getInt(4));
        assertEquals(0x12, be.getInt(8));
        assertEquals(0xbe1dad, be.getInt(12));
        assertEquals(0x24e, be.getInt(16));
        assertEquals(0x560bdda6a000L, be.getLong(24));
        assertEquals((byte) 0xff, b[32 + 10]);
        assertEquals(15, b[32 + 15]);
        assertEquals(1, be.getInt(52));
        assertEquals(r, QpRecord.decodeBinary(b));
    }

    @Test
    void binaryRecordOf629IsRead() {
        ByteBuffer b = ByteBuffer.allocate(64);
        b.putInt(8, 0x33).putInt(16, 0x77).putLong(24, 0x1000L).putLong(32, 0xdeadL).put(40, GID).putInt(56, 5);
        QpRecord r = QpRecord.decodeBinary(b.array());
        assertEquals(0x33, r.qpn());
        assertEquals(0x77, r.rkey());
        assertEquals(0x1000L, r.vaddr());
        assertArrayEquals(GID, r.gid());
        assertEquals(5, r.srqn());
    }

    @Test
    void otherLengthsAreRefusedByName() {
        PerftestException e = assertThrows(PerftestException.class, () -> QpRecord.decodeBinary(new byte[40]));
        assertTrue(e.getMessage().contains("40 bytes") && e.getMessage().contains("56 (4.5)"), e.getMessage());
    }

    @Test
    void cTableAndJson(@TempDir Path dir) throws Exception {
        Path table = dir.resolve("c.txt");
        Files.writeString(table, " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
                + " 65536      1000             25.26              24.87  \t\t   0.000398\n");
        CReference c = CReference.read(table, true);
        assertEquals(24.87, c.bwAverage(), 1e-9);
        assertEquals(25.26, c.bwPeak(), 1e-9);
        Path json = dir.resolve("c.json");
        Files.writeString(json, "{\nresults: {\nMsgSize: 2,\nn_iterations: 500,\nt_min: 49.89,\nt_max: 1933.93,\n"
                + "t_typical: 61.44,\nt_avg: 101.04,\nt_stdev: 160.81,\npercentile_99: 1247.55,\npercentile_99.9: 1933.93,\n},\n}\n");
        CReference l = CReference.read(json, false);
        assertEquals(61.44, l.latencyPoints()[1][1], 1e-9);
        assertEquals(1247.55, l.latencyPoints()[2][1], 1e-9);
        Path empty = dir.resolve("none.txt");
        Files.writeString(empty, "Couldn't connect\n");
        PerftestException e = assertThrows(PerftestException.class, () -> CReference.read(empty, true));
        assertEquals(2, e.exitCode);
    }
}
