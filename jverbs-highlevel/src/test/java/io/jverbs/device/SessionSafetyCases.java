package io.jverbs.device;

import io.jverbs.ProtectionDomain;
import io.jverbs.cm.EventLoop;
import io.jverbs.cm.RdmaCmException;
import io.jverbs.cm.Session;
import io.jverbs.cm.SessionHandler;
import io.jverbs.ibverbs.device.TestDevice;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.jverbs.device.SafetyChildTest.failureOf;
import static io.jverbs.device.SafetyChildTest.refused;

/**
 * The {@link SafetyChildTest} cases of the session layer ({@link EventLoop}, {@link Session}): a
 * message larger than a slot, a window offered to one session presented by another, sends and
 * calls after close, credits used up by a peer whose handler
 * does not return, a peer that dies with calls in flight, a handler that throws, a handler that
 * blocks. Each runs in its own child JVM, on the loopback's two contexts: a server loop on one, a
 * client loop on the other.
 */
final class SessionSafetyCases {
    private static final Duration T = Duration.ofSeconds(20);

    private SessionSafetyCases() {
    }

    /** A listening server loop and a client loop with one open session between them. */
    private record Pair(EventLoop server, EventLoop client, EventLoop.Listener listener, Session session)
            implements AutoCloseable {
        static Pair open(Loopback lb, TestDevice d, SessionHandler serverHandler, Session.Options options) {
            EventLoop server = EventLoop.start(lb.server.pd, EventLoop.Options.defaults());
            EventLoop client = EventLoop.start(lb.client.pd, EventLoop.Options.defaults());
            int port = 20000 + (int) ((ProcessHandle.current().pid() + 3) % 20000);
            EventLoop.Listener l = server.listen(d.ip(), port, options, serverHandler);
            Session s = client.connect(d.ip(), port, options, new SessionHandler() { }, T);
            return new Pair(server, client, l, s);
        }

        @Override
        public void close() {
            client.close();
            server.close();
        }
    }

    private static final SessionHandler ECHO = new SessionHandler() {
        @Override
        public void onRequest(Session s, long id, MemorySegment request, int length) {
            s.reply(id, request.asSlice(0, length));
        }
    };

