package io.jverbs;

/**
 * What a successful asynchronous operation reports.
 *
 * @param opcode        the completion's {@code ibv_wc_opcode}
 * @param byteLength    bytes received (receives; RDMA Write with immediate)
 * @param immediateData the immediate data in host order, when {@code hasImmediate}
 * @param hasImmediate  whether immediate data came with a receive
 */
public record WorkResult(int opcode, int byteLength, int immediateData, boolean hasImmediate) {
}
