package io.jverbs.perftest;

import io.jverbs.cm.CmConnection;
import io.jverbs.CompletionHandler;
import io.jverbs.DatagramQueuePair;
import io.jverbs.QueuePair;
import io.jverbs.cm.RdmaCm;
import io.jverbs.cm.RdmaCmException;
import io.jverbs.ibverbs.VerbsException;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

import java.lang.management.ManagementFactory;

/**
 * One test run from connection to close, in the order C perftest 4.5 follows for that test
 * (PERFTEST-WIRE.md §1.4): preamble, queue-pair records, connection, the syncs around the run,
 * the bandwidth report exchange and the close. What both kinds share is here: the handshake, the
 * preamble, the allocation, the counters, the outputs and the close; {@link BwRun} and
 * {@link LatRun} run the records, syncs and loops of their kind ({@link #body}).
 */
abstract sealed class Run permits BwRun, LatRun {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    /** Larger cycle buffers than this from a peer are refused (C uses the page size: 4 KiB, 64 KiB on some arm64). */
    private static final int MAX_CYCLE = 16 << 20;
    /**
     * How long a server waits for its warm-up to stop once a client has come: a round of the
     * measured loop takes tens of milliseconds on the emulated rig; the client's handshake
     * timeout (4 s) must not be reached.
     */
    private static final long WARMUP_STOP_MS = 1_500;
    /** The test; replaced once by its fitted copy when the MTU is agreed ({@link TestSpec#fitDatagramSize}). */
    TestSpec c;
    final Streams streams;
    final Report report;
    Oob oob;
    Session s;
    Outputs outputs;
    private int mtu;
    private int cycle;
    private long allocated = -1;
    /** Milliseconds the JIT compiled while the measured loops ran, or -1 when the JVM does not say. */
    private long jitMs = -1;
    private static final java.lang.management.CompilationMXBean JIT = ManagementFactory.getCompilationMXBean();
    private static final boolean JIT_TIMED = JIT != null && JIT.isCompilationTimeMonitoringSupported();
    private Warmup.Outcome warmup;
    String thresholdMiss;
    private CounterWatch counters;

    /**
     * A run of one test.
     *
     * @param c the test
     * @param streams where it prints
     */
    Run(TestSpec c, Streams streams) {
        this.c = c;
        this.streams = streams;
        this.report = new Report(c, streams.out());
    }

    /**
     * The run of a test's kind.
     *
     * @param c the test
     * @param streams where it prints
     * @return a {@link BwRun} for a bandwidth test, a {@link LatRun} for a latency test
     */
    static Run of(TestSpec c, Streams streams) {
        return c.kind() == Kind.BW ? new BwRun(c, streams) : new LatRun(c, streams);
    }

    /**
     * The test's own part, once the queue pairs are made, the preamble is exchanged and the
     * buffer is allocated: the records, the syncs, the measured loops, the report and the
     * closing exchange, in C's order for this kind; a missed threshold goes into {@link #thresholdMiss}.
     */
    abstract void body();

