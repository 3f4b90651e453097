package io.jverbs.cm;

import io.jverbs.Completion;
import io.jverbs.RemoteBuffer;

import java.lang.foreign.MemorySegment;

/**
 * What a {@link Session} tells its application. Every method runs on the {@link EventLoop}'s
 * thread, one at a time for all sessions of that loop: a method must return quickly and never
 * block (a blocked handler stalls every session of the loop; their calls still fail at their
 * timeouts, which do not need the loop). A method that throws is reported to the loop's error
 * listener ({@link EventLoop#onHandlerError}) and the session goes on; a throwing
 * {@link #onRequest} answers the caller with the exception's message
 * ({@link RdmaCmException.Reason#REMOTE_FAILURE}).
 *
 * <p>The {@code message} segments are views of the session's receive ring, valid only until the
 * method returns (the slot is posted again for the peer's next message): copy what you keep.
 * Handing them over costs no allocation.
 */
public interface SessionHandler {
    /**
     * The session is established: both sides may send, call and use each other's buffers. Called
     * once, before any other method for the session.
     *
     * @param session the session
     */
    default void onOpen(Session session) {
    }

    /**
     * A message the peer sent with {@link Session#send} or {@link Session#offer}.
     *
     * @param session the session
     * @param message the bytes: {@code [0, length)} of a ring slot, valid until this returns
     * @param length  how many bytes the peer sent (0 to {@link Session#maxMessageBytes()})
     */
    default void onMessage(Session session, MemorySegment message, int length) {
    }

    /**
     * A request the peer made with {@link Session#call}: answer it with
     * {@link Session#reply(long, MemorySegment)} or {@link Session#fail(long, String)}, now or
     * later from any thread. A request never answered fails at the caller's timeout.
     *
     * @param session   the session
     * @param requestId the id to answer
     * @param request   the bytes: {@code [0, length)} of a ring slot, valid until this returns
     * @param length    how many bytes
     */
    default void onRequest(Session session, long requestId, MemorySegment request, int length) {
        session.fail(requestId, "this side takes no requests (its SessionHandler has no onRequest)");
    }

    /**
     * The peer offered a buffer after the handshake ({@link Session#offerBuffer}); it is also in
     * {@link Session#peerBuffers()} from now on.
     *
     * @param session the session
     * @param buffer  the peer's buffer, with its rights
     */
    default void onBuffer(Session session, RemoteBuffer buffer) {
    }

    /**
     * A completion of work the application posted on the session's queue pair with its own
     * work-request id (the zero-allocation posts: {@code queuePair().write(wrId, ...)}). Futures
     * of the asynchronous posts complete by themselves and do not come here.
     *
     * @param session    the session
     * @param completion a view valid until this returns
     */
    default void onCompletion(Session session, Completion completion) {
    }

    /**
     * The session ended: the peer disconnected or died, this side closed it, its loop closed, or
     * its queue pair failed. Called once, only for a session whose {@link #onOpen} ran; calls in
     * flight have failed with {@code cause} before it.
     *
     * @param session the session (closed)
     * @param cause   why; {@link RdmaCmException#reason()} is {@code DISCONNECTED} for an orderly end
     */
    default void onClose(Session session, RdmaCmException cause) {
    }
}
