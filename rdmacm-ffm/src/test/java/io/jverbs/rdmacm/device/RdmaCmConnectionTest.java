package io.jverbs.rdmacm.device;

import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.device.Checks;
import io.jverbs.ibverbs.device.Cleanup;
import io.jverbs.ibverbs.device.Completion;
import io.jverbs.ibverbs.device.Completions;
import io.jverbs.ibverbs.device.DeviceTest;
import io.jverbs.ibverbs.device.Mr;
import io.jverbs.ibverbs.device.QueuePairs;
import io.jverbs.ibverbs.device.Resources;
import io.jverbs.ibverbs.device.TestDevice;
import io.jverbs.ibverbs.device.WorkRequests;
import io.jverbs.ibverbs.raw.ibv_cq;
import io.jverbs.ibverbs.raw.ibv_mr;
import io.jverbs.ibverbs.raw.ibv_pd;
import io.jverbs.ibverbs.raw.ibv_qp;
import io.jverbs.ibverbs.raw.verbs_h;
import io.jverbs.rdmacm.RdmaVerbs;
import io.jverbs.rdmacm.device.CmEvents.CmEvent;
import io.jverbs.rdmacm.raw.rdma_cm_id;
import io.jverbs.rdmacm.raw.rdma_cma_h;
import io.jverbs.rdmacm.raw.rdma_conn_param;
import io.jverbs.rdmacm.raw.rdma_event_channel;
import io.jverbs.rdmacm.raw.sockaddr_in;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * rdma_cm in one process: a listener and a client on the device's IPv4 address
 * ({@code JVERBS_TEST_IP}), each with its own event channel, every wait bounded. Data moves one
 * way through {@code InlineVerbs}, the other way through the {@code rdma_verbs.h} helpers; a
 * second connection uses the {@code rdma_reg_*} helpers and the blocking completion calls on the
 * CQs librdmacm creates for the ids.
 */
@DeviceTest
class RdmaCmConnectionTest {
    private static final short AF_INET = 2;
    private static final byte[] HELLO = "jverbs rdma_cm hello".getBytes(StandardCharsets.US_ASCII);

