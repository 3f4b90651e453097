package io.jverbs;

import io.jverbs.ibverbs.raw.verbs_h;

import java.util.Set;

/**
 * What a registered buffer lets the device do. Local write is always granted (the device needs
 * it to land receives, reads and atomic results); remote rights only when asked for.
 */
public enum Access {
    /** A peer may RDMA Write into the buffer. */
    REMOTE_WRITE(verbs_h.IBV_ACCESS_REMOTE_WRITE),
    /** A peer may RDMA Read from the buffer. */
    REMOTE_READ(verbs_h.IBV_ACCESS_REMOTE_READ),
    /** A peer may run compare-and-swap and fetch-and-add on the buffer. */
    REMOTE_ATOMIC(verbs_h.IBV_ACCESS_REMOTE_ATOMIC);

    private final int flag;

    Access(int flag) {
        this.flag = flag;
    }

    static int flags(Set<Access> access) {
        return flags(access, true);
    }

    /** The remote rights among verbs access {@code flags}. */
    static Set<Access> of(int flags) {
        Set<Access> rights = java.util.EnumSet.noneOf(Access.class);
        for (Access a : values()) {
            if ((flags & a.flag) != 0) {
                rights.add(a);
            }
        }
        return rights;
    }

    /** The verbs access flags: the remote rights, plus local write unless the memory is read-only. */
    static int flags(Set<Access> access, boolean localWrite) {
        int flags = localWrite ? verbs_h.IBV_ACCESS_LOCAL_WRITE : 0;
        for (Access a : access) {
            flags |= a.flag;
        }
        return flags;
    }
}
