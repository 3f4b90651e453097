/**
 * Not exported: {@link io.jverbs.internal.Fds}, {@code poll(2)} and {@code eventfd(2)} on file
 * descriptors, which the completion-event threads of {@code io.jverbs} and the rdma_cm threads of
 * {@code io.jverbs.cm} share. It names no type of either package, so no arrow between packages
 * points back at {@code io.jverbs}.
 *
 * <p>Thread-safety: static methods without state; each call works on the caller's own memory.
 */
package io.jverbs.internal;
