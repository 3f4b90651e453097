package io.jverbs.counters;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * RDMA netlink (NETLINK_RDMA, client RDMA_NL_NLDEV) messages, built and parsed in Java: no I/O
 * here, so it is tested on the host with byte strings. Constants are the values of
 * {@code <rdma/rdma_netlink.h>} and {@code <linux/netlink.h>} (checked against gcc by a test).
 */
final class Netlink {
    static final int NETLINK_RDMA = 20;
    static final int RDMA_NL_NLDEV = 5;
    static final int CMD_GET = 1;
    static final int CMD_RES_QP_GET = 10;
    static final int CMD_RES_CQ_GET = 12;
    static final int CMD_RES_MR_GET = 13;
    static final int CMD_RES_PD_GET = 14;
    static final int CMD_STAT_GET = 17;
    static final int ATTR_DEV_INDEX = 1;
    static final int ATTR_DEV_NAME = 2;
    static final int ATTR_PORT_INDEX = 3;
    static final int ATTR_RES_QP = 19;
    static final int ATTR_RES_LQPN = 21;
    static final int ATTR_RES_PID = 28;
    static final int ATTR_STAT_RES = 75;
    static final int ATTR_STAT_COUNTER_ID = 79;
    static final int ATTR_STAT_HWCOUNTERS = 80;
    static final int ATTR_STAT_HWCOUNTER_ENTRY = 81;
    static final int ATTR_STAT_HWCOUNTER_ENTRY_NAME = 82;
    static final int ATTR_STAT_HWCOUNTER_ENTRY_VALUE = 83;
    static final int NLM_F_REQUEST = 1;
    static final int NLM_F_DUMP = 0x300;
    static final int NLMSG_ERROR = 2;
    static final int NLMSG_DONE = 3;
    static final int HEADER = 16;
    private static final int TYPE_MASK = 0x3fff; // without NLA_F_NESTED, NLA_F_NET_BYTEORDER

    private Netlink() {
    }

    static int type(int op) {
        return (RDMA_NL_NLDEV << 10) + op;
    }

    /** A request: the header, then u32 attributes (pairs of type, value). */
    static byte[] request(int op, boolean dump, int seq, int... u32Attributes) {
        int length = HEADER + u32Attributes.length / 2 * 8;
        ByteBuffer b = ByteBuffer.allocate(length).order(ByteOrder.nativeOrder());
        b.putInt(length).putShort((short) type(op)).putShort((short) (NLM_F_REQUEST | (dump ? NLM_F_DUMP : 0)))
                .putInt(seq).putInt(0);
        for (int i = 0; i < u32Attributes.length; i += 2) {
            b.putShort((short) 8).putShort((short) u32Attributes[i]).putInt(u32Attributes[i + 1]);
        }
        return b.array();
    }

    /** One attribute: its type (flags removed) and its payload (a view of the message). */
    record Attr(int type, ByteBuffer payload) {
        long u64() {
            return payload.getLong(0);
        }

        int u32() {
            return payload.getInt(0);
        }

        String string() {
            byte[] bytes = new byte[payload.remaining()];
            payload.duplicate().get(bytes);
            int end = 0;
            while (end < bytes.length && bytes[end] != 0) {
                end++;
            }
            return new String(bytes, 0, end, StandardCharsets.UTF_8);
        }

        List<Attr> nested() {
            return attributes(payload);
        }
    }

    /** One message: its type, flags and attributes (or, for NLMSG_ERROR, the error). */
    record Message(int type, int flags, int seq, ByteBuffer body) {
        List<Attr> attributes() {
            return Netlink.attributes(body);
        }

        /** NLMSG_ERROR's code: 0 for an acknowledgement, else a negative errno. */
        int error() {
            return body.getInt(0);
        }

        Attr find(int attrType) {
            for (Attr a : attributes()) {
                if (a.type() == attrType) {
                    return a;
                }
            }
            return null;
        }
    }

    /** Splits what one recv returned into messages; a truncated or malformed header ends the walk with an exception. */
    static List<Message> messages(ByteBuffer data) {
        ByteBuffer d = data.duplicate().order(ByteOrder.nativeOrder());
        List<Message> out = new ArrayList<>();
        while (d.remaining() >= HEADER) {
            int start = d.position();
            int length = d.getInt(start);
            if (length < HEADER || length > d.remaining()) {
                throw new IllegalArgumentException("malformed netlink message: length " + length + " with "
                        + d.remaining() + " bytes left");
            }
            int type = d.getShort(start + 4) & 0xffff;
            int flags = d.getShort(start + 6) & 0xffff;
            int seq = d.getInt(start + 8);
            ByteBuffer body = d.slice(start + HEADER, length - HEADER).order(ByteOrder.nativeOrder());
            out.add(new Message(type, flags, seq, body));
            d.position(Math.min(d.limit(), start + align(length)));
        }
        return out;
    }

    static List<Attr> attributes(ByteBuffer region) {
        ByteBuffer r = region.duplicate().order(ByteOrder.nativeOrder());
        List<Attr> out = new ArrayList<>();
        int pos = r.position();
        while (r.limit() - pos >= 4) {
            int length = r.getShort(pos) & 0xffff;
            int type = r.getShort(pos + 2) & TYPE_MASK;
            if (length < 4 || length > r.limit() - pos) {
                throw new IllegalArgumentException("malformed netlink attribute: length " + length);
            }
            out.add(new Attr(type, r.slice(pos + 4, length - 4).order(ByteOrder.nativeOrder())));
            pos += align(length);
        }
        return out;
    }

    static int align(int n) {
        return (n + 3) & ~3;
    }

    /** The hardware counters nested in a STAT_GET answer: (name, value) in the kernel's order. */
    static List<Counter> hwCounters(Attr hwcounters) {
        List<Counter> out = new ArrayList<>();
        for (Attr entry : hwcounters.nested()) {
            if (entry.type() != ATTR_STAT_HWCOUNTER_ENTRY) {
                continue;
            }
            String name = null;
            Long value = null;
            for (Attr a : entry.nested()) {
                if (a.type() == ATTR_STAT_HWCOUNTER_ENTRY_NAME) {
                    name = a.string();
                } else if (a.type() == ATTR_STAT_HWCOUNTER_ENTRY_VALUE) {
                    value = a.u64();
                }
            }
            if (name != null && value != null) {
                out.add(new Counter(name, CounterGroup.HW_COUNTERS, value, CounterUnit.EVENTS));
            }
        }
        return out;
    }

    /** Every value of attribute {@code type} anywhere in the nesting below {@code attrs} (u32). */
    static void collectU32(List<Attr> attrs, int type, List<Integer> into, int depth) {
        for (Attr a : attrs) {
            if (a.type() == type && a.payload().remaining() == 4) {
                into.add(a.u32());
            } else if (depth < 4 && a.payload().remaining() >= 4 && looksNested(a)) {
                collectU32(a.nested(), type, into, depth + 1);
            }
        }
    }

    /** Whether a payload parses as a run of attributes that fills it exactly. */
    static boolean looksNested(Attr a) {
        ByteBuffer p = a.payload();
        int pos = p.position();
        while (p.limit() - pos >= 4) {
            int length = p.getShort(pos) & 0xffff;
            if (length < 4 || length > p.limit() - pos) {
                return false;
            }
            pos += align(length);
        }
        return pos >= p.limit();
    }
}
