package io.jverbs.rdmacm.raw;

import io.jverbs.ibverbs.Errno;
import io.jverbs.ibverbs.Native;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The generated downcalls bind to the installed librdmacm.so.1 and capture errno; no device needed. */
class DowncallsTest {

    @Test
    void everyDeclaredFunctionIsExportedByTheInstalledLibrary() throws Exception {
        List<String> missing = new ArrayList<>();
        int bound = 0;
        for (Method m : rdma_cma_h.class.getDeclaredMethods()) {
            if (m.getName().endsWith("$handle")) {
                try {
                    m.invoke(null);
                    bound++;
                } catch (InvocationTargetException e) {
                    missing.add(m.getName() + ": " + e.getCause());
                }
            }
        }
        System.out.printf("downcalls: %d bound, %d missing%n", bound, missing.size());
        assertTrue(missing.isEmpty(), String.join("\n", missing));
        assertTrue(bound >= 35, "only " + bound + " functions");
    }

    @Test
    void aFailedCallComesWithTheCapturedErrno() {
        Native.setLastErrno(0);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment res = arena.allocate(ADDRESS);
            // No node, no service, no hints: EINVAL before librdmacm looks for devices, on any machine.
            int rc = rdma_cma_h.rdma_getaddrinfo(MemorySegment.NULL, MemorySegment.NULL, MemorySegment.NULL, res);
            assertEquals(-1, rc, "rdma_getaddrinfo(NULL, NULL, NULL, &res)");
            assertEquals(Errno.EINVAL, Native.lastErrno(), "errno captured from rdma_getaddrinfo: " + Errno.name(Native.lastErrno()));
        }
    }
}
