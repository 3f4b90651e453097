package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.Errno;
import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.VerbsException;
import io.jverbs.ibverbs.raw.ibv_comp_channel;
import io.jverbs.ibverbs.raw.ibv_cq;
import io.jverbs.ibverbs.raw.ibv_mr;
import io.jverbs.ibverbs.raw.ibv_qp;
import io.jverbs.ibverbs.raw.ibv_qp_attr;
import io.jverbs.ibverbs.raw.verbs_h;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Protection domain, memory registration, CQ, completion channel and QP lifecycles, good and bad. */
@DeviceTest
class ResourceLifecycleTest {
    private static DeviceContext dev;

    @BeforeAll
    static void open(TestDevice device) {
        dev = DeviceContext.open(device);
    }

    @AfterAll
    static void close() {
        Cleanup.closeInOrder(dev);
    }

    @Test
    void registeredMemoryReportsItsAddressLengthAndKeys() {
        try (Arena arena = Arena.ofConfined(); Cleanup cleanup = new Cleanup()) {
            long bytes = 8192;
            Mr a = Resources.registerMemory(cleanup, arena, dev.pd(), bytes, Resources.FULL_ACCESS);
            Mr b = Resources.registerMemory(cleanup, arena, dev.pd(), 4096, verbs_h.IBV_ACCESS_LOCAL_WRITE);
            assertEquals(a.buffer().address(), ibv_mr.addr(a.mr()).address(), "mr->addr is the buffer (iova = address)");
            assertEquals(bytes, ibv_mr.length(a.mr()), "mr->length");
            assertEquals(dev.pd().address(), ibv_mr.pd(a.mr()).address(), "mr->pd");
            assertEquals(dev.context().address(), ibv_mr.context(a.mr()).address(), "mr->context");
            assertNotEquals(a.lkey(), b.lkey(), "distinct lkeys");
            assertNotEquals(a.rkey(), b.rkey(), "distinct rkeys");
        }
    }

    @Test
    void remoteWriteWithoutLocalWriteIsRefusedWithEinval() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(4096, 4096);
            MemorySegment mr = InlineVerbs.ibv_reg_mr(dev.pd(), buffer, 4096, verbs_h.IBV_ACCESS_REMOTE_WRITE);
            int errno = Native.lastErrno();
            if (mr.address() != 0) {
                verbs_h.ibv_dereg_mr(mr);
            }
            assertEquals(0, mr.address(), "ibv_reg_mr(REMOTE_WRITE without LOCAL_WRITE) must fail");
            assertEquals(Errno.EINVAL, errno, "errno " + Errno.name(errno));
            VerbsException e = VerbsException.of("ibv_reg_mr", errno);
            assertEquals("ibv_reg_mr failed: EINVAL (22)", e.getMessage());
        }
    }

    @Test
    void cqOnACompletionChannelCanBeResized() {
        try (Cleanup cleanup = new Cleanup()) {
            MemorySegment channel = Resources.compChannel(cleanup, dev.context());
            assertTrue(ibv_comp_channel.fd(channel) >= 0, "channel fd");
            assertEquals(dev.context().address(), ibv_comp_channel.context(channel).address(), "channel->context");
            MemorySegment cq = Resources.cq(cleanup, dev.context(), 16, channel);
            assertTrue(ibv_cq.cqe(cq) >= 16, "cq->cqe " + ibv_cq.cqe(cq));
            assertEquals(channel.address(), ibv_cq.channel(cq).address(), "cq->channel");
            assertEquals(dev.context().address(), ibv_cq.context(cq).address(), "cq->context");
            Checks.ok("ibv_resize_cq", verbs_h.ibv_resize_cq(cq, 64));
            assertTrue(ibv_cq.cqe(cq) >= 64, "cq->cqe after resize " + ibv_cq.cqe(cq));
            Completions.assertEmpty(cq, "a new CQ");
        }
    }

    @Test
    void modifyQpWithBadAttributesThrowsEinvalAndLeavesTheQpUsable() {
        try (Cleanup cleanup = new Cleanup()) {
            MemorySegment cq = Resources.cq(cleanup, dev.context(), 8, MemorySegment.NULL);
            MemorySegment qp = Resources.qp(cleanup, dev.pd(), verbs_h.IBV_QPT_RC, cq, cq, 4);
            assertEquals(verbs_h.IBV_QPS_RESET, QueuePairs.state(qp), "a new QP is in RESET");
            assertEquals(verbs_h.IBV_QPT_RC, ibv_qp.qp_type(qp), "qp->qp_type");

            // RESET -> RTS skips INIT and RTR: not a legal transition.
            VerbsException skip = assertThrows(VerbsException.class, () -> QueuePairs.rcToRts(qp, 0));
            assertEquals("ibv_modify_qp", skip.verb());
            assertEquals(Errno.EINVAL, skip.errno(), skip.getMessage());
            assertTrue(skip.getMessage().startsWith("ibv_modify_qp failed: EINVAL (22)"), skip.getMessage());

            // RESET -> INIT on a port the device does not have.
            VerbsException port = assertThrows(VerbsException.class, () -> QueuePairs.rcToInit(qp, 99, RcPair.QP_ACCESS));
            assertEquals(Errno.EINVAL, port.errno(), port.getMessage());

            // RESET -> INIT without the attributes INIT requires (only IBV_QP_STATE in the mask).
            VerbsException mask = assertThrows(VerbsException.class,
                    () -> QueuePairs.modify(qp, attr -> ibv_qp_attr.qp_state(attr, verbs_h.IBV_QPS_INIT), verbs_h.IBV_QP_STATE));
            assertEquals(Errno.EINVAL, mask.errno(), mask.getMessage());

            assertEquals(verbs_h.IBV_QPS_RESET, QueuePairs.state(qp), "refused changes leave the QP in RESET");
            QueuePairs.rcToInit(qp, dev.port(), RcPair.QP_ACCESS);
            assertEquals(verbs_h.IBV_QPS_INIT, QueuePairs.state(qp), "a correct change still works");
        }
    }

    @Test
    void destroyingACqStillUsedByAQpFailsWithEbusy() {
        MemorySegment cq = Checks.nonNull("ibv_create_cq",
                verbs_h.ibv_create_cq(dev.context(), 8, MemorySegment.NULL, MemorySegment.NULL, 0), ibv_cq.sizeof());
        boolean cqAlive = true;
        try {
            try (Cleanup qpCleanup = new Cleanup()) {
                Resources.qp(qpCleanup, dev.pd(), verbs_h.IBV_QPT_RC, cq, cq, 4);
                int rc = verbs_h.ibv_destroy_cq(cq);
                cqAlive = rc != 0;
                assertEquals(Errno.EBUSY, rc, "ibv_destroy_cq with a live QP: " + Errno.name(rc));
            }
        } finally {
            if (cqAlive) {
                Checks.ok("ibv_destroy_cq", verbs_h.ibv_destroy_cq(cq));
            }
        }
    }
}
