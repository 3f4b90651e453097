package io.jverbs.perftest;

import io.jverbs.Completion;
import io.jverbs.CompletionHandler;
import io.jverbs.QueuePair;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.WorkBatch;
import org.HdrHistogram.Histogram;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import javax.management.JMException;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Warms the post and poll paths before the peer is even contacted, on resources the peer never
 * sees: two twins of the session ({@link Session#loopbackPair}), each with its own queue pair,
 * completion queue and buffer, connected to each other on the same device. First it runs the
 * operations the test will run (RDMA Write, Read, Send with receives, atomics, post lists)
 * through the same jverbs methods, in batches, until a batch allocates nothing on this thread: a
 * fresh JVM spends its first thousands of FFM downcalls setting up method handles and
 * LambdaForms, which allocates in the calling thread. Then it runs the measured loop itself
 * ({@link #loops}), so that it is compiled before the clock starts. Nothing of this goes on the
 * wire to the peer. A client warms up before it contacts the server; a server warms up while it
 * waits for its client ({@link WhileWaiting}) and stops within a round when the client comes.
 */
final class Warmup implements CompletionHandler {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();
    private static final int BATCH = 256;
    private static final int MAX_BATCHES = 24;
    private final TestSpec c;
    private int sends;
    private int receives;
    private int failed = -1;

    /**
     * Rounds of the measured loop itself: above the invocation threshold of its outermost method
     * under the launcher's C2-only flags (10,000 scaled by 0.02 for io.jverbs: 200), and C1's (200)
     * when a user brings tiered compilation back.
     */
    static final int LOOP_ROUNDS = 300;
    /**
     * Iterations per latency round, 19,200 in all. Under the launcher's C2-only flags the loop's
     * method passes its scaled invocation threshold (200 calls) within {@link #LOOP_ROUNDS}, and
     * its scaled back-edge threshold (a few hundred) in the first rounds. The count was set under
     * tiered compilation, and stays for a user who brings it back: there C1-profiled code
     * notifies the compiler every 8,192 back-edges, and with 8 iterations per round (2,400 in
     * all) {@code -XX:+PrintCompilation} showed LatLoop.runReadOrAtomic compiled by C2 while
     * read_lat's first run measured (618 ms of compilation in its loop).
     */
    static final int LAT_ROUND_ITERS = 64;
    /** Iterations per bandwidth round, 9,600 in all: past the same thresholds ({@link #LAT_ROUND_ITERS}). */
    static final int BW_ROUND_ITERS = 32;

    /**
     * What the warm-up did: batches run, the bytes the last batch allocated (0 when warm), the
     * rounds of the measured loop run on the loopback pair (-1: this JVM had warmed that loop
     * already), and whether the JIT went quiet after.
     */
    record Outcome(int batches, long lastBatchBytes, int loopRounds, boolean jitSettled, long millis) {
        /** The {@code --alloc_report} line. */
        String summary() {
            return " Warm-up: " + batches + " batches of " + BATCH + " operations on a loopback pair, the last allocated "
                    + lastBatchBytes + " bytes; " + (loopRounds < 0 ? "the measured loop already warm in this JVM"
                    : loopRounds + " rounds of the measured loop") + "; JIT " + (jitSettled ? "quiet" : "still busy")
                    + " after " + millis + " ms";
        }
    }

    private Warmup(TestSpec c) {
        this.c = c;
    }

    /**
     * Warms up; never fails the test: a device that refuses the loopback pair (or a provider
     * without loopback) only leaves the JVM colder.
     *
     * @return what happened, or null when the loopback pair could not be made
     */
    static Outcome run(TestSpec c, Session s) {
        return run(c, s, new AtomicBoolean());
    }

    /**
     * A server's warm-up, on a thread of its own while the server waits for its client: it
     * listens at once, as C's does, and whatever the warm-up finished before the client came is
     * compiled when the clock starts. {@link #stop} ends it at the next batch or round of the
     * measured loop (tens of milliseconds on the emulated rig), before the handshake goes on, so
     * its loopback traffic never overlaps the peer's and stays out of the counters' window.
     */
    static final class WhileWaiting {
        private final AtomicBoolean stop = new AtomicBoolean();
        private final Thread thread;
        private volatile Outcome outcome;

        private volatile boolean reported;

        /**
         * Starts the warm-up. With {@code --alloc_report} the server prints its line as soon as
         * the warm-up ends on its own, so a script may start its client once the server is warm.
         */
        WhileWaiting(TestSpec c, Session s, java.io.PrintWriter out) {
            thread = Thread.ofPlatform().daemon().name("jverbs-perftest-warmup").start(() -> {
                Outcome o = run(c, s, stop);
                outcome = o;
                if (c.allocReport() && o != null && !stop.get()) {
                    out.println(o.summary() + "; waiting for a client");
                    out.flush();
                    reported = true;
                }
            });
        }

        /** Whether the {@code --alloc_report} line was printed already. */
        boolean reported() {
            return reported;
        }

        /**
         * Stops the warm-up and waits at most {@code boundMs} for it to end.
         *
         * @return what it did, or null when it could not make its twins or has not ended yet
         */
        Outcome stop(long boundMs) {
            stop.set(true);
            try {
                thread.join(Math.max(1, boundMs));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return outcome;
        }
    }

    private static Outcome run(TestSpec c, Session s, AtomicBoolean stop) {
        long t0 = System.nanoTime();
        int size = Math.max(1, Math.min(c.firstSize(), 4096));
        if (c.ud()) {
            // a datagram is at most the MTU (the run itself cuts its size to the MTU the sides agree on)
            size = Math.min(size, 128 << s.mtuEnum());
        }
        Session[] twins;
        try {
            twins = s.loopbackPair(size);
        } catch (RuntimeException e) {
            return null; // a colder JVM, not a failed test
        }
        Session server = twins[0];
        Session client = twins[1];
        try {
            Warmup w = new Warmup(c);
            // -c UD: the batches below send single datagrams; the loop rounds then post the datagram lists
            WorkBatch batch = c.postList() > 1 && !c.ud() ? client.qps[0].newBatch(Math.min(c.postList(), c.tx())) : null;
            long last = -1;
            int n = 0;
            int zeroRuns = 0;
            while (n < MAX_BATCHES && zeroRuns < 2 && !stop.get()) {
                long before = THREADS.getCurrentThreadAllocatedBytes();
                w.batch(client, server, size, batch, stop);
                last = THREADS.getCurrentThreadAllocatedBytes() - before;
                n++;
                zeroRuns = last == 0 ? zeroRuns + 1 : 0;
            }
            int rounds = -1; // already warm: this JVM ran these loop rounds for an earlier run
            boolean settled = true;
            String key = loopKey(c);
            while (!stop.get()) {
                CompletableFuture<Boolean> mine = new CompletableFuture<>();
                CompletableFuture<Boolean> other = WARMED.putIfAbsent(key, mine);
                if (other == null) {
                    boolean done = false;
                    try {
                        rounds = loops(c, server, client, size, stop);
                        done = rounds == LOOP_ROUNDS;
                        settled = settleJit(SETTLE_NS, stop);
                    } finally {
                        if (!done) {
                            WARMED.remove(key, mine); // a round failed or was stopped: the next run tries again
                        }
                        mine.complete(done);
                    }
                    break;
                }
                // This loop was warmed, or is being warmed, by another run in this JVM (a server and
                // its client in one process): wait for that instead of competing for the CPU.
                try {
                    if (other.get(100, TimeUnit.MILLISECONDS)) {
                        break;
                    }
                } catch (TimeoutException e) {
                    // still running: look at stop, then wait on
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                } catch (java.util.concurrent.ExecutionException e) {
                    break; // never completed exceptionally; a colder JVM at worst
                }
            }
            return new Outcome(n, last, rounds, settled, (System.nanoTime() - t0) / 1_000_000);
        } catch (RuntimeException e) {
            return null; // a colder JVM, not a failed test
        } finally {
            server.close();
            client.close();
        }
    }

    /**
     * The loop shapes this JVM has warmed (true), or is warming (not completed yet): compiled code
     * stays, so a second run of the same shape skips the rounds, and a run that finds them under
     * way waits for them; a warm-up that failed or was stopped leaves no entry. The (warm-up) size is part of the shape: the bandwidth loop takes another
     * branch for messages over half the cycle buffer (one address, no stepping), and a first run
     * at 4 KiB after warming at 64 B trapped out of its compiled loop (393 ms of compilation
     * inside the measured loop in compare-perftest).
     */
    private static final ConcurrentHashMap<String, CompletableFuture<Boolean>> WARMED = new ConcurrentHashMap<>();

    private static String loopKey(TestSpec c) {
        return c.kind() + " " + c.verb() + " cas=" + c.cas() + " bidi=" + c.bidirectional() + " list=" + (c.postList() > 1)
                + " events=" + c.events() + " ud=" + c.ud() + " size=" + Math.min(c.firstSize(), 4096);
    }

    /**
     * Runs the measured loop itself ({@link LatLoop} or {@link BwLoop}, the same methods the test
     * calls) {@value #LOOP_ROUNDS} times on the twins, both sides in their roles (the twin that would be passive stays idle), so that the JIT has compiled the
     * loop and everything it calls before the clock starts. Without this the measured loop began
     * in the interpreter and was compiled while it ran: on the emulated rig that doubled write_lat's
     * t_typical against C (the compilations are visible with {@code -XX:+PrintCompilation}).
     *
     * @return the rounds completed (fewer when a round failed: the JVM is only colder then)
     */
    private static int loops(TestSpec c, Session server, Session client, int size, AtomicBoolean stop) {
        boolean send = c.verb() == Verb.SEND;
        boolean oneSided = c.verb() == Verb.READ || c.verb() == Verb.ATOMIC;
        // the roles of the real sides: who runs a loop, and who only lends its memory
        boolean serverRuns = c.kind() == Kind.LAT ? !oneSided : send || c.bidirectional();
        // the last twin to reach a round's start decides for both whether the round runs, so a
        // stop never leaves one twin in a round the other has left
        boolean[] halt = new boolean[1];
        CyclicBarrier barrier = new CyclicBarrier(serverRuns ? 2 : 1, () -> halt[0] = stop.get());
        int[] done = new int[2];
        Thread peer = null;
        try {
            if (serverRuns) {
                peer = Thread.ofPlatform().daemon().name("jverbs-perftest-warmup").start(
                        () -> rounds(c, server, size, true, barrier, halt, done));
            }
            // the client twin decides when to stop; the finally's reset frees the server twin
            rounds(c, client, size, false, barrier, halt, done);
        } finally {
            if (peer != null) {
                barrier.reset(); // a side that failed early must not leave the other waiting
                try {
                    peer.join(c.completionNs() / 1_000_000 + 1000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        return done[1];
    }

    /** One side's rounds; each round starts and ends together with the other side's. */
    private static void rounds(TestSpec c, Session twin, int size, boolean serverSide, CyclicBarrier barrier,
                               boolean[] halt, int[] done) {
        boolean send = c.verb() == Verb.SEND;
        long target = twin.targetOffset(0);
        Histogram histogram = c.kind() == Kind.LAT ? new Histogram(LatLoop.HIST_MAX_NS, 3) : null;
        try {
            for (int r = 0; r < LOOP_ROUNDS; r++) {
                if (c.kind() == Kind.LAT) {
                    twin.memory.asSlice(target, twin.slot).fill((byte) 0); // write_lat's signal bytes start at 0
                    histogram.reset();
                    LatLoop loop = new LatLoop(c, twin, size, histogram, serverSide, false, latRoundIters(c, r));
                    if (send) {
                        loop.prepostReceives();
                    }
                    barrier.await(c.completionNs(), TimeUnit.NANOSECONDS);
                    if (halt[0]) {
                        return;
                    }
                    if (c.verb() == Verb.WRITE) {
                        loop.runWrite();
                    } else if (send) {
                        loop.runSend();
                    } else {
                        loop.runReadOrAtomic();
                    }
                    loop.recordHistogram();
                } else {
                    boolean sender = !serverSide || c.bidirectional();
                    boolean receiver = send && (serverSide || c.bidirectional());
                    BwLoop loop = new BwLoop(c, twin, size, sender, receiver, sender && !c.noPeak(), false, bwRoundIters(c, r));
                    if (receiver) {
                        loop.prepostReceives();
                    }
                    barrier.await(c.completionNs(), TimeUnit.NANOSECONDS);
                    if (halt[0]) {
                        return;
                    }
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
     * Iterations of latency round {@code r}: {@value #LAT_ROUND_ITERS}, and for send tests on every
     * 16th round more than the receive queue holds ({@code -r}), so that the loop also re-posts
     * receives, as every real run longer than the receive depth does. Without those rounds send_lat's
     * first measured run began with LatLoop.runSend "made not entrant: uncommon trap" and spent
     * 1.6-2.5 s of compilation inside its loop.
     */
    static int latRoundIters(TestSpec c, int r) {
        return c.verb() == Verb.SEND && r % 16 == 15 ? c.rx() + LAT_ROUND_ITERS : LAT_ROUND_ITERS;
    }

    /**
     * Iterations of bandwidth round {@code r}: {@value #BW_ROUND_ITERS}, and on every 16th round
     * more than the send queue holds, so the loop also leaves its posting through a full window,
     * as every real run does. Without those rounds C2 compiled that exit as never taken, and the
     * first measured run of each case trapped out of the compiled loop into the interpreter
     * ({@code -XX:+PrintCompilation}: BwLoop.postSends and QueuePair.write "made not entrant:
     * uncommon trap" inside the loop) and recompiled it while measuring. In send tests the long
     * rounds also exceed the receive queue, so the receiver re-posts: while they stayed under the
     * receive depth of 512, send_bw 64 KiB's first runs trapped out of BwLoop.run and compiled for
     * 0.9-1.1 s inside the measured loop.
     */
    static int bwRoundIters(TestSpec c, int r) {
        // -c UD: a datagram that finds no receive is dropped and its round would wait for it, so
        // the long rounds stay within the receive depth there (only the send window is exceeded)
        int depth = c.ud() ? Math.max(0, Math.min(c.tx(), c.rx() - BW_ROUND_ITERS))
                : c.verb() == Verb.SEND ? Math.max(c.tx(), c.rx()) : c.tx();
        return r % 16 == 15 ? depth + BW_ROUND_ITERS : BW_ROUND_ITERS;
    }

    /** How long the warm-up waits at most for the compile queues to drain. */
    static final long SETTLE_NS = 10_000_000_000L;
    /**
     * How long {@link Run} waits at most before each measured loop: inside the peer's completion
     * timeout (10 s by default), which covers this side's start. A C2 compilation of the previous
     * run's report (its peak search) took 2.7 s of the emulated guest: a 2 s bound let it run on
     * into the next loop.
     */
    static final long SETTLE_BEFORE_RUN_NS = 6_000_000_000L;

    /**
     * Waits (at most {@code boundNs}) until the JIT has nothing left to do: no compilation in
     * progress and every compile queue empty, seen three times 30 ms apart (HotSpot's
     * {@code Compiler.queue} diagnostic command, as {@code jcmd PID Compiler.queue} prints it).
     * What the warm-up queued should be compiled before the clock starts: a C2 compilation takes
     * hundreds of milliseconds of the emulated guest's CPU. Where the diagnostic command is not
     * available, it falls back to the total compilation time not moving.
     *
     * @param boundNs the longest wait
     * @param stop     ends the wait early when set
     * @return whether the JIT went quiet within the bound
     */
    static boolean settleJit(long boundNs) {
        return settleJit(boundNs, new AtomicBoolean());
    }

    private static boolean settleJit(long boundNs, AtomicBoolean stop) {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        long end = System.nanoTime() + boundNs;
        long last = jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : -1;
        int quiet = 0;
        while (quiet < 3 && System.nanoTime() < end && !stop.get()) {
            try {
                Thread.sleep(30);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
            Boolean idle = compilerIdle();
            if (idle == null) {
                if (last < 0) {
                    return false;
                }
                long now = jit.getTotalCompilationTime();
                idle = now == last;
                last = now;
            }
            quiet = idle ? quiet + 1 : 0;
        }
        return quiet >= 3;
    }

    /**
     * Whether HotSpot compiles nothing and has nothing queued, from the {@code compilerQueue}
     * diagnostic command: its output is headers ("Current compiles:", "C1 compile queue:", ...),
     * "Empty" and blank lines, plus one line per task in progress or queued.
     *
     * @return the answer, or null when the command is not available
     */
    static Boolean compilerIdle() {
        String out;
        try {
            Object r = ManagementFactory.getPlatformMBeanServer().invoke(DIAGNOSTIC, "compilerQueue",
                    new Object[] {null}, new String[] {String[].class.getName()});
            out = String.valueOf(r);
        } catch (JMException | RuntimeException e) {
            return null;
        }
        for (String line : out.split("\\R")) {
            String t = line.strip();
            if (!t.isEmpty() && !t.endsWith(":") && !t.equals("Empty")) {
                return false;
            }
        }
        return true;
    }

    private static final ObjectName DIAGNOSTIC;

    static {
        try {
            DIAGNOSTIC = new ObjectName("com.sun.management:type=DiagnosticCommand");
        } catch (MalformedObjectNameException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * One batch: BATCH operations of the test's verb from the client twin to the server twin, each
     * waited for, through the same calls the loops make.
     */
    private void batch(Session client, Session server, int size, WorkBatch list, AtomicBoolean stop) {
        QueuePair a = client.qps.length > 0 ? client.qps[0] : null; // none under -c UD (datagrams)
        QueuePair b = server.qps.length > 0 ? server.qps[0] : null;
        RegisteredBuffer buf = client.buffer;
        MemorySegment mem = client.memory;
        RemoteBuffer remote = client.remote[0];
        long target = client.targetOffset(0);
        long serverTarget = server.targetOffset(0);
        for (int i = 0; i < BATCH && !stop.get(); i++) {
            long id = ((long) i << 16) | 1;
            // what the latency loops touch besides posting and polling
            mem.set(ValueLayout.JAVA_BYTE, size - 1, (byte) i);
            if ((byte) BYTE.getAcquire(mem, target + size - 1) == (byte) 0x5a) {
                Thread.onSpinWait();
            }
            int rc;
            if (client.datagrams != null) { // -c UD: send tests only
                post(server.datagrams[0].receive(id, server.buffer, serverTarget, server.receiveLength(size)));
                rc = client.datagrams[0].send(id, client.destinations[0], buf, 0, size);
            } else if (list != null) {
                list.clear();
                switch (c.verb()) {
                    case WRITE -> list.write(id, buf, 0, size, remote, 0, true);
                    case READ -> list.read(id, buf, 0, size, remote, 0, true);
                    case ATOMIC -> {
                        if (c.cas()) {
                            list.compareAndSwap(id, buf, 0, remote, 0, 0, 0, true);
                        } else {
                            list.fetchAndAdd(id, buf, 0, remote, 0, 1, true);
                        }
                    }
                    default -> list.send(id, buf, 0, size, true);
                }
                if (c.verb() == Verb.SEND) {
                    post(b.receive(id, server.buffer, serverTarget, size));
                }
                rc = a.post(list);
            } else {
                rc = switch (c.verb()) {
                    case WRITE -> a.write(id, buf, 0, size, remote, 0, true);
                    case READ -> a.read(id, buf, 0, size, remote, 0, true);
                    case SEND -> {
                        post(b.receive(id, server.buffer, serverTarget, size));
                        yield a.send(id, buf, 0, size, true);
                    }
                    case ATOMIC -> c.cas() ? a.compareAndSwap(id, buf, 0, remote, 0, 0, 0, true)
                                         : a.fetchAndAdd(id, buf, 0, remote, 0, 1, true);
                };
            }
            post(rc);
            int want = sends + 1;
            int wantRecv = c.verb() == Verb.SEND ? receives + 1 : receives;
            long deadline = System.nanoTime() + 2_000_000_000L;
            while (sends < want || receives < wantRecv) {
                // sends complete on the client twin's queue, receives on the server twin's
                if (client.cq.poll(this, 16) + server.cq.poll(this, 16) == 0 && System.nanoTime() > deadline) {
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
