package io.jverbs.counters;

import io.jverbs.fakesysfs.FakeSysfs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The counters API on a fake sysfs tree and on hand-built netlink answers (host only). */
class RdmaCountersTest {
    @TempDir
    Path tmp;

    @Test
    void readsEveryFileUnderTheDriversNamesAndReportsTheUnreadableOnes() throws IOException {
        RdmaCounters counters = RdmaCounters.sysfs(FakeSysfs.create(tmp));
        assertEquals(List.of("mlx5_0", "rxe0"), counters.devices());
        assertEquals(List.of(1), counters.ports("rxe0"));
        CounterSnapshot s = counters.snapshot("rxe0", 1);
        assertEquals(15, s.counters().size(), s.counters().toString());
        assertEquals(1000, s.counter("sent_pkts").orElseThrow().value());
        assertEquals(3, s.counter("completer_retry_err").orElseThrow().value());
        assertFalse(s.counter("lifespan").isPresent(), "lifespan is a setting, not a counter");
        assertEquals(CounterSource.SYSFS, s.hwSource());
        assertEquals(Duration.ofMillis(10), s.lifespan().orElseThrow());
        assertEquals(Duration.ofMillis(10), s.maxStaleness(), "a sysfs hw_counters read may be a lifespan old");
        Map<String, String> errors = s.errors().stream().collect(Collectors.toMap(CounterError::name, CounterError::message));
        assertEquals(2, errors.size(), errors.toString());
        assertTrue(errors.get("broken_dir_counter").startsWith("cannot read"), errors.toString());
        assertTrue(errors.get("vanished_counter").contains("no such file"), errors.toString());
    }

    @Test
    void dataCountersAreBytesAndNotANumberIsAnError() throws IOException {
        RdmaCounters counters = RdmaCounters.sysfs(FakeSysfs.create(tmp));
        CounterSnapshot s = counters.snapshot("mlx5_0", 1);
        Counter xmit = s.counter("port_xmit_data").orElseThrow();
        assertEquals(400, xmit.value(), "4-byte words become bytes");
        assertEquals(CounterUnit.BYTES, xmit.unit());
        assertEquals(CounterGroup.PORT_COUNTERS, xmit.group());
        assertEquals(100, s.counter("port_xmit_packets").orElseThrow().value());
        assertEquals(CounterUnit.EVENTS, s.counter("port_xmit_packets").orElseThrow().unit());
        assertEquals(5, s.counter("np_cnp_sent").orElseThrow().value());
        assertEquals(1, s.errors().size());
        assertEquals("VL15_dropped", s.errors().get(0).name());
        assertTrue(s.errors().get(0).message().contains("N/A (no PMA)"));
    }

    @Test
    void unreadablePermissionIsReportedWhenThisUserCannotBypassIt() throws IOException {
        Path root = FakeSysfs.create(tmp);
        Path f = root.resolve("rxe0/ports/1/hw_counters/rdma_sends");
        Files.setPosixFilePermissions(f, java.util.Set.of());
        CounterSnapshot s = RdmaCounters.sysfs(root).snapshot("rxe0", 1);
        if (Files.isReadable(f)) {
            assertEquals(10, s.counter("rdma_sends").orElseThrow().value(), "root reads a mode-000 file");
        } else {
            assertTrue(s.errors().stream().anyMatch(e -> e.name().equals("rdma_sends")
                    && e.message().contains("permission denied")), s.errors().toString());
            assertEquals(1000, s.counter("sent_pkts").orElseThrow().value());
        }
    }

