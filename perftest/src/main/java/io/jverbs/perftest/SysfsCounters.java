package io.jverbs.perftest;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * C perftest's {@code -W/--report-counters}: the named files under the port's sysfs folder
 * ({@code /sys/class/infiniband/DEV/ports/PORT/}), read once when the test opens them and again
 * after each report row, printed as {@code \tNAME=DELTA} lines and an empty line, raw (no
 * scaling), as C's. Not thread-safe: one run's.
 */
final class SysfsCounters {
    private final List<String> names;
    private final List<Path> files;
    private final long[] last;

    private SysfsCounters(List<String> names, List<Path> files, long[] last) {
        this.names = names;
        this.files = files;
        this.last = last;
    }

    /**
     * Opens the counters and reads their first values.
     *
     * @param root  the ports folder of the device ({@code /sys/class/infiniband/DEV/ports})
     * @param port  the port
     * @param names the paths under the port's folder
     * @return the counters
     * @throws PerftestException with C's message when one cannot be read
     */
    static SysfsCounters open(Path root, int port, List<String> names) {
        Path dir = root.resolve(Integer.toString(port));
        List<Path> files = names.stream().map(dir::resolve).toList();
        long[] first = new long[files.size()];
        for (int i = 0; i < first.length; i++) {
            first[i] = read(files.get(i), names.get(i));
        }
        return new SysfsCounters(List.copyOf(names), files, first);
    }

    private static long read(Path file, String name) {
        try {
            return Long.parseUnsignedLong(Files.readString(file).trim());
        } catch (IOException | NumberFormatException e) {
            throw new PerftestException(" Unable to access performance counters (" + name + ": " + file + ": " + e + ")");
        }
    }

    /** Prints each counter's change since the last print (or the open), and an empty line. */
    void print(PrintWriter out) {
        for (int i = 0; i < last.length; i++) {
            long now = read(files.get(i), names.get(i));
            out.println("\t" + names.get(i) + "=" + (now - last[i]));
            last[i] = now;
        }
        out.println();
    }
}
