package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.Errno;
import io.jverbs.ibverbs.Native;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * libc {@code poll(2)} on one descriptor, so that a wait on a completion channel or an rdma_cm
 * event channel is bounded: a missing event fails the test instead of hanging the JVM; and
 * {@code gettid(2)} with {@code /proc/self/task/<tid>/syscall}, to see that a thread sleeps in a
 * blocking call.
 */
public final class Posix {
    private static final short POLLIN = 0x1;
    private static final short POLLERR = 0x8;
    private static final short POLLHUP = 0x10;
    private static final short POLLNVAL = 0x20;
    // struct pollfd { int fd; short events; short revents; }
    private static final long EVENTS = 4;
    private static final long REVENTS = 6;
    private static final MethodHandle POLL = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("poll").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT),
            Linker.Option.captureCallState("errno"));

    private Posix() {
    }

    /**
     * Waits until {@code fd} is readable.
     *
     * @return true when readable within {@code timeout}, false when the time ran out
     * @throws IllegalStateException when poll fails or reports an error on the descriptor
     */
    public static boolean awaitReadable(int fd, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pfd = arena.allocate(8, 4);
            while (true) {
                long remainingMs = Math.max(0, (deadline - System.nanoTime()) / 1_000_000);
                pfd.set(JAVA_INT, 0, fd);
                pfd.set(JAVA_SHORT, EVENTS, POLLIN);
                pfd.set(JAVA_SHORT, REVENTS, (short) 0);
                int rc;
                try {
                    rc = (int) POLL.invokeExact(Native.errnoState(), pfd, 1L, (int) Math.min(remainingMs, Integer.MAX_VALUE));
                } catch (Throwable t) {
                    throw new AssertionError(t);
                }
                if (rc > 0) {
                    short revents = pfd.get(JAVA_SHORT, REVENTS);
                    if ((revents & (POLLERR | POLLHUP | POLLNVAL)) != 0 && (revents & POLLIN) == 0) {
                        throw new IllegalStateException("poll(fd " + fd + ") reports revents 0x" + Integer.toHexString(revents));
                    }
                    return true;
                }
                if (rc == 0) {
                    if (System.nanoTime() - deadline >= 0) {
                        return false;
                    }
                    continue; // woke early (ms rounding)
                }
                int errno = Native.lastErrno();
                if (errno != Errno.EINTR) {
                    throw new IllegalStateException("poll(fd " + fd + ") failed: " + Errno.name(errno));
                }
            }
        }
    }

    private static final class Gettid {
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(
                Linker.nativeLinker().defaultLookup().find("gettid").orElseThrow(), FunctionDescriptor.of(JAVA_INT));
    }

    /** @return the kernel's id of the calling thread ({@code gettid(2)}) */
    public static int gettid() {
        try {
            return (int) Gettid.HANDLE.invokeExact();
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * @param tid a thread of this process, from {@link #gettid()}
     * @param fd  a descriptor
     * @return true when that thread is inside {@code read(2)} on {@code fd} right now (the first two
     *         fields of {@code /proc/self/task/<tid>/syscall}: the syscall number and its first argument)
     * @throws IllegalStateException when the thread is gone or the architecture's read number is unknown here
     */
    public static boolean blockedInRead(int tid, int fd) {
        int read = switch (System.getProperty("os.arch")) {
            case "amd64", "x86_64" -> 0;
            case "aarch64" -> 63;
            default -> throw new IllegalStateException("read(2)'s syscall number on " + System.getProperty("os.arch"));
        };
        String text;
        try {
            text = Files.readString(Path.of("/proc/self/task/" + tid + "/syscall")).trim();
        } catch (IOException e) {
            throw new IllegalStateException("thread " + tid + ": " + e, e);
        }
        String[] fields = text.split(" ");
        // "running" while in user space; "-1 <sp> <pc>" when blocked outside a syscall.
        return fields.length >= 2 && fields[0].equals(Integer.toString(read)) && Long.decode(fields[1]) == fd;
    }
}
