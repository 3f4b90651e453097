package io.jverbs;

/**
 * How a queue pair's packets are marked on the way to the peer: the service level, and on a
 * routed path (RoCE always, InfiniBand across subnets) the global route header's traffic class,
 * flow label and hop limit. On RoCE v2 the traffic class becomes the IP header's DSCP and ECN bits
 * (DSCP = traffic class &gt;&gt; 2: traffic class 106 is DSCP 26), which picks the switch queue, the
 * PFC priority and whether ECN marking applies; the flow label is carried in IPv6 headers only.
 * Set with {@link QueuePairConfig#withRoute} (applied when the queue pair connects) or
 * {@link DatagramQueuePair#destination(DatagramQueuePair.Address, Route)} (applied to the address
 * handle). A queue pair connected by rdma_cm ({@code io.jverbs.cm.RdmaCm.connect} and the
 * connections built on it) gets its address vector from rdma_cm instead: there the traffic class
 * is set as the connection's type of service ({@code rdma_set_option} {@code RDMA_OPTION_ID_TOS}),
 * which rdma_cm carries into the route it resolves, and the other fields are rdma_cm's. An
 * immutable value: thread-safe.
 *
 * @param serviceLevel 0..15: the InfiniBand service level (on RoCE the device maps it to a
 *                     priority where it supports that; rxe does not use it)
 * @param trafficClass 0..255: the traffic class of the global route header
 * @param flowLabel    0..0xFFFFF: the flow label of the global route header
 * @param hopLimit     1..255: the hop limit of the global route header
 */
public record Route(int serviceLevel, int trafficClass, int flowLabel, int hopLimit) {
    /** Service level 0, traffic class 0, flow label 0, hop limit 64: what a queue pair uses unless told. */
    public static final Route DEFAULT = new Route(0, 0, 0, 64);

    /**
     * Checks the ranges.
     *
     * @throws IllegalArgumentException when a value is outside its range (the message names it)
     */
    public Route {
        check(serviceLevel >= 0 && serviceLevel <= 15, "serviceLevel 0..15, got " + serviceLevel);
        check(trafficClass >= 0 && trafficClass <= 255, "trafficClass 0..255, got " + trafficClass);
        check(flowLabel >= 0 && flowLabel <= 0xFFFFF, "flowLabel 0..0xFFFFF (20 bits), got " + flowLabel);
        check(hopLimit >= 1 && hopLimit <= 255, "hopLimit 1..255, got " + hopLimit);
    }

    private static void check(boolean ok, String rule) {
        if (!ok) {
            throw new IllegalArgumentException("route: " + rule);
        }
    }

    /**
     * Returns a copy with another traffic class.
     *
     * @param trafficClass 0..255
     * @return the copy
     * @throws IllegalArgumentException when outside that range
     */
    public Route withTrafficClass(int trafficClass) {
        return new Route(serviceLevel, trafficClass, flowLabel, hopLimit);
    }

    /**
     * Returns a copy with another service level.
     *
     * @param serviceLevel 0..15
     * @return the copy
     * @throws IllegalArgumentException when outside that range
     */
    public Route withServiceLevel(int serviceLevel) {
        return new Route(serviceLevel, trafficClass, flowLabel, hopLimit);
    }

    /**
     * Returns a copy with another flow label.
     *
     * @param flowLabel 0..0xFFFFF
     * @return the copy
     * @throws IllegalArgumentException when outside that range
     */
    public Route withFlowLabel(int flowLabel) {
        return new Route(serviceLevel, trafficClass, flowLabel, hopLimit);
    }

    /**
     * Returns a copy with another hop limit.
     *
     * @param hopLimit 1..255
     * @return the copy
     * @throws IllegalArgumentException when outside that range
     */
    public Route withHopLimit(int hopLimit) {
        return new Route(serviceLevel, trafficClass, flowLabel, hopLimit);
    }

    /** Writes this route into an {@code ibv_ah_attr} (its GRH fields only when {@code global}). */
    void writeTo(java.lang.foreign.MemorySegment ahAttr, boolean global) {
        io.jverbs.ibverbs.raw.ibv_ah_attr.sl(ahAttr, (byte) serviceLevel);
        if (global) {
            java.lang.foreign.MemorySegment grh = io.jverbs.ibverbs.raw.ibv_ah_attr.grh(ahAttr);
            io.jverbs.ibverbs.raw.ibv_global_route.traffic_class(grh, (byte) trafficClass);
            io.jverbs.ibverbs.raw.ibv_global_route.flow_label(grh, flowLabel);
            io.jverbs.ibverbs.raw.ibv_global_route.hop_limit(grh, (byte) hopLimit);
        }
    }
}
