package io.jverbs.ibverbs.testing;


import java.io.IOException;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.PaddingLayout;
import java.lang.foreign.SequenceLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Checks generated raw bindings against the installed C headers: it writes a C program that
 * prints {@code sizeof}, {@code _Alignof}, {@code offsetof} and constant values, compiles it with
 * gcc, runs it and compares every number with what the Java classes say. Only the C names come
 * from the generated code; every number it trusts comes from gcc. Shared by the layout and
 * constant tests of ibverbs-ffm and rdmacm-ffm.
 */
public final class BindingProbe {
    private BindingProbe() {
    }

    /** One number to compare: what Java says and the C expression that must agree. */
    public record Check(String what, String cExpression, long javaValue, boolean intBits) {
        public static Check exact(String what, String c, long java) {
            return new Check(what, c, java, false);
        }

        /** For Java {@code int} constants: C's value must fit 32 bits and have the same bits. */
        public static Check intBits(String what, String c, int java) {
            return new Check(what, c, java, true);
        }
    }

    /** Checks to run in C, problems found in Java alone, and what was covered. */
    public static final class Plan {
        public final List<Check> checks = new ArrayList<>();
        public final List<String> problems = new ArrayList<>();
        public int records;
        public int fields;
        public int constants;
    }

    private record Member(long offset, MemoryLayout layout) {
    }

    /** Plans the layout checks of every class in a {@code Structs.BY_C_NAME} map. */
    public static Plan layoutPlan(Map<String, Class<?>> byCName) {
        Plan plan = new Plan();
        for (Map.Entry<String, Class<?>> e : new TreeMap<>(byCName).entrySet()) {
            planRecord(plan, e.getKey(), e.getValue());
        }
        return plan;
    }

    /** The C type of an index key: {@code struct x} or, for {@code struct x.a.b}, the type of that member. */
    static String cType(String key) {
        int dot = key.indexOf('.');
        if (dot < 0) {
            return key;
        }
        return "__typeof__(((" + key.substring(0, dot) + " *)0)->" + key.substring(dot + 1) + ")";
    }

    static void planRecord(Plan plan, String key, Class<?> cls) {
        plan.records++;
        String type = cType(key);
        GroupLayout layout;
        long sizeof;
        try {
            layout = (GroupLayout) cls.getField("LAYOUT").get(null);
            sizeof = (long) cls.getMethod("sizeof").invoke(null);
        } catch (ReflectiveOperationException | RuntimeException e) {
            plan.problems.add(key + ": no usable LAYOUT / sizeof(): " + e);
            return;
        }
        if (sizeof != layout.byteSize()) {
            plan.problems.add(key + ": sizeof() " + sizeof + " but LAYOUT.byteSize() " + layout.byteSize());
        }
        plan.checks.add(Check.exact(key + ": sizeof", "sizeof(" + type + ")", layout.byteSize()));
        plan.checks.add(Check.exact(key + ": alignof", "_Alignof(" + type + ")", layout.byteAlignment()));

        Map<String, Member> members = new LinkedHashMap<>();
        flatten(layout, 0, members, plan.problems, key);
        Map<String, Long> offsets = new HashMap<>();
        for (Field f : cls.getDeclaredFields()) {
            if (f.getName().endsWith("$OFFSET") && Modifier.isStatic(f.getModifiers())) {
                try {
                    offsets.put(f.getName().substring(0, f.getName().length() - "$OFFSET".length()), f.getLong(null));
                } catch (IllegalAccessException e) {
                    plan.problems.add(key + ": " + f.getName() + " is not public");
                }
            }
        }
        for (String name : members.keySet()) {
            if (!offsets.containsKey(name)) {
                plan.problems.add(key + "." + name + ": in LAYOUT but has no " + name + "$OFFSET");
            }
        }
        for (Map.Entry<String, Long> o : new TreeMap<>(offsets).entrySet()) {
            String name = o.getKey();
            long offset = o.getValue();
            Member m = members.get(name);
            String what = key + "." + name;
            plan.fields++;
            if (m == null) {
                plan.problems.add(what + ": has " + name + "$OFFSET but no LAYOUT member of that name");
                continue;
            }
            if (m.offset() != offset) {
                plan.problems.add(what + ": " + name + "$OFFSET is " + offset + " but LAYOUT places it at " + m.offset());
            }
            String field = "((" + type + " *)0)->" + name;
            plan.checks.add(Check.exact(what + ": offset", "__builtin_offsetof(" + type + ", " + name + ")", offset));
            boolean flexible = m.layout() instanceof SequenceLayout s && s.elementCount() == 0;
            if (!flexible) {
                plan.checks.add(Check.exact(what + ": size", "sizeof(" + field + ")", m.layout().byteSize()));
            }
            plan.checks.add(Check.exact(what + ": alignment", "__alignof__(" + field + ")", m.layout().byteAlignment()));
            if (m.layout() instanceof ValueLayout v) {
                plan.checks.add(Check.exact(what + ": kind (" + v.carrier().getSimpleName() + ")", kindTest(v, field), 1));
            }
            checkGetter(plan, cls, name, m.layout(), what);
        }
    }

    /**
     * A C expression that is 1 when the field's type is of the kind the Java carrier stands for:
     * a pointer for {@code MemorySegment}, a floating type for float/double, an integer, char,
     * enum or bool type for the integer carriers (gcc's {@code __builtin_classify_type}).
     */
    public static String kindTest(ValueLayout v, String field) {
        String k = "__builtin_classify_type(" + field + ")";
        Class<?> carrier = v.carrier();
        if (carrier == MemorySegment.class) {
            return k + " == 5";
        }
        if (carrier == float.class || carrier == double.class) {
            return k + " == 8";
        }
        return "(" + k + " >= 1 && " + k + " <= 4)";
    }

