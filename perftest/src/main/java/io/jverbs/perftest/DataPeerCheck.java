package io.jverbs.perftest;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Arrays;

/**
 * Which rdma_cm connection requests a {@code -R} server connects its data queue pairs to: only
 * those from the IP address of the peer it runs the handshake with. Anyone else who reaches the
 * port between the two syncs would otherwise take a data queue pair (and with it remote access
 * to the test's buffer) in place of the real client. Pure functions of the addresses.
 */
final class DataPeerCheck {
    private DataPeerCheck() {
    }

    /**
     * Whether a data connection request comes from the control peer's host.
     *
     * @param controlPeer the IP address of the handshake's peer (null: unknown, nothing is admitted)
     * @param requester   the request's IP address and rdma_cm port (null when rdma_cm gave an
     *                    address that is neither IPv4 nor IPv6: refused)
     * @return true when both name the same IP address, an IPv4 address and its IPv4-mapped IPv6
     *         form counting as the same; the port does not matter (each queue pair's id has its own)
     */
    static boolean admits(InetAddress controlPeer, InetSocketAddress requester) {
        if (controlPeer == null || requester == null || requester.getAddress() == null) {
            return false;
        }
        return Arrays.equals(plain(controlPeer), plain(requester.getAddress()));
    }

    /**
     * The line a server prints on stderr when it refuses a request.
     *
     * @param what        the queue pair the request was for ("QP 0", "datagram QP 1")
     * @param controlPeer the handshake's peer
     * @param requester   who asked
     * @return one line naming both addresses and what happens next
     */
    static String refusal(String what, InetAddress controlPeer, InetSocketAddress requester) {
        return "refused an rdma_cm request for " + what + " from " + (requester == null ? "an address that is neither IPv4"
                + " nor IPv6" : requester.getAddress().getHostAddress() + " port " + requester.getPort())
                + ": only the handshake's peer " + (controlPeer == null ? "(unknown)" : controlPeer.getHostAddress())
                + " may connect data queue pairs; still waiting for it";
    }

    /** The address's bytes, IPv4 for an IPv4-mapped IPv6 address (::ffff:a.b.c.d). */
    private static byte[] plain(InetAddress a) {
        byte[] b = a.getAddress();
        if (a instanceof Inet6Address && b.length == 16) {
            boolean mapped = (b[10] & 0xff) == 0xff && (b[11] & 0xff) == 0xff;
            for (int i = 0; i < 10 && mapped; i++) {
                mapped = b[i] == 0;
            }
            if (mapped) {
                return Arrays.copyOfRange(b, 12, 16);
            }
        }
        return b;
    }
}
