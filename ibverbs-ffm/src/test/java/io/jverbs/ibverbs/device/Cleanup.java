package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.Errno;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.function.IntSupplier;

/**
 * Undo steps run in reverse order of registration (children before parents: QP before CQ
 * before channel, MR before PD before context). Every step runs even when an earlier one failed;
 * the first failure is thrown at the end with the others suppressed, so a leak is never silent.
 * Not thread-safe; {@link #close()} is idempotent.
 */
public final class Cleanup implements AutoCloseable {
    private final Deque<Step> steps = new ArrayDeque<>();

    private record Step(String verb, IntSupplier action) {
    }

    /**
     * Registers a destroy call that returns 0 or an errno (as {@code ibv_destroy_qp} does).
     *
     * @param verb   the C name of the call, for the failure message
     * @param action the call
     */
    public void add(String verb, IntSupplier action) {
        steps.push(new Step(verb, action));
    }

    /** Registers a destroy call that returns nothing. */
    public void addVoid(String verb, Runnable action) {
        steps.push(new Step(verb, () -> {
            action.run();
            return 0;
        }));
    }

    /**
     * Closes each non-null resource in the order given (children first); all are closed even
     * when one fails, and the first failure is thrown with the others suppressed.
     */
    public static void closeInOrder(AutoCloseable... resources) {
        try (Cleanup cleanup = new Cleanup()) {
            for (int i = resources.length - 1; i >= 0; i--) {
                AutoCloseable resource = resources[i];
                if (resource != null) {
                    cleanup.addVoid(resource.getClass().getSimpleName() + ".close", () -> {
                        try {
                            resource.close();
                        } catch (RuntimeException e) {
                            throw e;
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    });
                }
            }
        }
    }

    @Override
    public void close() {
        AssertionError failure = null;
        while (!steps.isEmpty()) {
            Step step = steps.pop();
            Throwable problem;
            try {
                int rc = step.action().getAsInt();
                problem = rc == 0 ? null : new AssertionError(step.verb() + " failed: " + Errno.name(rc) + " (" + rc + ")");
            } catch (RuntimeException | AssertionError e) {
                problem = e;
            }
            if (problem != null) {
                if (failure == null) {
                    failure = new AssertionError("cleanup failed (resources leaked): " + problem.getMessage(), problem);
                } else {
                    failure.addSuppressed(problem);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
