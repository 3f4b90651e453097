/**
 * The module's shared internals; the module does not export this package, so no code outside
 * {@code io.jverbs.highlevel} can use it.
 *
 * <p>Two kinds of types live here. Helpers of the data path that the core, rdma_cm and datagram
 * packages share: {@link io.jverbs.internal.WorkRequests} (writing {@code ibv_send_wr} and
 * {@code ibv_recv_wr} in place and calling the provider's post), {@link io.jverbs.internal.SendQueue}
 * (send-queue accounting), {@link io.jverbs.internal.PostLock} (the posting lock) and
 * {@link io.jverbs.internal.Fds} ({@code poll(2)} on a descriptor). And the bridges through which a
 * package publishes operations its siblings need without making them public API:
 * {@link io.jverbs.internal.Secrets} holds one accessor per package
 * ({@link io.jverbs.internal.CoreAccess}, {@link io.jverbs.internal.DatagramAccess}), which a caller
 * reads once into a {@code static final} field, so that a call through it costs no allocation and,
 * once inlined, no more than a direct call.
 *
 * <p>Thread-safety: as each type says; {@link io.jverbs.internal.SendQueue} and
 * {@link io.jverbs.internal.PostLock} are built for one poster and one poller at a time.
 */
package io.jverbs.internal;
