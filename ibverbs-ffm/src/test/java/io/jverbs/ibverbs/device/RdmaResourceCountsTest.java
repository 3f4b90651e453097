package io.jverbs.ibverbs.device;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The leak check's parser and its tool runner, on any machine (no device needed). */
class RdmaResourceCountsTest {
    private static final String OUTPUT = """
            0: mlx5_0: pd 3 cq 4 qp 2 cm_id 0 mr 7 ctx 1 srq 0
            1: rxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 ctx 0 srq 0
            """;

    @Test
    void parsesTheLineOfTheDevice() throws IOException {
        RdmaResourceCounts counts = RdmaResourceCounts.parse(OUTPUT, "rxe0");
        assertEquals("pd 1 cq 1 qp 1 cm_id 0 mr 0 ctx 0 srq 0", counts.toString());
        assertEquals(7L, RdmaResourceCounts.parse(OUTPUT, "mlx5_0").counts().get("mr"));
    }

    @Test
    void differenceNamesEachChangedKind() throws IOException {
        RdmaResourceCounts before = RdmaResourceCounts.parse(OUTPUT, "rxe0");
        RdmaResourceCounts same = RdmaResourceCounts.parse("3: rxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 ctx 0 srq 0\n", "rxe0");
        RdmaResourceCounts more = RdmaResourceCounts.parse("3: rxe0: pd 2 cq 1 qp 1 cm_id 1 mr 3 ctx 0 srq 0\n", "rxe0");
        assertEquals("", same.differenceFrom(before));
        assertEquals("pd +1 cm_id +1 mr +3", more.differenceFrom(before));
        assertEquals("pd -1 cm_id -1 mr -3", before.differenceFrom(more));
    }

    @Test
    void theToolsOutputAndExitStatusAreReported() throws IOException {
        assertEquals("out\nerr\n", RdmaResourceCounts.run(List.of("sh", "-c", "echo out; echo err >&2"), Duration.ofSeconds(20)));
        IOException e = assertThrows(IOException.class,
                () -> RdmaResourceCounts.run(List.of("sh", "-c", "echo no such device; exit 3"), Duration.ofSeconds(20)));
        assertEquals("sh -c echo no such device; exit 3 exited 3: no such device", e.getMessage());
    }

    /** A tool that hangs (here {@code sleep 60}) must cost the timeout, not a hung test run; it is killed. */
    @Test
    void aHangingToolIsKilledAtTheTimeout() {
        long started = System.nanoTime();
        IOException e = assertTimeoutPreemptively(Duration.ofSeconds(10), () -> assertThrows(IOException.class,
                () -> RdmaResourceCounts.run(List.of("sleep", "60"), Duration.ofMillis(500))),
                "the timeout of RdmaResourceCounts.run did not fire");
        long tookMs = (System.nanoTime() - started) / 1_000_000;
        assertTrue(e.getMessage().startsWith("sleep 60 did not finish in 500 ms (killed)"), e.getMessage());
        assertTrue(tookMs < 5_000, "took " + tookMs + " ms");
        assertTrue(ProcessHandle.current().children().noneMatch(p -> p.info().command().orElse("").endsWith("/sleep")),
                "sleep 60 is still running");
    }

    @Test
    void aMissingDeviceOrGarbageIsAnError() {
        assertThrows(IOException.class, () -> RdmaResourceCounts.parse(OUTPUT, "rxe1"));
        assertThrows(IOException.class, () -> RdmaResourceCounts.parse("0: rxe0: pd many\n", "rxe0"));
        assertThrows(IOException.class, () -> RdmaResourceCounts.parse("0: rxe0:\n", "rxe0"));
    }
}
