package io.jverbs.internal;

/** What a {@code MethodHandle.invokeExact} call site rethrows: the target's own unchecked exception. */
public final class Unchecked {
    private Unchecked() {
    }

    /**
     * Returns {@code t} as the exception to throw: itself when unchecked, an {@link Error} thrown
     * as is, anything else (a downcall or handle declares none) wrapped.
     *
     * @param t what the call threw
     * @return the exception to throw
     */
    public static RuntimeException of(Throwable t) {
        if (t instanceof RuntimeException e) {
            return e;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }
}
