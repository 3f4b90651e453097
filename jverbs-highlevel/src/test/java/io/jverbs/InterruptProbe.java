package io.jverbs;

import org.junit.jupiter.api.function.Executable;

import java.util.concurrent.atomic.AtomicReference;

/** Runs a blocking wait on a thread of its own, interrupts it, and says how the wait ended. */
public final class InterruptProbe {
    /**
     * How an interrupted wait ended.
     *
     * @param end      what it threw (null when it returned)
     * @param ms       milliseconds from the interrupt to its end (or to giving up)
     * @param stillWaiting whether it went on waiting 5 s after the interrupt
     */
    public record Ended(Throwable end, long ms, boolean stillWaiting) {
    }

    private InterruptProbe() {
    }

    /**
     * Starts {@code wait} on a platform thread, interrupts it {@code afterMs} later, and waits up to
     * 5 s for it to end.
     *
     * @param wait    the blocking call
     * @param afterMs when to interrupt
     * @return how it ended
     * @throws InterruptedException when this thread is interrupted meanwhile
     */
    public static Ended interrupt(Executable wait, long afterMs) throws InterruptedException {
        AtomicReference<Throwable> end = new AtomicReference<>();
        Thread t = Thread.ofPlatform().start(() -> {
            try {
                wait.execute();
            } catch (Throwable e) {
                end.set(e);
            }
        });
        Thread.sleep(afterMs);
        long start = System.nanoTime();
        t.interrupt();
        t.join(5_000);
        return new Ended(end.get(), (System.nanoTime() - start) / 1_000_000, t.isAlive());
    }
}
