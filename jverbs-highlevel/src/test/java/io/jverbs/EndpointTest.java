package io.jverbs;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** An endpoint's wire form carries the transport, so a connect can refuse a peer of the other one. */
class EndpointTest {
    private static final byte[] GID = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, 10, 0, 2, 15};

    @Test
    void theTransportSurvivesTheWireForm() {
        for (QueuePairConfig.Transport t : QueuePairConfig.Transport.values()) {
            Endpoint e = new Endpoint(0x1234, 0xabcdef, 0, GID, 3, t);
            Endpoint back = Endpoint.fromBytes(e.toBytes());
            assertEquals(t, back.transport());
            assertEquals(e, back);
            assertEquals(Endpoint.BYTES, e.toBytes().length);
        }
        Endpoint unstated = Endpoint.fromBytes(new Endpoint(7, 9, 0, GID, 5).toBytes());
        assertNull(unstated.transport());
    }

    @Test
    void endpointsOfDifferentTransportsDiffer() {
        assertNotEquals(new Endpoint(7, 9, 0, GID, 5, QueuePairConfig.Transport.RC),
                new Endpoint(7, 9, 0, GID, 5, QueuePairConfig.Transport.UC));
    }

    @Test
    void anUnknownTransportCodeIsRefused() {
        byte[] bytes = new Endpoint(7, 9, 0, GID, 5, QueuePairConfig.Transport.RC).toBytes();
        bytes[4 + 2 + 4 + 4 + 2 + 1] = 3;
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Endpoint.fromBytes(bytes));
        assertTrue(e.getMessage().contains("transport code 3"), e.getMessage());
    }

    @Test
    void theFirstVersionIsRefusedNamingBothVersions() {
        byte[] bytes = new Endpoint(7, 9, 0, GID, 5, QueuePairConfig.Transport.RC).toBytes();
        bytes[5] = 1;
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Endpoint.fromBytes(bytes));
        assertTrue(e.getMessage().contains("version 1") && e.getMessage().contains("speaks 2"), e.getMessage());
    }
}
