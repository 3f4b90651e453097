package example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.jverbs.Access;
import io.jverbs.Context;
import io.jverbs.ProtectionDomain;
import io.jverbs.Rdma;
import io.jverbs.RegisteredBuffer;
import io.jverbs.cm.Connection;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The Java example of the Soft-RoCE action's README. */
class WriteTest {

    /** Runs anywhere: no device needed. */
    @Test
    void messageIsUtf8() {
        assertEquals(15, "hello over RDMA".getBytes(StandardCharsets.UTF_8).length);
    }

    /**
     * On the action's device: a server and a client in this JVM, connected through rdma_cm on
     * JVERBS_TEST_IP; the client RDMA-writes into the window the server granted it.
     */
    @Test
    @Tag("rdma")
    void rdmaWriteIntoTheGrantedWindow() throws Exception {
        String device = System.getenv("JVERBS_TEST_DEVICE");
        String ip = System.getenv("JVERBS_TEST_IP");
        assumeTrue(device != null && ip != null, "no RDMA device here (JVERBS_TEST_DEVICE, JVERBS_TEST_IP)");
        byte[] msg = "hello over RDMA".getBytes(StandardCharsets.UTF_8);
        try (Context ctx = Rdma.open(device)) {
            ProtectionDomain serverPd = ctx.allocateProtectionDomain();
            ProtectionDomain clientPd = ctx.allocateProtectionDomain();
            RegisteredBuffer target = serverPd.allocate(4096);
            RegisteredBuffer source = clientPd.allocate(4096);
            var grant = Connection.Options.defaults().grant(target, Access.REMOTE_WRITE);
            try (Connection.Server server = Connection.listen(serverPd, ip, 23459, grant)) {
                CompletableFuture<Connection> accepted =
                        CompletableFuture.supplyAsync(() -> server.accept(Duration.ofSeconds(30)));
                try (Connection client = Connection.connect(clientPd, ip, 23459, Connection.Options.defaults());
                     Connection served = accepted.get(30, TimeUnit.SECONDS)) {
                    source.segment().copyFrom(MemorySegment.ofArray(msg));
                    client.queuePair().async().write(source, 0, msg.length, client.peerBuffers().get(0), 0)
                            .get(10, TimeUnit.SECONDS);
                    assertEquals("hello over RDMA", target.segment().getString(0));
                    System.out.println("rxe-example: RDMA Write on " + device + " through " + ip + ":23459");
                }
            }
        }
    }
}