    private static void checkGetter(Plan plan, Class<?> cls, String name, MemoryLayout layout, String what) {
        Method getter = null;
        for (String candidate : List.of(name, name + "_")) {
            try {
                getter = cls.getMethod(candidate, MemorySegment.class);
                break;
            } catch (NoSuchMethodException e) {
                // try the escaped name of a Java keyword
            }
        }
        if (getter == null) {
            plan.problems.add(what + ": no getter");
            return;
        }
        Class<?> expected = layout instanceof ValueLayout v ? v.carrier() : MemorySegment.class;
        if (getter.getReturnType() != expected) {
            plan.problems.add(what + ": getter returns " + getter.getReturnType().getSimpleName() + ", layout carries "
                    + expected.getSimpleName());
        }
    }

    /** Named members of a group with their offsets; members of {@code $anonN} groups are lifted, as C does. */
    private static void flatten(GroupLayout group, long base, Map<String, Member> out, List<String> problems, String where) {
        long offset = 0;
        for (MemoryLayout m : group.memberLayouts()) {
            long at = group instanceof StructLayout ? base + offset : base;
            if (!(m instanceof PaddingLayout)) {
                String name = m.name().orElse(null);
                if (name == null) {
                    problems.add(where + ": unnamed member at offset " + at);
                } else if (name.startsWith("$anon") && m instanceof GroupLayout sub) {
                    flatten(sub, at, out, problems, where);
                } else if (out.put(name, new Member(at, m)) != null) {
                    problems.add(where + "." + name + ": appears twice");
                }
            }
            if (group instanceof StructLayout) {
                offset += m.byteSize();
            }
        }
    }

    /** Plans a value check for every public static final int/long constant of a header class. */
    public static Plan constantPlan(Class<?> headerClass) {
        Plan plan = new Plan();
        for (Field f : headerClass.getDeclaredFields()) {
            int mod = f.getModifiers();
            if (!Modifier.isPublic(mod) || !Modifier.isStatic(mod) || !Modifier.isFinal(mod)) {
                continue;
            }
            try {
                if (f.getType() == int.class) {
                    plan.checks.add(Check.intBits(f.getName(), f.getName(), f.getInt(null)));
                } else if (f.getType() == long.class) {
                    plan.checks.add(Check.exact(f.getName(), f.getName(), f.getLong(null)));
                } else {
                    continue;
                }
            } catch (IllegalAccessException e) {
                throw new AssertionError(e);
            }
            plan.constants++;
        }
        plan.checks.sort(java.util.Comparator.comparing(Check::what));
        return plan;
    }

    /** The probe's source: one {@code printf} of {@code index value} per check. */
    static String probeSource(List<String> headers, List<Check> checks) {
        return probeSource(headers, List.of(), checks);
    }

    /** The probe's source, with file-scope declarations (macros, static assertions) before {@code main}. */
    static String probeSource(List<String> headers, List<String> declarations, List<Check> checks) {
        StringBuilder c = new StringBuilder("#include <stdio.h>\n#include <stddef.h>\n");
        for (String h : headers) {
            c.append("#include <").append(h).append(">\n");
        }
        for (String d : declarations) {
            c.append(d).append('\n');
        }
        c.append("int main(void) {\n");
        for (int i = 0; i < checks.size(); i++) {
            c.append("    printf(\"%d %lld\\n\", ").append(i).append(", (long long)(")
                    .append(checks.get(i).cExpression()).append("));\n");
        }
        c.append("    return 0;\n}\n");
        return c.toString();
    }

    /** Compiles and runs the probe; returns the C value of every check by its index. */
    public static Map<Integer, Long> runProbe(String name, List<String> headers, List<Check> checks)
            throws IOException, InterruptedException {
        return runProbe(name, headers, List.of(), checks);
    }

    /** Compiles and runs the probe with file-scope declarations; returns the C value of every check by its index. */
    public static Map<Integer, Long> runProbe(String name, List<String> headers, List<String> declarations, List<Check> checks)
            throws IOException, InterruptedException {
        var exe = CBuild.executable(name, probeSource(headers, declarations, checks));
        Map<Integer, Long> values = new HashMap<>();
        for (String line : CBuild.run(List.of(exe.toString())).split("\n")) {
            if (!line.isBlank()) {
                String[] parts = line.trim().split(" ");
                values.put(Integer.parseInt(parts[0]), Long.parseLong(parts[1]));
            }
        }
        return values;
    }

    /** Every disagreement between Java and C, one line each. */
    public static List<String> compare(List<Check> checks, Map<Integer, Long> cValues) {
        List<String> wrong = new ArrayList<>();
        for (int i = 0; i < checks.size(); i++) {
            Check check = checks.get(i);
            Long c = cValues.get(i);
            if (c == null) {
                wrong.add(check.what() + ": the probe printed no value");
            } else if (check.intBits()) {
                if (c < Integer.MIN_VALUE || c > 0xFFFF_FFFFL || (int) (long) c != (int) check.javaValue()) {
                    wrong.add(check.what() + ": Java int " + check.javaValue() + ", C " + c);
                }
            } else if (c != check.javaValue()) {
                wrong.add(check.what() + ": Java " + check.javaValue() + ", C " + c);
            }
        }
        return wrong;
    }
}
