package io.jverbs.device;

import io.jverbs.Access;
import io.jverbs.CompletionQueue;
import io.jverbs.Context;
import io.jverbs.Endpoint;
import io.jverbs.EndpointExchange;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.Rdma;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RefusedException;
import io.jverbs.RemoteBuffer;
import io.jverbs.WorkResult;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Misuse of the high-level API on a real device: each scenario ends in a Java exception or a
 * defined state, and the JVM lives on (a crash would end the whole suite, failing it). The count
 * of scenarios is printed as {@code highlevel-misuse: N scenarios, 0 crashed}.
 */
@DeviceTest
class MisuseTest {
    private static final long T = 20_000;

    /** Asserts that {@code call} throws {@code type} with {@code messagePart} in its message (also used by {@link MisuseChildTest}). */
    static <E extends Throwable> E expect(Class<E> type, String messagePart, org.junit.jupiter.api.function.Executable call) {
        E e = assertThrows(type, call);
        assertTrue(String.valueOf(e.getMessage()).contains(messagePart),
                "message of " + type.getSimpleName() + " names '" + messagePart + "': " + e.getMessage());
        return e;
    }

    @Test
    void scenarios(TestDevice device) throws Exception {
        List<String> ran = new ArrayList<>();
        try (Loopback lb = new Loopback(device, 4096, c -> c.withDepth(4, 4).withSignalEvery(1), false)) {
            RemoteBuffer remote = lb.serverRemote();
            QueuePair qp = lb.client.qp;
            RegisteredBuffer buf = lb.client.buffer;

            expect(IndexOutOfBoundsException.class, "outside the registered buffer",
                    () -> qp.write(1, buf, 4000, 200, remote, 0, true));
            ran.add("local range out of bounds");
            expect(IndexOutOfBoundsException.class, "outside the remote buffer",
                    () -> qp.write(1, buf, 0, 200, remote, 4000, true));
            ran.add("remote range out of bounds");
            expect(IllegalArgumentException.class, "8-byte aligned",
                    () -> qp.fetchAndAdd(1, buf, 0, remote, 4, 1, true));
            ran.add("unaligned atomic");
            expect(IllegalArgumentException.class, "work-request ids",
                    () -> qp.write(-1, buf, 0, 8, remote, 0, true));
            ran.add("negative work-request id");
            expect(IllegalStateException.class, "connect works once", () -> qp.connect(lb.server.qp.localEndpoint()));
            ran.add("connect twice");

            // Send queue full: depth 4, nothing polled.
            int accepted = 0;
            int rc;
            while ((rc = qp.write(100 + accepted, buf, 0, 8, remote, 0, true)) == QueuePair.OK) {
                accepted++;
                assertTrue(accepted <= 4, "at most the send-queue depth is accepted");
            }
            assertEquals(QueuePair.SEND_QUEUE_FULL, rc);
            CompletableFuture<WorkResult> full = qp.async().write(buf, 0, 8, remote, 0);
            ExecutionException fullE = assertThrows(ExecutionException.class, () -> full.get(T, TimeUnit.MILLISECONDS));
            assertInstanceOf(io.jverbs.QueueFullException.class, fullE.getCause());
            Polling.await(lb.client.cq, accepted, T);
            ran.add("send queue full (return value and future)");

            // A handler that throws, and one that closes... the poll goes on; the failure is counted.
            AtomicInteger reported = new AtomicInteger();
            lb.client.cq.onHandlerError(e -> reported.incrementAndGet());
            assertEquals(QueuePair.OK, qp.write(7, buf, 0, 8, remote, 0, true));
            long deadline = System.nanoTime() + T * 1_000_000;
            while (lb.client.cq.poll(c -> {
                throw new IllegalStateException("handler bug");
            }, 16) == 0) {
                assertTrue(System.nanoTime() < deadline, "a completion arrives");
            }
            assertEquals(1, lb.client.cq.handlerFailures());
            assertEquals(1, reported.get());
            ran.add("handler throws");

            // Re-entering poll from a handler.
            assertEquals(QueuePair.OK, qp.write(8, buf, 0, 8, remote, 0, true));
            List<Throwable> inner = new ArrayList<>();
            lb.client.cq.onHandlerError(inner::add);
            deadline = System.nanoTime() + T * 1_000_000;
            while (lb.client.cq.poll(c -> lb.client.cq.poll(null, 1), 16) == 0) {
                assertTrue(System.nanoTime() < deadline, "a completion arrives");
            }
            assertTrue(inner.size() == 1 && inner.get(0).getMessage().contains("re-entered"), inner.toString());
            ran.add("poll re-entered from a handler");

            expect(IllegalArgumentException.class, "max must be", () -> lb.client.cq.poll(null, 0));
            ran.add("poll with max 0");
            expect(IllegalStateException.class, "no completion channel", () -> lb.client.cq.armEvents());
            ran.add("events on a queue without a channel");

            // Heap segment registration.
            expect(IllegalArgumentException.class, "heap segment",
                    () -> lb.client.pd.register(MemorySegment.ofArray(new byte[64]), Access.REMOTE_READ));
            ran.add("register a heap segment");
            try (Arena closedArena = Arena.ofConfined()) {
                MemorySegment gone = closedArena.allocate(64);
                closedArena.close();
                expect(IllegalStateException.class, "closed", () -> lb.client.pd.register(gone));
            } catch (IllegalStateException alreadyClosed) {
                // the try-with-resources close of an already closed arena: expected
            }
            ran.add("register a segment of a closed arena");
            RegisteredBuffer local = lb.client.pd.allocate(64);
            expect(IllegalStateException.class, "local use only", local::remote);
            ran.add("remote() of a local-only buffer");

            // A buffer closed: its segment throws, a post using it throws, double close is a no-op.
            MemorySegment view = local.segment();
            local.close();
            assertThrows(IllegalStateException.class, () -> view.get(ValueLayout.JAVA_BYTE, 0));
            ran.add("stale access to a closed buffer's memory");
            expect(IllegalStateException.class, "closed", () -> qp.write(9, local, 0, 8, remote, 0, true));
            ran.add("post from a closed buffer");
            assertDoesNotThrow(local::close);
            ran.add("double close");

            // Malformed peer records.
            expect(IllegalArgumentException.class, "bad magic", () -> RemoteBuffer.fromBytes(new byte[RemoteBuffer.BYTES]));
            ran.add("garbage remote buffer");
            byte[] wrongVersion = lb.server.qp.localEndpoint().toBytes();
            wrongVersion[5] = 9;
            expect(IllegalArgumentException.class, "version", () -> Endpoint.fromBytes(wrongVersion));
            ran.add("endpoint of another version");

            // Closing a completion queue from inside its handler.
            assertEquals(QueuePair.OK, lb.server.qp.write(11, lb.server.buffer, 0, 8, lb.client.buffer.remote(), 0, true));
            CompletionQueue scq = lb.server.cq;
            deadline = System.nanoTime() + T * 1_000_000;
            while (!scq.isClosed()) {
                assertTrue(System.nanoTime() < deadline, "the server's write completes");
                scq.poll(c -> scq.close(), 16);
            }
            assertTrue(lb.server.qp.isClosed(), "closing the CQ closed the queue pair that used it");
            expect(IllegalStateException.class, "closed", () -> scq.poll(null, 1));
            ran.add("close a completion queue from its handler");
            // Work in flight when the queue pair closes: its future fails, nothing hangs.
            // (Poll nothing so the write stays pending from jverbs' point of view.)
            CompletableFuture<WorkResult> inFlight = qp.async().write(buf, 0, 8, remote, 0);
            qp.close();
            ExecutionException closedE = assertThrows(ExecutionException.class, () -> inFlight.get(T, TimeUnit.MILLISECONDS));
            assertTrue(closedE.getCause().getMessage().contains("closed with this operation in flight")
                    || closedE.getCause() instanceof io.jverbs.CompletionFailedException, closedE.toString());
            ran.add("close with work in flight");
            assertEquals(RefusedException.Reason.CLOSED, expect(RefusedException.class, "closed",
                    () -> qp.write(10, buf, 0, 8, remote, 0, true)).reason());
            ran.add("post on a closed queue pair");
            expect(IllegalStateException.class, "closed", qp::handle);
            ran.add("raw handle after close");

        }

        try (Context ctx = Rdma.open(device.name())) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            CompletionQueue cq = ctx.createCompletionQueue(256);
            QueuePair prepared = pd.createQueuePair(QueuePairConfig.rc(cq).withGidIndex(Math.max(device.gidIndexEnv(), -1)));
            RegisteredBuffer b = pd.allocate(64, Access.REMOTE_WRITE);
            assertEquals(RefusedException.Reason.NOT_CONNECTED, expect(RefusedException.class, "not connected",
                    () -> prepared.write(1, b, 0, 8, b.remote(), 0, true)).reason());
            ran.add("post before connect");
            pd.close();
            assertTrue(b.isClosed() && prepared.isClosed(), "closing the PD closed its buffer and queue pair");
            expect(IllegalStateException.class, "closed", () -> pd.createQueuePair(QueuePairConfig.rc(cq)));
            ran.add("closed parent");
            assertEquals(RefusedException.Reason.CLOSED,
                    expect(RefusedException.class, "closed", () -> pd.allocate(64)).reason());
            ran.add("allocate from a closed protection domain");
        }

