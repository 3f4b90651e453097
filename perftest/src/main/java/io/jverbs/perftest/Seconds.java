package io.jverbs.perftest;

import java.util.Locale;

/**
 * The check of every time option given in seconds: a value the deadlines can use, from 1 ms to
 * {@value #MAX} s. Below 1 ms a deadline would round to nothing; NaN would pass every comparison
 * and infinity (or a huge number) would overflow a deadline in nanoseconds into the past.
 */
final class Seconds {
    static final double MIN = 0.001;
    static final double MAX = 1_000_000;

    private Seconds() {
    }

    /**
     * Why {@code value} is refused for {@code option}, or null when it is usable.
     *
     * @param option      the option's name, for the message
     * @param value       the parsed value
     * @param zeroMeaning what 0 means when the option accepts it ("no limit"), or null when 0 is refused
     * @return the one-line reason, naming the option, the value and the accepted range
     */
    static String refusal(String option, double value, String zeroMeaning) {
        if (zeroMeaning != null && value == 0) {
            return null;
        }
        if (value >= MIN && value <= MAX) {
            return null;
        }
        return option + " must be a number of seconds from " + MIN + " (1 ms) to " + String.format(Locale.ROOT, "%.0f", MAX)
                + (zeroMeaning != null ? ", or 0 (" + zeroMeaning + ")" : "") + ", not " + value;
    }
}