    @Test
    void aWaitForTheCacheEndsOnInterruptAndRefusesAFutureEvent() throws IOException {
        Path root = FakeSysfs.create(tmp);
        FakeSysfs.set(root, "rxe0", 1, "hw_counters", "lifespan", 60_000);
        RdmaCounters counters = RdmaCounters.sysfs(root);
        IllegalArgumentException future = assertThrows(IllegalArgumentException.class,
                () -> counters.snapshotAfter("rxe0", 1, System.nanoTime() + Duration.ofDays(1).toNanos()));
        assertTrue(future.getMessage().contains("wall-clock"), future.getMessage());
        long start = System.nanoTime();
        Thread.currentThread().interrupt();
        try {
            counters.snapshotAfter("rxe0", 1, System.nanoTime());
            assertTrue(Thread.currentThread().isInterrupted(), "the interrupt flag is kept");
        } finally {
            Thread.interrupted();
        }
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertTrue(ms < 2000, "a one-minute lifespan held an interrupted caller " + ms + " ms");
    }

    @Test
    void deltasShowWhatMoved() throws IOException, InterruptedException {
        Path root = FakeSysfs.create(tmp);
        RdmaCounters counters = RdmaCounters.sysfs(root);
        CounterSnapshot before = counters.snapshot("rxe0", 1);
        FakeSysfs.set(root, "rxe0", 1, "hw_counters", "sent_pkts", 1250);
        FakeSysfs.set(root, "rxe0", 1, "hw_counters", "completer_retry_err", 10);
        FakeSysfs.set(root, "mlx5_0", 1, "counters", "port_rcv_data", 150);
        long end = System.nanoTime();
        CounterSnapshot after = counters.snapshotAfter("rxe0", 1, end);
        assertTrue(after.nanoTime() - end >= Duration.ofMillis(10).toNanos(), "waited the lifespan out");
        CounterDelta d = after.since(before);
        assertEquals(List.of("completer_retry_err", "sent_pkts"), d.moved().stream().map(CounterDelta.Change::name).toList());
        assertEquals(250, d.change("sent_pkts").orElseThrow().delta());
        assertEquals(7, d.change("completer_retry_err").orElseThrow().delta());
        CounterSnapshot first = counters.snapshot("mlx5_0", 1);
        CounterSnapshot second = counters.snapshot("mlx5_0", 1);
        assertTrue(second.since(first).moved().isEmpty());
        IllegalArgumentException backwards = assertThrows(IllegalArgumentException.class, () -> first.since(second),
                "a delta from snapshots in the wrong order would run backwards");
        assertTrue(backwards.getMessage().contains("later.since(earlier)"), backwards.getMessage());
        CounterSnapshot mBefore = RdmaCounters.sysfs(root).snapshot("mlx5_0", 1);
        FakeSysfs.set(root, "mlx5_0", 1, "counters", "port_rcv_data", 250);
        assertEquals(400, counters.snapshot("mlx5_0", 1).since(mBefore).change("port_rcv_data").orElseThrow().delta(),
                "100 words more are 400 bytes");
        assertThrows(IllegalArgumentException.class, () -> after.since(mBefore));
        assertThrows(java.util.NoSuchElementException.class, () -> counters.snapshot("rxe9", 1));
    }

    @Test
    void sysfsOnlyReaderSaysPerQpCountersAreUnsupported() throws IOException {
        QpCounters q = RdmaCounters.sysfs(FakeSysfs.create(tmp)).qpCounters("rxe0", 1, 17);
        assertFalse(q.supported());
        assertTrue(q.reason().startsWith("unsupported"), q.reason());
    }

    @Test
    void systemReaderDegradesToSysfsWithAReasonWhenTheKernelHasNoRdmaNetlink() {
        RdmaCounters sys = RdmaCounters.system();
        if (!sys.netlinkAvailable()) {
            assertTrue(sys.netlinkStatus().orElseThrow().contains("NETLINK_RDMA"), sys.netlinkStatus().toString());
        }
    }

    // ---- netlink messages, built by hand ----

    private static byte[] attr(int type, byte[] payload) {
        int len = 4 + payload.length;
        ByteBuffer b = ByteBuffer.allocate(Netlink.align(len)).order(ByteOrder.nativeOrder());
        b.putShort((short) len).putShort((short) type).put(payload);
        return b.array();
    }

