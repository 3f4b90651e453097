package io.jverbs.device;

import io.jverbs.Access;
import io.jverbs.CompletionFailedException;
import io.jverbs.CompletionQueue;
import io.jverbs.Context;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.Rdma;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.WaitInterruptedException;
import io.jverbs.cm.Connection;
import io.jverbs.cm.HalfOpenCmClient;
import io.jverbs.cm.HalfOpenFlood;
import io.jverbs.cm.Handshake;
import io.jverbs.cm.RdmaCmException;
import io.jverbs.ibverbs.device.TestDevice;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static io.jverbs.device.SafetyChildTest.refused;

/**
 * The {@link SafetyChildTest} cases of a server many clients share ({@link Connection.Server}):
 * hostile clients that guess rkeys, ignore a grant's rights, never finish the handshake or flood
 * the listener with requests that never do; the limits; waits that keep their bounds and end on
 * an interrupt. Each runs in its own child JVM on the loopback's device, with protection domains
 * of its own (the loopback's has buffers with remote rights of their own).
 */
final class MultiClientSafetyCases {
    private static final Duration T = Duration.ofSeconds(20);

    private MultiClientSafetyCases() {
    }

    private static QueuePairConfig config(QueuePairConfig c, TestDevice d) {
        return d.gidIndexEnv() >= 0 ? c.withGidIndex(d.gidIndexEnv()) : c;
    }

    private static Connection.Options options(TestDevice d) {
        return Connection.Options.defaults().configure(c -> config(c, d)).depth(8, 8).callerPolls()
                .timeout(Duration.ofSeconds(10));
    }

    /** A server whose accepts run on a thread of their own, keeping what they accept until closed. */
    private static final class Serving implements AutoCloseable {
        final Connection.Server server;
        final List<Connection> accepted = new java.util.concurrent.CopyOnWriteArrayList<>();
        private final Thread thread;
        private volatile boolean stop;

        Serving(Connection.Server server) {
            this.server = server;
            this.thread = Thread.ofPlatform().name("accepts").daemon(true).start(() -> {
                while (!stop) {
                    try {
                        accepted.add(server.accept(Duration.ofMillis(500)));
                    } catch (RdmaCmException e) {
                        // no client this round
                    } catch (IllegalStateException e) {
                        return; // closed
                    }
                    for (Connection c : accepted) {
                        if (c.isDisconnected()) {
                            accepted.remove(c);
                            c.close();
                        }
                    }
                }
            });
        }

        @Override
        public void close() throws InterruptedException {
            stop = true;
            thread.join(5_000);
            server.close();
            for (Connection c : accepted) {
                c.close();
            }
        }
    }

    /** Writes {@code bytes} from {@code local} to {@code target} through {@code c}; its failure's status, or "SUCCESS". */
    private static String write(Connection c, RegisteredBuffer local, int bytes, RemoteBuffer target, long offset)
            throws InterruptedException, TimeoutException {
        return status(c.completionQueue(), c.queuePair().async().write(local, 0, bytes, target, offset));
    }

    private static boolean allZero(RegisteredBuffer b, long from, long bytes) {
        for (long i = from; i < from + bytes; i++) {
            if (b.segment().get(ValueLayout.JAVA_BYTE, i) != 0) {
                return false;
            }
        }
        return true;
    }

