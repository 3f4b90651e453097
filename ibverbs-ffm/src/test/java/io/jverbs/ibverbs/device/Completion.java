package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.raw.ibv_wc;
import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * A copy of one {@code struct ibv_wc}, taken while the entry was valid.
 *
 * @param wrId       {@code wr_id}
 * @param status     {@code status} ({@code IBV_WC_*})
 * @param opcode     {@code opcode} ({@code IBV_WC_SEND}, {@code IBV_WC_RECV}, ...)
 * @param vendorErr  {@code vendor_err}
 * @param byteLen    {@code byte_len}
 * @param immDataRaw {@code imm_data} exactly as stored (network byte order in memory)
 * @param immBytes   the four bytes of {@code imm_data} in memory order
 * @param qpNum      {@code qp_num}
 * @param srcQp      {@code src_qp}
 * @param wcFlags    {@code wc_flags}
 */
public record Completion(long wrId, int status, int opcode, int vendorErr, int byteLen, int immDataRaw, byte[] immBytes,
                         int qpNum, int srcQp, int wcFlags) {

    /** Copies the entry at {@code wc}. */
    public static Completion read(MemorySegment wc) {
        return new Completion(ibv_wc.wr_id(wc), ibv_wc.status(wc), ibv_wc.opcode(wc), ibv_wc.vendor_err(wc),
                ibv_wc.byte_len(wc), ibv_wc.imm_data(wc),
                wc.asSlice(ibv_wc.imm_data$OFFSET, 4).toArray(JAVA_BYTE),
                ibv_wc.qp_num(wc), ibv_wc.src_qp(wc), ibv_wc.wc_flags(wc));
    }

    /** @return the status as libibverbs names it ({@code ibv_wc_status_str}) */
    public String statusText() {
        return verbs_h.ibv_wc_status_str(status).reinterpret(128).getString(0);
    }

    @Override
    public String toString() {
        return "wc{wr_id=" + wrId + ", status=" + status + " (" + statusText() + "), opcode=" + opcode + ", vendor_err="
                + vendorErr + ", byte_len=" + byteLen + ", qp_num=" + qpNum + ", src_qp=" + srcQp + ", wc_flags=0x"
                + Integer.toHexString(wcFlags) + "}";
    }
}