    @Test
    void connectSendAndDisconnectProduceTheExpectedEvents(TestDevice device, TestReporter reporter) throws Exception {
        byte[] ip = deviceIp(device);
        List<String> events = new ArrayList<>();
        List<String> timings = new ArrayList<>();
        try (Arena arena = Arena.ofShared(); Cleanup cleanup = new Cleanup()) {
            MemorySegment serverChannel = eventChannel(cleanup);
            MemorySegment clientChannel = eventChannel(cleanup);

            MemorySegment listenId = createId(cleanup, serverChannel);
            Checks.ok("rdma_bind_addr", rdma_cma_h.rdma_bind_addr(listenId, sockaddr(arena, ip, 0)));
            Checks.ok("rdma_listen", rdma_cma_h.rdma_listen(listenId, 1));
            int port = ntohs(rdma_cma_h.rdma_get_src_port(listenId));
            assertNotEquals(0, port, "rdma_bind_addr picked a port");

            MemorySegment clientId = createId(cleanup, clientChannel);
            Checks.ok("rdma_resolve_addr", rdma_cma_h.rdma_resolve_addr(clientId, MemorySegment.NULL,
                    sockaddr(arena, ip, port), 10_000));
            record(events, timings, "client", CmEvents.expect(clientChannel, "client", rdma_cma_h.RDMA_CM_EVENT_ADDR_RESOLVED));
            Checks.ok("rdma_resolve_route", rdma_cma_h.rdma_resolve_route(clientId, 10_000));
            record(events, timings, "client", CmEvents.expect(clientChannel, "client", rdma_cma_h.RDMA_CM_EVENT_ROUTE_RESOLVED));

            Endpoint client = Endpoint.create(cleanup, arena, clientId);
            // The client's receive goes through the rdma_verbs.h helper, the server's through InlineVerbs.
            Checks.ok("rdma_post_recv", RdmaVerbs.rdma_post_recv(clientId, 1, client.mr.buffer().asSlice(0, 256), 256,
                    client.mr.mr()));
            MemorySegment param = connParam(arena);
            MemorySegment privateData = arena.allocateFrom(JAVA_BYTE, HELLO);
            rdma_conn_param.private_data(param, privateData);
            rdma_conn_param.private_data_len(param, (byte) HELLO.length);
            Checks.ok("rdma_connect", rdma_cma_h.rdma_connect(clientId, param));

            CmEvent request = CmEvents.expect(serverChannel, "server", rdma_cma_h.RDMA_CM_EVENT_CONNECT_REQUEST);
            record(events, timings, "server", request);
            assertEquals(listenId.address(), request.listenId().address(), "listen_id of the request");
            assertTrue(request.privateData().length >= HELLO.length, "private data length " + request.privateData().length);
            assertArrayEquals(HELLO, Arrays.copyOf(request.privateData(), HELLO.length), "private data of the request");
            MemorySegment connId = request.id().reinterpret(rdma_cm_id.sizeof());
            cleanup.add("rdma_destroy_id", () -> rdma_cma_h.rdma_destroy_id(connId));

            Endpoint server = Endpoint.create(cleanup, arena, connId);
            WorkRequests.postRecv(server.qp, 2, server.mr, 0, 256);
            Checks.ok("rdma_accept", rdma_cma_h.rdma_accept(connId, connParam(arena)));
            // The client first: librdmacm answers the server's reply (moves the QP to RTS, sends the
            // ready-to-use message) only while rdma_get_cm_event hands the client its event.
            CmEvent clientUp = CmEvents.expect(clientChannel, "client", rdma_cma_h.RDMA_CM_EVENT_ESTABLISHED);
            record(events, timings, "client", clientUp);
            assertEquals(clientId.address(), clientUp.id().address(), "ESTABLISHED on the client id");
            CmEvent serverUp = CmEvents.expect(serverChannel, "server", rdma_cma_h.RDMA_CM_EVENT_ESTABLISHED);
            record(events, timings, "server", serverUp);
            assertEquals(connId.address(), serverUp.id().address(), "ESTABLISHED on the accepted id");
            assertEquals(verbs_h.IBV_QPS_RTS, QueuePairs.state(client.qp), "client QP after connect");

            byte[] toServer = message("client to server");
            MemorySegment.copy(toServer, 0, client.mr.buffer(), JAVA_BYTE, 1024, toServer.length);
            WorkRequests.postSend(client.qp, WorkRequests.send(arena, 11, verbs_h.IBV_WR_SEND, client.mr, 1024, toServer.length));
            awaitTransfer(client, server, 11, 2, toServer, "client to server (InlineVerbs)");

            byte[] toClient = message("server to client");
            MemorySegment.copy(toClient, 0, server.mr.buffer(), JAVA_BYTE, 1024, toClient.length);
            Checks.ok("rdma_post_send", RdmaVerbs.rdma_post_send(connId, 12, server.mr.buffer().asSlice(1024, toClient.length),
                    toClient.length, server.mr.mr(), verbs_h.IBV_SEND_SIGNALED));
            awaitTransfer(server, client, 12, 1, toClient, "server to client (rdma_post_send)");

            // The client asks (DREQ); the server learns it, answers with its own rdma_disconnect (DREP),
            // and only that answer completes the client's disconnection.
            Checks.ok("rdma_disconnect", rdma_cma_h.rdma_disconnect(clientId));
            record(events, timings, "server", CmEvents.expect(serverChannel, "server", rdma_cma_h.RDMA_CM_EVENT_DISCONNECTED));
            Checks.ok("rdma_disconnect", rdma_cma_h.rdma_disconnect(connId));
            record(events, timings, "client", CmEvents.expect(clientChannel, "client", rdma_cma_h.RDMA_CM_EVENT_DISCONNECTED));
        } finally {
            reporter.publishEntry("events", String.join(", ", timings));
        }
        assertEquals(List.of("client ADDR_RESOLVED", "client ROUTE_RESOLVED", "server CONNECT_REQUEST", "client ESTABLISHED",
                "server ESTABLISHED", "server DISCONNECTED", "client DISCONNECTED"), events);
    }

