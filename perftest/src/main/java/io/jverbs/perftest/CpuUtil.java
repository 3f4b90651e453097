package io.jverbs.perftest;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * C perftest's {@code --cpu_util}: the system's CPU utilization over a duration run's measured
 * window, read from the aggregate {@code cpu} line of {@code /proc/stat} as C reads it (user and
 * idle only): {@code 100 * Δuser / (Δuser + Δidle)}. Sampled by a thread of its own at the
 * window's start and end (C samples in its alarm handler), so the measured loop reads no file.
 */
final class CpuUtil {
    private static final Path STAT = Path.of("/proc/stat");
    private final Thread sampler;
    private volatile long[] first;
    private volatile long[] second;

    private CpuUtil(long marginMs, long windowMs) {
        sampler = Thread.ofVirtual().name("cpu-util").start(() -> {
            try {
                Thread.sleep(marginMs);
                first = read();
                Thread.sleep(windowMs);
                second = read();
            } catch (InterruptedException e) {
                // the run ended first: the samples taken so far are all there is
            }
        });
    }

    /**
     * Starts sampling a window that begins {@code marginSec} from now and lasts until
     * {@code marginSec} before {@code durationSec} from now, as C's duration window.
     *
     * @param durationSec the run's -D
     * @param marginSec   the run's -f
     * @return the sampler
     */
    static CpuUtil window(int durationSec, int marginSec) {
        return new CpuUtil(marginSec * 1000L, Math.max(0, (durationSec - 2L * marginSec) * 1000L));
    }

    /**
     * The utilization in percent, once the window has passed (waits for its end at most 2 s more).
     *
     * @return 0 to 100; 0 when the window was not sampled, as C's
     */
    double percent() {
        try {
            sampler.join(2_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        sampler.interrupt();
        long[] a = first;
        long[] b = second;
        if (a == null || b == null) {
            return 0;
        }
        return of(a, b);
    }

    /** C's formula over two samples of {user, idle}. */
    static double of(long[] a, long[] b) {
        long user = b[0] - a[0];
        long idle = b[1] - a[1];
        return user + idle == 0 ? 0 : 100.0 * user / (user + idle);
    }

    /** The aggregate line's user and idle jiffies (fields 2 and 5, as C's get_cpu_stats). */
    static long[] parse(String firstLine) {
        String[] f = firstLine.trim().split("\\s+");
        return new long[] {Long.parseLong(f[1]), Long.parseLong(f[4])};
    }

    private static long[] read() {
        try (var lines = Files.lines(STAT)) {
            return parse(lines.findFirst().orElseThrow());
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
