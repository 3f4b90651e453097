package io.jverbs.device;

import io.jverbs.WorkResult;
import io.jverbs.counters.Counter;
import io.jverbs.counters.CounterDelta;
import io.jverbs.counters.CounterSnapshot;
import io.jverbs.counters.CounterSource;
import io.jverbs.counters.ProcessResources;
import io.jverbs.counters.QpCounters;
import io.jverbs.counters.RdmaCounters;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The counters API on a real device: a known transfer moves the counters, netlink agrees with sysfs, per-QP and resources. */
@DeviceTest
class CountersDeviceTest {
    private static final long T = 20_000;
    private static final int SENDS = 32;

    private static long delta(CounterDelta d, String name) {
        return d.change(name).orElseThrow(() -> new AssertionError("no counter " + name + " in " + d)).delta();
    }

    @Test
    void knownSendsMoveThePacketAndSendCounters(TestDevice device) throws Exception {
        RdmaCounters counters = RdmaCounters.system();
        assertTrue(counters.netlinkAvailable(), "netlink RDMA_NLDEV on " + device.name() + ": " + counters.netlinkStatus());
        try (Loopback lb = new Loopback(device, 8192)) {
            lb.client.startPoller();
            lb.server.startPoller();
            List<CompletableFuture<WorkResult>> receives = new ArrayList<>();
            for (int i = 0; i < SENDS; i++) {
                receives.add(lb.server.qp.async().receive(lb.server.buffer, 0, 256));
            }
            CounterSnapshot before = counters.snapshot(device.name(), 1);
            assertEquals(CounterSource.NETLINK, before.hwSource());
            assertTrue(before.errors().isEmpty(), before.errors().toString());
            for (int i = 0; i < SENDS; i++) {
                lb.client.qp.async().send(lb.client.buffer, 0, 64).get(T, TimeUnit.MILLISECONDS);
            }
            for (CompletableFuture<WorkResult> r : receives) {
                r.get(T, TimeUnit.MILLISECONDS);
            }
            CounterDelta d = counters.snapshot(device.name(), 1).since(before);
            System.out.println("counters: " + SENDS + " sends of 64 B on " + device.name() + "/1 moved " + d.moved().stream()
                    .map(c -> c.name() + " +" + c.delta()).toList());
            // Loopback: every request and every ack is sent and received by this one port.
            assertTrue(delta(d, "sent_pkts") >= SENDS, "sent_pkts: at least one packet per send: " + d.moved());
            assertTrue(delta(d, "rcvd_pkts") >= SENDS, "rcvd_pkts: " + d.moved());
            assertEquals(delta(d, "sent_pkts"), delta(d, "rcvd_pkts"), "loopback: what is sent is received: " + d.moved());
            assertEquals(SENDS, delta(d, "rdma_sends"), "rdma_sends counts the Send requests: " + d.moved());
            assertEquals(SENDS, delta(d, "rdma_recvs"), "rdma_recvs counts the received Sends: " + d.moved());
            assertEquals(0, delta(d, "completer_retry_err"), "no loss on loopback");
        }
    }

    @Test
    void netlinkAgreesWithSysfsOnceTheCacheExpired(TestDevice device) throws Exception {
        RdmaCounters netlink = RdmaCounters.system();
        RdmaCounters sysfs = RdmaCounters.sysfs(RdmaCounters.SYSFS_ROOT);
        CounterSnapshot viaSysfs = sysfs.snapshotAfter(device.name(), 1, System.nanoTime());
        CounterSnapshot viaNetlink = netlink.snapshot(device.name(), 1);
        assertEquals(CounterSource.SYSFS, viaSysfs.hwSource());
        assertTrue(viaSysfs.lifespan().isPresent(), "rxe has hw_counters/lifespan");
        assertEquals(viaSysfs.lifespan().get(), viaSysfs.maxStaleness());
        List<String> sysfsNames = viaSysfs.counters().stream().map(Counter::name).sorted().toList();
        List<String> netlinkNames = viaNetlink.counters().stream().map(Counter::name).sorted().toList();
        assertEquals(sysfsNames, netlinkNames, "the same hw_counters by both paths");
        for (Counter c : viaSysfs.counters()) {
            assertEquals(c.value(), viaNetlink.counter(c.name()).orElseThrow().value(), c.name() + " (idle port: no traffic between the reads)");
        }
        System.out.println("counters: " + device.name() + "/1 has " + sysfsNames.size() + " hw_counters, the same through"
                + " sysfs and netlink: " + sysfsNames);
    }

    @Test
    void perQpCountersAreUnsupportedOnRxeAndTheProcessResourcesAreCounted(TestDevice device) throws Exception {
        RdmaCounters counters = RdmaCounters.system();
        ProcessResources idle = counters.processResources(device.name()).orElseThrow();
        try (Loopback lb = new Loopback(device, 4096)) {
            QpCounters q = counters.qpCounters(device.name(), 1, lb.client.qp.number());
            System.out.println("counters: per-QP on " + device.name() + ": " + q.reason());
            assertFalse(q.supported(), "rxe binds no per-QP counter: " + q);
            assertTrue(q.reason().startsWith("unsupported"), q.reason());
            ProcessResources busy = counters.processResources(device.name()).orElseThrow();
            System.out.println("counters: this JVM's objects on " + device.name() + ": before " + idle + ", with a loopback pair " + busy);
            assertEquals(idle.queuePairs() + 2, busy.queuePairs(), busy.toString());
            assertEquals(idle.completionQueues() + 2, busy.completionQueues(), busy.toString());
            assertEquals(idle.protectionDomains() + 2, busy.protectionDomains(), busy.toString());
            assertEquals(idle.memoryRegions() + 2, busy.memoryRegions(), busy.toString());
        }
        assertEquals(idle, counters.processResources(device.name()).orElseThrow(), "released on close");
    }
}
