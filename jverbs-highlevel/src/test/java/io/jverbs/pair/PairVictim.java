package io.jverbs.pair;

import io.jverbs.Access;
import io.jverbs.CompletionQueue;
import io.jverbs.Context;
import io.jverbs.Endpoint;
import io.jverbs.EndpointExchange;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.Rdma;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;

import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;

/**
 * The process the peer-kill fault kills: a passive RDMA peer in its own JVM. It listens on TCP
 * {@code args[1]}, exchanges its endpoint and buffer with whoever connects, connects its queue
 * pair and then just lives (the other node streams writes into its buffer) until it is killed,
 * or gives up after 5 minutes. Prints {@code victim-listening PORT PID} and {@code victim-connected}.
 *
 * <p>Arguments: device, port, GID index (-1 to choose).
 */
public final class PairVictim {
    private PairVictim() {
    }

    /** @param args device, port, GID index */
    public static void main(String[] args) throws Exception {
        Duration timeout = Duration.ofSeconds(120);
        try (Context ctx = Rdma.open(args[0]); ServerSocket listener = new ServerSocket(Integer.parseInt(args[1]))) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            CompletionQueue cq = ctx.createCompletionQueue(256);
            QueuePairConfig config = QueuePairConfig.rc(cq);
            int gid = Integer.parseInt(args[2]);
            if (gid >= 0) {
                config = config.withGidIndex(gid);
            }
            QueuePair qp = pd.createQueuePair(config);
            RegisteredBuffer buffer = pd.allocate(1 << 20, Access.REMOTE_WRITE, Access.REMOTE_READ);
            System.out.println("victim-listening " + listener.getLocalPort() + " " + ProcessHandle.current().pid());
            System.out.flush();
            try (Socket s = EndpointExchange.accept(listener, timeout)) {
                Endpoint remote = EndpointExchange.exchange(s, qp.localEndpoint(), timeout);
                RemoteBuffer ignored = EndpointExchange.exchange(s, buffer.remote(), timeout);
                qp.connect(remote);
                System.out.println("victim-connected to qp " + remote.qpn() + " (their buffer " + ignored + ")");
                System.out.flush();
                Thread.sleep(300_000);
            }
        }
        System.out.println("victim: nobody killed me within 5 minutes");
    }
}
