package io.jverbs;

/**
 * Receives completions from {@link CompletionQueue#poll(CompletionHandler, int)}: the
 * zero-allocation style. The {@link Completion} passed in is a reused view, valid only during the
 * call: copy what you need, never keep it.
 *
 * <p>An exception thrown here is caught by the completion queue, counted and reported to its
 * error listener; polling goes on.
 */
@FunctionalInterface
public interface CompletionHandler {
    /**
     * Called once per completion of a work request posted with a caller's work-request id.
     *
     * @param completion the completion (a flyweight, valid during this call only)
     */
    void onCompletion(Completion completion);
}
