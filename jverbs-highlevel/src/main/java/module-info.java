/**
 * jverbs-highlevel: what a Java service uses to do RDMA Write, Read, Send and atomics — devices,
 * registered {@code MemorySegment} buffers, queue pairs, connections and asynchronous
 * completions — over rdma-core's libibverbs, without C's foot-guns.
 *
 * <p>Start at {@link io.jverbs.Rdma}. Run with
 * {@code --enable-native-access=io.jverbs.ibverbs,io.jverbs.rdmacm,io.jverbs.highlevel} on the
 * module path ({@code ALL-UNNAMED} on the class path).
 */
module io.jverbs.highlevel {
    requires transitive io.jverbs.ibverbs;
    requires io.jverbs.rdmacm;
    // HdrHistogram is reached without a requires clause (io.jverbs.latency.HdrLatencyRecorder says why).
    exports io.jverbs;
    exports io.jverbs.cm;
    exports io.jverbs.counters;
    exports io.jverbs.latency;
    // io.jverbs.internal is not exported: the poll(2) helper the packages above share.
}
