package io.jverbs;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The future of an asynchronous operation: a {@link CompletableFuture} that refuses to block the
 * one thread able to complete it. Its completion is taken by whoever polls {@link #queue}; a
 * {@link #get()} or {@link #join()} on that thread (the {@link Poller}'s, or a thread inside
 * {@link CompletionQueue#poll}) would wait forever, so it throws instead. Dependent stages
 * ({@code thenApply}, …) carry the same check.
 */
final class OperationFuture<T> extends CompletableFuture<T> {
    private final CompletionQueue queue;
    private final String what;

    OperationFuture(CompletionQueue queue, String what) {
        this.queue = queue;
        this.what = what;
    }

    private void refuseSelfWait() {
        if (!isDone() && queue.isPollingThread()) {
            throw new IllegalStateException("waiting for " + what + " on the thread that polls " + queue
                    + " would wait forever (only this thread can take its completion): chain the work with"
                    + " thenAccept/whenComplete, or wait on another thread");
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
        return new OperationFuture<>(queue, what);
    }
}
