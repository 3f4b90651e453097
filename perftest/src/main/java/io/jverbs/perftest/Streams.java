package io.jverbs.perftest;

import java.io.PrintWriter;

/**
 * Where a test prints: its report and C's notes on stdout, its errors and C's warnings on stderr
 * (the command line's writers). Kept apart from the {@link TestSpec}, which says what runs.
 *
 * @param out standard output
 * @param err standard error
 */
record Streams(PrintWriter out, PrintWriter err) {
}