    static void addTo(Map<String, LoopbackChild.Case> cases) {
        cases.put("a client guessing the rkeys of a window granted to another client reaches nothing", (lb, d) -> {
            ProtectionDomain spd = lb.server.context.allocateProtectionDomain();
            RegisteredBuffer granted = spd.allocate(4096);
            RegisteredBuffer never = spd.allocate(4096);
            ProtectionDomain cpd = lb.client.context.allocateProtectionDomain();
            RegisteredBuffer local = cpd.allocate(4096);
            local.segment().fill((byte) 0x5a);
            Connection.Options serverOptions = options(d).grant(granted, Access.REMOTE_WRITE, Access.REMOTE_READ);
            try (Serving s = new Serving(Connection.listen(spd, d.ip(), 0, serverOptions));
                 Connection first = Connection.connect(cpd, d.ip(), s.server.port(), options(d))) {
                RemoteBuffer window = first.peerBuffers().get(0);
                String own = write(first, local, 8, window, 0);
                if (!own.equals("SUCCESS")) {
                    throw new AssertionError("the first client's write through its own window: " + own);
                }
                int landed = 0;
                int tried = 0;
                List<RemoteBuffer> guesses = new ArrayList<>();
                for (int key = 0; key < 256; key++) { // every key of the window's index
                    guesses.add(new RemoteBuffer(window.address(), window.length(), (window.rkey() & 0xffffff00) | key,
                            EnumSet.of(Access.REMOTE_WRITE)));
                }
                guesses.add(new RemoteBuffer(never.address(), never.length(), never.rkey(), EnumSet.of(Access.REMOTE_WRITE)));
                guesses.add(new RemoteBuffer(granted.address(), granted.length(), granted.rkey(),
                        EnumSet.of(Access.REMOTE_WRITE)));
                long start = System.nanoTime();
                for (RemoteBuffer guess : guesses) {
                    if (tried % 32 == 0) {
                        String check = write(first, local, 8, window, 16);
                        if (!check.equals("SUCCESS")) {
                            throw new AssertionError("after " + tried + " guesses the first client's window failed: "
                                    + check + "; server side: " + s.accepted.get(0).queuePair().deviceState());
                        }
                    }
                    try (Connection second = Connection.connect(cpd, d.ip(), s.server.port(), options(d))) {
                        tried++;
                        String status = write(second, local, 64, guess, 64);
                        if (status.equals("SUCCESS")) {
                            landed++;
                        }
                    }
                }
                long ms = (System.nanoTime() - start) / 1_000_000;
                if (landed > 0 || !allZero(granted, 64, 4096 - 64) || !allZero(never, 0, 4096)) {
                    throw new LoopbackChild.Unchecked(landed + " of " + tried + " guessed rkeys reached the server's"
                            + " memory through a second client");
                }
                String again = write(first, local, 8, window, 8);
                if (!again.equals("SUCCESS")) {
                    throw new AssertionError("the first client's window stopped working: " + again + ", disconnected "
                            + first.isDisconnected() + ", server side " + s.accepted);
                }
                return tried + " writes of a second client (the 256 keys of the first client's window, the"
                        + " never-granted buffer's and the granted buffer's own rkeys) reached nothing, in " + ms
                        + " ms; the first client's window still works";
            }
        });
        cases.put("a buffer with remote rights of its own cannot join an isolated server's domain", (lb, d) -> {
            ProtectionDomain exposed = lb.server.context.allocateProtectionDomain();
            exposed.allocate(4096, Access.REMOTE_READ);
            String atListen = refused(IllegalStateException.class, "was registered with",
                    () -> Connection.listen(exposed, d.ip(), 0, options(d)).close());
            ProtectionDomain spd = lb.server.context.allocateProtectionDomain();
            try (Connection.Server server = Connection.listen(spd, d.ip(), 0, options(d))) {
                String after = refused(IllegalStateException.class, "through memory windows only",
                        () -> spd.allocate(4096, Access.REMOTE_WRITE));
                return atListen + "; after listen: " + after;
            }
        });
        cases.put("a half-open peer's writes to its window land nowhere", (lb, d) -> {
            ProtectionDomain spd = lb.server.context.allocateProtectionDomain();
            RegisteredBuffer target = spd.allocate(4096);
            Connection.Policy quick = Connection.Policy.defaults().handshakes(64, 16, Duration.ofSeconds(1));
            try (Context clientCtx = Rdma.open(d.name());
                 Connection.Server server = Connection.listen(spd, d.ip(), 0,
                         options(d).grant(target, Access.REMOTE_WRITE), quick)) {
                ProtectionDomain cpd = clientCtx.allocateProtectionDomain();
                CompletionQueue ccq = clientCtx.createCompletionQueue(64);
                QueuePair cqp = cpd.createQueuePair(config(QueuePairConfig.rc(ccq), d).withDepth(8, 8));
                RegisteredBuffer source = cpd.allocate(4096);
                source.segment().fill((byte) 0x77);
                CompletableFuture<Connection> accept = CompletableFuture.supplyAsync(
                        () -> server.accept(Duration.ofSeconds(4)));
                String during;
                try (HalfOpenCmClient hostile = HalfOpenCmClient.connect(cqp, d.ip(), server.port(), T)) {
                    RemoteBuffer window = hostile.reply().buffers().get(0);
                    CompletableFuture<?> w = cqp.async().write(source, 0, 64, window, 0);
                    during = status(ccq, w);
                    Throwable end;
                    try {
                        accept.get(T.toSeconds(), TimeUnit.SECONDS);
                        throw new LoopbackChild.Unchecked("accept returned a connection without the handshake's last step");
                    } catch (ExecutionException e) {
                        end = e.getCause();
                    }
                    if (!(end instanceof RdmaCmException r) || r.reason() != RdmaCmException.Reason.TIMEOUT) {
                        throw new AssertionError("the accept ended with " + end);
                    }
                }
                if (during.equals("SUCCESS") || !allZero(target, 0, 4096)) {
                    throw new LoopbackChild.Unchecked("a half-open peer's write landed (" + during + ")");
                }
                if (server.liveConnections() != 0) {
                    throw new AssertionError(server.liveConnections() + " live connections after a half-open handshake");
                }
                ProtectionDomain legit = lb.client.context.allocateProtectionDomain();
                RegisteredBuffer mine = legit.allocate(64);
                mine.segment().fill((byte) 1);
                CompletableFuture<Connection> next = CompletableFuture.supplyAsync(() -> server.accept(T));
                try (Connection c = Connection.connect(legit, d.ip(), server.port(), options(d));
                     Connection s = next.get(T.toSeconds(), TimeUnit.SECONDS)) {
                    String ok = write(c, mine, 64, c.peerBuffers().get(0), 0);
                    if (!ok.equals("SUCCESS") || target.segment().get(ValueLayout.JAVA_BYTE, 0) != 1) {
                        throw new AssertionError("a client that completes the handshake could not write: " + ok);
                    }
                }
                return "the half-open peer's write got " + during + ", nothing landed; the handshake was dropped after"
                        + " 1 s, and the next client's write through its own window landed";
            }
        });
        cases.put("a flood of half-open requests does not keep a client out", (lb, d) -> {
            String floodIp = SecondAddress.add(d);
            try {
                ProtectionDomain spd = lb.server.context.allocateProtectionDomain();
                RegisteredBuffer target = spd.allocate(4096);
                ProtectionDomain cpd = lb.client.context.allocateProtectionDomain();
                RegisteredBuffer local = cpd.allocate(64);
                int rate = 200;
                int asked = 220; // a little over: the rate is judged on what was sent
                long floodMs = 20_000;
                try (Serving s = new Serving(Connection.listen(spd, d.ip(), 0,
                        options(d).grant(target, Access.REMOTE_WRITE)))) {
                    // the client's own first use (class loading, the JIT, under emulation) before the
                    // flood: what is measured then is the server's admission, as for a client of its own
                    try (Connection warm = Connection.connect(cpd, d.ip(), s.server.port(), options(d))) {
                        write(warm, local, 64, warm.peerBuffers().get(0), 0);
                    }
                    HalfOpenFlood flood = HalfOpenFlood.start(floodIp, d.ip(), s.server.port(), asked);
                    long start = System.nanoTime();
                    List<Long> connectMs = new ArrayList<>();
                    try {
                        Thread.sleep(2_000); // the flood is under way
                        for (int i = 0; i < 10; i++) {
                            long t0 = System.nanoTime();
                            try (Connection c = Connection.connect(cpd, d.ip(), s.server.port(), options(d))) {
                                connectMs.add((System.nanoTime() - t0) / 1_000_000);
                                String w = write(c, local, 64, c.peerBuffers().get(0), 0);
                                if (!w.equals("SUCCESS")) {
                                    throw new AssertionError("connect " + (i + 1) + ": the write got " + w);
                                }
                            }
                            Thread.sleep(1_000);
                        }
                        long left = floodMs - (System.nanoTime() - start) / 1_000_000;
                        if (left > 0) {
                            Thread.sleep(left);
                        }
                    } finally {
                        flood.close();
                    }
                    double seconds = (System.nanoTime() - start) / 1e9;
                    double perSecond = flood.sent() / seconds;
                    long worst = connectMs.stream().mapToLong(Long::longValue).max().orElse(-1);
                    String result = "10 connects from " + d.ip() + " in " + connectMs + " ms (worst " + worst
                            + ") while " + floodIp + " sent " + flood.sent() + " half-open requests in "
                            + String.format("%.1f", seconds) + " s (" + String.format("%.0f", perSecond) + "/s; "
                            + flood.replied() + " replied, " + flood.rejected() + " rejected at once)";
                    if (worst > 2_000) {
                        throw new LoopbackChild.Unchecked("a connect took over 2 s: " + result);
                    }
                    if (perSecond < rate) {
                        throw new AssertionError("the flood reached only " + String.format("%.0f", perSecond)
                                + " requests/s: " + result);
                    }
                    return result;
                }
            } finally {
                SecondAddress.remove(d, floodIp);
            }
        });
        cases.put("a server at its connection limit refuses the next client with the reason", (lb, d) -> {
            ProtectionDomain spd = lb.server.context.allocateProtectionDomain();
            ProtectionDomain cpd = lb.client.context.allocateProtectionDomain();
            Connection.Policy two = Connection.Policy.defaults().connections(2, 2);
            try (Serving s = new Serving(Connection.listen(spd, d.ip(), 0, options(d), two));
                 Connection a = Connection.connect(cpd, d.ip(), s.server.port(), options(d));
                 Connection b = Connection.connect(cpd, d.ip(), s.server.port(), options(d))) {
                String third = refused(RdmaCmException.class, "serves 2 connections",
                        () -> Connection.connect(cpd, d.ip(), s.server.port(), options(d)).close());
                a.close();
                long until = System.nanoTime() + T.toNanos();
                while (s.server.liveConnections() > 1 && System.nanoTime() < until) {
                    Thread.sleep(20); // the server closes the disconnected connection on its next round
                }
                try (Connection c = Connection.connect(cpd, d.ip(), s.server.port(), options(d))) {
                    return third + "; once one closed, the next client connected";
                }
            }
        });
        cases.put("a peer writing past a read-only grant lands nothing", (lb, d) -> {
            ProtectionDomain spd = lb.server.context.allocateProtectionDomain();
            RegisteredBuffer readable = spd.allocate(4096);
            ProtectionDomain cpd = lb.client.context.allocateProtectionDomain();
            RegisteredBuffer local = cpd.allocate(4096);
            local.segment().fill((byte) 0x33);
            String shared;
            ProtectionDomain open = lb.server.context.allocateProtectionDomain();
            RegisteredBuffer both = open.allocate(4096, Access.REMOTE_WRITE, Access.REMOTE_READ);
            Connection.Options narrower = options(d).offer(Handshake.offering(new RemoteBuffer(both.address(),
                    both.length(), both.rkey(), EnumSet.of(Access.REMOTE_READ))));
            try (Connection.Server server = Connection.listen(open, d.ip(), 0, narrower,
                    Connection.Policy.defaults().isolation(Connection.Isolation.SHARED_DOMAIN))) {
                shared = refused(IllegalArgumentException.class, "ignores the offer", () -> server.accept(T));
            }
            try (Serving s = new Serving(Connection.listen(spd, d.ip(), 0, options(d).grant(readable, Access.REMOTE_READ)));
                 Connection c = Connection.connect(cpd, d.ip(), s.server.port(), options(d))) {
                RemoteBuffer given = c.peerBuffers().get(0);
                if (!given.rights().equals(EnumSet.of(Access.REMOTE_READ))) {
                    throw new AssertionError("granted " + given.rights());
                }
                RemoteBuffer forged = new RemoteBuffer(given.address(), given.length(), given.rkey(),
                        EnumSet.of(Access.REMOTE_WRITE));
                String status = write(c, local, 64, forged, 0);
                if (status.equals("SUCCESS") || !allZero(readable, 0, 4096)) {
                    throw new LoopbackChild.Unchecked("a write through a read-only window landed (" + status + ")");
                }
                return "a write through the read-only window got " + status + ", nothing landed; offering fewer"
                        + " rights than a registration gives is refused: " + shared;
            }
        });
        cases.put("a connect to a silent host keeps its timeout, first use included", (lb, d) -> {
            // the first rdma_cm call of this JVM: the library's start and the device's count
            String silent = System.getenv().getOrDefault("JVERBS_SILENT_HOST", sibling(d.ip(), 2));
            ProtectionDomain cpd = lb.client.context.allocateProtectionDomain();
            Duration timeout = Duration.ofSeconds(3);
            long start = System.nanoTime();
            Throwable t;
            try {
                Connection.connect(cpd, silent, 7471, options(d).timeout(timeout)).close();
                throw new AssertionError(silent + " answered: not a silent host (set JVERBS_SILENT_HOST)");
            } catch (RdmaCmException e) {
                t = e;
            }
            long ms = (System.nanoTime() - start) / 1_000_000;
            if (ms > timeout.toMillis() * 11 / 10) {
                throw new LoopbackChild.Unchecked("connect(" + silent + ", 3 s) returned after " + ms + " ms: " + t);
            }
            return "connect(" + silent + ", 3 s) ended in " + ms + " ms: " + t.getMessage();
        });
        cases.put("an interrupt ends each blocking wait of a server and a client", (lb, d) -> {
            ProtectionDomain spd = lb.server.context.allocateProtectionDomain();
            ProtectionDomain cpd = lb.client.context.allocateProtectionDomain();
            List<String> ended = new ArrayList<>();
            try (Connection.Server server = Connection.listen(spd, d.ip(), 0, options(d))) {
                ended.add(interrupted("Server.accept", () -> server.accept(Duration.ofSeconds(60))));
                String silent = System.getenv().getOrDefault("JVERBS_SILENT_HOST", sibling(d.ip(), 2));
                ended.add(interrupted("Connection.connect", () -> Connection.connect(cpd, silent, 7471,
                        options(d).timeout(Duration.ofSeconds(60)))));
                CompletionQueue cq = lb.client.context.createCompletionQueueWithEvents(4);
                cq.armEvents();
                ended.add(interrupted("CompletionQueue.waitForEvent", () -> cq.waitForEvent(60_000)));
                CompletableFuture<Connection> accept = CompletableFuture.supplyAsync(() -> server.accept(T));
                try (Connection c = Connection.connect(cpd, d.ip(), server.port(), options(d));
                     Connection s = accept.get(T.toSeconds(), TimeUnit.SECONDS)) {
                    ended.add(interrupted("Connection.awaitDisconnect", () -> s.awaitDisconnect(Duration.ofSeconds(60))));
                }
            }
            return String.join("; ", ended);
        });
    }

