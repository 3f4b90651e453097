package io.jverbs.perftest;

/**
 * A run that cannot go on: the message is what the user reads (one line, naming the cause), the
 * exit code what the process returns (1: the test failed; 2: the command line is refused).
 */
final class PerftestException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final int exitCode;

    PerftestException(String message) {
        this(message, 1, null);
    }

    PerftestException(String message, Throwable cause) {
        this(message, 1, cause);
    }

    PerftestException(String message, int exitCode, Throwable cause) {
        super(message, cause);
        this.exitCode = exitCode;
    }

    static PerftestException usage(String message) {
        return new PerftestException(message, 2, null);
    }
}
