package io.jverbs.latency;

import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

import java.lang.reflect.InvocationTargetException;
import java.net.URL;
import java.net.URLClassLoader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The HdrHistogram recorder, reached through method handles: its readings, and the message when HdrHistogram is absent. */
class HdrLatencyRecorderTest {
    @Test
    void readsPercentilesAndHandsOutTheHistogram() {
        HdrLatencyRecorder r = new HdrLatencyRecorder(1_000_000);
        assertEquals(0, r.percentiles().count(), "nothing recorded yet");
        for (long v = 1; v <= 100; v++) {
            r.recordNanos(v * 1000);
        }
        r.recordNanos(5_000_000); // above highestNanos: kept as highestNanos
        LatencyPercentiles p = r.percentiles();
        assertEquals(101, p.count());
        assertTrue(Math.abs(p.p50Nanos() - 51_000) < 100, p.toString());
        assertTrue(Math.abs(p.maxNanos() - 1_000_000) < 1_000, p.toString());
        assertTrue(Math.abs(r.valueAtPercentile(90) - 91_000) < 100, "p90 " + r.valueAtPercentile(90));
        Histogram h = r.cumulative();
        assertEquals(101, h.getTotalCount());
        h.recordValue(7);
        assertEquals(101, r.percentiles().count(), "cumulative() is a copy");
    }

    @Test
    void withoutHdrHistogramTheConstructorSaysWhatToAdd() throws Exception {
        // This module's classes alone, under the platform loader: HdrHistogram is not visible.
        URL classes = HdrLatencyRecorder.class.getProtectionDomain().getCodeSource().getLocation();
        try (URLClassLoader alone = new URLClassLoader(new URL[]{classes}, ClassLoader.getPlatformClassLoader())) {
            Class<?> c = Class.forName(HdrLatencyRecorder.class.getName(), true, alone);
            assertEquals(alone, c.getClassLoader());
            InvocationTargetException e = assertThrows(InvocationTargetException.class,
                    () -> c.getConstructor().newInstance());
            IllegalStateException missing = assertInstanceOf(IllegalStateException.class, e.getCause());
            assertTrue(missing.getMessage().contains("org.hdrhistogram:HdrHistogram"), missing.getMessage());
            assertTrue(missing.getMessage().contains("--add-modules HdrHistogram"), missing.getMessage());
        }
    }
}
