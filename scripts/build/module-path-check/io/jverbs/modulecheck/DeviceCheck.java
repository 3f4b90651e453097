package io.jverbs.modulecheck;

import io.jverbs.Access;
import io.jverbs.Completion;
import io.jverbs.CompletionQueue;
import io.jverbs.Context;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.Rdma;
import io.jverbs.RegisteredBuffer;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * The high-level module used from a named module on a real device: a queue pair connected to
 * itself writes 16 bytes from one half of a registered buffer into the other, through the
 * zero-allocation post and poll. Every step reinterprets C pointers inside io.jverbs.highlevel,
 * so the JVM says whether that module has native access.
 */
final class DeviceCheck {
    private DeviceCheck() {
    }

    /**
     * Runs the write and returns the problems (none when it worked).
     *
     * @param device          the device name, e.g. rxe0
     * @param highLevelAccess whether the JVM was started with native access for io.jverbs.highlevel
     */
    static List<String> run(String device, boolean highLevelAccess) {
        List<String> problems = new ArrayList<>();
        Module highLevel = Rdma.class.getModule();
        if (!"io.jverbs.highlevel".equals(highLevel.getName())) {
            problems.add("Rdma is in module " + highLevel);
        }
        if (highLevel.isNativeAccessEnabled() != highLevelAccess) {
            problems.add("native access of io.jverbs.highlevel: " + highLevel.isNativeAccessEnabled());
        }
        try (Context ctx = Rdma.open(device)) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            CompletionQueue cq = ctx.createCompletionQueue(16);
            QueuePair qp = pd.createQueuePair(QueuePairConfig.rc(cq).withDepth(8, 8));
            RegisteredBuffer buf = pd.allocate(4096, Access.REMOTE_WRITE);
            qp.connect(qp.localEndpoint());
            for (int i = 0; i < 16; i++) {
                buf.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (0x40 + i));
            }
            if (qp.write(7, buf, 0, 16, buf.remote(), 2048, true) != QueuePair.OK) {
                problems.add("the write was not posted");
                return problems;
            }
            long deadline = System.nanoTime() + 20_000_000_000L;
            int[] status = {-1};
            while (status[0] < 0 && System.nanoTime() < deadline) {
                cq.poll((Completion c) -> status[0] = c.status(), 1);
            }
            if (status[0] != 0) {
                problems.add(status[0] < 0 ? "no completion within 20 s" : "completion status " + status[0]);
            }
            for (int i = 0; i < 16; i++) {
                if (buf.segment().get(ValueLayout.JAVA_BYTE, 2048 + i) != (byte) (0x40 + i)) {
                    problems.add("byte " + i + " of the write did not arrive");
                    break;
                }
            }
        }
        return problems;
    }
}
