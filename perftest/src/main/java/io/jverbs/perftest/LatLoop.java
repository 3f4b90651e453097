package io.jverbs.perftest;

import io.jverbs.Completion;
import io.jverbs.CompletionHandler;
import io.jverbs.CompletionQueue;
import io.jverbs.DatagramQueuePair;
import io.jverbs.QueuePair;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.WcStatus;
import org.HdrHistogram.Histogram;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The latency loops, as C perftest runs them: write ping-pong on the last byte of the message,
 * send ping-pong on receive completions, and one outstanding read or atomic at a time. The
 * timestamp of every post goes into a preallocated array (iteration mode) and each
 * post-to-post gap, divided as C divides it, into a preallocated HdrHistogram; this object is the
 * reused completion handler, so the loop allocates nothing.
 */
final class LatLoop implements CompletionHandler {
    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();
    /** The longest gap the histogram tracks: one hour in ns (larger gaps are clamped). */
    static final long HIST_MAX_NS = 3_600_000_000_000L;
    private final TestSpec c;
    private final Session s;
    private final CompletionQueue cq;
    private final QueuePair qp;
    /** {@code -c UD} (send_lat): the datagram queue pair and its peer's address handle ({@link #qp} is then null). */
    private final DatagramQueuePair ud;
    private final DatagramQueuePair.Destination to;
    private final RegisteredBuffer buf;
    private final MemorySegment mem;
    private final RemoteBuffer remote;
    /** Write, Read or Send on {@link #qp}, filled once ({@link Session#latencyRequest}); null for atomics and UD. */
    private final io.jverbs.PreparedRequest request;
    private final int size;
    /** The spec's values the measured loop reads, copied at construction. */
    private final int rx;
    private final boolean cas;
    private final boolean events;
    private final Verb verb;
    private final boolean server;
    private final boolean timed;
    private final int iters;
    private final Deadline deadline;
    final long[] tposted;
    final Histogram histogram;
    long sendDone;
    long recvDone;
    long recvPosted;
    long windowStart;
    long windowEnd;
    long windowCount;
    long endNs;
    int errStatus = -1;
    int errVendor;
    int errQpn;
    /** --latency_gap in nanoseconds: spun before each post, and inside the sample, as C's. */
    private final long gapNs;

    LatLoop(TestSpec c, Session s, int size, Histogram histogram) {
        this(c, s, size, histogram, c.isServer(), c.duration(), c.iters());
    }

    /** A loop in a given role and length: the warm-up runs both sides of a loopback pair in iteration mode. */
    LatLoop(TestSpec c, Session s, int size, Histogram histogram, boolean server, boolean timed, int iters) {
        this.c = c;
        this.s = s;
        this.gapNs = (long) (c.extras().latencyGapUs() * 1_000);
        this.cq = s.cq;
        this.qp = s.qps.length > 0 ? s.qps[0] : null;
        this.ud = s.datagrams != null ? s.datagrams[0] : null;
        this.to = s.destinations != null ? s.destinations[0] : null;
        this.buf = s.buffer;
        this.mem = s.memory;
        this.remote = s.remote[0];
        this.request = s.latencyRequest(size);
        this.size = size;
        this.rx = c.rx();
        this.cas = c.cas();
        this.events = c.events();
        this.verb = c.verb();
        this.server = server;
        this.timed = timed;
        this.iters = iters;
        this.deadline = new Deadline(c.completionNs());
        this.tposted = timed ? null : new long[iters];
        this.histogram = histogram;
    }

    /**
     * Runs the byte-polling call site once before the clock (the byte already has the value it
     * waits for, so it returns at once): a VarHandle call site links, and allocates, on its first
     * execution. It polls this side's own source byte, which only this thread writes: the target
     * byte could change between reading it and waiting for it (the server writes first), and
     * waiting for the old value then timed out.
     */
    void prelink() {
        long off = s.sourceOffset(0) + size - 1;
        awaitByte(off, (byte) BYTE.getAcquire(mem, off));
    }

    /** Send latency: both sides post their first receives before the last sync. */
    void prepostReceives() {
        long goal = timed ? Long.MAX_VALUE : iters;
        while (recvPosted < Math.min(goal, rx)) {
            if (receive() != QueuePair.OK) {
                break;
            }
            recvPosted++;
        }
    }

