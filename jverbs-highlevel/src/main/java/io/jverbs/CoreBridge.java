package io.jverbs;

import io.jverbs.internal.CoreAccess;
import io.jverbs.internal.SendQueue;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * The core's {@link CoreAccess}: each method forwards to the package-private member it names.
 * {@link Resource}'s static initializer registers the one instance.
 */
final class CoreBridge implements CoreAccess {
    @Override
    public void ensureOpen(Resource resource, String operation) {
        resource.ensureOpen(operation);
    }

    @Override
    public void adoptedByParent(Resource resource) {
        resource.adoptedByParent();
    }

    @Override
    public WrongThreadException wrongThread(Resource resource, Thread owner, String operation) {
        return resource.wrongThread(owner, operation);
    }

    @Override
    public MemorySegment raw(ProtectionDomain pd) {
        return pd.raw();
    }

    @Override
    public void requireServes(CompletionQueue cq, ProtectionDomain pd, int entries, String kind) {
        cq.requireServes(pd, entries, kind);
    }

    @Override
    public java.lang.foreign.MemorySegment lendForCreation(CompletionQueue cq, String what) {
        return cq.lendForCreation(what);
    }

    @Override
    public void creationEnded(CompletionQueue cq) {
        cq.creationEnded();
    }

    @Override
    public void attach(CompletionQueue cq, QueueEndpoint endpoint) {
        cq.attach(endpoint);
    }

    @Override
    public void detach(CompletionQueue cq, QueueEndpoint endpoint) {
        cq.detach(endpoint);
    }

    @Override
    public String contextName(CompletionQueue cq) {
        return cq.contextName();
    }

    @Override
    public long currentAddress(Completion completion) {
        return completion.currentAddress();
    }

    @Override
    public void checkUse(RegisteredBuffer buffer, ProtectionDomain pd, long offset, long bytes, boolean deviceWrites,
                         String operation) {
        buffer.checkUse(pd, offset, bytes, deviceWrites, operation);
    }

    @Override
    public void checkRange(RegisteredBuffer buffer, long offset, long bytes, String operation) {
        buffer.checkRange(offset, bytes, operation);
    }

    @Override
    public ByteBuffer writeRemote(RemoteBuffer remote, ByteBuffer to) {
        return remote.write(to);
    }

    @Override
    public RemoteBuffer readRemote(ByteBuffer from) {
        return RemoteBuffer.read(from);
    }

    @Override
    public String offerProblem(QueuePair qp, RemoteBuffer offered) {
        return qp.offerProblem(offered);
    }

    @Override
    public long listBytes(int capacity) {
        return PostList.listBytes(capacity);
    }

    @Override
    public int nextIndex(PostList list, long wrId) {
        return list.nextIndex(wrId);
    }

    @Override
    public long wrOffset(int i) {
        return PostList.wrOffset(i);
    }

    @Override
    public long sgeOffset(PostList list, int i) {
        return list.sgeOffset(i);
    }

    @Override
    public void added(PostList list, int i, RegisteredBuffer local) {
        list.added(i, local);
    }

    @Override
    public void recheck(PostList list, String what) {
        list.recheck(what);
    }

    @Override
    public void signal(PostList list, int i, boolean on) {
        list.signal(i, on);
    }

    @Override
    public long firstAddress(PostList list) {
        return list.firstAddress();
    }

    @Override
    public int postedBefore(PostList list, long badWr) {
        return list.postedBefore(badWr);
    }

    @Override
    public int recordCovers(PostList list, SendQueue queue, int count, int run) {
        return list.recordCovers(queue, count, run);
    }

    @Override
    public void requirePrepared(QueuePair qp) {
        qp.requirePrepared();
    }

    @Override
    public void markConnected(QueuePair qp) {
        qp.markConnected();
    }

    @Override
    public void abandonConnect(QueuePair qp) {
        qp.abandonConnect();
    }

    @Override
    public void ownedBy(QueuePair qp, Runnable release) {
        qp.ownedBy(release);
    }

    @Override
    public void peerDisconnected(QueuePair qp, String why) {
        qp.peerDisconnected(why);
    }

    @Override
    public void bindQuietly(MemoryWindow window) {
        window.bind(true);
    }

    @Override
    public void sendQuietly(QueuePair qp, RegisteredBuffer local, int length) {
        qp.sendQuietly(local, length);
    }

    @Override
    public int connectAccessFlags(QueuePair qp) {
        return qp.connectAccessFlags();
    }

    @Override
    public void transition(QueuePair qp, MemorySegment attr, int mask) {
        qp.transition(attr, mask);
    }

    @Override
    public RuntimeException rethrow(Throwable t) {
        return CompletionQueue.rethrow(t);
    }
}
