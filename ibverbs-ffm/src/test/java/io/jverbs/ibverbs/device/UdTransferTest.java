package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.raw.verbs_h;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.util.Arrays;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Unreliable datagrams through an address handle on the RoCE v2 GID. */
@DeviceTest
class UdTransferTest {
    /** A UD receive buffer starts with room for the 40-byte global routing header. */
    private static final int GRH = 40;
    private static final int QKEY = 0x11111111;

    @Test
    void datagramArrivesBehindTheGrhSpace(TestDevice device) throws Exception {
        try (DeviceContext dev = DeviceContext.open(device); Cleanup cleanup = new Cleanup()) {
            MemorySegment cqA = Resources.cq(cleanup, dev.context(), 8, MemorySegment.NULL);
            MemorySegment cqB = Resources.cq(cleanup, dev.context(), 8, MemorySegment.NULL);
            MemorySegment qpA = Resources.qp(cleanup, dev.pd(), verbs_h.IBV_QPT_UD, cqA, cqA, 4);
            MemorySegment qpB = Resources.qp(cleanup, dev.pd(), verbs_h.IBV_QPT_UD, cqB, cqB, 4);
            QueuePairs.udToRts(qpA, dev.port(), QKEY, 0x100);
            QueuePairs.udToRts(qpB, dev.port(), QKEY, 0x200);
            assertEquals(verbs_h.IBV_QPS_RTS, QueuePairs.state(qpA));
            MemorySegment ah = Resources.ah(cleanup, dev.pd(), dev.port(), dev.gid(), dev.gidIndex());

            Mr send = dev.registerMemory(4096, verbs_h.IBV_ACCESS_LOCAL_WRITE);
            Mr recv = dev.registerMemory(4096, verbs_h.IBV_ACCESS_LOCAL_WRITE);
            byte[] data = RcTransferTest.pattern(256, 9);
            MemorySegment.copy(data, 0, send.buffer(), JAVA_BYTE, 0, data.length);
            WorkRequests.postRecv(qpB, 71, recv, 0, GRH + 512);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment wr = WorkRequests.send(arena, 72, verbs_h.IBV_WR_SEND, send, 0, data.length);
                WorkRequests.postSend(qpA, WorkRequests.ud(wr, ah, QueuePairs.qpn(qpB), QKEY));
            }
            Completions.awaitSuccess(cqA, "UD send", verbs_h.IBV_WC_SEND, 72);
            Completion wc = Completions.awaitSuccess(cqB, "UD receive", verbs_h.IBV_WC_RECV, 71);
            assertEquals(GRH + data.length, wc.byteLen(), "byte_len includes the GRH");
            assertTrue((wc.wcFlags() & verbs_h.IBV_WC_GRH) != 0, "IBV_WC_GRH set: " + wc);
            assertEquals(QueuePairs.qpn(qpA), wc.srcQp(), "src_qp is the sender's QPN");
            assertArrayEquals(data, RcTransferTest.bytes(recv, GRH, data.length), "payload behind the GRH");
            // RoCE v2 over IPv4: the last 20 bytes of the GRH space hold the IPv4 header; its source is us.
            byte[] grh = RcTransferTest.bytes(recv, 0, GRH);
            assertEquals(0x45, grh[20] & 0xff, "IPv4 header version/IHL at GRH offset 20: " + Arrays.toString(grh));
            byte[] ip = Arrays.copyOfRange(dev.gid(), 12, 16);
            assertArrayEquals(ip, Arrays.copyOfRange(grh, 32, 36), "IPv4 source = " + InetAddress.getByAddress(ip));
            assertArrayEquals(ip, Arrays.copyOfRange(grh, 36, 40), "IPv4 destination");
        }
    }
}
