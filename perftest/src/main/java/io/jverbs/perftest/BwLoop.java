package io.jverbs.perftest;

import io.jverbs.Completion;
import io.jverbs.CompletionHandler;
import io.jverbs.CompletionQueue;
import io.jverbs.DatagramBatch;
import io.jverbs.DatagramQueuePair;
import io.jverbs.QueuePair;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.WcStatus;
import io.jverbs.WorkBatch;

/**
 * The bandwidth loop: keeps up to {@code tx_depth} work requests in flight on every queue pair,
 * one in {@code cq_mod} signaled, and (for send tests) keeps receives posted. Everything it
 * touches while measuring is allocated before: the timestamp arrays, the per-queue-pair counters,
 * and this object as the reused completion handler. Work-request ids carry the queue pair
 * (low 16 bits) and the post's sequence number on that queue pair (the rest), so a signaled
 * completion tells how many posts it covers.
 */
final class BwLoop implements CompletionHandler {
    private final TestSpec c;
    private final Session s;
    private final CompletionQueue cq;
    private final QueuePair[] qps;
    /** {@code -c UD}: the datagram queue pairs and their peers' address handles (then {@link #qps} is empty); else null. */
    private final DatagramQueuePair[] uds;
    private final DatagramQueuePair.Destination[] dests;
    private final int receiveLength;
    private final RemoteBuffer[] remote;
    private final RegisteredBuffer buf;
    private final int n;
    private final boolean sender;
    private final boolean receiver;
    private final int size;
    /** The spec's values the measured loop reads, copied at construction. */
    private final int tx;
    private final int rx;
    private final boolean cas;
    private final boolean events;
    private final long target;
    private final long inc;
    private final long steps;
    private final int cqMod;
    private final Verb verb;
    /** -l: requests per ibv_post_send (1: single posts); the reusable batches, one per queue pair. */
    private final int postList;
    private final WorkBatch[] batches;
    /** -l under -c UD: the datagram queue pairs' batches. */
    private final DatagramBatch[] datagramBatches;
    private final long[] posted;
    private final long[] completedSeq;
    private final long[] recvPosted;
    private final long[] recvDone;
    final long[] tposted;
    final long[] tcompleted;
    final long[] bins;
    static final long BIN_NS = 10_000_000;
    long totalPosted;
    long totalCompleted;
    long totalRecv;
    long firstRecvNs;
    long lastRecvNs;
    long lastCompletionNs;
    long startNs;
    // duration mode
    private final boolean timed;
    long windowStart;
    long windowEnd;
    long windowCount;
    private long endNs;
    // the first failed completion
    int errStatus = -1;
    int errVendor;
    long errWrId;
    int errQpn;
    boolean errReceive;

    BwLoop(TestSpec c, Session s, int size, boolean sender, boolean receiver, boolean withTimestamps) {
        this(c, s, size, sender, receiver, withTimestamps, c.duration(), c.iters());
    }

    /** A loop of a given length: the warm-up runs it on a loopback pair in iteration mode. */
    BwLoop(TestSpec c, Session s, int size, boolean sender, boolean receiver, boolean withTimestamps,
           boolean timed, int iters) {
        this.c = c;
        this.s = s;
        this.cq = s.cq;
        this.qps = s.qps;
        this.uds = s.datagrams;
        this.dests = s.destinations;
        this.receiveLength = s.receiveLength(size);
        this.remote = s.remote;
        this.buf = s.buffer;
        this.n = s.count();
        this.sender = sender;
        this.receiver = receiver;
        this.size = size;
        this.tx = c.tx();
        this.rx = c.rx();
        this.cas = c.cas();
        this.events = c.events();
        this.timed = timed;
        this.target = timed ? Long.MAX_VALUE : iters;
        int cycle = (int) Math.min(Integer.MAX_VALUE, s.slot);
        if (size <= cycle / 2) {
            inc = Math.max(64, Session.align64(size));
            steps = Math.max(1, cycle / inc);
        } else {
            inc = 0;
            steps = 1;
        }
        this.cqMod = c.cqMod();
        this.verb = c.verb();
        this.postList = c.postList();
        WorkBatch[] lists = null;
        DatagramBatch[] datagramLists = null;
        if (postList > 1 && sender) {
            if (uds != null) {
                datagramLists = new DatagramBatch[n];
                for (int q = 0; q < n; q++) {
                    datagramLists[q] = uds[q].newBatch(postList);
                }
            } else {
                lists = new WorkBatch[n];
                for (int q = 0; q < n; q++) {
                    lists[q] = qps[q].newBatch(postList);
                }
            }
        }
        batches = lists;
        datagramBatches = datagramLists;
        posted = new long[n];
        completedSeq = new long[n];
        recvPosted = new long[n];
        recvDone = new long[n];
        int total = timed ? 0 : (int) Math.min(Integer.MAX_VALUE - 8, (long) iters * n);
        tposted = withTimestamps && !timed ? new long[total] : null;
        tcompleted = withTimestamps && !timed ? new long[total] : null;
        bins = c.plot() != null ? new long[120_000] : null;
        deadline = new Deadline(c.completionNs());
        double pps = c.extras().packetsPerSecond(size);
        burst = c.extras().burstSize() > 0 ? c.extras().burstSize() : c.tx();
        rateGapNs = pps > 0 ? (long) (burst * 1e9 / pps) : 0;
        cq.poll(this, 1); // nothing is posted yet: links the polling path before the clock starts
    }

