package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.Errno;
import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.VerbsException;
import io.jverbs.ibverbs.raw.ibv_cq_ex;
import io.jverbs.ibverbs.raw.ibv_cq_init_attr_ex;
import io.jverbs.ibverbs.raw.ibv_poll_cq_attr;
import io.jverbs.ibverbs.raw.ibv_qp;
import io.jverbs.ibverbs.raw.ibv_qp_ex;
import io.jverbs.ibverbs.raw.ibv_qp_init_attr_ex;
import io.jverbs.ibverbs.raw.verbs_h;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@code ibv_wr_start} and {@code ibv_start_poll} take a provider spinlock that stays held, across
 * Java code, until {@code ibv_wr_complete} / {@code ibv_end_poll}. Were they critical downcalls, a
 * second thread spinning on that lock inside one would never reach a safepoint; the holder stops
 * at the next safepoint (a GC), so the JVM would wait forever for the spinner and the spinner for
 * the holder. This test runs exactly that pattern on the device: two threads share one RC
 * {@code ibv_qp_ex} ({@value #ROUNDS} batches of wr_start, one signaled RDMA write, wr_complete
 * each), two threads share its {@code ibv_cq_ex} (start_poll, read, end_poll; one completion per
 * pair, as rdma-core 44's rxe needs, see {@link ExtendedVerbsTest}), and a fifth thread forces
 * garbage collections all along.
 *
 * <p>A deadlock stops every thread of its JVM, so the workload runs in a child JVM ({@link Workload})
 * and this test is its watchdog: the child must finish within {@link #WORK_TIMEOUT} of being set up,
 * or it is killed and the test fails.
 */
@DeviceTest
class ProviderLockSafepointTest {
    /** Batches per posting thread, and so completions expected: 2 × ROUNDS. Small enough for QEMU TCG. */
    static final int ROUNDS = 200;
    /** JVM start and device setup in the child (7–17 s for the JVM alone under TCG). */
    private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(120);
    /**
     * The workload itself: 15–20 s under TCG with ordinary wr_start/start_poll (a deadlock never
     * ends); room for a host several times slower, since the child's own stall check restarts with
     * every completion.
     */
    static final Duration WORK_TIMEOUT = Duration.ofSeconds(180);
    /** The fewest collections the run must have forced for its result to mean anything. */
    private static final int MIN_GCS = 10;
    private static final String READY = "ready:";
    private static final String RESULT = "result:";
    private static final Pattern RESULT_LINE = Pattern.compile(RESULT + " device (\\S+), posted (\\d+) (\\d+),"
            + " completions (\\d+) (\\d+), start_poll calls (\\d+) (\\d+), gcs (\\d+), (\\d+) ms");

    @Test
    void twoPostersAndTwoPollersOnSharedQueuesSurviveForcedGcs(TestDevice device) throws Exception {
        // The child reports which threads did not reach a safepoint within 10 s (HotSpot's own diagnosis).
        List<String> command = ChildJvm.command(Workload.class,
                List.of("-XX:-DisableExplicitGC", "-XX:+SafepointTimeout", "-XX:SafepointTimeoutDelay=10000"), List.of(Integer.toString(ROUNDS)));
        ChildJvm.Result child = ChildJvm.run(command, READY, STARTUP_TIMEOUT, WORK_TIMEOUT);
        String what = ROUNDS + " rounds per thread (2 threads posting wr_start…wr_complete on one ibv_qp_ex, 2 polling"
                + " start_poll…end_poll on one ibv_cq_ex, 1 forcing GCs) on " + device.name();
        if ("work".equals(child.timedOutIn())) {
            fail("deadlock: child JVM did not finish " + what + " in " + WORK_TIMEOUT.toSeconds() + " s; killed it."
                    + " Last progress: " + child.last("progress:")
                    + ". Threads HotSpot found not at a safepoint:\n" + child.linesWith("safepoint"));
        }
        if (child.timedOutIn() != null) {
            fail("child JVM for " + what + " timed out in its " + child.timedOutIn() + " phase (limit "
                    + STARTUP_TIMEOUT.toSeconds() + " s to get ready); killed it. Last lines: " + lastLines(child, 5));
        }
        assertEquals(0, child.exitCode(), "child JVM exit status for " + what + "; last lines: " + lastLines(child, 5));
        Matcher m = RESULT_LINE.matcher(child.last(RESULT));
        assertTrue(m.matches(), "the child's result line: " + child.last(RESULT));
        assertEquals(device.name(), m.group(1), "device the child used");
        assertEquals(ROUNDS, Integer.parseInt(m.group(2)), "batches posted by poster 0 on " + device.name());
        assertEquals(ROUNDS, Integer.parseInt(m.group(3)), "batches posted by poster 1 on " + device.name());
        assertEquals(2 * ROUNDS, Integer.parseInt(m.group(4)) + Integer.parseInt(m.group(5)),
                "completions taken by the two pollers on " + device.name());
        assertTrue(Long.parseLong(m.group(6)) > 0 && Long.parseLong(m.group(7)) > 0,
                "both pollers called ibv_start_poll: " + m.group(6) + ", " + m.group(7));
        assertTrue(Long.parseLong(m.group(8)) >= MIN_GCS, "collections during the workload: " + m.group(8));
        System.out.printf("provider-lock: %s: %d rounds × 2 posters, %s + %s completions, %s GCs, workload %s ms"
                + " (child JVM: %d ms from ready to exit)%n", device.name(), ROUNDS, m.group(4), m.group(5), m.group(8),
                m.group(9), child.workMs());
    }

    private static String lastLines(ChildJvm.Result child, int n) {
        List<String> out = child.output();
        return String.join(" | ", out.subList(Math.max(0, out.size() - n), out.size()));
    }

    /**
     * The child JVM: {@code args[0]} rounds per posting thread. Prints {@code ready: ...} once the
     * queues are connected, {@code progress: ...} every 2 s, and last {@code result: ...}; exits 0
     * when every write completed successfully, exactly once, and landed; 1 on a failure or a stall
     * that still lets Java run (lost completions, not a deadlock).
     */
    public static final class Workload {
        private static final int DEPTH = 32;
        /** No new completion for this long is a stall. */
        private static final Duration STALL = Duration.ofSeconds(45);
        /** Between forced collections: a full GC under TCG takes tens of ms, and the workers need time too. */
        private static final long GC_PAUSE_NANOS = 10_000_000;

        private Workload() {
        }

        public static void main(String[] args) throws Exception {
            int rounds = Integer.parseInt(args[0]);
            TestDevice device = TestDevice.fromEnvironment();
            String absent = device.absenceReason();
            if (absent != null) {
                System.out.println("error: " + absent);
                System.exit(1);
            }
            int status;
            try (DeviceContext dev = DeviceContext.open(device)) {
                status = run(dev, rounds);
            }
            System.exit(status);
        }

        private static int run(DeviceContext dev, int rounds) throws InterruptedException {
            Mr local = dev.registerMemory(4096, Resources.FULL_ACCESS);
            Mr remote = dev.registerMemory(4096, Resources.FULL_ACCESS);
            MemorySegment cq = createCqEx(dev, 2 * DEPTH);
            MemorySegment qp = createQpEx(dev, cq);
            MemorySegment qpx = InlineVerbs.ibv_qp_to_qp_ex(qp).reinterpret(ibv_qp_ex.sizeof());
            MemorySegment peerCq = Resources.cq(dev.cleanup(), dev.context(), 2 * DEPTH, MemorySegment.NULL);
            MemorySegment peer = Resources.qp(dev.cleanup(), dev.pd(), verbs_h.IBV_QPT_RC, peerCq, peerCq, DEPTH);
            connect(dev, qp, QueuePairs.qpn(peer), 0x1000, 0x2000);
            connect(dev, peer, QueuePairs.qpn(qp), 0x2000, 0x1000);
            for (int t = 0; t < 2; t++) {
                local.buffer().set(JAVA_LONG, 8L * t, 0x0101_0101_0101_0101L * (t + 1));
            }
            System.out.println(READY + " device " + dev.device().name() + ", qp " + QueuePairs.qpn(qp) + " -> "
                    + QueuePairs.qpn(peer) + ", " + rounds + " rounds per poster");

            int total = 2 * rounds;
            Semaphore credits = new Semaphore(DEPTH); // never more writes in flight than the send queue holds
            AtomicInteger completed = new AtomicInteger();
            AtomicBoolean done = new AtomicBoolean();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            AtomicLongArray posted = new AtomicLongArray(2);
            AtomicLongArray polled = new AtomicLongArray(2);
            AtomicLongArray startPolls = new AtomicLongArray(2);
            BitSet[] seen = {new BitSet(rounds), new BitSet(rounds)};
            List<Thread> workers = new ArrayList<>();
            AtomicLong gcs = new AtomicLong();
            long started = System.nanoTime();

            Thread gc = Thread.ofPlatform().daemon().name("gc-forcer").start(() -> {
                while (!done.get()) {
                    // Counted only when the collection really ran: it cleared a reference to fresh garbage.
                    WeakReference<Object> garbage = new WeakReference<>(new Object());
                    System.gc();
                    if (garbage.get() == null) {
                        gcs.incrementAndGet();
                    }
                    LockSupport.parkNanos(GC_PAUSE_NANOS); // let the workers run between collections
                }
            });
            for (int t = 0; t < 2; t++) {
                int id = t;
                workers.add(Thread.ofPlatform().name("poster-" + t).start(() -> guard(failure, done, () -> {
                    for (int r = 0; r < rounds && !done.get(); r++) {
                        if (!credits.tryAcquire(STALL.toSeconds(), TimeUnit.SECONDS)) {
                            throw new AssertionError("poster-" + id + ": no send credit for " + STALL.toSeconds()
                                    + " s (completions stopped arriving)");
                        }
                        postWrite(qpx, ((long) id << 32) | r, remote.rkey(), remote.address(8L * id), local.lkey(),
                                local.address(8L * id));
                        posted.incrementAndGet(id);
                    }
                })));
                workers.add(Thread.ofPlatform().name("poller-" + t).start(() -> guard(failure, done, () -> {
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment attr = arena.allocate(ibv_poll_cq_attr.LAYOUT);
                        while (completed.get() < total && !done.get()) {
                            startPolls.incrementAndGet(id);
                            int rc = InlineVerbs.ibv_start_poll(cq, attr);
                            if (rc == Errno.ENOENT) {
                                Thread.yield();
                                continue;
                            }
                            if (rc != 0) {
                                throw VerbsException.of("ibv_start_poll", rc);
                            }
                            long wrId;
                            int wcStatus;
                            int opcode;
                            try {
                                wrId = ibv_cq_ex.wr_id(cq);
                                wcStatus = ibv_cq_ex.status(cq);
                                opcode = InlineVerbs.ibv_wc_read_opcode(cq);
                            } finally {
                                InlineVerbs.ibv_end_poll(cq);
                            }
                            record(seen, wrId, wcStatus, opcode, rounds);
                            polled.incrementAndGet(id);
                            completed.incrementAndGet();
                            credits.release();
                        }
                    }
                })));
            }

            // A stall is STALL without a new completion (not a total: a slow host only slows the run).
            long deadline = started + STALL.toNanos();
            long lastCompleted = -1;
            for (Thread w : workers) {
                while (w.isAlive() && System.nanoTime() < deadline) {
                    w.join(2_000);
                    long now = completed.get();
                    if (now != lastCompleted) {
                        lastCompleted = now;
                        deadline = System.nanoTime() + STALL.toNanos();
                    }
                    System.out.println("progress: posted " + posted.get(0) + " " + posted.get(1) + ", completions "
                            + now + "/" + total + ", gcs " + gcs.get());
                }
            }
            long workMs = (System.nanoTime() - started) / 1_000_000;
            done.set(true);
            gc.join(5_000);
            if (workers.stream().anyMatch(Thread::isAlive)) {
                // Java still runs, so this is no safepoint deadlock: completions were lost or a lock is stuck.
                System.out.println("error: stalled after " + workMs + " ms: posted " + posted + ", completions "
                        + completed.get() + "/" + total);
                Runtime.getRuntime().halt(1); // the stuck workers may hold provider locks: skip the cleanup
            }
            if (failure.get() != null) {
                System.out.println("error: " + failure.get());
                failure.get().printStackTrace(System.out);
                return 1;
            }
            for (int t = 0; t < 2; t++) {
                if (seen[t].cardinality() != rounds) {
                    System.out.println("error: poster-" + t + ": " + seen[t].cardinality() + " of " + rounds + " completed");
                    return 1;
                }
                long landed = remote.buffer().get(JAVA_LONG, 8L * t);
                if (landed != local.buffer().get(JAVA_LONG, 8L * t)) {
                    System.out.printf("error: poster-%d's RDMA writes did not land: remote word %#x%n", t, landed);
                    return 1;
                }
            }
            System.out.println(RESULT + " device " + dev.device().name() + ", posted " + posted.get(0) + " " + posted.get(1)
                    + ", completions " + polled.get(0) + " " + polled.get(1) + ", start_poll calls " + startPolls.get(0) + " "
                    + startPolls.get(1) + ", gcs " + gcs.get() + ", " + workMs + " ms");
            return 0;
        }

        /** One batch: wr_start, one signaled RDMA write of 8 bytes, wr_complete; aborted if building it throws. */
        private static void postWrite(MemorySegment qpx, long wrId, int rkey, long remoteAddr, int lkey, long localAddr) {
            InlineVerbs.ibv_wr_start(qpx);
            boolean built = false;
            try {
                ibv_qp_ex.wr_id(qpx, wrId);
                ibv_qp_ex.wr_flags(qpx, verbs_h.IBV_SEND_SIGNALED);
                InlineVerbs.ibv_wr_rdma_write(qpx, rkey, remoteAddr);
                InlineVerbs.ibv_wr_set_sge(qpx, lkey, localAddr, 8);
                built = true;
            } finally {
                if (!built) {
                    InlineVerbs.ibv_wr_abort(qpx);
                }
            }
            int rc = InlineVerbs.ibv_wr_complete(qpx);
            if (rc != 0) {
                throw VerbsException.of("ibv_wr_complete", rc);
            }
        }

        private static void record(BitSet[] seen, long wrId, int status, int opcode, int rounds) {
            int poster = (int) (wrId >>> 32);
            int round = (int) wrId;
            if (status != verbs_h.IBV_WC_SUCCESS || opcode != verbs_h.IBV_WC_RDMA_WRITE || poster > 1 || round < 0
                    || round >= rounds) {
                throw new AssertionError("unexpected completion: wr_id " + Long.toHexString(wrId) + ", status " + status
                        + ", opcode " + opcode);
            }
            synchronized (seen) {
                if (seen[poster].get(round)) {
                    throw new AssertionError("completion of poster-" + poster + " round " + round + " seen twice");
                }
                seen[poster].set(round);
            }
        }

        private interface Body {
            void run() throws Exception;
        }

        /** Runs a worker; its first failure is kept and stops the others. */
        private static void guard(AtomicReference<Throwable> failure, AtomicBoolean done, Body body) {
            try {
                body.run();
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
                done.set(true);
            }
        }

        private static MemorySegment createCqEx(DeviceContext dev, int cqe) {
            try (Arena scratch = Arena.ofConfined()) {
                MemorySegment attr = scratch.allocate(ibv_cq_init_attr_ex.LAYOUT);
                ibv_cq_init_attr_ex.cqe(attr, cqe);
                MemorySegment cq = Checks.nonNull("ibv_create_cq_ex", InlineVerbs.ibv_create_cq_ex(dev.context(), attr),
                        ibv_cq_ex.sizeof());
                dev.cleanup().add("ibv_destroy_cq", () -> verbs_h.ibv_destroy_cq(InlineVerbs.ibv_cq_ex_to_cq(cq)));
                return cq;
            }
        }

        /** An RC QP for the {@code ibv_wr_*} API (RDMA write only), send and receive CQ {@code cq}. */
        private static MemorySegment createQpEx(DeviceContext dev, MemorySegment cq) {
            try (Arena scratch = Arena.ofConfined()) {
                MemorySegment attr = Resources.fillQpInitAttr(scratch.allocate(ibv_qp_init_attr_ex.LAYOUT),
                        verbs_h.IBV_QPT_RC, cq, cq, DEPTH);
                ibv_qp_init_attr_ex.comp_mask(attr, verbs_h.IBV_QP_INIT_ATTR_PD | verbs_h.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
                ibv_qp_init_attr_ex.pd(attr, dev.pd());
                ibv_qp_init_attr_ex.send_ops_flags(attr, verbs_h.IBV_QP_EX_WITH_RDMA_WRITE);
                MemorySegment qp = Checks.nonNull("ibv_create_qp_ex", InlineVerbs.ibv_create_qp_ex(dev.context(), attr),
                        ibv_qp.sizeof());
                dev.cleanup().add("ibv_destroy_qp", () -> verbs_h.ibv_destroy_qp(qp));
                return qp;
            }
        }

        private static void connect(DeviceContext dev, MemorySegment qp, int remoteQpn, int psn, int remotePsn) {
            QueuePairs.rcToInit(qp, dev.port(), RcPair.QP_ACCESS);
            QueuePairs.rcToRtr(qp, dev.port(), dev.activeMtu(), remoteQpn, remotePsn, dev.gid(), dev.gidIndex());
            QueuePairs.rcToRts(qp, psn);
        }
    }
}
