package io.jverbs.device;

import io.jverbs.Access;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.ibverbs.device.DeviceTestExtension;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A region over 4 GiB (DiSNI's users could not register one): a caller's own native segment of
 * 4 GiB + 1 MiB registered on the server side, then an RDMA Write and an RDMA Read at an offset
 * past 2^32 — the remote address and the bytes must both come out right.
 *
 * <p>Tagged {@value #TAG}, not {@code rdma}: it needs a guest with more than 4 GiB of memory and a
 * kernel whose rxe can register it. Linux 6.12.114 and later (the rig's default 6.12.117) give rxe
 * one {@code kcalloc}'d page array per region, 16 bytes per 4 KiB page, which the page allocator
 * caps at 4 MiB: 1 GiB per region at most, and ENOMEM above. {@code scripts/test} runs this class
 * on its own rig boot of Linux 6.1 with 6 GiB.
 */
@Tag(LargeRegionTest.TAG)
@Execution(ExecutionMode.SAME_THREAD)
@ExtendWith(DeviceTestExtension.class)
class LargeRegionTest {
    /** The JUnit tag of this class: {@code scripts/ci/device-tests --tag rdma-large} runs it. */
    static final String TAG = "rdma-large";
    private static final long BIG = (4L << 30) + (1L << 20);
    private static final long FAR = (4L << 30) + 4096 + 8; // past 2^32, not page-aligned

    @Test
    void writeAndReadPastFourGibibytes(TestDevice device) throws Exception {
        try (Loopback lb = new Loopback(device, 4096); Arena arena = Arena.ofShared()) {
            long start = System.nanoTime();
            MemorySegment memory = arena.allocate(BIG, 4096);
            try (RegisteredBuffer big = lb.server.pd.register(memory, Access.REMOTE_WRITE, Access.REMOTE_READ)) {
                long registeredMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                assertEquals(BIG, big.length());
                RemoteBuffer remote = big.remote();
                for (int i = 0; i < 8; i++) {
                    lb.client.buffer.segment().set(ValueLayout.JAVA_LONG, i * 8L, 0xB16_0000L + i);
                }
                lb.client.startPoller();
                lb.client.qp.async().write(lb.client.buffer, 0, 64, remote, FAR).get(60, TimeUnit.SECONDS);
                for (int i = 0; i < 8; i++) {
                    assertEquals(0xB16_0000L + i, memory.get(ValueLayout.JAVA_LONG, FAR + i * 8L),
                            "the write landed past 4 GiB, word " + i);
                }
                memory.set(ValueLayout.JAVA_LONG, FAR + 64, 0x5EAD_5EADL);
                lb.client.qp.async().read(lb.client.buffer, 1024, 8, remote, FAR + 64).get(60, TimeUnit.SECONDS);
                assertEquals(0x5EAD_5EADL, lb.client.buffer.segment().get(ValueLayout.JAVA_LONG, 1024),
                        "the read came from past 4 GiB");
                System.out.println("[device " + device.name() + "] large region: " + BIG + " bytes registered in "
                        + registeredMs + " ms; write and read at offset " + FAR + " correct");
            }
        }
    }
}
