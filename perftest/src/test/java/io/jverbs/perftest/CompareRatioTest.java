package io.jverbs.perftest;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The paired ratio of compare-perftest: the median of Java/C over back-to-back pairs, missing runs left out. */
class CompareRatioTest {
    private static Compare.Sample bw(double v) {
        return new Compare.Sample(v, 0, 0, 0, 0);
    }

    @Test
    void driftCancelsInEachPairWhereTheRatioOfMediansDoesNot() {
        // The rig speeds up over a boot: C 10, 20, 40; Java 9.5, 19, 38 (0.95 of C in every pair).
        Compare.Sample[] c = {bw(10), bw(20), bw(40)};
        Compare.Sample[] j = {bw(9.5), bw(19), bw(38)};
        assertEquals(0.95, Compare.pairedRatio(c, j, Compare.Sample::bw), 1e-9);
        // Java's runs shifted against C's (its slow run beside C's fast one): the pairs show it.
        Compare.Sample[] j2 = {bw(38), bw(9.5), bw(19)};
        // pairs 3.8, 0.475, 0.475: median 0.475, while the two medians alone (20 and 19) would say 0.95
        assertEquals(0.475, Compare.pairedRatio(c, j2, Compare.Sample::bw), 1e-9);
    }

    @Test
    void aRunThatFailedOnOneSideIsLeftOutOfThePairs() {
        Compare.Sample[] c = {bw(10), null, bw(40), bw(20)};
        Compare.Sample[] j = {bw(5), bw(99), bw(40), null};
        assertEquals(0.75, Compare.pairedRatio(c, j, Compare.Sample::bw), 1e-9); // (0.5 + 1.0) / 2
        assertTrue(Double.isNaN(Compare.pairedRatio(new Compare.Sample[] {null}, new Compare.Sample[] {bw(1)},
                Compare.Sample::bw)));
    }

    @Test
    void aZeroOrInfiniteFigureIsNotAMeasurement() {
        // C's table row after a failed clock calibration: " 65536 1000 0.00 0.00 0.000000"
        Compare.Sample zero = Compare.parseC(true, " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
                + " 65536      1000             0.00               0.00   \t\t   0.000000\n", java.nio.file.Path.of("/nonexistent.json"));
        assertFalse(Compare.measured(true, zero), zero.toString());
        assertTrue(Compare.measured(true, bw(70.7)));
        assertFalse(Compare.measured(false, new Compare.Sample(0, 0, Double.POSITIVE_INFINITY, 0, -1)));
        assertTrue(Compare.measured(false, new Compare.Sample(0, 0, 17.5, 71.4, -1)));
    }
}