    private java.util.function.Consumer<BwResult> interval;

    /** --run_infinitely: called with each interval's result (every -D seconds); the run never ends. */
    void onInterval(java.util.function.Consumer<BwResult> consumer) {
        this.interval = consumer;
    }

    private final Deadline deadline;
    /** --rate_limit_type SW: messages per burst, and the least time from one burst's start to the next's (0: no limit). */
    private final int burst;
    private final long rateGapNs;
    private long burstStart = Long.MIN_VALUE / 2;
    private int burstLeft;

    /**
     * The software rate limiter (C's): whether one more message may go now. A burst of
     * {@code burst} messages opens at most every {@code rateGapNs}; when the current one is spent
     * and the next may not open yet, the caller polls completions meanwhile.
     */
    private boolean rateAllows() {
        if (rateGapNs <= 0) {
            return true;
        }
        if (burstLeft > 0) {
            burstLeft--;
            return true;
        }
        long now = System.nanoTime();
        if (now - burstStart < rateGapNs) {
            return false;
        }
        burstStart = now;
        burstLeft = burst - 1;
        return true;
    }

    /** Posts the first receives (before the peer may send). */
    void prepostReceives() {
        for (int q = 0; q < n; q++) {
            repost(q);
        }
    }

    /**
     * Posts receives up to the target and up to the receive depth. The count is a min, not a
     * second loop condition: a -c UD warm-up never exceeds the receive depth (a datagram that
     * finds no receive is lost), so a loop that stopped at the depth in the measured run left the
     * code C2 compiled from the warm-up's profile ({@code -XX:+PrintCompilation}: "BwLoop.repost
     * trap_bci=45 unstable_if", then BwLoop.run made not entrant) and went on interpreted, in a
     * receiver that must keep up with its sender (with 512 receives then, every such run lost
     * datagrams; the depth C uses, {@code UC_MAX_RX}, {@link SpecValidator}, was the other half of that fix).
     */
    private void repost(int q) {
        long off = s.targetOffset(q);
        long count = Math.min(target - recvPosted[q], rx - (recvPosted[q] - recvDone[q]));
        for (long i = 0; i < count; i++) {
            int rc = uds != null ? uds[q].receive(q, buf, off, receiveLength) : qps[q].receive(q, buf, off, size);
            if (rc != QueuePair.OK) {
                break;
            }
            recvPosted[q]++;
        }
    }

    /**
     * Runs until every post completed (and every expected receive arrived), or the duration ends.
     *
     * @throws PerftestException on a failed completion (its status named) or when nothing
     *                           completes within the completion timeout
     */
    void run() {
        Deadline deadline = this.deadline;
        long now = System.nanoTime();
        startNs = now;
        if (timed) {
            windowStart = now + c.marginSec() * 1_000_000_000L;
            windowEnd = now + (c.durationSec() - c.marginSec()) * 1_000_000_000L;
            endNs = now + c.durationSec() * 1_000_000_000L;
        }
        deadline.progress(now);
        long goal = target == Long.MAX_VALUE ? Long.MAX_VALUE : target * n;
        while (true) {
            if (sender) {
                postSends();
            }
            int got = cq.poll(this, 16);
            if (errStatus >= 0) {
                throw failure(goal);
            }
            if (receiver && got > 0) {
                for (int q = 0; q < n; q++) {
                    repost(q);
                }
            }
            if (got == 0 && !events && !deadline.emptyPollReadsClock()) {
                continue;
            }
            now = System.nanoTime();
            if (got > 0) {
                deadline.progress(now);
            }
            if (timed) {
                if (now >= endNs) {
                    if (interval == null) {
                        return;
                    }
                    // --run_infinitely: report this interval, start the next
                    double secs = (now - windowStart) / 1e9;
                    double factor = c.reportGbits() ? 125_000_000.0 : 1 << 20;
                    interval.accept(new BwResult(size, windowCount, 0, windowCount * (double) size / secs / factor,
                            windowCount / secs / 1e6));
                    windowCount = 0;
                    windowStart = now;
                    windowEnd = Long.MAX_VALUE;
                    endNs = now + c.durationSec() * 1_000_000_000L;
                }
            } else if ((!sender || totalCompleted >= goal) && (!receiver || totalRecv >= goal)) {
                return;
            }
            if (got == 0) {
                if (deadline.expired(now)) {
                    throw new PerftestException("no completion for " + Oob.seconds(deadline.limitNs() / 1_000_000)
                            + " (--completion_timeout): " + (sender ? totalCompleted + " of " + goal + " sends completed" : "")
                            + (sender && receiver ? ", " : "") + (receiver ? totalRecv + " of " + goal + " messages received" : "")
                            + "; is the peer still there?");
                }
                if (events) {
                    cq.armEvents();
                    if (cq.poll(this, 16) == 0) {
                        cq.waitForEvent(100);
                    }
                }
            }
        }
    }

