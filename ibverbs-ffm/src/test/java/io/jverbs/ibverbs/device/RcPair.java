package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.MemorySegment;

/**
 * Two RC queue pairs in one process, connected to each other through the device's own RoCE v2
 * GID (path MTU = the port's active MTU, {@code is_global = 1}, source and destination GID the
 * same local GID), each with its own CQ; both CQs report to one completion channel (events only
 * once a test arms a CQ). Built on a {@link DeviceContext}, whose PD it uses; {@link #close()}
 * destroys the QPs, then the CQs, then the channel, and leaves the device context open.
 */
public final class RcPair implements AutoCloseable {
    /** Depth of each send and receive queue (the tests post a few requests at a time). */
    public static final int QUEUE_DEPTH = 16;
    /** Remote rights each QP grants: write, read and atomics. */
    public static final int QP_ACCESS = verbs_h.IBV_ACCESS_REMOTE_WRITE | verbs_h.IBV_ACCESS_REMOTE_READ
            | verbs_h.IBV_ACCESS_REMOTE_ATOMIC;

    /**
     * One end of the pair.
     *
     * @param cq  {@code struct ibv_cq *}, its send and receive CQ
     * @param qp  {@code struct ibv_qp *}
     * @param qpn its QP number
     */
    public record Side(MemorySegment cq, MemorySegment qp, int qpn) {
    }

    private final Cleanup cleanup = new Cleanup();
    private final MemorySegment channel;
    private final Side a;
    private final Side b;

    private RcPair(DeviceContext dev) {
        try {
            channel = Resources.compChannel(cleanup, dev.context());
            MemorySegment cqA = Resources.cq(cleanup, dev.context(), 2 * QUEUE_DEPTH, channel);
            MemorySegment cqB = Resources.cq(cleanup, dev.context(), 2 * QUEUE_DEPTH, channel);
            MemorySegment qpA = Resources.qp(cleanup, dev.pd(), verbs_h.IBV_QPT_RC, cqA, cqA, QUEUE_DEPTH);
            MemorySegment qpB = Resources.qp(cleanup, dev.pd(), verbs_h.IBV_QPT_RC, cqB, cqB, QUEUE_DEPTH);
            a = new Side(cqA, qpA, QueuePairs.qpn(qpA));
            b = new Side(cqB, qpB, QueuePairs.qpn(qpB));
            connect(dev, a, b, 0x1000, 0x2000);
            connect(dev, b, a, 0x2000, 0x1000);
        } catch (RuntimeException | Error e) {
            try {
                cleanup.close();
            } catch (RuntimeException | Error suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** Creates and connects the pair (both QPs end in RTS). */
    public static RcPair connect(DeviceContext dev) {
        return new RcPair(dev);
    }

    private static void connect(DeviceContext dev, Side local, Side remote, int localPsn, int remotePsn) {
        QueuePairs.rcToInit(local.qp(), dev.port(), QP_ACCESS);
        QueuePairs.rcToRtr(local.qp(), dev.port(), dev.activeMtu(), remote.qpn(), remotePsn, dev.gid(), dev.gidIndex());
        QueuePairs.rcToRts(local.qp(), localPsn);
    }

    /** @return the requester side of the tests */
    public Side a() {
        return a;
    }

    /** @return the responder side of the tests */
    public Side b() {
        return b;
    }

    /** @return {@code struct ibv_comp_channel *} both CQs report to */
    public MemorySegment channel() {
        return channel;
    }

    @Override
    public void close() {
        cleanup.close();
    }
}