    private static byte[] cat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        ByteBuffer b = ByteBuffer.allocate(n);
        for (byte[] p : parts) {
            b.put(p);
        }
        return b.array();
    }

    private static byte[] u64(long v) {
        return ByteBuffer.allocate(8).order(ByteOrder.nativeOrder()).putLong(v).array();
    }

    private static byte[] u32(int v) {
        return ByteBuffer.allocate(4).order(ByteOrder.nativeOrder()).putInt(v).array();
    }

    private static byte[] str(String s) {
        return (s + "\0").getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] message(int type, int seq, byte[] body) {
        ByteBuffer b = ByteBuffer.allocate(16 + body.length).order(ByteOrder.nativeOrder());
        b.putInt(16 + body.length).putShort((short) type).putShort((short) 0).putInt(seq).putInt(0).put(body);
        return b.array();
    }

    private static byte[] entry(String name, long value) {
        return attr(Netlink.ATTR_STAT_HWCOUNTER_ENTRY | 0x8000, cat(attr(Netlink.ATTR_STAT_HWCOUNTER_ENTRY_NAME, str(name)),
                attr(Netlink.ATTR_STAT_HWCOUNTER_ENTRY_VALUE, u64(value))));
    }

    @Test
    void parsesAStatGetAnswer() {
        byte[] body = cat(attr(Netlink.ATTR_DEV_INDEX, u32(3)), attr(Netlink.ATTR_DEV_NAME, str("rxe0")),
                attr(Netlink.ATTR_PORT_INDEX, u32(1)), attr(Netlink.ATTR_STAT_HWCOUNTERS | 0x8000,
                        cat(entry("sent_pkts", 37077), entry("rcvd_seq_err", 198), entry("completer_retry_err", 203))));
        byte[] data = cat(message(Netlink.type(Netlink.CMD_STAT_GET), 7, body), message(Netlink.NLMSG_DONE, 7, u32(0)));
        List<Netlink.Message> ms = Netlink.messages(ByteBuffer.wrap(data));
        assertEquals(2, ms.size());
        assertEquals(3, ms.get(0).find(Netlink.ATTR_DEV_INDEX).u32());
        assertEquals("rxe0", ms.get(0).find(Netlink.ATTR_DEV_NAME).string());
        List<Counter> hw = Netlink.hwCounters(ms.get(0).find(Netlink.ATTR_STAT_HWCOUNTERS));
        assertEquals(List.of("sent_pkts", "rcvd_seq_err", "completer_retry_err"), hw.stream().map(Counter::name).toList());
        assertEquals(37077, hw.get(0).value());
        assertEquals(Netlink.NLMSG_DONE, ms.get(1).type());
        List<Integer> pids = new java.util.ArrayList<>();
        byte[] qpDump = cat(attr(Netlink.ATTR_DEV_INDEX, u32(3)), attr(Netlink.ATTR_RES_QP | 0x8000,
                cat(attr(20 | 0x8000, cat(attr(Netlink.ATTR_RES_LQPN, u32(17)), attr(Netlink.ATTR_RES_PID, u32(4242)))),
                        attr(20 | 0x8000, cat(attr(Netlink.ATTR_RES_LQPN, u32(18)), attr(Netlink.ATTR_RES_PID, u32(4242)))))));
        Netlink.collectU32(Netlink.messages(ByteBuffer.wrap(message(Netlink.type(10), 1, qpDump))).get(0).attributes(),
                Netlink.ATTR_RES_PID, pids, 0);
        assertEquals(List.of(4242, 4242), pids);
    }

    @Test
    void refusesMalformedNetlink() {
        byte[] bad = message(Netlink.type(Netlink.CMD_STAT_GET), 1, cat(attr(Netlink.ATTR_DEV_INDEX, u32(1))));
        ByteBuffer.wrap(bad).order(ByteOrder.nativeOrder()).putShort(16, (short) 200); // attribute longer than the message
        assertThrows(IllegalArgumentException.class, () -> Netlink.messages(ByteBuffer.wrap(bad)).get(0).attributes());
        byte[] truncated = java.util.Arrays.copyOf(message(Netlink.NLMSG_DONE, 1, u32(0)), 18);
        ByteBuffer.wrap(truncated).order(ByteOrder.nativeOrder()).putInt(0, 64);
        assertThrows(IllegalArgumentException.class, () -> Netlink.messages(ByteBuffer.wrap(truncated)));
    }

    @Test
    void requestLayoutAndConstantsMatchTheKernelHeaders() throws Exception {
        byte[] r = Netlink.request(Netlink.CMD_STAT_GET, false, 9, Netlink.ATTR_DEV_INDEX, 2, Netlink.ATTR_PORT_INDEX, 1);
        ByteBuffer b = ByteBuffer.wrap(r).order(ByteOrder.nativeOrder());
        assertEquals(32, b.getInt(0));
        assertEquals((5 << 10) + 17, b.getShort(4) & 0xffff);
        assertEquals(1, b.getShort(6));
        assertEquals(8, b.getShort(16));
        assertEquals(2, b.getInt(20));
        Path c = tmp.resolve("nl.c");
        Files.writeString(c, """
                #include <stdio.h>
                #include <linux/netlink.h>
                #include <rdma/rdma_netlink.h>
                int main(void) { printf("%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d\\n",
                  NETLINK_RDMA, RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET, RDMA_NLDEV_CMD_RES_QP_GET, RDMA_NLDEV_CMD_RES_CQ_GET,
                  RDMA_NLDEV_CMD_RES_MR_GET, RDMA_NLDEV_CMD_RES_PD_GET, RDMA_NLDEV_CMD_STAT_GET, RDMA_NLDEV_ATTR_DEV_INDEX,
                  RDMA_NLDEV_ATTR_DEV_NAME, RDMA_NLDEV_ATTR_PORT_INDEX, RDMA_NLDEV_ATTR_RES_QP, RDMA_NLDEV_ATTR_RES_LQPN,
                  RDMA_NLDEV_ATTR_RES_PID, RDMA_NLDEV_ATTR_STAT_RES, RDMA_NLDEV_ATTR_STAT_COUNTER_ID,
                  RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY,
                  RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE,
                  NLM_F_REQUEST, NLM_F_DUMP, NLMSG_ERROR, NLMSG_DONE, (int) sizeof(struct nlmsghdr)); return 0; }
                """);
        Path exe = tmp.resolve("nl");
        Process gcc = new ProcessBuilder("gcc", "-o", exe.toString(), c.toString()).redirectErrorStream(true).start();
        String gccOut = new String(gcc.getInputStream().readAllBytes());
        assertEquals(0, gcc.waitFor(), gccOut);
        Process run = new ProcessBuilder(exe.toString()).start();
        String out = new String(run.getInputStream().readAllBytes()).trim();
        run.waitFor();
        String mine = java.util.stream.IntStream.of(Netlink.NETLINK_RDMA, Netlink.RDMA_NL_NLDEV, Netlink.CMD_GET,
                Netlink.CMD_RES_QP_GET, Netlink.CMD_RES_CQ_GET, Netlink.CMD_RES_MR_GET, Netlink.CMD_RES_PD_GET,
                Netlink.CMD_STAT_GET, Netlink.ATTR_DEV_INDEX, Netlink.ATTR_DEV_NAME, Netlink.ATTR_PORT_INDEX,
                Netlink.ATTR_RES_QP, Netlink.ATTR_RES_LQPN, Netlink.ATTR_RES_PID, Netlink.ATTR_STAT_RES,
                Netlink.ATTR_STAT_COUNTER_ID, Netlink.ATTR_STAT_HWCOUNTERS, Netlink.ATTR_STAT_HWCOUNTER_ENTRY,
                Netlink.ATTR_STAT_HWCOUNTER_ENTRY_NAME, Netlink.ATTR_STAT_HWCOUNTER_ENTRY_VALUE, Netlink.NLM_F_REQUEST,
                Netlink.NLM_F_DUMP, Netlink.NLMSG_ERROR, Netlink.NLMSG_DONE, Netlink.HEADER)
                .mapToObj(Integer::toString).collect(Collectors.joining(" "));
        assertEquals(out, mine);
    }
}
