package io.jverbs.device;

import io.jverbs.Access;
import io.jverbs.Context;
import io.jverbs.IdleStrategy;
import io.jverbs.ProtectionDomain;
import io.jverbs.Rdma;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.cm.Connection;
import io.jverbs.cm.Handshake;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.TestDevice;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link Connection} on a real device: a client that retries until the server listens, the
 * server's region arriving in the handshake and written with no message of its own, a Send right
 * after the connect (no receiver-not-ready retry allowed) landing in the server's ring, the rights
 * of the advertised region refusing a Read, and close disconnecting the peer.
 */
@DeviceTest
class ConnectionTest {
    private static final Duration T = Duration.ofSeconds(30);

    @Test
    void serverRegionArrivesInTheHandshakeAndTheFirstSendFindsTheRing(TestDevice device) throws Exception {
        assertNotNull(device.ip(), "the rig sets JVERBS_TEST_IP");
        int port = 20000 + (int) (ProcessHandle.current().pid() % 20000);
        try (Context serverCtx = Rdma.open(device.name()); Context clientCtx = Rdma.open(device.name())) {
            ProtectionDomain spd = serverCtx.allocateProtectionDomain();
            RegisteredBuffer region = spd.allocate(64 * 1024);
            RegisteredBuffer ring = spd.allocate(8 * 256);
            CountDownLatch received = new CountDownLatch(1);
            int[] receivedBytes = {-1};
            Connection.Options serverOptions = Connection.Options.defaults()
                    .offer(Handshake.of("kv".getBytes(StandardCharsets.UTF_8)))
                    .grant(region, Access.REMOTE_WRITE)
                    .receiveRing(ring, 256)
                    .polling(IdleStrategy.busySpin(), c -> {
                        if (c.isReceive() && c.isSuccess()) {
                            receivedBytes[0] = c.byteLength();
                            received.countDown();
                        }
                    });
            ProtectionDomain cpd = clientCtx.allocateProtectionDomain();
            RegisteredBuffer local = cpd.allocate(4096);
            // the client starts first: refused until the server listens, retried
            CompletableFuture<Connection> clientSide = CompletableFuture.supplyAsync(() -> Connection.connect(cpd,
                    device.ip(), port, Connection.Options.defaults().retry(100, Duration.ofMillis(100))
                            .configure(c -> (device.gidIndexEnv() >= 0 ? c.withGidIndex(device.gidIndexEnv()) : c)
                                    .withRnrRetry(0, 12))));
            Thread.sleep(1000);
            try (Connection.Server server = Connection.listen(spd, device.ip(), port, serverOptions);
                 Connection accepted = server.accept(T);
                 Connection client = clientSide.get(T.toSeconds(), TimeUnit.SECONDS)) {
                assertEquals(1, client.peerBuffers().size(), "the server's region came with the connection");
                RemoteBuffer peer = client.peerBuffers().get(0);
                assertEquals(region.address(), peer.address(), "the window covers the granted buffer");
                assertEquals(region.length(), peer.length());
                assertNotEquals(region.rkey(), peer.rkey(), "a window's rkey, not the buffer's own");
                assertEquals(EnumSet.of(Access.REMOTE_WRITE), peer.rights());
                assertEquals("kv", new String(client.peerData(), StandardCharsets.UTF_8));

                byte[] payload = ("written through the handshake's buffer on " + device.name())
                        .getBytes(StandardCharsets.UTF_8);
                local.segment().copyFrom(MemorySegment.ofArray(payload));
                client.queuePair().async().send(local, 0, 16).get(T.toSeconds(), TimeUnit.SECONDS); // RNR retry 0
                assertTrue(received.await(T.toSeconds(), TimeUnit.SECONDS), "the ring's receive got the first Send");
                assertEquals(16, receivedBytes[0]);
                client.queuePair().async().write(local, 0, payload.length, peer, 512).get(T.toSeconds(), TimeUnit.SECONDS);
                assertArrayEquals(payload, region.segment().asSlice(512, payload.length).toArray(ValueLayout.JAVA_BYTE));
                IllegalArgumentException read = assertThrows(IllegalArgumentException.class,
                        () -> client.queuePair().async().read(local, 0, 8, peer, 0));
                assertTrue(read.getMessage().contains("refused"), read.getMessage());

                client.close();
                assertTrue(accepted.awaitDisconnect(T), "the server sees the client's close");
                System.out.println("connection: region " + peer + " from the handshake written, first Send in the ring,"
                        + " Read refused by the rights, on " + device.name());
            }
        }
    }
}
