package io.jverbs.ibverbs.bench;

import io.jverbs.ibverbs.InlineVerbs;
import io.jverbs.ibverbs.raw.ibv_send_wr;
import io.jverbs.ibverbs.raw.ibv_wc;
import io.jverbs.ibverbs.testing.FakeProvider;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * One {@code ibv_post_send} plus one {@code ibv_poll_cq} through the fake provider's minimal ops:
 * from Java ({@link InlineVerbs}) and from a C loop making the same calls through verbs.h's own
 * inline functions. The difference per operation is the price of jverbs' dispatch and downcalls.
 * Run with {@code scripts/bench/bench-inline} (adds {@code -prof gc} for the allocation rate).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class InlineVerbsBench {
    private static final int BATCH = 1000;

    private FakeProvider.World world;
    private Arena arena;
    private MemorySegment qp;
    private MemorySegment cq;
    private MemorySegment wr;
    private MemorySegment badWr;
    private MemorySegment wc;
    private MethodHandle cLoop;
    private MethodHandle cPostSend;
    private MethodHandle cPollCq;

    @Setup(Level.Trial)
    public void setUp() {
        world = new FakeProvider.World(true, 0, true);
        world.useBenchOps();
        qp = world.qp();
        cq = world.cq();
        arena = Arena.ofConfined(); // JMH runs Scope.Thread setup on the benchmark thread
        wr = arena.allocate(ibv_send_wr.LAYOUT);
        badWr = arena.allocate(ADDRESS);
        wc = arena.allocate(ibv_wc.LAYOUT);
        cLoop = FakeProvider.fn("fake_bench_c_loop", FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG));
        cPostSend = FakeProvider.fn("fake_bench_c_post_send", FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG));
        cPollCq = FakeProvider.fn("fake_bench_c_poll_cq", FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG));
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
        world.close();
    }

    /** Java: post one send, poll one completion, {@value #BATCH} times. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long javaPostSendPollCq() {
        long sum = 0;
        for (int i = 0; i < BATCH; i++) {
            ibv_send_wr.wr_id(wr, i);
            if (InlineVerbs.ibv_post_send(qp, wr, badWr) != 0) {
                throw new IllegalStateException("post_send");
            }
            if (InlineVerbs.ibv_poll_cq(cq, 1, wc) != 1) {
                throw new IllegalStateException("poll_cq");
            }
            sum += ibv_wc.wr_id(wc);
        }
        return sum;
    }

    /** C: the same {@value #BATCH} iterations in one call of a C loop. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long cPostSendPollCq() throws Throwable {
        return (long) cLoop.invokeExact(world.handle(), wr, wc, (long) BATCH);
    }

    /** Java: {@code ibv_post_send} alone. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long javaPostSend() {
        long failures = 0;
        for (int i = 0; i < BATCH; i++) {
            ibv_send_wr.wr_id(wr, i);
            failures += InlineVerbs.ibv_post_send(qp, wr, badWr) != 0 ? 1 : 0;
        }
        return failures;
    }

    /** C: {@code ibv_post_send} alone. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long cPostSend() throws Throwable {
        return (long) cPostSend.invokeExact(world.handle(), wr, (long) BATCH);
    }

    /** Java: {@code ibv_poll_cq} alone. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long javaPollCq() {
        long sum = 0;
        for (int i = 0; i < BATCH; i++) {
            sum += InlineVerbs.ibv_poll_cq(cq, 1, wc);
            sum += ibv_wc.wr_id(wc);
        }
        return sum;
    }

    /** C: {@code ibv_poll_cq} alone. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long cPollCq() throws Throwable {
        return (long) cPollCq.invokeExact(world.handle(), wc, (long) BATCH);
    }
}
