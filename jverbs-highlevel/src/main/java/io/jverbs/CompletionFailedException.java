package io.jverbs;

/**
 * A work request that completed with an error status: how a future of the asynchronous style
 * fails. Names the status ({@code REM_ACCESS_ERR}, {@code RETRY_EXC_ERR}, {@code WR_FLUSH_ERR} for
 * work flushed from a queue pair in error) and the vendor error.
 */
public class CompletionFailedException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    /** The {@code ibv_wc_status}. */
    private final int status;
    /** The device's vendor error. */
    private final int vendorError;

    /**
     * Creates one.
     *
     * @param operation   what was posted (such as {@code "RDMA Write"})
     * @param status      the {@code ibv_wc_status}
     * @param vendorError the device's vendor error
     * @param qpNumber    the queue pair
     */
    public CompletionFailedException(String operation, int status, int vendorError, int qpNumber) {
        super(operation + " on queue pair " + qpNumber + " failed: " + WcStatus.name(status) + " (vendor error 0x"
                + Integer.toHexString(vendorError) + ")" + hint(status));
        this.status = status;
        this.vendorError = vendorError;
    }

    private static String hint(int status) {
        return switch (status) {
            case WcStatus.REM_ACCESS_ERR -> ": the peer refused the access — wrong rkey, a range outside its buffer,"
                    + " or a right it did not grant";
            case WcStatus.RETRY_EXC_ERR -> ": the peer did not acknowledge within timeout × retry count (peer gone,"
                    + " link down, or a wrong GID/QPN)";
            case WcStatus.WR_FLUSH_ERR -> ": flushed, never executed — the queue pair was already in error";
            default -> "";
        };
    }

    /**
     * Returns the status.
     *
     * @return the {@code ibv_wc_status}
     */
    public int status() {
        return status;
    }

    /**
     * Returns the status name.
     *
     * @return such as {@code REM_ACCESS_ERR}
     */
    public String statusName() {
        return WcStatus.name(status);
    }

    /**
     * Returns the vendor error.
     *
     * @return the device's own code
     */
    public int vendorError() {
        return vendorError;
    }
}
