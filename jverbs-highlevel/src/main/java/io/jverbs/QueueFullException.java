package io.jverbs;

/**
 * The asynchronous style's answer to a full send or receive queue (the zero-allocation style
 * returns {@link QueuePair#SEND_QUEUE_FULL} / {@link QueuePair#RECEIVE_QUEUE_FULL} instead):
 * wait for completions, then post again.
 */
public class QueueFullException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates one.
     *
     * @param message which queue and how deep it is
     */
    public QueueFullException(String message) {
        super(message);
    }
}
