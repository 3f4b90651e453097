/**
 * jverbs-micrometer: the RDMA device counters ({@link io.jverbs.counters.RdmaCounters}) and the
 * connection latency of jverbs-highlevel as a Micrometer {@code MeterBinder}
 * ({@link io.jverbs.micrometer.RdmaMeterBinder}), beside jverbs-prometheus' collector for services
 * that export through Micrometer. A service that does not use Micrometer does not need this module.
 */
module io.jverbs.micrometer {
    requires transitive io.jverbs.highlevel;
    requires micrometer.core; // an automatic module: a service that binds the meters requires it itself
    exports io.jverbs.micrometer;
}
