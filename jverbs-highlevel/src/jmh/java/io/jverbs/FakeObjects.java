package io.jverbs;

import io.jverbs.ibverbs.raw.verbs_h;

import java.lang.foreign.MemorySegment;
import java.util.EnumSet;

/**
 * The high-level objects over the fake provider's queue pair, completion queue and memory
 * region, for the JMH benchmark: built with the classes' own constructors, as their factories
 * build them after the provider's create calls. The fake objects are not the kernel's: the
 * benchmark never closes them (a destroy would call the real libibverbs on them); the fork's
 * exit frees them.
 */
final class FakeObjects {
    private FakeObjects() {
    }

    static CompletionQueue completionQueue(MemorySegment rawCq, boolean confined) {
        return new CompletionQueue(null, rawCq, MemorySegment.NULL, 1, confined);
    }

    static QueuePair connectedQueuePair(MemorySegment rawQp, CompletionQueue cq, int depth, int signalEvery,
                                        boolean confined) {
        QueuePairConfig config = QueuePairConfig.rc(cq).withDepth(depth, depth).withSignalEvery(signalEvery)
                .withMaxInlineData(0).withConfined(confined);
        QueuePair pair = new QueuePair(null, config, rawQp, 0, new Gid(0, new byte[16], ""),
                new Context.PortAttributes(1, verbs_h.IBV_PORT_ACTIVE, verbs_h.IBV_MTU_1024, verbs_h.IBV_MTU_1024,
                        verbs_h.IBV_LINK_LAYER_ETHERNET, 1, 0, 1L << 31), config.maxRdAtomic());
        pair.markConnected();
        cq.attach(pair);
        return pair;
    }

    static RegisteredBuffer buffer(MemorySegment memory, MemorySegment fakeMr) {
        return new RegisteredBuffer(null, memory, null, fakeMr, EnumSet.of(Access.REMOTE_WRITE));
    }
}
