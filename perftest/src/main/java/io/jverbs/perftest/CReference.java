package io.jverbs.perftest;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * C perftest's figures for the same test, read from what the C tool wrote: its printed table
 * (stdout saved to a file) or its {@code --out_json} file (4.5's keys are unquoted, so it is read
 * as text, not as JSON). Bandwidth: BW peak and average in the table's unit; latency: t_min,
 * t_max, t_typical, 99% and 99.9% in µs.
 *
 * @param bw       whether this is a bandwidth row
 * @param values   the row: bw {bytes, iters, peak, avg, msgRate}; lat {bytes, iters, min, max,
 *                 typical, avg, stdev, p99, p99.9}
 * @param source   the file it came from
 */
record CReference(boolean bw, double[] values, Path source) {
    double bwAverage() {
        return values[3];
    }

    double bwPeak() {
        return values[2];
    }

    /**
     * Reads the C result of a bandwidth or latency test.
     *
     * @throws PerftestException when the file is missing or holds no C result row (exit code 2:
     *                           {@code --plot-compare} is jverbs' own option, refused before the test runs)
     */
    static CReference read(Path file, boolean bw) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            throw PerftestException.refusedHere("--plot-compare: can't read " + file + ": " + e.getMessage());
        }
        double[] row = tableRow(text);
        if (row == null) {
            row = jsonRow(text, bw);
        }
        if (row == null || row.length < (bw ? 5 : 9)) {
            throw PerftestException.refusedHere("--plot-compare: " + file + " holds no C perftest " + (bw ? "bandwidth" : "latency")
                    + " result (give the C tool's printed output or its --out_json file)");
        }
        return new CReference(bw, row, file);
    }

    private static double[] tableRow(String text) {
        String[] lines = text.split("\n");
        for (int i = 0; i < lines.length - 1; i++) {
            if (lines[i].trim().startsWith("#bytes")) {
                String[] f = lines[i + 1].trim().split("\\s+");
                double[] v = new double[f.length];
                try {
                    for (int k = 0; k < f.length; k++) {
                        v[k] = Double.parseDouble(f[k]);
                    }
                    return v;
                } catch (NumberFormatException e) {
                    return null;
                }
            }
        }
        return null;
    }

    /** 4.5's --out_json: {@code BW_peak: 1.23,} style lines (keys quoted in later versions). */
    private static double[] jsonRow(String text, boolean bw) {
        String[] keys = bw ? new String[] {"MsgSize", "n_iterations", "BW_peak", "BW_average", "MsgRate"}
                : new String[] {"MsgSize", "n_iterations", "t_min", "t_max", "t_typical", "t_avg", "t_stdev", "percentile_99",
                                "percentile_99.9"};
        double[] v = new double[keys.length];
        for (int k = 0; k < keys.length; k++) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"?" + java.util.regex.Pattern.quote(keys[k])
                    + "\"?\\s*:\\s*([-+0-9.eE]+)").matcher(text);
            if (!m.find()) {
                return null;
            }
            v[k] = Double.parseDouble(m.group(1));
        }
        return v;
    }

    /** The latency points: (percentile, µs) for min (p0), typical (p50), 99%, 99.9% and max (p100). */
    /**
     * The samples behind C's latency row: its iterations less one (gaps between posts) less its
     * two slowest ({@code LAT_MEASURE_TAIL}), or 0 when the row gives no count.
     */
    long latencySamples() {
        return values.length > 1 ? Math.max(0, (long) values[1] - 1 - LatStats.TAIL) : 0;
    }

    double[][] latencyPoints() {
        return new double[][] {{0, values[2]}, {50, values[4]}, {99, values[7]}, {99.9, values[8]}};
    }

    String label() {
        return bw ? String.format(Locale.ROOT, "C perftest (average %.2f, peak %.2f)", values[3], values[2])
                  : String.format(Locale.ROOT, "C perftest (typical %.2f usec, 99%% %.2f)", values[4], values[7]);
    }
}
