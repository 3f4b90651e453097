package io.jverbs;

import io.jverbs.ibverbs.Errno;
import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Where a service starts: the RDMA devices of this machine, and opening one.
 *
 * <pre>{@code
 * try (Context ctx = Rdma.open("rxe0");
 *      ProtectionDomain pd = ctx.allocateProtectionDomain()) { ... }
 * }</pre>
 *
 * <p>All methods are thread-safe.
 */
public final class Rdma {
    private Rdma() {
    }

    /**
     * Lists the RDMA devices rdma-core sees. Never throws for "no devices": the list is empty and
     * {@link DeviceList#reason()} says why (no kernel RDMA support, no device created, rdma-core
     * missing).
     *
     * @return the devices, or an empty list with the reason
     */
    public static DeviceList devices() {
        List<String> names = new ArrayList<>();
        boolean listed;
        try {
            listed = forEachDevice((name, device) -> {
                names.add(name);
                return false;
            });
        } catch (UnsatisfiedLinkError | RuntimeException e) {
            return new DeviceList(List.of(), "rdma-core cannot be used: " + e.getMessage());
        }
        if (!listed) {
            int errno = Native.lastErrno();
            return new DeviceList(List.of(), errno == Errno.ENOSYS
                    ? "this kernel has no RDMA support (ibv_get_device_list: ENOSYS): install rdma-core with a"
                      + " provider (Debian/Ubuntu: rdma-core ibverbs-providers) and, for Soft-RoCE, enable it:"
                      + " modprobe rdma_rxe; rdma link add rxe0 type rxe netdev IFACE. For a kernel without rdma_rxe,"
                      + " soft-roce-ci in the jverbs repository runs a command in a QEMU guest that has it"
                    : "ibv_get_device_list failed: " + Errno.name(errno) + " (" + errno + ")");
        }
        List<DeviceInfo> devices = new ArrayList<>();
        for (String name : names) {
            devices.add(DeviceInfo.read(name));
        }
        return new DeviceList(List.copyOf(devices), devices.isEmpty() ? noDeviceReason() : null);
    }

    /** Sees one entry of rdma-core's device list; returns true to stop the walk. */
    interface DeviceVisitor {
        boolean visit(String name, MemorySegment device);
    }

    /**
     * Walks {@code ibv_get_device_list} (freeing it afterwards) until the visitor says stop.
     *
     * @return false when the list could not be had (errno in {@link Native#lastErrno()})
     */
    static boolean forEachDevice(DeviceVisitor visitor) {
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment count = scratch.allocate(ValueLayout.JAVA_INT);
            MemorySegment list = verbs_h.ibv_get_device_list(count);
            if (list.address() == 0) {
                return false;
            }
            try {
                int n = count.get(ValueLayout.JAVA_INT, 0);
                MemorySegment array = list.reinterpret((long) n * ValueLayout.ADDRESS.byteSize());
                for (int i = 0; i < n; i++) {
                    MemorySegment device = array.getAtIndex(ValueLayout.ADDRESS, i);
                    if (visitor.visit(verbs_h.ibv_get_device_name(device).reinterpret(256).getString(0), device)) {
                        break;
                    }
                }
            } finally {
                verbs_h.ibv_free_device_list(list);
            }
            return true;
        }
    }

    /**
     * Opens a device by name.
     *
     * @param deviceName such as {@code "rxe0"} or {@code "mlx5_0"}
     * @return the opened device; close it to release everything made from it
     * @throws java.util.NoSuchElementException when no such device exists (the message lists the
     *                                          devices there are, or why there are none)
     * @throws io.jverbs.ibverbs.VerbsException when {@code ibv_open_device} fails
     */
    public static Context open(String deviceName) {
        return Context.open(deviceName);
    }

    private static String noDeviceReason() {
        if (!Files.isDirectory(Path.of("/sys/class/infiniband"))) {
            return "no RDMA device: the kernel has no InfiniBand/RDMA core loaded (modprobe rdma_rxe, then"
                   + " rdma link add rxe0 type rxe netdev <eth>)";
        }
        return "no RDMA device: create one (rdma link add rxe0 type rxe netdev <eth>) or load your NIC's driver";
    }

    /**
     * The devices of this machine.
     *
     * @param devices the devices, in rdma-core's order
     * @param reason  why the list is empty, or {@code null} when it is not
     */
    public record DeviceList(List<DeviceInfo> devices, String reason) {
        /**
         * Returns whether there is at least one device.
         *
         * @return true when the list is not empty
         */
        public boolean any() {
            return !devices.isEmpty();
        }
    }

    /**
     * One device, as sysfs describes it.
     *
     * @param name      the device name ({@code rxe0})
     * @param nodeGuid  the node GUID as sysfs prints it, or "" when unreadable
     * @param netdevice the Ethernet interface under a RoCE device, or "" (unknown or InfiniBand)
     */
    public record DeviceInfo(String name, String nodeGuid, String netdevice) {
        private static final String IPV4_MAPPED = "0000:0000:0000:0000:0000:ffff:";

        static DeviceInfo read(String name) {
            return read(Path.of("/sys/class/infiniband"), name);
        }

        /** Reads {@code root/name}; root is {@code /sys/class/infiniband} but for tests. */
        static DeviceInfo read(Path root, String name) {
            Path dir = root.resolve(name);
            return new DeviceInfo(name, readQuietly(dir.resolve("node_guid")), netdevice(dir.resolve("ports/1")));
        }

        /**
         * The interface under the GID a queue pair uses by default, chosen as {@link Context#chooseGid}
         * does (the first RoCE v2 entry mapping an IPv4 address, else the first RoCE v2 entry, else
         * index 0) and read by that index: {@code gid_attrs/ndevs/} lists its entries in no order, and
         * an unused entry reads as EINVAL.
         */
        private static String netdevice(Path port) {
            long entries;
            try (var gids = Files.list(port.resolve("gids"))) {
                entries = gids.count();
            } catch (java.io.IOException | RuntimeException e) {
                return "";
            }
            long firstV2 = -1;
            for (long i = 0; i < entries; i++) {
                String index = Long.toString(i);
                if (!readQuietly(port.resolve("gid_attrs/types").resolve(index)).equals("RoCE v2")) {
                    continue;
                }
                if (readQuietly(port.resolve("gids").resolve(index)).startsWith(IPV4_MAPPED)) {
                    return readQuietly(port.resolve("gid_attrs/ndevs").resolve(index));
                }
                if (firstV2 < 0) {
                    firstV2 = i;
                }
            }
            return readQuietly(port.resolve("gid_attrs/ndevs").resolve(Long.toString(Math.max(firstV2, 0))));
        }
    }

    static String readQuietly(Path file) {
        try {
            return Files.readString(file).trim();
        } catch (java.io.IOException | RuntimeException e) {
            return "";
        }
    }
}