    @Test
    void connectingToAPortWithoutListenerIsRejected(TestDevice device, TestReporter reporter) throws Exception {
        byte[] ip = deviceIp(device);
        try (Arena arena = Arena.ofShared(); Cleanup cleanup = new Cleanup()) {
            MemorySegment channel = eventChannel(cleanup);
            MemorySegment id = createId(cleanup, channel);
            int port = ThreadLocalRandom.current().nextInt(20_000, 30_000); // nothing in this process listens
            Checks.ok("rdma_resolve_addr", rdma_cma_h.rdma_resolve_addr(id, MemorySegment.NULL, sockaddr(arena, ip, port), 10_000));
            CmEvents.expect(channel, "client", rdma_cma_h.RDMA_CM_EVENT_ADDR_RESOLVED);
            Checks.ok("rdma_resolve_route", rdma_cma_h.rdma_resolve_route(id, 10_000));
            CmEvents.expect(channel, "client", rdma_cma_h.RDMA_CM_EVENT_ROUTE_RESOLVED);
            Endpoint client = Endpoint.create(cleanup, arena, id);
            assertNotEquals(0, client.qp.address());
            Checks.ok("rdma_connect", rdma_cma_h.rdma_connect(id, connParam(arena)));
            CmEvent event = CmEvents.next(channel, "client");
            reporter.publishEntry("rejection", event.name() + " status " + event.status() + " after " + event.waitedMs() + " ms");
            assertEquals(CmEvents.name(rdma_cma_h.RDMA_CM_EVENT_REJECTED), event.name(), "status " + event.status());
            assertNotEquals(0, event.status(), "a rejection carries its reason");
        }
    }

