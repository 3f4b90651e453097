package io.jverbs.device;

import io.jverbs.Access;
import io.jverbs.CompletionFailedException;
import io.jverbs.CompletionQueue;
import io.jverbs.Context;
import io.jverbs.IdleStrategy;
import io.jverbs.Poller;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.Rdma;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.WorkResult;
import io.jverbs.cm.CmConnection;
import io.jverbs.cm.Connection;
import io.jverbs.cm.HalfOpenCmClient;
import io.jverbs.cm.RdmaCm;
import io.jverbs.DatagramQueuePair;
import io.jverbs.ibverbs.device.ChildJvm;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import io.jverbs.ibverbs.raw.ibv_qp_attr;
import io.jverbs.ibverbs.raw.ibv_qp_init_attr;
import io.jverbs.ibverbs.raw.verbs_h;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * A service author's mistakes and a dead or hostile peer, one per child JVM, on a real device:
 * memory closed under a registration, objects of different parents mixed, closes from handlers,
 * defaults that must give up, futures that nothing would complete, pollers misused, rdma_cm
 * handshakes left half-open, remote rights wider than asked. Each child opens a loopback
 * connection, commits one case and must end with the expected exception or state. A case is
 * <em>crashed</em> (the JVM died), <em>hung</em> (killed at the deadline) or <em>unchecked</em>
 * (the mistake went through). Prints
 * {@code highlevel-safety: N cases, 0 crashed, 0 hung, 0 unchecked, on DEVICE}.
 */
@DeviceTest
class SafetyChildTest {
    private static final Duration STARTUP = Duration.ofSeconds(120);
    private static final Duration WORK = Duration.ofSeconds(90);
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final String READY = "safety-ready";
    private static final String OK = "safety-ok: ";
    /** For cases about other things, on the loopback's domain, whose buffers have remote rights of their own. */
    private static final Connection.Policy SHARED = Connection.Policy.defaults().isolation(Connection.Isolation.SHARED_DOMAIN);
    private static final String UNCHECKED = "safety-unchecked: ";
    private static final String DONE = "safety-done";

    private static final Map<String, LoopbackChild.Case> CASES = new LinkedHashMap<>();

    /** The case whose rdma_cm id the kernel may hold for minutes after the child is done: it runs last. */
    private static final String HALF_OPEN = "a client that never completes the rdma_cm handshake";

    static {
        // ---- registered memory follows its owner ----
        CASES.put("RDMA Read into a registration whose arena was closed", (lb, d) -> {
            Arena arena = Arena.ofShared();
            RegisteredBuffer reg = lb.client.pd.register(arena.allocate(4096, 4096));
            arena.close();
            // refused as freed memory, or as a closed registration once the event thread released it
            return refused(IllegalStateException.class, "registered buffer",
                    () -> lb.client.qp.read(1, reg, 0, 4096, lb.serverRemote(), 0, true));
        });
        CASES.put("post a prepared request whose registration's arena was closed", (lb, d) -> {
            Arena arena = Arena.ofShared();
            RegisteredBuffer reg = lb.client.pd.register(arena.allocate(4096, 4096));
            io.jverbs.PreparedRequest r = lb.client.qp.prepareWrite(reg, 0, 32, lb.serverRemote(), 0);
            arena.close();
            return refused(IllegalStateException.class, "registered buffer", () -> lb.client.qp.post(r, 1, true));
        });
        CASES.put("post a batched RDMA Read whose registration's arena closed after it was added", (lb, d) -> {
            Arena arena = Arena.ofShared();
            RegisteredBuffer reg = lb.client.pd.register(arena.allocate(4096, 4096));
            io.jverbs.WorkBatch batch = lb.client.qp.newBatch(2);
            batch.read(1, reg, 0, 4096, lb.serverRemote(), 0, true);
            arena.close();
            // the freed memory may be reused by the next allocation: the post must not reach the device
            return refused(IllegalStateException.class, "registered buffer", () -> lb.client.qp.post(batch));
        });
        CASES.put("post a batch whose buffer was closed after it was added", (lb, d) -> {
            RegisteredBuffer buffer = lb.client.pd.allocate(4096);
            io.jverbs.WorkBatch batch = lb.client.qp.newBatch(2);
            batch.write(1, buffer, 0, 4096, lb.serverRemote(), 0, true);
            buffer.close();
            return refused(IllegalStateException.class, "closed", () -> lb.client.qp.post(batch));
        });
        CASES.put("a registration whose caller arena closed is released", (lb, d) -> {
            Arena arena = Arena.ofShared();
            RegisteredBuffer reg = lb.client.pd.register(arena.allocate(4096, 4096), Access.REMOTE_WRITE);
            arena.close();
            long start = System.nanoTime();
            while (!reg.isClosed() && System.nanoTime() - start < 5_000_000_000L) {
                Thread.sleep(10);
            }
            if (!reg.isClosed()) {
                throw new LoopbackChild.Unchecked("the registration is still open 5 s after its arena closed");
            }
            return "deregistered " + (System.nanoTime() - start) / 1_000_000 + " ms after the arena closed";
        });
        CASES.put("the segment of a buffer closed with its memory", (lb, d) -> {
            RegisteredBuffer owned = lb.client.pd.allocate(4096);
            owned.close();
            return refused(IllegalStateException.class, "its memory freed with it", owned::segment);
        });
        CASES.put("register(arena, segment): the peer's write after the arena closed fails", (lb, d) -> {
            Arena arena = Arena.ofShared();
            RegisteredBuffer reg = lb.server.pd.register(arena, arena.allocate(4096, 4096), Access.REMOTE_WRITE);
            RemoteBuffer stale = reg.remote();
            arena.close();
            if (!reg.isClosed()) {
                throw new LoopbackChild.Unchecked("the arena closed but its registration is open");
            }
            lb.client.startPoller();
            Throwable t = failureOf(lb.client.qp.async().write(lb.client.buffer, 0, 64, stale, 0));
            return "deregistered with its arena; the peer's write then failed: " + status(t);
        });
        CASES.put("a read-only segment with remote write rights", (lb, d) -> refused(IllegalArgumentException.class,
                "read-only", () -> lb.client.pd.register(Arena.ofAuto().allocate(4096, 4096).asReadOnly(),
                        Access.REMOTE_WRITE)));
        CASES.put("a receive or an RDMA Read into a read-only registration", (lb, d) -> {
            RegisteredBuffer ro = lb.client.pd.register(Arena.ofAuto().allocate(4096, 4096).asReadOnly(),
                    Access.REMOTE_READ);
            String receive = refused(IllegalArgumentException.class, "read-only",
                    () -> lb.client.qp.receive(1, ro, 0, 64));
            String read = refused(IllegalArgumentException.class, "read-only",
                    () -> lb.client.qp.read(2, ro, 0, 64, lb.serverRemote(), 0, true));
            return receive + "; " + read;
        });

        CASES.put("a batched inline write carries the bytes of the post, not of the add", (lb, d) -> {
            int bytes = Math.min(32, lb.client.qp.maxInlineData());
            if (bytes <= 0) {
                throw new AssertionError("queue pair " + lb.client.qp.number() + " inlines nothing on " + d.name());
            }
            RegisteredBuffer source = lb.client.pd.allocate(4096);
            source.segment().fill((byte) 0x11);
            lb.server.buffer.segment().asSlice(0, bytes).fill((byte) 0);
            io.jverbs.WorkBatch batch = lb.client.qp.newBatch(1);
            batch.write(1, source, 0, bytes, lb.serverRemote(), 0, true);
            source.segment().fill((byte) 0x22); // filled in after the add, before the post
            if (lb.client.qp.post(batch) != QueuePair.OK) {
                throw new AssertionError("the batch was not posted");
            }
            int[] done = new int[1];
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (done[0] == 0 && System.nanoTime() < deadline) {
                lb.client.cq.poll(c -> done[0]++, 4);
            }
            byte landed = lb.server.buffer.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, bytes - 1);
            if (done[0] == 0) {
                throw new AssertionError("the write did not complete");
            }
            if (landed != 0x22) {
                throw new LoopbackChild.Unchecked("the " + bytes + "-byte inline write carried 0x"
                        + Integer.toHexString(landed & 0xff) + ", the bytes of the add (0x11), not of the post (0x22)");
            }
            return "the " + bytes + "-byte inline write landed the bytes of the post (0x22)";
        });

        // ---- parents are checked ----
        CASES.put("a queue pair on a completion queue of another context", (lb, d) -> refused(
                IllegalArgumentException.class, "same Context",
                () -> lb.client.pd.createQueuePair(config(QueuePairConfig.rc(lb.server.cq), d).withDepth(4, 4))));
        CASES.put("a datagram queue pair on a completion queue of another context", (lb, d) -> refused(
                IllegalArgumentException.class, "same Context",
                () -> DatagramQueuePair.create(lb.client.pd, lb.server.cq, 4, DatagramQueuePair.DEFAULT_QKEY, -1)));
        CASES.put("a 64-byte write from a buffer of another protection domain", (lb, d) -> {
            RegisteredBuffer other = lb.client.context.allocateProtectionDomain().allocate(4096);
            return refused(IllegalArgumentException.class, "protection domain",
                    () -> lb.client.qp.write(1, other, 0, 64, lb.serverRemote(), 0, true));
        });
        CASES.put("a 4 KiB write from a buffer of another protection domain", (lb, d) -> {
            RegisteredBuffer other = lb.client.context.allocateProtectionDomain().allocate(4096);
            return refused(IllegalArgumentException.class, "protection domain",
                    () -> lb.client.qp.async().write(other, 0, 4096, lb.serverRemote(), 0));
        });
        CASES.put("a receive into a buffer of another protection domain", (lb, d) -> {
            RegisteredBuffer other = lb.client.context.allocateProtectionDomain().allocate(4096);
            return refused(IllegalArgumentException.class, "protection domain",
                    () -> lb.client.qp.receive(1, other, 0, 64));
        });
        CASES.put("a batch filled from a buffer of another protection domain", (lb, d) -> {
            RegisteredBuffer other = lb.client.context.allocateProtectionDomain().allocate(4096);
            io.jverbs.WorkBatch batch = lb.client.qp.newBatch(2);
            return refused(IllegalArgumentException.class, "protection domain",
                    () -> batch.write(1, other, 0, 64, lb.serverRemote(), 0, true));
        });
        CASES.put("a datagram send from a buffer of another protection domain", (lb, d) -> {
            DatagramQueuePair ud = DatagramQueuePair.create(lb.client.pd, lb.client.cq, 4,
                    DatagramQueuePair.DEFAULT_QKEY, -1);
            DatagramQueuePair.Destination self = ud.destination(ud.address());
            RegisteredBuffer other = lb.client.context.allocateProtectionDomain().allocate(4096);
            return refused(IllegalArgumentException.class, "protection domain", () -> ud.send(1, self, other, 0, 8));
        });
        CASES.put("a completion queue smaller than its queue pair's depths", (lb, d) -> {
            CompletionQueue small = lb.client.context.createCompletionQueue(4);
            return refused(IllegalArgumentException.class, "overruns",
                    () -> lb.client.pd.createQueuePair(config(QueuePairConfig.rc(small), d).withDepth(64, 64)));
        });

