package io.jverbs;

import java.util.Objects;

/**
 * A request jverbs refused because of the state of what it was asked to use, with the
 * {@link Reason} a caller branches on: a closed resource ({@link Reason#CLOSED}), a queue pair
 * not connected yet ({@link Reason#NOT_CONNECTED}) or in error ({@link Reason#IN_ERROR}). It is
 * an {@link IllegalStateException}, so code that catches that keeps working; nothing reached the
 * device. The message names the resource, the operation and what to do.
 *
 * <p>What to do, by reason: {@code CLOSED}, stop using it (or make a new one);
 * {@code NOT_CONNECTED}, connect first (or post receives only: they may wait for the connect);
 * {@code IN_ERROR}, the queue pair will not execute work again (see {@link QueuePair#error()}):
 * close it and connect a new one.
 *
 * <p>Thread-safety: immutable.
 */
public final class RefusedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    /** Why a request was refused. */
    public enum Reason {
        /** The resource, or one it depends on (its parent, a buffer, a destination), is closed. */
        CLOSED,
        /** The queue pair is prepared but not connected yet. */
        NOT_CONNECTED,
        /** The queue pair is in error: a failed completion, an asynchronous event, or the peer's disconnect. */
        IN_ERROR
    }

    /** Why the request was refused (not serialized: a transient reason reads as {@code CLOSED}). */
    private final transient Reason reason;

    /**
     * Makes the exception.
     *
     * @param reason  why the request was refused
     * @param message what was refused, and what to do
     * @throws NullPointerException when {@code reason} is null
     */
    public RefusedException(Reason reason, String message) {
        super(message);
        this.reason = Objects.requireNonNull(reason, "reason");
    }

    /**
     * Returns why the request was refused.
     *
     * @return the reason
     */
    public Reason reason() {
        return reason == null ? Reason.CLOSED : reason;
    }
}
