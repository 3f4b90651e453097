package io.jverbs.device;

import io.jverbs.Access;
import io.jverbs.CompletionQueue;
import io.jverbs.Context;
import io.jverbs.Endpoint;
import io.jverbs.EndpointExchange;
import io.jverbs.Poller;
import io.jverbs.IdleStrategy;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.Rdma;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.ibverbs.device.TestDevice;

import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

/**
 * Two sides on one device (rxe's loopback path), each with its own context, protection domain,
 * completion queue and queue pair, connected through {@link EndpointExchange} over TCP on
 * localhost; each side's buffer is registered with every remote right. Closing it closes both
 * contexts (and with them everything below).
 */
final class Loopback implements AutoCloseable {
    static final Duration TIMEOUT = Duration.ofSeconds(20);
    final Side server;
    final Side client;

    static final class Side implements AutoCloseable {
        final Context context;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final QueuePair qp;
        final RegisteredBuffer buffer;
        Poller poller;

        Side(TestDevice device, long bytes, UnaryOperator<QueuePairConfig> tune, boolean events, boolean confinedCq) {
            context = Rdma.open(device.name());
            try {
                pd = context.allocateProtectionDomain();
                cq = events ? context.createCompletionQueueWithEvents(256)
                        : confinedCq ? context.createConfinedCompletionQueue(256) : context.createCompletionQueue(256);
                QueuePairConfig config = QueuePairConfig.rc(cq);
                if (device.gidIndexEnv() >= 0) {
                    config = config.withGidIndex(device.gidIndexEnv());
                }
                qp = pd.createQueuePair(tune.apply(config));
                buffer = pd.allocate(bytes, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC);
            } catch (RuntimeException e) {
                context.close();
                throw e;
            }
        }

        void startPoller() {
            poller = Poller.start(null, IdleStrategy.backoff(), cq);
        }

        @Override
        public void close() {
            if (poller != null) {
                poller.close();
            }
            context.close();
        }
    }

    Loopback(TestDevice device, long bytes) throws Exception {
        this(device, bytes, c -> c, false);
    }

    Loopback(TestDevice device, long bytes, UnaryOperator<QueuePairConfig> tune, boolean events) throws Exception {
        this(device, bytes, tune, events, client -> { });
    }

    /** As above; {@code beforeConnect} sees the client side while its queue pair is still prepared. */
    Loopback(TestDevice device, long bytes, UnaryOperator<QueuePairConfig> tune, boolean events,
             java.util.function.Consumer<Side> beforeConnect) throws Exception {
        this(device, bytes, tune, events, false, beforeConnect);
    }

    /**
     * As above; with {@code confinedCq} both sides' completion queues are confined to the calling
     * thread ({@link Context#createConfinedCompletionQueue}), as are their queue pairs when
     * {@code tune} asks for it.
     */
    Loopback(TestDevice device, long bytes, UnaryOperator<QueuePairConfig> tune, boolean events, boolean confinedCq,
             java.util.function.Consumer<Side> beforeConnect) throws Exception {
        server = new Side(device, bytes, tune, events, confinedCq);
        Side c = null;
        try {
            c = new Side(device, bytes, tune, events, confinedCq);
            beforeConnect.accept(c);
            connect(server, c);
        } catch (Exception | Error e) {
            if (c != null) {
                c.close();
            }
            server.close();
            throw e;
        }
        client = c;
    }

    /** Connects the two queue pairs by exchanging endpoints over a TCP socket on localhost, as two processes would. */
    private static void connect(Side a, Side b) throws Exception {
        try (ServerSocket listener = new ServerSocket(0)) {
            CompletableFuture<Endpoint> serverSide = CompletableFuture.supplyAsync(() -> {
                try (Socket s = EndpointExchange.accept(listener, TIMEOUT)) {
                    return EndpointExchange.exchange(s, a.qp.localEndpoint(), TIMEOUT);
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            Endpoint serverEndpoint;
            try (Socket s = EndpointExchange.connect("127.0.0.1", listener.getLocalPort(), TIMEOUT)) {
                serverEndpoint = EndpointExchange.exchange(s, b.qp.localEndpoint(), TIMEOUT);
            }
            Endpoint clientEndpoint = serverSide.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            a.qp.connect(clientEndpoint);
            b.qp.connect(serverEndpoint);
        }
    }

    RemoteBuffer serverRemote() {
        return server.buffer.remote();
    }

    @Override
    public void close() {
        try {
            client.close();
        } finally {
            server.close();
        }
    }
}
