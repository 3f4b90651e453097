package io.jverbs;

import io.jverbs.ibverbs.internal.NativeAccess;
import io.jverbs.ibverbs.raw.ibv_context;
import io.jverbs.ibverbs.raw.ibv_context_ops;
import io.jverbs.ibverbs.raw.ibv_cq;
import io.jverbs.ibverbs.raw.ibv_mr;
import io.jverbs.ibverbs.raw.ibv_qp;
import io.jverbs.ibverbs.raw.ibv_send_wr;
import io.jverbs.ibverbs.raw.ibv_wc;
import io.jverbs.ibverbs.raw.verbs_h;
import io.jverbs.ibverbs.testing.FakeProvider;
import org.openjdk.jmh.annotations.*;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.TimeUnit;

/**
 * Where the high-level write + poll spends its time: the same 64-byte RDMA Write and one polled
 * completion through the fake provider, split into the raw floor (fill + two critical downcalls,
 * no checks, no lock), a raw post with the high-level poll, and the high-level post and poll. Run
 * with {@code scripts/bench-highlevel} and a regex naming it.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class HotPathSplitBench {
    private static final int BATCH = 1000;
    private static final int BYTES = 64;
    private static final MemorySegment ALL = NativeAccess.everything();
    private static final MethodHandle POLL = NativeAccess.pointerDowncall(
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG), true);

    private FakeProvider.World world;
    private Arena arena;
    private MemorySegment mem;
    private long base;
    private MemorySegment data;
    private long qpAddress;
    private long cqAddress;
    private MemorySegment postFn;
    private MemorySegment pollFn;
    private CompletionQueue cq;
    private QueuePair qp;
    private RegisteredBuffer buffer;
    private RemoteBuffer remote;
    private long polledSum;
    private final CompletionHandler handler = c -> polledSum += c.wrId();

    @Setup(Level.Trial)
    public void setUp() {
        world = new FakeProvider.World(true, 0, true);
        world.useBenchOps();
        arena = Arena.ofShared();
        mem = arena.allocate(1024, 64);
        base = mem.address();
        data = arena.allocate(4096, 4096);
        MemorySegment mr = arena.allocate(ibv_mr.LAYOUT);
        ibv_mr.lkey(mr, 0x1234);
        ibv_mr.rkey(mr, 0x5678);
        ibv_qp.qp_num(world.qp().reinterpret(ibv_qp.sizeof()), 0);
        qpAddress = world.qp().address();
        cqAddress = world.cq().address();
        MemorySegment ctx = ibv_qp.context(world.qp().reinterpret(ibv_qp.sizeof())).reinterpret(ibv_context.sizeof());
        postFn = WorkRequests.providerOp(ctx, ibv_context_ops.post_send$OFFSET, "ibv_post_send");
        MemorySegment cctx = ibv_cq.context(world.cq().reinterpret(ibv_cq.sizeof())).reinterpret(ibv_context.sizeof());
        pollFn = WorkRequests.providerOp(cctx, ibv_context_ops.poll_cq$OFFSET, "ibv_poll_cq");
        cq = CompletionQueue.wrapForBenchmark(world.cq());
        qp = QueuePair.wrapForBenchmark(world.qp(), cq, 1024, 1);
        buffer = RegisteredBuffer.wrapForBenchmark(data, mr);
        remote = new RemoteBuffer(0x7f0000000000L, 1 << 20, 0x5678);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        qp.close();
        cq.close();
        arena.close();
        world.close();
    }

    private void rawPost(long i) {
        WorkRequests.send(mem, base, 0, 256, i, verbs_h.IBV_WR_RDMA_WRITE, verbs_h.IBV_SEND_SIGNALED, 0, data.address(),
                BYTES, 0x1234);
        WorkRequests.rdma(base, 0x7f0000000000L, 0x5678);
        if (WorkRequests.post(postFn, qpAddress, base, base + 512) != 0) {
            throw new IllegalStateException("post");
        }
    }

    private long rawPoll() {
        int n;
        try {
            n = (int) POLL.invokeExact(pollFn, cqAddress, 1, base + 600);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
        if (n != 1) {
            throw new IllegalStateException("poll");
        }
        return ALL.get(ValueLayout.JAVA_LONG_UNALIGNED, base + 600 + ibv_wc.wr_id$OFFSET);
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long rawPostRawPoll() {
        long sum = 0;
        for (int i = 0; i < BATCH; i++) {
            rawPost(i);
            sum += rawPoll();
        }
        return sum;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long rawPostCqPoll() {
        for (int i = 0; i < BATCH; i++) {
            rawPost(i);
            if (cq.poll(handler, 1) != 1) {
                throw new IllegalStateException("poll");
            }
        }
        return polledSum;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long qpWriteCqPoll() {
        for (int i = 0; i < BATCH; i++) {
            if (qp.write(i, buffer, 0, BYTES, remote, 0, true) != QueuePair.OK || cq.poll(handler, 1) != 1) {
                throw new IllegalStateException("write/poll");
            }
        }
        return polledSum;
    }
}
