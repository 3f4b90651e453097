package io.jverbs.perftest;

import org.HdrHistogram.Histogram;

/**
 * A latency test's part of the {@link Run}: the records and syncs in C's order for its verb, a
 * {@link LatLoop} per size (none on a read or atomic server, which waits for its client's end of
 * run), the rows and HdrHistogram lines, the closing exchange, the log, the plot and the threshold.
 */
final class LatRun extends Run {
    /**
     * A latency run.
     *
     * @param c the test (a latency one)
     * @param streams where it prints
     */
    LatRun(TestSpec c, Streams streams) {
        super(c, streams);
    }

    @Override
    void body() {
        latency();
    }

    private void latency() {
        s.records();
        boolean send = c.verb() == Verb.SEND;
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
            printHeader(); // before the last sync, as in bandwidth()
            sync("the sync after RTR");
        }
        boolean passiveServer = c.isServer() && (c.verb() == Verb.READ || c.verb() == Verb.ATOMIC);
        if (send) {
            printHeader();
        }
        if (passiveServer) {
            // The client reads from (or runs atomics on) this side's memory meanwhile.
            awaitClientsEndOfRun();
            oob.finish(true);
            return;
        }
        report.latHead();
        Histogram last = null;
        LatStats lastStats = null;
        java.util.List<String> hdrLines = new java.util.ArrayList<>();
        java.util.Map<Long, Histogram> curves = new java.util.LinkedHashMap<>();
        long startMs = System.currentTimeMillis();
        for (int size : c.sizes()) {
            settleJit(send);
            Histogram h = new Histogram(LatLoop.HIST_MAX_NS, 3);
            LatLoop loop = new LatLoop(c, s, size, h);
            if (send) {
                loop.prepostReceives();
                sync("the sync before the run");
            }
            if (c.verb() == Verb.WRITE) {
                loop.prelink();
            }
            // an if-chain, not a switch on the enum (a switch-map class would load on its first run)
            measure(c.verb() == Verb.WRITE ? loop::runWrite : c.verb() == Verb.SEND ? loop::runSend : loop::runReadOrAtomic);
            loop.recordHistogram();
            if (c.duration()) {
                double window = (loop.windowEnd - loop.windowStart) / 1e3;
                long n = loop.windowCount;
                double avg = n == 0 ? 0 : window / n / c.verb().rttFactor();
                double tps = n / (window / 1e6);
                report.latDurationRow(size, n, avg, tps);
                outputs.latDuration(size, n, avg, tps, h);
            } else {
                lastStats = LatStats.of(size, loop.tposted, c.verb().rttFactor());
                report.latRow(lastStats);
                outputs.lat(lastStats, h);
            }
            hdrLines.add(Report.hdr(size, h, !c.duration()));
            if (c.plot() != null) {
                curves.put((long) size, h);
            }
            last = h;
        }
        report.line();
        Report.lines(streams.err(), hdrLines); // jverbs' addition: on stderr, so stdout stays C's
        if (c.verb() == Verb.WRITE) {
            oob.finish(false); // write_lat ends without a closing exchange
        } else {
            sync("the closing sync");
            oob.finish(true);
        }
        if (c.hdrLog() != null && last != null) {
            Outputs.hdrLog(c.hdrLog(), last, startMs);
        }
        if (c.plot() != null && last != null) {
            Outputs.plotLatency(c.plot(), c.name() + (c.sizeCount() > 1 ? " -a" : " " + c.firstSize() + " B") + ", jverbs "
                    + (c.isServer() ? "server" : "client"), curves, c.cReference());
        }
        if (c.maxLatP99() != null && lastStats != null && lastStats.p99() > c.maxLatP99()) {
            thresholdMiss = String.format(java.util.Locale.ROOT, "99%% latency %.2f usec is above --max-lat-p99 %.2f",
                    lastStats.p99(), c.maxLatP99());
        }
    }
}
