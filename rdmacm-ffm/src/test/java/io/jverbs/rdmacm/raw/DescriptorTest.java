package io.jverbs.rdmacm.raw;

import io.jverbs.ibverbs.testing.DescriptorProbe;
import org.junit.jupiter.api.Test;

import java.lang.foreign.FunctionDescriptor;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every downcall descriptor of rdma_cma_h against its prototype in the installed rdma_cma.h and rdma_verbs.h, checked by gcc. */
class DescriptorTest {

    @Test
    void descriptorsMatchThePrototypesInTheInstalledHeaders() throws Exception {
        Map<String, FunctionDescriptor> descriptors = DescriptorProbe.descriptors(rdma_cma_h.class);
        DescriptorProbe.Plan plan = DescriptorProbe.plan(descriptors, Functions.C_TYPES);
        List<String> wrong = DescriptorProbe.run("rdmacm_descriptor_probe", Structs.HEADERS, plan);
        System.out.printf("descriptors: %d functions, %d wrong%n", plan.functions, wrong.size());
        assertTrue(wrong.isEmpty(), wrong.size() + " descriptor mismatch(es) with the installed headers:\n  "
                + String.join("\n  ", wrong));
        assertTrue(plan.functions >= 35, "only " + plan.functions + " functions checked");
    }

    @Test
    void handlesAreMadeFromTheCheckedDescriptors() {
        List<String> wrong = DescriptorProbe.handleMismatches(rdma_cma_h.class, DescriptorProbe.descriptors(rdma_cma_h.class));
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
    }
}
