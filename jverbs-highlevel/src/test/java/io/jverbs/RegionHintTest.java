package io.jverbs;

import io.jverbs.ibverbs.Errno;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The ENOMEM hint of a registration over Soft-RoCE's 1 GiB per region, and only there; the EFAULT hint everywhere. */
class RegionHintTest {
    private static final long OVER = ProtectionDomain.RXE_REGION_LIMIT + 4096;

    @Test
    void namesTheOneGibibyteLimitOnSoftRoce() {
        String hint = ProtectionDomain.regionHint(Errno.ENOMEM, OVER, true);
        assertTrue(hint != null && hint.contains("at most 1 GiB") && hint.contains(Long.toString(OVER)), hint);
    }

    @Test
    void explainsAFaultAnywhere() {
        String hint = ProtectionDomain.regionHint(Errno.EFAULT, 4096, false);
        assertTrue(hint != null && hint.contains("pin"), hint);
    }

    @Test
    void saysNothingOfItElsewhere() {
        assertNull(ProtectionDomain.regionHint(Errno.ENOMEM, OVER, false), "hardware devices have no such limit");
        assertNull(ProtectionDomain.regionHint(Errno.ENOMEM, ProtectionDomain.RXE_REGION_LIMIT, true), "1 GiB fits");
        assertNull(ProtectionDomain.regionHint(Errno.EINVAL, OVER, true), "another errno is another cause");
    }
}
