package io.jverbs.cm;

import io.jverbs.Access;
import io.jverbs.RemoteBuffer;
import org.junit.jupiter.api.Test;

import java.util.EnumSet;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The handshake's private-data frame: what fits, what comes back, what a foreign peer's bytes become. */
class HandshakeTest {
    private static final RemoteBuffer A = new RemoteBuffer(0x7f00_0000_1000L, 65536, 0x1234, EnumSet.of(Access.REMOTE_WRITE));
    private static final RemoteBuffer B = new RemoteBuffer(0x7f00_0002_0000L, 4096, 0x99,
            EnumSet.of(Access.REMOTE_READ, Access.REMOTE_ATOMIC));

    @Test
    void buffersAndDataComeBackAsSent() {
        Handshake sent = Handshake.of(new byte[]{7, 8}, A, B);
        byte[] wire = sent.encode(Handshake.MAX_CONNECT_BYTES, "a connection request");
        assertEquals(4 + 2 * RemoteBuffer.BYTES + 2, wire.length);
        byte[] padded = java.util.Arrays.copyOf(wire, Handshake.MAX_CONNECT_BYTES); // the transport pads
        Handshake got = Handshake.decode(padded);
        assertEquals(List.of(A, B), got.buffers());
        assertEquals(EnumSet.of(Access.REMOTE_READ, Access.REMOTE_ATOMIC), got.buffers().get(1).rights());
        assertArrayEquals(new byte[]{7, 8}, got.data());
    }

    @Test
    void tooMuchForTheRequestIsRefusedNamingTheRoom() {
        Handshake three = Handshake.offering(A, B, A);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> three.encode(Handshake.MAX_CONNECT_BYTES, "a connection request"));
        assertTrue(e.getMessage().contains("at most 56"), e.getMessage());
        assertEquals(4 + 3 * RemoteBuffer.BYTES, three.encode(Handshake.MAX_ACCEPT_BYTES, "the reply").length);
        // connect refuses it before it makes anything (no device needed to see it)
        IllegalArgumentException early = assertThrows(IllegalArgumentException.class, () -> Connection.connect(null,
                "192.0.2.1", 1, Connection.Options.defaults().offer(three)));
        assertTrue(early.getMessage().contains("a connection request carries at most 56"), early.getMessage());
    }

    @Test
    void aHandshakeNoPrivateDataHoldsIsRefusedWhenMade() {
        RemoteBuffer[] eight = new RemoteBuffer[8];
        java.util.Arrays.fill(eight, A);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Handshake.offering(eight));
        assertTrue(e.getMessage().contains("8 buffers") && e.getMessage().contains("at most 196"), e.getMessage());
        assertEquals(4 + 7 * RemoteBuffer.BYTES, Handshake.offering(java.util.Arrays.copyOf(eight, 7)).encodedBytes());
        assertThrows(IllegalArgumentException.class, () -> Handshake.of(new byte[200]));
        byte[] foreign = new byte[Handshake.MAX_ACCEPT_BYTES]; // a foreign peer's full reply stays readable
        foreign[0] = 1;
        assertEquals(Handshake.MAX_ACCEPT_BYTES, Handshake.decode(foreign).data().length);
    }

    @Test
    void nothingToSaySendsNothingAndAForeignPeersBytesStayData() {
        assertNull(Handshake.empty().encode(Handshake.MAX_CONNECT_BYTES, "a connection request"));
        assertTrue(Handshake.decode(new byte[56]).buffers().isEmpty());
        byte[] foreign = {1, 2, 3, 4, 5};
        assertArrayEquals(foreign, Handshake.decode(foreign).data());
    }

    @Test
    void remoteBufferBytesCarryTheRights() {
        RemoteBuffer back = RemoteBuffer.fromBytes(B.toBytes());
        assertEquals(B, back);
        assertEquals(EnumSet.allOf(Access.class), new RemoteBuffer(1, 1, 1).rights(), "unknown rights: every right");
    }
}
