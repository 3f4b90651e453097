package io.jverbs.ibverbs.device;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The RDMA device the device tests run on, named by the environment that
 * {@code soft-roce-ci/with-rxe} sets: {@code JVERBS_TEST_DEVICE} (default {@code rxe0}),
 * {@code JVERBS_TEST_GID_INDEX} (the RoCE v2 IPv4 GID; discovered when unset) and
 * {@code JVERBS_TEST_IP} (the device's IPv4 address, for rdma_cm).
 *
 * @param name        the device name, such as {@code rxe0}
 * @param port        the port the tests use (always 1: rxe has one)
 * @param gidIndexEnv the GID index from the environment, or -1 to discover it
 * @param ip          the IPv4 address from the environment, or {@code null}
 */
public record TestDevice(String name, int port, int gidIndexEnv, String ip) {
    /** The tag every device test carries; the host build excludes it. */
    public static final String TAG = "rdma";

    /** @return the device the environment names */
    public static TestDevice fromEnvironment() {
        String name = env("JVERBS_TEST_DEVICE", "rxe0");
        String gid = env("JVERBS_TEST_GID_INDEX", "");
        String ip = env("JVERBS_TEST_IP", "");
        return new TestDevice(name, 1, gid.isEmpty() ? -1 : Integer.parseInt(gid), ip.isEmpty() ? null : ip);
    }

    /** @return {@code null} when the device is there; otherwise why the device tests must be skipped */
    public String absenceReason() {
        if (!Files.isDirectory(sysfs())) {
            return "no RDMA device " + name + " (" + sysfs() + " is missing): run the device tests where one exists,"
                    + " e.g. soft-roce-ci/with-rxe scripts/ci/device-tests";
        }
        if (!Files.exists(Path.of("/dev/infiniband"))) {
            return "RDMA device " + name + " exists but /dev/infiniband does not (ib_uverbs not loaded)";
        }
        return null;
    }

    /** @return {@code /sys/class/infiniband/<name>} */
    public Path sysfs() {
        return Path.of("/sys/class/infiniband", name);
    }

    /** @return {@code /sys/class/infiniband/<name>/ports/<port>} */
    public Path sysfsPort() {
        return sysfs().resolve("ports").resolve(Integer.toString(port));
    }

    /** @return what the test reports say about where a test ran */
    public String description() {
        return name + " port " + port + (gidIndexEnv >= 0 ? ", gid index " + gidIndexEnv : "")
                + (ip != null ? ", ip " + ip : "") + ", kernel " + System.getProperty("os.version");
    }

    private static String env(String key, String fallback) {
        String value = System.getenv(key);
        return value == null || value.isBlank() ? fallback : value.trim();
    }
}
