package io.jverbs.perftest;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** compare-perftest's verdict: a Java/C ratio judged against C's own spread in the same boot. */
class CompareVerdictTest {
    private static final double[] C = {100, 104, 97, 101, 99, 103, 98};

    @Test
    void theNoiseOfCAgainstItselfContainsOne() {
        double[] noise = Compare.noiseInterval(C);
        assertNotNull(noise);
        assertTrue(noise[0] < 1 && noise[1] > 1 && noise[1] - noise[0] < 0.1, noise[0] + ".." + noise[1]);
    }

    @Test
    void javaWithinTheNoiseIsIndistinguishable() {
        double[] java = {99, 102, 100, 98, 103, 101, 100};
        assertEquals(Compare.Verdict.INDISTINGUISHABLE,
                Compare.verdict(Compare.ratioInterval(C, java), Compare.noiseInterval(C), true));
    }

    @Test
    void lowerBandwidthBeyondTheNoiseIsSlowerAndLowerLatencyFaster() {
        double[] java = {80, 82, 79, 81, 83, 80, 78};
        double[] ci = Compare.ratioInterval(C, java);
        double[] noise = Compare.noiseInterval(C);
        assertEquals(Compare.Verdict.SLOWER, Compare.verdict(ci, noise, true), "bandwidth 20 % lower");
        assertEquals(Compare.Verdict.FASTER, Compare.verdict(ci, noise, false), "latency 20 % lower");
    }

    @Test
    void higherLatencyBeyondTheNoiseIsSlower() {
        double[] java = {130, 128, 131, 127, 132, 129, 130};
        assertEquals(Compare.Verdict.SLOWER,
                Compare.verdict(Compare.ratioInterval(C, java), Compare.noiseInterval(C), Compare.higherIsBetter("t_typical_usec")));
        assertTrue(Compare.higherIsBetter("bw_avg_MBps") && Compare.higherIsBetter("msg_rate_Mpps"));
    }

    @Test
    void aNoisyCMakesALargeGapIndistinguishable() {
        double[] noisyC = {50, 100, 150, 60, 140, 70, 130};
        double[] java = {80, 85, 90, 75, 95, 88, 82};
        assertEquals(Compare.Verdict.INDISTINGUISHABLE,
                Compare.verdict(Compare.ratioInterval(noisyC, java), Compare.noiseInterval(noisyC), true));
    }

    @Test
    void noVerdictWithoutIntervals() {
        assertNull(Compare.verdict(null, new double[] {0.9, 1.1}, true));
        assertNull(Compare.noiseInterval(new double[] {100}));
    }
}
