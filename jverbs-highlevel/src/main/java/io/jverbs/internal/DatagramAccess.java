package io.jverbs.internal;

import io.jverbs.datagram.DatagramQueuePair;

/**
 * The operations of {@code io.jverbs.datagram} that rdma_cm ({@code io.jverbs.cm}) calls but
 * that are no part of the public API. {@link DatagramQueuePair} registers the one implementation
 * ({@link Secrets#setDatagram}); callers keep it in a {@code static final} field
 * ({@link Secrets#datagram()}).
 */
public interface DatagramAccess {
    /**
     * Returns the name of the device the queue pair is on.
     *
     * @param qp the datagram queue pair
     * @return its device's name
     */
    String deviceName(DatagramQueuePair qp);

    /**
     * Returns the GID index its destinations send from.
     *
     * @param qp the datagram queue pair
     * @return the GID index
     */
    int gidIndex(DatagramQueuePair qp);

    /**
     * Returns the device port it is on.
     *
     * @param qp the datagram queue pair
     * @return the port number
     */
    int portNumber(DatagramQueuePair qp);
}
