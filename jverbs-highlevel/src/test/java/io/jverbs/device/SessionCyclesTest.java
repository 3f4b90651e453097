package io.jverbs.device;

import io.jverbs.Context;
import io.jverbs.ProtectionDomain;
import io.jverbs.Rdma;
import io.jverbs.cm.EventLoop;
import io.jverbs.cm.Session;
import io.jverbs.cm.SessionHandler;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.RdmaResourceCounts;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@link EventLoop} sessions made and closed over and over against one listener: 1,000 cycles of
 * connect, one call, close (the count can be lowered with {@code JVERBS_SESSION_CYCLES} while
 * working on it). Afterwards the process's file descriptors, its threads and the device's objects
 * ({@code rdma resource show}) are back at their counts before the cycles.
 */
@DeviceTest
class SessionCyclesTest {
    private static final Duration T = Duration.ofSeconds(30);

    @Test
    void aThousandConnectCallCloseCyclesLeaveNothingBehind(TestDevice device) throws Exception {
        assertNotNull(device.ip(), "the rig sets JVERBS_TEST_IP");
        int cycles = Integer.parseInt(System.getenv().getOrDefault("JVERBS_SESSION_CYCLES", "1000"));
        int port = 20000 + (int) ((ProcessHandle.current().pid() + 11) % 20000);
        // once first: what a process keeps after its first use (librdmacm's device handles, the
        // JDK's timer thread) is not the loops'
        serve(device, port, 1);
        Snapshot cold = Snapshot.take(device);
        String[] measured = serve(device, port, cycles);
        Snapshot end = cold.awaitNoMore(device, Duration.ofSeconds(20), "");
        System.out.println("session-cycles: " + cycles + " connect/call/close cycles on " + device.name() + " in "
                + measured[0] + " ms; with the loops open " + measured[1] + ", after them " + end + " (before them "
                + cold + ")");
    }

    /** Two contexts, a server and a client loop, {@code cycles} sessions one after the other; all closed again. */
    private static String[] serve(TestDevice device, int port, int cycles) throws Exception {
        byte[] hello = "ping".getBytes(StandardCharsets.UTF_8);
        try (Context serverCtx = Rdma.open(device.name()); Context clientCtx = Rdma.open(device.name())) {
            ProtectionDomain spd = serverCtx.allocateProtectionDomain();
            ProtectionDomain cpd = clientCtx.allocateProtectionDomain();
            try (EventLoop server = EventLoop.start(spd, EventLoop.Options.defaults());
                 EventLoop client = EventLoop.start(cpd, EventLoop.Options.defaults());
                 EventLoop.Listener listener = server.listen(device.ip(), port, Session.Options.defaults(),
                         new SessionHandler() {
                             @Override
                             public void onRequest(Session s, long id, MemorySegment request, int length) {
                                 s.reply(id, request.asSlice(0, length));
                             }
                         })) {
                cycle(client, device, port, hello); // the rings' pool warmed once
                awaitNoSessions(server);
                Snapshot warm = Snapshot.take(device);
                long start = System.nanoTime();
                for (int i = 1; i < cycles; i++) {
                    cycle(client, device, port, hello);
                }
                long ms = (System.nanoTime() - start) / 1_000_000;
                awaitNoSessions(server);
                // while the loops live: no queue pair, id or thread more (the loops keep a few rings for reuse)
                return new String[] {Long.toString(ms), warm.awaitNoMore(device, Duration.ofSeconds(20), "mr").toString()};
            }
        }
    }

    private static void cycle(EventLoop client, TestDevice device, int port, byte[] hello) throws Exception {
        try (Session s = client.connect(device.ip(), port, Session.Options.defaults(), new SessionHandler() { }, T)) {
            assertArrayEquals(hello, s.call(hello, T).get(T.toSeconds(), TimeUnit.SECONDS));
        }
    }

    private static void awaitNoSessions(EventLoop server) throws InterruptedException {
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (server.sessionCount() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(0, server.sessionCount(), "sessions left on the server 20 s after the last close");
    }

    /** What the cycles must leave as they found it: descriptors, threads and the device's objects. */
    private record Snapshot(long fds, long threads, Map<String, Long> device) {
        static Snapshot take(TestDevice device) throws Exception {
            long fds;
            try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
                fds = s.count();
            }
            // the rdma_cm reaper's threads end 10 s after their last destroy: not counted
            long threads = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> !t.getName().equals("jverbs-cm-reaper")).count();
            return new Snapshot(fds, threads, RdmaResourceCounts.read(device.name()).counts());
        }

        /** Whether {@code now} holds no more of anything than this, {@code except} one device object kind. */
        boolean covers(Snapshot now, String except) {
            return now.fds <= fds && now.threads <= threads && now.device.entrySet().stream()
                    .allMatch(e -> e.getKey().equals(except) || e.getValue() <= device.getOrDefault(e.getKey(), 0L));
        }

        /** Waits for the counts to come down to this snapshot's. */
        Snapshot awaitNoMore(TestDevice device, Duration limit, String except) throws Exception {
            long deadline = System.nanoTime() + limit.toNanos();
            Snapshot now = take(device);
            while (!covers(now, except) && System.nanoTime() < deadline) {
                Thread.sleep(250);
                now = take(device);
            }
            if (!covers(now, except)) {
                fail("more than before, " + limit.toSeconds() + " s after the cycles: before " + this + ", now " + now
                        + "; threads now " + Thread.getAllStackTraces().keySet().stream().map(Thread::getName).sorted().toList());
            }
            return now;
        }
    }
}
