package io.jverbs.readme;

import io.jverbs.*;
import io.jverbs.cm.*;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** FirstWrite DEVICE server IP PORT | FirstWrite DEVICE client SERVER-IP PORT */
public final class FirstWrite {
    public static void main(String[] args) throws Exception {
        boolean server = args[1].equals("server");
        String ip = args[2];
        int port = Integer.parseInt(args[3]);
        try (Context ctx = Rdma.open(args[0])) {                                      // open
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            RegisteredBuffer buf = pd.allocate(4096);                                 // register
            if (server) {
                var options = Connection.Options.defaults()
                        .grant(buf, Access.REMOTE_WRITE);                             // this client's window
                try (Connection.Server listener = Connection.listen(pd, ip, port, options);
                     Connection c = listener.accept(Duration.ofSeconds(60))) {        // connect
                    c.awaitDisconnect(Duration.ofSeconds(60));                        // the client is done
                    System.out.println("server: " + buf.segment().getString(0));
                }
            } else {
                var options = Connection.Options.defaults().retry(50, Duration.ofMillis(200));
                try (Connection c = Connection.connect(pd, ip, port, options)) {       // connect
                    byte[] msg = "hello over RDMA".getBytes(StandardCharsets.UTF_8);
                    buf.segment().copyFrom(MemorySegment.ofArray(msg));
                    RemoteBuffer theirs = c.peerBuffers().get(0);                      // from the handshake
                    c.queuePair().async().write(buf, 0, msg.length, theirs, 0)            // write
                     .get(10, TimeUnit.SECONDS);                                       // await
                }                                                                      // close: disconnects
            }
        }                                                                              // close, children first
    }
}