    private void startClock() {
        long now = System.nanoTime();
        deadline.progress(now);
        if (timed) {
            windowStart = now + c.marginSec() * 1_000_000_000L;
            windowEnd = now + (c.durationSec() - c.marginSec()) * 1_000_000_000L;
            endNs = now + c.durationSec() * 1_000_000_000L;
        }
    }

    private boolean ended(long now) {
        return timed && now >= endNs;
    }

    private long lastPost;
    /** Posts stamped so far. */
    private int stamped;

    /**
     * Stamps post {@code k} (0-based). In iteration mode that is one store, as C's loop does
     * ({@code tstamp[scnt] = get_cycles()}); the histogram is filled from the stamps after the
     * loop ({@link #recordHistogram}). In duration mode, where the stamps are not kept, the gap to
     * the previous post goes into the histogram here.
     */
    private void stamp(long k, long now) {
        if (tposted != null) {
            tposted[(int) k] = now;
            stamped = (int) k + 1;
            return;
        }
        if (k > 0) {
            record(now - lastPost);
            if (now >= windowStart && now < windowEnd) {
                windowCount++;
            }
        }
        lastPost = now;
    }

    private void record(long postToPost) {
        long gap = postToPost / verb.rttFactor();
        histogram.recordValue(Math.min(Math.max(gap, 0), HIST_MAX_NS));
    }

    /**
     * After an iteration-mode loop: each post-to-post gap, divided as C divides it, into the
     * histogram, but for the {@link LatStats#TAIL} slowest, which C's row leaves out too
     * ({@code LAT_MEASURE_TAIL}), so the histogram and the row describe the same samples (in
     * duration mode the loop recorded every gap already).
     */
    void recordHistogram() {
        int slowest = -1;
        int second = -1;
        if (stamped - 1 > LatStats.TAIL) {
            for (int k = 1; k < stamped; k++) {
                long gap = tposted[k] - tposted[k - 1];
                if (slowest < 0 || gap > tposted[slowest] - tposted[slowest - 1]) {
                    second = slowest;
                    slowest = k;
                } else if (second < 0 || gap > tposted[second] - tposted[second - 1]) {
                    second = k;
                }
            }
        }
        for (int k = 1; k < stamped; k++) {
            if (k != slowest && k != second) {
                record(tposted[k] - tposted[k - 1]);
            }
        }
    }

    /** RDMA Write ping-pong: each side waits for the peer's k-th write (its last byte = k), then writes k. */
    void runWrite() {
        startClock();
        long pollOff = s.targetOffset(0) + size - 1;
        long postOff = s.sourceOffset(0) + size - 1;
        long goal = timed ? Long.MAX_VALUE : iters;
        long scnt = 0;
        long rcnt = 0;
        while (scnt < goal || rcnt < goal) {
            if (rcnt < goal && !(scnt < 1 && server)) {
                rcnt++;
                if (!awaitByte(pollOff, (byte) rcnt)) {
                    break;
                }
            }
            if (scnt < goal) {
                long now = gap(System.nanoTime());
                if (ended(now)) {
                    break;
                }
                stamp(scnt, now);
                scnt++;
                mem.set(ValueLayout.JAVA_BYTE, postOff, (byte) scnt);
                post(qp.post(request, scnt, true));
                if (!awaitSends(scnt)) {
                    break;
                }
            }
        }
    }

    private boolean awaitByte(long off, byte value) {
        int spins = 0;
        while ((byte) BYTE.getAcquire(mem, off) != value) {
            if ((++spins & 1023) == 0) {
                long now = System.nanoTime();
                if (ended(now)) {
                    return false;
                }
                if (deadline.expired(now)) {
                    throw new PerftestException("the peer's write " + (value & 0xff) + " (mod 256) did not arrive within "
                            + Oob.seconds(deadline.limitNs() / 1_000_000) + " (--completion_timeout): is the peer still there?");
                }
            }
        }
        deadline.progressed(); // no clock read: C reads one per iteration, the post's (stamp)
        return true;
    }

