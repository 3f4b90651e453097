package io.jverbs.bench;

import io.jverbs.Access;
import io.jverbs.Completion;
import io.jverbs.Context;
import io.jverbs.ProtectionDomain;
import io.jverbs.Rdma;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.cm.EventLoop;
import io.jverbs.cm.Handshake;
import io.jverbs.cm.Session;
import io.jverbs.cm.SessionHandler;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The session layer's latency and idle cost on a device, for {@code scripts/bench/bench-service}
 * (not a test: it measures, and prints what it measured).
 *
 * <pre>
 *   ServiceBench server DEVICE IP PORT SLEEP|SPIN   a loop offering 4 KiB, echoing calls; stops when stdin closes
 *   ServiceBench client DEVICE IP PORT SESSIONS IDLE-SECONDS N
 *   ServiceBench idle DEVICE                           a context and nothing else, until stdin closes
 * </pre>
 * The client opens SESSIONS sessions, stays idle IDLE-SECONDS (the script reads the server's CPU
 * meanwhile), then on its first session measures N 64-byte RDMA Reads (each posted from the
 * completion of the one before, on the client loop's thread) and N 64-byte calls (each made from
 * the reply of the one before) and N 64-byte messages echoed by the server (each sent from the echo
 * of the one before, with {@link Session#offer}), after N/2 unreported of each, and prints their
 * medians and 99th percentiles in µs: {@code bench-client: read64 MEDIAN P99}, {@code call64} and
 * {@code message64}, and the bytes the client loop's thread allocated over the measured echoes.
 */
public final class ServiceBench {
    private static final Duration T = Duration.ofSeconds(30);
    /**
     * {@code com.sun.management.ThreadMXBean.getCurrentThreadAllocatedBytes} and its bean, reached
     * reflectively: this module reads neither java.management nor jdk.management.
     */
    private static final java.lang.reflect.Method ALLOCATED;
    private static final Object THREADS;

    static {
        try {
            ALLOCATED = Class.forName("com.sun.management.ThreadMXBean").getMethod("getCurrentThreadAllocatedBytes");
            THREADS = Class.forName("java.lang.management.ManagementFactory").getMethod("getThreadMXBean").invoke(null);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static long allocatedNow() {
        try {
            return (long) ALLOCATED.invoke(THREADS);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    private ServiceBench() {
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("server")) {
            server(args[1], args[2], Integer.parseInt(args[3]), EventLoop.Idle.valueOf(args[4]));
        } else if (args[0].equals("idle")) {
            try (Context ctx = Rdma.open(args[1])) {
                ctx.allocateProtectionDomain();
                System.out.println("bench-idle: open");
                while (System.in.read() >= 0) {
                    // until the script closes our stdin
                }
            }
        } else {
            client(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]), Integer.parseInt(args[5]),
                    Integer.parseInt(args[6]));
        }
    }

    static void server(String device, String ip, int port, EventLoop.Idle idle) throws Exception {
        try (Context ctx = Rdma.open(device)) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            RegisteredBuffer region = pd.allocate(4096, Access.REMOTE_READ);
            Session.Options options = Session.Options.defaults().offer(Handshake.offering(region.remote()));
            try (EventLoop loop = EventLoop.start(pd, EventLoop.Options.defaults().idle(idle));
                 EventLoop.Listener l = loop.listen(ip, port, options, new SessionHandler() {
                     @Override
                     public void onRequest(Session s, long id, MemorySegment request, int length) {
                         s.reply(id, request.asSlice(0, length));
                     }

                     @Override
                     public void onMessage(Session s, MemorySegment message, int length) {
                         s.offer(message.asSlice(0, length)); // echo
                     }
                 })) {
                System.out.println("bench-server: listening on " + l.port() + " (" + idle + ")");
                while (System.in.read() >= 0) {
                    // until the script closes our stdin
                }
            }
        }
    }

    static void client(String device, String ip, int port, int sessions, int idleSeconds, int n) throws Exception {
        try (Context ctx = Rdma.open(device)) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            RegisteredBuffer local = pd.allocate(4096);
            long[] reads = new long[n + n / 2];
            int[] taken = {0};
            long[] started = {0};
            CountDownLatch readsDone = new CountDownLatch(1);
            RemoteBuffer[] target = new RemoteBuffer[1];
            long[] echoes = new long[n + n / 2];
            int[] echoed = {0};
            CountDownLatch echoesDone = new CountDownLatch(1);
            MemorySegment ping = pd.allocate(64).segment();
            long[] allocatedAtStart = {0};
            long[] allocated = {0};
            SessionHandler reader = new SessionHandler() {
                @Override
                public void onMessage(Session s, MemorySegment message, int length) {
                    long now = System.nanoTime();
                    echoes[echoed[0]++] = now - started[0];
                    if (echoed[0] == echoes.length - n) {
                        allocatedAtStart[0] = allocatedNow();
                    }
                    if (echoed[0] == echoes.length) {
                        allocated[0] = allocatedNow() - allocatedAtStart[0];
                        echoesDone.countDown();
                        return;
                    }
                    started[0] = System.nanoTime();
                    if (s.offer(ping) != Session.OK) {
                        System.out.println("bench-client: a message was back-pressured");
                        echoesDone.countDown();
                    }
                }

                @Override
                public void onCompletion(Session s, Completion c) {
                    long now = System.nanoTime();
                    if (!c.isSuccess()) {
                        System.out.println("bench-client: a read failed: " + c.statusName());
                        readsDone.countDown();
                        return;
                    }
                    reads[taken[0]++] = now - started[0];
                    if (taken[0] == reads.length) {
                        readsDone.countDown();
                        return;
                    }
                    started[0] = System.nanoTime();
                    s.queuePair().read(1, local, 0, 64, target[0], 0, true);
                }
            };
            try (EventLoop loop = EventLoop.start(pd, EventLoop.Options.defaults().idle(EventLoop.Idle.SPIN))) {
                List<Session> open = new ArrayList<>();
                for (int i = 0; i < sessions; i++) {
                    open.add(loop.connect(ip, port, Session.Options.defaults(), reader, T));
                }
                System.out.println("bench-client: " + sessions + " sessions open; idle for " + idleSeconds + " s");
                System.out.flush();
                Thread.sleep(idleSeconds * 1000L);
                System.out.println("bench-client: measuring");
                Session s = open.get(0);
                target[0] = s.peerBuffers().get(0);
                started[0] = System.nanoTime();
                s.queuePair().read(1, local, 0, 64, target[0], 0, true);
                if (!readsDone.await(120, TimeUnit.SECONDS) || taken[0] < reads.length) {
                    throw new IllegalStateException("the reads did not finish: " + taken[0]);
                }
                print("read64", reads, n);
                long[] calls = new long[n + n / 2];
                CountDownLatch callsDone = new CountDownLatch(1);
                byte[] payload = new byte[64];
                call(s, payload, calls, new int[] {0}, callsDone);
                if (!callsDone.await(120, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the calls did not finish");
                }
                print("call64", calls, n);
                started[0] = System.nanoTime();
                s.send(ping);
                if (!echoesDone.await(120, TimeUnit.SECONDS) || echoed[0] < echoes.length) {
                    throw new IllegalStateException("the messages did not finish: " + echoed[0]);
                }
                print("message64", echoes, n);
                System.out.println("bench-client: message64 allocated " + allocated[0] + " bytes on the client loop's"
                        + " thread over " + n + " echoes (offer, receive, credits, completions)");
                open.forEach(Session::close);
            }
        }
    }

    /** One call, and from its reply (on the loop's thread) the next. */
    private static void call(Session s, byte[] payload, long[] took, int[] taken, CountDownLatch done) {
        long start = System.nanoTime();
        s.call(payload, T).whenComplete((reply, failure) -> {
            if (failure != null) {
                System.out.println("bench-client: a call failed: " + failure);
                done.countDown();
                return;
            }
            took[taken[0]++] = System.nanoTime() - start;
            if (taken[0] == took.length) {
                done.countDown();
            } else {
                call(s, payload, took, taken, done);
            }
        });
    }

    private static void print(String what, long[] nanos, int n) {
        long[] measured = Arrays.copyOfRange(nanos, nanos.length - n, nanos.length);
        Arrays.sort(measured);
        System.out.printf("bench-client: %s %.2f %.2f%n", what, measured[n / 2] / 1000.0,
                measured[(int) Math.min(n - 1, n * 0.99)] / 1000.0);
    }
}
