package io.jverbs.perftest;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** --cpu_util's reading of /proc/stat and its formula, as C's. */
class CpuUtilTest {
    @Test
    void userAndIdleAreFieldsTwoAndFive() {
        assertArrayEquals(new long[] {100, 400}, CpuUtil.parse("cpu  100 7 30 400 9 0 1 0 0 0"));
    }

    @Test
    void theShareIsUserOverUserPlusIdle() {
        assertEquals(25.0, CpuUtil.of(new long[] {100, 400}, new long[] {150, 550}), 1e-9);
        assertEquals(0.0, CpuUtil.of(new long[] {5, 5}, new long[] {5, 5}), "no time passed: 0, as C's");
    }

    @Test
    void withoutDurationItWarnsAsCAndAddsNoColumn() {
        PerftestCommand c = new PerftestCommand(Verb.WRITE, Kind.BW);
        CompatOptions.commandLine(c).parseArgs("--cpu_util");
        TestSpec t = c.check();
        assertEquals(false, t.extras().cpuUtil());
        assertEquals(" CPU Utilization works only with Duration mode.", c.notes.getLast());
        PerftestCommand d = new PerftestCommand(Verb.WRITE, Kind.BW);
        CompatOptions.commandLine(d).parseArgs("--cpu_util", "-D", "4");
        assertEquals(true, d.check().extras().cpuUtil());
    }
}