    int execute() {
        s = new Session(c, streams);
        Warmup.WhileWaiting early = null;
        try {
            if (!c.extras().counters().isEmpty()) { // -W: opened before the connection, as C's
                report.counters = SysfsCounters.open(java.nio.file.Path.of("/sys/class/infiniband", s.context.name(),
                        "ports"), c.ibPort(), c.extras().counters());
            }
            if (c.isServer()) {
                // listens at once, as C's server does, and warms up while it waits; the client's
                // handshake goes on once the warm-up has stopped (within a round of its loop)
                early = c.noWarmup() ? null : new Warmup.WhileWaiting(c, s, streams.out());
                report.waiting();
                try {
                    oob = c.rdmaCm() || c.extras().commRdmaCm() ? CmOob.serve(s, c.tcpPort(), c.connectMs(), c.handshakeMs())
                                   : TcpOob.serve(c.tcpPort(), c.connectMs(), c.handshakeMs());
                } finally {
                    if (early != null) {
                        warmup = early.stop(WARMUP_STOP_MS);
                    }
                }
            } else {
                // before the server is contacted: it waits for its client without limit
                warmup = c.noWarmup() ? null : Warmup.run(c, s);
                oob = c.rdmaCm() || c.extras().commRdmaCm()
                        ? CmOob.connect(s, c.host(), c.tcpPort(), c.connectMs(), c.handshakeMs())
                               : TcpOob.connect(c.host(), c.tcpPort(), c.connectMs(), c.handshakeMs());
            }
            try {
                // The counters' window opens here, with the peer connected: a client warms up before
                // it contacts the server and a server's warm-up has stopped, so its loopback traffic
                // (tens of thousands of packets, on a port both sides share on one node) stays out
                // of the deltas.
                counters = CounterWatch.start(s.context.name(), c.ibPort());
                preamble();
                s.allocate(cycle, c.size());
                if (c.rdmaCm()) {
                    connectWithRdmaCm();
                }
                outputs = new Outputs(c, s, mtu);
                body();
            } finally {
                try {
                    for (CmConnection d : data) {
                        d.close();
                    }
                } finally {
                    oob.close();
                }
            }
        } finally {
            if (early != null) {
                early.stop(c.completionNs() / 1_000_000 + 2_000); // its twins belong to the session
            }
            if (c.extras().waitDestroySec() > 0) {
                streams.out().printf(" Waiting %d seconds before releasing resources...%n", c.extras().waitDestroySec());
                streams.out().flush();
                try {
                    Thread.sleep(c.extras().waitDestroySec() * 1000L);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            s.close();
        }
        counters.finish(streams.err(), outputs); // jverbs' addition: on stderr, so stdout stays C's
        if (c.outJson()) {
            if (allocated >= 0) {
                outputs.allocation(allocated, jitMs);
            }
            outputs.write(c.outJsonFile());
        }
        if (c.allocReport() && !c.noWarmup() && (early == null || !early.reported())) {
            streams.out().println(warmup == null ? " Warm-up: the loopback queue pairs could not be made (none ran)"
                    : warmup.summary());
        }
        if (c.allocReport() && allocated >= 0) {
            streams.out().println(" Allocated in the measured loop: " + allocated + " bytes");
            streams.out().flush();
        }
        if (thresholdMiss != null) {
            throw new PerftestException(thresholdMiss);
        }
        return 0;
    }

    private void preamble() {
        oob.exchangeVersion();
        int page = 4096;
        int theirCycle = oob.exchangeInt(page, "the cycle buffer size");
        if (theirCycle < 1 || theirCycle > MAX_CYCLE) {
            throw new PerftestException("the peer's cycle buffer size " + theirCycle + " is implausible (1.." + MAX_CYCLE + ")");
        }
        cycle = Math.max(page, theirCycle);
        int theirLine = oob.exchangeInt(64, "the cache line size");
        if (theirLine < 1 || theirLine > 4096) {
            throw new PerftestException("the peer's cache line size " + theirLine + " is implausible (1..4096)");
        }
        int mine = s.mtuEnum();
        int theirs = oob.exchangeMtu(mine);
        mtu = theirs == 0 ? mine : Math.min(mine, theirs);
        TestSpec.DatagramFit fit = c.fitDatagramSize(128 << mtu);
        c = fit.spec();
        if (fit.note() != null) {
            streams.err().println(fit.note()); // on stderr, as C's
            streams.err().flush();
        }
    }

    // ---- record exchanges ----

    private boolean accepted;

    /** Exchanges every queue pair's record with the peer's ({@code what} names the wait in errors). */
    void records(String what) {
        QpRecord[] theirs = new QpRecord[s.count()];
        for (int i = 0; i < theirs.length; i++) {
            theirs[i] = oob.exchangeRecord(s.mine[i], what + " (QP " + i + ")");
        }
        acceptOnce(theirs);
    }

    /** A sync: one record exchange within the handshake timeout. */
    void sync(String what) {
        sync(what, c.handshakeMs());
    }

    /** A sync within {@code waitMs} (0: no limit). */
    void sync(String what, long waitMs) {
        QpRecord r = oob.exchangeRecord(s.mine[0], what, waitMs);
        if (!accepted) {
            acceptOnce(new QpRecord[] {r});
        }
    }

    /**
     * A passive server's wait for its client's end of run: up to {@code --run_timeout}, and, where
     * the port's counters can be read (TCP handshake), no longer than {@code --completion_timeout}
     * after the last move of any counter of this side's port: a client that stopped mid-run ends
     * the server within that bound (10 s by default), not 600 s.
     */
    void awaitClientsEndOfRun() {
        java.util.function.LongSupplier activity = counters != null && !c.rdmaCm() && !c.extras().commRdmaCm()
                ? counters.activity() : null;
        oob.watch(activity, Math.max(1, c.completionNs() / 1_000_000));
        try {
            sync("the client's end of run", c.runMs());
        } finally {
            oob.watch(null, 0);
        }
    }

    private void acceptOnce(QpRecord[] theirs) {
        if (!accepted || theirs.length == s.count()) {
            s.accept(theirs, c.size(), cycle, !c.rdmaCm());
            accepted = theirs.length == s.count();
        }
    }

    /** Connects the queue pairs to the peer's records, unless rdma_cm connected them already ({@code -R}). */
    void connect() {
        if (!c.rdmaCm()) {
            s.connect(mtu); // -R: rdma_cm connected the queue pairs already
        }
    }

    // ---- -R: the data queue pairs through rdma_cm (PERFTEST-WIRE.md §2) ----

    private final java.util.List<CmConnection> data = new java.util.ArrayList<>();

    /**
     * As C's create_rdma_cm_connection: one (empty) record exchange, then the client connects
     * each queue pair to the server's port, which listens again for as many requests; one more
     * empty exchange. The server listens before it answers the first exchange, so a client that
     * connects right after it finds the listener (C's client retries 10 × 100 ms anyway).
     */
    private void connectWithRdmaCm() {
        QpRecord empty = new QpRecord(0, 0, 0, 0, 0, 0, new byte[16], 0);
        if (c.ud()) {
            resolveDatagramsWithRdmaCm(empty);
            return;
        }
        if (c.isServer()) {
            try (RdmaCm.Listener listener = CmOob.listen(c.tcpPort())) {
                oob.exchangeRecord(empty, "the sync before the rdma_cm connections");
                for (int i = 0; i < s.count(); i++) {
                    try {
                        data.add(listener.accept(s.qps[i], Duration.ofMillis(c.handshakeMs()), controlPeerOnly("QP " + i)));
                    } catch (RdmaCmException | VerbsException | IllegalStateException e) {
                        throw acceptFailed("the client's rdma_cm connection of QP " + i, e);
                    }
                }
            }
        } else {
            oob.exchangeRecord(empty, "the sync before the rdma_cm connections");
            for (int i = 0; i < s.count(); i++) {
                data.add(CmOob.connectRetrying(s.qps[i], c.host(), c.tcpPort(), c.handshakeMs(),
                        "the rdma_cm connection of QP " + i, "--handshake_timeout"));
            }
        }
        oob.exchangeRecord(empty, "the sync after the rdma_cm connections");
    }

    /**
     * The server's filter of data connection requests: only the handshake's peer address
     * ({@link DataPeerCheck}); every other request is named on stderr, rejected, and not counted.
     */
    private java.util.function.Predicate<java.net.InetSocketAddress> controlPeerOnly(String what) {
        java.net.InetAddress control = oob.peerAddress();
        return requester -> {
            if (DataPeerCheck.admits(control, requester)) {
                return true;
            }
            streams.err().println(c.name() + ": " + DataPeerCheck.refusal(what, control, requester));
            streams.err().flush();
            return false;
        };
    }

    /** The error of a server-side accept: a wait that ran out says so and names its option; anything else is a failure. */
    private PerftestException acceptFailed(String what, RuntimeException e) {
        boolean late = e instanceof RdmaCmException r && r.errno() == io.jverbs.ibverbs.Errno.ETIMEDOUT;
        return new PerftestException(what + (late ? " did not arrive in time (" + Oob.seconds(c.handshakeMs())
                + ", --handshake_timeout): " : " failed: ") + e.getMessage(), e);
    }

    /** wr_id of the first datagram's receive and send (below the loops' ids, which start at 0 per QP: never polled together). */
    private static final long FIRST_DATAGRAM_ID = Long.MAX_VALUE - 7;

    /**
     * {@code -c UD -R}, as C's rdma_cm UD mode: the client resolves each server datagram queue pair
     * through rdma_cm's UDP port space (the answer carries its number and Q_Key, and the path);
     * when the server must send too (latency tests, -b), the client's first datagram, a send with
     * its queue pair number as immediate, tells the server where to answer, and the server makes
     * its address handle from that datagram's completion and routing header
     * ({@code ibv_create_ah_from_wc}). The server posts that receive before it answers the
     * request, since a datagram that finds no receive is dropped. Every wait has the handshake
     * bound (C's waits have none).
     */
    private void resolveDatagramsWithRdmaCm(QpRecord empty) {
        boolean firstDatagram = c.kind() == Kind.LAT || c.bidirectional();
        s.destinations = new DatagramQueuePair.Destination[s.count()];
        if (c.isServer()) {
            try (RdmaCm.Listener listener = CmOob.listen(c.tcpPort(), true)) {
                oob.exchangeRecord(empty, "the sync before the rdma_cm connections");
                for (int i = 0; i < s.count(); i++) {
                    DatagramQueuePair qp = s.datagrams[i];
                    if (firstDatagram && qp.receive(FIRST_DATAGRAM_ID, s.buffer, 0, DatagramQueuePair.GRH_BYTES + 4)
                            != QueuePair.OK) {
                        throw new PerftestException("Couldn't post the receive of the client's first datagram: the receive queue is full");
                    }
                    try {
                        listener.acceptDatagram(qp, Duration.ofMillis(c.handshakeMs()), controlPeerOnly("datagram QP " + i));
                    } catch (RdmaCmException | VerbsException | IllegalStateException e) {
                        throw acceptFailed("the client's rdma_cm resolution of datagram QP " + i, e);
                    }
                    if (firstDatagram) {
                        s.destinations[i] = awaitFirst(qp, true, "the client's first datagram (its QP number) on QP " + i);
                    }
                }
                // the answered requests' ids live until the client has its answers
                oob.exchangeRecord(empty, "the sync after the rdma_cm connections");
            }
            return;
        }
        oob.exchangeRecord(empty, "the sync before the rdma_cm connections");
        for (int i = 0; i < s.count(); i++) {
            DatagramQueuePair qp = s.datagrams[i];
            DatagramQueuePair.Address server = CmOob.resolveRetrying(qp, c.host(), c.tcpPort(), c.handshakeMs(),
                    "the rdma_cm resolution of datagram QP " + i, "--handshake_timeout");
            try {
                s.destinations[i] = qp.destination(server);
            } catch (VerbsException e) {
                throw new PerftestException("Failed to create the address handle of QP " + qp.number() + ": " + e.getMessage(), e);
            }
            if (firstDatagram) {
                if (qp.sendWithImmediate(FIRST_DATAGRAM_ID, s.destinations[i], s.buffer, 0, 4, qp.number()) != QueuePair.OK) {
                    throw new PerftestException("Couldn't send the first datagram of QP " + i + ": the send queue is full");
                }
                awaitFirst(qp, false, "the completion of this side's first datagram on QP " + i);
            }
        }
        oob.exchangeRecord(empty, "the sync after the rdma_cm connections");
    }

    /**
     * Polls the session's queue until the first datagram's receive ({@code receive}: returns the
     * address handle back to its sender) or send completes, within the handshake bound.
     */
    private DatagramQueuePair.Destination awaitFirst(DatagramQueuePair qp, boolean receive, String what) {
        DatagramQueuePair.Destination[] reply = new DatagramQueuePair.Destination[1];
        String[] failure = new String[1];
        boolean[] done = new boolean[1];
        CompletionHandler handler = wc -> {
            if (wc.wrId() != FIRST_DATAGRAM_ID || failure[0] != null) {
                return;
            }
            if (!wc.isSuccess()) {
                failure[0] = wc.statusName();
            } else if (wc.isReceive() == receive) {
                try {
                    reply[0] = receive ? qp.replyTo(wc, s.buffer, 0, s.qkey()) : null;
                    done[0] = true;
                } catch (RuntimeException e) {
                    failure[0] = e.getMessage();
                }
            }
        };
        long deadline = System.nanoTime() + c.handshakeMs() * 1_000_000;
        for (int idle = 0; !done[0]; idle++) {
            s.cq.poll(handler, 4);
            if (failure[0] != null) {
                throw new PerftestException(what + " failed: " + failure[0]);
            }
            if (!done[0] && System.nanoTime() > deadline) {
                throw new PerftestException(what + " did not come within " + Oob.seconds(c.handshakeMs())
                        + " (--handshake_timeout)");
            }
            if (idle > 10_000) {
                LockSupport.parkNanos(200_000); // a slow peer (TCG) needs this CPU more than the poll does
            }
        }
        return reply[0];
    }

    /** Prints C's header box and the address lines. */
    void printHeader() {
        report.header(s, mtu);
        report.addresses(s);
    }


    /**
     * Before each measured loop (unless {@code --no_warmup}): waits, at most
     * {@link Warmup#SETTLE_BEFORE_RUN_NS} (6 s), until the JIT has nothing compiling or queued. The
     * run's own set-up (the command line, the handshake, the report's formatting, and in a long
     * JVM the previous run's JSON) queues compilations of JDK and library code, and on a 2-vCPU
     * guest a compiler thread busy during the loop takes the CPU rxe's kernel work needs: in one
     * boot the C2 compiler thread used as much CPU as the measuring thread during most of
     * compare-perftest's Java bandwidth loops, which ran at 0.5-0.7x C; the runs it left alone
     * were at C's rate. The passive side waits meanwhile in its socket read (C without limit,
     * Java within its timeouts); where a sync with the peer follows (send tests, -b), the wait
     * stays within half the handshake timeout the peer's sync allows.
     *
     * @param syncFollows whether the peer waits for this side in a sync before the loop
     */
    void settleJit(boolean syncFollows) {
        if (!c.noWarmup()) {
            long bound = Warmup.SETTLE_BEFORE_RUN_NS;
            if (syncFollows) {
                bound = Math.min(bound, c.handshakeMs() * 1_000_000L / 2);
            }
            Warmup.settleJit(bound);
        }
    }

    /**
     * Runs a measured loop inside a {@link MeasuredLoopEvent}, adding what it allocated on this
     * thread to {@link #allocated} and the JIT's compile time meanwhile to {@link #jitMs}. The caller makes {@code loop} before this runs, so its own
     * allocation is not counted (nor the event's, made before the count starts).
     */
    void measure(Runnable loop) {
        MeasuredLoopEvent event = new MeasuredLoopEvent();
        event.begin();
        long jitBefore = JIT_TIMED ? JIT.getTotalCompilationTime() : 0;
        CpuUtil cpu = c.extras().cpuUtil() ? CpuUtil.window(c.durationSec(), c.marginSec()) : null;
        long before = THREADS.getCurrentThreadAllocatedBytes();
        loop.run();
        long after = THREADS.getCurrentThreadAllocatedBytes();
        if (cpu != null) {
            report.cpuUtil = cpu.percent();
            if (outputs != null) {
                outputs.cpuUtil = report.cpuUtil;
            }
        }
        long jitAfter = JIT_TIMED ? JIT.getTotalCompilationTime() : 0;
        event.end();
        allocated = Math.max(allocated, 0) + (after - before);
        if (JIT_TIMED) {
            jitMs = Math.max(jitMs, 0) + (jitAfter - jitBefore);
        }
        if (event.shouldCommit()) {
            event.test = c.name();
            event.allocated = after - before;
            event.commit();
        }
    }
}
