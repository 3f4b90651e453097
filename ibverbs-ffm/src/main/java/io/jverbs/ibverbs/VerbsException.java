package io.jverbs.ibverbs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A verb of libibverbs or librdmacm failed.
 *
 * <p>The message names the verb and the errno, as in {@code ibv_create_qp failed: EINVAL (22)}, and
 * for the common causes says how to fix them (no device, rxe missing, memory-lock limit too low,
 * no permission on {@code /dev/infiniband}). Instances are immutable and may be shared between
 * threads.
 */
public class VerbsException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The C name of the verb that failed. */
    private final String verb;
    /** The errno it reported, positive. */
    private final int errno;
    /** Extra context given at construction, or {@code null}. */
    private final String detail;

    /**
     * Creates an exception for a failed verb.
     *
     * @param verb   the C name of the verb that failed, such as {@code "ibv_reg_mr"}
     * @param errno  the errno it reported (the absolute value is kept)
     * @param detail extra context for the message, or {@code null}
     */
    public VerbsException(String verb, int errno, String detail) {
        super(message(verb, Math.abs(errno), detail));
        this.verb = verb;
        this.errno = Math.abs(errno);
        this.detail = detail;
    }

    /**
     * Creates the exception matching an errno: an {@link UnsupportedVerbException} for
     * {@code EOPNOTSUPP}, a {@link VerbsException} otherwise.
     *
     * @param verb  the C name of the verb that failed
     * @param errno the errno it reported
     * @return the exception, never {@code null}
     */
    public static VerbsException of(String verb, int errno) {
        int e = Math.abs(errno);
        return e == Errno.EOPNOTSUPP ? new UnsupportedVerbException(verb, null) : new VerbsException(verb, e, null);
    }

    /**
     * Throws when a verb that returns its errno (0 on success) failed.
     *
     * @param verb the C name of the verb
     * @param rc   its return value: 0 on success; otherwise an errno, positive or negated, or -1 meaning
     *             "see errno", in which case {@code errnoIfMinusOne} is used (so a verb that returns
     *             {@code -EPERM} must be checked with its captured errno, not through this method)
     * @param errnoIfMinusOne the captured errno, used when the verb returned -1
     * @throws VerbsException when {@code rc != 0}
     */
    public static void check(String verb, int rc, int errnoIfMinusOne) {
        if (rc != 0) {
            throw of(verb, rc == -1 ? errnoIfMinusOne : rc);
        }
    }

    /**

     * Returns the C name of the verb that failed.

     *

     * @return the C name of the verb that failed

     */
    public String verb() {
        return verb;
    }

    /**

     * Returns the errno the verb reported, positive.

     *

     * @return the errno the verb reported, positive

     */
    public int errno() {
        return errno;
    }

    /**

     * Returns the symbolic errno name, such as {@code "EINVAL"}.

     *

     * @return the symbolic errno name, such as {@code "EINVAL"}

     */
    public String errnoName() {
        return Errno.name(errno);
    }

    /**
     * Returns the extra context given at construction.
     *
     * @return the detail, or {@code null} when there was none
     */
    public String detail() {
        return detail;
    }

    private static String message(String verb, int errno, String detail) {
        StringBuilder sb = new StringBuilder(verb).append(" failed: ").append(Errno.name(errno)).append(" (").append(errno).append(')');
        if (detail != null && !detail.isEmpty()) {
            sb.append(": ").append(detail);
        }
        String hint = hint(verb, errno);
        if (hint != null) {
            sb.append(". ").append(hint);
        }
        return sb.toString();
    }

    /**
     * The registration hint for ENOMEM, from this process's soft locked-memory limit as
     * {@code /proc/self/limits} gives it ("unlimited", a number of bytes, or null when unknown).
     */
    static String memlockHint(String limit) {
        if ("unlimited".equals(limit)) {
            return "The locked-memory limit is already unlimited, so the kernel or the provider could not pin"
                    + " this much memory: check free memory and the device's largest region (ibv_devinfo -v: max_mr_size)";
        }
        return "The locked-memory limit" + (limit != null ? " (" + limit + " bytes)" : "") + " is probably too low for"
                + " this registration: raise it (ulimit -l unlimited, or LimitMEMLOCK=infinity for a systemd service)";
    }

    /** The soft "Max locked memory" of /proc/self/limits, or null when it cannot be read. */
    private static String lockedMemoryLimit() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/limits"))) {
                if (line.startsWith("Max locked memory")) {
                    String[] f = line.substring("Max locked memory".length()).trim().split("\\s+");
                    return f.length > 0 ? f[0] : null;
                }
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
        return null;
    }

    private static String hint(String verb, int errno) {
        boolean opensDevice = verb.equals("ibv_get_device_list") || verb.equals("ibv_open_device")
                || verb.equals("rdma_create_event_channel") || verb.equals("rdma_get_devices");
        boolean registersMemory = verb.contains("reg_mr") || verb.startsWith("rdma_reg_");
        return switch (errno) {
            case Errno.ENOSYS -> opensDevice
                    ? "The running kernel has no RDMA support (no ib_uverbs). Install rdma-core with a provider"
                      + " (Debian/Ubuntu: rdma-core ibverbs-providers) and, for Soft-RoCE, enable it:"
                      + " `modprobe rdma_rxe; rdma link add rxe0 type rxe netdev IFACE`. For a kernel without"
                      + " rdma_rxe (most cloud and CI kernels), soft-roce-ci in the jverbs repository runs a command"
                      + " in a QEMU guest that has it"
                    : "The provider does not implement this verb";
            case Errno.ENODEV -> opensDevice
                    ? "No RDMA device: check `ibv_devices`; install a provider (Debian/Ubuntu: ibverbs-providers),"
                      + " or for Soft-RoCE create a device with"
                      + " `modprobe rdma_rxe; rdma link add rxe0 type rxe netdev IFACE`"
                    : null;
            case Errno.ENOMEM -> registersMemory ? memlockHint(lockedMemoryLimit()) : null;
            case Errno.EPERM, Errno.EACCES -> opensDevice || registersMemory
                    ? "No permission on /dev/infiniband/uverbs* (run as a user with access: group rdma, a udev rule,"
                      + " or root), or the locked-memory limit is too low for the registration"
                    : null;
            case Errno.EOPNOTSUPP -> "The device or its provider does not support this operation";
            default -> null;
        };
    }
}
