/**
 * Thin Foreign Function &amp; Memory bindings to rdma-core's {@code librdmacm.so.1}.
 *
 * <p>{@link io.jverbs.rdmacm} holds the helpers that rdma_verbs.h defines {@code static inline};
 * {@code io.jverbs.rdmacm.raw} holds what {@code scripts/build/gen-bindings} generates from the
 * installed {@code rdma/rdma_cma.h} and {@code rdma/rdma_verbs.h} (exported only to the jverbs
 * modules built on it), and {@code io.jverbs.rdmacm.internal} loads the library (not exported).
 */
module io.jverbs.rdmacm {
    requires transitive io.jverbs.ibverbs;
    exports io.jverbs.rdmacm;
    exports io.jverbs.rdmacm.raw to io.jverbs.highlevel;
}
