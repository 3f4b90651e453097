package io.jverbs;

/** A queue pair whose completions a {@link CompletionQueue} routes: reliable-connected or datagram. */
abstract sealed class QueueEndpoint extends Resource permits QueuePair, DatagramQueuePair {
    QueueEndpoint(String kind, Resource parent) {
        super(kind, parent);
    }

    /**
     * Returns the queue pair number.
     *
     * @return the QP number completions carry
     */
    public abstract int number();

    /**
     * Accounts for one completion of this queue pair.
     *
     * @return true when it belongs to the caller's handler (not to a future)
     */
    abstract boolean onCompletion(Completion c, CompletionQueue from);

    /**
     * Records, in posting order, that the next signaled send request retires {@code requests}
     * send-queue entries when its completion is polled (itself and the unsignaled ones before it).
     */
    abstract void pushCover(int requests);
}
