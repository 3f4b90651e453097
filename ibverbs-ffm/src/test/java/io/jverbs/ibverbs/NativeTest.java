package io.jverbs.ibverbs;

import io.jverbs.ibverbs.internal.NativeAccess;
import io.jverbs.ibverbs.raw.verbs_h;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Loading, errno capture and error messages, on any machine (no RDMA device needed). */
class NativeTest {
    /** Linux x86-64 and arm64 errno for a bad file descriptor. */
    private static final int EBADF = 9;

    @Test
    void deviceListWithoutKernelSupportIsNullWithEnosysNotACrash() {
        boolean kernelHasRdma = Files.isDirectory(Path.of("/sys/class/infiniband_verbs"));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment num = arena.allocate(JAVA_INT);
            num.set(JAVA_INT, 0, -7);
            MemorySegment list = verbs_h.ibv_get_device_list(num);
            if (kernelHasRdma) {
                assertNotEquals(0, list.address(), "ibv_get_device_list with kernel RDMA support");
                assertTrue(num.get(JAVA_INT, 0) >= 0);
                verbs_h.ibv_free_device_list(list);
            } else {
                assertEquals(0, list.address(), "no kernel RDMA support: NULL list");
                assertEquals(Errno.ENOSYS, Native.lastErrno(), "errno captured: " + Errno.name(Native.lastErrno()));
                VerbsException e = VerbsException.of("ibv_get_device_list", Native.lastErrno());
                assertTrue(e.getMessage().startsWith("ibv_get_device_list failed: ENOSYS (38). "), e.getMessage());
                assertTrue(e.getMessage().contains("rdma_rxe"), e.getMessage());
            }
        }
    }

    /**
     * Two threads capture different errno values, one after the other, then each reads its own;
     * a third thread's value stays untouched. Fails if the capture state is shared between threads
     * (each would read the other's errno) or if the capture never reaches what lastErrno reads.
     */
    @Test
    void errnoIsPerThread() throws Exception {
        MethodHandle close = Linker.nativeLinker().downcallHandle(Linker.nativeLinker().defaultLookup().find("close").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, JAVA_INT), Linker.Option.captureCallState("errno"));
        Native.setLastErrno(4242);
        CountDownLatch aCaptured = new CountDownLatch(1);
        CountDownLatch bCaptured = new CountDownLatch(1);
        int[] a = new int[2];
        int[] b = new int[1];
        Thread threadA = Thread.ofPlatform().start(() -> {
            MemorySegment none = verbs_h.ibv_import_device(-1); // fstat(-1) fails: NULL, errno EINVAL, on any machine
            a[0] = none.address() == 0 ? Native.lastErrno() : -1;
            aCaptured.countDown();
            await(bCaptured);
            a[1] = Native.lastErrno();
        });
        Thread threadB = Thread.ofPlatform().start(() -> {
            await(aCaptured);
            try {
                b[0] = (int) close.invokeExact(Native.errnoState(), -1) == -1 ? Native.lastErrno() : -1; // EBADF
            } catch (Throwable t) {
                throw new AssertionError(t);
            }
            bCaptured.countDown();
        });
        threadA.join(10_000);
        threadB.join(10_000);
        assertEquals(Errno.EINVAL, a[0], "thread A: errno of ibv_import_device(-1)");
        assertEquals(EBADF, b[0], "thread B: errno of close(-1), captured after A's");
        assertEquals(Errno.EINVAL, a[1], "thread A after B's capture: still its own errno");
        assertEquals(4242, Native.lastErrno(), "the test thread's errno, untouched by A and B");
    }

    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(10, TimeUnit.SECONDS)) {
                throw new AssertionError("the other thread did not get there in 10 s");
            }
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void missingLibraryNamesThePackage() {
        UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class,
                () -> NativeAccess.load("libjverbs-does-not-exist.so.1", "jverbs-missing-pkg"));
        assertTrue(e.getMessage().contains("apt-get install jverbs-missing-pkg"), e.getMessage());
    }

    @Test
    void missingSymbolIsUnsupportedNotACrash() {
        UnsupportedVerbException e = assertThrows(UnsupportedVerbException.class, () -> NativeAccess.downcall(NativeAccess.libibverbs(),
                "libibverbs.so.1", "ibv_jverbs_no_such_verb", java.lang.foreign.FunctionDescriptor.ofVoid(), false));
        assertEquals("ibv_jverbs_no_such_verb", e.verb());
        assertTrue(e.getMessage().contains("not exported"), e.getMessage());
    }

    @Test
    void messagesNameTheVerbTheErrnoAndTheFix() {
        assertEquals("ibv_create_qp failed: EINVAL (22)", VerbsException.of("ibv_create_qp", 22).getMessage());
        assertEquals("ibv_create_qp failed: EINVAL (22)", VerbsException.of("ibv_create_qp", -22).getMessage());
        String enomem = VerbsException.of("ibv_reg_mr", Errno.ENOMEM).getMessage();
        assertTrue(enomem.contains("ulimit -l") || enomem.contains("already unlimited"), enomem);
        // the hint follows the process's limit: raise a finite one; with none, look elsewhere
        assertTrue(VerbsException.memlockHint("8388608").contains("(8388608 bytes) is probably too low"));
        assertTrue(VerbsException.memlockHint("8388608").contains("ulimit -l unlimited"));
        assertTrue(VerbsException.memlockHint("unlimited").contains("already unlimited"));
        assertFalse(VerbsException.memlockHint("unlimited").contains("ulimit -l"));
        assertTrue(VerbsException.of("ibv_open_device", Errno.ENODEV).getMessage().contains("rdma link add"));
        // A library user has no checkout of jverbs: the message says what to install and enable,
        // and names the rig only as part of the jverbs repository.
        String nosys = VerbsException.of("ibv_get_device_list", Errno.ENOSYS).getMessage();
        assertTrue(nosys.contains("rdma-core") && nosys.contains("ibverbs-providers"), nosys);
        assertTrue(nosys.contains("modprobe rdma_rxe; rdma link add rxe0 type rxe netdev IFACE"), nosys);
        assertTrue(nosys.contains("soft-roce-ci in the jverbs repository"), nosys);
        for (int errno : new int[]{Errno.ENOSYS, Errno.ENODEV}) {
            String m = VerbsException.of("ibv_open_device", errno).getMessage();
            assertFalse(m.contains("soft-roce-ci/"), "no path into a checkout: " + m);
        }
        assertTrue(VerbsException.of("ibv_open_device", Errno.EACCES).getMessage().contains("/dev/infiniband"));
        assertTrue(VerbsException.of("rdma_reg_msgs", Errno.ENOMEM).getMessage().contains("ulimit -l"));
        assertFalse(VerbsException.of("ibv_create_qp", Errno.ENOSYS).getMessage().contains("kernel"),
                "ENOSYS from a provider verb is not about the kernel");
        assertFalse(VerbsException.of("rdma_bind_addr", Errno.EACCES).getMessage().contains("/dev/infiniband"));
        assertTrue(VerbsException.of("ibv_modify_qp", Errno.EOPNOTSUPP) instanceof UnsupportedVerbException);
        assertFalse(VerbsException.of("ibv_modify_qp", Errno.EINVAL) instanceof UnsupportedVerbException);
        assertEquals("errno 4000", Errno.name(4000));
        VerbsException e = assertThrows(VerbsException.class, () -> VerbsException.check("ibv_get_cq_event", -1, Errno.EAGAIN));
        assertEquals(Errno.EAGAIN, e.errno());
        VerbsException.check("ibv_modify_qp", 0, 0);
    }

    /** A JVM that denies native access must get an error naming the exact flag, whatever it touches first. */
    @ParameterizedTest
    @ValueSource(classes = {LoadLibIbverbs.class, TouchInlineVerbs.class})
    void deniedNativeAccessNamesTheFlag(Class<?> entryPoint) throws Exception {
        String java = ProcessHandle.current().info().command().orElse(System.getProperty("java.home") + "/bin/java");
        Process p = new ProcessBuilder(List.of(java, "--illegal-native-access=deny", "-cp", System.getProperty("java.class.path"),
                entryPoint.getName())).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertNotEquals(0, p.exitValue(), out);
        assertTrue(out.contains("--enable-native-access=ALL-UNNAMED"), out);
    }

    /** Entry point of a child JVM of {@link #deniedNativeAccessNamesTheFlag}: the inline verbs first. */
    public static final class TouchInlineVerbs {
        public static void main(String[] args) {
            InlineVerbs.ibv_post_send(MemorySegment.NULL, MemorySegment.NULL, MemorySegment.NULL);
            System.out.println("posted without native access?");
        }
    }

    /** Entry point of a child JVM of {@link #deniedNativeAccessNamesTheFlag}: the library first. */
    public static final class LoadLibIbverbs {
        public static void main(String[] args) {
            NativeAccess.libibverbs();
            System.out.println("loaded without native access?");
        }
    }
    /**
     * A pinned function-pointer handle binds the first address pinned as a constant; a second
     * function through the same handle must still be called, not the pinned one, before and after
     * the JIT compiles the caller. toupper and tolower share a signature and differ in result, so
     * a wrong dispatch shows as a wrong letter.
     */
    @Test
    void pointerDowncallCallsEachAddressAfterPinningTheFirst() throws Throwable {
        NativeAccess.PinnedDowncall pinnable = NativeAccess.pinnableDowncall(FunctionDescriptor.of(JAVA_INT, JAVA_INT),
                true);
        MethodHandle h = pinnable.invoker();
        Linker linker = Linker.nativeLinker();
        MemorySegment upper = linker.defaultLookup().find("toupper").orElseThrow();
        MemorySegment lower = linker.defaultLookup().find("tolower").orElseThrow();
        assertEquals('b', (int) h.invokeExact(lower, (int) 'B'), "tolower before any pin");
        pinnable.pin(upper);
        pinnable.pin(lower); // the first pin wins: lower stays on the address-less branch
        for (int i = 0; i < 50_000; i++) {
            assertEquals('A', (int) h.invokeExact(upper, (int) 'a'), "toupper through the pinned address, round " + i);
            assertEquals('b', (int) h.invokeExact(lower, (int) 'B'), "tolower through the same handle, round " + i);
        }
        assertThrows(IllegalArgumentException.class, () -> {
            int ignored = (int) h.invokeExact(MemorySegment.NULL, (int) 'a');
        }, "a NULL function pointer is still refused");
    }
}
