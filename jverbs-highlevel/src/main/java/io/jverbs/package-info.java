/**
 * The core objects a service uses to do RDMA: start at {@link io.jverbs.Rdma}, open a
 * {@link io.jverbs.Context} (a device), make a {@link io.jverbs.ProtectionDomain}, register
 * {@link io.jverbs.RegisteredBuffer}s, make {@link io.jverbs.CompletionQueue}s and
 * {@link io.jverbs.QueuePair}s, connect them ({@link io.jverbs.Endpoint},
 * {@link io.jverbs.EndpointExchange}) and post Write, Read, Send and atomics; completions come
 * back through a {@link io.jverbs.CompletionHandler}, a {@link io.jverbs.Poller} or futures.
 *
 * <p>Connections through rdma_cm are in {@link io.jverbs.cm}, unreliable datagrams in
 * {@link io.jverbs.datagram}, hardware counters in {@link io.jverbs.counters} and latency
 * tracking in {@link io.jverbs.latency}.
 *
 * <p>Thread-safety: each type says; {@link io.jverbs.Resource} describes the rules every native
 * object follows (closing, confinement to a thread).
 */
package io.jverbs;