    /** Polls {@code cq} until {@code f} ends: "SUCCESS" or the failed completion's status. */
    private static String status(CompletionQueue cq, CompletableFuture<?> f) throws InterruptedException, TimeoutException {
        try {
            cq.await(f, x -> { }, T);
            return "SUCCESS";
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            while (cause instanceof java.util.concurrent.CompletionException && cause.getCause() != null) {
                cause = cause.getCause();
            }
            if (cause instanceof CompletionFailedException cf) {
                return cf.statusName();
            }
            throw new AssertionError("the write failed before the device: " + cause, cause);
        }
    }

    /** The address {@code ip} with its last byte replaced. */
    private static String sibling(String ip, int last) {
        return ip.substring(0, ip.lastIndexOf('.') + 1) + last;
    }

    /** Runs {@code wait} on a thread interrupted 500 ms in; how it ended, which must be within 1 s of the interrupt. */
    private static String interrupted(String what, org.junit.jupiter.api.function.Executable wait) throws Exception {
        io.jverbs.InterruptProbe.Ended ended = io.jverbs.InterruptProbe.interrupt(wait, 500);
        Throwable e = ended.end();
        if (ended.stillWaiting()) {
            throw new LoopbackChild.Unchecked(what + " went on waiting after an interrupt");
        }
        boolean says = e instanceof InterruptedException || e instanceof WaitInterruptedException
                || e instanceof RdmaCmException r && r.reason() == RdmaCmException.Reason.INTERRUPTED;
        if (!says || ended.ms() > 1_000) {
            throw new LoopbackChild.Unchecked(what + " ended " + ended.ms() + " ms after the interrupt with " + e);
        }
        return what + " in " + ended.ms() + " ms (" + e.getClass().getSimpleName() + ")";
    }

