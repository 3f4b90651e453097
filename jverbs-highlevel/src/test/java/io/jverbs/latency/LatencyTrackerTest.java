package io.jverbs.latency;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The per-connection recorder on its own: pairing and counts (percentiles and allocation: perftest's LatencyRecorderAllocationTest). */
class LatencyTrackerTest {
    private static final long WAIT_NS = 20_000_000;

    /**
     * Waits until {@code ns} have passed on {@link System#nanoTime}, the tracker's clock. One
     * {@code parkNanos} is not enough: it may return at once (a pending permit, or spuriously),
     * which once left the first operation at 30 µs in CI.
     */
    private static void waitAtLeast(long ns) {
        long until = System.nanoTime() + ns;
        for (long left = ns; left > 0; left = until - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    @Test
    void pairsCompletionsWithSignaledPostsInOrder() {
        List<Long> seen = new ArrayList<>();
        LatencyTracker t = new LatencyTracker(seen::add, 4);
        t.posted(64, true);
        waitAtLeast(WAIT_NS);
        t.posted(64, false);
        t.posted(128, true);
        t.completed();
        t.completed();
        t.completed(); // no signaled post left: ignored
        assertEquals(2, seen.size());
        assertTrue(seen.get(0) >= WAIT_NS, "the first waited 20 ms: " + seen);
        assertTrue(seen.get(0) > seen.get(1), "the second was posted later: " + seen);
        assertEquals(3, t.postedOperations());
        assertEquals(256, t.postedBytes());
        assertEquals(2, t.timedOperations());
        t.posted(1, true);
        t.failed();
        t.completed();
        assertEquals(2, seen.size(), "a failure forgets what was outstanding");
        assertThrows(IllegalArgumentException.class, () -> new LatencyTracker(seen::add, 0));
    }

    @Test
    void moreSignaledThanDeclaredAreCountedNotTimed() {
        List<Long> seen = new ArrayList<>();
        LatencyTracker t = new LatencyTracker(seen::add, 3); // rounded up to 4
        for (int i = 0; i < 6; i++) {
            t.posted(8, true);
        }
        for (int i = 0; i < 6; i++) {
            t.completed();
        }
        assertEquals(4, seen.size());
        assertEquals(6, t.postedOperations());
    }
}
