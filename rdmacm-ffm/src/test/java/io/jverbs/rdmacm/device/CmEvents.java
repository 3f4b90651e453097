package io.jverbs.rdmacm.device;

import io.jverbs.ibverbs.device.Checks;
import io.jverbs.ibverbs.device.Posix;
import io.jverbs.rdmacm.raw.rdma_cm_event;
import io.jverbs.rdmacm.raw.rdma_cma_h;
import io.jverbs.rdmacm.raw.rdma_conn_param;
import io.jverbs.rdmacm.raw.rdma_event_channel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/** Bounded reads of an rdma_cm event channel: poll its fd, then {@code rdma_get_cm_event}, copy, ack. */
final class CmEvents {
    /** How long connection set-up steps may take under QEMU TCG. */
    static final Duration TIMEOUT = Duration.ofSeconds(30);

    private CmEvents() {
    }

    /**
     * A copy of one {@code struct rdma_cm_event}, taken before it was acknowledged.
     *
     * @param type        {@code RDMA_CM_EVENT_*}
     * @param status      {@code status}
     * @param id          {@code struct rdma_cm_id *} the event is for (for CONNECT_REQUEST: the new id)
     * @param listenId    {@code listen_id}
     * @param privateData the connection parameters' private data (empty when none)
     * @param waitedMs    how long the event took to arrive
     */
    record CmEvent(int type, int status, MemorySegment id, MemorySegment listenId, byte[] privateData, long waitedMs) {
        String name() {
            return CmEvents.name(type);
        }
    }

    /** @return the event's name as librdmacm spells it, without the {@code RDMA_CM_EVENT_} prefix */
    static String name(int type) {
        return rdma_cma_h.rdma_event_str(type).reinterpret(64).getString(0).replace("RDMA_CM_EVENT_", "");
    }

    /** Takes the next event of {@code channel}, failing when none arrives within {@link #TIMEOUT}. */
    static CmEvent next(MemorySegment channel, String side) {
        int fd = rdma_event_channel.fd(channel);
        long start = System.nanoTime();
        if (!Posix.awaitReadable(fd, TIMEOUT)) {
            fail(side + ": no rdma_cm event within " + TIMEOUT.toSeconds() + " s");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            Checks.ok("rdma_get_cm_event", rdma_cma_h.rdma_get_cm_event(channel, out));
            MemorySegment event = out.get(ADDRESS, 0).reinterpret(rdma_cm_event.sizeof());
            int type = rdma_cm_event.event(event);
            byte[] privateData = new byte[0];
            if (type == rdma_cma_h.RDMA_CM_EVENT_CONNECT_REQUEST || type == rdma_cma_h.RDMA_CM_EVENT_ESTABLISHED
                    || type == rdma_cma_h.RDMA_CM_EVENT_REJECTED) {
                // Only connection events fill param.conn.
                MemorySegment conn = rdma_cm_event.param.conn(rdma_cm_event.param(event));
                int length = Byte.toUnsignedInt(rdma_conn_param.private_data_len(conn));
                MemorySegment data = rdma_conn_param.private_data(conn);
                if (data.address() != 0 && length > 0) {
                    privateData = data.reinterpret(length).toArray(JAVA_BYTE);
                }
            }
            CmEvent copy = new CmEvent(type, rdma_cm_event.status(event), rdma_cm_event.id(event),
                    rdma_cm_event.listen_id(event), privateData, (System.nanoTime() - start) / 1_000_000);
            Checks.ok("rdma_ack_cm_event", rdma_cma_h.rdma_ack_cm_event(event));
            return copy;
        }
    }

    /** Takes the next event and checks its type (and a zero status). */
    static CmEvent expect(MemorySegment channel, String side, int type) {
        CmEvent event = next(channel, side);
        assertEquals(name(type), event.name(), side + ": event (status " + event.status() + ")");
        assertEquals(0, event.status(), side + ": status of " + event.name());
        return event;
    }
}
