/**
 * Thin Foreign Function &amp; Memory bindings to rdma-core's {@code librdmacm.so.1}.
 *
 * <p>{@link io.jverbs.rdmacm} holds library loading and the helpers that rdma_verbs.h defines
 * {@code static inline}; {@code io.jverbs.rdmacm.raw} holds what {@code scripts/gen-bindings}
 * generates from the installed {@code rdma/rdma_cma.h} and {@code rdma/rdma_verbs.h}.
 */
module io.jverbs.rdmacm {
    requires transitive io.jverbs.ibverbs;
    exports io.jverbs.rdmacm;
    exports io.jverbs.rdmacm.raw to io.jverbs.highlevel, io.jverbs.perftest;
}
