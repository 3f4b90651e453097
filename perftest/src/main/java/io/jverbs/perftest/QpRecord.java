package io.jverbs.perftest;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * One queue pair's line of the C perftest handshake: {@code lid:out_reads:qpn:psn:rkey:vaddr:}
 * in fixed-width hex, then either 16 GID bytes and the SRQ number (108 bytes with the NUL) or,
 * without a GID, the SRQ number alone (59 bytes).
 *
 * @param lid      the LID (0 on RoCE)
 * @param outReads outstanding RDMA Reads/atomics the sender accepts (1 for write and send)
 * @param qpn      queue pair number
 * @param psn      first packet sequence number
 * @param rkey     the key of the sender's buffer
 * @param vaddr    where the peer may write, read or run atomics
 * @param gid      the 16 GID bytes, or {@code null} in the form without GID
 * @param srqn     0 (no XRC/DC)
 */
record QpRecord(int lid, int outReads, int qpn, int psn, int rkey, long vaddr, byte[] gid, int srqn) {
    static final int WITH_GID = 108;
    static final int WITHOUT_GID = 59;

    int length() {
        return gid == null ? WITHOUT_GID : WITH_GID;
    }

    byte[] encode() {
        StringBuilder s = new StringBuilder(WITH_GID);
        s.append(hex(lid, 4)).append(':').append(hex(outReads, 4)).append(':').append(hex(qpn, 6)).append(':')
                .append(hex(psn, 6)).append(':').append(hex(rkey, 8)).append(':')
                .append(String.format("%016x", vaddr));
        if (gid == null) {
            s.append(':').append(hex(srqn, 8));
        } else {
            s.append(':');
            for (byte b : gid) {
                s.append(String.format("%02x", b & 0xff)).append(':');
            }
            s.append(hex(srqn, 8)).append(':');
        }
        byte[] text = s.toString().getBytes(StandardCharsets.US_ASCII);
        return Arrays.copyOf(text, text.length + 1);
    }

    private static String hex(int value, int width) {
        String h = Integer.toHexString(value);
        if (h.length() > width) {
            h = h.substring(h.length() - width);
        }
        return "0".repeat(width - h.length()) + h;
    }

    /**
     * Parses a record of the form this side expects.
     *
     * @throws PerftestException naming what is wrong: the other form (a GID where none was
     *                           expected, or the reverse) or bytes that are not a record at all
     */
    static QpRecord decode(byte[] bytes, boolean withGid) {
        int expected = withGid ? WITH_GID : WITHOUT_GID;
        if (bytes.length != expected) {
            throw new PerftestException("QP record of " + bytes.length + " bytes, expected " + expected);
        }
        String text = new String(bytes, 0, bytes.length - 1, StandardCharsets.ISO_8859_1);
        if (!withGid && text.length() > 52 && text.charAt(52) == ':' && text.charAt(49) == ':') {
            throw new PerftestException("GID mismatch: the peer sends its QP record with a GID (108 bytes) but this side"
                    + " uses no GID (59 bytes): give both sides the same -x <gid index>");
        }
        if (bytes[bytes.length - 1] != 0) {
            throw new PerftestException("Couldn't parse line <" + printable(bytes) + ">: the QP record does not end in NUL");
        }
        String[] f = text.split(":", -1);
        try {
            int lid = field(f, 0, 4);
            int out = field(f, 1, 4);
            int qpn = field(f, 2, 6);
            int psn = field(f, 3, 6);
            int rkey = field(f, 4, 8);
            if (f[5].length() != 16) {
                throw new NumberFormatException("vaddr");
            }
            long vaddr = Long.parseUnsignedLong(f[5], 16);
            if (!withGid) {
                if (f.length != 7) {
                    throw new NumberFormatException("fields");
                }
                return new QpRecord(lid, out, qpn, psn, rkey, vaddr, null, field(f, 6, 8));
            }
            if (f.length != 24 || !f[23].isEmpty()) {
                throw new NumberFormatException("fields");
            }
            byte[] gid = new byte[16];
            for (int i = 0; i < 16; i++) {
                gid[i] = (byte) field(f, 6 + i, 2);
            }
            return new QpRecord(lid, out, qpn, psn, rkey, vaddr, gid, field(f, 22, 8));
        } catch (NumberFormatException | ArrayIndexOutOfBoundsException e) {
            throw new PerftestException("Couldn't parse line <" + printable(bytes) + ">: not a perftest QP record");
        }
    }

    /** The binary record of {@code -R} mode in perftest 4.5 ({@code struct pingpong_dest}, 56 bytes). */
    static final int BINARY = 56;
    /** The binary record of perftest 6.29 and later (a tail-markers address added: 64 bytes). */
    static final int BINARY_629 = 64;

    /**
     * The binary form C sends over the rdma_cm control queue pair (PERFTEST-WIRE.md §2): lid,
     * out_reads, qpn, psn, rkey as big-endian 32-bit at 0/4/8/12/16, 4 bytes of padding, vaddr
     * big-endian 64-bit at 24, the raw GID at 32, srqn at 48 and gid_index at 52.
     */
    byte[] encodeBinary(int gidIndex) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(BINARY);
        b.putInt(0, lid).putInt(4, outReads).putInt(8, qpn).putInt(12, psn).putInt(16, rkey).putLong(24, vaddr);
        if (gid != null) {
            b.put(32, gid);
        }
        b.putInt(48, srqn).putInt(52, gidIndex);
        return b.array();
    }

    /**
     * Parses the binary form: 56 bytes (4.5) or 64 bytes (6.29 and later).
     *
     * @throws PerftestException for any other length
     */
    static QpRecord decodeBinary(byte[] bytes) {
        if (bytes.length != BINARY && bytes.length != BINARY_629) {
            throw new PerftestException("the peer's QP record over rdma_cm has " + bytes.length + " bytes; perftest sends "
                    + BINARY + " (4.5) or " + BINARY_629 + " (6.29 and later)");
        }
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(bytes);
        int gidAt = bytes.length == BINARY ? 32 : 40;
        byte[] gid = Arrays.copyOfRange(bytes, gidAt, gidAt + 16);
        return new QpRecord(b.getInt(0), b.getInt(4), b.getInt(8), b.getInt(12), b.getInt(16), b.getLong(24), gid,
                b.getInt(gidAt + 16));
    }

    private static int field(String[] f, int i, int width) {
        if (f[i].length() != width || !f[i].chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
            throw new NumberFormatException(f[i]);
        }
        return (int) Long.parseLong(f[i], 16);
    }

    static String printable(byte[] bytes) {
        StringBuilder s = new StringBuilder();
        for (byte b : bytes) {
            int c = b & 0xff;
            if (c >= 0x20 && c < 0x7f) {
                s.append((char) c);
            } else {
                s.append("\\x").append(HexFormat.of().toHexDigits((byte) c));
            }
        }
        return s.toString();
    }

    boolean ipv4Mapped() {
        if (gid == null) {
            return false;
        }
        for (int i = 0; i < 10; i++) {
            if (gid[i] != 0) {
                return false;
            }
        }
        return gid[10] == (byte) 0xff && gid[11] == (byte) 0xff;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof QpRecord r && r.lid == lid && r.outReads == outReads && r.qpn == qpn && r.psn == psn
                && r.rkey == rkey && r.vaddr == vaddr && Arrays.equals(r.gid, gid) && r.srqn == srqn;
    }

    @Override
    public int hashCode() {
        return qpn * 31 + psn;
    }

    @Override
    public String toString() {
        return new String(encode(), 0, length() - 1, StandardCharsets.US_ASCII);
    }
}
