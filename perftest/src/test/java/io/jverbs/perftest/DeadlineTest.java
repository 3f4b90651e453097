package io.jverbs.perftest;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DeadlineTest {
    private static final long LIMIT = 1_000_000;

    @Test
    void expiresAfterTheLimitWithoutProgress() {
        Deadline d = new Deadline(LIMIT);
        d.progress(0);
        assertFalse(d.expired(LIMIT));
        assertTrue(d.expired(LIMIT + 1));
    }

    @Test
    void untimedProgressIsDatedByTheNextClockRead() {
        Deadline d = new Deadline(LIMIT);
        d.progress(0);
        d.progressed();
        // Without the progress this read would expire; with it, it dates the progress instead.
        assertFalse(d.expired(5 * LIMIT));
        assertFalse(d.expired(6 * LIMIT), "the limit counts from the read that dated the progress");
        assertTrue(d.expired(6 * LIMIT + 1));
    }

    @Test
    void progressRestartsTheCountOfEmptyPolls() {
        Deadline d = new Deadline(LIMIT);
        int reads = 0;
        for (int i = 0; i < 100; i++) {
            if (d.emptyPollReadsClock()) {
                reads++;
            }
        }
        assertEquals(1, reads, "every 64th empty poll reads the clock");
        d.progressed();
        for (int i = 0; i < 63; i++) {
            assertFalse(d.emptyPollReadsClock());
        }
        assertTrue(d.emptyPollReadsClock(), "the 64th empty poll after progress reads it");
    }
}
