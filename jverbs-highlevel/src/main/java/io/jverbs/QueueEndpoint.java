package io.jverbs;


/**
 * A queue pair whose completions a {@link CompletionQueue} routes: reliable-connected
 * ({@link QueuePair}) or datagram ({@link DatagramQueuePair}).
 *
 * <p>The class is sealed, and so is its one abstract subclass (the posting engine of
 * {@link QueuePair}); the two concrete ones, {@link QueuePair} and {@link DatagramQueuePair}, are
 * final: its protected members are the hooks those two implement, and no code outside this
 * module can call or override them.
 */
public abstract sealed class QueueEndpoint extends Resource permits PostingEndpoint, DatagramQueuePair {
    /**
     * Makes the Java side of a new queue pair.
     *
     * @param kind   what it is, for messages
     * @param parent its protection domain, which closes it
     */
    protected QueueEndpoint(String kind, Resource parent) {
        super(kind, parent);
    }

    /**
     * Returns the queue pair number.
     *
     * @return the QP number completions carry
     */
    public abstract int number();

    /**
     * Accounts for one completion of this queue pair; called by the completion queue's poll.
     *
     * @param c    the completion, valid during the call
     * @param from the completion queue polled
     * @return true when it belongs to the caller's handler (not to a future)
     */
    protected abstract boolean onCompletion(Completion c, CompletionQueue from);

    /**
     * Returns the C object's address, to match asynchronous events.
     *
     * @return the {@code ibv_qp}'s address
     */
    protected abstract long nativeAddress();

    /**
     * Returns "queue pair N" / "datagram queue pair N", for messages.
     *
     * @return the kind and number
     */
    protected abstract String kindAndNumber();

    /**
     * Returns how many completions this queue pair can have outstanding on {@code queue} at once
     * (its depths there).
     *
     * @param queue a completion queue
     * @return its entries on {@code queue}, 0 when it does not use it
     */
    protected abstract int entriesOn(CompletionQueue queue);

    /**
     * Runs outside the monitor before the destroy: detaches from the completion queues and
     * releases what owns this queue pair.
     */
    protected abstract void beforeDestroy();

    /** Destroys the native queue pair; runs once, under this object's monitor. */
    protected abstract void destroyQueuePair();

    @Override
    final void beforeClose() {
        beforeDestroy();
    }

    @Override
    final void destroyNative() {
        destroyQueuePair();
    }

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
