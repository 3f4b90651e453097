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

    private static final MethodHandle EVENTFD = NativeAccess.downcall(Linker.nativeLinker().defaultLookup(), "libc",
            "eventfd", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT), false);
    private static final MethodHandle WRITE = NativeAccess.downcall(Linker.nativeLinker().defaultLookup(), "libc",
            "write", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ValueLayout.ADDRESS, JAVA_LONG), false);
    private static final MethodHandle READ = NativeAccess.downcall(Linker.nativeLinker().defaultLookup(), "libc",
            "read", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ValueLayout.ADDRESS, JAVA_LONG), false);
    private static final MethodHandle CLOSE = NativeAccess.downcall(Linker.nativeLinker().defaultLookup(), "libc",
            "close", FunctionDescriptor.of(JAVA_INT, JAVA_INT), false);
    /** {@code EFD_NONBLOCK | EFD_CLOEXEC}. */
    private static final int EFD_FLAGS = 0x800 | 0x80000;

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
        watch(pollfd, 0, fd);
        return poll(pollfd, 1, timeoutMs) > 0 && readable(pollfd, 0);
    }

    /** Fills entry {@code i} of a {@code struct pollfd} array: {@code fd}, POLLIN, no events yet. */
    private static void watch(MemorySegment pollfds, int i, int fd) {
        pollfds.set(ValueLayout.JAVA_INT, i * POLLFD_BYTES, fd);
        pollfds.set(ValueLayout.JAVA_SHORT, i * POLLFD_BYTES + 4, (short) 1); // POLLIN
        pollfds.set(ValueLayout.JAVA_SHORT, i * POLLFD_BYTES + 6, (short) 0);
    }

    /** Whether entry {@code i} came back with POLLIN. */
    private static boolean readable(MemorySegment pollfds, int i) {
        return (pollfds.get(ValueLayout.JAVA_SHORT, i * POLLFD_BYTES + 6) & 1) != 0;
    }

    /** {@code poll(2)} on the first {@code count} entries: how many are ready. */
    private static int poll(MemorySegment pollfds, int count, int timeoutMs) {
        try {
            return (int) POLL.invokeExact(pollfds, (long) count, timeoutMs);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /**
     * Waits until one of {@code count} descriptors of {@code pollfds} is readable or the timeout
     * passes (an ordinary, blocking downcall).
     *
     * @param pollfds   {@code count * POLLFD_BYTES} bytes of native scratch memory
     * @param fds       the descriptors
     * @param count     how many of {@code fds}
     * @param timeoutMs at most this long (0: look without waiting)
     * @return bit i set when {@code fds[i]} is readable
     */
    public static int readableOf(MemorySegment pollfds, int[] fds, int count, int timeoutMs) {
        for (int i = 0; i < count; i++) {
            watch(pollfds, i, fds[i]);
        }
        int mask = 0;
        if (poll(pollfds, count, timeoutMs) > 0) {
            for (int i = 0; i < count; i++) {
                mask |= readable(pollfds, i) ? 1 << i : 0;
            }
        }
        return mask;
    }

    /**
     * Makes a non-blocking {@code eventfd(2)}: a descriptor another thread makes readable with
     * {@link #signal} to wake a {@code poll(2)}.
     *
     * @return the descriptor
     * @throws IllegalStateException when the kernel refuses one
     */
    public static int eventFd() {
        int fd;
        try {
            fd = (int) EVENTFD.invokeExact(0, EFD_FLAGS);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
        if (fd < 0) {
            throw new IllegalStateException("eventfd failed: the process may be out of file descriptors (ulimit -n)");
        }
        return fd;
    }

    /**
     * Makes an {@link #eventFd()} readable (adds 1 to its counter).
     *
     * @param scratch 8 bytes of native memory the caller owns for this call
     * @param fd      the descriptor
     */
    public static void signal(MemorySegment scratch, int fd) {
        scratch.set(ValueLayout.JAVA_LONG, 0, 1L);
        try {
            long ignored = (long) WRITE.invokeExact(fd, scratch, 8L);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /**
     * Takes an {@link #eventFd()}'s counter back to 0 (not readable any more).
     *
     * @param scratch 8 bytes of native memory the caller owns for this call
     * @param fd      the descriptor
     */
    public static void drain(MemorySegment scratch, int fd) {
        try {
            long ignored = (long) READ.invokeExact(fd, scratch, 8L);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /**
     * Closes a descriptor made by {@link #eventFd()}.
     *
     * @param fd the descriptor
     */
    public static void close(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }
}
