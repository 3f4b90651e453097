package io.jverbs.perftest;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * compare-perftest's arithmetic: the paired ratio (the median of Java/C over back-to-back pairs,
 * missing runs left out), what counts as a measurement, and the order of the runs.
 */
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

    @Test
    void everyCaseRunsOnceARoundSoItsRunsSpreadOverTheBoot() {
        // three cases with 2, 3 and 1 runs: round 0 has all three, round 1 the first two, round 2 the second
        java.util.List<String> order = Compare.schedule(new int[] {2, 3, 1}).stream().map(e -> e[0] + "/" + e[1]).toList();
        assertEquals(java.util.List.of("0/0", "1/0", "2/0", "0/1", "1/1", "1/2"), order);
        assertTrue(Compare.schedule(new int[0]).isEmpty());
    }

    @Test
    void theIntervalOfTheRatioIsAsWideAsTheRunsSpread() {
        // clearly apart: Java half of C in every run
        double[] apart = Compare.ratioInterval(new double[] {10, 10.1, 9.9, 10, 10.2}, new double[] {5, 5.1, 4.9, 5, 5.05});
        assertTrue(apart[1] < 0.55 && apart[0] > 0.45, java.util.Arrays.toString(apart));
        // the same spread on both sides, as the emulated rig gives (t_typical 30-52 us): 1.0 inside, and wide
        double[] c = {30, 45, 35, 50, 32, 41, 29};
        double[] j = {33, 48, 31, 52, 40, 30, 36};
        double[] wide = Compare.ratioInterval(c, j);
        assertTrue(wide[0] < 1 && wide[1] > 1 && wide[1] - wide[0] > 0.2, java.util.Arrays.toString(wide));
        // a fixed seed: the same runs give the same interval
        assertEquals(java.util.Arrays.toString(wide), java.util.Arrays.toString(Compare.ratioInterval(c, j)));
        // one run a side says nothing about spread
        assertEquals(null, Compare.ratioInterval(new double[] {1}, new double[] {1, 2}));
    }

    private static java.util.Map<String, Object> bwRow(int runs, java.util.List<Double> c, java.util.List<Double> j) {
        java.util.Map<String, Object> metric = new java.util.LinkedHashMap<>();
        metric.put("c_runs", c);
        metric.put("java_runs", j);
        java.util.Map<String, Object> row = new java.util.LinkedHashMap<>();
        row.put("test", "write_bw");
        row.put("connection", "RC");
        row.put("size", 65536);
        row.put("iters", 2000);
        row.put("runs", runs);
        row.put("bw_avg_MBps", metric);
        row.put("java_allocated_bytes", java.util.List.of(0L));
        return row;
    }

    @Test
    @SuppressWarnings("unchecked")
    void bootsPooledCaseByCaseKeepOnlyPairsThatLineUp() {
        // boot 1: three pairs, Java 0.5x C in each; boot 2: C lost a run, so its pairs do not line up
        var boot1 = java.util.List.of(bwRow(3, java.util.List.of(10.0, 20.0, 40.0), java.util.List.of(5.0, 10.0, 20.0)));
        var boot2 = java.util.List.of(bwRow(2, java.util.List.of(30.0), java.util.List.of(60.0, 90.0)));
        var rows = Compare.pool(java.util.List.of(boot1, boot2));
        assertEquals(1, rows.size());
        assertEquals(5, rows.get(0).get("runs"));
        var m = (java.util.Map<String, Object>) rows.get(0).get("bw_avg_MBps");
        assertEquals(25.0, (Double) m.get("c"), 1e-9);    // median of 10, 20, 30, 40
        assertEquals(20.0, (Double) m.get("java"), 1e-9); // median of 5, 10, 20, 60, 90
        assertEquals(0.8, (Double) m.get("ratio"), 1e-9);
        assertEquals(0.5, (Double) m.get("paired_ratio"), 1e-9); // boot 1's three pairs only
        assertTrue(m.get("ratio_ci95") instanceof double[]);
    }

    @Test
    void targetsSayMetMissedOrMissedWithinTheInterval() {
        var rows = new java.util.ArrayList<java.util.Map<String, Object>>();
        // write_bw 64 KiB: ratio 0.95, interval [0.80, 1.10]: a miss the spread cannot tell from a hit
        var within = bwRow(2, java.util.List.of(100.0, 100.0), java.util.List.of(95.0, 95.0));
        ((java.util.Map<String, Object>) within.get("bw_avg_MBps")).putAll(java.util.Map.of("ratio", 0.95,
                "ratio_ci95", new double[] {0.80, 1.10}));
        rows.add(within);
        // read_bw 64 KiB: 0.90 with [0.85, 0.93]: a measured miss
        var outside = bwRow(2, java.util.List.of(100.0, 100.0), java.util.List.of(90.0, 90.0));
        outside.put("test", "read_bw");
        ((java.util.Map<String, Object>) outside.get("bw_avg_MBps")).putAll(java.util.Map.of("ratio", 0.90,
                "ratio_ci95", java.util.List.of(0.85, 0.93)));
        rows.add(outside);
        // send_bw 64 KiB: 1.02, met; and a UD row, which no target names
        var met = bwRow(2, java.util.List.of(100.0, 100.0), java.util.List.of(102.0, 102.0));
        met.put("test", "send_bw");
        ((java.util.Map<String, Object>) met.get("bw_avg_MBps")).put("ratio", 1.02);
        rows.add(met);
        var ud = bwRow(2, java.util.List.of(1.0, 1.0), java.util.List.of(0.1, 0.1));
        ud.put("connection", "UD");
        rows.add(ud);
        java.util.List<String> lines = Compare.verdicts(rows);
        assertEquals(4, lines.size(), lines.toString());
        assertTrue(lines.get(0).startsWith("write_bw") && lines.get(0).endsWith("0.95 missed, within the interval"), lines.get(0));
        assertTrue(lines.get(1).startsWith("read_bw") && lines.get(1).endsWith("0.90 MISSED, outside the interval"), lines.get(1));
        assertTrue(lines.get(2).startsWith("send_bw") && lines.get(2).endsWith("1.02 met"), lines.get(2));
        assertTrue(lines.get(3).endsWith("0 in every one of 4 runs: met"), lines.get(3));
        // one run that allocated fails the allocation line
        ud.put("java_allocated_bytes", new long[] {0, 4096});
        assertTrue(Compare.verdicts(rows).get(3).contains("1 of 5 runs allocated"), Compare.verdicts(rows).get(3));
    }
}
