package io.jverbs.counters;

/** How the {@code hw_counters} of a {@link CounterSnapshot} were read. */
public enum CounterSource {
    /**
     * sysfs files. The kernel caches {@code hw_counters} reads for the port's {@code lifespan}
     * (10 ms by default): a value may be that old ({@link CounterSnapshot#maxStaleness()}).
     */
    SYSFS,
    /** The netlink {@code RDMA_NLDEV_CMD_STAT_GET} read: unprivileged and uncached. */
    NETLINK
}
