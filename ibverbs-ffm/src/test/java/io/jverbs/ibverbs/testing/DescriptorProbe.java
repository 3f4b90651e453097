package io.jverbs.ibverbs.testing;

import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodType;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Checks every generated downcall's {@link FunctionDescriptor} against the function's prototype
 * in the installed headers. The generator records each prototype's C types ({@code Functions.C_TYPES});
 * the probe first redeclares every function with those types, which gcc accepts only when they
 * are the header's prototype (a conflicting redeclaration is a compile error), then prints gcc's {@code sizeof} and
 * {@code __builtin_classify_type} of the result and of each parameter, which must agree with the
 * descriptor's layouts (an {@code AddressLayout} is a pointer, a {@code JAVA_INT} a 4-byte integer).
 */
public final class DescriptorProbe {
    private DescriptorProbe() {
    }

    /**
     * An expression of type {@code T} as a parameter or result holds it: an array or function type
     * becomes a pointer (as a parameter's type is adjusted), and no integer promotion happens.
     */
    static final String VALUE_MACRO = "#define JV_VALUE(T) ((void)0, *(__typeof__(T) *)0)";

    /** Checks to run in C, the declarations they need, and problems found in Java alone. */
    public static final class Plan {
        public final List<BindingProbe.Check> checks = new ArrayList<>();
        public final List<String> declarations = new ArrayList<>(List.of(VALUE_MACRO));
        public final List<String> problems = new ArrayList<>();
        public int functions;
    }

    /** Every {@code NAME$descriptor()} of a generated header class, by {@code NAME}. */
    public static Map<String, FunctionDescriptor> descriptors(Class<?> headerClass) {
        Map<String, FunctionDescriptor> out = new TreeMap<>();
        for (Method m : headerClass.getDeclaredMethods()) {
            if (m.getName().endsWith("$descriptor") && Modifier.isStatic(m.getModifiers()) && m.getParameterCount() == 0) {
                try {
                    out.put(m.getName().substring(0, m.getName().length() - "$descriptor".length()),
                            (FunctionDescriptor) m.invoke(null));
                } catch (ReflectiveOperationException e) {
                    throw new AssertionError(m.getName() + " cannot be called", e);
                }
            }
        }
        return out;
    }

    /**
     * Plans the checks of every descriptor against its C types.
     *
     * @param cTypes by function name, the C return type then each parameter's C type
     */
    public static Plan plan(Map<String, FunctionDescriptor> descriptors, Map<String, List<String>> cTypes) {
        Plan plan = new Plan();
        for (String name : new TreeSet<>(cTypes.keySet())) {
            if (!descriptors.containsKey(name)) {
                plan.problems.add(name + ": has C types but no " + name + "$descriptor()");
            }
        }
        for (Map.Entry<String, FunctionDescriptor> e : new TreeMap<>(descriptors).entrySet()) {
            String name = e.getKey();
            List<String> types = cTypes.get(name);
            if (types == null) {
                plan.problems.add(name + ": has a descriptor but no C types");
                continue;
            }
            planFunction(plan, name, e.getValue(), types);
        }
        return plan;
    }

    private static void planFunction(Plan plan, String name, FunctionDescriptor d, List<String> types) {
        plan.functions++;
        String ret = types.getFirst();
        List<String> params = types.subList(1, types.size());
        List<String> typed = params.stream().map(t -> "__typeof__(" + t + ")").toList();
        // A redeclaration must be compatible with the header's (C11 6.7p4), else gcc stops with
        // "conflicting types for NAME". Not __builtin_types_compatible_p on &NAME: gcc gives
        // __attribute__((const)) functions (ibv_rate_to_mbps) a qualified type no plain one matches.
        // (NAME) in parentheses: a function-like macro of the same name (ibv_reg_mr) stays unexpanded.
        plan.declarations.add("extern __typeof__(" + ret + ") (" + name + ")("
                + (typed.isEmpty() ? "void" : String.join(", ", typed)) + ");");

        String result = name + ": result (" + ret + ")";
        plan.checks.add(BindingProbe.Check.exact(result + ": is void",
                "__builtin_types_compatible_p(__typeof__(" + ret + "), void)", d.returnLayout().isEmpty() ? 1 : 0));
        if (d.returnLayout().isPresent() && !ret.equals("void")) {
            planValue(plan, result, d.returnLayout().get(), ret);
        }
        List<MemoryLayout> args = d.argumentLayouts();
        if (args.size() != params.size()) {
            plan.problems.add(name + ": the descriptor has " + args.size() + " parameter(s), the C prototype " + params.size());
            return;
        }
        for (int i = 0; i < params.size(); i++) {
            planValue(plan, name + ": parameter " + (i + 1) + " (" + params.get(i) + ")", args.get(i), params.get(i));
        }
    }

    private static void planValue(Plan plan, String what, MemoryLayout layout, String cType) {
        if (!(layout instanceof ValueLayout v)) {
            plan.problems.add(what + ": layout " + layout + " is not a value layout");
            return;
        }
        String value = "JV_VALUE(" + cType + ")";
        plan.checks.add(BindingProbe.Check.exact(what + ": size", "sizeof(" + value + ")", v.byteSize()));
        plan.checks.add(BindingProbe.Check.exact(what + ": kind (" + v.carrier().getSimpleName() + ")",
                BindingProbe.kindTest(v, value), 1));
    }

    /** Compiles and runs the probe: every disagreement, the plan's Java-only problems first. */
    public static List<String> run(String probeName, List<String> headers, Plan plan) throws IOException, InterruptedException {
        List<String> wrong = new ArrayList<>(plan.problems);
        wrong.addAll(BindingProbe.compare(plan.checks,
                BindingProbe.runProbe(probeName, headers, plan.declarations, plan.checks)));
        return wrong;
    }

    /**
     * Functions whose downcall handle was not made from the checked descriptor: the handle's type
     * must be the descriptor's, after a leading errno capture segment when the function captures errno.
     */
    public static List<String> handleMismatches(Class<?> headerClass, Map<String, FunctionDescriptor> descriptors) {
        List<String> wrong = new ArrayList<>();
        for (Map.Entry<String, FunctionDescriptor> e : descriptors.entrySet()) {
            String name = e.getKey();
            MethodType expected = e.getValue().toMethodType();
            MethodType actual;
            try {
                actual = ((MethodHandle) headerClass.getMethod(name + "$handle").invoke(null)).type();
            } catch (InvocationTargetException ex) {
                wrong.add(name + ": no handle: " + ex.getCause());
                continue;
            } catch (ReflectiveOperationException ex) {
                wrong.add(name + ": no " + name + "$handle(): " + ex);
                continue;
            }
            boolean capturesErrno = actual.parameterCount() == expected.parameterCount() + 1
                    && actual.parameterType(0) == MemorySegment.class;
            if (!actual.equals(expected) && !(capturesErrno && actual.dropParameterTypes(0, 1).equals(expected))) {
                wrong.add(name + ": handle type " + actual + ", descriptor " + expected);
            }
        }
        return wrong;
    }
}