    private void postSends() {
        if (batches != null || datagramBatches != null) {
            postLists();
            return;
        }
        for (int q = 0; q < n; q++) {
            QueuePair qp = uds == null ? qps[q] : null; // -c UD: the datagram queue pair sends (every send signaled)
            long src = s.sourceOffset(q);
            // C's condition (scnt - ccnt < tx_depth) before the clock: a full queue costs no clock read
            while (posted[q] < target && posted[q] - completedSeq[q] < tx && rateAllows()) {
                long seq = posted[q] + 1;
                long off = inc == 0 ? 0 : ((seq - 1) % steps) * inc;
                boolean signaled = seq % cqMod == 0 || seq == target;
                long wrId = (seq << 16) | q;
                long t = tposted != null || timed ? System.nanoTime() : 0; // C reads no clock per post under -N
                if (timed && t >= endNs) {
                    return;
                }
                // if-chains, not a switch on the enum: that would load a synthetic switch-map class
                // (a few KB of allocation) the first time it runs, inside the measured loop
                int rc = verb == Verb.WRITE ? qp.write(wrId, buf, src + off, size, remote[q], off, signaled)
                        : verb == Verb.READ ? qp.read(wrId, buf, src + off, size, remote[q], off, signaled)
                        : verb == Verb.SEND ? (qp != null ? qp.send(wrId, buf, src + off, size, signaled)
                                                          : uds[q].send(wrId, dests[q], buf, src + off, size))
                        : cas ? qp.compareAndSwap(wrId, buf, src + off, remote[q], off, 0, 0, signaled)
                        : qp.fetchAndAdd(wrId, buf, src + off, remote[q], off, 1, signaled);
                if (rc != QueuePair.OK) {
                    break;
                }
                if (tposted != null && totalPosted < tposted.length) {
                    tposted[(int) totalPosted] = t;
                }
                posted[q] = seq;
                totalPosted++;
            }
        }
    }

    /**
     * -l: posts {@code postList} requests per ibv_post_send, while a whole list fits in the send
     * queue (C's {@code scnt - ccnt + post_list <= tx_depth}).
     */
    private void postLists() {
        for (int q = 0; q < n; q++) {
            WorkBatch batch = batches != null ? batches[q] : null;
            DatagramBatch datagrams = datagramBatches != null ? datagramBatches[q] : null; // -c UD
            long src = s.sourceOffset(q);
            while (posted[q] < target) {
                int k = (int) Math.min(postList, target - posted[q]);
                if (posted[q] - completedSeq[q] + k > tx) {
                    break;
                }
                long t = System.nanoTime();
                if (timed && t >= endNs) {
                    return;
                }
                long first = posted[q] + 1;
                for (int i = 0; i < k; i++) {
                    long seq = first + i;
                    long off = inc == 0 ? 0 : ((seq - 1) % steps) * inc;
                    boolean signaled = seq % cqMod == 0 || seq == target;
                    long wrId = (seq << 16) | q;
                    if (datagrams != null) {
                        datagrams.send(wrId, dests[q], buf, src + off, size, signaled);
                    } else if (verb == Verb.WRITE) {
                        batch.write(wrId, buf, src + off, size, remote[q], off, signaled);
                    } else if (verb == Verb.READ) {
                        batch.read(wrId, buf, src + off, size, remote[q], off, signaled);
                    } else if (verb == Verb.SEND) {
                        batch.send(wrId, buf, src + off, size, signaled);
                    } else if (cas) {
                        batch.compareAndSwap(wrId, buf, src + off, remote[q], off, 0, 0, signaled);
                    } else {
                        batch.fetchAndAdd(wrId, buf, src + off, remote[q], off, 1, signaled);
                    }
                }
                if ((datagrams != null ? uds[q].post(datagrams) : qps[q].post(batch)) != QueuePair.OK) {
                    if (datagrams != null) {
                        datagrams.clear();
                    } else {
                        batch.clear();
                    }
                    break;
                }
                if (tposted != null) {
                    for (int i = 0; i < k && totalPosted + i < tposted.length; i++) {
                        tposted[(int) (totalPosted + i)] = t;
                    }
                }
                posted[q] = first + k - 1;
                totalPosted += k;
            }
        }
    }