    @Test
    void regHelpersAndBlockingCompletionsOnCqsTheIdCreated(TestDevice device, TestReporter reporter) throws Exception {
        byte[] ip = deviceIp(device);
        try (Arena arena = Arena.ofShared(); Cleanup cleanup = new Cleanup()) {
            MemorySegment serverChannel = eventChannel(cleanup);
            MemorySegment clientChannel = eventChannel(cleanup);
            MemorySegment listenId = createId(cleanup, serverChannel);
            Checks.ok("rdma_bind_addr", rdma_cma_h.rdma_bind_addr(listenId, sockaddr(arena, ip, 0)));
            Checks.ok("rdma_listen", rdma_cma_h.rdma_listen(listenId, 1));
            int port = ntohs(rdma_cma_h.rdma_get_src_port(listenId));

            MemorySegment clientId = createId(cleanup, clientChannel);
            Checks.ok("rdma_resolve_addr", rdma_cma_h.rdma_resolve_addr(clientId, MemorySegment.NULL,
                    sockaddr(arena, ip, port), 10_000));
            CmEvents.expect(clientChannel, "client", rdma_cma_h.RDMA_CM_EVENT_ADDR_RESOLVED);
            Checks.ok("rdma_resolve_route", rdma_cma_h.rdma_resolve_route(clientId, 10_000));
            CmEvents.expect(clientChannel, "client", rdma_cma_h.RDMA_CM_EVENT_ROUTE_RESOLVED);
            createQpWithItsOwnCqs(cleanup, arena, clientId);
            MemorySegment clientBuf = arena.allocate(4096, 4096);
            MemorySegment clientMr = register(cleanup, clientId, "rdma_reg_msgs",
                    RdmaVerbs.rdma_reg_msgs(clientId, clientBuf, 4096), clientBuf);
            Checks.ok("rdma_connect", rdma_cma_h.rdma_connect(clientId, connParam(arena)));

            MemorySegment connId = CmEvents.expect(serverChannel, "server", rdma_cma_h.RDMA_CM_EVENT_CONNECT_REQUEST).id()
                    .reinterpret(rdma_cm_id.sizeof());
            cleanup.add("rdma_destroy_id", () -> rdma_cma_h.rdma_destroy_id(connId));
            createQpWithItsOwnCqs(cleanup, arena, connId);
            MemorySegment msgsBuf = arena.allocate(4096, 4096);
            MemorySegment writeBuf = arena.allocate(4096, 4096);
            MemorySegment readBuf = arena.allocate(4096, 4096);
            MemorySegment msgsMr = register(cleanup, connId, "rdma_reg_msgs", RdmaVerbs.rdma_reg_msgs(connId, msgsBuf, 4096),
                    msgsBuf);
            MemorySegment writeMr = register(cleanup, connId, "rdma_reg_write", RdmaVerbs.rdma_reg_write(connId, writeBuf, 4096),
                    writeBuf);
            MemorySegment readMr = register(cleanup, connId, "rdma_reg_read", RdmaVerbs.rdma_reg_read(connId, readBuf, 4096),
                    readBuf);
            assertNotEquals(0, ibv_mr.rkey(writeMr), "rkey of rdma_reg_write");
            assertNotEquals(0, ibv_mr.rkey(readMr), "rkey of rdma_reg_read");
            Checks.ok("rdma_post_recv", RdmaVerbs.rdma_post_recv(connId, 31, msgsBuf.asSlice(0, 256), 256, msgsMr));
            Checks.ok("rdma_accept", rdma_cma_h.rdma_accept(connId, connParam(arena)));
            CmEvents.expect(clientChannel, "client", rdma_cma_h.RDMA_CM_EVENT_ESTABLISHED);
            CmEvents.expect(serverChannel, "server", rdma_cma_h.RDMA_CM_EVENT_ESTABLISHED);

            // A receive awaited before anything is sent: rdma_get_recv_comp finds the CQ empty, arms it
            // and sleeps in ibv_get_cq_event until the send arrives.
            byte[] message = message("blocking receive");
            Completion received;
            try (BlockingCompletion recv = BlockingCompletion.start("server receive", connId, false)) {
                recv.awaitSleepingOnChannel();
                MemorySegment.copy(message, 0, clientBuf, JAVA_BYTE, 0, message.length);
                Checks.ok("rdma_post_send", RdmaVerbs.rdma_post_send(clientId, 32, clientBuf.asSlice(0, message.length),
                        message.length, clientMr, verbs_h.IBV_SEND_SIGNALED));
                assertSuccess(BlockingCompletion.await("client send", clientId, true), verbs_h.IBV_WC_SEND, 32, "send");
                received = recv.await();
            }
            assertSuccess(received, verbs_h.IBV_WC_RECV, 31, "receive");
            assertEquals(message.length, received.byteLen(), "byte_len of the receive");
            assertArrayEquals(message, msgsBuf.asSlice(0, message.length).toArray(JAVA_BYTE), "received bytes");
            MemorySegment recvCq = rdma_cm_id.recv_cq(connId).reinterpret(ibv_cq.sizeof());
            assertEquals(1, ibv_cq.comp_events_completed(recvCq), "completion events taken and acknowledged on the receive CQ");

            // RDMA Write into the rdma_reg_write MR.
            byte[] written = message("rdma_post_write");
            MemorySegment.copy(written, 0, clientBuf, JAVA_BYTE, 1024, written.length);
            Checks.ok("rdma_post_write", RdmaVerbs.rdma_post_write(clientId, 33, clientBuf.asSlice(1024, written.length),
                    written.length, clientMr, verbs_h.IBV_SEND_SIGNALED, writeBuf.address() + 100, ibv_mr.rkey(writeMr)));
            assertSuccess(BlockingCompletion.await("RDMA write", clientId, true), verbs_h.IBV_WC_RDMA_WRITE, 33, "write");
            assertArrayEquals(written, writeBuf.asSlice(100, written.length).toArray(JAVA_BYTE), "written bytes");
            assertArrayEquals(new byte[100], writeBuf.asSlice(0, 100).toArray(JAVA_BYTE), "nothing before them");
            assertArrayEquals(new byte[64], writeBuf.asSlice(100 + written.length, 64).toArray(JAVA_BYTE), "nothing after them");

            // RDMA Read from the rdma_reg_read MR.
            byte[] read = message("rdma_post_read");
            MemorySegment.copy(read, 0, readBuf, JAVA_BYTE, 200, read.length);
            Checks.ok("rdma_post_read", RdmaVerbs.rdma_post_read(clientId, 34, clientBuf.asSlice(2048, read.length), read.length,
                    clientMr, verbs_h.IBV_SEND_SIGNALED, readBuf.address() + 200, ibv_mr.rkey(readMr)));
            Completion readWc = BlockingCompletion.await("RDMA read", clientId, true);
            assertSuccess(readWc, verbs_h.IBV_WC_RDMA_READ, 34, "read");
            assertEquals(read.length, readWc.byteLen(), "byte_len of the read");
            assertArrayEquals(read, clientBuf.asSlice(2048, read.length).toArray(JAVA_BYTE), "read bytes");

            // rdma_reg_read grants no remote write: the responder refuses, the requester's QP goes to error.
            Checks.ok("rdma_post_write", RdmaVerbs.rdma_post_write(clientId, 35, clientBuf.asSlice(0, 16), 16, clientMr,
                    verbs_h.IBV_SEND_SIGNALED, readBuf.address(), ibv_mr.rkey(readMr)));
            Completion refused = BlockingCompletion.await("RDMA write into the read-only MR", clientId, true);
            reporter.publishEntry("write into rdma_reg_read memory", refused.toString());
            assertEquals(verbs_h.IBV_WC_REM_ACCESS_ERR, refused.status(),
                    "status of a write into rdma_reg_read memory: " + refused);
            assertEquals(35, refused.wrId(), "wr_id: " + refused);
            assertArrayEquals(new byte[200], readBuf.asSlice(0, 200).toArray(JAVA_BYTE), "the read-only memory is untouched");

            Checks.ok("rdma_disconnect", rdma_cma_h.rdma_disconnect(clientId));
            CmEvents.expect(serverChannel, "server", rdma_cma_h.RDMA_CM_EVENT_DISCONNECTED);
            Checks.ok("rdma_disconnect", rdma_cma_h.rdma_disconnect(connId));
            CmEvents.expect(clientChannel, "client", rdma_cma_h.RDMA_CM_EVENT_DISCONNECTED);
        }
    }

