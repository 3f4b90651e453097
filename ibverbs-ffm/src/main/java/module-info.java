/**
 * Thin Foreign Function &amp; Memory bindings to rdma-core's {@code libibverbs.so.1}.
 *
 * <p>{@link io.jverbs.ibverbs} holds the hand-written part every caller may use: library loading,
 * errors that name the verb and the errno, and the data-path verbs that verbs.h defines
 * {@code static inline}. {@code io.jverbs.ibverbs.raw} holds the layouts, constants and downcalls
 * generated from the installed {@code infiniband/verbs.h} by {@code scripts/gen-bindings}; it is
 * exported only to the jverbs modules built on it.
 */
module io.jverbs.ibverbs {
    exports io.jverbs.ibverbs;
    exports io.jverbs.ibverbs.raw to io.jverbs.rdmacm, io.jverbs.highlevel, io.jverbs.perftest;
}