        // ---- closes from anywhere ----
        CASES.put("close the context from inside a completion handler", (lb, d) -> {
            CompletionQueue cq = lb.client.cq;
            Context ctx = lb.client.context;
            if (lb.client.qp.write(11, lb.client.buffer, 0, 8, lb.serverRemote(), 0, true) != QueuePair.OK) {
                throw new AssertionError("the write was not accepted");
            }
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (!ctx.isClosed()) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("the write did not complete");
                }
                cq.poll(c -> ctx.close(), 16); // must return normally: the device closes after the queue
            }
            if (!cq.isClosed() || !lb.client.qp.isClosed() || !lb.client.buffer.isClosed()) {
                throw new LoopbackChild.Unchecked("the context closed but not its tree");
            }
            return "the poll returned normally; then " + refused(IllegalStateException.class, "closed",
                    () -> cq.poll(null, 1));
        });
        CASES.put("close a Poller from its own handler", (lb, d) -> {
            Poller[] poller = new Poller[1];
            CountDownLatch closed = new CountDownLatch(1);
            poller[0] = Poller.start(c -> {
                poller[0].close();
                closed.countDown();
            }, IdleStrategy.backoff(), lb.client.cq);
            lb.client.qp.write(5, lb.client.buffer, 0, 8, lb.serverRemote(), 0, true);
            if (!closed.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                throw new AssertionError("the handler did not run or its close did not return");
            }
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (poller[0].isRunning() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            if (poller[0].isRunning() || lb.client.cq.handlerFailures() != 0) {
                throw new LoopbackChild.Unchecked("running " + poller[0].isRunning() + ", handler failures "
                        + lb.client.cq.handlerFailures());
            }
            return "stopped after that round, no handler failure";
        });

        CASES.put("close a completion queue from its handler while another thread closes it", (lb, d) -> {
            CompletionQueue cq = lb.client.cq;
            long ms = closeFromHandlerAndAnotherThread(lb, cq::close);
            if (!cq.isClosed() || !lb.client.qp.isClosed()) {
                throw new LoopbackChild.Unchecked("both closes returned, but the queue or its queue pair is open");
            }
            return "the other thread's close returned in " + ms + " ms, the handler's too; queue and queue pair closed";
        });
        CASES.put("close the context from a handler and from another thread at once", (lb, d) -> {
            Context ctx = lb.client.context;
            long ms = closeFromHandlerAndAnotherThread(lb, ctx::close);
            if (!lb.client.cq.isClosed() || !lb.client.qp.isClosed() || !ctx.isClosed()) {
                throw new LoopbackChild.Unchecked("the context closed but not its tree");
            }
            return "both closes returned normally (the other thread's in " + ms + " ms); the tree is closed,"
                    + " children before parents";
        });
        CASES.put("objects made on another thread while the context closes", (lb, d) -> {
            Context ctx = Rdma.open(d.name());
            List<io.jverbs.Resource> made = java.util.Collections.synchronizedList(new ArrayList<>());
            AtomicBoolean stop = new AtomicBoolean();
            Thread maker = Thread.ofPlatform().start(() -> {
                while (!stop.get()) {
                    try {
                        made.add(ctx.allocateProtectionDomain());
                        made.add(ctx.createCompletionQueue(16));
                    } catch (IllegalStateException closed) {
                        return; // refused: the context is closed or closing
                    }
                }
            });
            Thread.sleep(200);
            ctx.close();
            stop.set(true);
            maker.join(WAIT.toMillis());
            long open;
            synchronized (made) {
                open = made.stream().filter(r -> !r.isClosed()).count();
            }
            if (open > 0) {
                throw new LoopbackChild.Unchecked(open + " of " + made.size() + " objects made during the close outlived"
                        + " the context");
            }
            return made.size() + " objects made while the context closed, all closed with it; later ones refused";
        });
        CASES.put("queue pairs made on another thread while their completion queue closes", (lb, d) -> {
            try (Context ctx = Rdma.open(d.name())) {
                io.jverbs.ProtectionDomain pd = ctx.allocateProtectionDomain();
                CompletionQueue cq = ctx.createCompletionQueue(4096);
                List<QueuePair> made = java.util.Collections.synchronizedList(new ArrayList<>());
                AtomicBoolean stop = new AtomicBoolean();
                AtomicReference<Throwable> other = new AtomicReference<>();
                Thread maker = Thread.ofPlatform().start(() -> {
                    while (!stop.get()) {
                        try {
                            made.add(pd.createQueuePair(config(QueuePairConfig.rc(cq), d).withDepth(2, 2)));
                        } catch (IllegalStateException closed) {
                            return; // refused: the queue is closed or closing
                        } catch (Throwable t) {
                            other.set(t);
                            return;
                        }
                    }
                });
                Thread.sleep(300);
                cq.close();
                stop.set(true);
                maker.join(WAIT.toMillis());
                if (other.get() != null) {
                    throw new AssertionError("a creation failed otherwise than refused", other.get());
                }
                long open;
                synchronized (made) {
                    open = made.stream().filter(qp -> !qp.isClosed()).count();
                }
                if (open > 0) {
                    throw new LoopbackChild.Unchecked(open + " of " + made.size() + " queue pairs made during the close"
                            + " outlived their completion queue");
                }
                return made.size() + " queue pairs made while their completion queue closed, all closed before it;"
                        + " later ones refused";
            }
        });
        CASES.put("sizes beyond the device's limits are refused naming the limits", (lb, d) -> {
            Context.DeviceAttributes limits = lb.client.context.deviceAttributes();
            String cq = limits.maxCqe() == Integer.MAX_VALUE ? "max_cqe not reachable"
                    : refused(io.jverbs.ibverbs.VerbsException.class, "max_cqe",
                            () -> lb.client.context.createCompletionQueue(limits.maxCqe() + 1));
            // more inline bytes than any device takes (rxe: 1 KiB or less), on queues that fit the queue
            String qp = refused(io.jverbs.ibverbs.VerbsException.class, "max_qp_wr",
                    () -> lb.client.pd.createQueuePair(config(QueuePairConfig.rc(lb.client.cq), d)
                            .withDepth(4, 4).withMaxInlineData(1 << 20)));
            return cq + "; " + qp;
        });
        CASES.put("a queue pair closes while its completion queue waits for an event", (lb, d) -> {
            try (Context ctx = Rdma.open(d.name())) {
                CompletionQueue cq = ctx.createCompletionQueueWithEvents(64);
                QueuePair qp = ctx.allocateProtectionDomain().createQueuePair(config(QueuePairConfig.rc(cq), d)
                        .withDepth(8, 8));
                long ms = closeDuringEventWait(cq, 6_000, qp::close, "qp.close()");
                return "qp.close() returned in " + ms + " ms while another thread waited for an event";
            }
        });
        CASES.put("close a completion queue while another thread waits a minute for its event", (lb, d) -> {
            try (Context ctx = Rdma.open(d.name())) {
                CompletionQueue cq = ctx.createCompletionQueueWithEvents(64);
                long ms = closeDuringEventWait(cq, 60_000, cq::close, "cq.close()");
                if (!cq.isClosed()) {
                    throw new AssertionError("the queue is open after its close");
                }
                return "cq.close() returned in " + ms + " ms; the wait returned false";
            }
        });
        CASES.put("a connection closes while its poller's handler is blocked", (lb, d) -> {
            CountDownLatch inHandler = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            io.jverbs.CompletionHandler blocked = c -> {
                inHandler.countDown();
                try {
                    release.await(60, TimeUnit.SECONDS); // blocking work in a handler: the user's mistake
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            };
            try (Connection.Server server = Connection.listen(lb.server.pd, d.ip(), 0,
                    Connection.Options.defaults().configure(c -> config(c, d)).depth(8, 8), SHARED)) {
                CompletableFuture<Connection> accepted = CompletableFuture.supplyAsync(() -> server.accept(WAIT));
                Connection client = Connection.connect(lb.client.pd, d.ip(), server.port(),
                        Connection.Options.defaults().configure(c -> config(c, d)).depth(8, 8)
                                .polling(IdleStrategy.backoff(), blocked));
                try (Connection s = accepted.get(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                    client.queuePair().write(7, lb.client.buffer, 0, 8, lb.serverRemote(), 64, true);
                    if (!inHandler.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                        throw new AssertionError("the handler was not called");
                    }
                    long start = System.nanoTime();
                    CompletableFuture<Void> close = CompletableFuture.runAsync(client::close);
                    try {
                        close.get(10, TimeUnit.SECONDS);
                    } catch (TimeoutException e) {
                        throw new LoopbackChild.Unchecked("Connection.close() waited for the blocked handler");
                    } finally {
                        release.countDown();
                    }
                    long ms = (System.nanoTime() - start) / 1_000_000;
                    if (ms > 5_000) {
                        throw new LoopbackChild.Unchecked("Connection.close() took " + ms + " ms with the handler"
                                + " blocked: its documented bound is 2 s of waiting plus the disconnect, under 5 s");
                    }
                    CompletionQueue cq = client.completionQueue();
                    return "Connection.close() returned in " + ms + " ms with the handler blocked; queue closed "
                            + cq.isClosed();
                }
            }
        });
        CASES.put("a back-off that parks longer than the deadline sweep", (lb, d) -> refused(
                IllegalArgumentException.class, "100 ms", () -> io.jverbs.IdleStrategy.backoff(100, 10, 5_000_000_000L)));
        CASES.put("a wait on the owner thread of a confined queue", (lb, d) -> {
            try (Context ctx = Rdma.open(d.name())) {
                CompletionQueue cq = ctx.createConfinedCompletionQueue(16);
                QueuePair qp = ctx.allocateProtectionDomain().createQueuePair(config(QueuePairConfig.rc(cq), d)
                        .withDepth(4, 4));
                RegisteredBuffer local = qp.protectionDomain().allocate(64);
                QueuePair peer = lb.server.pd.createQueuePair(config(QueuePairConfig.rc(lb.server.cq), d).withDepth(4, 4));
                qp.connect(peer.localEndpoint());
                peer.connect(qp.localEndpoint());
                CompletableFuture<?> f = qp.async().write(local, 0, 8, lb.serverRemote(), 0);
                long start = System.nanoTime();
                String r = refused(IllegalStateException.class, "only this thread", f::join);
                long ms = (System.nanoTime() - start) / 1_000_000;
                if (ms > 500) {
                    throw new LoopbackChild.Unchecked("the refusal came after " + ms + " ms, not at once");
                }
                while (cq.poll(c -> { }, 4) == 0 && !f.isDone()) {
                    Thread.onSpinWait(); // the owner polls, as it must
                }
                peer.close();
                return r + " (in " + ms + " ms)";
            }
        });
        CASES.put("a manual poll of a queue a Poller serves", (lb, d) -> {
            lb.client.startPoller();
            return refused(IllegalStateException.class, "served by a Poller", () -> lb.client.cq.poll(c -> { }, 16));
        });
        CASES.put("a receive ring with a Poller but no handler", (lb, d) -> {
            RegisteredBuffer ring = lb.server.pd.allocate(4 * 256);
            Connection.Options options = Connection.Options.defaults().configure(c -> config(c, d)).depth(8, 8)
                    .receiveRing(ring, 256);
            return refused(IllegalArgumentException.class, "no handler",
                    () -> Connection.connect(lb.client.pd, d.ip(), 1, options));
        });
        CASES.put("a confined queue pair whose owner thread ended, closed from another thread", (lb, d) -> {
            Context ctx = Rdma.open(d.name());
            AtomicReference<QueuePair> made = new AtomicReference<>();
            Thread owner = Thread.ofPlatform().start(() -> {
                CompletionQueue cq = ctx.createConfinedCompletionQueue(16);
                made.set(ctx.allocateProtectionDomain().createQueuePair(config(QueuePairConfig.rc(cq), d)
                        .withDepth(4, 4).withConfined(true)));
            });
            owner.join(WAIT.toMillis());
            QueuePair qp = made.get();
            if (qp == null) {
                throw new AssertionError("the owner thread made no queue pair");
            }
            ctx.close(); // the owner ended: anyone may close what it confined
            if (!qp.isClosed() || !ctx.isClosed()) {
                throw new LoopbackChild.Unchecked("the context's close left the ended owner's queue pair open");
            }
            return "Context.close() on another thread closed the queue pair and queue of an ended owner thread";
        });
        CASES.put("more outstanding reads than the device takes", (lb, d) -> {
            int limit = Math.min(lb.client.context.deviceAttributes().maxQpRdAtomic(),
                    lb.client.context.deviceAttributes().maxQpInitRdAtomic());
            if (limit >= 255) {
                return "the device takes 255: nothing to cap";
            }
            try (QueuePair a = lb.client.pd.createQueuePair(config(QueuePairConfig.rc(lb.client.cq), d).withDepth(4, 4)
                    .withMaxRdAtomic(limit + 1));
                 QueuePair b = lb.server.pd.createQueuePair(config(QueuePairConfig.rc(lb.server.cq), d).withDepth(4, 4)
                    .withMaxRdAtomic(255))) {
                a.connect(b.localEndpoint());
                b.connect(a.localEndpoint());
                if (a.maxRdAtomic() != limit || b.maxRdAtomic() != limit) {
                    throw new AssertionError("not capped to " + limit + ": " + a.maxRdAtomic() + ", " + b.maxRdAtomic());
                }
                return "asked " + (limit + 1) + " and 255, connected with the device's " + limit;
            }
        });
        CASES.put("a receive ring given to a second live connection", (lb, d) -> {
            RegisteredBuffer ring = lb.server.pd.allocate(4 * 256);
            Connection.Options options = Connection.Options.defaults().configure(c -> config(c, d)).depth(8, 8)
                    .receiveRing(ring, 256).callerPolls();
            try (Connection.Server server = Connection.listen(lb.server.pd, d.ip(), 0, options, SHARED)) {
                Connection.Options client = Connection.Options.defaults().configure(c -> config(c, d)).depth(8, 8)
                        .callerPolls();
                CompletableFuture<Connection> first = CompletableFuture.supplyAsync(() -> server.accept(WAIT));
                try (Connection c1 = Connection.connect(lb.client.pd, d.ip(), server.port(), client);
                     Connection s1 = first.get(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                    String refusal = refused(IllegalStateException.class, "another live connection",
                            () -> server.accept(Duration.ofSeconds(1)));
                    s1.close();
                    CompletableFuture<Connection> again = CompletableFuture.supplyAsync(() -> server.accept(WAIT));
                    try (Connection c2 = Connection.connect(lb.client.pd, d.ip(), server.port(), client);
                         Connection s2 = again.get(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                        return refusal + "; once the first closed, the ring served the next connection";
                    }
                }
            }
        });

        // ---- defaults that give up ----
        CASES.put("a write to a dead endpoint with the default retries", (lb, d) -> {
            QueuePairConfig defaults = QueuePairConfig.rc(lb.client.cq);
            if (defaults.retryCount() > 6 || defaults.rnrRetry() > 6) {
                throw new LoopbackChild.Unchecked("defaults retry " + defaults.retryCount() + ", RNR " + defaults.rnrRetry());
            }
            QueuePair gone = lb.server.pd.createQueuePair(config(QueuePairConfig.rc(lb.server.cq), d).withDepth(4, 4));
            QueuePair qp = lb.client.pd.createQueuePair(config(QueuePairConfig.rc(lb.client.cq), d).withDepth(4, 4));
            qp.connect(gone.localEndpoint());
            gone.close();
            lb.client.startPoller();
            long start = System.nanoTime();
            Throwable t = failureOf(qp.async().write(lb.client.buffer, 0, 64, lb.serverRemote(), 0));
            requireStatus(t, "RETRY_EXC_ERR");
            return "RETRY_EXC_ERR after " + (System.nanoTime() - start) / 1_000_000 + " ms";
        });
        CASES.put("a send with no receive posted, default RNR retries", (lb, d) -> {
            lb.client.startPoller();
            long start = System.nanoTime();
            Throwable t = failureOf(lb.client.qp.async().send(lb.client.buffer, 0, 64));
            requireStatus(t, "RNR_RETRY_EXC_ERR");
            return "RNR_RETRY_EXC_ERR after " + (System.nanoTime() - start) / 1_000_000 + " ms";
        });
        CASES.put("queue pair attributes: ranges and a with method for each", (lb, d) -> {
            CompletionQueue cq = lb.client.cq;
            String retry = refused(IllegalArgumentException.class, "retryCount",
                    () -> QueuePairConfig.rc(cq).withRetry(14, 8));
            String noAckTimeout = refused(IllegalArgumentException.class, "ACK timeout off",
                    () -> QueuePairConfig.rc(cq).withRetry(0, 3));
            String timeout = refused(IllegalArgumentException.class, "operationTimeout",
                    () -> QueuePairConfig.rc(cq).withOperationTimeout(Duration.ZERO));
            String forever = refused(IllegalArgumentException.class, "365 days",
                    () -> QueuePairConfig.rc(cq).withOperationTimeout(java.time.temporal.ChronoUnit.FOREVER.getDuration()));
            String uc = refused(IllegalArgumentException.class, "UC",
                    () -> QueuePairConfig.uc(cq).withRemoteAccess(Access.REMOTE_READ));
            QueuePairConfig c = QueuePairConfig.rc(cq).withRnrRetry(3, 20).withMaxRdAtomic(16).withPort(1)
                    .withOperationTimeout(Duration.ofSeconds(2)).withRemoteAccess(Access.REMOTE_READ);
            if (c.rnrRetry() != 3 || c.minRnrTimer() != 20 || c.maxRdAtomic() != 16
                    || !c.remoteAccess().equals(java.util.Set.of(Access.REMOTE_READ))) {
                throw new AssertionError("the with methods did not apply: " + c);
            }
            return retry + "; " + noAckTimeout + "; " + timeout + "; " + forever + "; " + uc;
        });

        CASES.put("a completion queue overrun errors the queue pairs on it and fails their futures", (lb, d) -> {
            // jverbs' own queue pairs cannot overrun a queue (their depths are checked against it):
            // a raw queue pair of the thin layer on the same queue does it, 16 completions into 7 entries
            CompletionQueue small = lb.client.context.createCompletionQueue(4);
            QueuePair victim = lb.client.pd.createQueuePair(config(QueuePairConfig.rc(small), d).withDepth(1, 1));
            QueuePair far = lb.server.pd.createQueuePair(config(QueuePairConfig.rc(lb.server.cq), d).withDepth(4, 4));
            victim.connect(far.localEndpoint());
            far.connect(victim.localEndpoint());
            CompletableFuture<WorkResult> pending = victim.async().receive(lb.client.buffer, 0, 64);
            MemorySegment raw = rawLoopbackQp(lb, small, victim.gid());
            try (Arena a = Arena.ofConfined()) {
                io.jverbs.ibverbs.device.Mr mr = new io.jverbs.ibverbs.device.Mr(lb.client.buffer.segment(),
                        lb.client.buffer.handle().reinterpret(io.jverbs.ibverbs.raw.ibv_mr.sizeof()));
                for (int i = 0; i < 16; i++) {
                    MemorySegment wr = io.jverbs.ibverbs.device.WorkRequests.send(a, i, verbs_h.IBV_WR_RDMA_WRITE, mr,
                            1024, 8);
                    io.jverbs.ibverbs.device.WorkRequests.rdma(wr, lb.client.buffer.address() + 2048,
                            lb.client.buffer.rkey());
                    io.jverbs.ibverbs.device.WorkRequests.postSend(raw, wr);
                }
                Throwable t = failureOf(pending);
                if (victim.state() != QueuePair.State.ERROR || !String.valueOf(victim.error()).contains("asynchronous")) {
                    throw new LoopbackChild.Unchecked("the queue pair on the overrun queue is " + victim.state() + " (" + victim.error()
                            + "); its future failed with " + t);
                }
                return victim.error() + "; its future: " + t.getMessage();
            } finally {
                verbs_h.ibv_destroy_qp(raw);
            }
        });

        // ---- futures end ----
        CASES.put("a future on a completion queue nobody polls", (lb, d) -> {
            Throwable t = failureOf(lb.client.qp.async().write(lb.client.buffer, 0, 64, lb.serverRemote(), 0));
            if (!(t instanceof IllegalStateException) || !t.getMessage().contains("Poller")) {
                throw new LoopbackChild.Unchecked("expected an IllegalStateException naming Poller, got " + t);
            }
            return t.getMessage();
        });
        CASES.put("join on the poller thread inside a future's callback", (lb, d) -> {
            lb.client.startPoller();
            CompletableFuture<WorkResult> arrives = lb.client.qp.async().receive(lb.client.buffer, 2048, 64);
            CompletableFuture<WorkResult> nested = arrives.thenApply(r ->
                    lb.client.qp.async().write(lb.client.buffer, 0, 8, lb.serverRemote(), 0).join());
            lb.server.qp.send(1, lb.server.buffer, 0, 8, true); // completes `arrives` on the poller thread
            Throwable t = failureOf(nested);
            if (!(t instanceof IllegalStateException) || !t.getMessage().contains("forever")) {
                throw new LoopbackChild.Unchecked("expected the join to be refused, got " + t);
            }
            return t.getMessage();
        });
        CASES.put("wait on a future inside a handler of the caller's own poll", (lb, d) -> {
            CompletableFuture<WorkResult> pending = lb.client.qp.async().receive(lb.client.buffer, 1024, 64);
            lb.client.qp.write(5, lb.client.buffer, 0, 8, lb.serverRemote(), 0, true);
            String[] seen = {null};
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (seen[0] == null && System.nanoTime() < deadline) {
                lb.client.cq.poll(c -> {
                    try {
                        pending.get(1, TimeUnit.SECONDS);
                        seen[0] = "returned";
                    } catch (IllegalStateException e) {
                        seen[0] = e.getMessage();
                    } catch (Exception e) {
                        seen[0] = "waited and then: " + e;
                    }
                }, 16);
            }
            if (seen[0] == null || !seen[0].contains("forever")) {
                throw new LoopbackChild.Unchecked("the wait inside the handler was not refused: " + seen[0]);
            }
            return seen[0];
        });
        CASES.put("a Poller that dies fails the futures it served", (lb, d) -> {
            AtomicBoolean armed = new AtomicBoolean();
            Poller poller = Poller.start(null, work -> {
                if (armed.get()) {
                    throw new IllegalStateException("the idle strategy failed");
                }
            }, lb.client.cq);
            CompletableFuture<WorkResult> f = lb.client.qp.async().receive(lb.client.buffer, 0, 64);
            armed.set(true);
            Throwable t = failureOf(f);
            if (!(t instanceof IllegalStateException) || poller.failure() == null) {
                throw new LoopbackChild.Unchecked("future: " + t + ", poller failure: " + poller.failure());
            }
            return t.getMessage();
        });
        CASES.put("closing a Poller fails the futures it served", (lb, d) -> {
            Poller poller = Poller.start(null, IdleStrategy.backoff(), lb.client.cq);
            CompletableFuture<WorkResult> f = lb.client.qp.async().receive(lb.client.buffer, 0, 64);
            poller.close();
            Throwable t = failureOf(f);
            if (!(t instanceof IllegalStateException)) {
                throw new LoopbackChild.Unchecked("expected an IllegalStateException, got " + t);
            }
            return t.getMessage();
        });

        CASES.put("obtrude or completeAsync on a posted receive's future", (lb, d) -> {
            lb.client.startPoller();
            CompletableFuture<WorkResult> f = lb.client.qp.async().receive(lb.client.buffer, 0, 64);
            String value = refused(UnsupportedOperationException.class, "obtrudeValue", () -> f.obtrudeValue(null));
            refused(UnsupportedOperationException.class, "obtrudeException",
                    () -> f.obtrudeException(new RuntimeException("forced")));
            refused(UnsupportedOperationException.class, "completeAsync", () -> f.completeAsync(() -> null));
            if (f.isDone()) {
                throw new LoopbackChild.Unchecked("the receive's future ended while the receive is posted: " + f);
            }
            lb.server.buffer.segment().setString(0, "for-the-receive");
            lb.server.qp.send(1, lb.server.buffer, 0, 16, true);
            WorkResult r = f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
            String landed = lb.client.buffer.segment().getString(0);
            if (!landed.equals("for-the-receive")) {
                throw new AssertionError("the receive took " + r.byteLength() + " B but the buffer holds '" + landed + "'");
            }
            return "obtrudeValue, obtrudeException and completeAsync refused (" + value + "); the receive then took"
                    + " the peer's message";
        });
        CASES.put("allOf of a write and a receive joined in a Poller callback ends at the deadline", (lb, d) -> {
            QueuePair a = lb.client.pd.createQueuePair(config(QueuePairConfig.rc(lb.client.cq), d).withDepth(8, 8)
                    .withOperationTimeout(Duration.ofSeconds(1)).withRetry(14, 7)); // retries forever: only the deadline ends the write
            QueuePair gone = lb.server.pd.createQueuePair(config(QueuePairConfig.rc(lb.server.cq), d).withDepth(8, 8));
            a.connect(gone.localEndpoint());
            gone.close();
            lb.client.startPoller();
            CompletableFuture<WorkResult> write = a.async().write(lb.client.buffer, 0, 64, lb.serverRemote(), 0);
            CompletableFuture<WorkResult> receive = a.async().receive(lb.client.buffer, 1024, 64); // receives have no deadline
            // the peer's message completes a receive on the same queue: its callback runs on the poller thread,
            // which then blocks in the join, and only it could poll the flushed receive's completion
            CompletableFuture<Object> nested = lb.client.qp.async().receive(lb.client.buffer, 2048, 64)
                    .thenApply(r -> {
                        try {
                            return CompletableFuture.allOf(write, receive).join();
                        } catch (java.util.concurrent.CompletionException e) {
                            return e.getCause();
                        }
                    });
            lb.server.qp.send(1, lb.server.buffer, 0, 8, true);
            long start = System.nanoTime();
            Object outcome = nested.get(WAIT.toSeconds(), TimeUnit.SECONDS);
            long ms = (System.nanoTime() - start) / 1_000_000;
            Throwable receiveFailure = failureOf(receive);
            if (!(outcome instanceof Throwable) || !(receiveFailure instanceof IllegalStateException)) {
                throw new LoopbackChild.Unchecked("the join returned " + outcome + "; the receive: " + receiveFailure);
            }
            return "the join ended in " + ms + " ms; the receive: " + receiveFailure.getMessage();
        });
        CASES.put("a receive failed by its Poller's close does not take the next message", (lb, d) -> {
            Poller poller = Poller.start(null, IdleStrategy.backoff(), lb.client.cq);
            CompletableFuture<WorkResult> f = lb.client.qp.async().receive(lb.client.buffer, 0, 64);
            poller.close();
            Throwable t = failureOf(f);
            lb.client.buffer.segment().fill((byte) 0);
            lb.server.buffer.segment().setString(0, "late-message");
            lb.server.startPoller();
            Throwable send = failureOf(lb.server.qp.async().send(lb.server.buffer, 0, 16));
            String landed = lb.client.buffer.segment().getString(0);
            if (!landed.isEmpty()) {
                throw new LoopbackChild.Unchecked("the failed receive's buffer took the peer's message: " + landed);
            }
            return "the future failed (" + t.getMessage() + "); the peer's send then failed (" + status(send)
                    + ") and the buffer stayed untouched";
        });
        CASES.put("cancel a pending receive", (lb, d) -> {
            lb.client.startPoller();
            CompletableFuture<WorkResult> f = lb.client.qp.async().receive(lb.client.buffer, 0, 64);
            if (f.cancel(true) || f.isDone()) {
                throw new LoopbackChild.Unchecked("cancel ended the future of a receive still posted");
            }
            lb.server.buffer.segment().setString(0, "for-the-receive");
            lb.server.qp.send(1, lb.server.buffer, 0, 16, true);
            WorkResult r = f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
            return "cancel returned false; the receive then took the message (" + r.byteLength() + " B)";
        });
        CASES.put("a latency recorder that throws", (lb, d) -> {
            java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
            QueuePair tracked = lb.client.pd.createQueuePair(config(QueuePairConfig.rc(lb.client.cq), d).withDepth(8, 8));
            tracked.trackLatency(new io.jverbs.latency.LatencyTracker(nanos -> { // before connect
                if (calls.getAndIncrement() == 0) {
                    throw new RuntimeException("the metrics backend failed");
                }
            }, 64));
            QueuePair peer = lb.server.pd.createQueuePair(config(QueuePairConfig.rc(lb.server.cq), d).withDepth(8, 8));
            tracked.connect(peer.localEndpoint());
            peer.connect(tracked.localEndpoint());
            List<Throwable> reported = new java.util.concurrent.CopyOnWriteArrayList<>();
            lb.client.cq.onHandlerError(reported::add);
            lb.client.startPoller();
            for (int i = 0; i < 2; i++) {
                tracked.async().write(lb.client.buffer, 0, 64, lb.serverRemote(), 0).get(WAIT.toSeconds(), TimeUnit.SECONDS);
            }
            if (reported.size() != 1 || lb.client.cq.handlerFailures() != 1 || !lb.client.poller.isRunning()) {
                throw new LoopbackChild.Unchecked("reported " + reported + ", failures " + lb.client.cq.handlerFailures()
                        + ", poller running " + lb.client.poller.isRunning());
            }
            return "both writes completed; the recorder's exception was reported once: " + reported.get(0).getMessage();
        });
        CASES.put("one latency tracker given to two live queue pairs", (lb, d) -> {
            io.jverbs.latency.LatencyTracker tracker = new io.jverbs.latency.LatencyTracker(nanos -> { }, 64);
            QueuePair first = lb.client.pd.createQueuePair(config(QueuePairConfig.rc(lb.client.cq), d).withDepth(8, 8));
            QueuePair second = lb.client.pd.createQueuePair(config(QueuePairConfig.rc(lb.client.cq), d).withDepth(8, 8));
            first.trackLatency(tracker);
            String r = refused(IllegalStateException.class, "another queue pair", () -> second.trackLatency(tracker));
            first.close();
            second.trackLatency(tracker); // free again once the first queue pair closed
            return r + "; accepted once the first queue pair closed";
        });
        CASES.put("a latency tracker smaller than the send queue", (lb, d) -> {
            QueuePair qp = lb.client.pd.createQueuePair(config(QueuePairConfig.rc(lb.client.cq), d).withDepth(32, 8));
            io.jverbs.latency.LatencyTracker small = new io.jverbs.latency.LatencyTracker(nanos -> { }, 1);
            String r = refused(IllegalArgumentException.class, "size it for 32", () -> qp.trackLatency(small));
            qp.trackLatency(new io.jverbs.latency.LatencyTracker(nanos -> { }, 32));
            return r;
        });
        CASES.put("a blocking callback of a late future leaves the other deadlines kept", (lb, d) -> {
            // nobody polls: the context fails both futures about 2 s after their posts
            AtomicReference<String> callbackThread = new AtomicReference<>();
            CountDownLatch release = new CountDownLatch(1);
            CompletableFuture<WorkResult> first = lb.client.qp.async().write(lb.client.buffer, 0, 64, lb.serverRemote(), 0);
            first.whenComplete((r, t) -> {
                callbackThread.set(Thread.currentThread().toString());
                try {
                    release.await(30, TimeUnit.SECONDS); // a synchronous reconnect, say
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            Thread.sleep(500);
            long start = System.nanoTime();
            CompletableFuture<WorkResult> second = lb.client.qp.async().write(lb.client.buffer, 64, 64, lb.serverRemote(), 0);
            try {
                Throwable t = failureOf(second);
                long ms = (System.nanoTime() - start) / 1_000_000;
                if (ms > 8000) {
                    throw new LoopbackChild.Unchecked("the second future ended after " + ms + " ms, behind the first's"
                            + " blocked callback on " + callbackThread.get());
                }
                return "the second future failed " + ms + " ms after its post (" + t.getClass().getSimpleName()
                        + ") while the first's callback blocked on " + callbackThread.get();
            } finally {
                release.countDown();
            }
        });

        // ---- pollers ----
        CASES.put("two Pollers on one completion queue", (lb, d) -> {
            try (Poller first = Poller.start(null, IdleStrategy.backoff(), lb.client.cq)) {
                return refused(IllegalArgumentException.class, "already served",
                        () -> Poller.start(null, IdleStrategy.backoff(), lb.client.cq));
            }
        });
        CASES.put("close a Poller from an interrupted thread while its handler runs", (lb, d) -> {
            java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
            AtomicBoolean inHandler = new AtomicBoolean();
            CountDownLatch entered = new CountDownLatch(1);
            Poller poller = Poller.start(c -> {
                inHandler.set(true);
                calls.incrementAndGet();
                entered.countDown();
                java.util.concurrent.locks.LockSupport.parkNanos(200_000_000L);
                inHandler.set(false);
            }, IdleStrategy.backoff(), lb.client.cq);
            for (int i = 0; i < 3; i++) {
                lb.client.qp.write(i, lb.client.buffer, 0, 8, lb.serverRemote(), 0, true);
            }
            if (!entered.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                throw new AssertionError("no completion reached the handler");
            }
            Thread.currentThread().interrupt();
            poller.close();
            boolean flagKept = Thread.interrupted();
            int atClose = calls.get();
            boolean running = inHandler.get();
            Thread.sleep(700);
            if (running || calls.get() != atClose || poller.isRunning() || !flagKept) {
                throw new LoopbackChild.Unchecked("after close: handler running " + running + ", calls " + atClose + " then "
                        + calls.get() + ", poller running " + poller.isRunning() + ", interrupt flag kept " + flagKept);
            }
            return "close waited for the handler (" + atClose + " calls, none after) and kept the interrupt flag";
        });
        CASES.put("a Poller on a closed completion queue", (lb, d) -> {
            CompletionQueue extra = lb.client.context.createCompletionQueue(16);
            extra.close();
            return refused(IllegalArgumentException.class, "closed",
                    () -> Poller.start(null, IdleStrategy.backoff(), extra));
        });
        CASES.put("a Poller on no completion queue", (lb, d) -> refused(IllegalArgumentException.class,
                "at least one", () -> Poller.start(null, IdleStrategy.backoff())));
        CASES.put("one of a Poller's queues closes, the other is still served", (lb, d) -> {
            CompletionQueue extra = lb.client.context.createCompletionQueue(16);
            try (Poller poller = Poller.start(null, IdleStrategy.backoff(), lb.client.cq, extra)) {
                extra.close();
                Thread.sleep(300);
                WorkResult r = lb.client.qp.async().write(lb.client.buffer, 0, 64, lb.serverRemote(), 0)
                        .get(WAIT.toSeconds(), TimeUnit.SECONDS);
                if (!poller.isRunning() || poller.failure() != null) {
                    throw new LoopbackChild.Unchecked("the poller stopped with " + poller.failure());
                }
                return "a write completed through the poller after the other queue closed: " + r.byteLength() + " B";
            }
        });

        // ---- rdma_cm ----
        CASES.put("closing a Context closes its rdma_cm connections", (lb, d) -> {
            try (Context serverCtx = Rdma.open(d.name()); Context clientCtx = Rdma.open(d.name());
                 RdmaCm.Listener listener = RdmaCm.listen(d.ip(), 0)) {
                QueuePair sqp = serverCtx.allocateProtectionDomain().createQueuePair(
                        QueuePairConfig.rc(serverCtx.createCompletionQueue(64)).withDepth(8, 8));
                QueuePair cqp = clientCtx.allocateProtectionDomain().createQueuePair(
                        QueuePairConfig.rc(clientCtx.createCompletionQueue(64)).withDepth(8, 8));
                CompletableFuture<CmConnection> accepted = CompletableFuture.supplyAsync(() -> listener.accept(sqp, WAIT));
                CmConnection client = RdmaCm.connect(cqp, d.ip(), listener.port(), WAIT);
                CmConnection server = accepted.get(WAIT.toSeconds(), TimeUnit.SECONDS);
                clientCtx.close();
                if (!cqp.isClosed()) {
                    throw new LoopbackChild.Unchecked("the queue pair outlived its context");
                }
                if (!server.awaitDisconnect(WAIT)) {
                    throw new LoopbackChild.Unchecked("the peer never heard a disconnect after the client's context closed");
                }
                client.close(); // a no-op now
                return "the peer saw the disconnect; " + client.remoteAddress();
            }
        });
        CASES.put("awaitDisconnect returns when this side closes the connection", (lb, d) -> {
            QueuePair sqp = lb.server.pd.createQueuePair(config(QueuePairConfig.rc(lb.server.cq), d).withDepth(8, 8));
            QueuePair cqp = lb.client.pd.createQueuePair(config(QueuePairConfig.rc(lb.client.cq), d).withDepth(8, 8));
            java.util.concurrent.Executor own = r -> Thread.ofPlatform().daemon().start(r);
            try (RdmaCm.Listener listener = RdmaCm.listen(d.ip(), 0)) {
                CompletableFuture<CmConnection> accepted = CompletableFuture.supplyAsync(() -> listener.accept(sqp, WAIT), own);
                try (CmConnection client = RdmaCm.connect(cqp, d.ip(), listener.port(), WAIT);
                     CmConnection server = accepted.get(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                    CompletableFuture<Boolean> waiting = CompletableFuture.supplyAsync(() -> {
                        try {
                            return client.awaitDisconnect(Duration.ofSeconds(15));
                        } catch (InterruptedException e) {
                            throw new IllegalStateException(e);
                        }
                    }, own);
                    Thread.sleep(300);
                    long start = System.nanoTime();
                    client.close();
                    boolean ended = waiting.get(WAIT.toSeconds(), TimeUnit.SECONDS);
                    long ms = (System.nanoTime() - start) / 1_000_000;
                    if (!ended || ms > 3000) {
                        throw new LoopbackChild.Unchecked("awaitDisconnect returned " + ended + " " + ms
                                + " ms after this side's close");
                    }
                    return "awaitDisconnect returned true " + ms + " ms after this side's close; the peer heard it: "
                            + server.awaitDisconnect(WAIT);
                }
            }
        });
        CASES.put("an accept polled in a loop with a 1 ms timeout takes the client", (lb, d) -> {
            QueuePair sqp = lb.server.pd.createQueuePair(config(QueuePairConfig.rc(lb.server.cq), d).withDepth(8, 8));
            QueuePair cqp = lb.client.pd.createQueuePair(config(QueuePairConfig.rc(lb.client.cq), d).withDepth(8, 8));
            try (RdmaCm.Listener listener = RdmaCm.listen(d.ip(), 0)) {
                AtomicBoolean stop = new AtomicBoolean();
                java.util.concurrent.atomic.AtomicInteger timedOut = new java.util.concurrent.atomic.AtomicInteger();
                CompletableFuture<CmConnection> accepted = new CompletableFuture<>();
                Thread.ofPlatform().daemon().start(() -> {
                    while (!stop.get()) {
                        try {
                            accepted.complete(listener.accept(sqp, Duration.ofMillis(1)));
                            return;
                        } catch (io.jverbs.cm.RdmaCmException e) {
                            timedOut.incrementAndGet(); // nobody yet: other work, then look again
                        } catch (RuntimeException e) {
                            accepted.completeExceptionally(e);
                            return;
                        }
                    }
                });
                Thread.sleep(300);
                try (CmConnection client = RdmaCm.connect(cqp, d.ip(), listener.port(), WAIT);
                     CmConnection server = accepted.get(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                    return "connected after " + timedOut.get() + " empty accepts of 1 ms; server peer "
                            + server.remoteAddress();
                } catch (io.jverbs.cm.RdmaCmException e) {
                    throw new LoopbackChild.Unchecked("the client was lost while the server polled accept(1 ms) "
                            + timedOut.get() + " times: " + e.getMessage());
                } finally {
                    stop.set(true);
                }
            }
        });
        CASES.put("a second accept on a listener ends within its own timeout", (lb, d) -> {
            QueuePair first = lb.server.pd.createQueuePair(config(QueuePairConfig.rc(lb.server.cq), d).withDepth(8, 8));
            QueuePair second = lb.server.pd.createQueuePair(config(QueuePairConfig.rc(lb.server.cq), d).withDepth(8, 8));
            try (RdmaCm.Listener listener = RdmaCm.listen(d.ip(), 0)) {
                CompletableFuture<CmConnection> waiting = CompletableFuture.supplyAsync(
                        () -> listener.accept(first, Duration.ofSeconds(30)));
                Thread.sleep(300);
                long start = System.nanoTime();
                Throwable t;
                try {
                    listener.accept(second, Duration.ofSeconds(2));
                    throw new AssertionError("an accept returned a connection with no client");
                } catch (io.jverbs.cm.RdmaCmException e) {
                    t = e;
                }
                long ms = (System.nanoTime() - start) / 1_000_000;
                listener.close();
                failureOf(waiting);
                if (ms > 3500) {
                    throw new LoopbackChild.Unchecked("accept(2 s) ended after " + ms + " ms, behind the other accept");
                }
                return "accept(2 s) ended in " + ms + " ms while another accept waited: " + t.getMessage();
            }
        });
        CASES.put("virtual threads waiting in accept leave carriers to a connecting one", (lb, d) -> {
            System.setProperty("jdk.virtualThreadScheduler.parallelism", "2"); // before the first virtual thread
            Connection.Options options = Connection.Options.defaults().configure(c -> config(c, d)).depth(8, 8);
            try (Connection.Server first = Connection.listen(lb.server.pd, d.ip(), 0, options, SHARED);
                 Connection.Server second = Connection.listen(lb.server.pd, d.ip(), 0, options, SHARED);
                 java.util.concurrent.ExecutorService virtual = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
                java.util.concurrent.Future<Connection> a1 = virtual.submit(() -> first.accept(Duration.ofSeconds(15)));
                java.util.concurrent.Future<Connection> a2 = virtual.submit(() -> second.accept(Duration.ofSeconds(15)));
                Thread.sleep(1000); // both accepts wait, on the two carriers
                long start = System.nanoTime();
                java.util.concurrent.Future<Connection> client = virtual.submit(() -> Connection.connect(lb.client.pd,
                        d.ip(), first.port(), options.timeout(Duration.ofSeconds(10))));
                try (Connection c = client.get(WAIT.toSeconds(), TimeUnit.SECONDS);
                     Connection s = a1.get(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                    long ms = (System.nanoTime() - start) / 1_000_000;
                    if (ms > 5000) {
                        throw new LoopbackChild.Unchecked("the client's virtual thread connected only after " + ms + " ms");
                    }
                    second.close(); // ends the other accept
                    try {
                        a2.get(WAIT.toSeconds(), TimeUnit.SECONDS);
                    } catch (ExecutionException expected) {
                        // the closed server's accept fails
                    }
                    return "with 2 carriers and 2 virtual threads in accept, a third connected in " + ms + " ms";
                }
            } catch (ExecutionException e) {
                throw new LoopbackChild.Unchecked("a virtual thread's rdma_cm call failed: " + e.getCause());
            }
        });
        CASES.put("closing a listener while an accept waits", (lb, d) -> {
            QueuePair qp = lb.server.pd.createQueuePair(config(QueuePairConfig.rc(lb.server.cq), d).withDepth(8, 8));
            RdmaCm.Listener listener = RdmaCm.listen(d.ip(), 0);
            CompletableFuture<CmConnection> accept = CompletableFuture.supplyAsync(
                    () -> listener.accept(qp, Duration.ofSeconds(60)));
            Thread.sleep(300);
            long start = System.nanoTime();
            listener.close();
            long closeMs = (System.nanoTime() - start) / 1_000_000;
            Throwable t = failureOf(accept);
            long endMs = (System.nanoTime() - start) / 1_000_000;
            if (!(t instanceof IllegalStateException) || closeMs > 1000 || endMs > 3000) {
                throw new LoopbackChild.Unchecked("close took " + closeMs + " ms, the accept ended after " + endMs + " ms with " + t);
            }
            return "close returned in " + closeMs + " ms, the accept ended in " + endMs + " ms: " + t.getMessage();
        });

        CASES.put("a listener closed while an accept runs its admit check", (lb, d) -> {
            QueuePair sqp = lb.server.pd.createQueuePair(config(QueuePairConfig.rc(lb.server.cq), d).withDepth(8, 8));
            QueuePair cqp = lb.client.pd.createQueuePair(config(QueuePairConfig.rc(lb.client.cq), d).withDepth(8, 8));
            RdmaCm.Listener listener = RdmaCm.listen(d.ip(), 0);
            CountDownLatch inAdmit = new CountDownLatch(1);
            // a thread each: the common pool may have one thread, and the connect must run beside the accept
            java.util.concurrent.Executor own = r -> Thread.ofPlatform().daemon().start(r);
            CompletableFuture<CmConnection> accepted = CompletableFuture.supplyAsync(() -> listener.accept(sqp, WAIT,
                    from -> {
                        inAdmit.countDown();
                        try {
                            Thread.sleep(500); // an allow-list lookup
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        return true;
                    }), own);
            CompletableFuture<CmConnection> connected = CompletableFuture.supplyAsync(
                    () -> RdmaCm.connect(cqp, d.ip(), listener.port(), WAIT), own);
            if (!inAdmit.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                throw new AssertionError("no connection request reached the admit check");
            }
            listener.close();
            Throwable acceptFailure = failureOf(accepted);
            if (!(acceptFailure instanceof IllegalStateException) || !acceptFailure.getMessage().contains("closed")) {
                throw new AssertionError("expected IllegalStateException naming the close, got " + acceptFailure,
                        acceptFailure);
            }
            Throwable connectFailure;
            try {
                CmConnection c = connected.get(WAIT.toSeconds(), TimeUnit.SECONDS);
                if (!c.awaitDisconnect(WAIT)) {
                    throw new LoopbackChild.Unchecked("the client is connected to a closed listener and hears nothing");
                }
                connectFailure = null;
            } catch (ExecutionException e) {
                connectFailure = e.getCause();
            }
            if (sqp.state() == QueuePair.State.CONNECTED) {
                throw new LoopbackChild.Unchecked("the server's queue pair is connected after its listener closed");
            }
            return acceptFailure.getMessage() + "; the client " + (connectFailure == null ? "was disconnected"
                    : "failed: " + connectFailure.getMessage()) + "; the server's queue pair is " + sqp.state();
        });

        // ---- memory windows and slices ----
        CASES.put("a memory window over a buffer of another protection domain", (lb, d) -> refused(
                IllegalArgumentException.class, "protection domain",
                () -> io.jverbs.MemoryWindow.openAsync(lb.server.qp, lb.client.buffer.slice(0, 64), Access.REMOTE_WRITE)));
        CASES.put("a memory window granting write over a read-only buffer", (lb, d) -> {
            RegisteredBuffer ro = lb.server.pd.register(Arena.ofAuto().allocate(4096, 4096).asReadOnly(),
                    Access.REMOTE_READ);
            return refused(IllegalArgumentException.class, "read-only",
                    () -> io.jverbs.MemoryWindow.openAsync(lb.server.qp, ro.slice(0, 64), Access.REMOTE_WRITE));
        });
        CASES.put("invalidate a memory window after its queue pair closed", (lb, d) -> {
            lb.server.startPoller();
            io.jverbs.MemoryWindow w = io.jverbs.MemoryWindow.openAsync(lb.server.qp, lb.server.buffer.slice(0, 64), Access.REMOTE_WRITE)
                    .get(WAIT.toSeconds(), TimeUnit.SECONDS);
            lb.server.qp.close();
            if (!w.isClosed()) {
                throw new LoopbackChild.Unchecked("the queue pair closed but its window is open");
            }
            String invalidate = refused(IllegalStateException.class, "closed", w::invalidateAsync);
            return invalidate + "; " + refused(IllegalStateException.class, "closed", w::remote);
        });
        CASES.put("invalidate a memory window again after its invalidation timed out", (lb, d) -> {
            QueuePair a = lb.client.pd.createQueuePair(config(QueuePairConfig.rc(lb.client.cq), d).withDepth(8, 8)
                    .withOperationTimeout(Duration.ofMillis(500)).withRetry(14, 7));
            QueuePair b = lb.server.pd.createQueuePair(config(QueuePairConfig.rc(lb.server.cq), d).withDepth(8, 8));
            a.connect(b.localEndpoint());
            b.connect(a.localEndpoint());
            lb.client.startPoller();
            io.jverbs.MemoryWindow w = io.jverbs.MemoryWindow.openAsync(a, lb.client.buffer.slice(0, 256), Access.REMOTE_WRITE)
                    .get(WAIT.toSeconds(), TimeUnit.SECONDS);
            b.close(); // the peer stops answering: a Read waits for its answer, the invalidation behind it
            a.read(1, lb.client.buffer, 1024, 64, lb.serverRemote(), 0, true);
            Throwable first = failureOf(w.invalidateAsync());
            String again = refused(IllegalStateException.class, "invalidated once", w::invalidateAsync);
            w.close();
            return "the first failed (" + first.getClass().getSimpleName() + "); " + again;
        });
        CASES.put("a slice write into a remote range of another length", (lb, d) -> refused(
                IllegalArgumentException.class, "same length",
                () -> lb.client.qp.async().write(lb.client.buffer.slice(0, 64), lb.serverRemote().slice(0, 4096))));

        // ---- remote rights ----
        CASES.put("a queue pair granting no remote rights refuses the peer's write", (lb, d) -> {
            QueuePair locked = lb.server.pd.createQueuePair(config(QueuePairConfig.rc(lb.server.cq), d).withDepth(8, 8)
                    .withRemoteAccess());
            QueuePair writer = lb.client.pd.createQueuePair(config(QueuePairConfig.rc(lb.client.cq), d).withDepth(8, 8));
            locked.connect(writer.localEndpoint());
            writer.connect(locked.localEndpoint());
            lb.client.startPoller();
            Throwable t = failureOf(writer.async().write(lb.client.buffer, 0, 64, lb.serverRemote(), 0));
            return "the write into a writable buffer through that queue pair failed: " + status(t);
        });
        CASES.put("a UC queue pair given an RC queue pair's endpoint", (lb, d) -> {
            QueuePair uc = lb.client.pd.createQueuePair(config(QueuePairConfig.uc(lb.client.cq), d).withDepth(8, 8));
            QueuePair rc = lb.server.pd.createQueuePair(config(QueuePairConfig.rc(lb.server.cq), d).withDepth(8, 8));
            // through the wire form, as a peer would send it
            io.jverbs.Endpoint rcEndpoint = io.jverbs.Endpoint.fromBytes(rc.localEndpoint().toBytes());
            io.jverbs.Endpoint ucEndpoint = io.jverbs.Endpoint.fromBytes(uc.localEndpoint().toBytes());
            String one = refused(IllegalArgumentException.class, "same transport", () -> uc.connect(rcEndpoint));
            String other = refused(IllegalArgumentException.class, "same transport", () -> rc.connect(ucEndpoint));
            if (uc.state() != QueuePair.State.PREPARED || rc.state() != QueuePair.State.PREPARED) {
                throw new AssertionError("a refused connect left the queue pairs " + uc.state() + " and " + rc.state());
            }
            return one + "; the reverse refused too, both still PREPARED";
        });
        CASES.put("a handshake offering rights its queue pair does not give", (lb, d) -> {
            RegisteredBuffer offered = lb.server.pd.allocate(4096, Access.REMOTE_WRITE, Access.REMOTE_READ);
            Connection.Options readsOnly = Connection.Options.defaults().depth(8, 8)
                    .configure(c -> config(c, d).withRemoteAccess(Access.REMOTE_READ))
                    .offer(io.jverbs.cm.Handshake.offering(offered.remote()));
            try (Connection.Server server = Connection.listen(lb.server.pd, d.ip(), 0, readsOnly, SHARED)) {
                long start = System.nanoTime();
                String r = refused(IllegalArgumentException.class, "lets a peer do only", () -> server.accept(WAIT));
                return r + " (in " + (System.nanoTime() - start) / 1_000_000 + " ms, before any client came)";
            }
        });
        CASES.put("a handshake offering a buffer of another protection domain", (lb, d) -> {
            RegisteredBuffer foreign = lb.client.pd.allocate(4096, Access.REMOTE_WRITE);
            Connection.Options options = Connection.Options.defaults().depth(8, 8).configure(c -> config(c, d))
                    .offer(io.jverbs.cm.Handshake.offering(foreign.remote()));
            try (Connection.Server server = Connection.listen(lb.server.pd, d.ip(), 0, options, SHARED)) {
                return refused(IllegalArgumentException.class, "cannot use", () -> server.accept(WAIT));
            }
        });
        CASES.put("a UC queue pair given to rdma_cm", (lb, d) -> {
            QueuePair uc = lb.client.pd.createQueuePair(config(QueuePairConfig.uc(lb.client.cq), d).withDepth(8, 8));
            try (RdmaCm.Listener listener = RdmaCm.listen(d.ip(), 0)) {
                String client = refused(IllegalArgumentException.class, "RC queue pairs only",
                        () -> RdmaCm.connect(uc, d.ip(), listener.port(), WAIT));
                String server = refused(IllegalArgumentException.class, "RC queue pairs only",
                        () -> listener.accept(uc, WAIT));
                return client + "; accept refused it too: " + !server.isEmpty();
            }
        });
        CASES.put("a domain's queue pairs grant what its buffers grant, widened later", (lb, d) -> {
            try (Context ctx = Rdma.open(d.name())) {
                ProtectionDomain pd = ctx.allocateProtectionDomain();
                RegisteredBuffer local = pd.allocate(4096);
                QueuePair qp = pd.createQueuePair(config(QueuePairConfig.rc(ctx.createCompletionQueue(64)), d)
                        .withDepth(8, 8));
                QueuePair peer = lb.client.pd.createQueuePair(config(QueuePairConfig.rc(lb.client.cq), d).withDepth(8, 8));
                qp.connect(peer.localEndpoint());
                peer.connect(qp.localEndpoint());
                int before = accessFlags(qp);
                if ((before & (verbs_h.IBV_ACCESS_REMOTE_WRITE | verbs_h.IBV_ACCESS_REMOTE_READ
                        | verbs_h.IBV_ACCESS_REMOTE_ATOMIC)) != 0) {
                    throw new LoopbackChild.Unchecked("a domain with local buffers only gives the queue pair access flags 0x"
                            + Integer.toHexString(before));
                }
                RegisteredBuffer open = pd.allocate(4096, Access.REMOTE_WRITE);
                int after = accessFlags(qp);
                if ((after & verbs_h.IBV_ACCESS_REMOTE_WRITE) == 0 || (after & verbs_h.IBV_ACCESS_REMOTE_READ) != 0) {
                    throw new AssertionError("after a REMOTE_WRITE buffer the flags are 0x" + Integer.toHexString(after));
                }
                lb.client.startPoller();
                peer.async().write(lb.client.buffer, 0, 64, open.remote(), 0).get(WAIT.toSeconds(), TimeUnit.SECONDS);
                local.close();
                return "access flags 0x" + Integer.toHexString(before) + " with local buffers, 0x"
                        + Integer.toHexString(after) + " once a REMOTE_WRITE buffer was registered; the peer's write landed";
            }
        });

        SessionSafetyCases.addTo(CASES);
        MultiClientSafetyCases.addTo(CASES);

        CASES.put(HALF_OPEN, (lb, d) -> {
            Duration acceptTimeout = Duration.ofSeconds(5);
            try (Context serverCtx = Rdma.open(d.name()); Context clientCtx = Rdma.open(d.name());
                 RdmaCm.Listener listener = RdmaCm.listen(d.ip(), 0)) {
                ProtectionDomain spd = serverCtx.allocateProtectionDomain();
                QueuePair sqp = spd.createQueuePair(QueuePairConfig.rc(serverCtx.createCompletionQueue(64)).withDepth(8, 8));
                RegisteredBuffer target = spd.allocate(4096, Access.REMOTE_WRITE);
                RemoteBuffer remote = target.remote();
                ProtectionDomain cpd = clientCtx.allocateProtectionDomain();
                CompletionQueue ccq = clientCtx.createCompletionQueue(64);
                QueuePair cqp = cpd.createQueuePair(QueuePairConfig.rc(ccq).withDepth(8, 8));
                RegisteredBuffer source = cpd.allocate(4096);
                long start = System.nanoTime();
                CompletableFuture<CmConnection> accepted = CompletableFuture.supplyAsync(
                        () -> listener.accept(sqp, acceptTimeout));
                try (HalfOpenCmClient hostile = HalfOpenCmClient.connect(cqp, d.ip(), listener.port(), WAIT)) {
                    Throwable refusal;
                    try {
                        accepted.get(WAIT.toSeconds(), TimeUnit.SECONDS);
                        throw new LoopbackChild.Unchecked("accept returned a connection without the handshake's last step");
                    } catch (ExecutionException e) {
                        refusal = e.getCause();
                    } catch (TimeoutException e) {
                        throw new LoopbackChild.Unchecked("accept did not return within " + WAIT.toSeconds() + " s");
                    }
                    long acceptMs = (System.nanoTime() - start) / 1_000_000;
                    if (acceptMs > acceptTimeout.toMillis() + 3000) {
                        throw new LoopbackChild.Unchecked("accept returned after " + acceptMs + " ms, its timeout was "
                                + acceptTimeout.toMillis() + " ms");
                    }
                    int deviceState = sqp.deviceState(); // RESET or INIT answer no peer; RTR and RTS would
                    if (deviceState != verbs_h.IBV_QPS_RESET && deviceState != verbs_h.IBV_QPS_INIT) {
                        throw new LoopbackChild.Unchecked("the listener's queue pair is left in device state " + deviceState);
                    }
                    try (Poller poller = Poller.start(null, IdleStrategy.backoff(), ccq)) {
                        Throwable write = failureOf(cqp.async().write(source, 0, 64, remote, 0));
                        return "accept ended in " + acceptMs + " ms (" + refusal.getClass().getSimpleName()
                                + "), its queue pair reset (device state " + deviceState + "); the peer's write then failed: " + status(write);
                    }
                }
            }
        });
    }

    /**
     * Runs {@code close} twice at once: from the handler of the client's poller (at the first
     * completion, 300 ms after it began) and from another thread. Both must return normally: a
     * deadlock between them, or a destroy in the wrong order (EBADF from a closed device), is
     * unchecked.
     *
     * @return how long the other thread's close took, in ms
     */
    private static long closeFromHandlerAndAnotherThread(Loopback lb, Runnable close) throws Exception {
        CountDownLatch inHandler = new CountDownLatch(1);
        CountDownLatch handlerClosed = new CountDownLatch(1);
        List<Throwable> handlerFailure = new java.util.concurrent.CopyOnWriteArrayList<>();
        lb.client.poller = Poller.start(c -> {
            if (inHandler.getCount() == 0) {
                return;
            }
            inHandler.countDown();
            java.util.concurrent.locks.LockSupport.parkNanos(300_000_000L); // the other close begins meanwhile
            try {
                close.run();
            } catch (RuntimeException e) {
                handlerFailure.add(e);
            }
            handlerClosed.countDown();
        }, IdleStrategy.backoff(), lb.client.cq);
        lb.client.qp.write(1, lb.client.buffer, 0, 8, lb.serverRemote(), 0, true);
        if (!inHandler.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
            throw new AssertionError("the write's completion did not reach the handler");
        }
        long start = System.nanoTime();
        CompletableFuture<Void> other = CompletableFuture.runAsync(close);
        try {
            other.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new LoopbackChild.Unchecked("the other thread's close did not return in " + WAIT.toSeconds()
                    + " s: it waits for the poll, whose handler waits for it");
        } catch (ExecutionException e) {
            throw new LoopbackChild.Unchecked("the other thread's close threw " + e.getCause());
        }
        long ms = (System.nanoTime() - start) / 1_000_000;
        if (!handlerClosed.await(5, TimeUnit.SECONDS) || !handlerFailure.isEmpty()) {
            throw new LoopbackChild.Unchecked("the handler's close did not return normally: " + handlerFailure);
        }
        return ms;
    }

    /**
     * Arms {@code cq}, has another thread wait {@code waitMillis} for its event, and runs
     * {@code close} on a third 300 ms later: the close must return within 3 s and the wait must
     * end without an event.
     *
     * @return how long the close took, in ms
     */
    private static long closeDuringEventWait(CompletionQueue cq, long waitMillis, Runnable close, String what)
            throws Exception {
        cq.armEvents();
        // threads of their own: the common pool may have a single thread, which the wait would hold
        java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newThreadPerTaskExecutor(
                Thread.ofPlatform().daemon(true).factory());
        CompletableFuture<Boolean> waiting = CompletableFuture.supplyAsync(() -> cq.waitForEvent(waitMillis), threads);
        Thread.sleep(300);
        long start = System.nanoTime();
        CompletableFuture<Void> closing = CompletableFuture.runAsync(close, threads);
        try {
            closing.get(3, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new LoopbackChild.Unchecked(what + " waited for the completion queue's event wait of " + waitMillis
                    + " ms");
        }
        long ms = (System.nanoTime() - start) / 1_000_000;
        if (waiting.get(WAIT.toSeconds(), TimeUnit.SECONDS)) {
            throw new AssertionError("the wait saw an event though nothing completed");
        }
        return ms;
    }

    /** A thin-layer RC queue pair on {@code cq}, connected to itself, that may RDMA Write into the client's buffer. */
    private static MemorySegment rawLoopbackQp(Loopback lb, CompletionQueue cq, io.jverbs.Gid gid) {
        MemorySegment qp;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(ibv_qp_init_attr.LAYOUT);
            ibv_qp_init_attr.send_cq(attr, cq.handle());
            ibv_qp_init_attr.recv_cq(attr, cq.handle());
            MemorySegment cap = ibv_qp_init_attr.cap(attr);
            io.jverbs.ibverbs.raw.ibv_qp_cap.max_send_wr(cap, 32);
            io.jverbs.ibverbs.raw.ibv_qp_cap.max_recv_wr(cap, 1);
            io.jverbs.ibverbs.raw.ibv_qp_cap.max_send_sge(cap, 1);
            io.jverbs.ibverbs.raw.ibv_qp_cap.max_recv_sge(cap, 1);
            ibv_qp_init_attr.qp_type(attr, verbs_h.IBV_QPT_RC);
            qp = verbs_h.ibv_create_qp(lb.client.pd.handle(), attr);
        }
        if (qp.address() == 0) {
            throw new AssertionError("ibv_create_qp of the raw queue pair failed");
        }
        qp = qp.reinterpret(io.jverbs.ibverbs.raw.ibv_qp.sizeof());
        int qpn = io.jverbs.ibverbs.device.QueuePairs.qpn(qp);
        io.jverbs.ibverbs.device.QueuePairs.rcToInit(qp, 1, verbs_h.IBV_ACCESS_LOCAL_WRITE | verbs_h.IBV_ACCESS_REMOTE_WRITE);
        io.jverbs.ibverbs.device.QueuePairs.rcToRtr(qp, 1, verbs_h.IBV_MTU_1024, qpn, 0, gid.bytes(), gid.index());
        io.jverbs.ibverbs.device.QueuePairs.rcToRts(qp, 0);
        return qp;
    }

    private static QueuePairConfig config(QueuePairConfig c, TestDevice device) {
        return device.gidIndexEnv() >= 0 ? c.withGidIndex(device.gidIndexEnv()) : c;
    }

    /** The queue pair's access flags as the device has them ({@code ibv_query_qp}). */
    private static int accessFlags(QueuePair qp) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(ibv_qp_attr.LAYOUT);
            MemorySegment init = a.allocate(ibv_qp_init_attr.LAYOUT);
            int rc = verbs_h.ibv_query_qp(qp.handle(), attr, verbs_h.IBV_QP_ACCESS_FLAGS, init);
            if (rc != 0) {
                throw new AssertionError("ibv_query_qp: " + rc);
            }
            return ibv_qp_attr.qp_access_flags(attr);
        }
    }

    /** Asserts that {@code call} throws {@code type} naming {@code part}; the mistake went through when it does not throw. */
    static String refused(Class<? extends Throwable> type, String part,
                                  org.junit.jupiter.api.function.Executable call) {
        try {
            call.execute();
        } catch (Throwable t) {
            if (!type.isInstance(t) || !String.valueOf(t.getMessage()).contains(part)) {
                throw new AssertionError("expected " + type.getSimpleName() + " naming '" + part + "', got " + t, t);
            }
            return type.getSimpleName() + ": " + t.getMessage();
        }
        throw new LoopbackChild.Unchecked("no exception: the call went through");
    }

    /** Waits for {@code f} to fail; its cause. A normal completion is unchecked; no end within the wait is a hang. */
    static Throwable failureOf(CompletableFuture<?> f) throws InterruptedException {
        try {
            Object r = f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
            throw new LoopbackChild.Unchecked("completed normally: " + r);
        } catch (ExecutionException e) {
            Throwable t = e.getCause();
            return t instanceof java.util.concurrent.CompletionException && t.getCause() != null ? t.getCause() : t;
        } catch (TimeoutException e) {
            throw new AssertionError("no end within " + WAIT.toSeconds() + " s");
        }
    }

    private static String status(Throwable t) {
        return t instanceof CompletionFailedException cf ? cf.statusName() : String.valueOf(t);
    }

    private static void requireStatus(Throwable t, String status) {
        if (!(t instanceof CompletionFailedException cf) || !cf.statusName().equals(status)) {
            throw new LoopbackChild.Unchecked("expected " + status + ", got " + t);
        }
    }

    @Test
    void eachCaseInItsOwnJvm(TestDevice device) throws Exception {
        List<String> crashed = new ArrayList<>();
        List<String> hung = new ArrayList<>();
        List<String> unchecked = new ArrayList<>();
        List<String> failed = new ArrayList<>();
        String released = "";
        // JVERBS_SAFETY_ONLY=TEXT|TEXT... runs only the cases whose name contains one of the TEXTs
        // (to rerun some while working on them)
        String[] only = System.getenv().getOrDefault("JVERBS_SAFETY_ONLY", "").split("\\|");
        List<String> names = CASES.keySet().stream()
                .filter(name -> java.util.Arrays.stream(only).anyMatch(name::contains)).toList();
        int ran = names.size();
        // Children run side by side (their queue pairs and ports are their own), except the cases
        // that count the device's objects or race a clock, which run alone after them. The cases
        // about a peer or a default share a child (first in the side-by-side phase, and once more
        // among those that run alone): what they check is what the peer sees, not a crash.
        List<String> alone = names.stream().filter(SafetyChildTest::runsAlone).toList();
        List<String> shared = names.stream().filter(n -> !runsAlone(n)).toList();
        List<java.util.concurrent.Callable<java.util.Map<String, ChildJvm.Result>>> units = new ArrayList<>();
        List<String> sharedTogether = shared.stream().filter(TOGETHER::contains).toList();
        if (!sharedTogether.isEmpty()) {
            units.add(() -> LoopbackChild.together("safety", sharedTogether, SafetyChildTest::togetherCommand, STARTUP,
                    WORK, "shared together"));
        }
        List<String> sharedApart = shared.stream().filter(n -> !TOGETHER.contains(n)).toList();
        for (int i = 0; i < sharedApart.size(); i++) {
            String name = sharedApart.get(i);
            String tag = "shared " + (i + 1);
            units.add(() -> java.util.Map.of(name, ChildJvm.run(childCommand(name), READY, STARTUP, WORK, tag)));
        }
        java.util.Map<String, ChildJvm.Result> results = new java.util.HashMap<>(ChildJvm.runSideBySide(units, PARALLEL));
        List<String> aloneTogether = alone.stream().filter(TOGETHER::contains).toList();
        if (!aloneTogether.isEmpty()) {
            results.putAll(LoopbackChild.together("safety", aloneTogether, SafetyChildTest::togetherCommand, STARTUP,
                    WORK, "alone together"));
        }
        List<String> aloneApart = alone.stream().filter(n -> !TOGETHER.contains(n)).toList();
        for (String name : aloneApart) {
            boolean halfOpen = name.equals(HALF_OPEN);
            io.jverbs.ibverbs.device.RdmaResourceCounts before = halfOpen
                    ? io.jverbs.ibverbs.device.RdmaResourceCounts.read(device.name()) : null;
            results.put(name, ChildJvm.run(childCommand(name), READY, STARTUP, halfOpen ? Duration.ofSeconds(45) : WORK,
                    "alone " + (aloneApart.indexOf(name) + 1)));
            if (halfOpen) {
                released = waitForBaseline(device, before, name, failed);
            }
        }
        for (String name : names) {
            ChildJvm.Result r = results.get(name);
            boolean done = !r.last(DONE).equals("(none)");
            if (r.exitCode() == 134 || r.exitCode() == 139 || !r.linesWith("hs_err").isEmpty()
                    || !r.linesWith("SIGSEGV").isEmpty()) {
                crashed.add(name + " (exit " + r.exitCode() + ")");
            } else if (!r.last(UNCHECKED + name).equals("(none)")) {
                unchecked.add(name + ": " + r.last(UNCHECKED + name));
            } else if (r.timedOutIn() != null && !done) {
                hung.add(name + " (killed in " + r.timedOutIn() + "): " + LoopbackChild.tail(r));
            } else if (r.last(OK + name).equals("(none)") || !done) {
                failed.add(name + ": exit " + r.exitCode() + ", " + LoopbackChild.tail(r));
            }
        }
        String summary = "highlevel-safety: " + ran + " cases, " + crashed.size() + " crashed, " + hung.size()
                + " hung, " + unchecked.size() + " unchecked, on " + device.name() + " (a child JVM each for "
                + (ran - sharedTogether.size() - aloneTogether.size()) + ", " + PARALLEL + " at a time, "
                + aloneApart.size() + " alone; " + (sharedTogether.size() + aloneTogether.size())
                + " about a peer or a default in two shared children)" + released;
        System.out.println(summary);
        if (!crashed.isEmpty() || !hung.isEmpty() || !unchecked.isEmpty() || !failed.isEmpty()) {
            fail(summary + "\ncrashed: " + crashed + "\nhung: " + hung + "\nunchecked: " + unchecked + "\nfailed: "
                    + String.join("\n  ", failed));
        }
    }

    /** How many children run at once: JVERBS_SAFETY_PARALLEL, default 2 (the rig's vCPUs). */
    private static final int PARALLEL = Math.max(1, Integer.parseInt(System.getenv().getOrDefault("JVERBS_SAFETY_PARALLEL", "2")));

    /**
     * Whether a case runs alone: it counts the device's objects (the half-open handshake), or
     * checks a bound in time that a second child's CPU would stretch (a flood, a deadline, a
     * timeout, a blocked handler, an interrupt, a wait).
     */
    static boolean runsAlone(String name) {
        String n = name.toLowerCase(java.util.Locale.ROOT);
        return name.equals(HALF_OPEN) || java.util.stream.Stream.of("flood", "half-open", "timeout", "timed out",
                "deadline", "silent", "dies", "blocked", "blocks", "does not return", "interrupt", "parks", "within",
                "a minute", "waits", "late future").anyMatch(n::contains);
    }

    /**
     * The cases whose point is what a peer or a default does (a dead or hostile peer, rights the
     * peer meets, a timeout or retry count that must end a wait), not the JVM surviving a misuse of
     * the API: they run one after another in a shared child. A case about a first use stays apart.
     */
    static final java.util.Set<String> TOGETHER = java.util.Set.of(
            "a batched inline write carries the bytes of the post, not of the add",
            "a write to a dead endpoint with the default retries",
            "a send with no receive posted, default RNR retries",
            "a queue pair granting no remote rights refuses the peer's write",
            "a domain's queue pairs grant what its buffers grant, widened later",
            "a client guessing the rkeys of a window granted to another client reaches nothing",
            "a server at its connection limit refuses the next client with the reason",
            "a peer writing past a read-only grant lands nothing",
            "a window offered to one session reaches nothing through another",
            "virtual threads waiting in accept leave carriers to a connecting one",
            "awaitDisconnect returns when this side closes the connection",
            "closing a Context closes its rdma_cm connections",
            "a half-open peer's writes to its window land nowhere",
            "a flood of half-open requests does not keep a client out",
            "credits used up by a peer whose message handler does not return",
            "a peer that dies with calls in flight",
            "an accept polled in a loop with a 1 ms timeout takes the client");

    @Test
    void theSharedCasesExist() {
        List<String> missing = TOGETHER.stream().filter(n -> !CASES.containsKey(n)).toList();
        if (!missing.isEmpty()) {
            fail("not cases: " + missing);
        }
    }

    private static List<String> togetherCommand(List<String> names) {
        List<String> args = new ArrayList<>();
        args.add("--together");
        args.addAll(names);
        return ChildJvm.command(Child.class, List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), args);
    }

    private static List<String> childCommand(String name) {
        return ChildJvm.command(Child.class, List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), List.of(name));
    }

    /**
     * After the half-open case: the device's objects back to what they were before it, the
     * child's exit included. The listener's rdma_cm id of a half-open handshake must not be held
     * by the kernel (as it is when a reject follows the reply: the reply keeps retransmitting and
     * the id's destroy, and with it the process's exit, waits for its retries to run out).
     */
    private static String waitForBaseline(TestDevice device, io.jverbs.ibverbs.device.RdmaResourceCounts before,
                                          String name, List<String> failed) throws Exception {
        long start = System.nanoTime();
        io.jverbs.ibverbs.device.RdmaResourceCounts now = before;
        while (System.nanoTime() - start < 20_000_000_000L) {
            now = io.jverbs.ibverbs.device.RdmaResourceCounts.read(device.name());
            if (now.differenceFrom(before).isEmpty()) {
                return "; after the half-open handshake the device's objects were back to their count in "
                        + (System.nanoTime() - start) / 1_000_000 + " ms";
            }
            Thread.sleep(200);
        }
        failed.add(name + ": 20 s after the case the device still holds " + now.differenceFrom(before));
        return "";
    }

    /** The child: one loopback connection on the environment's device, one case. */
    static final class Child {
        public static void main(String[] args) throws Exception {
            if (args[0].equals("--together")) {
                LoopbackChild.runTogether("safety", List.of(args).subList(1, args.length), CASES);
            }
            LoopbackChild.run("safety", args[0], CASES.get(args[0]));
        }
    }
}
