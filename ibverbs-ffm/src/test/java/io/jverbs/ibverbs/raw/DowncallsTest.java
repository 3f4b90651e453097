package io.jverbs.ibverbs.raw;

import io.jverbs.ibverbs.Errno;
import io.jverbs.ibverbs.Native;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The generated downcalls bind to the installed libibverbs.so.1 and capture errno; no device needed. */
class DowncallsTest {

    @Test
    void everyDeclaredFunctionIsExportedByTheInstalledLibrary() throws Exception {
        List<String> missing = new ArrayList<>();
        int bound = 0;
        for (Method m : verbs_h.class.getDeclaredMethods()) {
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
        assertTrue(bound >= 60, "only " + bound + " functions");
    }

    @Test
    void aNullResultComesWithTheCapturedErrno() {
        Native.setLastErrno(0);
        // ibv_import_device fails before it looks for devices when fstat(cmd_fd) fails: EINVAL on any machine.
        MemorySegment context = verbs_h.ibv_import_device(-1);
        assertEquals(0, context.address(), "ibv_import_device(-1)");
        assertEquals(Errno.EINVAL, Native.lastErrno(), "errno captured from ibv_import_device(-1): " + Errno.name(Native.lastErrno()));
    }
}