    /**
     * A PD of our own and {@code rdma_create_qp} with NULL CQs: librdmacm then creates a completion
     * channel and a CQ for each direction (cq_context = the id), and sets {@code id->pd} to the QP's
     * PD, which the {@code rdma_reg_*} helpers use. {@code rdma_destroy_qp} destroys those CQs and
     * channels with the QP.
     */
    private static void createQpWithItsOwnCqs(Cleanup cleanup, Arena arena, MemorySegment id) {
        MemorySegment verbs = rdma_cm_id.verbs(id);
        MemorySegment pd = Checks.nonNull("ibv_alloc_pd", verbs_h.ibv_alloc_pd(verbs), ibv_pd.sizeof());
        cleanup.add("ibv_dealloc_pd", () -> verbs_h.ibv_dealloc_pd(pd));
        MemorySegment init = Resources.qpInitAttr(arena, verbs_h.IBV_QPT_RC, MemorySegment.NULL, MemorySegment.NULL, 4);
        Checks.ok("rdma_create_qp", rdma_cma_h.rdma_create_qp(id, pd, init));
        cleanup.addVoid("rdma_destroy_qp", () -> rdma_cma_h.rdma_destroy_qp(id));
        assertEquals(pd.address(), rdma_cm_id.pd(id).address(), "id->pd");
        for (MemorySegment cq : List.of(rdma_cm_id.send_cq(id), rdma_cm_id.recv_cq(id))) {
            assertNotEquals(0, cq.address(), "a CQ librdmacm created");
            assertEquals(id.address(), ibv_cq.cq_context(cq.reinterpret(ibv_cq.sizeof())).address(), "cq_context");
        }
        assertNotEquals(0, rdma_cm_id.send_cq_channel(id).address(), "id->send_cq_channel");
        assertNotEquals(0, rdma_cm_id.recv_cq_channel(id).address(), "id->recv_cq_channel");
        MemorySegment qp = rdma_cm_id.qp(id).reinterpret(ibv_qp.sizeof());
        assertEquals(rdma_cm_id.send_cq(id).address(), ibv_qp.send_cq(qp).address(), "qp->send_cq");
        assertEquals(rdma_cm_id.recv_cq(id).address(), ibv_qp.recv_cq(qp).address(), "qp->recv_cq");
    }

