package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.raw.ibv_mr;

import java.lang.foreign.MemorySegment;

/**
 * A registered buffer.
 *
 * @param buffer the registered memory (page-aligned, native)
 * @param mr     {@code struct ibv_mr *}
 */
public record Mr(MemorySegment buffer, MemorySegment mr) {
    /** @return {@code mr->lkey} */
    public int lkey() {
        return ibv_mr.lkey(mr);
    }

    /** @return {@code mr->rkey} */
    public int rkey() {
        return ibv_mr.rkey(mr);
    }

    /** @return the address of byte {@code offset} of the buffer, as the peer uses it (iova = address) */
    public long address(long offset) {
        return buffer.address() + offset;
    }
}
