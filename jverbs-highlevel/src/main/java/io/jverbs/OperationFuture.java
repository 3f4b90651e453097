package io.jverbs;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The future of an asynchronous operation: a {@link CompletableFuture} that refuses to block the
 * one thread able to complete it. Its completion is taken by whoever polls {@link #queue}; a
 * {@link #get()} or {@link #join()} on that thread (the {@link Poller}'s, or a thread inside
 * {@link CompletionQueue#poll}) would wait forever, so it throws instead. A future that the
 * context's event thread fails (a deadline, an asynchronous event) runs its callbacks on a
 * virtual thread of its own, so a callback that blocks stops no other deadline; a wait on the
 * event thread itself is refused. Only jverbs ends the future of a posted request: its
 * {@code cancel}, {@code complete} and {@code completeExceptionally} return false (a posted request
 * cannot be withdrawn; the device may still use its buffer), so {@code orTimeout} and
 * {@code completeOnTimeout} do not end it either, and {@code obtrudeValue},
 * {@code obtrudeException} and {@code completeAsync} throw {@link UnsupportedOperationException}. When jverbs fails it before the device completed
 * the request (the poller ended, nobody polls, the operation timeout passed), the queue pair is
 * put in error first, so the device flushes the request and no longer touches its buffer.
 * Dependent stages
 * ({@code thenApply}, …) carry the same check.
 */
final class OperationFuture<T> extends CompletableFuture<T> {
    private final CompletionQueue queue;
    private final String what;
    /** The future of a posted request (not a dependent stage): only jverbs ends it. */
    private final boolean request;

    /** The future of a request about to be posted. */
    OperationFuture(CompletionQueue queue, String what) {
        this(queue, what, true);
    }

    private OperationFuture(CompletionQueue queue, String what, boolean request) {
        this.queue = queue;
        this.what = what;
        this.request = request;
    }

    /**
     * A failure decided on a context's event thread and delivered off it: whoever ends the future
     * first (that delivery, or a poll that meanwhile took the request's flushed completion) ends
     * it with this cause.
     */
    private volatile Throwable decided;

    /** Completes it with the device's result (jverbs' side). */
    boolean finish(T value) {
        Throwable d = decided;
        return d != null ? super.completeExceptionally(d) : super.complete(value);
    }

    /**
     * Fails it (jverbs' side: a failed completion, a closed queue pair, a deadline, a refused post).
     * On a context's event thread (a deadline, an asynchronous event) the failure, and with it the
     * caller's callbacks, runs on a virtual thread of its own: a callback that blocks must not
     * stop the deadlines and events of the whole context.
     */
    boolean fail(Throwable cause) {
        if (Context.onEventThread()) {
            synchronized (this) {
                if (isDone() || decided != null) {
                    return false;
                }
                decided = cause;
            }
            Thread.ofVirtual().name("jverbs-failed-future").start(() -> super.completeExceptionally(cause));
            return true;
        }
        Throwable d = decided;
        return super.completeExceptionally(d != null ? d : cause);
    }

    /**
     * Refused for the future of a posted request while it is pending: a posted work request cannot
     * be withdrawn, and the device may still write its buffer. Wait with a timeout instead
     * ({@code get(timeout, unit)}), or rely on the queue pair's operation timeout.
     *
     * @return false while the request is pending (nothing changes); for a dependent stage, as
     *         {@link CompletableFuture#cancel}
     */
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        return !request && super.cancel(mayInterruptIfRunning);
    }

    /**
     * Refused for the future of a posted request (returns false): only its completion ends it.
     * {@code completeOnTimeout} has no effect on it for the same reason.
     */
    @Override
    public boolean complete(T value) {
        return !request && super.complete(value);
    }

    /**
     * Refused for the future of a posted request (returns false): only its completion ends it.
     * {@code orTimeout} has no effect on it for the same reason: use {@code get(timeout, unit)}
     * or the queue pair's operation timeout ({@link QueuePairConfig#withOperationTimeout}).
     */
    @Override
    public boolean completeExceptionally(Throwable ex) {
        return !request && super.completeExceptionally(ex);
    }

    /**
     * Refused for the future of a posted request: only its completion ends it, and forcing a
     * value on it would tell the caller the buffer is free while the device may still use it.
     *
     * @throws UnsupportedOperationException for the future of a posted request
     */
    @Override
    public void obtrudeValue(T value) {
        refuseForcedEnd("obtrudeValue");
        super.obtrudeValue(value);
    }

    /**
     * Refused for the future of a posted request, as {@link #obtrudeValue} is.
     *
     * @throws UnsupportedOperationException for the future of a posted request
     */
    @Override
    public void obtrudeException(Throwable ex) {
        refuseForcedEnd("obtrudeException");
        super.obtrudeException(ex);
    }

    /**
     * Refused for the future of a posted request, as {@link #complete} is: the supplier would
     * end it on another thread, past that check.
     *
     * @throws UnsupportedOperationException for the future of a posted request
     */
    @Override
    public CompletableFuture<T> completeAsync(java.util.function.Supplier<? extends T> supplier,
                                              java.util.concurrent.Executor executor) {
        refuseForcedEnd("completeAsync");
        return super.completeAsync(supplier, executor);
    }

    /**
     * Refused for the future of a posted request, as {@link #complete} is.
     *
     * @throws UnsupportedOperationException for the future of a posted request
     */
    @Override
    public CompletableFuture<T> completeAsync(java.util.function.Supplier<? extends T> supplier) {
        refuseForcedEnd("completeAsync");
        return super.completeAsync(supplier);
    }

    private void refuseForcedEnd(String how) {
        if (request) {
            throw new UnsupportedOperationException(how + " on the future of " + what + ": only its completion ends"
                    + " it (the device may still use the request's buffer); wait with get(timeout, unit) or set"
                    + " QueuePairConfig.withOperationTimeout");
        }
    }

    private void refuseSelfWait() {
        if (isDone()) {
            return;
        }
        if (queue.isPollingThread()) {
            throw new IllegalStateException("waiting for " + what + " on the thread that polls " + queue
                    + " would wait forever (only this thread can take its completion): chain the work with"
                    + " thenAccept/whenComplete, or wait on another thread");
        }
        if (Context.onEventThread()) {
            throw new IllegalStateException("waiting for " + what + " on the event thread of a context (in a callback"
                    + " of a future it failed) would stop the deadlines of every future of that context, perhaps this"
                    + " one's: chain the work with thenAccept/whenComplete, or wait on another thread");
        }
    }

    @Override
    public T get() throws InterruptedException, ExecutionException {
        refuseSelfWait();
        return super.get();
    }

    @Override
    public T get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
        refuseSelfWait();
        return super.get(timeout, unit);
    }

    @Override
    public T join() {
        refuseSelfWait();
        return super.join();
    }

    @Override
    public <U> CompletableFuture<U> newIncompleteFuture() {
        return new OperationFuture<>(queue, what, false);
    }
}
