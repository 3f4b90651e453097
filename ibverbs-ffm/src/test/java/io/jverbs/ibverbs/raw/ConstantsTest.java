package io.jverbs.ibverbs.raw;

import io.jverbs.ibverbs.testing.BindingProbe;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every generated constant of verbs_h (enum constants and #defines) against gcc and the installed verbs.h. */
class ConstantsTest {

    @Test
    void constantsMatchTheInstalledHeaders() throws Exception {
        BindingProbe.Plan plan = BindingProbe.constantPlan(verbs_h.class);
        List<String> wrong = new ArrayList<>(BindingProbe.compare(plan.checks,
                BindingProbe.runProbe("ibverbs_constants_probe", Structs.HEADERS, plan.checks)));
        System.out.printf("constants: %d checked, %d wrong%n", plan.constants, wrong.size());
        assertTrue(wrong.isEmpty(), wrong.size() + " constant(s) differ from the installed headers:\n  "
                + String.join("\n  ", wrong));
        assertTrue(plan.constants >= 400, "only " + plan.constants + " constants checked");
    }

    @Test
    void wideAndUnsignedValuesKeepTheirBits() {
        assertEquals(1L << 34, verbs_h.IBV_DEVICE_RAW_SCATTER_FCS);
        assertEquals(0x000FFFFF, verbs_h.IB_GRH_FLOWLABEL_MASK);
    }
}
