package io.jverbs.pair;

import io.jverbs.Access;
import io.jverbs.CompletionFailedException;
import io.jverbs.CompletionQueue;
import io.jverbs.Context;
import io.jverbs.Endpoint;
import io.jverbs.IdleStrategy;
import io.jverbs.Poller;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.Rdma;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.WorkResult;
import io.jverbs.ibverbs.device.PairControl;
import io.jverbs.ibverbs.device.PairNode;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.UnaryOperator;

/**
 * One node's half of an RC connection across the wire: its own context, protection domain,
 * completion queue (with a poller), queue pair and buffer (every remote right), connected to the
 * peer node's half by exchanging endpoints and remote buffers over the control channel.
 */
final class PairLink implements AutoCloseable {
    final Context context;
    final ProtectionDomain pd;
    final CompletionQueue cq;
    final QueuePair qp;
    final RegisteredBuffer buffer;
    final Poller poller;
    RemoteBuffer peer;

    private PairLink(PairNode node, long bytes, UnaryOperator<QueuePairConfig> tune) {
        context = Rdma.open(node.device().name());
        try {
            pd = context.allocateProtectionDomain();
            cq = context.createCompletionQueue(1024);
            QueuePairConfig config = QueuePairConfig.rc(cq).withDepth(256, 256);
            if (node.device().gidIndexEnv() >= 0) {
                config = config.withGidIndex(node.device().gidIndexEnv());
            }
            qp = pd.createQueuePair(tune.apply(config));
            buffer = pd.allocate(bytes, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC);
            poller = Poller.start(null, IdleStrategy.backoff(), cq);
        } catch (RuntimeException e) {
            context.close();
            throw e;
        }
    }

    /** This node's half, not yet connected. */
    static PairLink create(PairNode node, long bytes, UnaryOperator<QueuePairConfig> tune) {
        return new PairLink(node, bytes, tune);
    }

    /** Opens this node's half and connects it to the peer's (which calls this at the same time). */
    static PairLink open(PairNode node, long bytes, UnaryOperator<QueuePairConfig> tune) throws IOException {
        PairLink link = new PairLink(node, bytes, tune);
        try {
            PairControl control = node.control();
            control.sendBytes("endpoint", link.qp.localEndpoint().toBytes());
            control.sendBytes("buffer", link.buffer.remote().toBytes());
            Endpoint remote = Endpoint.fromBytes(control.expectBytes("endpoint"));
            link.peer = RemoteBuffer.fromBytes(control.expectBytes("buffer"));
            link.qp.connect(remote);
            return link;
        } catch (IOException | RuntimeException e) {
            link.close();
            throw e;
        }
    }

    static PairLink open(PairNode node, long bytes) throws IOException {
        return open(node, bytes, c -> c);
    }

    /** A deterministic pattern: byte {@code i} of stream {@code seed}. */
    static byte pattern(long seed, long i) {
        long x = (i + 1) * 0x9E3779B97F4A7C15L ^ seed * 0xC2B2AE3D27D4EB4FL;
        x ^= x >>> 29;
        return (byte) (x * 0xBF58476D1CE4E5B9L >>> 56);
    }

    /** Fills {@code [offset, offset + length)} of {@code segment} with the pattern of {@code seed}. */
    static void fill(MemorySegment segment, long offset, long length, long seed) {
        for (long i = 0; i < length; i++) {
            segment.set(ValueLayout.JAVA_BYTE, offset + i, pattern(seed, i));
        }
    }

    /** @return {@code "ok"}, or where the range first differs from the pattern of {@code seed} */
    static String check(MemorySegment segment, long offset, long length, long seed) {
        for (long i = 0; i < length; i++) {
            byte got = segment.get(ValueLayout.JAVA_BYTE, offset + i);
            byte want = pattern(seed, i);
            if (got != want) {
                return "mismatch at byte " + (offset + i) + " (offset " + i + " of " + length + "): got " + got + ", want " + want;
            }
        }
        return "ok";
    }

    /**
     * Writes {@code chunks} chunks of {@code chunk} bytes from this buffer to the same offsets of the
     * peer's, keeping up to {@code window} in flight; every chunk must succeed within {@code timeoutMs}.
     */
    void stream(int chunks, int chunk, int window, long timeoutMs) throws Exception {
        List<CompletableFuture<WorkResult>> inFlight = new ArrayList<>();
        long deadline = System.nanoTime() + timeoutMs * 1_000_000;
        for (int i = 0; i < chunks; i++) {
            if (inFlight.size() >= window) {
                awaitOne(inFlight.remove(0), deadline);
            }
            inFlight.add(qp.async().write(buffer, (long) i * chunk, chunk, peer, (long) i * chunk));
        }
        for (CompletableFuture<WorkResult> f : inFlight) {
            awaitOne(f, deadline);
        }
    }

    private static void awaitOne(CompletableFuture<WorkResult> f, long deadline) throws Exception {
        long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
        try {
            f.get(left, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError("timed out: a write did not complete within the stream's time limit", e);
        }
    }

    /** What ended a stream that was meant to fail: the failed completion and when it came. */
    record Failure(CompletionFailedException error, long postedToErrorMs, int writesDone) {
    }

    /**
     * Writes {@code chunk} bytes again and again (one in flight, so the time from a post to its
     * completion is the time to error) until one fails; {@code afterWrites} runs once after that
     * many writes succeeded (the fault goes there). Fails when nothing fails within {@code limitMs}.
     */
    Failure writeUntilFailure(int chunk, int afterWrites, ThrowingRunnable fault, long limitMs) throws Exception {
        long deadline = System.nanoTime() + limitMs * 1_000_000;
        int done = 0;
        while (System.nanoTime() < deadline) {
            if (done == afterWrites) {
                fault.run();
            }
            long posted = System.nanoTime();
            CompletableFuture<WorkResult> f = qp.async().write(buffer, 0, chunk, peer, 0);
            try {
                f.get(Math.max(1, (deadline - posted) / 1_000_000), TimeUnit.MILLISECONDS);
                done++;
            } catch (ExecutionException e) {
                if (e.getCause() instanceof CompletionFailedException failed) {
                    return new Failure(failed, (System.nanoTime() - posted) / 1_000_000, done);
                }
                throw e;
            } catch (TimeoutException e) {
                throw new AssertionError("timed out: a write neither completed nor failed within " + limitMs + " ms", e);
            }
        }
        throw new AssertionError("timed out: every write kept succeeding for " + limitMs + " ms (" + done + " writes)");
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    @Override
    public void close() {
        try {
            if (poller != null) {
                poller.close();
            }
        } finally {
            context.close();
        }
    }
}
