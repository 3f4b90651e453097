package io.jverbs.cm;

import io.jverbs.ibverbs.Errno;
import io.jverbs.rdmacm.raw.rdma_cma_h;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The session layer's options and the reasons of {@link RdmaCmException}, without a device. */
class SessionOptionsTest {
    @Test
    void reasonsFollowTheEventAndTheErrno() {
        assertEquals(RdmaCmException.Reason.REFUSED,
                new RdmaCmException("x", rdma_cma_h.RDMA_CM_EVENT_REJECTED, 28).reason());
        assertEquals(RdmaCmException.Reason.UNREACHABLE,
                new RdmaCmException("x", rdma_cma_h.RDMA_CM_EVENT_UNREACHABLE, Errno.ETIMEDOUT).reason());
        assertEquals(RdmaCmException.Reason.TIMEOUT, new RdmaCmException("x", 0, Errno.ETIMEDOUT).reason());
        assertEquals(RdmaCmException.Reason.INTERRUPTED, new RdmaCmException("x", 0, Errno.EINTR).reason());
        assertEquals(RdmaCmException.Reason.NO_DEVICE, new RdmaCmException("x", 0, Errno.ENODEV).reason());
        assertEquals(RdmaCmException.Reason.OUT_OF_MEMORY, new RdmaCmException("x", 0, Errno.ENOMEM).reason());
        assertEquals(RdmaCmException.Reason.DISCONNECTED,
                new RdmaCmException("x", rdma_cma_h.RDMA_CM_EVENT_DISCONNECTED, 0).reason());
        assertEquals(RdmaCmException.Reason.OTHER, new RdmaCmException("x", 0, 0).reason());
        RdmaCmException given = new RdmaCmException("x", RdmaCmException.Reason.LIMIT, 0);
        assertEquals(RdmaCmException.Reason.LIMIT, given.reason());
        assertTrue(new RdmaCmException("x", RdmaCmException.Reason.REFUSED, 0).isRefusal());
    }

    @Test
    void sessionOptionsRefuseWhatCannotWork() {
        Session.Options d = Session.Options.defaults();
        assertEquals(16, d.ringSlots());
        assertEquals(1024, d.slotBytes());
        assertThrows(IllegalArgumentException.class, () -> d.ring(0, 1024));
        assertThrows(IllegalArgumentException.class, () -> d.ring(4097, 1024));
        assertThrows(IllegalArgumentException.class, () -> d.ring(16, 16));
        assertThrows(IllegalArgumentException.class, () -> d.depth(-1, 10));
        assertThrows(IllegalArgumentException.class, () -> d.depth(32, 1_000_001));
        assertEquals(16 + Session.RESERVE + 32 + 16 + Session.RESERVE, d.completionEntries());
    }

    @Test
    void loopOptionsRefuseWhatCannotWork() {
        EventLoop.Options d = EventLoop.Options.defaults();
        assertEquals(EventLoop.Idle.SLEEP, d.idle());
        assertThrows(IllegalArgumentException.class, () -> d.sessions(0, 1));
        assertThrows(IllegalArgumentException.class, () -> d.sessions(10, 11));
        assertThrows(IllegalArgumentException.class, () -> d.handshakes(10, 11, Duration.ofSeconds(1)));
        assertThrows(IllegalArgumentException.class, () -> d.handshakes(10, 5, Duration.ZERO));
        assertEquals(64, d.sessions(64, 8).maxSessions());
    }

    @Test
    void anOfferThatDoesNotLeaveRoomForTheSessionParametersIsRefused() {
        byte[] almost = new byte[Handshake.MAX_CONNECT_BYTES - 4 - 4]; // fits a Handshake, not a session's
        Session.Options o = Session.Options.defaults().offer(Handshake.of(almost));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EventLoop.encodeOffer(o, Handshake.MAX_CONNECT_BYTES, "a connection request"));
        assertTrue(e.getMessage().contains("8 of those bytes"), e.getMessage());
    }
}
