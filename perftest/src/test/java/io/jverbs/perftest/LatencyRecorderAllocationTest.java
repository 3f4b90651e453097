package io.jverbs.perftest;

import io.jverbs.latency.HdrLatencyRecorder;
import io.jverbs.latency.LatencyPercentiles;
import io.jverbs.latency.LatencyTracker;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** jverbs-highlevel's HdrHistogram latency recorder: percentiles, and no allocation in its hot-path hooks (here, where jdk.management is readable). */
class LatencyRecorderAllocationTest {
    @Test
    void hdrRecorderGivesPercentilesAndTheHotPathAllocatesNothing() {
        HdrLatencyRecorder hdr = new HdrLatencyRecorder();
        LatencyTracker t = new LatencyTracker(hdr, 128);
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long least = Long.MAX_VALUE;
        for (int warm = 0; warm < 10; warm++) {
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 100_000; i++) {
                t.posted(64, true);
                t.completed();
            }
            long allocated = threads.getCurrentThreadAllocatedBytes() - before;
            least = Math.min(least, allocated);
        }
        // The best of ten warm runs of 100 000 post + completion pairs: a one-off JIT or
        // measurement allocation may land in one run, a per-operation one lands in all.
        assertEquals(0, least, "post + completion hooks allocated " + least + " bytes in every run");
        assertEquals(1_000_000, hdr.percentiles().count());
        HdrLatencyRecorder fresh = new HdrLatencyRecorder();
        for (long v = 1; v <= 1000; v++) {
            fresh.recordNanos(v * 1000);
        }
        LatencyPercentiles p = fresh.percentiles();
        assertEquals(1000, p.count());
        assertTrue(Math.abs(p.p50Nanos() - 500_000) < 1_000, p.toString());
        assertTrue(Math.abs(p.p99Nanos() - 990_000) < 1_000, p.toString());
        assertTrue(Math.abs(p.maxNanos() - 1_000_000) < 1_000, p.toString());
        assertTrue(Math.abs(p.sumNanos() - 500_500_000.0) < 500_000, p.toString());
        fresh.recordNanos(-5);
        fresh.recordNanos(Long.MAX_VALUE);
        assertEquals(1002, fresh.percentiles().count(), "out-of-range values are clamped, not thrown");
    }
}
