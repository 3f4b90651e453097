package io.jverbs.rdmacm.raw;

import io.jverbs.ibverbs.testing.BindingProbe;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every generated struct/union layout of io.jverbs.rdmacm.raw against gcc and the installed rdma_cma.h. */
class LayoutTest {

    @Test
    void layoutsMatchTheInstalledHeaders() throws Exception {
        BindingProbe.Plan plan = BindingProbe.layoutPlan(Structs.BY_C_NAME);
        List<String> wrong = new ArrayList<>(plan.problems);
        wrong.addAll(BindingProbe.compare(plan.checks,
                BindingProbe.runProbe("rdmacm_layout_probe", Structs.HEADERS, plan.checks)));
        System.out.printf("layout: %d structs, %d fields checked, %d wrong%n", plan.records, plan.fields, wrong.size());
        assertTrue(wrong.isEmpty(), wrong.size() + " layout mismatch(es) with the installed headers:\n  "
                + String.join("\n  ", wrong));
        assertTrue(plan.records >= 20, "only " + plan.records + " structs checked");
        assertTrue(plan.fields >= 130, "only " + plan.fields + " fields checked");
    }

    @Test
    void socketAddressesAreFullyGenerated() {
        assertEquals(16, sockaddr_in.sizeof());
        assertEquals(28, sockaddr_in6.sizeof());
        assertEquals(8, sockaddr_in6.sin6_addr$OFFSET);
        assertEquals(16, in6_addr.__in6_u.LAYOUT.byteSize());
    }
}
