package io.jverbs;

import org.junit.jupiter.api.Test;

import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** A remote range is checked as unsigned 64-bit addresses: it may end at 2^64, never wrap past it. */
class RemoteBufferTest {
    @Test
    void aRangeWrappingPastTheTopOfTheAddressSpaceIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new RemoteBuffer(0xFFFF_FFFF_FFFF_FFF8L, 16, 1));
        assertThrows(IllegalArgumentException.class, () -> new RemoteBuffer(-1L, 2, 1, Set.of(Access.REMOTE_READ)));
        assertThrows(IllegalArgumentException.class, () -> new RemoteBuffer(0x1000, -1, 1));
    }

    @Test
    void aRangeEndingExactlyAtTheTopOrAboveTheSignBitIsAccepted() {
        assertEquals(8, new RemoteBuffer(0xFFFF_FFFF_FFFF_FFF8L, 8, 1).length());
        assertEquals(4096, new RemoteBuffer(0x8000_0000_0000_0000L, 4096, 1).length());
        assertEquals(16, new RemoteBuffer(0x7FFF_FFFF_FFFF_FFF8L, 16, 1).length()); // across the sign bit
        assertEquals(0, new RemoteBuffer(-1L, 0, 1).length());
    }
}
