package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.raw.ibv_device;
import io.jverbs.ibverbs.raw.ibv_device_attr;
import io.jverbs.ibverbs.raw.ibv_device_attr_ex;
import io.jverbs.ibverbs.raw.ibv_gid_entry;
import io.jverbs.ibverbs.raw.ibv_port_attr;
import io.jverbs.ibverbs.raw.verbs_h;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.HexFormat;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Device discovery and queries, checked against what the kernel shows in sysfs. */
@DeviceTest
class DeviceDiscoveryTest {
    private static DeviceContext dev;

    @BeforeAll
    static void open(TestDevice device) {
        dev = DeviceContext.open(device);
    }

    @AfterAll
    static void close() {
        Cleanup.closeInOrder(dev);
    }

    @Test
    void deviceListNamesTheTestDevice(TestDevice device) throws IOException {
        assertTrue(DeviceContext.deviceNames().contains(device.name()), "ibv_get_device_list: " + DeviceContext.deviceNames());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment num = arena.allocate(JAVA_INT);
            MemorySegment raw = Checks.nonNull("ibv_get_device_list", verbs_h.ibv_get_device_list(num), 0);
            int n = num.get(JAVA_INT, 0);
            MemorySegment list = raw.reinterpret(8L * (n + 1));
            try {
                assertEquals(0, list.getAtIndex(ADDRESS, n).address(), "NULL-terminated");
                MemorySegment found = MemorySegment.NULL;
                for (int i = 0; i < n; i++) {
                    MemorySegment d = list.getAtIndex(ADDRESS, i)
                            .reinterpret(ibv_device.sizeof());
                    if (verbs_h.ibv_get_device_name(d).reinterpret(64).getString(0).equals(device.name())) {
                        found = d;
                    }
                }
                assertNotEquals(0, found.address(), "ibv_get_device_name finds " + device.name());
                assertEquals(device.name(), ibv_device.name(found).getString(0), "ibv_device.name");
                assertEquals(verbs_h.IBV_NODE_CA, ibv_device.node_type(found), "node type");
                assertEquals(verbs_h.IBV_TRANSPORT_IB, ibv_device.transport_type(found), "transport");
                long guid = verbs_h.ibv_get_device_guid(found);
                String sysfsGuid = Files.readString(device.sysfs().resolve("node_guid")).strip();
                assertEquals(sysfsGuid, guidText(guid), "ibv_get_device_guid (network byte order) vs sysfs node_guid");
            } finally {
                verbs_h.ibv_free_device_list(list);
            }
        }
    }

    @Test
    void queryDeviceReportsCapabilities(TestDevice device) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(ibv_device_attr.LAYOUT);
            Checks.ok("ibv_query_device", verbs_h.ibv_query_device(dev.context(), attr));
            assertTrue(Byte.toUnsignedInt(ibv_device_attr.phys_port_cnt(attr)) >= 1, "phys_port_cnt");
            assertTrue(ibv_device_attr.max_qp(attr) > 0, "max_qp");
            assertTrue(ibv_device_attr.max_cqe(attr) >= 1024, "max_cqe " + ibv_device_attr.max_cqe(attr));
            assertTrue(ibv_device_attr.max_qp_wr(attr) >= RcPair.QUEUE_DEPTH, "max_qp_wr");
            assertTrue(ibv_device_attr.max_sge(attr) >= 1, "max_sge");
            assertNotEquals(0L, ibv_device_attr.max_mr_size(attr), "max_mr_size (u64; rxe reports all ones)");
            String sysfsGuid = Files.readString(device.sysfs().resolve("node_guid")).strip();
            assertEquals(sysfsGuid, guidText(ibv_device_attr.node_guid(attr)), "node_guid");

            // The extended query (verbs_context->query_device_ex) must agree with the legacy one.
            MemorySegment ex = arena.allocate(ibv_device_attr_ex.LAYOUT);
            Checks.ok("ibv_query_device_ex", InlineVerbs.ibv_query_device_ex(dev.context(), MemorySegment.NULL, ex));
            MemorySegment orig = ibv_device_attr_ex.orig_attr(ex);
            assertEquals(ibv_device_attr.max_qp(attr), ibv_device_attr.max_qp(orig), "ex max_qp");
            assertEquals(ibv_device_attr.max_cqe(attr), ibv_device_attr.max_cqe(orig), "ex max_cqe");
            assertEquals(ibv_device_attr.node_guid(attr), ibv_device_attr.node_guid(orig), "ex node_guid");
            assertEquals(ibv_device_attr.atomic_cap(attr), ibv_device_attr.atomic_cap(orig), "ex atomic_cap");
        }
    }

    @Test
    void portIsActiveEthernetAsSysfsSays(TestDevice device) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment port = arena.allocate(ibv_port_attr.LAYOUT);
            Checks.ok("ibv_query_port", InlineVerbs.ibv_query_port(dev.context(), device.port(), port));
            assertEquals(verbs_h.IBV_PORT_ACTIVE, ibv_port_attr.state(port), "port state");
            // sysfs: "4: ACTIVE"
            String sysfsState = Files.readString(device.sysfsPort().resolve("state")).strip();
            assertEquals(sysfsState.substring(0, sysfsState.indexOf(':')), Integer.toString(ibv_port_attr.state(port)),
                    "state vs sysfs " + sysfsState);
            assertEquals(verbs_h.IBV_LINK_LAYER_ETHERNET, ibv_port_attr.link_layer(port), "link layer");
            int active = ibv_port_attr.active_mtu(port);
            assertTrue(active >= verbs_h.IBV_MTU_256 && active <= ibv_port_attr.max_mtu(port),
                    "active_mtu " + active + " max_mtu " + ibv_port_attr.max_mtu(port));
            assertEquals(dev.activeMtu(), active);
            assertTrue(ibv_port_attr.gid_tbl_len(port) > dev.gidIndex(), "gid_tbl_len " + ibv_port_attr.gid_tbl_len(port));
            assertTrue(Integer.toUnsignedLong(ibv_port_attr.max_msg_sz(port)) >= 1 << 20, "max_msg_sz");
        }
    }

    @Test
    void gidAtTestIndexIsRoceV2Ipv4Mapped(TestDevice device) throws IOException {
        byte[] gid = DeviceContext.queryGid(dev.context(), device.port(), dev.gidIndex());
        assertTrue(DeviceContext.isIpv4Mapped(gid), "IPv4-mapped: " + DeviceContext.sysfsText(gid));
        if (device.ip() != null) {
            assertArrayEquals(InetAddress.getByName(device.ip()).getAddress(), Arrays.copyOfRange(gid, 12, 16),
                    "GID carries " + device.ip());
        }
        String sysfsGid = Files.readString(device.sysfsPort().resolve("gids").resolve(Integer.toString(dev.gidIndex()))).strip();
        assertEquals(sysfsGid, DeviceContext.sysfsText(gid), "ibv_query_gid vs sysfs gids/" + dev.gidIndex());

        String sysfsType = Files.readString(device.sysfsPort().resolve("gid_attrs").resolve("types")
                .resolve(Integer.toString(dev.gidIndex()))).strip();
        assertEquals("RoCE v2", sysfsType, "sysfs gid_attrs/types/" + dev.gidIndex());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment entry = DeviceContext.queryGidEntry(arena, dev.context(), device.port(), dev.gidIndex());
            assertTrue(entry != null, "ibv_query_gid_ex finds index " + dev.gidIndex());
            assertEquals(verbs_h.IBV_GID_TYPE_ROCE_V2, ibv_gid_entry.gid_type(entry), "gid_type");
            assertEquals(dev.gidIndex(), ibv_gid_entry.gid_index(entry), "gid_index");
            assertEquals(device.port(), ibv_gid_entry.port_num(entry), "port_num");
            assertTrue(ibv_gid_entry.ndev_ifindex(entry) > 0, "ndev_ifindex");
            assertArrayEquals(gid, ibv_gid_entry.gid(entry).toArray(JAVA_BYTE), "gid of the entry");
        }
    }

    @Test
    void gidTableHoldsTheTestGid(TestDevice device) {
        try (Arena arena = Arena.ofConfined()) {
            int max = 16;
            MemorySegment entries = arena.allocate(ibv_gid_entry.LAYOUT, max);
            long n = verbs_h._ibv_query_gid_table(dev.context(), entries, max, 0, ibv_gid_entry.sizeof());
            assertTrue(n >= 1, "ibv_query_gid_table returned " + n);
            boolean found = false;
            for (long i = 0; i < n; i++) {
                MemorySegment e = entries.asSlice(i * ibv_gid_entry.sizeof(), ibv_gid_entry.sizeof());
                assertTrue(ibv_gid_entry.gid_type(e) == verbs_h.IBV_GID_TYPE_ROCE_V1
                        || ibv_gid_entry.gid_type(e) == verbs_h.IBV_GID_TYPE_ROCE_V2, "RoCE gid types only on rxe");
                if (ibv_gid_entry.gid_index(e) == dev.gidIndex() && ibv_gid_entry.port_num(e) == device.port()) {
                    assertArrayEquals(dev.gid(), ibv_gid_entry.gid(e).toArray(JAVA_BYTE), "table entry " + i);
                    assertEquals(verbs_h.IBV_GID_TYPE_ROCE_V2, ibv_gid_entry.gid_type(e));
                    found = true;
                }
            }
            assertTrue(found, "the table lists gid index " + dev.gidIndex());
        }
    }

    /** The sysfs form of a GUID that verbs gives in network byte order: {@code 5054:00ff:fe12:3456}. */
    private static String guidText(long guidNetworkOrder) {
        long guid = ByteOrder.nativeOrder() == ByteOrder.BIG_ENDIAN ? guidNetworkOrder : Long.reverseBytes(guidNetworkOrder);
        String hex = HexFormat.of().toHexDigits(guid);
        return hex.substring(0, 4) + ":" + hex.substring(4, 8) + ":" + hex.substring(8, 12) + ":" + hex.substring(12, 16);
    }
}
