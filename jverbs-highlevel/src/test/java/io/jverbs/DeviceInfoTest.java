package io.jverbs;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** A device's netdevice, read from a fake sysfs port whose ndevs/ has unused entries; the no-device reason. */
class DeviceInfoTest {
    private static final String UNUSED = "0000:0000:0000:0000:0000:0000:0000:0000";

    /** Writes GID entry {@code index}; a null type or netdevice is unreadable, as the kernel's EINVAL. */
    private static void gid(Path port, int index, String gid, String type, String ndev) throws IOException {
        String i = Integer.toString(index);
        Files.createDirectories(port.resolve("gids"));
        Files.writeString(port.resolve("gids").resolve(i), gid + "\n");
        Path types = Files.createDirectories(port.resolve("gid_attrs/types"));
        Path ndevs = Files.createDirectories(port.resolve("gid_attrs/ndevs"));
        if (type != null) {
            Files.writeString(types.resolve(i), type + "\n");
        } else {
            Files.createDirectory(types.resolve(i)); // reading a directory fails, as EINVAL does
        }
        if (ndev != null) {
            Files.writeString(ndevs.resolve(i), ndev + "\n");
        } else {
            Files.createDirectory(ndevs.resolve(i));
        }
    }

    private static Path device(Path root, String name) throws IOException {
        Path dir = Files.createDirectories(root.resolve(name).resolve("ports/1"));
        Files.writeString(root.resolve(name).resolve("node_guid"), "5054:00ff:fe12:3456\n");
        for (int i = 2; i < 40; i++) {
            gid(dir, i, UNUSED, null, null);
        }
        return dir;
    }

    @Test
    void theInterfaceUnderTheIpv4MappedRoceV2Gid(@TempDir Path root) throws IOException {
        Path port = device(root, "rxe0");
        gid(port, 0, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "RoCE v2", "eth0");
        gid(port, 1, "0000:0000:0000:0000:0000:ffff:0a00:020f", "RoCE v2", "eth1");
        Rdma.DeviceInfo info = Rdma.DeviceInfo.read(root, "rxe0");
        assertEquals("eth1", info.netdevice(), "the GID a queue pair uses, not whichever entry is listed first");
        assertEquals("5054:00ff:fe12:3456", info.nodeGuid());
    }

    @Test
    void theFirstRoceV2GidWithoutAnIpv4Address(@TempDir Path root) throws IOException {
        Path port = device(root, "rxe0");
        gid(port, 0, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "IB/RoCE v1", "eth0");
        gid(port, 1, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "RoCE v2", "eth2");
        assertEquals("eth2", Rdma.DeviceInfo.read(root, "rxe0").netdevice());
    }

    @Test
    void noneOnInfiniBand(@TempDir Path root) throws IOException {
        Path port = device(root, "mlx5_0");
        gid(port, 0, "fe80:0000:0000:0000:0002:c903:0049:7a41", "IB/RoCE v1", null);
        gid(port, 1, "fe80:0000:0000:0000:0002:c903:0049:7a42", "IB/RoCE v1", null);
        assertEquals("", Rdma.DeviceInfo.read(root, "mlx5_0").netdevice());
        assertEquals("", Rdma.DeviceInfo.read(root, "no_such_device").netdevice());
    }

    @Test
    void withoutKernelSupportTheReasonSaysWhatToInstall() {
        Rdma.DeviceList list = Rdma.devices();
        assumeTrue(list.reason() != null && list.reason().contains("ENOSYS"), "this kernel has RDMA support");
        String reason = list.reason();
        assertTrue(reason.contains("rdma-core") && reason.contains("ibverbs-providers"), reason);
        assertTrue(reason.contains("modprobe rdma_rxe; rdma link add rxe0 type rxe netdev IFACE"), reason);
        assertTrue(reason.contains("soft-roce-ci in the jverbs repository"), reason);
        assertFalse(reason.contains("soft-roce-ci/"), "no path into a checkout: " + reason);
    }
}
