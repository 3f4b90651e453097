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

    /** The C object's address, to match asynchronous events. */
    abstract long nativeAddress();

    /** "queue pair N" / "datagram queue pair N", for messages. */
    abstract String kindAndNumber();

    /** How many completions this queue pair can have outstanding on {@code queue} at once (its depths there). */
    abstract int entriesOn(CompletionQueue queue);

    /**
     * Fails the futures in flight, if any (the queue pair errored, its completion queue lost
     * completions, or the poller serving it ended).
     *
     * @param cause what the futures fail with
     * @param queue only the futures whose completion {@code queue} takes, or null for all
     */
    void failPending(Throwable cause, CompletionQueue queue) {
    }

    /** Fails the futures whose deadline passed or that nobody polls for; called by the context's event thread. */
    void expireFutures(long now) {
    }

    /** An asynchronous event hit this queue pair (QP fatal, access error, CQ overrun): error it with the event's name. */
    void asyncError(String event) {
    }
}
