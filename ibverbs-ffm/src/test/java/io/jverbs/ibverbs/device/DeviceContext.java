package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.Errno;
import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.VerbsException;
import io.jverbs.ibverbs.raw.ibv_context;
import io.jverbs.ibverbs.raw.ibv_device;
import io.jverbs.ibverbs.raw.ibv_gid_entry;
import io.jverbs.ibverbs.raw.ibv_pd;
import io.jverbs.ibverbs.raw.ibv_port_attr;
import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * The base fixture of the device tests: the test device opened ({@code ibv_open_device}), its
 * port queried, the RoCE v2 IPv4 GID chosen, and one protection domain. Objects made through it
 * are destroyed by {@link #close()} in reverse order, then the device is closed.
 *
 * <p>Memory handed to the device comes from this fixture's shared arena and stays valid until
 * {@link #close()}. Use from one thread at a time.
 */
public final class DeviceContext implements AutoCloseable {
    private final TestDevice device;
    private final Arena arena = Arena.ofShared();
    private final Cleanup cleanup = new Cleanup();
    private final MemorySegment context;
    private final MemorySegment pd;
    private final int activeMtu;
    private final int gidIndex;
    private final byte[] gid;
    private boolean closed;

    private DeviceContext(TestDevice device) {
        this.device = device;
        try {
            context = openDevice(device.name());
            cleanup.add("ibv_close_device", () -> verbs_h.ibv_close_device(context));
            MemorySegment port = arena.allocate(ibv_port_attr.LAYOUT);
            Checks.ok("ibv_query_port", InlineVerbs.ibv_query_port(context, device.port(), port));
            if (ibv_port_attr.state(port) != verbs_h.IBV_PORT_ACTIVE) {
                throw new IllegalStateException(device.name() + " port " + device.port() + " is not ACTIVE (state "
                        + ibv_port_attr.state(port) + "): the rig's device is broken, not jverbs");
            }
            activeMtu = ibv_port_attr.active_mtu(port);
            gidIndex = device.gidIndexEnv() >= 0 ? device.gidIndexEnv()
                    : findRoceV2Ipv4GidIndex(context, device.port(), ibv_port_attr.gid_tbl_len(port));
            gid = queryGid(context, device.port(), gidIndex);
            pd = Checks.nonNull("ibv_alloc_pd", verbs_h.ibv_alloc_pd(context), ibv_pd.sizeof());
            cleanup.add("ibv_dealloc_pd", () -> verbs_h.ibv_dealloc_pd(pd));
        } catch (RuntimeException | Error e) {
            try {
                close();
            } catch (RuntimeException | Error suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /**
     * Opens the test device with a protection domain.
     *
     * @throws io.jverbs.ibverbs.VerbsException when a verb fails
     * @throws IllegalStateException when the device is not listed or its port is not active
     */
    public static DeviceContext open(TestDevice device) {
        return new DeviceContext(device);
    }

    /** @return the device this fixture opened */
    public TestDevice device() {
        return device;
    }

    /** @return {@code struct ibv_context *} */
    public MemorySegment context() {
        return context;
    }

    /** @return {@code struct ibv_pd *} */
    public MemorySegment pd() {
        return pd;
    }

    /** @return the port's active MTU ({@code IBV_MTU_*}), the path MTU the queue pairs use */
    public int activeMtu() {
        return activeMtu;
    }

    /** @return the index of the RoCE v2 IPv4-mapped GID */
    public int gidIndex() {
        return gidIndex;
    }

    /** @return a copy of that GID's 16 bytes */
    public byte[] gid() {
        return gid.clone();
    }

    /** @return the port the tests use */
    public int port() {
        return device.port();
    }

    /** @return the arena of this fixture (freed by {@link #close()}) */
    public Arena arena() {
        return arena;
    }

    /** @return the undo steps of this fixture, for objects a test creates itself */
    public Cleanup cleanup() {
        return cleanup;
    }

    /** Registers {@code bytes} of fresh zeroed memory on this fixture's PD. */
    public Mr registerMemory(long bytes, int access) {
        return Resources.registerMemory(cleanup, arena, pd, bytes, access);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            cleanup.close();
        } finally {
            arena.close();
        }
    }

    // ---- discovery through the thin bindings ----

    /** @return the names of all devices {@code ibv_get_device_list} reports */
    public static List<String> deviceNames() {
        List<String> names = new ArrayList<>();
        forEachDevice(dev -> {
            names.add(ibv_device.name(dev).getString(0));
            return false;
        });
        return names;
    }

    private interface DeviceVisitor {
        /** @return true to stop */
        boolean visit(MemorySegment device);
    }

    private static void forEachDevice(DeviceVisitor visitor) {
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment num = scratch.allocate(JAVA_INT);
            MemorySegment list = verbs_h.ibv_get_device_list(num);
            if (list.address() == 0) {
                throw VerbsException.of("ibv_get_device_list", Native.lastErrno());
            }
            try {
                int n = num.get(JAVA_INT, 0);
                MemorySegment array = list.reinterpret(ADDRESS.byteSize() * (n + 1L));
                for (int i = 0; i < n; i++) {
                    MemorySegment dev = array.getAtIndex(ADDRESS, i).reinterpret(ibv_device.sizeof());
                    if (visitor.visit(dev)) {
                        return;
                    }
                }
            } finally {
                verbs_h.ibv_free_device_list(list);
            }
        }
    }

    private static MemorySegment openDevice(String name) {
        MemorySegment[] opened = {MemorySegment.NULL};
        forEachDevice(dev -> {
            if (!ibv_device.name(dev).getString(0).equals(name)) {
                return false;
            }
            // The device list may be freed once the device is open (the context keeps its own reference).
            opened[0] = Checks.nonNull("ibv_open_device", verbs_h.ibv_open_device(dev), ibv_context.sizeof());
            return true;
        });
        if (opened[0].address() == 0) {
            throw new IllegalStateException("ibv_get_device_list does not list " + name + " (devices: " + deviceNames() + ")");
        }
        return opened[0];
    }

    /** {@code ibv_query_gid}: the 16 bytes of GID {@code index}. */
    public static byte[] queryGid(MemorySegment context, int port, int index) {
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment gid = scratch.allocate(16, 8);
            Checks.ok("ibv_query_gid", verbs_h.ibv_query_gid(context, (byte) port, index, gid));
            return gid.toArray(JAVA_BYTE);
        }
    }

    /** {@code ibv_query_gid_ex}: the GID entry of {@code index}, or null when the slot is empty (ENODATA). */
    public static MemorySegment queryGidEntry(Arena arena, MemorySegment context, int port, int index) {
        MemorySegment entry = arena.allocate(ibv_gid_entry.LAYOUT);
        int rc = verbs_h._ibv_query_gid_ex(context, port, index, entry, 0, ibv_gid_entry.sizeof());
        if (rc == Errno.ENODATA) {
            return null;
        }
        Checks.ok("ibv_query_gid_ex", rc);
        return entry;
    }

    /** @return true for {@code ::ffff:a.b.c.d} */
    public static boolean isIpv4Mapped(byte[] gid) {
        for (int i = 0; i < 10; i++) {
            if (gid[i] != 0) {
                return false;
            }
        }
        return gid[10] == (byte) 0xff && gid[11] == (byte) 0xff;
    }

    /** @return the GID as sysfs prints it: eight groups of four hex digits */
    public static String sysfsText(byte[] gid) {
        String hex = HexFormat.of().formatHex(gid);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 32; i += 4) {
            sb.append(i == 0 ? "" : ":").append(hex, i, i + 4);
        }
        return sb.toString();
    }

    private static int findRoceV2Ipv4GidIndex(MemorySegment context, int port, int tableLength) {
        try (Arena scratch = Arena.ofConfined()) {
            for (int i = 0; i < tableLength; i++) {
                MemorySegment entry = queryGidEntry(scratch, context, port, i);
                if (entry != null && ibv_gid_entry.gid_type(entry) == verbs_h.IBV_GID_TYPE_ROCE_V2
                        && isIpv4Mapped(ibv_gid_entry.gid(entry).toArray(JAVA_BYTE))) {
                    return i;
                }
            }
        }
        throw new IllegalStateException("no RoCE v2 IPv4-mapped GID on port " + port + " (is the netdev's IPv4 address set?)");
    }
}
