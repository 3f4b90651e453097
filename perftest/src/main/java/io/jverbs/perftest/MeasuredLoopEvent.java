package io.jverbs.perftest;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/**
 * A JFR event around each measured loop of a run (the iterations the tables report, without the
 * warm-up, handshake and outputs): in a recording ({@code JAVA_TOOL_OPTIONS=-XX:StartFlightRecording})
 * it marks where the figures came from, so the JIT's compilations, the GC and the threads' CPU in
 * that window can be read beside them. Costs one check per loop when no recording runs.
 */
@Name("io.jverbs.perftest.MeasuredLoop")
@Label("Measured loop")
@Category("jverbs")
@Description("The iterations a jverbs-perftest table reports")
final class MeasuredLoopEvent extends Event {
    @Label("Test")
    String test;

    @Label("Allocated")
    @Description("Bytes the measuring thread allocated in the loop")
    @DataAmount
    long allocated;
}
