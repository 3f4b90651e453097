package io.jverbs.ibverbs;

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
     * @param rc   its return value: 0 on success, otherwise an errno (or -1, in which case {@code errnoIfMinusOne} is used)
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

    private static String hint(String verb, int errno) {
        return switch (errno) {
            case Errno.ENOSYS -> "The running kernel has no RDMA support (no ib_uverbs): load rdma_rxe and ib_uverbs"
                    + " (modprobe rdma_rxe), or run inside soft-roce-ci/with-rxe, which boots a kernel that has them";
            case Errno.ENODEV -> "No RDMA device: check `ibv_devices`; for Soft-RoCE create one with"
                    + " `rdma link add rxe0 type rxe netdev <netdev>` (soft-roce-ci/setup-rxe does it)";
            case Errno.ENOMEM -> verb.contains("reg_mr")
                    ? "The locked-memory limit is probably too low for this registration: raise it"
                      + " (ulimit -l unlimited, or LimitMEMLOCK=infinity for a systemd service)"
                    : null;
            case Errno.EPERM, Errno.EACCES -> "No permission on /dev/infiniband/uverbs*: run as a user with access"
                    + " (group rdma, or a udev rule), or as root; reg_mr may also need a higher memlock limit";
            case Errno.EOPNOTSUPP -> "The device or its provider does not support this operation";
            default -> null;
        };
    }
}
