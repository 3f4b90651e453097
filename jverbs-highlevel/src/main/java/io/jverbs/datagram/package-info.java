/**
 * Unreliable datagram (UD): {@link io.jverbs.datagram.DatagramQueuePair} sends single messages up
 * to the MTU to any peer whose {@link io.jverbs.datagram.DatagramQueuePair.Address} it knows,
 * without a connection; {@link io.jverbs.datagram.DatagramBatch} posts a burst of them with one
 * doorbell.
 *
 * <p>The queue pair uses the core's objects ({@link io.jverbs.ProtectionDomain},
 * {@link io.jverbs.CompletionQueue}, {@link io.jverbs.RegisteredBuffer}) and polls as a
 * {@link io.jverbs.QueuePair} does. Thread-safety: a datagram queue pair and its destinations are
 * thread-safe (posts take the queue pair's lock); a batch is filled and posted from one thread.
 */
package io.jverbs.datagram;
