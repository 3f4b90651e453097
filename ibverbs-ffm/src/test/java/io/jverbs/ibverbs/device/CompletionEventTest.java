package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.raw.ibv_comp_channel;
import io.jverbs.ibverbs.raw.verbs_h;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Event-driven completion: arm the CQ ({@code ibv_req_notify_cq}), wait on the channel's fd with
 * a bound ({@code poll}), take the event ({@code ibv_get_cq_event}), acknowledge it
 * ({@code ibv_ack_cq_events}), then poll the CQ.
 */
@DeviceTest
class CompletionEventTest {
    private static DeviceContext dev;
    private static RcPair pair;
    private static Mr buffer;

    @BeforeAll
    static void connect(TestDevice device) {
        dev = DeviceContext.open(device);
        buffer = dev.registerMemory(4096, Resources.FULL_ACCESS);
        pair = RcPair.connect(dev);
    }

    @AfterAll
    static void close() {
        Cleanup.closeInOrder(pair, dev);
    }

    @Test
    void armedCqRaisesOneEventForACompletion() {
        int fd = ibv_comp_channel.fd(pair.channel());
        Checks.ok("ibv_req_notify_cq", InlineVerbs.ibv_req_notify_cq(pair.a().cq(), 0));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment wr = WorkRequests.send(arena, 81, verbs_h.IBV_WR_RDMA_WRITE, buffer, 0, 32);
            WorkRequests.postSend(pair.a().qp(), WorkRequests.rdma(wr, buffer.address(2048), buffer.rkey()));

            assertTrue(Posix.awaitReadable(fd, Completions.TIMEOUT),
                    "no completion event on the channel within " + Completions.TIMEOUT.toSeconds() + " s");
            MemorySegment cqOut = arena.allocate(ADDRESS);
            MemorySegment contextOut = arena.allocate(ADDRESS);
            Checks.ok("ibv_get_cq_event", verbs_h.ibv_get_cq_event(pair.channel(), cqOut, contextOut));
            assertEquals(pair.a().cq().address(), cqOut.get(ADDRESS, 0).address(), "the event names the armed CQ");
            assertEquals(0, contextOut.get(ADDRESS, 0).address(), "cq_context as given to ibv_create_cq (NULL)");
            verbs_h.ibv_ack_cq_events(pair.a().cq(), 1);
        }
        Completions.awaitSuccess(pair.a().cq(), "the completion behind the event", verbs_h.IBV_WC_RDMA_WRITE, 81);
        assertFalse(Posix.awaitReadable(fd, Duration.ofMillis(300)), "one event per arming: no second event");
    }

    @Test
    void noEventWithoutACompletionAndNoneForAnUnarmedCq() {
        int fd = ibv_comp_channel.fd(pair.channel());
        // Armed but idle: nothing to report.
        Checks.ok("ibv_req_notify_cq", InlineVerbs.ibv_req_notify_cq(pair.b().cq(), 0));
        assertFalse(Posix.awaitReadable(fd, Duration.ofMillis(500)), "event without a completion");

        // A completion on A's CQ, which nobody armed this time: it is pollable but raises no event.
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment wr = WorkRequests.send(arena, 82, verbs_h.IBV_WR_RDMA_WRITE, buffer, 0, 16);
            WorkRequests.postSend(pair.a().qp(), WorkRequests.rdma(wr, buffer.address(1024), buffer.rkey()));
        }
        Completions.awaitSuccess(pair.a().cq(), "write on the unarmed CQ", verbs_h.IBV_WC_RDMA_WRITE, 82);
        assertFalse(Posix.awaitReadable(fd, Duration.ofMillis(300)), "event from an unarmed CQ");
    }
}
