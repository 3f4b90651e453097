package io.jverbs.perftest;

import org.HdrHistogram.Histogram;

import java.lang.management.ManagementFactory;

/**
 * One test run from connection to close, in the order C perftest 4.5 follows for that test
 * (PERFTEST-WIRE.md §1.4): preamble, queue-pair records, connection, the syncs around the run,
 * the bandwidth report exchange and the close.
 */
final class Run {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    /** Larger cycle buffers than this from a peer are refused (C uses the page size: 4 KiB, 64 KiB on some arm64). */
    private static final int MAX_CYCLE = 16 << 20;
    private final PerftestCommand c;
    private final Report report;
    private Oob oob;
    private Session s;
    private Outputs outputs;
    private int mtu;
    private int cycle;
    private long allocated = -1;
    private String thresholdMiss;

    Run(PerftestCommand c) {
        this.c = c;
        this.report = new Report(c);
    }

    int execute() {
        s = new Session(c);
        CounterWatch counters = CounterWatch.start(s.context.name(), c.ibPort);
        try {
            if (c.isServer()) {
                report.waiting();
                oob = Oob.serve(c.tcpPort, c.connectMs(), c.handshakeMs(), () -> { });
            } else {
                oob = Oob.connect(c.host, c.tcpPort, c.connectMs(), c.handshakeMs());
            }
            try {
                preamble();
                s.allocate(cycle);
                outputs = new Outputs(c, s, mtu);
                if (c.kind == Kind.BW) {
                    bandwidth();
                } else {
                    latency();
                }
            } finally {
                oob.close();
            }
        } finally {
            s.close();
        }
        counters.finish(c, outputs);
        if (c.outJson) {
            if (allocated >= 0) {
                outputs.allocation(allocated);
            }
            outputs.write(c.outJsonFile);
        }
        if (c.allocReport && allocated >= 0) {
            c.out().println(" Allocated in the measured loop: " + allocated + " bytes");
            c.out().flush();
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
        int mine = c.mtuEnum != 0 ? c.mtuEnum : s.port.activeMtu();
        int theirs = oob.exchangeMtu(mine);
        mtu = theirs == 0 ? mine : Math.min(mine, theirs);
    }

    // ---- record exchanges ----

    private boolean accepted;

    private void records(String what) {
        QpRecord[] theirs = new QpRecord[s.qps.length];
        for (int i = 0; i < theirs.length; i++) {
            theirs[i] = oob.exchangeRecord(s.mine[i], what + " (QP " + i + ")");
        }
        acceptOnce(theirs);
    }

    private void sync(String what) {
        sync(what, c.handshakeMs());
    }

    private void sync(String what, long waitMs) {
        QpRecord r = oob.exchangeRecord(s.mine[0], what, waitMs);
        if (!accepted) {
            acceptOnce(new QpRecord[] {r});
        }
    }

    private void acceptOnce(QpRecord[] theirs) {
        if (!accepted || theirs.length == s.qps.length) {
            s.accept(theirs, c.size, cycle);
            accepted = theirs.length == s.qps.length;
        }
    }

    private void connect() {
        s.connect(mtu);
    }

    private void printHeader() {
        report.header(s, mtu);
        report.addresses(s);
    }

    // ---- bandwidth ----

    private void bandwidth() {
        s.records();
        boolean send = c.verb == Verb.SEND;
        records("the QP records");
        connect();
        if (send) {
            sync("the sync after connecting");
            records("the QP records after connecting");
        } else {
            records("the QP records after connecting");
            sync("the sync after RTR");
        }
        printHeader();
        report.bwHead();
        boolean sender = !c.isServer() || c.bidirectional;
        boolean receiver = send && (c.isServer() || c.bidirectional);
        if (c.runInfinitely) {
            infinitely(sender, receiver);
            return;
        }
        BwLoop.BwResult last = null;
        BwLoop lastLoop = null;
        for (int size : c.sizes) {
            BwLoop loop = new BwLoop(c, s, size, sender, receiver, sender && !c.noPeak);
            if (send) {
                if (receiver) {
                    loop.prepostReceives();
                }
                sync("the sync before the run");
            } else if (c.bidirectional) {
                sync("the sync before the run");
            }
            if (sender || receiver) {
                measure(loop);
            }
            if (c.bidirectional && c.sizes.length > 1 && !send) {
                sync("the sync after the run");
            }
            BwLoop.BwResult mineResult = sender || receiver ? loop.result(!sender) : null;
            if (c.bidirectional) {
                if (send && c.duration()) {
                    report.bwRow(mineResult);
                    outputs.bw(mineResult);
                } else {
                    BwLoop.BwResult sum = mineResult.plus(exchangeReport(mineResult));
                    report.bwRow(sum);
                    outputs.bw(sum);
                    last = sum;
                }
            } else if (sender || receiver) {
                report.bwRow(mineResult);
                outputs.bw(mineResult);
                last = mineResult;
            }
            if (send && c.sizes.length > 1) {
                sync("the sync after the run");
            }
            lastLoop = loop;
        }
        if (!send && !c.bidirectional) {
            if (c.isServer()) {
                // The client runs meanwhile: this wait lasts as long as its run.
                sync("the client's end of run", c.runMs());
                BwLoop.BwResult theirs = exchangeReport(new BwLoop.BwResult(0, 0, 0, 0, 0));
                report.bwRow(theirs);
                outputs.bw(theirs);
                last = theirs;
            } else {
                sync("the end-of-run sync");
                exchangeReport(last);
            }
        }
        report.line();
        sync("the closing sync");
        oob.finish(true);
        if (c.plot != null && lastLoop != null && (sender || receiver)) {
            Outputs.plotBandwidth(c.plot, c.name() + " " + last.size() + " B, jverbs " + (c.isServer() ? "server" : "client"),
                    lastLoop.binRates());
        }
        if (c.minBw != null && last != null) {
            double avgMb = c.reportGbits ? last.avg() * 125_000_000.0 / (1 << 20) : last.avg();
            if (avgMb < c.minBw) {
                thresholdMiss = String.format(java.util.Locale.ROOT, "bandwidth %.2f MB/sec is below --min-bw %.2f", avgMb, c.minBw);
            }
        }
    }

    private void infinitely(boolean sender, boolean receiver) {
        boolean send = c.verb == Verb.SEND;
        BwLoop loop = new BwLoop(c, s, c.size, sender, receiver, false);
        loop.onInterval(r -> report.bwRow(r));
        if (send) {
            if (receiver) {
                loop.prepostReceives();
            }
            sync("the sync before the run");
        } else if (c.bidirectional) {
            sync("the sync before the run");
        }
        if (sender || receiver) {
            loop.run();
        } else {
            sync("the client's run (infinite)", 0);
        }
    }

    private void measure(BwLoop loop) {
        long before = THREADS.getCurrentThreadAllocatedBytes();
        loop.run();
        long after = THREADS.getCurrentThreadAllocatedBytes();
        allocated = Math.max(allocated, 0) + (after - before);
    }

    private BwLoop.BwResult exchangeReport(BwLoop.BwResult mine) {
        long size = oob.exchangeLong(mine.size(), "the report's size");
        long iters = oob.exchangeLong(mine.iters(), "the report's iterations");
        double peak = oob.exchangeDouble(mine.peak(), "the report's peak bandwidth");
        double avg = oob.exchangeDouble(mine.avg(), "the report's average bandwidth");
        double rate = oob.exchangeDouble(mine.msgRate(), "the report's message rate");
        return new BwLoop.BwResult(size, iters, peak, avg, rate);
    }

    // ---- latency ----

    private void latency() {
        s.records();
        boolean send = c.verb == Verb.SEND;
        if (send) {
            records("the QP records");
            connect();
            sync("the sync after connecting");
            records("the QP records after connecting");
        } else {
            sync("the first sync");
            records("the QP records");
            connect();
            records("the QP records after connecting");
            sync("the sync after RTR");
        }
        boolean passiveServer = c.isServer() && (c.verb == Verb.READ || c.verb == Verb.ATOMIC);
        printHeader();
        if (passiveServer) {
            // The client reads from (or runs atomics on) this side's memory meanwhile.
            sync("the client's end of run", c.runMs());
            oob.finish(true);
            return;
        }
        report.latHead();
        Histogram last = null;
        LatStats lastStats = null;
        long startMs = System.currentTimeMillis();
        for (int size : c.sizes) {
            Histogram h = new Histogram(LatLoop.HIST_MAX_NS, 3);
            LatLoop loop = new LatLoop(c, s, size, h);
            if (send) {
                loop.prepostReceives();
                sync("the sync before the run");
            }
            long before = THREADS.getCurrentThreadAllocatedBytes();
            switch (c.verb) {
                case WRITE -> loop.runWrite();
                case SEND -> loop.runSend();
                default -> loop.runReadOrAtomic();
            }
            long after = THREADS.getCurrentThreadAllocatedBytes();
            allocated = Math.max(allocated, 0) + (after - before);
            if (c.duration()) {
                double window = (loop.windowEnd - loop.windowStart) / 1e3;
                long n = loop.windowCount;
                double avg = n == 0 ? 0 : window / n / c.verb.rttFactor();
                double tps = n / (window / 1e6);
                report.latDurationRow(size, n, avg, tps);
                outputs.latDuration(size, n, avg, tps, h);
            } else {
                lastStats = LatStats.of(size, loop.tposted, c.verb.rttFactor());
                report.latRow(lastStats);
                outputs.lat(lastStats, h);
            }
            report.hdr(h);
            last = h;
        }
        report.line();
        if (c.verb == Verb.WRITE) {
            oob.finish(false); // write_lat ends without a closing exchange
        } else {
            sync("the closing sync");
            oob.finish(true);
        }
        if (c.hdrLog != null && last != null) {
            Outputs.hdrLog(c.hdrLog, last, startMs);
        }
        if (c.plot != null && last != null) {
            Outputs.plotLatency(c.plot, c.name() + " " + c.sizes[c.sizes.length - 1] + " B, jverbs "
                    + (c.isServer() ? "server" : "client"), last);
        }
        if (c.maxLatP99 != null && lastStats != null && lastStats.p99() > c.maxLatP99) {
            thresholdMiss = String.format(java.util.Locale.ROOT, "99%% latency %.2f usec is above --max-lat-p99 %.2f",
                    lastStats.p99(), c.maxLatP99);
        }
    }
}