    /** Checks an MR an {@code rdma_reg_*} helper returned and registers its {@code rdma_dereg_mr}. */
    private static MemorySegment register(Cleanup cleanup, MemorySegment id, String verb, MemorySegment mr, MemorySegment buf) {
        MemorySegment m = Checks.nonNull(verb, mr, ibv_mr.sizeof());
        cleanup.add("rdma_dereg_mr", () -> RdmaVerbs.rdma_dereg_mr(m) == 0 ? 0 : Native.lastErrno());
        assertEquals(buf.address(), ibv_mr.addr(m).address(), verb + ": mr->addr");
        assertEquals(buf.byteSize(), ibv_mr.length(m), verb + ": mr->length");
        assertEquals(rdma_cm_id.pd(id).address(), ibv_mr.pd(m).address(), verb + ": mr->pd = id->pd");
        return m;
    }

    private static void assertSuccess(Completion wc, int opcode, long wrId, String what) {
        assertEquals(verbs_h.IBV_WC_SUCCESS, wc.status(), what + ": " + wc);
        assertEquals(opcode, wc.opcode(), what + " opcode: " + wc);
        assertEquals(wrId, wc.wrId(), what + " wr_id: " + wc);
    }

    /** One connected side: a PD, CQ and MR on the id's device context, and the QP rdma_create_qp made. */
    private record Endpoint(MemorySegment cq, MemorySegment qp, Mr mr) {
        static Endpoint create(Cleanup cleanup, Arena arena, MemorySegment id) {
            MemorySegment verbs = rdma_cm_id.verbs(id);
            assertNotEquals(0, verbs.address(), "id->verbs after address resolution");
            MemorySegment pd = Checks.nonNull("ibv_alloc_pd", verbs_h.ibv_alloc_pd(verbs), ibv_pd.sizeof());
            cleanup.add("ibv_dealloc_pd", () -> verbs_h.ibv_dealloc_pd(pd));
            MemorySegment cq = Resources.cq(cleanup, verbs, 16, MemorySegment.NULL);
            Mr mr = Resources.registerMemory(cleanup, arena, pd, 4096, verbs_h.IBV_ACCESS_LOCAL_WRITE);
            MemorySegment init = Resources.qpInitAttr(arena, verbs_h.IBV_QPT_RC, cq, cq, 4);
            Checks.ok("rdma_create_qp", rdma_cma_h.rdma_create_qp(id, pd, init));
            cleanup.addVoid("rdma_destroy_qp", () -> rdma_cma_h.rdma_destroy_qp(id));
            MemorySegment qp = rdma_cm_id.qp(id).reinterpret(ibv_qp.sizeof());
            return new Endpoint(cq, qp, mr);
        }
    }

