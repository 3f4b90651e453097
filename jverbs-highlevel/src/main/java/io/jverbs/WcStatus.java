package io.jverbs;

/**
 * Names of the work-completion statuses ({@code enum ibv_wc_status}), as the verbs spell them
 * without the {@code IBV_WC_} prefix, so errors print {@code REM_ACCESS_ERR}, not 10.
 */
public final class WcStatus {
    /** {@code IBV_WC_SUCCESS}. */
    public static final int SUCCESS = 0;
    /** {@code IBV_WC_WR_FLUSH_ERR}: the queue pair was in error; the request never ran. */
    public static final int WR_FLUSH_ERR = 5;
    /** {@code IBV_WC_REM_ACCESS_ERR}: the peer refused the access (wrong rkey, range or rights). */
    public static final int REM_ACCESS_ERR = 10;
    /** {@code IBV_WC_RETRY_EXC_ERR}: the peer did not answer within timeout × retry count. */
    public static final int RETRY_EXC_ERR = 12;

    private static final String[] NAMES = {
        "SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR", "WR_FLUSH_ERR", "MW_BIND_ERR",
        "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR", "REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR",
        "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR",
        "INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR", "GENERAL_ERR", "TM_ERR", "TM_RNDV_INCOMPLETE",
    };

    private WcStatus() {
    }

    /**
     * Returns the name of a status.
     *
     * @param status an {@code ibv_wc_status} value
     * @return its name, such as {@code "REM_ACCESS_ERR"}, or {@code "UNKNOWN(n)"}
     */
    public static String name(int status) {
        return status >= 0 && status < NAMES.length ? NAMES[status] : "UNKNOWN(" + status + ")";
    }
}