    @Override
    public void onCompletion(Completion wc) {
        if (!wc.isSuccess()) {
            if (errStatus < 0) {
                errStatus = wc.status();
                errVendor = wc.vendorError();
                errWrId = wc.wrId();
                errQpn = wc.qpNumber();
            }
            return;
        }
        long now = System.nanoTime();
        long id = wc.wrId();
        int q = (int) (id & 0xffff);
        long covered;
        if (wc.isReceive()) {
            recvDone[q]++;
            if (totalRecv == 0) {
                firstRecvNs = now;
            }
            totalRecv++;
            lastRecvNs = now;
            covered = 1;
            if (!sender) {
                count(now, covered);
            }
        } else {
            long seq = id >>> 16;
            covered = seq - completedSeq[q];
            completedSeq[q] = seq;
            totalCompleted += covered;
            lastCompletionNs = now;
            if (tcompleted != null && totalCompleted - 1 < tcompleted.length) {
                tcompleted[(int) (totalCompleted - 1)] = now;
            }
            count(now, covered);
        }
    }

    private void count(long now, long covered) {
        if (timed && now >= windowStart && now < windowEnd) {
            windowCount += covered;
        }
        if (bins != null) {
            long b = (now - startNs) / BIN_NS;
            if (b >= 0 && b < bins.length) {
                bins[(int) b] += covered;
            }
        }
    }

    private PerftestException failure(long goal) {
        return new PerftestException("Completion with error: " + WcStatus.name(errStatus) + " (status " + errStatus
                + ", vendor error 0x" + Integer.toHexString(errVendor) + ") on QP 0x" + Integer.toHexString(errQpn)
                + ", work request " + (errWrId >>> 16) + "; " + totalCompleted + " of " + goal + " completed");
    }

    /**
     * The C report of a sender: peak (from the timestamp arrays unless -N), average and message
     * rate; or of a receiver (first to last receive, no peak).
     */
    BwResult result(boolean asReceiver) {
        double factor = c.reportGbits() ? 125_000_000.0 : 1 << 20;
        if (timed) {
            double secs = (windowEnd - windowStart) / 1e9;
            return new BwResult(size, windowCount, 0, windowCount * (double) size / secs / factor, windowCount / secs / 1e6);
        }
        long msgs = (long) c.iters() * n;
        long span;
        if (asReceiver) {
            span = Math.max(1, lastRecvNs - firstRecvNs);
            return new BwResult(size, msgs, 0, msgs * (double) size / (span / 1e9) / factor, msgs / (span / 1e9) / 1e6);
        }
        span = Math.max(1, lastCompletionNs - (tposted != null ? tposted[0] : startNs));
        double peak = 0;
        if (!c.noPeak() && tposted != null) {
            int total = (int) msgs;
            // Only the signaled posts (every cq_mod-th and the last) have a completion time: the
            // others' entries stay 0 and must not count (starting from entry 0, unsignaled when
            // cq_mod > 1, made every peak at small sizes 0.00).
            long best = Long.MAX_VALUE;
            for (int i = 0; i < total; i++) {
                for (int j = roundUp(i + 1, cqMod) - 1; j < total; j += cqMod) {
                    best = Math.min(best, perPost(i, j));
                }
                if (total % cqMod != 0) {
                    best = Math.min(best, perPost(i, total - 1));
                }
            }
            peak = best > 0 && best != Long.MAX_VALUE ? size / (best / 1e9) / factor : 0;
        }
        return new BwResult(size, msgs, peak, msgs * (double) size / (span / 1e9) / factor, msgs / (span / 1e9) / 1e6);
    }

    private static int roundUp(int v, int m) {
        return (v + m - 1) / m * m;
    }

    /** Bandwidth per 10 ms bin, in MB/s, up to the last non-empty bin. */
    double[] binRates() {
        if (bins == null) {
            return new double[0];
        }
        int last = bins.length - 1;
        while (last >= 0 && bins[last] == 0) {
            last--;
        }
        double[] r = new double[last + 1];
        for (int i = 0; i <= last; i++) {
            r[i] = bins[i] * (double) size / (BIN_NS / 1e9) / (1 << 20);
        }
        return r;
    }

    /** Time per post from post {@code i} to the completion of post {@code j}, or MAX when {@code j} has none. */
    private long perPost(int i, int j) {
        return tcompleted[j] == 0 ? Long.MAX_VALUE : (tcompleted[j] - tposted[i]) / (j - i + 1);
    }

    /** One row of the C report. */
    record BwResult(long size, long iters, double peak, double avg, double msgRate) {
        BwResult plus(BwResult o) {
            return new BwResult(size, iters, peak + o.peak, avg + o.avg, msgRate + o.msgRate);
        }
    }
}
