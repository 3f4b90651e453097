/**
 * Connections through rdma_cm ({@code librdmacm}): connecting and accepting by IP address and
 * port instead of exchanging queue pair numbers by hand.
 *
 * <p>{@link io.jverbs.cm.Connection} is the all-in-one reliable connection (queue pair,
 * completion queue, rdma_cm id and, optionally, a poller, all owned and closed together).
 * {@link io.jverbs.cm.RdmaCm} connects and listens with a queue pair the caller made
 * ({@link io.jverbs.cm.CmConnection} is what that yields), and resolves datagram peers
 * ({@link io.jverbs.DatagramQueuePair}) through rdma_cm's UDP port space.
 * {@link io.jverbs.cm.Handshake} is what each side tells the other in the connection's private
 * data; {@link io.jverbs.cm.RdmaCmException} is rdma_cm's failure.
 *
 * <p>Thread-safety: each type says; connections and listeners are safe to close from any thread,
 * and {@link io.jverbs.cm.Handshake} is immutable.
 */
package io.jverbs.cm;
