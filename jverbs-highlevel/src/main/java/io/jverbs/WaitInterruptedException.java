package io.jverbs;

/**
 * A blocking wait of jverbs ended because its thread was interrupted. The thread's interrupt flag
 * stays set, so the code above still sees it; nothing the wait was about has been lost (call the
 * wait again, or close what it waited on).
 */
public final class WaitInterruptedException extends RuntimeException {
    /**
     * Creates one.
     *
     * @param what the wait that ended, named for the message
     */
    public WaitInterruptedException(String what) {
        super("interrupted while " + what + "; the thread's interrupt flag stays set");
    }
}
