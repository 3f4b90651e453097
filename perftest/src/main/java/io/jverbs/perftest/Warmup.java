package io.jverbs.perftest;

import io.jverbs.Access;
import io.jverbs.Completion;
import io.jverbs.CompletionHandler;
import io.jverbs.CompletionQueue;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.WorkBatch;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.HdrHistogram.Histogram;

/**
 * Warms the post and poll paths before the peer is even contacted, on resources the peer never
 * sees: two queue pairs of this side's protection domain connected to each other on the same
 * device, their own completion queue and a small buffer. It runs the operations the test will
 * run (RDMA Write, Read, Send with receives, atomics, post lists) through the same jverbs
 * methods, in batches, until a batch allocates nothing on this thread. A fresh JVM spends its
 * first thousands of FFM downcalls setting up method handles and LambdaForms, which allocates
 * in the calling thread; afterwards the measured loop allocates 0 bytes. Nothing of this goes on
 * the wire to the peer, and it ends before the handshake, so the peer's waits are not affected.
 */
final class Warmup implements CompletionHandler {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();
    private static final int BATCH = 256;
    private static final int MAX_BATCHES = 24;
    private static final int DEPTH = 32;
    private final PerftestCommand c;
    private int sends;
    private int receives;
    private int failed = -1;

    /** Rounds of the measured loop itself: above C1's invocation threshold (200) for its outermost method. */
    static final int LOOP_ROUNDS = 300;
    /** Iterations per round: every method inside the loop is called thousands of times in all. */
    static final int ROUND_ITERS = 8;

    /**
     * What the warm-up did: batches run, the bytes the last batch allocated (0 when warm), the
     * rounds of the measured loop run on the loopback pair (-1: this JVM had warmed that loop
     * already), and whether the JIT went quiet after.
     */
    record Outcome(int batches, long lastBatchBytes, int loopRounds, boolean jitSettled, long millis) {
    }

    private Warmup(PerftestCommand c) {
        this.c = c;
    }

    /**
     * Warms up; never fails the test: a device that refuses the loopback pair (or a provider
     * without loopback) only leaves the JVM colder.
     *
     * @return what happened, or null when the loopback pair could not be made
     */
    static Outcome run(PerftestCommand c, Session s) {
        long t0 = System.nanoTime();
        CompletionQueue cq = null;
        RegisteredBuffer buf = null;
        QueuePair a = null;
        QueuePair b = null;
        try {
            cq = s.context.createCompletionQueue(4 * DEPTH);
            buf = s.pd.allocate(2 * Math.max(4096, Session.align64(Math.min(c.size, 1 << 20))), Access.REMOTE_WRITE,
                    Access.REMOTE_READ, Access.REMOTE_ATOMIC);
            int gidIndex = s.gid != null ? s.gid.index() : -1;
            QueuePairConfig config = new QueuePairConfig(cq, cq, DEPTH, DEPTH, s.maxInline, s.port.port(), gidIndex,
                    Math.min(DEPTH, Math.max(1, c.cqModResolved)), c.qpTimeout, 7, 7, Math.max(1, s.outReads));
            a = s.pd.createQueuePair(config);
            b = s.pd.createQueuePair(config);
            a.connect(b.localEndpoint());
            b.connect(a.localEndpoint());
            Warmup w = new Warmup(c);
            WorkBatch batch = c.postList > 1 ? a.newBatch(Math.min(c.postList, DEPTH)) : null;
            long half = buf.segment().byteSize() / 2;
            RemoteBuffer remote = new RemoteBuffer(buf.address() + half, half, buf.rkey());
            long last = -1;
            int n = 0;
            int zeroRuns = 0;
            while (n < MAX_BATCHES && zeroRuns < 2) {
                long before = THREADS.getCurrentThreadAllocatedBytes();
                w.batch(cq, a, b, buf, remote, batch);
                last = THREADS.getCurrentThreadAllocatedBytes() - before;
                n++;
                zeroRuns = last == 0 ? zeroRuns + 1 : 0;
            }
            a.close();
            b.close();
            a = null;
            b = null;
            int rounds = -1; // already warm: this JVM ran these loop rounds for an earlier run
            boolean settled = true;
            if (WARMED.add(loopKey(c))) {
                try {
                    rounds = loops(c, s);
                } catch (RuntimeException e) {
                    rounds = 0; // the loopback twins could not be made: the loop stays colder
                }
                settled = settleJit();
            }
            return new Outcome(n, last, rounds, settled, (System.nanoTime() - t0) / 1_000_000);
        } catch (RuntimeException e) {
            return null; // a colder JVM, not a failed test
        } finally {
            if (a != null) {
                a.close();
            }
            if (b != null) {
                b.close();
            }
            if (buf != null) {
                buf.close();
            }
            if (cq != null) {
                cq.close();
            }
        }
    }

