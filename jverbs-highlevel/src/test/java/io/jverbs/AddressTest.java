package io.jverbs;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A datagram address holds what the wire carries: a device would drop the high bits and deliver elsewhere. */
class AddressTest {
    @Test
    void aQueuePairNumberOverTwentyFourBitsIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new DatagramQueuePair.Address(0x7f00001f, 0x11111111, 0, new byte[16]));
        assertTrue(e.getMessage().contains("0x7f00001f"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new DatagramQueuePair.Address(-1, 0, 0, new byte[16]));
        assertThrows(IllegalArgumentException.class, () -> new DatagramQueuePair.Address(1, 0, 0x10000, new byte[16]));
    }

    @Test
    void theLargestNumbersAreAccepted() {
        assertEquals(0xffffff, new DatagramQueuePair.Address(0xffffff, -1, 0xffff, new byte[16]).qpn());
    }
}
