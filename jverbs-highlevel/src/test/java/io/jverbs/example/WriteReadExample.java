package io.jverbs.example;

import io.jverbs.Access;
import io.jverbs.CmConnection;
import io.jverbs.CompletionQueue;
import io.jverbs.Context;
import io.jverbs.Endpoint;
import io.jverbs.EndpointExchange;
import io.jverbs.IdleStrategy;
import io.jverbs.Poller;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.Rdma;
import io.jverbs.RdmaCm;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * The example service of the README: a server registers a region and publishes its
 * {@link RemoteBuffer}; a client RDMA-writes a payload into it, RDMA-reads it back and checks it.
 * The queue pairs connect either over a TCP endpoint exchange ({@code tcp}) or through rdma_cm
 * ({@code cm}); the remote buffer then travels as a Send over the new connection.
 *
 * <pre>
 *   WriteReadExample server DEVICE IP PORT tcp|cm
 *   WriteReadExample client DEVICE IP PORT tcp|cm
 * </pre>
 * Exit status 0 when the payload came back byte for byte, 1 otherwise.
 */
public final class WriteReadExample {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final long WAIT = 30;

    private WriteReadExample() {
    }

    /**
     * Runs one side.
     *
     * @param args role, device, IP, port, connection style
     * @throws Exception on any failure (the message says what)
     */
    public static void main(String[] args) throws Exception {
        if (args.length != 5 || !Arrays.asList("server", "client").contains(args[0])
                || !Arrays.asList("tcp", "cm").contains(args[4])) {
            System.err.println("usage: WriteReadExample server|client DEVICE IP PORT tcp|cm");
            System.exit(2);
        }
        boolean server = args[0].equals("server");
        String device = args[1];
        String ip = args[2];
        int port = Integer.parseInt(args[3]);
        boolean cm = args[4].equals("cm");
        try (Context ctx = Rdma.open(device)) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            CompletionQueue cq = ctx.createCompletionQueue(256);
            QueuePair qp = pd.createQueuePair(QueuePairConfig.rc(cq));
            RegisteredBuffer region = server ? pd.allocate(1 << 20, Access.REMOTE_WRITE, Access.REMOTE_READ)
                                             : pd.allocate(1 << 16);
            RegisteredBuffer control = pd.allocate(256);
            try (Poller poller = Poller.start(null, IdleStrategy.backoff(), cq);
                 AutoCloseable connection = connect(server, cm, qp, ip, port)) {
                System.out.println(args[0] + ": connected over " + (cm ? "rdma_cm" : "a TCP endpoint exchange") + " on "
                        + device + " (" + qp.gid() + ")");
                int code = server ? serve(qp, region, control) : client(qp, region, control);
                System.exit(code);
            }
        }
    }

    private static AutoCloseable connect(boolean server, boolean cm, QueuePair qp, String ip, int port) throws Exception {
        if (cm) {
            if (server) {
                try (RdmaCm.Listener listener = RdmaCm.listen(ip, port)) {
                    System.out.println("server: listening (rdma_cm) on " + ip + ":" + listener.port());
                    CmConnection c = listener.accept(qp, TIMEOUT);
                    return c;
                }
            }
            CmConnection c = RdmaCm.connect(qp, ip, port, TIMEOUT);
            return c;
        }
        Endpoint remote;
        if (server) {
            try (ServerSocket listener = new ServerSocket(port)) {
                System.out.println("server: listening (TCP endpoint exchange) on port " + listener.getLocalPort());
                try (Socket s = EndpointExchange.accept(listener, TIMEOUT)) {
                    remote = EndpointExchange.exchange(s, qp.localEndpoint(), TIMEOUT);
                }
            }
        } else {
            try (Socket s = EndpointExchange.connect(ip, port, TIMEOUT)) {
                remote = EndpointExchange.exchange(s, qp.localEndpoint(), TIMEOUT);
            }
        }
        qp.connect(remote);
        return qp;
    }

    private static int serve(QueuePair qp, RegisteredBuffer region, RegisteredBuffer control) throws Exception {
        qp.receiveAsync(control, 0, 64).get(WAIT, TimeUnit.SECONDS); // the client's hello
        var done = qp.receiveAsync(control, 64, 64);
        control.segment().asSlice(128, RemoteBuffer.BYTES).copyFrom(MemorySegment.ofArray(region.remote().toBytes()));
        qp.sendAsync(control, 128, RemoteBuffer.BYTES).get(WAIT, TimeUnit.SECONDS);
        System.out.println("server: published " + region.remote());
        int length = done.get(WAIT, TimeUnit.SECONDS).byteLength();
        String payload = new String(region.segment().asSlice(0, length).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
        String told = new String(control.segment().asSlice(64, length).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
        boolean ok = payload.equals(told);
        System.out.println("server: region holds \"" + payload + "\" — " + (ok ? "matches" : "DIFFERS FROM") + " the client's");
        return ok ? 0 : 1;
    }

    private static int client(QueuePair qp, RegisteredBuffer local, RegisteredBuffer control) throws Exception {
        var published = qp.receiveAsync(control, 0, RemoteBuffer.BYTES);
        qp.sendAsync(control, 200, 1).get(WAIT, TimeUnit.SECONDS); // hello
        published.get(WAIT, TimeUnit.SECONDS);
        RemoteBuffer remote = RemoteBuffer.fromBytes(control.segment().asSlice(0, RemoteBuffer.BYTES).toArray(ValueLayout.JAVA_BYTE));
        byte[] payload = ("jverbs example: RDMA Write then Read at " + System.nanoTime()).getBytes(StandardCharsets.UTF_8);
        local.segment().asSlice(0, payload.length).copyFrom(MemorySegment.ofArray(payload));
        qp.writeAsync(local, 0, payload.length, remote, 0).get(WAIT, TimeUnit.SECONDS);
        qp.readAsync(local, 4096, payload.length, remote, 0).get(WAIT, TimeUnit.SECONDS);
        byte[] back = local.segment().asSlice(4096, payload.length).toArray(ValueLayout.JAVA_BYTE);
        boolean ok = Arrays.equals(payload, back);
        System.out.println("client: wrote " + payload.length + " B to " + remote + ", read back: "
                + (ok ? "payload check PASSED" : "payload check FAILED"));
        control.segment().asSlice(64, payload.length).copyFrom(MemorySegment.ofArray(payload));
        qp.sendAsync(control, 64, payload.length).get(WAIT, TimeUnit.SECONDS);
        return ok ? 0 : 1;
    }
}