    /** Send ping-pong: the client sends first; each side answers every receive with a send. */
    void runSend() {
        startClock();
        long goal = timed ? Long.MAX_VALUE : iters;
        long scnt = 0;
        long rcnt = 0;
        while (scnt < goal || rcnt < goal) {
            if (rcnt < goal && !(scnt < 1 && !server)) {
                rcnt++;
                if (!awaitReceives(rcnt)) {
                    break;
                }
                while (recvPosted < goal && recvPosted - recvDone < rx) {
                    if (receive() != QueuePair.OK) {
                        break;
                    }
                    recvPosted++;
                }
            }
            if (scnt < goal) {
                long now = gap(System.nanoTime());
                if (ended(now)) {
                    break;
                }
                stamp(scnt, now);
                scnt++;
                post(ud != null ? ud.send(scnt, to, buf, s.sourceOffset(0), size)
                                : qp.post(request, scnt, true));
                if (!awaitSends(scnt)) {
                    break;
                }
            }
        }
    }

    /** One receive into this side's target slot (a datagram's also takes its 40-byte routing header). */
    private int receive() {
        return ud != null ? ud.receive(0, buf, s.targetOffset(0), s.receiveLength(size))
                          : qp.receive(0, buf, s.targetOffset(0), size);
    }

    /** Read or atomic latency (client only): one operation in flight at a time. */
    void runReadOrAtomic() {
        startClock();
        long goal = timed ? Long.MAX_VALUE : iters;
        for (long k = 0; k < goal; k++) {
            long now = gap(System.nanoTime());
            if (ended(now)) {
                break;
            }
            stamp(k, now);
            // no switch on the enum here: its switch-map class would load (and allocate) inside the loop
            int rc = verb == Verb.READ ? qp.post(request, k + 1, true)
                    : cas ? qp.compareAndSwap(k + 1, buf, s.sourceOffset(0), remote, 0, 0, 0, true)
                    : qp.fetchAndAdd(k + 1, buf, s.sourceOffset(0), remote, 0, 1, true);
            post(rc);
            if (!awaitSends(k + 1)) {
                break;
            }
        }
    }

    /** Busy-waits --latency_gap from {@code now} (none: returns it at once); returns the time after. */
    private long gap(long now) {
        if (gapNs <= 0) {
            return now;
        }
        long until = now + gapNs;
        long t;
        while ((t = System.nanoTime()) < until) {
            Thread.onSpinWait();
        }
        return t;
    }

    private static void post(int rc) {
        if (rc != QueuePair.OK) {
            throw new PerftestException("Couldn't post send: the send queue is full");
        }
    }

    private boolean awaitSends(long count) {
        while (sendDone < count) {
            if (!pollOnce()) {
                return false;
            }
        }
        return true;
    }

    private boolean awaitReceives(long count) {
        while (recvDone < count) {
            if (!pollOnce()) {
                return false;
            }
        }
        return true;
    }

    private boolean pollOnce() {
        int got = cq.poll(this, 16);
        if (errStatus >= 0) {
            throw new PerftestException("Completion with error: " + WcStatus.name(errStatus) + " (status " + errStatus
                    + ", vendor error 0x" + Integer.toHexString(errVendor) + ") on QP 0x" + Integer.toHexString(errQpn)
                    + " after " + sendDone + " sends and " + recvDone + " receives");
        }
        if (got > 0) {
            deadline.progressed();
            return true;
        }
        if (!events && !deadline.emptyPollReadsClock()) {
            return true;
        }
        long now = System.nanoTime();
        if (ended(now)) {
            return false;
        }
        if (deadline.expired(now)) {
            throw new PerftestException("no completion for " + Oob.seconds(deadline.limitNs() / 1_000_000)
                    + " (--completion_timeout) after " + sendDone + " sends and " + recvDone + " receives: is the peer still there?");
        }
        if (events) {
            cq.armEvents();
            if (cq.poll(this, 16) == 0) {
                cq.waitForEvent(100);
            }
        }
        return true;
    }

    @Override
    public void onCompletion(Completion wc) {
        if (!wc.isSuccess()) {
            if (errStatus < 0) {
                errStatus = wc.status();
                errVendor = wc.vendorError();
                errQpn = wc.qpNumber();
            }
            return;
        }
        if (wc.isReceive()) {
            recvDone++;
        } else {
            sendDone++;
        }
    }
}