    static void addTo(Map<String, LoopbackChild.Case> cases) {
        cases.put("a session message larger than the peer's ring slot", (lb, d) -> {
            try (Pair p = Pair.open(lb, d, ECHO, Session.Options.defaults().ring(8, 256))) {
                byte[] big = new byte[p.session().maxMessageBytes() + 1];
                String send = refused(IllegalArgumentException.class, "does not fit", () -> p.session().send(big));
                String call = refused(IllegalArgumentException.class, "does not fit",
                        () -> p.session().call(big, T));
                byte[] fits = new byte[p.session().maxMessageBytes()];
                int back = p.session().call(fits, T).get(T.toSeconds(), TimeUnit.SECONDS).length;
                return send + "; " + call + "; a message of exactly " + fits.length + " bytes came back with " + back;
            }
        });
        cases.put("a window offered to one session reaches nothing through another", (lb, d) -> {
            io.jverbs.RegisteredBuffer secret = lb.server.pd.allocate(4096); // no remote rights of its own
            secret.segment().fill((byte) 7);
            SessionHandler offering = new SessionHandler() {
                @Override
                public void onOpen(Session s) {
                    s.offerWindow(secret, 0, 4096, io.jverbs.Access.REMOTE_READ);
                }
            };
            try (Pair p = Pair.open(lb, d, offering, Session.Options.defaults())) {
                long deadline = System.nanoTime() + T.toNanos();
                while (p.session().peerBuffers().isEmpty() && System.nanoTime() < deadline) {
                    Thread.sleep(5);
                }
                if (p.session().peerBuffers().isEmpty()) {
                    throw new AssertionError("the window never arrived");
                }
                io.jverbs.RemoteBuffer window = p.session().peerBuffers().get(0);
                io.jverbs.RegisteredBuffer local = lb.client.pd.allocate(4096);
                p.session().queuePair().async().read(local, 0, 64, window, 0).get(T.toSeconds(), TimeUnit.SECONDS);
                if (local.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0) != 7) {
                    throw new AssertionError("the session's own window read wrong bytes");
                }
                Session other = p.client().connect(d.ip(), p.listener().port(), Session.Options.defaults(),
                        new SessionHandler() { }, T);
                Throwable t = failureOf(other.queuePair().async().read(local, 64, 64, window, 0));
                if (local.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 64) == 7) {
                    throw new LoopbackChild.Unchecked("another session read through the first one's window");
                }
                return "the session read its window (rkey 0x" + Integer.toHexString(window.rkey()) + "); another"
                        + " session of the same server presenting that rkey failed: " + t;
            }
        });
        cases.put("send and call on a session after its close", (lb, d) -> {
            try (Pair p = Pair.open(lb, d, ECHO, Session.Options.defaults())) {
                p.session().close();
                String send = refused(RdmaCmException.class, "closed", () -> p.session().send(new byte[8]));
                Throwable call = failureOf(p.session().call(new byte[8], T));
                int offer = p.session().offer(MemorySegment.ofArray(new byte[8]));
                if (!(call instanceof RdmaCmException e) || e.reason() != RdmaCmException.Reason.DISCONNECTED
                        || offer != Session.CLOSED) {
                    throw new LoopbackChild.Unchecked("call after close: " + call + ", offer returned " + offer);
                }
                return send + "; the call failed: " + call.getMessage() + "; offer returned CLOSED";
            }
        });
        cases.put("credits used up by a peer whose message handler does not return", (lb, d) -> {
            CountDownLatch release = new CountDownLatch(1);
            SessionHandler stuck = new SessionHandler() {
                @Override
                public void onRequest(Session s, long id, MemorySegment request, int length) {
                    ECHO.onRequest(s, id, request, length);
                }

                @Override
                public void onMessage(Session s, MemorySegment m, int length) {
                    try {
                        release.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            };
            try (Pair p = Pair.open(lb, d, stuck, Session.Options.defaults().ring(4, 256).depth(32, 8))) {
                MemorySegment m = MemorySegment.ofArray(new byte[16]);
                int posted = 0;
                while (p.session().offer(m) == Session.OK) {
                    posted++;
                }
                int queued = 0;
                try {
                    while (queued < 100) {
                        p.session().send(new byte[16]);
                        queued++;
                    }
                    throw new LoopbackChild.Unchecked("100 sends queued past a bound of 8");
                } catch (RdmaCmException e) {
                    if (e.reason() != RdmaCmException.Reason.LIMIT) {
                        throw e;
                    }
                }
                release.countDown();
                if (posted != 4 || queued != 8) {
                    throw new LoopbackChild.Unchecked("posted " + posted + " (ring of 4), queued " + queued + " (bound 8)");
                }
                // the peer returns: the queued messages go out as credits come back, then the call
                byte[] echo = p.session().call(new byte[4], T).get(T.toSeconds(), TimeUnit.SECONDS);
                return "offer took " + posted + " messages then said BACK_PRESSURED; send queued " + queued
                        + " then refused with LIMIT; once the peer returned, credits came back and a call answered ("
                        + echo.length + " bytes)";
            }
        });
        cases.put("a peer that dies with calls in flight", (lb, d) -> {
            SessionHandler silent = new SessionHandler() {
                @Override
                public void onRequest(Session s, long id, MemorySegment request, int length) {
                    // never answers
                }
            };
            Pair p = Pair.open(lb, d, silent, Session.Options.defaults());
            try {
                List<CompletableFuture<byte[]>> calls = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    calls.add(p.session().call(new byte[8], Duration.ofSeconds(10)));
                }
                long start = System.nanoTime();
                lb.server.context.close(); // the server's device objects vanish under its loop, as in a crash
                for (CompletableFuture<byte[]> c : calls) {
                    Throwable t = failureOf(c);
                    if (!(t instanceof RdmaCmException)) {
                        throw new LoopbackChild.Unchecked("a call ended with " + t);
                    }
                }
                long ms = (System.nanoTime() - start) / 1_000_000;
                if (ms > 10_500) {
                    throw new LoopbackChild.Unchecked("the calls ended " + ms + " ms after the peer died (budget 10 s)");
                }
                return "8 calls failed " + ms + " ms after the peer died: " + failureOf(calls.get(0)).getMessage();
            } finally {
                p.close();
            }
        });
        cases.put("a session request handler that throws", (lb, d) -> {
            SessionHandler throwing = new SessionHandler() {
                @Override
                public void onRequest(Session s, long id, MemorySegment request, int length) {
                    if (request.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0) == 1) {
                        throw new IllegalStateException("no such key");
                    }
                    s.reply(id, request.asSlice(0, length));
                }
            };
            try (Pair p = Pair.open(lb, d, throwing, Session.Options.defaults())) {
                long start = System.nanoTime();
                Throwable t = failureOf(p.session().call(new byte[] {1}, T));
                long ms = (System.nanoTime() - start) / 1_000_000;
                if (!(t instanceof RdmaCmException e) || e.reason() != RdmaCmException.Reason.REMOTE_FAILURE
                        || !e.getMessage().contains("no such key")) {
                    throw new LoopbackChild.Unchecked("the caller got " + t);
                }
                byte[] next = p.session().call(new byte[] {2}, T).get(T.toSeconds(), TimeUnit.SECONDS);
                return "the caller failed in " + ms + " ms with " + t.getMessage() + "; the next call answered ("
                        + next.length + " byte); handler failures counted: " + p.server().handlerFailures();
            }
        });
        cases.put("a session handler that blocks the loop", (lb, d) -> {
            CountDownLatch release = new CountDownLatch(1);
            SessionHandler blocking = new SessionHandler() {
                @Override
                public void onRequest(Session s, long id, MemorySegment request, int length) {
                    try {
                        release.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            };
            Pair p = Pair.open(lb, d, blocking, Session.Options.defaults());
            try {
                long start = System.nanoTime();
                CompletableFuture<byte[]> first = p.session().call(new byte[1], Duration.ofSeconds(1));
                CompletableFuture<byte[]> second = p.session().call(new byte[1], Duration.ofSeconds(1));
                Throwable a = failureOf(first);
                Throwable b = failureOf(second);
                long ms = (System.nanoTime() - start) / 1_000_000;
                if (!(a instanceof RdmaCmException ea) || ea.reason() != RdmaCmException.Reason.TIMEOUT
                        || !(b instanceof RdmaCmException eb) || eb.reason() != RdmaCmException.Reason.TIMEOUT || ms > 3000) {
                    throw new LoopbackChild.Unchecked("calls to a blocked loop ended after " + ms + " ms with " + a + ", " + b);
                }
                long closeStart = System.nanoTime();
                p.server().close();
                long closeMs = (System.nanoTime() - closeStart) / 1_000_000;
                release.countDown();
                if (closeMs > 3000) {
                    throw new LoopbackChild.Unchecked("closing the blocked loop took " + closeMs + " ms");
                }
                return "two 1 s calls timed out after " + ms + " ms while the peer's handler blocked; closing that loop"
                        + " returned in " + closeMs + " ms";
            } finally {
                release.countDown();
                p.close();
            }
        });
    }
}
