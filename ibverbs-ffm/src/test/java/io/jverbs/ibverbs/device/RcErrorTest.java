package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.raw.verbs_h;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** Errors on a connected RC pair end as completions and QP states, never as a crash or a hang. */
@DeviceTest
class RcErrorTest {

    @Test
    void writeWithAWrongRkeyCompletesWithRemoteAccessErrorAndTheQpGoesToError(TestDevice device) {
        try (DeviceContext dev = DeviceContext.open(device);
             RcPair pair = RcPair.connect(dev)) {
            Mr local = dev.registerMemory(4096, Resources.FULL_ACCESS);
            Mr remote = dev.registerMemory(4096, Resources.FULL_ACCESS);
            local.buffer().fill((byte) 0x5a);
            // The index part of an rkey (its upper 24 bits) names the MR; flip it to one nobody registered.
            int wrongRkey = remote.rkey() ^ 0x5a5a00;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment wr = WorkRequests.send(arena, 61, verbs_h.IBV_WR_RDMA_WRITE, local, 0, 64);
                WorkRequests.postSend(pair.a().qp(), WorkRequests.rdma(wr, remote.address(0), wrongRkey));
            }
            Completion wc = Completions.awaitOne(pair.a().cq(), "RDMA write with a wrong rkey");
            assertEquals(verbs_h.IBV_WC_REM_ACCESS_ERR, wc.status(), "status: " + wc);
            assertEquals(61, wc.wrId(), "wr_id");
            assertArrayEquals(new byte[64], RcTransferTest.bytes(remote, 0, 64), "remote memory untouched");
            assertEquals(verbs_h.IBV_QPS_ERR, QueuePairs.state(pair.a().qp()), "requester QP state after the error");

            // A request posted to the QP in error is flushed, not executed.
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment wr = WorkRequests.send(arena, 62, verbs_h.IBV_WR_RDMA_WRITE, local, 0, 64);
                WorkRequests.postSend(pair.a().qp(), WorkRequests.rdma(wr, remote.address(0), remote.rkey()));
            }
            Completion flushed = Completions.awaitOne(pair.a().cq(), "a write posted after the error");
            assertEquals(verbs_h.IBV_WC_WR_FLUSH_ERR, flushed.status(), "status: " + flushed);
            assertEquals(62, flushed.wrId(), "wr_id");
            assertArrayEquals(new byte[64], RcTransferTest.bytes(remote, 0, 64), "remote memory still untouched");
        }
    }
}
