package io.jverbs.cm;

import io.jverbs.rdmacm.raw.rdma_cma_h;
import io.jverbs.rdmacm.raw.rdma_conn_param;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A flood of connection requests that never complete, for tests: from one source address, at a
 * given rate, each request resolves, asks, takes the listener's reply (if any) and never sends the
 * last step, as a client that crashed at that moment, or an attacker, would. Each id is kept until
 * {@link #close()} (a listener's reply to it stays unanswered; a rejected one is dropped at once).
 * Runs on its own thread, one event channel for all its ids.
 */
public final class HalfOpenFlood implements AutoCloseable {
    private final RdmaCm.Channel channel = RdmaCm.Channel.create();
    private final String source;
    private final String host;
    private final int port;
    private final int perSecond;
    private final Thread thread;
    private final Map<Long, MemorySegment> held = new HashMap<>();
    private final Map<Long, MemorySegment> resolving = new HashMap<>();
    private volatile boolean stop;
    private volatile int sent;
    private volatile int replied;
    private volatile int rejected;
    private volatile int failed;
    private volatile RuntimeException died;

    private HalfOpenFlood(String source, String host, int port, int perSecond) {
        this.source = source;
        this.host = host;
        this.port = port;
        this.perSecond = perSecond;
        this.thread = Thread.ofPlatform().name("half-open-flood").daemon(true).unstarted(this::run);
    }

    /**
     * Starts flooding {@code host:port} from {@code source}.
     *
     * @param source    the local address the requests come from
     * @param host      the listener's address
     * @param port      its port
     * @param perSecond requests started per second
     * @return the running flood
     */
    public static HalfOpenFlood start(String source, String host, int port, int perSecond) {
        HalfOpenFlood f = new HalfOpenFlood(source, host, port, perSecond);
        f.thread.start();
        return f;
    }

    private void run() {
        long interval = 1_000_000_000L / perSecond;
        long next = System.nanoTime();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = RdmaCm.sockaddr(arena, source, 0);
            MemorySegment dst = RdmaCm.sockaddr(arena, host, port);
            MemorySegment param = arena.allocate(rdma_conn_param.LAYOUT);
            rdma_conn_param.responder_resources(param, (byte) 1);
            rdma_conn_param.initiator_depth(param, (byte) 1);
            rdma_conn_param.retry_count(param, (byte) 7);
            rdma_conn_param.rnr_retry_count(param, (byte) 7);
            while (!stop) {
                long now = System.nanoTime();
                while (now - next >= 0 && !stop) {
                    MemorySegment id = channel.createId();
                    if (rdma_cma_h.rdma_resolve_addr(id, src, dst, 2000) != 0) {
                        rdma_cma_h.rdma_destroy_id(id);
                        failed++;
                    } else {
                        resolving.put(id.address(), id);
                    }
                    next += interval;
                }
                RdmaCm.Channel.Event e = channel.next(Math.min(next, System.nanoTime() + 1_000_000L));
                while (e != null) {
                    handle(e, param);
                    e = channel.next(System.nanoTime()); // what is there already, without waiting
                }
            }
        } catch (RuntimeException e) {
            died = e;
        }
    }

    private void handle(RdmaCm.Channel.Event e, MemorySegment param) {
        MemorySegment id = resolving.get(e.id().address());
        if (id == null) {
            id = e.id();
        }
        switch (e.type()) {
            case rdma_cma_h.RDMA_CM_EVENT_ADDR_RESOLVED -> {
                if (rdma_cma_h.rdma_resolve_route(id, 2000) != 0) {
                    drop(id);
                }
            }
            case rdma_cma_h.RDMA_CM_EVENT_ROUTE_RESOLVED -> {
                rdma_conn_param.qp_num(param, ThreadLocalRandom.current().nextInt(1 << 20, 1 << 24));
                if (rdma_cma_h.rdma_connect(id, param) != 0) {
                    drop(id);
                } else {
                    sent++;
                }
            }
            case rdma_cma_h.RDMA_CM_EVENT_CONNECT_RESPONSE -> {
                replied++; // and no rdma_establish, ever
                resolving.remove(id.address());
                held.put(id.address(), id);
            }
            case rdma_cma_h.RDMA_CM_EVENT_REJECTED -> {
                rejected++;
                drop(id);
            }
            default -> drop(id);
        }
    }

    /** Destroys an id the listener refused (or that failed); each id is destroyed once. */
    private void drop(MemorySegment id) {
        MemorySegment known = resolving.remove(id.address());
        if (known == null) {
            known = held.remove(id.address());
        }
        if (known != null) {
            RdmaCm.reap(known, null);
        }
    }

    /**
     * Returns the requests sent so far.
     *
     * @return requests that reached {@code rdma_connect}
     */
    public int sent() {
        return sent;
    }

    /**
     * Returns the requests the listener replied to (each left half-open).
     *
     * @return replies taken
     */
    public int replied() {
        return replied;
    }

    /**
     * Returns the requests the listener rejected.
     *
     * @return rejections
     */
    public int rejected() {
        return rejected;
    }

    /**
     * Returns the requests that failed before they were sent.
     *
     * @return failures on this side
     */
    public int failed() {
        return failed;
    }

    /** Stops, then destroys every id (on the reaper) and the channel after them. */
    @Override
    public void close() throws InterruptedException {
        stop = true;
        thread.join(10_000);
        List<MemorySegment> all = new ArrayList<>(held.values());
        all.addAll(resolving.values());
        java.util.concurrent.atomic.AtomicInteger left = new java.util.concurrent.atomic.AtomicInteger(all.size());
        if (all.isEmpty()) {
            RdmaCm.reap(null, channel);
        }
        for (MemorySegment id : all) {
            RdmaCm.reap(id, null, () -> {
                if (left.decrementAndGet() == 0) {
                    RdmaCm.reap(null, channel);
                }
            });
        }
        if (died != null) {
            throw died;
        }
    }
}
