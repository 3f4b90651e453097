package io.jverbs.pair;

import io.jverbs.Endpoint;
import io.jverbs.EndpointExchange;
import io.jverbs.QueuePair;
import io.jverbs.RemoteBuffer;
import io.jverbs.WcStatus;
import io.jverbs.ibverbs.device.PairControl;
import io.jverbs.ibverbs.device.PairNode;
import io.jverbs.ibverbs.device.PairTest;
import io.jverbs.ibverbs.raw.verbs_h;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Faults on the wire between the two nodes, through jverbs-highlevel: netem loss, delay with
 * reordering, and duplication (the stream arrives intact and rxe's hw_counters show the
 * retransmissions on the right side); the link taken away for longer than the retry budget, the
 * peer's process killed and the peer node powered off (pending work fails with RETRY_EXC_ERR
 * within the bound, the queue pair is errored, nothing hangs); and each node's kernel objects
 * back to their baseline. The power-off comes last: node b is gone after it.
 *
 * <p>The bound: with ACK timeout exponent 16 (4.096 µs × 2^16 = 268 ms) and retry count 3, a
 * request on a dead link fails after (3 + 1) × 268 ms = 1.07 s; under QEMU TCG timers and
 * scheduling stretch that, so the tests allow twice that plus 3 s: {@value #BOUND_MS} ms.
 */
@PairTest
@Order(50)
class PairFaultTest {
    private static final int ACK_TIMEOUT = 16;
    private static final int RETRIES = 3;
    static final long BUDGET_MS = (long) Math.ceil(4.096e-3 * (1L << ACK_TIMEOUT) * (RETRIES + 1));
    static final long BOUND_MS = 2 * BUDGET_MS + 3_000;
    private static final long T = 120_000;
    private static final int CHUNK = 64 * 1024;

    private static Map<String, Long> parse(String text) {
        Map<String, Long> m = new LinkedHashMap<>();
        for (String kv : text.trim().split("\\s+")) {
            int eq = kv.indexOf('=');
            if (eq > 0) {
                m.put(kv.substring(0, eq), Long.parseLong(kv.substring(eq + 1)));
            }
        }
        return m;
    }

    private static String format(Map<String, Long> m) {
        StringBuilder sb = new StringBuilder();
        m.forEach((k, v) -> sb.append(sb.isEmpty() ? "" : " ").append(k).append('=').append(v));
        return sb.toString();
    }

    private static void noLeak(PairNode node) {
        String diff = node.resourcesAgainstBaseline();
        assertEquals("", diff, "LEAK: node " + node.role() + "'s rdma resource show differs from its baseline");
    }

    /**
     * Node a streams {@code chunks} × 64 KiB to node b under {@code netem}; node b checks every
     * byte. Returns {sender's counter deltas, receiver's counter deltas} (on node a; empty on b).
     *
     * <p>The stream's queue pairs retry without limit ({@code retryCount} 7): RoCE retransmits from
     * the first missing packet (go-back-N), and on a wire that drops, reorders or repeats packets a
     * finite budget can run out while every byte would still arrive (seen with the default 6 under 25%
     * reordering: RETRY_EXC_ERR mid-stream). The stream's own deadline {@link #T} bounds the test
     * instead.
     */
    private static Map<String, Long>[] streamUnder(PairNode node, int chunks, String... netem) throws Exception {
        long bytes = (long) chunks * CHUNK;
        PairControl control = node.control();
        @SuppressWarnings("unchecked")
        Map<String, Long>[] deltas = new Map[] {Map.of(), Map.of()};
        try (PairLink link = PairLink.open(node, bytes, c -> c.withRetry(14, 7))) {
            if (node.isA()) {
                control.expect("ready");
                PairLink.fill(link.buffer.segment(), 0, bytes, 77);
                Map<String, Long> before = node.hwCounters();
                node.netem(netem);
                long t0 = System.nanoTime();
                try {
                    link.stream(chunks, CHUNK, 8, T);
                } finally {
                    node.clearFaults();
                }
                long ms = (System.nanoTime() - t0) / 1_000_000;
                Map<String, Long> sender = PairNode.delta(before, node.hwCounters());
                control.send("streamed", "");
                String verdict = control.expect("verdict");
                Map<String, Long> receiver = parse(control.expect("counters"));
                System.out.printf("pair: %d KiB under netem %s in %d ms (%.2f MB/s); sender (node a) counters %s;"
                        + " receiver (node b) counters %s%n", bytes / 1024, String.join(" ", netem), ms,
                        bytes / 1e3 / Math.max(1, ms), sender, receiver);
                assertEquals("ok", verdict, "node b's byte-for-byte check");
                deltas[0] = sender;
                deltas[1] = receiver;
            } else {
                Map<String, Long> before = node.hwCounters();
                control.send("ready", "");
                control.expect("streamed", Duration.ofMillis(T + 60_000));
                String verdict = PairLink.check(link.buffer.segment(), 0, bytes, 77);
                control.send("verdict", verdict);
                control.send("counters", format(PairNode.delta(before, node.hwCounters())));
                assertEquals("ok", verdict, "the stream arrived intact");
            }
        }
        noLeak(node);
        return deltas;
    }

    @Test
    @Order(1)
    @Tag(PairTest.FAULT)
    void onePercentLossStreamIntactAndRetransmitted(PairNode node) throws Exception {
        Map<String, Long>[] d = streamUnder(node, 64, "loss", "1%");
        if (node.isA()) {
            long senderRetries = d[0].getOrDefault("rcvd_seq_err", 0L) + d[0].getOrDefault("completer_retry_err", 0L);
            assertTrue(senderRetries > 0, "the sender (node a) saw NAKs or retried: " + d[0]);
            assertTrue(d[1].getOrDefault("out_of_seq_request", 0L) > 0, "the receiver (node b) saw a sequence gap: " + d[1]);
        }
    }

    @Test
    @Order(2)
    @Tag(PairTest.FAULT)
    void delayAndReorderingStreamIntact(PairNode node) throws Exception {
        Map<String, Long>[] d = streamUnder(node, 16, "delay", "10ms", "reorder", "25%", "50%");
        if (node.isA()) {
            assertTrue(d[1].getOrDefault("out_of_seq_request", 0L) > 0, "reordered packets reached node b out of sequence: " + d[1]);
        }
    }

    @Test
    @Order(3)
    @Tag(PairTest.FAULT)
    void duplicationStreamIntact(PairNode node) throws Exception {
        Map<String, Long>[] d = streamUnder(node, 16, "duplicate", "10%");
        if (node.isA()) {
            assertTrue(d[1].getOrDefault("duplicate_request", 0L) > 0, "node b saw duplicated requests: " + d[1]);
        }
    }

    private static void assertRetryExceeded(PairLink.Failure f, QueuePair qp, String what) {
        System.out.println("pair: " + what + ": " + f.error().statusName() + " " + f.postedToErrorMs()
                + " ms after the post (retry budget " + BUDGET_MS + " ms, bound " + BOUND_MS + " ms), after "
                + f.writesDone() + " good writes; " + f.error().getMessage());
        assertEquals(WcStatus.RETRY_EXC_ERR, f.error().status(), what + ": " + f.error().getMessage());
        assertTrue(f.postedToErrorMs() <= BOUND_MS, what + ": the error came after " + f.postedToErrorMs()
                + " ms, bound " + BOUND_MS + " ms");
        assertEquals(QueuePair.State.ERROR, qp.state(), "the queue pair is reported errored");
        assertEquals(verbs_h.IBV_QPS_ERR, qp.deviceState(), "the device agrees: ERR");
    }

    @Test
    @Order(4)
    @Tag(PairTest.FAULT)
    void linkDownLongerThanTheRetryBudgetThenANewConnection(PairNode node) throws Exception {
        PairControl control = node.control();
        int downSeconds = 8;
        try (PairLink link = PairLink.open(node, CHUNK, c -> c.withRetry(ACK_TIMEOUT, RETRIES))) {
            if (node.isA()) {
                link.stream(4, CHUNK / 4, 4, T); // the connection works
                control.send("take-the-link-down", Integer.toString(downSeconds));
                control.expect("going-down");
                Thread.sleep(1_500); // node b's rxe-fault takes eth0 down meanwhile
                PairLink.Failure f = link.writeUntilFailure(4096, 0, () -> { }, 30_000);
                assertRetryExceeded(f, link.qp, "link down on node b for " + downSeconds + " s");
            } else {
                control.expect("take-the-link-down");
                control.send("going-down", "");
                Thread.sleep(200); // the acknowledgement leaves before the link goes
                node.linkDownFor(downSeconds);
            }
        }
        node.waitActive(60);
        control.barrier("link-back", Duration.ofSeconds(120));
        try (PairLink again = PairLink.open(node, CHUNK)) {
            if (node.isA()) {
                PairLink.fill(again.buffer.segment(), 0, CHUNK, 88);
                again.stream(1, CHUNK, 1, T);
                control.send("written", "");
                assertEquals("ok", control.expect("verdict"), "a new connection after the link came back");
            } else {
                control.expect("written");
                String verdict = PairLink.check(again.buffer.segment(), 0, CHUNK, 88);
                control.send("verdict", verdict);
                assertEquals("ok", verdict);
            }
        }
        noLeak(node);
    }

    @Test
    @Order(5)
    @Tag(PairTest.FAULT)
    void peerProcessKilledMidStream(PairNode node) throws Exception {
        PairControl control = node.control();
        if (node.isA()) {
            String[] victim = control.expect("victim", Duration.ofSeconds(200)).split(" ");
            int port = Integer.parseInt(victim[0]);
            long pid = Long.parseLong(victim[1]);
            try (PairLink link = PairLink.create(node, CHUNK, c -> c.withRetry(ACK_TIMEOUT, RETRIES));
                 Socket s = EndpointExchange.connect(node.peerIp(), port, Duration.ofSeconds(60))) {
                Endpoint remote = EndpointExchange.exchange(s, link.qp.localEndpoint(), Duration.ofSeconds(60));
                link.peer = EndpointExchange.exchange(s, link.buffer.remote(), Duration.ofSeconds(60));
                link.qp.connect(remote);
                control.expect("victim-connected", Duration.ofSeconds(60));
                long[] killedAt = {0};
                PairLink.Failure f = link.writeUntilFailure(CHUNK, 10, () -> {
                    node.killPeerProcess(pid);
                    killedAt[0] = System.nanoTime();
                }, 60_000);
                System.out.println("pair: the peer process " + pid + " was killed; the error came "
                        + (System.nanoTime() - killedAt[0]) / 1_000_000 + " ms after the kill was confirmed");
                assertRetryExceeded(f, link.qp, "peer process killed");
            }
            assertEquals("137", control.expect("victim-exit", Duration.ofSeconds(60)), "the victim died of SIGKILL");
        } else {
            String gid = Integer.toString(node.device().gidIndexEnv());
            Process p = new ProcessBuilder(PairNode.childJvm(PairVictim.class, node.device().name(), "47400", gid))
                    .redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
            BlockingQueue<String> lines = new LinkedBlockingQueue<>();
            Thread.ofPlatform().daemon().start(() -> {
                try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String line; (line = in.readLine()) != null; ) {
                        System.out.println("[victim] " + line);
                        lines.add(line);
                    }
                } catch (java.io.IOException e) {
                    lines.add("(output lost: " + e + ")");
                }
            });
            try {
                String ready = awaitLine(lines, "victim-listening", 180);
                String[] f = ready.split(" ");
                control.send("victim", f[1] + " " + f[2]);
                awaitLine(lines, "victim-connected", 60);
                control.send("victim-connected", "");
                assertTrue(p.waitFor(120, TimeUnit.SECONDS), "timed out: the victim was not killed within 120 s");
                control.send("victim-exit", Integer.toString(p.exitValue()));
                assertEquals(137, p.exitValue(), "killed by SIGKILL");
            } finally {
                p.destroyForcibly();
            }
        }
        noLeak(node);
    }

    private static String awaitLine(BlockingQueue<String> lines, String prefix, int seconds) throws InterruptedException {
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        while (true) {
            String line = lines.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (line == null) {
                throw new AssertionError("timed out: the victim JVM printed no '" + prefix + "' within " + seconds + " s");
            }
            if (line.startsWith(prefix)) {
                return line;
            }
        }
    }

    /** Before node b goes away: both nodes' kernel objects are back to what they were before the first pair test. */
    @Test
    @Order(6)
    void bothNodesBackToBaseline(PairNode node) throws Exception {
        String mine = node.resourcesAgainstBaseline();
        node.control().send("resources", mine.isEmpty() ? "baseline" : mine);
        String theirs = node.control().expect("resources");
        assertEquals("", mine, "LEAK: node " + node.role() + " differs from its baseline");
        assertEquals("baseline", theirs, "LEAK: the peer node differs from its baseline");
    }

    @Test
    @Order(99)
    @Tag(PairTest.FAULT)
    void peerNodePoweredOffMidStream(PairNode node) throws Exception {
        PairControl control = node.control();
        try (PairLink link = PairLink.open(node, CHUNK, c -> c.withRetry(ACK_TIMEOUT, RETRIES))) {
            if (node.isA()) {
                control.expect("ready");
                long[] offAt = {0};
                PairLink.Failure f = link.writeUntilFailure(CHUNK, 10, () -> {
                    node.powerOffPeer();
                    offAt[0] = System.nanoTime();
                }, 60_000);
                System.out.println("pair: node b was powered off; the error came "
                        + (System.nanoTime() - offAt[0]) / 1_000_000 + " ms after the power-off was confirmed");
                assertRetryExceeded(f, link.qp, "peer node powered off");
            } else {
                control.send("ready", "");
                Thread.sleep(240_000); // node a has the host power this node off meanwhile
                throw new AssertionError("timed out: node b was not powered off within 240 s");
            }
        }
        noLeak(node);
    }
}
