package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.raw.ibv_wc;
import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/** Bounded polling of a CQ through {@link InlineVerbs#ibv_poll_cq}. */
public final class Completions {
    /** How long a completion may take under QEMU TCG (Java there runs about 10x slower). */
    public static final Duration TIMEOUT = Duration.ofSeconds(30);

    private Completions() {
    }

    /**
     * Polls until one completion arrives.
     *
     * @param cq      {@code struct ibv_cq *}
     * @param what    what is awaited, for the failure message
     * @param timeout the bound
     * @return the completion, whatever its status
     */
    public static Completion awaitOne(MemorySegment cq, String what, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment wc = arena.allocate(ibv_wc.LAYOUT);
            for (int spins = 0; ; spins++) {
                int n = InlineVerbs.ibv_poll_cq(cq, 1, wc);
                if (n < 0) {
                    fail("ibv_poll_cq returned " + n + " while waiting for " + what);
                }
                if (n == 1) {
                    return Completion.read(wc);
                }
                if (System.nanoTime() - deadline >= 0) {
                    return fail("no completion for " + what + " within " + timeout.toSeconds() + " s");
                }
                // Spin briefly, then back off: under TCG the kernel's rxe work needs the vCPU more than we do.
                if (spins > 100) {
                    LockSupport.parkNanos(200_000);
                } else {
                    Thread.onSpinWait();
                }
            }
        }
    }

    /** {@link #awaitOne(MemorySegment, String, Duration)} with {@link #TIMEOUT}. */
    public static Completion awaitOne(MemorySegment cq, String what) {
        return awaitOne(cq, what, TIMEOUT);
    }

    /** Awaits one completion and checks that it succeeded with the expected opcode and wr_id. */
    public static Completion awaitSuccess(MemorySegment cq, String what, int opcode, long wrId) {
        Completion wc = awaitOne(cq, what);
        assertEquals(verbs_h.IBV_WC_SUCCESS, wc.status(), what + ": " + wc);
        assertEquals(opcode, wc.opcode(), what + " opcode: " + wc);
        assertEquals(wrId, wc.wrId(), what + " wr_id: " + wc);
        return wc;
    }

    /** Checks that the CQ holds no further completion right now. */
    public static void assertEmpty(MemorySegment cq, String what) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment wc = arena.allocate(ibv_wc.LAYOUT);
            int n = InlineVerbs.ibv_poll_cq(cq, 1, wc);
            if (n != 0) {
                fail(what + ": expected no more completions, ibv_poll_cq returned " + n
                        + (n == 1 ? ": " + Completion.read(wc) : ""));
            }
        }
    }
}