    private static byte[] message(String what) {
        return (what + ": " + new String(HELLO, StandardCharsets.US_ASCII)).getBytes(StandardCharsets.US_ASCII);
    }

    private static void awaitTransfer(Endpoint from, Endpoint to, long sendWrId, long recvWrId, byte[] data, String what) {
        Completions.awaitSuccess(from.cq, what + " send", verbs_h.IBV_WC_SEND, sendWrId);
        Completion recv = Completions.awaitSuccess(to.cq, what + " receive", verbs_h.IBV_WC_RECV, recvWrId);
        assertEquals(data.length, recv.byteLen(), what + " byte_len");
        assertArrayEquals(data, to.mr.buffer().asSlice(0, data.length).toArray(JAVA_BYTE), what + " bytes");
    }

    /** Appends {@code "side NAME"} to {@code events} and the same with the wait time to {@code timings}. */
    private static void record(List<String> events, List<String> timings, String side, CmEvent event) {
        events.add(side + " " + event.name());
        timings.add(side + " " + event.name() + " " + event.waitedMs() + " ms");
    }

    private static byte[] deviceIp(TestDevice device) throws Exception {
        assumeTrue(device.ip() != null, "JVERBS_TEST_IP is not set (the IPv4 address of " + device.name() + ")");
        InetAddress address = InetAddress.getByName(device.ip());
        assumeTrue(address instanceof Inet4Address, "JVERBS_TEST_IP must be IPv4: " + device.ip());
        return address.getAddress();
    }

    private static MemorySegment eventChannel(Cleanup cleanup) {
        MemorySegment channel = Checks.nonNull("rdma_create_event_channel", rdma_cma_h.rdma_create_event_channel(),
                rdma_event_channel.sizeof());
        cleanup.addVoid("rdma_destroy_event_channel", () -> rdma_cma_h.rdma_destroy_event_channel(channel));
        return channel;
    }

    private static MemorySegment createId(Cleanup cleanup, MemorySegment channel) {
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment out = scratch.allocate(ADDRESS);
            Checks.ok("rdma_create_id", rdma_cma_h.rdma_create_id(channel, out, MemorySegment.NULL, rdma_cma_h.RDMA_PS_TCP));
            MemorySegment id = out.get(ADDRESS, 0).reinterpret(rdma_cm_id.sizeof());
            cleanup.add("rdma_destroy_id", () -> rdma_cma_h.rdma_destroy_id(id));
            return id;
        }
    }

    /** {@code struct sockaddr_in} for {@code ip:port}, both in network byte order. */
    private static MemorySegment sockaddr(Arena arena, byte[] ip, int port) {
        MemorySegment sin = arena.allocate(sockaddr_in.LAYOUT);
        sockaddr_in.sin_family(sin, AF_INET);
        sockaddr_in.sin_port(sin, htons(port));
        MemorySegment.copy(ip, 0, sockaddr_in.sin_addr(sin), JAVA_BYTE, 0, 4);
        return sin;
    }

    /** @return {@code port} in network byte order */
    private static short htons(int port) {
        return ByteOrder.nativeOrder() == ByteOrder.BIG_ENDIAN ? (short) port : Short.reverseBytes((short) port);
    }

    /** @return a 16-bit value in network byte order as the host number it stands for */
    private static int ntohs(short networkOrder) {
        return Short.toUnsignedInt(ByteOrder.nativeOrder() == ByteOrder.BIG_ENDIAN ? networkOrder : Short.reverseBytes(networkOrder));
    }

    private static MemorySegment connParam(Arena arena) {
        MemorySegment param = arena.allocate(rdma_conn_param.LAYOUT);
        rdma_conn_param.responder_resources(param, (byte) 1);
        rdma_conn_param.initiator_depth(param, (byte) 1);
        rdma_conn_param.retry_count(param, (byte) 7);
        rdma_conn_param.rnr_retry_count(param, (byte) 7);
        return param;
    }
}
