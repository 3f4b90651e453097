package io.jverbs.cm;

import io.jverbs.QueuePair;
import io.jverbs.ibverbs.raw.verbs_h;
import io.jverbs.rdmacm.raw.rdma_cma_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

/**
 * A hostile rdma_cm client for tests: it connects as {@link RdmaCm#connect} does — resolves,
 * sends the request, takes the listener's reply and moves its queue pair to RTS — but never sends
 * the final step ({@code rdma_establish}, the RTU), as a client that crashed at that moment would.
 * Its queue pair is then usable on this side, so a test can try to write into the listener.
 */
public final class HalfOpenCmClient implements AutoCloseable {
    private final RdmaCm.Channel channel;
    private final MemorySegment id;
    private final Handshake reply;

    private HalfOpenCmClient(RdmaCm.Channel channel, MemorySegment id, Handshake reply) {
        this.channel = channel;
        this.id = id;
        this.reply = reply;
    }

    /**
     * Returns what the listener said in its reply.
     *
     * @return its handshake (the buffers it offered or granted)
     */
    public Handshake reply() {
        return reply;
    }

    /**
     * Connects {@code qp} to the listener at {@code host:port} without completing the handshake.
     *
     * @param qp      a prepared queue pair
     * @param host    the listener's address
     * @param port    its port
     * @param timeout the most the request and its answer may take
     * @return the half-open connection; {@code qp} is CONNECTED on this side
     */
    public static HalfOpenCmClient connect(QueuePair qp, String host, int port, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        RdmaCm.Channel channel = RdmaCm.Channel.create();
        MemorySegment id = MemorySegment.NULL;
        try (Arena arena = Arena.ofConfined()) {
            id = channel.createId();
            RdmaCm.resolveRoute(channel, id, arena, host, port, deadline, Core.contextName(qp.config().sendQueue()));
            RdmaCm.moveTo(id, qp, verbs_h.IBV_QPS_INIT);
            RdmaCm.check("rdma_connect", rdma_cma_h.rdma_connect(id, RdmaCm.connParam(arena, qp)));
            RdmaCm.Channel.Event answer = channel.expect(rdma_cma_h.RDMA_CM_EVENT_CONNECT_RESPONSE, deadline,
                    host + ":" + port);
            RdmaCm.moveTo(id, qp, verbs_h.IBV_QPS_RTR);
            RdmaCm.moveTo(id, qp, verbs_h.IBV_QPS_RTS);
            Core.markConnected(qp); // and no rdma_establish: the listener never hears the last step
            return new HalfOpenCmClient(channel, id, Handshake.decode(answer.privateData()));
        } catch (RuntimeException e) {
            RdmaCm.reap(id, channel);
            throw e;
        }
    }

    @Override
    public void close() {
        RdmaCm.reap(id, channel);
    }
}
