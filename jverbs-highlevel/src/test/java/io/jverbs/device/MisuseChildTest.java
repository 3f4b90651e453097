package io.jverbs.device;

import io.jverbs.CompletionFailedException;
import io.jverbs.CompletionQueue;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.WorkResult;
import io.jverbs.ibverbs.device.ChildJvm;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The lifetime misuses of the high-level API, one per child JVM, the way a user would hit them:
 * each child opens a loopback connection on the device, commits one misuse, and must end with the
 * expected Java exception (or defined state) and exit 0. A crash (SIGSEGV, exit 134, an
 * {@code hs_err} file) or a hang (killed at the deadline) fails the case and names it, so one
 * misuse cannot hide behind another's state. {@link MisuseTest} runs the wider sweep of argument
 * misuses in this JVM. Prints {@code highlevel-misuse-child: N cases, 0 crashed, on DEVICE}.
 */
@DeviceTest
class MisuseChildTest {
    /** JVM start (7–17 s under QEMU TCG) and the loopback connection. */
    private static final Duration STARTUP = Duration.ofSeconds(120);
    private static final Duration WORK = Duration.ofSeconds(60);
    private static final String READY = "misuse-ready";
    private static final String OK = "misuse-ok: ";
    private static final long T = 20_000;

    /** The misuses, by name: what the child does once connected; it returns what it saw. */
    private static final Map<String, Misuse> CASES = new LinkedHashMap<>();

    @FunctionalInterface
    interface Misuse {
        String commit(Loopback lb) throws Exception;
    }

