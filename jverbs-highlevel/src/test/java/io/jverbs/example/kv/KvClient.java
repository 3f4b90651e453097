package io.jverbs.example.kv;

import io.jverbs.*;
import io.jverbs.cm.*;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import static io.jverbs.example.kv.KvServer.*;

/**
 * Clients of {@link KvServer}: each client is one {@link EventLoop} with several sessions, all
 * open at once, and each session owns its keys. Per key: put then get over RPC; an RDMA Write of a
 * new value and a message telling the server; an RDMA Read that must return it.
 * {@link #run} returns true when every value came back.
 */
public final class KvClient {
    static final Duration T = Duration.ofSeconds(30);

    public static boolean run(String device, String ip, int port, int clients, int sessions) throws Exception {
        try (Context ctx = Rdma.open(device)) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            CyclicBarrier allConnected = new CyclicBarrier(clients);
            List<CompletableFuture<Boolean>> results = new ArrayList<>();
            for (int c = 0; c < clients; c++) {
                int first = c * sessions * (KEYS / (clients * sessions)), keys = KEYS / (clients * sessions);
                results.add(CompletableFuture.supplyAsync(() -> client(pd, ip, port, sessions, first, keys, allConnected),
                        r -> Thread.ofPlatform().start(r)));
            }
            return results.stream().allMatch(CompletableFuture::join);
        }
    }

    static boolean client(ProtectionDomain pd, String ip, int port, int sessions, int first, int keys, CyclicBarrier all) {
        try (EventLoop loop = EventLoop.start(pd, EventLoop.Options.defaults());
             RegisteredBuffer local = pd.allocate(2 * VALUE)) {
            List<Session> open = new ArrayList<>();
            for (int i = 0; i < sessions; i++) {
                open.add(loop.connect(ip, port, Session.Options.defaults(), new SessionHandler() { }, T));
            }
            all.await(); // every client's sessions are open at once
            for (int key = first; key < first + sessions * keys; key++) {
                Session s = open.get((key - first) / keys);
                RemoteBuffer store = s.peerBuffers().get(0);
                byte[] put = value(key, 1), again = value(key, 2);
                s.call(request(PUT, key, put), T).get();
                boolean ok = Arrays.equals(s.call(request(GET, key, new byte[0]), T).get(), put);
                local.segment().copyFrom(MemorySegment.ofArray(again));
                s.queuePair().async().write(local, 0, VALUE, store, (long) key * VALUE); // ordered before the message
                s.send(ByteBuffer.allocate(4 + VALUE).order(ByteOrder.nativeOrder()).putInt(key).put(again).array());
                s.queuePair().async().read(local, VALUE, VALUE, store, (long) key * VALUE).get();
                if (!ok || local.segment().asSlice(VALUE, VALUE).mismatch(MemorySegment.ofArray(again)) >= 0) {
                    return false;
                }
            }
            open.forEach(Session::close);
            return true;
        } catch (Exception e) {
            e.printStackTrace();
            return false;
        }
    }

    static byte[] request(int op, int key, byte[] value) {
        return ByteBuffer.allocate(5 + value.length).order(ByteOrder.nativeOrder()).put((byte) op).putInt(key).put(value)
                .array();
    }

    static byte[] value(int key, int round) {
        byte[] v = new byte[VALUE];
        Arrays.fill(v, (byte) (key * 7 + round));
        return v;
    }
}
