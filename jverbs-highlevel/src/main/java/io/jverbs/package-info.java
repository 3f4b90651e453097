/**
 * The core objects a service uses to do RDMA: start at {@link io.jverbs.Rdma}, open a
 * {@link io.jverbs.Context} (a device), make a {@link io.jverbs.ProtectionDomain}, register
 * {@link io.jverbs.RegisteredBuffer}s, make {@link io.jverbs.CompletionQueue}s and
 * {@link io.jverbs.QueuePair}s, connect them ({@link io.jverbs.Endpoint},
 * {@link io.jverbs.EndpointExchange}) and post Write, Read, Send and atomics; completions come
 * back through a {@link io.jverbs.CompletionHandler}, a {@link io.jverbs.Poller} or futures.
 * Unreliable datagrams: {@link io.jverbs.DatagramQueuePair} sends single messages up to the MTU
 * to any peer whose address it knows, without a connection; {@link io.jverbs.DatagramBatch}
 * posts a burst of them with one doorbell.
 *
 * <p>Connections through rdma_cm are in {@link io.jverbs.cm}, hardware counters in
 * {@link io.jverbs.counters} and latency tracking in {@link io.jverbs.latency}. None of those
 * packages is named here: every arrow between the packages points away from this one
 * ({@code scripts/build/check-packages} fails on a cycle).
 *
 * <p>Thread-safety: each type says; {@link io.jverbs.Resource} describes the rules every native
 * object follows (closing, confinement to a thread).
 */
package io.jverbs;
