package io.jverbs;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * What a peer needs to connect its queue pair to this one: the queue pair number, the first
 * packet sequence number, the LID (InfiniBand; 0 on RoCE), the GID, the MTU and the transport.
 * Exchange it out of band ({@link EndpointExchange}) or through any channel with
 * {@link #toBytes()} / {@link #fromBytes(byte[])}. An immutable value, safe to share between
 * threads.
 *
 * <p>Both ends of a connection must use the same transport: a UC queue pair connected to an RC
 * one accepts every post and completes it, while the RC side drops every packet. So
 * {@link QueuePair#connect(Endpoint)} refuses an endpoint whose transport differs from its own.
 * An endpoint built from a peer that does not say its transport (C perftest's handshake, say)
 * has a {@code null} transport and is not checked.
 *
 * @param qpn       the queue pair number (24 bits)
 * @param psn       the first packet sequence number (24 bits)
 * @param lid       the LID, 0 on RoCE
 * @param gid       the 16-byte GID (a copy is kept)
 * @param mtu       the active MTU as {@code IBV_MTU_*} (1 = 256 … 5 = 4096)
 * @param transport the transport of the queue pair, or {@code null} when the peer did not say
 */
public record Endpoint(int qpn, int psn, int lid, byte[] gid, int mtu, QueuePairConfig.Transport transport) {
    /** Bytes of {@link #toBytes()}. */
    public static final int BYTES = 4 + 2 + 4 + 4 + 2 + 1 + 1 + 16;
    private static final int MAGIC = 0x4a564550; // "JVEP"
    private static final short VERSION = 2;

    /**
     * Validates and copies.
     *
     * @throws IllegalArgumentException when a field is out of range
     */
    public Endpoint {
        if ((qpn & ~0xffffff) != 0 || (psn & ~0xffffff) != 0 || (lid & ~0xffff) != 0 || gid.length != 16 || mtu < 1
                || mtu > 5) {
            throw new IllegalArgumentException("invalid endpoint: qpn " + qpn + ", psn " + psn + ", lid " + lid
                    + ", gid of " + gid.length + " bytes, mtu " + mtu);
        }
        gid = gid.clone();
    }

    /**
     * An endpoint whose transport is not stated, for a peer that does not tell it (C perftest's
     * handshake); {@link QueuePair#connect(Endpoint)} then cannot check that both sides match.
     *
     * @param qpn the queue pair number (24 bits)
     * @param psn the first packet sequence number (24 bits)
     * @param lid the LID, 0 on RoCE
     * @param gid the 16-byte GID (a copy is kept)
     * @param mtu the active MTU as {@code IBV_MTU_*} (1 = 256 … 5 = 4096)
     * @throws IllegalArgumentException when a field is out of range
     */
    public Endpoint(int qpn, int psn, int lid, byte[] gid, int mtu) {
        this(qpn, psn, lid, gid, mtu, null);
    }

    /**
     * Returns the GID.
     *
     * @return a copy of the 16 bytes
     */
    @Override
    public byte[] gid() {
        return gid.clone();
    }

    /**
     * Serializes: magic, version, qpn, psn, lid, mtu, transport (0 not stated, 1 RC, 2 UC), gid;
     * big-endian.
     *
     * @return {@value #BYTES} bytes
     */
    public byte[] toBytes() {
        return ByteBuffer.allocate(BYTES).order(ByteOrder.BIG_ENDIAN).putInt(MAGIC).putShort(VERSION).putInt(qpn)
                .putInt(psn).putShort((short) lid).put((byte) mtu).put(transportCode(transport)).put(gid).array();
    }

    private static byte transportCode(QueuePairConfig.Transport transport) {
        if (transport == null) {
            return 0;
        }
        return switch (transport) {
            case RC -> 1;
            case UC -> 2;
        };
    }

    /**
     * Reads what {@link #toBytes()} wrote, checking everything.
     *
     * @param bytes exactly {@value #BYTES} bytes
     * @return the endpoint
     * @throws IllegalArgumentException when the bytes are not an endpoint of this version
     */
    public static Endpoint fromBytes(byte[] bytes) {
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException("an endpoint is " + BYTES + " bytes, got " + bytes.length);
        }
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.BIG_ENDIAN);
        if (b.getInt() != MAGIC) {
            throw new IllegalArgumentException("not a jverbs endpoint (bad magic): is the peer a jverbs program?");
        }
        short version = b.getShort();
        if (version != VERSION) {
            throw new IllegalArgumentException("endpoint version " + version + " from the peer, this side speaks "
                    + VERSION + ": run the same jverbs release on both sides");
        }
        int qpn = b.getInt();
        int psn = b.getInt();
        int lid = b.getShort() & 0xffff;
        int mtu = b.get();
        int code = b.get();
        QueuePairConfig.Transport transport = switch (code) {
            case 0 -> null;
            case 1 -> QueuePairConfig.Transport.RC;
            case 2 -> QueuePairConfig.Transport.UC;
            default -> throw new IllegalArgumentException("endpoint with transport code " + code
                    + ": 0 (not stated), 1 (RC) or 2 (UC) expected");
        };
        byte[] gid = new byte[16];
        b.get(gid);
        return new Endpoint(qpn, psn, lid, gid, mtu, transport);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Endpoint e && e.qpn == qpn && e.psn == psn && e.lid == lid && e.mtu == mtu
                && e.transport == transport && Arrays.equals(e.gid, gid);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * qpn + psn) + Arrays.hashCode(gid);
    }

    @Override
    public String toString() {
        return "endpoint qpn 0x" + Integer.toHexString(qpn) + " psn 0x" + Integer.toHexString(psn) + " lid " + lid
                + " gid " + HexFormat.of().formatHex(gid) + " mtu " + (128 << mtu)
                + (transport == null ? "" : " " + transport);
    }
}
