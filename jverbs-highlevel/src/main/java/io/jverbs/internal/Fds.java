package io.jverbs.internal;

import io.jverbs.ibverbs.internal.NativeAccess;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** Bounded waits on a file descriptor (a completion channel, an rdma_cm event channel) with {@code poll(2)}. */
public final class Fds {
    /** {@code sizeof(struct pollfd)}. */
    public static final long POLLFD_BYTES = 8;
    private static final MethodHandle POLL = NativeAccess.downcall(Linker.nativeLinker().defaultLookup(), "libc",
            "poll", FunctionDescriptor.of(JAVA_INT, ValueLayout.ADDRESS, JAVA_LONG, JAVA_INT), false);

    private Fds() {
    }

    /**
     * Waits until {@code fd} is readable or the timeout passes (an ordinary, blocking downcall).
     *
     * @param pollfd    8 bytes of native scratch memory
     * @param fd        the descriptor
     * @param timeoutMs at most this long
     * @return true when readable
     */
    public static boolean readable(MemorySegment pollfd, int fd, int timeoutMs) {
        pollfd.set(ValueLayout.JAVA_INT, 0, fd);
        pollfd.set(ValueLayout.JAVA_SHORT, 4, (short) 1); // POLLIN
        pollfd.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
        int ready;
        try {
            ready = (int) POLL.invokeExact(pollfd, 1L, timeoutMs);
        } catch (Throwable t) {
            throw Secrets.core().rethrow(t);
        }
        return ready > 0 && (pollfd.get(ValueLayout.JAVA_SHORT, 6) & 1) != 0;
    }
}
