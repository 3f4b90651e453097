package io.jverbs.rdmacm.raw;

import io.jverbs.ibverbs.testing.BindingProbe;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every generated constant of rdma_cma_h against gcc and the installed rdma_cma.h / rdma_verbs.h. */
class ConstantsTest {

    @Test
    void constantsMatchTheInstalledHeaders() throws Exception {
        BindingProbe.Plan plan = BindingProbe.constantPlan(rdma_cma_h.class);
        List<String> wrong = BindingProbe.compare(plan.checks,
                BindingProbe.runProbe("rdmacm_constants_probe", Structs.HEADERS, plan.checks));
        System.out.printf("constants: %d checked, %d wrong%n", plan.constants, wrong.size());
        assertTrue(wrong.isEmpty(), wrong.size() + " constant(s) differ from the installed headers:\n  "
                + String.join("\n  ", wrong));
        assertTrue(plan.constants >= 45, "only " + plan.constants + " constants checked");
    }
}
