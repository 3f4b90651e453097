/**
 * jverbs-prometheus: the RDMA device counters ({@link io.jverbs.counters.RdmaCounters}) and the
 * connection latency of jverbs-highlevel as a collector of the official Prometheus Java client
 * ({@link io.jverbs.prometheus.RdmaMetrics}). The Grafana dashboard over these series is
 * {@code grafana/jverbs-rdma-dashboard.json} in this module's directory. A service that does not
 * use Prometheus does not need this module.
 */
module io.jverbs.prometheus {
    requires transitive io.jverbs.highlevel;
    requires io.prometheus.metrics.model; // an automatic module: a service that registers the collector requires it itself
    exports io.jverbs.prometheus;
}
