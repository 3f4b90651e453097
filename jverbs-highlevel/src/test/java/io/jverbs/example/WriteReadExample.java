package io.jverbs.example;

import io.jverbs.Access;
import io.jverbs.Completion;
import io.jverbs.CompletionHandler;
import io.jverbs.CompletionQueue;
import io.jverbs.Context;
import io.jverbs.IdleStrategy;
import io.jverbs.Poller;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.Rdma;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.cm.Connection;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * A small service on {@link Connection}: the server offers a 4 KiB region in the rdma_cm
 * handshake; the client writes a pattern into it, reads it back, checks it byte for byte, then
 * measures the round trip of a 64-byte RDMA Read (median of 1,000, after as many unreported) four
 * ways: a future completed by a busy-spinning {@link Poller}, by the default back-off Poller, or
 * by polling on the caller's thread, and the zero-allocation call polled on the caller's thread.
 *
 * <pre>
 *   WriteReadExample server DEVICE IP PORT
 *   WriteReadExample client DEVICE IP PORT
 * </pre>
 * Exit status 0 when the pattern came back intact, 1 otherwise.
 */
public final class WriteReadExample {
    private static final int READS = 1000;

    private WriteReadExample() {
    }

    /**
     * Runs one side.
     *
     * @param args role, device, IP, port
     * @throws Exception on any failure (the message says what)
     */
    public static void main(String[] args) throws Exception {
        if (args.length != 4 || !Arrays.asList("server", "client").contains(args[0])) {
            System.err.println("usage: WriteReadExample server|client DEVICE IP PORT");
            System.exit(2);
        }
        int port = Integer.parseInt(args[3]);
        try (Context ctx = Rdma.open(args[1])) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            if (args[0].equals("server")) {
                serve(pd, args[2], port);
            } else {
                System.exit(client(pd, args[2], port) ? 0 : 1);
            }
        }
    }

    private static void serve(ProtectionDomain pd, String ip, int port) throws InterruptedException {
        RegisteredBuffer region = pd.allocate(4096);
        var options = Connection.Options.defaults().grant(region, Access.REMOTE_WRITE, Access.REMOTE_READ);
        try (Connection.Server server = Connection.listen(pd, ip, port, options)) {
            System.out.println("server: listening on " + ip + ":" + server.port());
            try (Connection c = server.accept(Duration.ofSeconds(120))) {
                c.awaitDisconnect(Duration.ofSeconds(120));
            }
        }
        System.out.println("server: the client disconnected");
    }

    private static boolean client(ProtectionDomain pd, String ip, int port) throws Exception {
        RegisteredBuffer mine = pd.allocate(8192);
        var options = Connection.Options.defaults().callerPolls().retry(100, Duration.ofMillis(200));
        try (Connection c = Connection.connect(pd, ip, port, options)) {
            RemoteBuffer theirs = c.peerBuffers().get(0);
            QueuePair qp = c.queuePair();
            CompletionQueue cq = c.completionQueue();
            MemorySegment out = mine.segment().asSlice(0, 4096);
            for (int i = 0; i < 4096; i++) {
                out.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
            }
            try (Poller poller = Poller.start(null, IdleStrategy.busySpin(), cq)) {
                qp.async().write(mine.slice(0, 4096), theirs).get(10, TimeUnit.SECONDS);
                qp.async().read(mine.slice(4096, 4096), theirs).get(10, TimeUnit.SECONDS);
                long mismatch = out.mismatch(mine.segment().asSlice(4096, 4096));
                if (mismatch >= 0) {
                    System.out.println("client: FAILED, byte " + mismatch + " came back different");
                    return false;
                }
                System.out.println("client: 4096 bytes written into the server's region and read back intact");
                futures(qp, mine, theirs, null); // warm-up, not reported
                report("future, busy-spin Poller", futures(qp, mine, theirs, null));
            }
            try (Poller poller = Poller.start(null, IdleStrategy.backoff(), cq)) {
                report("future, back-off Poller (default)", futures(qp, mine, theirs, null));
            }
            futures(qp, mine, theirs, cq);
            report("future, caller polls", futures(qp, mine, theirs, cq));
            zeroAllocation(qp, cq, mine, theirs);
            report("zero-allocation, caller polls", zeroAllocation(qp, cq, mine, theirs));
        }
        return true;
    }

    /**
     * The future style: one readAsync per read, awaited with get while a Poller completes it, or
     * (with {@code cq}) completed by polling on this thread.
     */
    private static long[] futures(QueuePair qp, RegisteredBuffer mine, RemoteBuffer theirs, CompletionQueue cq)
            throws Exception {
        long[] nanos = new long[READS];
        for (int i = 0; i < READS; i++) {
            long start = System.nanoTime();
            var read = qp.async().read(mine.slice(4096, 64), theirs.slice(0, 64));
            if (cq == null) {
                read.get(10, TimeUnit.SECONDS);
            } else {
                while (!read.isDone()) {
                    cq.poll(null, 1);
                }
                read.get();
            }
            nanos[i] = System.nanoTime() - start;
        }
        return nanos;
    }

    /** The zero-allocation style: read with an id, poll the completion on this thread. */
    private static long[] zeroAllocation(QueuePair qp, CompletionQueue cq, RegisteredBuffer mine, RemoteBuffer theirs) {
        long[] nanos = new long[READS];
        int[] failed = {0};
        CompletionHandler handler = (Completion done) -> {
            if (!done.isSuccess()) {
                failed[0] = done.status();
            }
        };
        for (int i = 0; i < READS; i++) {
            long start = System.nanoTime();
            if (qp.read(i, mine, 4096, 64, theirs, 0, true) != QueuePair.OK) {
                throw new IllegalStateException("the send queue is full");
            }
            while (cq.poll(handler, 1) == 0) {
                Thread.onSpinWait();
            }
            if (failed[0] != 0) {
                throw new IllegalStateException("RDMA Read failed with status " + failed[0]);
            }
            nanos[i] = System.nanoTime() - start;
        }
        return nanos;
    }

    private static void report(String style, long[] nanos) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        System.out.printf("client: 64-byte RDMA Read, %-34s median %7.1f us, p99 %7.1f us (%d reads)%n", style + ":",
                sorted[sorted.length / 2] / 1e3, sorted[(int) (sorted.length * 0.99)] / 1e3, sorted.length);
    }
}
