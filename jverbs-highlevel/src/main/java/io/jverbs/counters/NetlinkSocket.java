package io.jverbs.counters;

import io.jverbs.ibverbs.Native;
import io.jverbs.ibverbs.VerbsException;
import io.jverbs.ibverbs.internal.NativeAccess;
import io.jverbs.internal.Unchecked;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A NETLINK_RDMA socket through libc's {@code socket}, {@code setsockopt}, {@code send},
 * {@code recv} and {@code close} (ordinary FFM downcalls, no native code of jverbs'), with a
 * receive timeout so that a silent kernel cannot hang a read. One request at a time; not
 * thread-safe (callers synchronize).
 */
final class NetlinkSocket implements AutoCloseable {
    private static final int AF_NETLINK = 16;
    private static final int SOCK_RAW = 3;
    private static final int SOCK_CLOEXEC = 0x80000;
    private static final int SOL_SOCKET = 1;
    private static final int SO_RCVTIMEO = 20;
    private static final int BUFFER = 1 << 16;
    private static final SymbolLookup LIBC = Linker.nativeLinker().defaultLookup();
    private static final MethodHandle SOCKET = NativeAccess.downcall(LIBC, "libc", "socket",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT), true);
    private static final MethodHandle SETSOCKOPT = NativeAccess.downcall(LIBC, "libc", "setsockopt",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT), true);
    private static final MethodHandle SEND = NativeAccess.downcall(LIBC, "libc", "send",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT), true);
    private static final MethodHandle RECV = NativeAccess.downcall(LIBC, "libc", "recv",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT), true);
    private static final MethodHandle CLOSE = NativeAccess.downcall(LIBC, "libc", "close",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT), false);
    private static final AtomicInteger SEQ = new AtomicInteger((int) (System.nanoTime() & 0xffff));

    private final Arena arena = Arena.ofShared();
    private final MemorySegment buffer = arena.allocate(BUFFER, 8);
    private final int fd;

    /**
     * Opens the socket.
     *
     * @param timeoutMs the most a {@code recv} waits
     * @throws VerbsException naming {@code socket(AF_NETLINK, NETLINK_RDMA)} and errno (EPROTONOSUPPORT
     *                        on a kernel without RDMA netlink)
     */
    NetlinkSocket(int timeoutMs) {
        int s;
        int errno;
        try {
            s = (int) SOCKET.invokeExact(Native.errnoState(), AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, Netlink.NETLINK_RDMA);
            errno = Native.lastErrno();
        } catch (Throwable t) {
            arena.close();
            throw Unchecked.of(t);
        }
        if (s < 0) {
            arena.close();
            throw VerbsException.of("socket(AF_NETLINK, NETLINK_RDMA)", errno);
        }
        fd = s;
        MemorySegment tv = arena.allocate(16, 8);
        tv.set(ValueLayout.JAVA_LONG, 0, timeoutMs / 1000);
        tv.set(ValueLayout.JAVA_LONG, 8, (timeoutMs % 1000) * 1000L);
        try {
            int rc = (int) SETSOCKOPT.invokeExact(Native.errnoState(), fd, SOL_SOCKET, SO_RCVTIMEO, tv, 16);
            if (rc != 0) {
                int e = Native.lastErrno();
                close();
                throw VerbsException.of("setsockopt(SO_RCVTIMEO) on NETLINK_RDMA", e);
            }
        } catch (VerbsException e) {
            throw e;
        } catch (Throwable t) {
            close();
            throw Unchecked.of(t);
        }
    }

    static int nextSeq() {
        return SEQ.incrementAndGet();
    }

    /**
     * Sends one request and collects the answer: every message up to NLMSG_DONE for a dump, the
     * first message for a plain request.
     *
     * @param request what {@link Netlink#request} built
     * @param dump    whether it is a dump
     * @param what    the request's name, for errors
     * @return the answer's messages (NLMSG_DONE and acknowledgements left out)
     * @throws VerbsException when the kernel answers with an error (its errno), or send/recv fail
     *                        (EAGAIN when the timeout passed)
     */
    List<Netlink.Message> exchange(byte[] request, boolean dump, String what) {
        int seq = ByteBuffer.wrap(request).order(java.nio.ByteOrder.nativeOrder()).getInt(8);
        MemorySegment.copy(request, 0, buffer, ValueLayout.JAVA_BYTE, 0, request.length);
        try {
            long sent = (long) SEND.invokeExact(Native.errnoState(), fd, buffer, (long) request.length, 0);
            if (sent != request.length) {
                throw VerbsException.of("send(" + what + ") on NETLINK_RDMA", sent < 0 ? Native.lastErrno() : 5);
            }
            List<Netlink.Message> out = new ArrayList<>();
            while (true) {
                long n = (long) RECV.invokeExact(Native.errnoState(), fd, buffer, (long) BUFFER, 0);
                if (n < 0) {
                    throw VerbsException.of("recv(" + what + ") on NETLINK_RDMA", Native.lastErrno());
                }
                if (n == 0) {
                    throw VerbsException.of("recv(" + what + ") on NETLINK_RDMA: end of stream", 5);
                }
                byte[] copy = new byte[(int) n];
                MemorySegment.copy(buffer, ValueLayout.JAVA_BYTE, 0, copy, 0, (int) n);
                for (Netlink.Message m : Netlink.messages(ByteBuffer.wrap(copy))) {
                    if (m.seq() != seq) {
                        continue; // a late answer to an earlier, timed-out request
                    }
                    if (m.type() == Netlink.NLMSG_DONE) {
                        // A dump that failed says so here: a negative errno as the payload.
                        int code = m.body().remaining() >= 4 ? m.error() : 0;
                        if (code < 0) {
                            throw VerbsException.of(what + " (netlink RDMA_NLDEV dump)", -code);
                        }
                        return out;
                    }
                    if (m.type() == Netlink.NLMSG_ERROR) {
                        int code = m.error();
                        if (code == 0) {
                            return out;
                        }
                        throw VerbsException.of(what + " (netlink RDMA_NLDEV)", -code);
                    }
                    out.add(m);
                    if (!dump) {
                        return out;
                    }
                }
            }
        } catch (VerbsException | IllegalArgumentException e) {
            throw e;
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    @Override
    public void close() {
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        } finally {
            arena.close();
        }
    }
}
