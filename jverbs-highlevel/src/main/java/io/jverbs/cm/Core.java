package io.jverbs.cm;

import io.jverbs.CompletionQueue;
import io.jverbs.DatagramQueuePair;
import io.jverbs.MemoryWindow;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.Resource;
import io.jverbs.internal.Unchecked;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * The core's package-private steps that connection management drives: a queue pair's state
 * through the rdma_cm handshake, its owner, the quiet requests of an accept, and where a datagram
 * queue pair sends from. They are not public API (a caller could break a connection's invariants
 * with them), and {@code io.jverbs} names no type of this package: so they are reached through
 * method handles, looked up once with the module's own private access when this class
 * initializes. A renamed or retyped method fails that initialization, and with it
 * {@code CoreTest}, not a connection at run time.
 *
 * <p>Each handle is a {@code static final} constant: the JIT inlines {@code invokeExact} as a direct
 * call. Exceptions of the target pass through unchanged.
 */
final class Core {
    private static final MethodHandles.Lookup CORE;

    static {
        try {
            CORE = MethodHandles.privateLookupIn(QueuePair.class, MethodHandles.lookup());
        } catch (IllegalAccessException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static final MethodHandle REQUIRE_PREPARED = virtual(QueuePair.class, "requirePrepared", void.class);
    private static final MethodHandle MARK_CONNECTED = virtual(QueuePair.class, "markConnected", void.class);
    private static final MethodHandle ABANDON_CONNECT = virtual(QueuePair.class, "abandonConnect", void.class);
    private static final MethodHandle CONNECT_ACCESS_FLAGS = virtual(QueuePair.class, "connectAccessFlags", int.class);
    private static final MethodHandle TRANSITION =
            virtual(QueuePair.class, "transition", void.class, MemorySegment.class, int.class);
    private static final MethodHandle OWNED_BY = virtual(QueuePair.class, "ownedBy", void.class, Runnable.class);
    private static final MethodHandle PEER_DISCONNECTED =
            virtual(QueuePair.class, "peerDisconnected", void.class, String.class);
    private static final MethodHandle SEND_QUIETLY = virtual(QueuePair.class, "sendQuietly",
            java.util.concurrent.CompletableFuture.class, RegisteredBuffer.class, int.class);
    private static final MethodHandle OFFER_PROBLEM =
            virtual(ProtectionDomain.class, "offerProblem", String.class, QueuePair.class, RemoteBuffer.class);
    private static final MethodHandle BIND = virtual(MemoryWindow.class, "bind",
            java.util.concurrent.CompletableFuture.class, boolean.class);
    private static final MethodHandle CONTEXT_NAME = virtual(CompletionQueue.class, "contextName", String.class);
    private static final MethodHandle ENSURE_OPEN = virtual(Resource.class, "ensureOpen", void.class, String.class);
    private static final MethodHandle DEVICE_NAME = virtual(DatagramQueuePair.class, "deviceName", String.class);
    private static final MethodHandle GID_INDEX = virtual(DatagramQueuePair.class, "gidIndex", int.class);
    private static final MethodHandle PORT_NUMBER = virtual(DatagramQueuePair.class, "portNumber", int.class);

    private Core() {
    }

    private static MethodHandle virtual(Class<?> owner, String name, Class<?> returns, Class<?>... parameters) {
        try {
            return CORE.findVirtual(owner, name, MethodType.methodType(returns, parameters));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Throws unless the queue pair is in PREPARED, ready for rdma_cm to connect it. */
    static void requirePrepared(QueuePair qp) {
        try {
            REQUIRE_PREPARED.invokeExact(qp);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /** The handshake ended: the queue pair is CONNECTED. */
    static void markConnected(QueuePair qp) {
        try {
            MARK_CONNECTED.invokeExact(qp);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /** The handshake failed: the queue pair goes to ERROR and fails what it holds. */
    static void abandonConnect(QueuePair qp) {
        try {
            ABANDON_CONNECT.invokeExact(qp);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /** The remote rights the queue pair grants once connected. */
    static int connectAccessFlags(QueuePair qp) {
        try {
            return (int) CONNECT_ACCESS_FLAGS.invokeExact(qp);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /** {@code ibv_modify_qp} with rdma_cm's attributes, under the queue pair's lock. */
    static void transition(QueuePair qp, MemorySegment attr, int mask) {
        try {
            TRANSITION.invokeExact(qp, attr, mask);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /** The queue pair's close runs {@code release} (its rdma_cm id) first. */
    static void ownedBy(QueuePair qp, Runnable release) {
        try {
            OWNED_BY.invokeExact(qp, release);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /** The peer left: what the queue pair holds fails with {@code why}. */
    static void peerDisconnected(QueuePair qp, String why) {
        try {
            PEER_DISCONNECTED.invokeExact(qp, why);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /** A Send of jverbs' own, exempt from the unattended-queue deadline. */
    static void sendQuietly(QueuePair qp, RegisteredBuffer local, int length) {
        try {
            var ignored = (java.util.concurrent.CompletableFuture<?>) SEND_QUIETLY.invokeExact(qp, local, length);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /** Why {@code qp} cannot offer {@code offered} to its peer, or null when it can. */
    static String offerProblem(QueuePair qp, RemoteBuffer offered) {
        try {
            return (String) OFFER_PROBLEM.invokeExact(qp.protectionDomain(), qp, offered);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /** Binds the window on its queue pair as jverbs' own request (no unattended deadline). */
    static void bindQuietly(MemoryWindow window) {
        try {
            var ignored = (java.util.concurrent.CompletableFuture<?>) BIND.invokeExact(window, true);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /** The name of the device the completion queue belongs to. */
    static String contextName(CompletionQueue cq) {
        try {
            return (String) CONTEXT_NAME.invokeExact(cq);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /** Throws when the resource is closed, naming {@code operation}. */
    static void ensureOpen(Resource resource, String operation) {
        try {
            ENSURE_OPEN.invokeExact(resource, operation);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /** The device the datagram queue pair is on. */
    static String deviceName(DatagramQueuePair qp) {
        try {
            return (String) DEVICE_NAME.invokeExact(qp);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /** The GID index the datagram queue pair sends from. */
    static int gidIndex(DatagramQueuePair qp) {
        try {
            return (int) GID_INDEX.invokeExact(qp);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }

    /** The port the datagram queue pair is on. */
    static int portNumber(DatagramQueuePair qp) {
        try {
            return (int) PORT_NUMBER.invokeExact(qp);
        } catch (Throwable t) {
            throw Unchecked.of(t);
        }
    }
}
