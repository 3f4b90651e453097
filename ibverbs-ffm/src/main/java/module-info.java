/**
 * Thin Foreign Function &amp; Memory bindings to rdma-core's {@code libibverbs.so.1}.
 *
 * <p>{@link io.jverbs.ibverbs} holds the hand-written part every caller may use: errno, errors
 * that name the verb and the errno, and the data-path verbs that verbs.h defines
 * {@code static inline}. {@code io.jverbs.ibverbs.raw} holds the layouts, constants and downcalls
 * generated from the installed {@code infiniband/verbs.h} by {@code scripts/build/gen-bindings}, and
 * {@code io.jverbs.ibverbs.internal} the restricted powers (library loading, downcall handles,
 * reads by absolute address); both are exported only to the jverbs modules built on them, so a
 * module without native access cannot reach native memory through jverbs.
 */
module io.jverbs.ibverbs {
    exports io.jverbs.ibverbs;
    exports io.jverbs.ibverbs.raw to io.jverbs.rdmacm, io.jverbs.highlevel;
    exports io.jverbs.ibverbs.internal to io.jverbs.rdmacm, io.jverbs.highlevel;
}
