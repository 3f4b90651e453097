"""Writes the Java sources (jextract's shape) for the model built by model.py."""

import re

from .model import AnonRecord, Array, GenError, Opaque, RecordRef, Scalar, type_align, type_size

JAVA_KEYWORDS = set('''
abstract assert boolean break byte case catch char class const continue default do double
else enum extends final finally float for goto if implements import instanceof int interface
long native new package private protected public return short static strictfp super switch
synchronized this throw throws transient try void volatile while true false null _ var yield
record sealed permits non-sealed when module open exports requires
'''.split())

NATURAL_ALIGN = {'JAVA_BYTE': 1, 'JAVA_BOOLEAN': 1, 'JAVA_SHORT': 2, 'JAVA_INT': 4, 'JAVA_LONG': 8,
                 'JAVA_FLOAT': 4, 'JAVA_DOUBLE': 8, 'ADDRESS': 8}
LAYOUT_CLASS = {'JAVA_BYTE': 'ValueLayout.OfByte', 'JAVA_BOOLEAN': 'ValueLayout.OfBoolean',
                'JAVA_SHORT': 'ValueLayout.OfShort', 'JAVA_INT': 'ValueLayout.OfInt',
                'JAVA_LONG': 'ValueLayout.OfLong', 'JAVA_FLOAT': 'ValueLayout.OfFloat',
                'JAVA_DOUBLE': 'ValueLayout.OfDouble', 'ADDRESS': 'AddressLayout'}


def jdoc(ind, text, *tags):
    """A Javadoc comment: the text, then one block tag per line (tags given without the '@')."""
    return [f'{ind}/**', f'{ind} * {text}', f'{ind} *', *[f'{ind} * @{t}' for t in tags], f'{ind} */']


def jname(name):
    return name + '_' if name in JAVA_KEYWORDS else name


def lowbit(offset):
    return offset & -offset if offset else 1 << 30


def eff_align(t, cap, offset):
    return min(type_align(t), cap, lowbit(offset))