    /**
     * A second IPv4 address on the device's network interface, for a client that must come from
     * another source than the test's own: added with {@code ip addr} (root, as in the rig) and
     * removed after; its RoCE GID appears with it.
     */
    static final class SecondAddress {
        private SecondAddress() {
        }

        static String add(TestDevice d) throws IOException, InterruptedException {
            String netdev = Files.readString(Path.of("/sys/class/infiniband", d.name(), "parent")).trim();
            String ip = System.getenv().getOrDefault("JVERBS_TEST_SECOND_IP", sibling(d.ip(), 200));
            run("ip", "addr", "add", ip + "/32", "dev", netdev);
            long until = System.nanoTime() + 5_000_000_000L;
            while (System.nanoTime() < until) {
                if (hasGid(d, ip)) {
                    return ip;
                }
                Thread.sleep(100);
            }
            throw new AssertionError("no RoCE GID of " + ip + " on " + d.name() + " 5 s after adding it to " + netdev);
        }

        static void remove(TestDevice d, String ip) throws IOException, InterruptedException {
            String netdev = Files.readString(Path.of("/sys/class/infiniband", d.name(), "parent")).trim();
            run("ip", "addr", "del", ip + "/32", "dev", netdev);
        }

        private static boolean hasGid(TestDevice d, String ip) throws IOException {
            String[] parts = ip.split("\\.");
            String suffix = String.format("%02x%02x:%02x%02x", Integer.parseInt(parts[0]), Integer.parseInt(parts[1]),
                    Integer.parseInt(parts[2]), Integer.parseInt(parts[3]));
            Path gids = Path.of("/sys/class/infiniband", d.name(), "ports", "1", "gids");
            try (var files = Files.list(gids)) {
                for (Path p : (Iterable<Path>) files::iterator) {
                    try {
                        if (Files.readString(p).trim().endsWith(suffix)) {
                            return true;
                        }
                    } catch (IOException unreadable) {
                        // an empty entry
                    }
                }
            }
            return false;
        }

        private static void run(String... command) throws IOException, InterruptedException {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes()).trim();
            if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new AssertionError(String.join(" ", command) + " failed (needs root, as in the rig): " + out);
            }
        }
    }
}
