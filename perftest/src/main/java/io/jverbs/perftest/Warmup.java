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
import java.lang.management.ManagementFactory;

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

    /** What the warm-up did: batches run, and the bytes the last batch allocated (0 when warm). */
    record Outcome(int batches, long lastBatchBytes, long millis) {
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
            return new Outcome(n, last, (System.nanoTime() - t0) / 1_000_000);
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