        expect(NoSuchElementException.class, "no RDMA device", () -> Rdma.open("jverbs-no-such-device"));
        ran.add("open a device that does not exist");

        // A silent peer and a refused connection: clear errors within the timeout.
        try (ServerSocket silent = new ServerSocket(0);
             Socket s = EndpointExchange.connect("127.0.0.1", silent.getLocalPort(), Duration.ofSeconds(2))) {
            long start = System.nanoTime();
            IOException e = assertThrows(IOException.class, () -> EndpointExchange.exchange(s,
                    new Endpoint(1, 1, 0, new byte[16], 3), Duration.ofMillis(500)));
            long tookMs = (System.nanoTime() - start) / 1_000_000;
            assertTrue(tookMs < 3000 && e.getMessage().contains("0 of " + Endpoint.BYTES), tookMs + " ms: " + e.getMessage());
        }
        ran.add("silent peer during the exchange");
        int closedPort;
        try (ServerSocket probe = new ServerSocket(0)) {
            closedPort = probe.getLocalPort();
        }
        expect(IOException.class, "cannot reach the peer",
                () -> EndpointExchange.connect("127.0.0.1", closedPort, Duration.ofSeconds(2)));
        ran.add("refused connection");

        System.out.println("highlevel-misuse: " + ran.size() + " scenarios, 0 crashed, on " + device.name() + ": " + ran);
        assertTrue(ran.size() >= 20, "at least 20 misuse scenarios: " + ran.size());
    }
}