class Emitter:
    def __init__(self, package, header_comment, class_of):
        self.package = package
        self.header_comment = header_comment
        self.class_of = class_of    # Record -> fully qualified or simple Java class name

    # ------------------------------------------------------------------ layouts

    def value_layout(self, s, align):
        base = f'ValueLayout.{s.layout}'
        if align != NATURAL_ALIGN[s.layout]:
            base += f'.withByteAlignment({align})'
        return base

    def type_layout(self, t, align, nested_name=None):
        """Layout expression (without a name) of a C type placed with the given alignment."""
        if isinstance(t, Scalar):
            return self.value_layout(t, align)
        if isinstance(t, Opaque):
            e = f'MemoryLayout.sequenceLayout({t.size}, ValueLayout.JAVA_BYTE)'
            return e + (f'.withByteAlignment({align})' if align != 1 else '')
        if isinstance(t, Array):
            elem_align = min(type_align(t.elem), align)
            return f'MemoryLayout.sequenceLayout({t.count or 0}, {self.type_layout(t.elem, elem_align)})'
        rec = t.record
        if align == rec.align:
            if isinstance(t, RecordRef):
                return f'{self.class_of(rec)}.LAYOUT'
            if nested_name is not None:
                return f'{nested_name}.LAYOUT'
        return self.record_layout(rec, min(align, rec.align))

    def record_layout(self, rec, cap):
        """structLayout/unionLayout expression for rec with every member aligned at most cap."""
        align = min(rec.align, cap)
        members = []
        max_align = 1
        pos = 0
        biggest = 0
        anon = 0
        for f in rec.fields:
            a = eff_align(f.type, align, f.offset)
            nested = None
            if f.name:
                name = f.name
                if isinstance(f.type, AnonRecord):
                    nested = jname(f.name)
            else:
                name = f'$anon{anon}'
                anon += 1
            expr = f'{self.type_layout(f.type, a, nested)}.withName("{name}")'
            size = type_size(f.type)
            max_align = max(max_align, a)
            if rec.kind == 'struct':
                if f.offset < pos:
                    raise GenError(f'{rec.cname}: field {f.name} overlaps the previous one')
                if f.offset > pos:
                    members.append(f'MemoryLayout.paddingLayout({f.offset - pos})')
                pos = f.offset + size
            else:
                if f.offset != 0:
                    raise GenError(f'{rec.cname}: union member {f.name} at offset {f.offset}')
                biggest = max(biggest, size)
            members.append(expr)
        if rec.kind == 'struct':
            if rec.size > pos:
                members.append(f'MemoryLayout.paddingLayout({rec.size - pos})')
            elif rec.size < pos:
                raise GenError(f'{rec.cname}: fields end at {pos}, beyond its size {rec.size}')
        elif rec.size > biggest:
            members.append(f'MemoryLayout.paddingLayout({rec.size})')
        fn = 'structLayout' if rec.kind == 'struct' else 'unionLayout'
        body = ',\n    '.join(m.replace('\n', '\n    ') for m in members)
        e = f'MemoryLayout.{fn}(\n    {body})'
        if align != max_align:
            e += f'.withByteAlignment({align})'
        return e

    # ------------------------------------------------------------------ records

    def record_file(self, rec):
        cls = self.class_of(rec).rsplit('.', 1)[-1]
        out = [self.header_comment, f'package {self.package};', '',
               'import java.lang.foreign.AddressLayout;',
               'import java.lang.foreign.GroupLayout;',
               'import java.lang.foreign.MemoryLayout;',
               'import java.lang.foreign.MemorySegment;',
               'import java.lang.foreign.ValueLayout;',
               'import java.util.Objects;', '']
        out += self.record_class(rec, cls, '', top=True)
        return _drop_unused_imports('\n'.join(out) + '\n')

    def record_class(self, rec, cls, ind, top, enclosing=()):
        if cls in enclosing:
            raise GenError(f'nested class {cls} would hide an enclosing class of the same name')
        i1 = ind + '    '
        i2 = i1 + '    '
        lines = []
        if top:
            what = f'{{@code {rec.cname}}}'
        else:
            what = f'the anonymous {rec.kind} of field {{@code {cls}}}, offsets relative to it'
        lines.append(f'{ind}/**')
        lines.append(f'{ind} * Layout and accessors of {what} ({rec.size} bytes, aligned to {rec.align}).')
        lines.append(f'{ind} * Accessors take the struct as a segment that must cover the field and stay valid for the')
        lines.append(f'{ind} * call; they read and write plain memory, with no synchronization.')
        lines.append(f'{ind} */')
        mods = 'public final class' if top else 'public static final class'
        lines.append(f'{ind}{mods} {cls} {{')
        lines.append(f'{i1}private {cls}() {{}}')
        lines.append('')
        accessors, extra_layouts, nested = self.accessors(rec, rec.align, 0, i1)
        lines += extra_layouts
        lines.append(f'{i1}/** The memory layout, every padding byte explicit; checked against gcc by LayoutTest. */')
        lines.append(f'{i1}public static final GroupLayout LAYOUT = {self.record_layout(rec, rec.align).replace(chr(10), chr(10) + i2)};')
        lines.append('')
        lines += jdoc(i1, 'The C {@code sizeof} of the struct.', 'return the size in bytes')
        lines.append(f'{i1}public static long sizeof() {{')
        lines.append(f'{i2}return {rec.size}L;')
        lines.append(f'{i1}}}')
        lines += accessors
        for name, sub in nested:
            lines.append('')
            lines += self.record_class(sub, name, i1, top=False, enclosing=enclosing + (cls,))
        lines.append(f'{ind}}}')
        return lines

    def accessors(self, rec, cap, base, ind, seen=None):
        """Accessor lines for rec's fields placed at base, flattening anonymous members."""
        seen = set() if seen is None else seen
        out, layouts, nested = [], [], []
        i2 = ind + '    '
        for f in rec.fields:
            a = eff_align(f.type, min(cap, rec.align), f.offset)
            off = base + f.offset
            if not f.name:
                sub = self.accessors(f.type.record, a, off, ind, seen)
                out += sub[0]
                layouts += sub[1]
                nested += sub[2]
                continue
            if f.name in seen:
                raise GenError(f'{rec.cname}: field name {f.name} appears twice after flattening')
            seen.add(f.name)
            m = jname(f.name)
            t = f.type
            decl = f'{{@code {f.cspelling} {f.name}}}' if f.cspelling else f'{{@code {f.name}}}'
            out.append('')
            out.append(f'{ind}/** Byte offset of {decl}. */')
            out.append(f'{ind}public static final long {f.name}$OFFSET = {off}L;')
            if isinstance(t, Scalar):
                vl = self._accessor_layout(t, a, f.name, layouts, ind)
                out += [*jdoc(ind, f'Reads {decl}.', 'param s the struct', 'return the value'),
                        f'{ind}public static {t.java} {m}(MemorySegment s) {{',
                        f'{i2}return s.get({vl}, {f.name}$OFFSET);', f'{ind}}}',
                        *jdoc(ind, f'Writes {decl}.', 'param s the struct', 'param v the value'),
                        f'{ind}public static void {m}(MemorySegment s, {t.java} v) {{',
                        f'{i2}s.set({vl}, {f.name}$OFFSET, v);', f'{ind}}}']
                continue
            out += jdoc(ind, f'{decl}, as a slice of {{@code s}}.', 'param s the struct', 'return the slice')
            if isinstance(t, Array) and t.count is None:
                out += [f'{ind}public static MemorySegment {m}(MemorySegment s) {{',
                        f'{i2}return s.asSlice({f.name}$OFFSET);', f'{ind}}}']
            else:
                out += [f'{ind}public static MemorySegment {m}(MemorySegment s) {{',
                        f'{i2}return s.asSlice({f.name}$OFFSET, {type_size(t)}L);', f'{ind}}}']
            if isinstance(t, Array) and isinstance(t.elem, Scalar):
                e = t.elem
                vl = self._accessor_layout(e, min(type_align(e), a), f.name, layouts, ind)
                idx = 'index' if t.count is None else f'Objects.checkIndex(index, {t.count}L)'
                at = f'{f.name}$OFFSET + {idx} * {e.size}L'
                out += [*jdoc(ind, f'Reads element {{@code index}} of {decl}.', 'param s the struct', 'param index the element', 'return the value'),
                        f'{ind}public static {e.java} {m}(MemorySegment s, long index) {{',
                        f'{i2}return s.get({vl}, {at});', f'{ind}}}',
                        *jdoc(ind, f'Writes element {{@code index}} of {decl}.', 'param s the struct', 'param index the element', 'param v the value'),
                        f'{ind}public static void {m}(MemorySegment s, long index, {e.java} v) {{',
                        f'{i2}s.set({vl}, {at}, v);', f'{ind}}}']
            if isinstance(t, AnonRecord):
                nested.append((m, t.record))
        return out, layouts, nested

    def _accessor_layout(self, s, align, fname, layouts, ind):
        if align == NATURAL_ALIGN[s.layout]:
            return f'ValueLayout.{s.layout}'
        name = f'{fname}$LAYOUT'
        layouts.append(f'{ind}private static final {LAYOUT_CLASS[s.layout]} {name} = '
                       f'ValueLayout.{s.layout}.withByteAlignment({align});')
        return name

    # ------------------------------------------------------------------ header classes

    def header_file(self, cls, doc, constants, functions, lib_expr, lib_name, errno_of, imports):
        out = [self.header_comment, f'package {self.package};', '']
        for imp in ['java.lang.foreign.FunctionDescriptor', 'java.lang.foreign.MemorySegment',
                    'java.lang.foreign.ValueLayout', 'java.lang.invoke.MethodHandle', *imports]:
            out.append(f'import {imp};')
        out += ['', f'/** {doc} */', f'public final class {cls} {{', f'    private {cls}() {{}}']
        last_origin = None
        for c in constants:
            if c.origin != last_origin:
                out += ['', f'    // {c.origin} ({c.header.split("/include/", 1)[-1]})']
                last_origin = c.origin
            out.append(f'    /** {{@code {c.name}}}, from {c.origin}. */')
            out.append(f'    public static final {c.java} {c.name} = {java_literal(c.value, c.java)};')
        for f in functions:
            out += self.function(f, lib_expr, lib_name, errno_of(f))
        if functions:
            out += ['',
                    '    /** Throws, as a fresh exception of the same kind, why a function could not be bound. */',
                    '    private static RuntimeException unavailable(Throwable why) {',
                    '        if (why instanceof UnsupportedVerbException e) {',
                    '            throw new UnsupportedVerbException(e.verb(), e.detail());',
                    '        }',
                    '        if (why instanceof RuntimeException e) {',
                    '            throw new IllegalStateException(e.getMessage(), e);',
                    '        }',
                    '        UnsatisfiedLinkError error = new UnsatisfiedLinkError(why.getMessage());',
                    '        error.initCause(why);',
                    '        throw error;',
                    '    }']
        out.append('}')
        return _drop_unused_imports('\n'.join(out) + '\n')

    def function(self, f, lib_expr, lib_name, errno):
        h = f'{f.name}$Holder'
        arg_layouts = ', '.join(f'ValueLayout.{p.layout}' for p in f.params)
        if f.ret is None:
            desc = f'FunctionDescriptor.ofVoid({arg_layouts})'
        else:
            desc = f'FunctionDescriptor.of(ValueLayout.{f.ret.layout}{", " if arg_layouts else ""}{arg_layouts})'
        names = []
        for p in f.params:
            n = jname(p.name)
            while n in names:
                n += '_'
            names.append(n)
        params = ', '.join(f'{p.java} {n}' for p, n in zip(f.params, names))
        call_args = ', '.join((['Native.errnoState()'] if errno else []) + names)
        ret_java = 'void' if f.ret is None else f.ret.java
        call = f'h$.invokeExact({call_args})'
        stmt = f'{call};' if f.ret is None else f'return ({ret_java}) {call};'
        note = (' Captures errno: read {@link Native#lastErrno()} on this thread after a failed call.'
                if errno else '')
        return [
            '',
            f'    private static final class {h} {{',
            f'        static final FunctionDescriptor DESC = {desc};',
            '        static final MethodHandle HANDLE;',
            '        static final Throwable UNAVAILABLE;',
            '',
            '        static {',
            '            MethodHandle h = null;',
            '            Throwable unavailable = null;',
            '            try {',
            f'                h = NativeAccess.downcall({lib_expr}, "{lib_name}", "{f.name}", DESC, {str(errno).lower()});',
            '            } catch (RuntimeException | LinkageError e) {',
            '                unavailable = e; // reported when the function is called, not when the class loads',
            '            }',
            '            HANDLE = h;',
            '            UNAVAILABLE = unavailable;',
            '        }',
            '    }',
            '',
            *jdoc('    ', f'{{@code {f.prototype}}}: its C descriptor.', 'return the descriptor'),
            f'    public static FunctionDescriptor {f.name}$descriptor() {{',
            f'        return {h}.DESC;',
            '    }',
            '',
            *jdoc('    ', f'{{@code {f.prototype}}}: its downcall handle'
                  + (' (leading parameter: the errno capture segment)' if errno else '') + '.',
                  'return the handle',
                  'throws RuntimeException when the library or the symbol is missing (UnsupportedVerbException)'),
            f'    public static MethodHandle {f.name}$handle() {{',
            f'        MethodHandle h$ = {h}.HANDLE;',
            '        if (h$ == null) {',
            f'            throw unavailable({h}.UNAVAILABLE);',
            '        }',
            '        return h$;',
            '    }',
            '',
            *jdoc('    ', f'{{@code {f.prototype}}}.{note}',
                  *[f'param {n} {{@code {p.ctype}}}' for p, n in zip(f.params, names)],
                  *([] if f.ret is None else ['return what the C function returns']),
                  'throws RuntimeException when the library or the symbol is missing (UnsupportedVerbException)'),
            f'    public static {ret_java} {f.name}({params}) {{',
            f'        MethodHandle h$ = {h}.HANDLE;',
            '        if (h$ == null) {',
            f'            throw unavailable({h}.UNAVAILABLE);',
            '        }',
            '        try {',
            f'            {stmt}',
            '        } catch (RuntimeException | Error e$) {',
            '            throw e$;',
            '        } catch (Throwable t$) {',
            '            throw new AssertionError(t$);',
            '        }',
            '    }',
        ]

    # ------------------------------------------------------------------ index

    def index_file(self, headers, entries):
        out = [self.header_comment, f'package {self.package};', '',
               'import java.util.List;', 'import java.util.Map;', '',
               '/**',
               ' * Every generated struct/union class of this package by its C name: {@code "struct ibv_wc"}',
               ' * for a tagged record, {@code "struct ibv_send_wr.wr.rdma"} for the class of a named field of',
               ' * anonymous type (a member path inside the tagged record). The layout test compiles a C probe',
               ' * from these names.',
               ' */',
               'public final class Structs {',
               '    private Structs() {}', '',
               '    /** The headers to {@code #include} for every C name below. */',
               '    public static final List<String> HEADERS = List.of('
               + ', '.join(f'"{h}"' for h in headers) + ');', '',
               '    /** Every generated layout class by its C name ({@code struct X}, or {@code struct X.member} for nested ones). */',
               '    public static final Map<String, Class<?>> BY_C_NAME = Map.ofEntries(']
        body = [f'            Map.entry("{k}", {v}.class)' for k, v in entries]
        out.append(',\n'.join(body) + ');')
        out.append('}')
        return '\n'.join(out) + '\n'

    # ------------------------------------------------------------------ provenance and prototypes

    def info_file(self, version, package, headers):
        return '\n'.join([
            self.header_comment, f'package {self.package};', '',
            'import java.util.List;', '',
            '/**',
            ' * What the generated classes of this package were read from. The one generated file that names',
            ' * the rdma-core version: a new package revision with unchanged headers changes this file only.',
            ' */',
            'public final class BindingsInfo {',
            '    private BindingsInfo() {}', '',
            f'    /** The version of the {{@code {package}}} package whose headers were read: {{@value}}. */',
            f'    public static final String RDMA_CORE_VERSION = "{version}";', '',
            '    /** The package that installs the headers: {@value}. */',
            f'    public static final String HEADERS_PACKAGE = "{package}";', '',
            '    /** The headers (under {@code /usr/include}) whose declarations were generated; records they use come along. */',
            '    public static final List<String> HEADERS = List.of(' + ', '.join(f'"{h}"' for h in headers) + ');',
            '}']) + '\n'

    def functions_file(self, header_class, functions):
        out = [self.header_comment, f'package {self.package};', '',
               'import java.util.List;', 'import java.util.Map;', '',
               '/**',
               f' * The C prototype of every downcall of {{@link {header_class}}} as libclang read it from the',
               ' * header: by function name, the return type then each parameter\'s type, spelled as declared.',
               ' * The descriptor test redeclares each function with these types in a C probe (gcc accepts only',
               ' * the header\'s own prototype) and compares gcc\'s size and kind of each type with the',
               ' * function\'s {@code $descriptor()}.',
               ' */',
               'public final class Functions {',
               '    private Functions() {}', '',
               '    /** By C function name: {@code [return type, parameter types...]}; {@code "void"} for no result. */',
               '    public static final Map<String, List<String>> C_TYPES = Map.ofEntries(']
        body = []
        for f in functions:
            types = [f.ret.ctype if f.ret else 'void', *(p.ctype for p in f.params)]
            for t in types:
                if '"' in t or '\\' in t:
                    raise GenError(f'{f.name}: type {t} cannot be written as a Java string')
            body.append(f'            Map.entry("{f.name}", List.of(' + ', '.join(f'"{t}"' for t in types) + '))')
        out.append(',\n'.join(body) + ');')
        out.append('}')
        return '\n'.join(out) + '\n'


def java_literal(value, java):
    if java == 'int':
        if not -(1 << 31) <= value < (1 << 32):
            raise GenError(f'value {value} does not fit an int')
        if value >= 1 << 31:
            return f'0x{value:X}'
        return str(value)
    if not -(1 << 63) <= value < (1 << 64):
        raise GenError(f'value {value} does not fit a long')
    if value >= 1 << 63:
        return f'0x{value:X}L'
    return f'{value}L'


def _drop_unused_imports(text):
    lines = text.split('\n')
    body = '\n'.join(l for l in lines if not l.startswith('import '))
    kept = []
    for l in lines:
        if l.startswith('import '):
            simple = l[len('import '):-1].rsplit('.', 1)[-1]
            if not re.search(r'\b' + re.escape(simple) + r'\b', body):
                continue
        kept.append(l)
    return '\n'.join(kept)
