package io.jverbs.device;

import io.jverbs.Completion;
import io.jverbs.CompletionQueue;

import java.util.ArrayList;
import java.util.List;

/** Polls a queue until enough completions arrived, with a deadline (a lost completion fails the test, never hangs it). */
final class Polling {
    /** What a test keeps of one completion (the flyweight itself must not be kept). */
    record Seen(long wrId, int status, String statusName, int opcode, int byteLength, boolean hasImmediate, int immediate) {
        static Seen of(Completion c) {
            return new Seen(c.wrId(), c.status(), c.statusName(), c.isSuccess() ? c.opcode() : -1, c.byteLength(),
                    c.isSuccess() && c.hasImmediate(), c.isSuccess() && c.hasImmediate() ? c.immediateData() : 0);
        }
    }

    private Polling() {
    }

    static List<Seen> await(CompletionQueue cq, int count, long timeoutMillis) {
        List<Seen> seen = new ArrayList<>();
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000;
        while (seen.size() < count) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("only " + seen.size() + " of " + count + " completions within " + timeoutMillis
                        + " ms: " + seen);
            }
            if (cq.poll(c -> seen.add(Seen.of(c)), 16) == 0) {
                Thread.onSpinWait();
            }
        }
        return seen;
    }
}
