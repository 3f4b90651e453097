package io.jverbs.device;

import io.jverbs.Access;
import io.jverbs.CompletionFailedException;
import io.jverbs.MemoryWindow;
import io.jverbs.QueuePair;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.ValueLayout;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Memory windows and slices on a real device: a window shares one range of a buffer that grants
 * no remote rights of its own, with its own rkey and rights, until it is invalidated; a peer's
 * request past the window's end is refused where the device checks a window's range (Soft-RoCE
 * checks the region's, which is stated in {@link MemoryWindow}). Also run on the Linux 6.1 boot ({@code rdma-large}), so both kernels'
 * rxe windows are exercised.
 */
@DeviceTest
@Tag(LargeRegionTest.TAG)
class MemoryWindowTest {
    private static final long T = 20;

    @Test
    void aWindowSharesOnlyItsRangeWithItsRightsUntilInvalidated(TestDevice device) throws Exception {
        try (Loopback lb = new Loopback(device, 4096)) {
            lb.server.startPoller();
            lb.client.startPoller();
            RegisteredBuffer region = lb.server.pd.allocate(8192); // no remote rights of its own
            MemoryWindow window = MemoryWindow.openAsync(lb.server.qp, region.slice(4096, 256), Access.REMOTE_WRITE,
                    Access.REMOTE_READ).get(T, TimeUnit.SECONDS);
            RemoteBuffer shared = window.remote();
            assertEquals(region.address() + 4096, shared.address(), "the window starts at its range");
            assertEquals(256, shared.length());
            assertNotEquals(region.rkey(), shared.rkey(), "the peer gets the window's rkey, not the region's");

            for (int i = 0; i < 256; i++) {
                lb.client.buffer.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 1));
            }
            lb.client.qp.async().write(lb.client.buffer.slice(0, 256), shared).get(T, TimeUnit.SECONDS);
            for (int i = 0; i < 256; i++) {
                assertEquals((byte) (i * 7 + 1), region.segment().get(ValueLayout.JAVA_BYTE, 4096 + i), "byte " + i);
            }
            assertEquals(0, region.segment().get(ValueLayout.JAVA_BYTE, 4095), "nothing before the range");
            assertEquals(0, region.segment().get(ValueLayout.JAVA_BYTE, 4096 + 256), "nothing after the range");
            lb.client.qp.async().read(lb.client.buffer.slice(1024, 64), shared.slice(64, 64)).get(T, TimeUnit.SECONDS);
            for (int i = 0; i < 64; i++) {
                assertEquals((byte) ((64 + i) * 7 + 1), lb.client.buffer.segment().get(ValueLayout.JAVA_BYTE, 1024 + i));
            }

            // refused before the device: a right the window does not grant, lengths that disagree
            IllegalArgumentException atomic = assertThrows(IllegalArgumentException.class,
                    () -> lb.client.qp.async().fetchAndAdd(lb.client.buffer.slice(2048, 8), shared.slice(0, 8), 1));
            assertThrows(IllegalArgumentException.class,
                    () -> lb.client.qp.async().write(lb.client.buffer.slice(0, 64), shared));
            assertEquals(QueuePair.State.CONNECTED, lb.client.qp.state(), "nothing reached the device");

            var invalidated = window.invalidateAsync();
            // a second invalidation, in flight or after, is refused before posting: Soft-RoCE on
            // Linux 6.12 panics the kernel on the invalidation of a revoked window
            IllegalStateException twice = assertThrows(IllegalStateException.class, window::invalidateAsync);
            assertTrue(twice.getMessage().contains("invalidated already"), twice.getMessage());
            invalidated.get(T, TimeUnit.SECONDS);
            assertFalse(window.isValid());
            assertThrows(IllegalStateException.class, window::remote);
            assertThrows(IllegalStateException.class, window::invalidateAsync, "after it completed as well");
            ExecutionException after = assertThrows(ExecutionException.class,
                    () -> lb.client.qp.async().write(lb.client.buffer.slice(0, 256), shared).get(T, TimeUnit.SECONDS));
            CompletionFailedException failed = assertInstanceOf(CompletionFailedException.class, after.getCause());
            assertEquals("REM_ACCESS_ERR", failed.statusName());
            System.out.println("memory window on " + device.name() + " (Linux " + System.getProperty("os.version")
                    + "): 256 B of an 8 KiB region with no rights of its own shared (rkey 0x"
                    + Integer.toHexString(shared.rkey()) + ", region 0x" + Integer.toHexString(region.rkey())
                    + "), written and read by the peer; an atomic refused before posting (" + atomic.getMessage()
                    + "); after invalidation the peer's write failed: " + failed.statusName());
        }
    }

    @Test
    void theDeviceEnforcesTheWindowsBoundsAndClosingTheBufferClosesIt(TestDevice device) throws Exception {
        try (Loopback lb = new Loopback(device, 4096)) {
            lb.server.startPoller();
            lb.client.startPoller();
            RegisteredBuffer region = lb.server.pd.allocate(8192);
            MemoryWindow window = MemoryWindow.openAsync(lb.server.qp, region, 4096, 256, Access.REMOTE_WRITE)
                    .get(T, TimeUnit.SECONDS);
            RemoteBuffer shared = window.remote();
            // a peer that claims more than the window: a device that checks the window's range refuses
            // it; rxe (Linux 6.1 and 6.12) checks the peer's range against the whole region instead
            RemoteBuffer wider = new RemoteBuffer(shared.address(), 512, shared.rkey(), shared.rights());
            String outcome;
            try {
                lb.client.qp.async().write(lb.client.buffer.slice(0, 512), wider).get(T, TimeUnit.SECONDS);
                assertTrue(java.nio.file.Files.exists(java.nio.file.Path.of("/sys/class/infiniband", device.name(),
                        "parent")), "only Soft-RoCE is known to let a write pass a window's end");
                outcome = "the device let it pass the window's end (Soft-RoCE checks the region's range)";
            } catch (ExecutionException past) {
                CompletionFailedException failed = assertInstanceOf(CompletionFailedException.class, past.getCause());
                assertEquals("REM_ACCESS_ERR", failed.statusName());
                assertEquals(0, region.segment().get(ValueLayout.JAVA_BYTE, 4096 + 256), "nothing landed past the window");
                outcome = "the device refused it (" + failed.statusName() + ")";
            }

            region.close();
            assertTrue(window.isClosed(), "closing the buffer closed its window first");
            System.out.println("memory window on " + device.name() + " (Linux " + System.getProperty("os.version")
                    + "): a 512-byte write through a 256-byte window: " + outcome + "; closing the buffer closed the window");
        }
    }
}
