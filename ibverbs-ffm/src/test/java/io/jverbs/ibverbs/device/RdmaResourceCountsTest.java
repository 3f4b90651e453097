package io.jverbs.ibverbs.device;

import org.junit.jupiter.api.Test;

import java.io.IOException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The leak check's parser, on any machine (no device needed). */
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
    void aMissingDeviceOrGarbageIsAnError() {
        assertThrows(IOException.class, () -> RdmaResourceCounts.parse(OUTPUT, "rxe1"));
        assertThrows(IOException.class, () -> RdmaResourceCounts.parse("0: rxe0: pd many\n", "rxe0"));
        assertThrows(IOException.class, () -> RdmaResourceCounts.parse("0: rxe0:\n", "rxe0"));
    }
}