    /** The loop shapes this JVM has warmed: compiled code stays, a second run of the same shape skips the rounds. */
    private static final java.util.Set<String> WARMED = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private static String loopKey(PerftestCommand c) {
        return c.kind + " " + c.verb + " cas=" + c.cas + " bidi=" + c.bidirectional + " list=" + (c.postList > 1)
                + " events=" + c.events;
    }

    /**
     * Runs the measured loop itself ({@link LatLoop} or {@link BwLoop}, the same methods the test
     * calls) {@value #LOOP_ROUNDS} times on two twins of the session connected to each other, both
     * sides in their roles (the twin that would be passive stays idle), so that C1 has compiled the
     * loop and everything it calls before the clock starts. Without this the measured loop began
     * in the interpreter and was compiled while it ran: on the emulated rig that doubled write_lat's
     * t_typical against C (the compilations are visible with {@code -XX:+PrintCompilation}).
     *
     * @return the rounds completed (fewer when a round failed: the JVM is only colder then)
     */
    private static int loops(PerftestCommand c, Session s) {
        int size = Math.max(1, Math.min(c.sizes[0], 4096));
        Session[] twins = s.loopbackPair(size);
        Session server = twins[0];
        Session client = twins[1];
        boolean send = c.verb == Verb.SEND;
        boolean oneSided = c.verb == Verb.READ || c.verb == Verb.ATOMIC;
        // the roles of the real sides: who runs a loop, and who only lends its memory
        boolean serverRuns = c.kind == Kind.LAT ? !oneSided : send || c.bidirectional;
        CyclicBarrier barrier = new CyclicBarrier(serverRuns ? 2 : 1);
        int[] done = new int[2];
        Thread peer = null;
        try {
            if (serverRuns) {
                peer = Thread.ofPlatform().daemon().name("jverbs-perftest-warmup").start(
                        () -> rounds(c, server, size, true, barrier, done));
            }
            rounds(c, client, size, false, barrier, done);
        } finally {
            if (peer != null) {
                barrier.reset(); // a side that failed early must not leave the other waiting
                try {
                    peer.join(c.completionNs() / 1_000_000 + 1000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            server.close();
            client.close();
        }
        return done[1];
    }

    /** One side's rounds; each round starts and ends together with the other side's. */
    private static void rounds(PerftestCommand c, Session twin, int size, boolean serverSide, CyclicBarrier barrier,
                               int[] done) {
        boolean send = c.verb == Verb.SEND;
        long target = twin.targetOffset(0);
        Histogram histogram = c.kind == Kind.LAT ? new Histogram(LatLoop.HIST_MAX_NS, 3) : null;
        try {
            for (int r = 0; r < LOOP_ROUNDS; r++) {
                if (c.kind == Kind.LAT) {
                    twin.memory.asSlice(target, twin.slot).fill((byte) 0); // write_lat's signal bytes start at 0
                    histogram.reset();
                    LatLoop loop = new LatLoop(c, twin, size, histogram, serverSide, false, ROUND_ITERS);
                    if (send) {
                        loop.prepostReceives();
                    }
                    barrier.await(c.completionNs(), TimeUnit.NANOSECONDS);
                    if (c.verb == Verb.WRITE) {
                        loop.runWrite();
                    } else if (send) {
                        loop.runSend();
                    } else {
                        loop.runReadOrAtomic();
                    }
                } else {
                    boolean sender = !serverSide || c.bidirectional;
                    boolean receiver = send && (serverSide || c.bidirectional);
                    BwLoop loop = new BwLoop(c, twin, size, sender, receiver, sender && !c.noPeak, false, ROUND_ITERS);
                    if (receiver) {
                        loop.prepostReceives();
                    }
                    barrier.await(c.completionNs(), TimeUnit.NANOSECONDS);
                    loop.run();
                }
                barrier.await(c.completionNs(), TimeUnit.NANOSECONDS);
                done[serverSide ? 0 : 1] = r + 1;
            }
        } catch (RuntimeException | InterruptedException | BrokenBarrierException | TimeoutException e) {
            barrier.reset();
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Waits (at most 3 s) until no compilation has finished for 90 ms: C1 compiles in the
     * background, and what the warm-up queued should be done before the clock starts.
     *
     * @return whether the JIT went quiet within the bound
     */
    private static boolean settleJit() {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
            return false;
        }
        long end = System.nanoTime() + 3_000_000_000L;
        long last = jit.getTotalCompilationTime();
        int quiet = 0;
        while (quiet < 3 && System.nanoTime() < end) {
            try {
                Thread.sleep(30);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
            long now = jit.getTotalCompilationTime();
            quiet = now == last ? quiet + 1 : 0;
            last = now;
        }
        return quiet >= 3;
    }

    /** One batch: BATCH operations of the test's verb, each waited for, through the same calls the loops make. */
    private void batch(CompletionQueue cq, QueuePair a, QueuePair b, RegisteredBuffer buf, RemoteBuffer remote, WorkBatch list) {
        MemorySegment mem = buf.segment();
        long half = mem.byteSize() / 2;
        int size = (int) Math.min(Math.max(1, c.size), half);
        for (int i = 0; i < BATCH; i++) {
            long id = ((long) i << 16) | 1;
            // what the latency loops touch besides posting and polling
            mem.set(ValueLayout.JAVA_BYTE, size - 1, (byte) i);
            if ((byte) BYTE.getAcquire(mem, half + size - 1) == (byte) 0x5a) {
                Thread.onSpinWait();
            }
            int rc;
            if (list != null && c.verb != Verb.ATOMIC) {
                list.clear();
                switch (c.verb) {
                    case WRITE -> list.write(id, buf, 0, size, remote, 0, true);
                    case READ -> list.read(id, buf, 0, size, remote, 0, true);
                    default -> list.send(id, buf, 0, size, true);
                }
                if (c.verb == Verb.SEND) {
                    post(b.receive(id, buf, half, size));
                }
                rc = a.post(list);
            } else {
                rc = switch (c.verb) {
                    case WRITE -> a.write(id, buf, 0, size, remote, 0, true);
                    case READ -> a.read(id, buf, 0, size, remote, 0, true);
                    case SEND -> {
                        post(b.receive(id, buf, half, size));
                        yield a.send(id, buf, 0, size, true);
                    }
                    case ATOMIC -> c.cas ? a.compareAndSwap(id, buf, 0, remote, 0, 0, 0, true)
                                         : a.fetchAndAdd(id, buf, 0, remote, 0, 1, true);
                };
            }
            post(rc);
            int want = sends + 1;
            int wantRecv = c.verb == Verb.SEND ? receives + 1 : receives;
            long deadline = System.nanoTime() + 2_000_000_000L;
            while (sends < want || receives < wantRecv) {
                if (cq.poll(this, 16) == 0 && System.nanoTime() > deadline) {
                    throw new IllegalStateException("warm-up: no completion");
                }
                if (failed >= 0) {
                    throw new IllegalStateException("warm-up: completion status " + failed);
                }
            }
        }
    }

    private static void post(int rc) {
        if (rc != QueuePair.OK) {
            throw new IllegalStateException("warm-up: queue full");
        }
    }

    @Override
    public void onCompletion(Completion wc) {
        if (!wc.isSuccess()) {
            failed = wc.status();
        } else if (wc.isReceive()) {
            receives++;
        } else {
            sends++;
        }
    }
}
