package io.jverbs.ibverbs.raw;

import io.jverbs.ibverbs.testing.DescriptorProbe;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every downcall descriptor of verbs_h against its prototype in the installed verbs.h, checked by gcc. */
class DescriptorTest {

    @Test
    void descriptorsMatchThePrototypesInTheInstalledHeaders() throws Exception {
        Map<String, FunctionDescriptor> descriptors = DescriptorProbe.descriptors(verbs_h.class);
        DescriptorProbe.Plan plan = DescriptorProbe.plan(descriptors, Functions.C_TYPES);
        List<String> wrong = DescriptorProbe.run("ibverbs_descriptor_probe", Structs.HEADERS, plan);
        System.out.printf("descriptors: %d functions, %d wrong%n", plan.functions, wrong.size());
        assertTrue(wrong.isEmpty(), wrong.size() + " descriptor mismatch(es) with the installed headers:\n  "
                + String.join("\n  ", wrong));
        assertTrue(plan.functions >= 60, "only " + plan.functions + " functions checked");
    }

    @Test
    void handlesAreMadeFromTheCheckedDescriptors() {
        List<String> wrong = DescriptorProbe.handleMismatches(verbs_h.class, DescriptorProbe.descriptors(verbs_h.class));
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
    }

    @Test
    void aWrongDescriptorIsCaught() throws Exception {
        // ibv_get_device_list returns a pointer and takes one (both 8 bytes); ibv_free_device_list returns void
        Map<String, FunctionDescriptor> broken = Map.of(
                "ibv_get_device_list", FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT),
                "ibv_free_device_list", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS),
                "ibv_get_device_name", FunctionDescriptor.of(ValueLayout.ADDRESS));
        DescriptorProbe.Plan plan = DescriptorProbe.plan(broken, Map.of(
                "ibv_get_device_list", Functions.C_TYPES.get("ibv_get_device_list"),
                "ibv_free_device_list", Functions.C_TYPES.get("ibv_free_device_list"),
                "ibv_get_device_name", Functions.C_TYPES.get("ibv_get_device_name")));
        List<String> wrong = DescriptorProbe.run("broken_descriptor_probe", Structs.HEADERS, plan);
        assertEquals(List.of(
                "ibv_get_device_name: the descriptor has 0 parameter(s), the C prototype 1",
                "ibv_free_device_list: result (void): is void: Java 0, C 1",
                "ibv_get_device_list: result (struct ibv_device **): kind (long): Java 1, C 0",
                "ibv_get_device_list: parameter 1 (int *): size: Java 4, C 8",
                "ibv_get_device_list: parameter 1 (int *): kind (int): Java 1, C 0"), wrong);
    }

    @Test
    void cTypesThatAreNotTheHeadersPrototypeDoNotCompile() {
        DescriptorProbe.Plan plan = DescriptorProbe.plan(
                Map.of("ibv_get_device_list", verbs_h.ibv_get_device_list$descriptor()),
                Map.of("ibv_get_device_list", List.of("struct ibv_device **", "long *")));
        IOException e = assertThrows(IOException.class,
                () -> DescriptorProbe.run("not_the_prototype_probe", Structs.HEADERS, plan));
        assertTrue(e.getMessage().contains("conflicting types for") && e.getMessage().contains("ibv_get_device_list"),
                e.getMessage());
    }
}
