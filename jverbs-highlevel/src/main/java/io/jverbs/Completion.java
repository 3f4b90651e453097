package io.jverbs;

import io.jverbs.ibverbs.raw.ibv_wc;
import io.jverbs.ibverbs.raw.verbs_h;

import io.jverbs.ibverbs.internal.NativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One work completion, as a reused view over the completion queue's {@code struct ibv_wc} array:
 * valid only inside {@link CompletionHandler#onCompletion(Completion)} (kept beyond it, it shows
 * whatever the queue's next poll wrote, or the last completion once the queue is closed; never
 * freed memory). Reading it allocates nothing. Not thread-safe (it belongs to the polling thread).
 */
public final class Completion {
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    /** All of memory: the view reads its array by address (the array below can never be freed while this view is reachable). */
    private static final MemorySegment ALL = NativeAccess.everything();
    /** The {@code ibv_wc} array, from an automatic arena: it lives as long as this view, whatever closes. */
    private final MemorySegment array;
    private final long address;
    private long base;

    Completion(int entries) {
        this.array = Arena.ofAuto().allocate(ibv_wc.LAYOUT, entries);
        this.address = array.address();
        this.base = address;
    }

    /** The array the provider's poll_cq fills. */
    long arrayAddress() {
        return address;
    }

    void at(int index) {
        base = address + index * ibv_wc.sizeof();
    }

    /** The address of the {@code struct ibv_wc} this view shows now (valid inside the handler only). */
    long currentAddress() {
        return base;
    }

    /**
     * Returns the work-request id the request was posted with.
     *
     * @return the caller's work-request id
     */
    public long wrId() {
        return ALL.get(LONG, base + ibv_wc.wr_id$OFFSET);
    }

    /**
     * Returns the status.
     *
     * @return an {@code ibv_wc_status} ({@link WcStatus#SUCCESS} = 0)
     */
    public int status() {
        return ALL.get(INT, base + ibv_wc.status$OFFSET);
    }

    /**
     * Returns whether the request succeeded.
     *
     * @return true when the status is SUCCESS
     */
    public boolean isSuccess() {
        return status() == WcStatus.SUCCESS;
    }

    /**
     * Returns the status name.
     *
     * @return such as {@code "SUCCESS"} or {@code "REM_ACCESS_ERR"} (constant strings: no allocation)
     */
    public String statusName() {
        return WcStatus.name(status());
    }

    /**
     * Returns the opcode; valid only when the request succeeded.
     *
     * @return an {@code ibv_wc_opcode}
     */
    public int opcode() {
        return ALL.get(INT, base + ibv_wc.opcode$OFFSET);
    }

    /**
     * Returns whether this completes a receive (as opposed to a send-side request).
     *
     * @return true for receive completions; valid only on success
     */
    public boolean isReceive() {
        return (opcode() & verbs_h.IBV_WC_RECV) != 0;
    }

    /**
     * Returns the vendor error.
     *
     * @return the device's own error code (0 on success)
     */
    public int vendorError() {
        return ALL.get(INT, base + ibv_wc.vendor_err$OFFSET);
    }

    /**
     * Returns the bytes received (receives and RDMA Write with immediate).
     *
     * @return bytes
     */
    public int byteLength() {
        return ALL.get(INT, base + ibv_wc.byte_len$OFFSET);
    }

    /**
     * Returns whether immediate data came with this receive.
     *
     * @return true when {@link #immediateData()} is meaningful
     */
    public boolean hasImmediate() {
        return (ALL.get(INT, base + ibv_wc.wc_flags$OFFSET) & verbs_h.IBV_WC_WITH_IMM) != 0;
    }

    /**
     * Returns the immediate data, in host order.
     *
     * @return the 32-bit value the sender attached
     */
    public int immediateData() {
        return Integer.reverseBytes(ALL.get(INT, base + ibv_wc.imm_data$OFFSET));
    }

    /**
     * Returns the local queue pair number.
     *
     * @return the QP number this completion belongs to
     */
    public int qpNumber() {
        return ALL.get(INT, base + ibv_wc.qp_num$OFFSET);
    }

    /**
     * Returns the sender's queue pair number: meaningful for a receive on a datagram (UD) queue
     * pair, where it says which remote queue pair sent the message.
     *
     * @return {@code src_qp} of the completion
     */
    public int sourceQueuePair() {
        return ALL.get(INT, base + ibv_wc.src_qp$OFFSET);
    }

    @Override
    public String toString() {
        return "completion wr_id " + wrId() + " " + statusName() + (isSuccess() ? " opcode " + opcode() : " vendor_err 0x"
                + Integer.toHexString(vendorError())) + " qp " + qpNumber();
    }
}
