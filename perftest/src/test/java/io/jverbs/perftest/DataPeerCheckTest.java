package io.jverbs.perftest;

import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code -R}: the server's decision on a data connection request, from the addresses alone (host only). */
class DataPeerCheckTest {
    private static InetAddress ip(String literal) throws UnknownHostException {
        return InetAddress.getByName(literal); // literals only: no name lookup
    }

    private static InetSocketAddress from(String literal, int port) throws UnknownHostException {
        return new InetSocketAddress(ip(literal), port);
    }

    @Test
    void theControlPeersAddressIsAdmittedFromAnyPort() throws Exception {
        InetAddress control = ip("10.0.2.15");
        assertTrue(DataPeerCheck.admits(control, from("10.0.2.15", 18515)));
        assertTrue(DataPeerCheck.admits(control, from("10.0.2.15", 40001)), "each queue pair's rdma_cm id has its own port");
    }

    @Test
    void anotherAddressIsRefused() throws Exception {
        InetAddress control = ip("10.0.2.15");
        assertFalse(DataPeerCheck.admits(control, from("10.0.2.16", 18515)));
        assertFalse(DataPeerCheck.admits(control, from("127.0.0.1", 18515)));
        assertFalse(DataPeerCheck.admits(control, from("fe80::1", 18515)));
        assertFalse(DataPeerCheck.admits(ip("fe80::1"), from("fe80::2", 18515)));
    }

    @Test
    void anIpv4AddressAndItsMappedIpv6FormAreTheSameHost() throws Exception {
        byte[] mapped = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, 10, 0, 2, 15};
        // built as an Inet6Address on purpose: InetAddress.getByAddress would turn it into IPv4
        InetAddress mapped6 = java.net.Inet6Address.getByAddress(null, mapped, -1);
        assertTrue(DataPeerCheck.admits(ip("10.0.2.15"), new InetSocketAddress(mapped6, 1)));
        assertTrue(DataPeerCheck.admits(mapped6, from("10.0.2.15", 1)));
        assertFalse(DataPeerCheck.admits(mapped6, from("10.0.2.16", 1)));
        assertTrue(DataPeerCheck.admits(ip("fe80::1"), from("fe80::1", 7)), "IPv6 peers work too");
    }

    @Test
    void nothingIsAdmittedWhenAnAddressIsUnknown() throws Exception {
        assertFalse(DataPeerCheck.admits(null, from("10.0.2.15", 1)), "no control peer address");
        assertFalse(DataPeerCheck.admits(ip("10.0.2.15"), null), "a request whose family is neither IPv4 nor IPv6");
        assertFalse(DataPeerCheck.admits(ip("10.0.2.15"), InetSocketAddress.createUnresolved("10.0.2.15", 1)));
    }

    @Test
    void theRefusalNamesBothAddressesAndTheQueuePair() throws Exception {
        assertEquals("refused an rdma_cm request for QP 1 from 10.0.2.16 port 40001: only the handshake's peer 10.0.2.15"
                + " may connect data queue pairs; still waiting for it",
                DataPeerCheck.refusal("QP 1", ip("10.0.2.15"), from("10.0.2.16", 40001)));
        assertTrue(DataPeerCheck.refusal("QP 0", ip("10.0.2.15"), null).contains("neither IPv4 nor IPv6"));
    }
}
