package io.jverbs;

import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.internal.DataPath;
import io.jverbs.ibverbs.internal.NativeAccess;
import io.jverbs.ibverbs.raw.ibv_context;
import io.jverbs.ibverbs.raw.ibv_context_ops;
import io.jverbs.ibverbs.raw.ibv_cq;
import io.jverbs.ibverbs.raw.ibv_mr;
import io.jverbs.ibverbs.raw.ibv_qp;
import io.jverbs.ibverbs.raw.ibv_send_wr;
import io.jverbs.ibverbs.raw.ibv_sge;
import io.jverbs.ibverbs.raw.ibv_wc;
import io.jverbs.ibverbs.raw.verbs_h;
import io.jverbs.ibverbs.testing.FakeProvider;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * One 64-byte RDMA Write posted and its completion polled, through the fake provider's minimal
 * ops, four ways in one run: a C loop filling the work request and calling verbs.h's inline
 * functions; the thin layer ({@link InlineVerbs}); the high-level zero-allocation path
 * ({@link QueuePair#write} + {@link CompletionQueue#poll}); and the future style
 * ({@link Async#write}); and two splits of the high-level path: the raw floor (fill and
 * the two critical downcalls, no checks, no lock) and a raw post with the high-level poll. Run with
 * {@code scripts/bench/bench-highlevel} ({@code -prof gc} for B/op).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class HighLevelBench {
    private static final int BATCH = 1000;
    private static final int BYTES = 64;
    private static final MemorySegment ALL = NativeAccess.everything();
    private static final NativeAccess.PinnedDowncall POLL_PIN = NativeAccess.pinnableDowncall(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_LONG), true);
    private static final MethodHandle POLL = POLL_PIN.invoker();

    /**
     * Whether the high-level queue pair and completion queue are confined to the benchmark thread
     * ({@link QueuePairConfig#confined()}, {@link Context#createConfinedCompletionQueue}): their
     * posts and polls then take no lock. The C, thin and raw columns do not depend on it.
     */
    @Param({"false", "true"})
    public boolean confined;

    private FakeProvider.World world;
    private Arena arena;
    private MemorySegment wr;
    private MemorySegment sge;
    private MemorySegment badWr;
    private MemorySegment wc;
    private MemorySegment data;
    private MemorySegment mem;
    private MemorySegment rawQp;
    private MemorySegment rawCq;
    private MethodHandle cLoop;
    private PreparedRequest prepared;
    private CompletionQueue cq;
    private QueuePair qp;
    private RegisteredBuffer buffer;
    private RemoteBuffer remote;
    /** The raw floor's request memory: a send WR at 0, its SGE at 256, bad_wr at 512, a wc at 600. */
    private long base;
    private MemorySegment postFn;
    private MemorySegment pollFn;
    private long polledSum;
    private final CompletionHandler handler = c -> polledSum += c.wrId();

    @Setup(Level.Trial)
    public void setUp() {
        world = new FakeProvider.World(true, 0, true);
        world.useBenchOps();
        arena = Arena.ofConfined();
        wr = arena.allocate(ibv_send_wr.LAYOUT);
        sge = arena.allocate(ibv_sge.LAYOUT);
        badWr = arena.allocate(ADDRESS);
        wc = arena.allocate(ibv_wc.LAYOUT);
        data = arena.allocate(4096, 4096);
        MemorySegment mr = arena.allocate(ibv_mr.LAYOUT);
        ibv_mr.lkey(mr, 0x1234);
        ibv_mr.rkey(mr, 0x5678);
        cLoop = FakeProvider.fn("fake_bench_c_write_loop", FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS, ADDRESS,
                ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT, JAVA_LONG, JAVA_INT));
        // The fake poll reports qp_num 0: give the fake queue pair that number, so completions route to it.
        ibv_qp.qp_num(world.qp().reinterpret(ibv_qp.sizeof()), 0);
        rawQp = world.qp();
        rawCq = world.cq();
        cq = FakeObjects.completionQueue(world.cq(), confined);
        qp = FakeObjects.connectedQueuePair(world.qp(), cq, 1024, 1, confined);
        buffer = FakeObjects.buffer(data, mr);
        remote = new RemoteBuffer(0x7f0000000000L, 1 << 20, 0x5678);
        prepared = qp.prepareWrite(buffer, 0, BYTES, remote, 0);
        mem = arena.allocate(1024, 64);
        base = mem.address();
        MemorySegment ctx = ibv_qp.context(world.qp().reinterpret(ibv_qp.sizeof())).reinterpret(ibv_context.sizeof());
        postFn = DataPath.providerOp(ctx, ibv_context_ops.post_send$OFFSET, "ibv_post_send");
        MemorySegment cctx = ibv_cq.context(world.cq().reinterpret(ibv_cq.sizeof())).reinterpret(ibv_context.sizeof());
        pollFn = DataPath.providerOp(cctx, ibv_context_ops.poll_cq$OFFSET, "ibv_poll_cq");
        POLL_PIN.pin(pollFn); // the raw floor's poll bound as the high-level one is
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        // qp, cq and buffer stay open: their destroys would hand the fake objects to libibverbs
        arena.close();
        world.close();
    }

    /** C: fill a 64-byte RDMA Write, post it, poll one completion — {@value #BATCH} times in one call. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long cWriteAndPoll() throws Throwable {
        return (long) cLoop.invokeExact(world.handle(), wr, sge, wc, (long) BATCH, data, 0x1234, 0x7f0000000000L, 0x5678);
    }

    /** The thin layer: the same fill through the generated accessors, then InlineVerbs post and poll. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long thinWriteAndPoll() {
        long sum = 0;
        MemorySegment rdma = ibv_send_wr.wr.rdma(ibv_send_wr.wr(wr));
        for (int i = 0; i < BATCH; i++) {
            ibv_send_wr.wr_id(wr, i);
            ibv_send_wr.next(wr, MemorySegment.NULL);
            ibv_send_wr.sg_list(wr, sge);
            ibv_send_wr.num_sge(wr, 1);
            ibv_send_wr.opcode(wr, verbs_h.IBV_WR_RDMA_WRITE);
            ibv_send_wr.send_flags(wr, verbs_h.IBV_SEND_SIGNALED);
            ibv_send_wr.wr.rdma.remote_addr(rdma, 0x7f0000000000L);
            ibv_send_wr.wr.rdma.rkey(rdma, 0x5678);
            ibv_sge.addr(sge, data.address());
            ibv_sge.length(sge, BYTES);
            ibv_sge.lkey(sge, 0x1234);
            if (InlineVerbs.ibv_post_send(rawQp, wr, badWr) != 0 || InlineVerbs.ibv_poll_cq(rawCq, 1, wc) != 1) {
                throw new IllegalStateException("post/poll");
            }
            sum += ibv_wc.wr_id(wc);
        }
        return sum;
    }

    /** jverbs-highlevel, zero-allocation style: checked write, then poll with a reused handler. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long highLevelWriteAndPoll() {
        for (int i = 0; i < BATCH; i++) {
            if (qp.write(i, buffer, 0, BYTES, remote, 0, true) != QueuePair.OK || cq.poll(handler, 1) != 1) {
                throw new IllegalStateException("write/poll");
            }
        }
        return polledSum;
    }

    /** jverbs-highlevel, a prepared request: filled and checked once, each post writes the id and the signal flag. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long highLevelPreparedWriteAndPoll() {
        for (int i = 0; i < BATCH; i++) {
            if (qp.post(prepared, i, true) != QueuePair.OK || cq.poll(handler, 1) != 1) {
                throw new IllegalStateException("prepared write/poll");
            }
        }
        return polledSum;
    }

    /** jverbs-highlevel, future style: writeAsync, poll, the future completes. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long highLevelFutureWrite() {
        long n = 0;
        for (int i = 0; i < BATCH; i++) {
            var f = qp.async().write(buffer, 0, BYTES, remote, 0);
            cq.poll(null, 1);
            n += f.join().opcode() + 1;
        }
        return n;
    }

    private void rawPost(long i) {
        WorkRequests.send(mem, base, 0, 256, i, verbs_h.IBV_WR_RDMA_WRITE, verbs_h.IBV_SEND_SIGNALED, 0, data.address(),
                BYTES, 0x1234);
        WorkRequests.rdma(base, 0x7f0000000000L, 0x5678);
        if (WorkRequests.post(postFn, rawQp.address(), base, base + 512) != 0) {
            throw new IllegalStateException("post");
        }
    }

    private long rawPoll() {
        int n;
        try {
            n = (int) POLL.invokeExact(pollFn, rawCq.address(), 1, base + 600);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
        if (n != 1) {
            throw new IllegalStateException("poll");
        }
        return ALL.get(ValueLayout.JAVA_LONG_UNALIGNED, base + 600 + ibv_wc.wr_id$OFFSET);
    }

    /** The raw floor: fill by address and the two critical downcalls, no checks, no lock, no routing. */
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

    /** The raw post with the high-level poll (lock, view, routing, accounting, handler). */
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
}
