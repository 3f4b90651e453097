package io.jverbs.rdmacm;

import io.jverbs.ibverbs.misuse.InlineVerbsMisuse;
import io.jverbs.ibverbs.testing.CBuild;
import io.jverbs.ibverbs.testing.Misuse;
import io.jverbs.ibverbs.testing.Misuse.Case;
import io.jverbs.ibverbs.testing.Misuse.Result;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Misuse of the thin layer never crashes the JVM: every case of {@link InlineVerbsMisuse} and
 * {@link RdmaVerbsMisuse} runs in its own child JVM against the fake provider, and must exit
 * normally, with no {@code hs_err} report, having printed the promised exception and message.
 * (This module sees both thin modules, so the whole list runs here, once.) Prints
 * {@code misuse: N cases, 0 crashed}.
 */
class MisuseCrashTest {
    /** Two children at a time: build machines have two cores, shared. */
    private static final int PARALLELISM = 2;

    @TestFactory
    Stream<DynamicTest> noMisuseCrashesTheJvm() throws Exception {
        Map<Class<?>, List<Case>> cases = new LinkedHashMap<>();
        cases.put(InlineVerbsMisuse.class, InlineVerbsMisuse.CASES);
        cases.put(RdmaVerbsMisuse.class, RdmaVerbsMisuse.CASES);
        List<Result> results = Misuse.runAll(cases, CBuild.workDir().resolve("misuse"), PARALLELISM);
        long crashed = results.stream().filter(Result::crashed).count();
        System.out.printf("misuse: %d cases, %d crashed%n", results.size(), crashed);
        Stream<DynamicTest> each = results.stream().map(r -> DynamicTest.dynamicTest(r.c().name(),
                () -> assertTrue(r.behaved(), r::describe)));
        Stream<DynamicTest> total = Stream.of(DynamicTest.dynamicTest("no child crashed",
                () -> assertEquals(0, crashed, () -> "crashed:\n" + String.join("\n",
                        results.stream().filter(Result::crashed).map(Result::describe).toList()))));
        return Stream.concat(each, total);
    }

    /** The harness must see a real crash as one, or a passing suite would prove nothing. */
    @Test
    void theHarnessSeesARealCrash() throws Exception {
        List<Result> results = Misuse.runAll(Map.of(DeliberateCrash.class, DeliberateCrash.CASES),
                CBuild.workDir().resolve("misuse-selfcheck"), 1);
        Result r = results.getFirst();
        assertTrue(r.crashed(), r::describe);
        assertTrue(!r.behaved(), r::describe);
    }

    /** A child that writes through NULL in native code, as a missing check would. */
    public static final class DeliberateCrash {
        static final List<Case> CASES = List.of(new Case("memset(NULL)", IllegalArgumentException.class, "never printed",
                f -> memsetNull()));

        private static void memsetNull() {
            Linker linker = Linker.nativeLinker();
            MethodHandle memset = linker.downcallHandle(linker.defaultLookup().find("memset").orElseThrow(),
                    FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, JAVA_LONG));
            try {
                MemorySegment unused = (MemorySegment) memset.invokeExact(MemorySegment.NULL, 0, 64L);
            } catch (Throwable t) {
                throw new AssertionError(t);
            }
        }

        /**
         * The child JVM's entry point.
         *
         * @param args the case name
         */
        public static void main(String[] args) {
            Misuse.childMain(CASES, args);
        }
    }
}
