package io.jverbs.perftest;

/**
 * A run that cannot go on: the message is what the user reads (one line, naming the cause), the
 * exit code what the process returns: 1 when the test failed or the command line is one C refuses
 * too (C's code for both); 2 when only jverbs refuses the line (an option of its own given a value
 * it cannot use, or a C feature it does not implement).
 */
final class PerftestException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final int exitCode;

    PerftestException(String message) {
        this(message, FAILED, null);
    }

    PerftestException(String message, Throwable cause) {
        this(message, FAILED, cause);
    }

    PerftestException(String message, int exitCode, Throwable cause) {
        super(message, cause);
        this.exitCode = exitCode;
    }

    /** The exit code of a failed test, and of a command line C refuses too. */
    static final int FAILED = 1;
    /** The exit code of a command line only jverbs refuses. */
    static final int REFUSED_HERE = 2;

    /**
     * A command line C refuses too, with C's exit code.
     *
     * @param message C's message where C has one
     * @return the exception, exit code {@value #FAILED}
     */
    static PerftestException refusedAsC(String message) {
        return new PerftestException(message, FAILED, null);
    }

    /**
     * A command line C would run but jverbs refuses: an own option's value it cannot use, or a C
     * feature it does not implement.
     *
     * @param message the reason, naming the option
     * @return the exception, exit code {@value #REFUSED_HERE}
     */
    static PerftestException refusedHere(String message) {
        return new PerftestException(message, REFUSED_HERE, null);
    }
}
