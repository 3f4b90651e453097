package io.jverbs.perftest;

/**
 * A bandwidth test's part of the {@link Run}: the records and syncs in C's order for its verb, a
 * {@link BwLoop} per size (or one until killed, {@code --run_infinitely}), the rows and the
 * report exchange, the closing sync, the plot and the thresholds.
 */
final class BwRun extends Run {
    /**
     * A bandwidth run.
     *
     * @param c the test (a bandwidth one)
     * @param streams where it prints
     */
    BwRun(TestSpec c, Streams streams) {
        super(c, streams);
    }

    @Override
    void body() {
        bandwidth();
    }

    private void bandwidth() {
        s.records();
        boolean send = c.verb() == Verb.SEND;
        records("the QP records");
        connect();
        if (send) {
            sync("the sync after connecting");
            records("the QP records after connecting");
            printHeader();
            report.bwHead();
        } else {
            records("the QP records after connecting");
            // Printed before the last sync: a passive side's printing (and the JIT's compiling of
            // it) would otherwise overlap the peer's measured loop.
            printHeader();
            report.bwHead();
            sync("the sync after RTR");
        }
        boolean sender = !c.isServer() || c.bidirectional();
        boolean receiver = send && (c.isServer() || c.bidirectional());
        if (c.runInfinitely()) {
            infinitely(sender, receiver);
            return;
        }
        BwLoop.BwResult last = null;
        BwLoop lastLoop = null;
        for (int size : c.sizes()) {
            if (!sender && !receiver) {
                // A passive side sets up nothing while the peer measures; no settling of the JIT
                // either, whose JMX calls would take CPU from the peer's loop.
                continue;
            }
            settleJit(send || c.bidirectional());
            BwLoop loop = new BwLoop(c, s, size, sender, receiver, sender && !c.noPeak());
            beforeRun(loop, send, receiver);
            if (c.extras().performWarmUp() && sender && !send) {
                // C's --perform_warm_up (write, read, atomics): one send queue's depth of operations on
                // each queue pair, drained, before the measured loop
                new BwLoop(c, s, size, true, false, false, false, c.tx() / c.postList() * c.postList()).run();
            }
            measure(loop::run);
            if (c.bidirectional() && c.sizeCount() > 1 && !send) {
                sync("the sync after the run");
            }
            BwLoop.BwResult mineResult = loop.result(!sender);
            if (c.bidirectional()) {
                if (send && c.duration()) {
                    report.bwRow(mineResult);
                    outputs.bw(mineResult);
                } else {
                    BwLoop.BwResult theirs = exchangeReport(mineResult);
                    BwLoop.BwResult sum = mineResult.plus(theirs);
                    report.bwRow(sum);
                    outputs.bw(sum);
                    last = sum;
                    if (c.extras().reportBoth() && c.sizeCount() == 1) {
                        report.bothSides(mineResult, theirs);
                    }
                }
            } else {
                report.bwRow(mineResult);
                outputs.bw(mineResult);
                last = mineResult;
            }
            if (send && c.sizeCount() > 1) {
                sync("the sync after the run");
            }
            lastLoop = loop;
        }
        if (!send && !c.bidirectional()) {
            if (c.isServer()) {
                // The client runs meanwhile: this wait lasts as long as its run.
                awaitClientsEndOfRun();
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
        if (c.plot() != null && lastLoop != null && (sender || receiver)) {
            Outputs.plotBandwidth(c.plot(), c.name() + " " + last.size() + " B, jverbs " + (c.isServer() ? "server" : "client"),
                    lastLoop.binRates(), last.avg(), c.cReference());
        }
        if (c.minBw() != null && last != null) {
            double avgMb = c.reportGbits() ? last.avg() * 125_000_000.0 / (1 << 20) : last.avg();
            if (avgMb < c.minBw()) {
                thresholdMiss = String.format(java.util.Locale.ROOT, "bandwidth %.2f MB/sec is below -w/--limit_bw %.2f", avgMb,
                        c.minBw());
            }
        }
        if (c.minMsgRate() != null && last != null && last.msgRate() < c.minMsgRate()) {
            thresholdMiss = String.format(java.util.Locale.ROOT, "message rate %.6f Mpps is below -y/--limit_msgrate %.6f",
                    last.msgRate(), c.minMsgRate());
        }
    }

    /**
     * What comes between building a run's loop and starting it: a send test's receiver posts its
     * receives, and the sides sync where C's do (send tests and {@code -b}).
     */
    private void beforeRun(BwLoop loop, boolean send, boolean receiver) {
        if (send) {
            if (receiver) {
                loop.prepostReceives();
            }
            sync("the sync before the run");
        } else if (c.bidirectional()) {
            sync("the sync before the run");
        }
    }

    private void infinitely(boolean sender, boolean receiver) {
        boolean send = c.verb() == Verb.SEND;
        BwLoop loop = new BwLoop(c, s, c.size(), sender, receiver, false);
        loop.onInterval(r -> report.bwRow(r));
        beforeRun(loop, send, receiver);
        if (sender || receiver) {
            loop.run();
        } else {
            sync("the client's run (infinite)", 0);
        }
    }

    /** Swaps this side's result for the peer's, field by field, as C's report exchange. */
    private BwLoop.BwResult exchangeReport(BwLoop.BwResult mine) {
        long size = oob.exchangeLong(mine.size(), "the report's size");
        long iters = oob.exchangeLong(mine.iters(), "the report's iterations");
        double peak = oob.exchangeDouble(mine.peak(), "the report's peak bandwidth");
        double avg = oob.exchangeDouble(mine.avg(), "the report's average bandwidth");
        double rate = oob.exchangeDouble(mine.msgRate(), "the report's message rate");
        return new BwLoop.BwResult(size, iters, peak, avg, rate);
    }
}
