package io.jverbs.ibverbs.internal;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** rdma-core is loaded only where the generated layouts were checked: Linux on x86-64. */
class ArchitectureCheckTest {
    @Test
    void loadsOnLinuxX86() {
        assertDoesNotThrow(() -> NativeAccess.checkArchitecture("Linux", "amd64"));
    }

    @Test
    void refusesAnotherArchitectureNamingTheCheckedOnes() {
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> NativeAccess.checkArchitecture("Linux", "aarch64"));
        assertTrue(e.getMessage().contains("x86-64") && e.getMessage().contains("aarch64"), e.getMessage());
        assertThrows(UnsupportedOperationException.class, () -> NativeAccess.checkArchitecture("Mac OS X", "amd64"));
    }
}