    static {
        CASES.put("post on a closed queue pair", lb -> {
            lb.client.qp.close();
            return expectIse(() -> lb.client.qp.write(1, lb.client.buffer, 0, 8, lb.serverRemote(), 0, true), "closed");
        });
        CASES.put("close with work in flight", lb -> {
            CompletableFuture<WorkResult> f = lb.client.qp.async().write(lb.client.buffer, 0, 8, lb.serverRemote(), 0);
            lb.client.qp.close();
            try {
                f.get(T, TimeUnit.MILLISECONDS);
                throw new AssertionError("the future of a write in flight completed normally after the close");
            } catch (ExecutionException e) {
                return "future failed: " + e.getCause().getMessage();
            }
        });
        CASES.put("stale access after a buffer's close", lb -> {
            MemorySegment view = lb.client.buffer.segment();
            lb.client.buffer.close();
            return expectIse(() -> view.get(ValueLayout.JAVA_BYTE, 0), "");
        });
        CASES.put("post from a closed buffer", lb -> {
            RegisteredBuffer b = lb.client.buffer;
            b.close();
            return expectIse(() -> lb.client.qp.write(1, b, 0, 8, lb.serverRemote(), 0, true), "closed");
        });
        CASES.put("post a prepared request after its buffer closed", lb -> {
            // 8 bytes go inline: the post would copy from the freed memory if it did not check
            RegisteredBuffer b = lb.client.buffer;
            io.jverbs.PreparedRequest r = lb.client.qp.prepareWrite(b, 0, 8, lb.serverRemote(), 0);
            b.close();
            return expectIse(() -> lb.client.qp.post(r, 1, true), "closed");
        });
        CASES.put("post a prepared request after its queue pair closed", lb -> {
            // the request lived in the queue pair's memory, freed by the close
            io.jverbs.PreparedRequest r = lb.client.qp.prepareRead(lb.client.buffer, 0, 8, lb.serverRemote(), 0);
            lb.client.qp.close();
            return expectIse(() -> lb.client.qp.post(r, 1, true), "closed");
        });
        CASES.put("fill or post a batch after its queue pair closed", lb -> {
            // the batch's requests live in the queue pair's memory, freed by the close
            io.jverbs.WorkBatch batch = lb.client.qp.newBatch(2);
            batch.write(1, lb.client.buffer, 0, 8, lb.serverRemote(), 0, true);
            lb.client.qp.close();
            String post = expectIse(() -> lb.client.qp.post(batch), "closed");
            String fill = expectIse(() -> batch.write(2, lb.client.buffer, 0, 8, lb.serverRemote(), 0, true), "");
            return post + "; a fill: " + fill;
        });
        CASES.put("fill or post a datagram batch after its queue pair closed", lb -> {
            io.jverbs.DatagramQueuePair ud = datagramQp(lb, 4, io.jverbs.DatagramQueuePair.DEFAULT_QKEY);
            io.jverbs.DatagramQueuePair.Destination self = ud.destination(ud.address());
            io.jverbs.DatagramBatch batch = ud.newBatch(2);
            batch.send(1, self, lb.client.buffer, 0, 8, true);
            ud.close();
            String post = expectIse(() -> ud.post(batch), "closed");
            String fill = expectIse(() -> batch.send(2, self, lb.client.buffer, 0, 8, true), "");
            return post + "; a fill: " + fill;
        });
        CASES.put("reply to a kept completion, send or resolve after the datagram queue pair closed", lb -> {
            io.jverbs.DatagramQueuePair ud = datagramQp(lb, 4, io.jverbs.cm.RdmaCm.UDP_QKEY);
            io.jverbs.DatagramQueuePair.Destination self = ud.destination(ud.address());
            ud.receive(1, lb.client.buffer, 1024, 1024);
            ud.sendWithImmediate(2, self, lb.client.buffer, 0, 8, ud.number());
            io.jverbs.Completion[] kept = new io.jverbs.Completion[1];
            long until = System.nanoTime() + 20_000_000_000L;
            while (kept[0] == null && System.nanoTime() < until) {
                lb.client.cq.poll(wc -> {
                    if (wc.isReceive()) {
                        kept[0] = wc; // kept beyond its handler: the misuse
                    }
                }, 4);
            }
            if (kept[0] == null) {
                throw new AssertionError("the datagram to itself did not arrive");
            }
            ud.close();
            String reply = expectIse(() -> ud.replyTo(kept[0], lb.client.buffer, 1024, io.jverbs.cm.RdmaCm.UDP_QKEY), "closed");
            String send = expectIse(() -> ud.sendWithImmediate(3, self, lb.client.buffer, 0, 8, 7), "closed");
            String resolve = expectIse(() -> io.jverbs.cm.RdmaCm.connectDatagram(ud, "127.0.0.1", 1,
                    java.time.Duration.ofSeconds(1)), "closed");
            return reply + "; send: " + send + "; resolve: " + resolve;
        });
        CASES.put("close a destination with datagrams in flight, then send or post a batch to it", lb -> {
            io.jverbs.DatagramQueuePair ud = datagramQp(lb, 8, io.jverbs.DatagramQueuePair.DEFAULT_QKEY);
            io.jverbs.DatagramQueuePair.Destination self = ud.destination(ud.address());
            io.jverbs.DatagramBatch batch = ud.newBatch(2);
            batch.send(9, self, lb.client.buffer, 0, 8, true);
            for (int i = 0; i < 4; i++) {
                ud.receive(10 + i, lb.client.buffer, 1024 + i * 256L, 256);
                ud.send(i, self, lb.client.buffer, 0, 8);
            }
            self.close(); // the handle is still named by 4 posted sends: it must outlive them
            String send = expectIse(() -> ud.send(5, self, lb.client.buffer, 0, 8), "closed");
            String post = expectIse(() -> ud.post(batch), "closed");
            int[] seen = new int[3]; // sends, receives, failures (a handler's exception would be counted, not thrown)
            long until = System.nanoTime() + T * 1_000_000;
            while (seen[0] + seen[1] + seen[2] < 8 && System.nanoTime() < until) {
                lb.client.cq.poll(wc -> seen[!wc.isSuccess() ? 2 : wc.isReceive() ? 1 : 0]++, 8);
            }
            if (seen[0] < 4 || seen[1] < 4 || ud.addressHandles() != 0) {
                throw new AssertionError(seen[0] + " sends and " + seen[1] + " receives completed, " + seen[2]
                        + " failed, " + ud.addressHandles() + " address handles left");
            }
            // a destination left open goes with its queue pair: closing it afterwards must not destroy its handle twice
            io.jverbs.DatagramQueuePair.Destination open = ud.destination(ud.address());
            ud.close();
            open.close();
            self.close();
            if (!open.isClosed()) {
                throw new AssertionError("a destination closed after its queue pair does not say it is closed");
            }
            String late = expectIse(() -> ud.send(6, open, lb.client.buffer, 0, 8), "closed");
            return send + "; a batch: " + post + "; the 4 datagrams in flight arrived, then the handle went; "
                    + "closed after its queue pair: no-op, then " + late;
        });
        CASES.put("peer writes into a closed buffer", lb -> {
            RemoteBuffer remote = lb.serverRemote();
            lb.server.buffer.close(); // deregistered and freed: the rkey the client holds is dead
            CompletableFuture<WorkResult> f = lb.client.qp.async().write(lb.client.buffer, 0, 64, remote, 0);
            long deadline = System.nanoTime() + T * 1_000_000;
            while (!f.isDone() && System.nanoTime() < deadline) {
                lb.client.cq.poll(null, 16);
            }
            try {
                f.get(T, TimeUnit.MILLISECONDS);
                throw new AssertionError("an RDMA Write into a deregistered region completed normally");
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof CompletionFailedException cf)) {
                    throw new AssertionError("expected a failed completion, got " + e.getCause(), e.getCause());
                }
                String next = expectIse(() -> lb.client.qp.write(2, lb.client.buffer, 0, 8, remote, 0, true), "error");
                return cf.statusName() + "; then " + next;
            }
        });
        CASES.put("poll after the context closed", lb -> {
            CompletionQueue cq = lb.client.cq;
            lb.client.context.close();
            return expectIse(() -> cq.poll(null, 1), "closed");
        });
        CASES.put("close the tree twice", lb -> {
            lb.client.context.close();
            lb.client.context.close();
            lb.client.qp.close();
            lb.client.buffer.close();
            lb.client.cq.close();
            if (!lb.client.qp.isClosed() || !lb.client.buffer.isClosed() || !lb.client.pd.isClosed()) {
                throw new AssertionError("closing the context did not close its tree");
            }
            return "every close after the first was a no-op";
        });
        CASES.put("close a completion queue from its handler", lb -> {
            CompletionQueue scq = lb.server.cq;
            if (lb.server.qp.write(11, lb.server.buffer, 0, 8, lb.client.buffer.remote(), 0, true) != QueuePair.OK) {
                throw new AssertionError("the server's write was not accepted");
            }
            long deadline = System.nanoTime() + T * 1_000_000;
            while (!scq.isClosed()) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("the server's write did not complete");
                }
                scq.poll(c -> scq.close(), 16);
            }
            return expectIse(() -> scq.poll(null, 1), "closed");
        });
        CASES.put("use a queue pair whose protection domain closed", lb -> {
            lb.client.pd.close();
            return expectIse(() -> lb.client.qp.write(1, lb.client.buffer, 0, 8, lb.serverRemote(), 0, true), "closed");
        });
        CASES.put("RDMA Read and an atomic on a UC queue pair", lb -> {
            // UC carries Write and Send only: the verbs would take the post and the device fail it
            try (QueuePair uc = lb.client.pd.createQueuePair(QueuePairConfig.uc(lb.client.cq).withDepth(4, 4))) {
                String read = MisuseTest.expect(UnsupportedOperationException.class, "needs an RC queue pair",
                        () -> uc.read(1, lb.client.buffer, 0, 8, lb.serverRemote(), 0, true)).getMessage();
                MisuseTest.expect(UnsupportedOperationException.class, "needs an RC queue pair",
                        () -> uc.fetchAndAdd(2, lb.client.buffer, 0, lb.serverRemote(), 0, 1, true));
                return "UnsupportedOperationException: " + read;
            }
        });
    }

    /** A datagram queue pair on the loopback client's domain and completion queue, the default GID. */
    private static io.jverbs.DatagramQueuePair datagramQp(Loopback lb, int depth, int qkey) {
        return io.jverbs.DatagramQueuePair.create(lb.client.pd, lb.client.cq, depth, qkey, -1);
    }

    /** Asserts that {@code call} throws an IllegalStateException naming {@code messagePart}; returns what it said. */
    private static String expectIse(org.junit.jupiter.api.function.Executable call, String messagePart) {
        return "IllegalStateException: " + MisuseTest.expect(IllegalStateException.class, messagePart, call).getMessage();
    }

    @Test
    void eachLifetimeMisuseInItsOwnJvm(TestDevice device) throws Exception {
        List<String> ran = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        // Two children at a time (the rig's vCPUs): each has its own loopback pair, and no case
        // races a clock.
        List<String> names = List.copyOf(CASES.keySet());
        java.util.Map<String, ChildJvm.Result> results = ChildJvm.runSideBySide(names,
                name -> ChildJvm.command(Child.class, List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"),
                        List.of(name)), READY, STARTUP, WORK, 2, "misuse");
        for (String name : names) {
            ChildJvm.Result r = results.get(name);
            String ok = r.last(OK + name);
            boolean crashed = r.exitCode() == 134 || r.exitCode() == 139 || !r.linesWith("hs_err").isEmpty()
                    || !r.linesWith("SIGSEGV").isEmpty();
            if (crashed) {
                failures.add(name + ": the JVM CRASHED (exit " + r.exitCode() + "): " + r.linesWith("#"));
            } else if (r.timedOutIn() != null) {
                failures.add(name + ": hung (killed in " + r.timedOutIn() + "); last lines " + LoopbackChild.tail(r));
            } else if (r.exitCode() != 0 || ok.equals("(none)")) {
                failures.add(name + ": exit " + r.exitCode() + ", last lines " + LoopbackChild.tail(r));
            } else {
                ran.add(name);
            }
        }
        if (!failures.isEmpty()) {
            fail(failures.size() + " of " + CASES.size() + " misuse children on " + device.name() + " failed:\n"
                    + String.join("\n", failures));
        }
        assertTrue(ran.size() == CASES.size());
        System.out.println("highlevel-misuse-child: " + ran.size() + " cases, 0 crashed, on " + device.name()
                + " (one child JVM each, two at a time): " + ran);
    }

    /** The child: one loopback connection on the environment's device, one misuse. */
    static final class Child {
        public static void main(String[] args) throws Exception {
            Misuse misuse = CASES.get(args[0]);
            LoopbackChild.run("misuse", args[0], misuse == null ? null : (lb, device) -> misuse.commit(lb));
        }
    }
}
