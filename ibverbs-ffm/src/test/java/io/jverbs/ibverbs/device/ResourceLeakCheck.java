package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.internal.NativeAccess;
import io.jverbs.ibverbs.Native;

import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.ADDRESS;

/**
 * The leak check of the device tests. {@link DeviceTestExtension} starts it once per JUnit run,
 * in the root extension context, before the first device test class; JUnit closes it when the
 * whole run has finished — after every class's own cleanup but still inside the test JVM (the
 * kernel frees everything when a process exits, so a check after exit would prove nothing).
 *
 * <p>It compares the kernel's RDMA object counts of the device ({@code rdma resource show})
 * before and after, and writes {@code <reports>/resources.txt} with {@code before:},
 * {@code after:} and a final {@code leak-check: OK} or {@code leak-check: FAILED ...} line, where
 * {@code <reports>} is the system property {@code jverbs.deviceReports} (default
 * {@code target/device-reports}).
 */
final class ResourceLeakCheck implements AutoCloseable {
    private static final String LIBRDMACM_NOTE = "baseline taken after librdmacm opened its per-process device"
            + " contexts (rdma_get_devices), which it keeps until the process exits";

    private final TestDevice device;
    private final RdmaResourceCounts before;
    private final String beforeProblem;

    private ResourceLeakCheck(TestDevice device, RdmaResourceCounts before, String beforeProblem) {
        this.device = device;
        this.before = before;
        this.beforeProblem = beforeProblem;
    }

    /** Records the counts now. */
    static ResourceLeakCheck start(TestDevice device) {
        primeLibrdmacm();
        try {
            return new ResourceLeakCheck(device, RdmaResourceCounts.read(device.name()), null);
        } catch (IOException e) {
            return new ResourceLeakCheck(device, null, e.getMessage());
        }
    }

    /**
     * librdmacm opens each device once per process, on first use, and keeps that context until the
     * process exits (it frees only its PD when the last id goes). Opening it here, before the
     * baseline, keeps that deliberate cache out of the comparison; anything the tests leave behind
     * still shows.
     */
    private static void primeLibrdmacm() {
        MethodHandle getDevices;
        MethodHandle freeDevices;
        try {
            SymbolLookup lib = NativeAccess.load("librdmacm.so.1", "librdmacm1");
            getDevices = NativeAccess.downcall(lib, "librdmacm.so.1", "rdma_get_devices",
                    FunctionDescriptor.of(ADDRESS, ADDRESS), false);
            freeDevices = NativeAccess.downcall(lib, "librdmacm.so.1", "rdma_free_devices",
                    FunctionDescriptor.ofVoid(ADDRESS), false);
        } catch (RuntimeException | UnsatisfiedLinkError e) {
            return; // no librdmacm: nothing can open its cache either
        }
        try {
            MemorySegment list = (MemorySegment) getDevices.invokeExact(MemorySegment.NULL);
            if (list.address() != 0) {
                freeDevices.invokeExact(list);
            }
        } catch (Throwable t) {
            throw new AssertionError("rdma_get_devices", t);
        }
    }

    /** @return how the counts differ from the baseline now ({@code ""} when they do not), or why they cannot be read */
    String differenceNow() {
        if (before == null) {
            return "cannot read counts before the tests: " + beforeProblem;
        }
        try {
            return RdmaResourceCounts.read(device.name()).differenceFrom(before);
        } catch (IOException e) {
            return "cannot read counts: " + e.getMessage();
        }
    }

    /** @return the baseline, or {@code null} when it could not be read */
    RdmaResourceCounts before() {
        return before;
    }

    /** Records the counts again, compares, and writes the report. */
    @Override
    public void close() {
        StringBuilder report = new StringBuilder("device: ").append(device.name()).append('\n');
        String verdict;
        if (before == null) {
            verdict = "FAILED cannot read counts before the tests: " + beforeProblem;
        } else {
            report.append("note: ").append(LIBRDMACM_NOTE).append('\n');
            report.append("before: ").append(before).append('\n');
            try {
                // objects a test released on a background thread (a destroy the kernel holds, a
                // warm-up that ends its step first) get a bounded moment to go: 20 s at most
                RdmaResourceCounts after = RdmaResourceCounts.read(device.name());
                long start = System.nanoTime();
                while (!after.differenceFrom(before).isEmpty() && System.nanoTime() - start < 20_000_000_000L) {
                    try {
                        Thread.sleep(500);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        break;
                    }
                    after = RdmaResourceCounts.read(device.name());
                }
                long waitedMs = (System.nanoTime() - start) / 1_000_000;
                report.append("after: ").append(after).append(waitedMs >= 500 ? " (read " + waitedMs + " ms after the tests)" : "")
                        .append('\n');
                String diff = after.differenceFrom(before);
                verdict = diff.isEmpty() ? "OK" : "FAILED " + diff;
            } catch (IOException e) {
                verdict = "FAILED cannot read counts after the tests: " + e.getMessage();
            }
        }
        report.append("leak-check: ").append(verdict).append('\n');
        System.out.print("[resources] " + report.toString().stripTrailing().replace("\n", "\n[resources] ") + "\n");
        Path dir = Path.of(System.getProperty("jverbs.deviceReports", "target/device-reports"));
        try {
            Files.createDirectories(dir);
            Files.writeString(dir.resolve("resources.txt"), report);
        } catch (IOException e) {
            System.err.println("[resources] cannot write " + dir.resolve("resources.txt") + ": " + e);
        }
    }
}
