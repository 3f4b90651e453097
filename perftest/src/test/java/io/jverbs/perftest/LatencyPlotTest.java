package io.jverbs.perftest;

import org.HdrHistogram.Histogram;
import org.jfree.data.xy.XYSeries;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The latency plot: percentiles only as deep as the samples support, one curve per size, a PNG. */
class LatencyPlotTest {
    private static Histogram histogram(int samples, long baseNs) {
        Histogram h = new Histogram(LatLoop.HIST_MAX_NS, 3);
        for (int i = 0; i < samples; i++) {
            h.recordValue(baseNs + i);
        }
        return h;
    }

    @Test
    void aPercentileNeedsASampleBeyondIt() {
        assertTrue(Outputs.supported(99.9, 1_000));
        assertFalse(Outputs.supported(99.9, 999));
        assertTrue(Outputs.supported(99, 100));
        assertFalse(Outputs.supported(99.99, 9_999));
        assertFalse(Outputs.supported(0, 0));
    }

    @Test
    void theCurveStopsWhereTheSamplesDo() {
        XYSeries few = Outputs.latencySeries("999", histogram(999, 10_000));
        double deepest = few.getMaxX();
        assertEquals(200, deepest, 1e-6, "999 samples reach p99.5 (x = 200), not p99.9 (x = 1000): " + deepest);
        XYSeries many = Outputs.latencySeries("19999", histogram(19_999, 10_000));
        assertEquals(10_000, many.getMaxX(), 1e-3, "19,999 samples reach p99.99 (x = 10,000), not p99.995");
        assertEquals(20_000, Outputs.latencySeries("20000", histogram(20_000, 10_000)).getMaxX(), 1e-3);
    }

    @Test
    void oneCurvePerSizeIntoAPng(@TempDir Path dir) throws Exception {
        Map<Long, Histogram> curves = new LinkedHashMap<>();
        curves.put(2L, histogram(1_000, 5_000));
        curves.put(4096L, histogram(1_000, 50_000));
        Path png = dir.resolve("lat.png");
        Outputs.plotLatency(png, "write_lat -a", curves, null);
        byte[] head = java.util.Arrays.copyOf(Files.readAllBytes(png), 4);
        assertArrayEquals(new byte[] {(byte) 0x89, 'P', 'N', 'G'}, head);
    }
}
