package io.jverbs.ibverbs.raw;

import io.jverbs.ibverbs.testing.BindingProbe;
import org.junit.jupiter.api.Test;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every generated struct/union layout of io.jverbs.ibverbs.raw against gcc and the installed verbs.h. */
class LayoutTest {

    @Test
    void layoutsMatchTheInstalledHeaders() throws Exception {
        BindingProbe.Plan plan = BindingProbe.layoutPlan(Structs.BY_C_NAME);
        List<String> wrong = new java.util.ArrayList<>(plan.problems);
        wrong.addAll(BindingProbe.compare(plan.checks,
                BindingProbe.runProbe("ibverbs_layout_probe", Structs.HEADERS, plan.checks)));
        System.out.printf("layout: %d structs, %d fields checked, %d wrong%n", plan.records, plan.fields, wrong.size());
        assertTrue(wrong.isEmpty(), wrong.size() + " layout mismatch(es) with the installed headers:\n  "
                + String.join("\n  ", wrong));
        assertTrue(plan.records >= 100, "only " + plan.records + " structs checked");
        assertTrue(plan.fields >= 600, "only " + plan.fields + " fields checked");
    }

    @Test
    void knownOffsetsOfTheInlineVerbs() {
        // REFERENCE §5, independent of the probe: what the hand-written inline verbs rely on.
        assertEquals(128, ibv_send_wr.sizeof());
        assertEquals(36, ibv_send_wr.imm_data$OFFSET);
        assertEquals(80, ibv_send_wr.bind_mw$OFFSET);
        assertEquals(48, ibv_wc.sizeof());
        assertEquals(144, ibv_qp_attr.sizeof());
        assertEquals(96, ibv_context.ops$OFFSET + ibv_context_ops.poll_cq$OFFSET);
        assertEquals(208, ibv_context.ops$OFFSET + ibv_context_ops.post_send$OFFSET);
        assertEquals(216, ibv_context.ops$OFFSET + ibv_context_ops.post_recv$OFFSET);
        assertEquals(320, ibv_context.abi_compat$OFFSET);
        assertEquals(8, ibv_send_wr.wr.rdma.rkey$OFFSET);
    }

    /** A deliberately wrong class (lkey and length swapped) must be reported, field by field. */
    public static final class broken_ibv_sge {
        public static final GroupLayout LAYOUT = MemoryLayout.structLayout(
                ValueLayout.JAVA_LONG.withName("addr"),
                ValueLayout.JAVA_INT.withName("lkey"),
                ValueLayout.JAVA_INT.withName("length"));
        public static final long addr$OFFSET = 0L;
        public static final long lkey$OFFSET = 8L;
        public static final long length$OFFSET = 12L;

        public static long sizeof() {
            return 16L;
        }

        public static long addr(java.lang.foreign.MemorySegment s) {
            return 0;
        }

        public static int lkey(java.lang.foreign.MemorySegment s) {
            return 0;
        }

        public static int length(java.lang.foreign.MemorySegment s) {
            return 0;
        }
    }

    @Test
    void aWrongOffsetIsCaught() throws Exception {
        BindingProbe.Plan plan = BindingProbe.layoutPlan(Map.of("struct ibv_sge", broken_ibv_sge.class));
        List<String> wrong = BindingProbe.compare(plan.checks,
                BindingProbe.runProbe("broken_layout_probe", Structs.HEADERS, plan.checks));
        assertEquals(List.of(), plan.problems);
        assertEquals(2, wrong.size(), String.join("\n", wrong));
        assertTrue(wrong.get(0).contains("ibv_sge.length: offset: Java 12, C 8")
                || wrong.get(1).contains("ibv_sge.length: offset: Java 12, C 8"), String.join("\n", wrong));
    }

    @Test
    void aWrongTypeKindIsCaught() throws Exception {
        // next is a pointer, wr_id an integer, both 8 bytes: only the kind check tells them apart
        String next = "((struct ibv_send_wr *)0)->next";
        String wrId = "((struct ibv_send_wr *)0)->wr_id";
        List<BindingProbe.Check> checks = List.of(
                BindingProbe.Check.exact("next as long", BindingProbe.kindTest(ValueLayout.JAVA_LONG, next), 1),
                BindingProbe.Check.exact("wr_id as pointer", BindingProbe.kindTest(ValueLayout.ADDRESS, wrId), 1),
                BindingProbe.Check.exact("wr_id as double", BindingProbe.kindTest(ValueLayout.JAVA_DOUBLE, wrId), 1),
                BindingProbe.Check.exact("next as pointer", BindingProbe.kindTest(ValueLayout.ADDRESS, next), 1),
                BindingProbe.Check.exact("wr_id as long", BindingProbe.kindTest(ValueLayout.JAVA_LONG, wrId), 1));
        List<String> wrong = BindingProbe.compare(checks, BindingProbe.runProbe("kind_probe", Structs.HEADERS, checks));
        assertEquals(List.of("next as long: Java 1, C 0", "wr_id as pointer: Java 1, C 0", "wr_id as double: Java 1, C 0"),
                wrong);
    }

    @Test
    void compareReportsEveryKindOfMismatch() {
        List<BindingProbe.Check> checks = List.of(
                BindingProbe.Check.exact("a: offset", "0", 4),
                BindingProbe.Check.exact("b: offset", "0", 8),
                BindingProbe.Check.intBits("C1", "0", -1),
                BindingProbe.Check.intBits("C2", "0", 0),
                BindingProbe.Check.exact("missing", "0", 0));
        List<String> wrong = BindingProbe.compare(checks, Map.of(0, 4L, 1, 12L, 2, 0xFFFF_FFFFL, 3, 1L << 32));
        assertEquals(List.of("b: offset: Java 8, C 12", "C2: Java int 0, C 4294967296", "missing: the probe printed no value"),
                wrong);
    }
}
