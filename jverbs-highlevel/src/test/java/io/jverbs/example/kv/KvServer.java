package io.jverbs.example.kv;

import io.jverbs.*;
import io.jverbs.cm.*;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import static java.lang.foreign.ValueLayout.*;

/**
 * A key-value server on one {@link EventLoop}: a 64 KiB store (1,024 values of 64 bytes) offered
 * to every client in the handshake for one-sided Read and Write, get/put over RPC, and a message
 * after each client's RDMA Write that this side checks against its store.
 * {@code KvServer DEVICE IP PORT SESSIONS}: serves until SESSIONS sessions have come and gone.
 */
public final class KvServer {
    static final int VALUE = 64, KEYS = 1024, GET = 1, PUT = 2;

    public static void main(String[] args) throws Exception {
        int sessions = Integer.parseInt(args[3]);
        AtomicInteger confirmed = new AtomicInteger(), wrong = new AtomicInteger();
        CountDownLatch allOpen = new CountDownLatch(sessions), allClosed = new CountDownLatch(sessions);
        try (Context ctx = Rdma.open(args[0])) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            RegisteredBuffer store = pd.allocate(KEYS * VALUE, Access.REMOTE_READ, Access.REMOTE_WRITE);
            MemorySegment data = store.segment();
            var options = Session.Options.defaults().offer(Handshake.offering(store.remote()));
            try (EventLoop loop = EventLoop.start(pd, EventLoop.Options.defaults());
                 var listener = loop.listen(args[1], Integer.parseInt(args[2]), options, new SessionHandler() {
                     public void onOpen(Session s) {
                         allOpen.countDown();
                     }
                     public void onMessage(Session s, MemorySegment m, int length) { // "I wrote key k: value"
                         MemorySegment value = data.asSlice((long) m.get(JAVA_INT_UNALIGNED, 0) * VALUE, VALUE);
                         (value.mismatch(m.asSlice(4, VALUE)) < 0 ? confirmed : wrong).incrementAndGet();
                     }
                     public void onRequest(Session s, long id, MemorySegment r, int length) {
                         MemorySegment value = data.asSlice((long) r.get(JAVA_INT_UNALIGNED, 1) * VALUE, VALUE);
                         if (r.get(JAVA_BYTE, 0) == PUT) {
                             value.copyFrom(r.asSlice(5, VALUE));
                         }
                         s.reply(id, r.get(JAVA_BYTE, 0) == PUT ? MemorySegment.NULL : value);
                     }
                     public void onClose(Session s, RdmaCmException cause) {
                         allClosed.countDown();
                     }
                 })) {
                System.out.println("kv-server: listening on port " + listener.port());
                allOpen.await();
                long threads = Thread.getAllStackTraces().keySet().stream()
                        .filter(t -> t.getName().startsWith("jverbs")).count();
                System.out.println("kv-server: " + sessions + " sessions open on " + threads + " jverbs threads");
                allClosed.await();
                System.out.println("kv-server: done, " + confirmed.get() + " writes confirmed, " + wrong.get() + " wrong");
            }
        }
    }
}
