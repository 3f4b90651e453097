package io.jverbs.internal;

import io.jverbs.Completion;
import io.jverbs.CompletionQueue;
import io.jverbs.PostList;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueueEndpoint;
import io.jverbs.QueuePair;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.Resource;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * The operations of the core package ({@code io.jverbs}) that its sibling packages
 * ({@code io.jverbs.cm}, {@code io.jverbs.datagram}, this one) call but that are no part of the
 * public API: each forwards to a package-private member of the named core type, with that
 * member's contract. The core registers its one implementation with {@link Secrets#setCore};
 * callers keep it in a {@code static final} field ({@link Secrets#core()}), so a call costs what
 * the direct call did once the JIT has inlined it, and allocates nothing.
 */
public interface CoreAccess {
    /**
     * Throws when {@code resource} is closed.
     *
     * @param resource  the object used
     * @param operation what the caller tried, for the message
     */
    void ensureOpen(Resource resource, String operation);

    /**
     * Registers {@code resource} with its parent, once its native object exists.
     *
     * @param resource the new object
     */
    void adoptedByParent(Resource resource);

    /**
     * The exception of a confined object used from another thread than its owner.
     *
     * @param resource  the confined object
     * @param owner     the thread it is confined to
     * @param operation what the caller tried
     * @return the exception to throw
     */
    WrongThreadException wrongThread(Resource resource, Thread owner, String operation);

    /**
     * Returns the domain's {@code ibv_pd}, for a verb that creates an object in it.
     *
     * @param pd the protection domain
     * @return its C object
     */
    MemorySegment raw(ProtectionDomain pd);

    /**
     * Throws unless {@code cq} can serve a new queue pair of {@code pd} with {@code entries} more
     * outstanding completions.
     *
     * @param cq      the completion queue
     * @param pd      the new queue pair's domain
     * @param entries its completions outstanding at once on {@code cq}
     * @param kind    what is made, for the message
     */
    void requireServes(CompletionQueue cq, ProtectionDomain pd, int entries, String kind);

    /**
     * Lends {@code cq}'s handle to a queue pair's {@code ibv_create_qp}: its native destroy waits
     * until {@link #creationEnded}.
     *
     * @param cq   the completion queue
     * @param what the creation, for the message
     * @return the handle
     */
    java.lang.foreign.MemorySegment lendForCreation(CompletionQueue cq, String what);

    /**
     * Ends a {@link #lendForCreation}, after the attach or the failed creation's destroy.
     *
     * @param cq the completion queue
     */
    void creationEnded(CompletionQueue cq);

    /**
     * Routes the completions of {@code endpoint} through {@code cq}.
     *
     * @param cq       the completion queue
     * @param endpoint the queue pair
     */
    void attach(CompletionQueue cq, QueueEndpoint endpoint);

    /**
     * Stops routing the completions of {@code endpoint} through {@code cq}.
     *
     * @param cq       the completion queue
     * @param endpoint the queue pair
     */
    void detach(CompletionQueue cq, QueueEndpoint endpoint);

    /**
     * Returns the name of the device {@code cq} is on.
     *
     * @param cq the completion queue
     * @return its device's name
     */
    String contextName(CompletionQueue cq);

    /**
     * Returns the address of the {@code ibv_wc} a completion view shows now.
     *
     * @param completion the view, inside its handler
     * @return the native completion's address
     */
    long currentAddress(Completion completion);

    /**
     * Checks that the device may use {@code [offset, offset + bytes)} of {@code buffer} for a
     * request of a queue pair in {@code pd}.
     *
     * @param buffer       the local buffer
     * @param pd           the queue pair's domain
     * @param offset       the range's start
     * @param bytes        its length
     * @param deviceWrites whether the device writes it (a receive, a read's target)
     * @param operation    what the caller tried, for the message
     */
    void checkUse(RegisteredBuffer buffer, ProtectionDomain pd, long offset, long bytes, boolean deviceWrites,
                  String operation);

    /**
     * Checks that {@code [offset, offset + bytes)} lies inside {@code buffer}, which is open.
     *
     * @param buffer    the local buffer
     * @param offset    the range's start
     * @param bytes     its length
     * @param operation what the caller tried, for the message
     */
    void checkRange(RegisteredBuffer buffer, long offset, long bytes, String operation);

    /**
     * Writes {@code remote}'s {@value RemoteBuffer#BYTES}-byte wire form into {@code to}.
     *
     * @param remote the remote buffer
     * @param to     where, big-endian
     * @return {@code to}
     */
    ByteBuffer writeRemote(RemoteBuffer remote, ByteBuffer to);

    /**
     * Reads a remote buffer's wire form.
     *
     * @param from the bytes, big-endian, at their position
     * @return the remote buffer
     */
    RemoteBuffer readRemote(ByteBuffer from);

    /**
     * Tells why a peer of {@code qp} could not use {@code offered}: it is no open buffer of the
     * queue pair's domain, nor an open window bound on it.
     *
     * @param qp      the queue pair the offer goes out with
     * @param offered the offered buffer
     * @return the reason, or null when the peer can use it
     */
    String offerProblem(io.jverbs.QueuePair qp, RemoteBuffer offered);

    /**
     * Returns the bytes of {@code capacity} send requests and their SGEs.
     *
     * @param capacity requests
     * @return the memory a post list needs
     */
    long listBytes(int capacity);

    /**
     * Returns the index the next request of {@code list} takes, after the checks every add makes.
     *
     * @param list the post list
     * @param wrId the request's id
     * @return its index
     */
    int nextIndex(PostList list, long wrId);

    /**
     * Returns the offset of request {@code i} in the list's memory.
     *
     * @param i the request's index
     * @return its offset
     */
    long wrOffset(int i);

    /**
     * Returns the offset of request {@code i}'s SGE in the list's memory.
     *
     * @param list the post list
     * @param i    the request's index
     * @return its SGE's offset
     */
    long sgeOffset(PostList list, int i);

    /**
     * Counts request {@code i}, filled by the caller, and links the one before it to it.
     *
     * @param list  the post list
     * @param i     the request's index
     * @param local the buffer the request reads or writes, checked again at the post
     */
    void added(PostList list, int i, RegisteredBuffer local);

    /**
     * Checks at the post that every buffer of the list is still open and its memory alive.
     *
     * @param list the post list
     * @param what the operation, for the message
     * @throws IllegalStateException when one is not
     */
    void recheck(PostList list, String what);

    /**
     * Sets or clears request {@code i}'s signaled flag.
     *
     * @param list the post list
     * @param i    the request's index
     * @param on   whether it is signaled
     */
    void signal(PostList list, int i, boolean on);

    /**
     * Returns the address of the list's first request.
     *
     * @param list the post list
     * @return what {@code ibv_post_send} takes
     */
    long firstAddress(PostList list);

    /**
     * Returns how many requests of a refused post went to the device.
     *
     * @param list  the post list
     * @param badWr the request post_send stopped at
     * @return the requests before it, 0 when it names none of the list's
     */
    int postedBefore(PostList list, long badWr);

    /**
     * Records in {@code queue}'s ring what each signaled request among the first {@code count}
     * of {@code list} retires.
     *
     * @param list  the post list
     * @param queue the send queue's accounting
     * @param count the requests
     * @param run   the unsignaled requests posted before the list
     * @return the unsignaled requests after the last signaled one
     */
    int recordCovers(PostList list, SendQueue queue, int count, int run);

    /**
     * Throws unless {@code qp} is prepared: not yet connected, not closed.
     *
     * @param qp the queue pair
     */
    void requirePrepared(QueuePair qp);

    /**
     * Marks {@code qp} connected after rdma_cm moved it to RTS.
     *
     * @param qp the queue pair
     */
    void markConnected(QueuePair qp);

    /**
     * Moves {@code qp} back to RESET after a failed rdma_cm connect, prepared again.
     *
     * @param qp the queue pair
     */
    void abandonConnect(QueuePair qp);

    /**
     * Makes {@code release} run when {@code qp} closes, before its destroy: the rdma_cm
     * connection that owns it.
     *
     * @param qp      the queue pair
     * @param release what its close runs first
     */
    void ownedBy(QueuePair qp, Runnable release);

    /**
     * Errors {@code qp}: the peer disconnected.
     *
     * @param qp  the queue pair
     * @param why the reason, for messages
     */
    void peerDisconnected(QueuePair qp, String why);

    /**
     * Returns the access flags {@code qp} is connected with.
     *
     * @param qp the queue pair
     * @return the {@code IBV_ACCESS_*} flags
     */
    int connectAccessFlags(QueuePair qp);

    /**
     * Binds a prepared window as jverbs' own request: no deadline fails it, whether or not the
     * caller polls the queue.
     *
     * @param window the window, prepared on a connected queue pair
     */
    void bindQuietly(io.jverbs.MemoryWindow window);

    /**
     * Sends {@code length} bytes of {@code local} on {@code qp} as jverbs' own request, which no
     * deadline fails.
     *
     * @param qp     a connected queue pair
     * @param local  the source, of the queue pair's domain
     * @param length the bytes
     */
    void sendQuietly(QueuePair qp, io.jverbs.RegisteredBuffer local, int length);

    /**
     * Modifies {@code qp} ({@code ibv_modify_qp}) under its lock.
     *
     * @param qp   the queue pair
     * @param attr the {@code ibv_qp_attr}
     * @param mask the attributes set
     */
    void transition(QueuePair qp, MemorySegment attr, int mask);

    /**
     * Returns a throwable as an unchecked exception to throw, or throws it when it is an error.
     *
     * @param t what a method handle threw
     * @return the exception to throw
     */
    RuntimeException rethrow(Throwable t);
}
