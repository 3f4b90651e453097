package io.jverbs.counters;

/**
 * Where a port counter comes from: the port's {@code counters/} directory (the InfiniBand
 * Performance Management Agent's standard set, present only on devices with a PMA — not on rxe)
 * or its {@code hw_counters/} directory (driver-specific names, e.g. rxe's {@code sent_pkts} or
 * mlx5's {@code np_cnp_sent}; the netlink {@code RDMA_NLDEV_CMD_STAT_GET} read returns the same set).
 */
public enum CounterGroup {
    /** {@code /sys/class/infiniband/DEV/ports/N/counters/}: standard PMA counters. */
    PORT_COUNTERS("counters"),
    /** {@code /sys/class/infiniband/DEV/ports/N/hw_counters/}: the driver's own counters. */
    HW_COUNTERS("hw_counters");

    private final String directory;

    CounterGroup(String directory) {
        this.directory = directory;
    }

    /**
     * The sysfs directory name of this group under a port.
     *
     * @return {@code counters} or {@code hw_counters}
     */
    public String directory() {
        return directory;
    }
}
