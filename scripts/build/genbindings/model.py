"""Reads the installed rdma-core headers with libclang into a small model.

The model keeps what the Java emitter needs and nothing of clang: records (struct/union)
with byte offsets, sizes and alignments as clang computed them for x86-64 SysV, integer
constants (enum constants and object-like #defines that evaluate to an integer), and the
extern functions with their parameter and return kinds.
"""

import os
import re
from dataclasses import dataclass, field
from typing import List, Optional, Union

import clang.cindex as ci

LIBCLANG_CANDIDATES = (
    '/usr/lib/llvm-15/lib/libclang-15.so.1',
    '/usr/lib/x86_64-linux-gnu/libclang-15.so.1',
)
CLANG_ARGS = ['-x', 'c', '-std=gnu11', '-I/usr/include']
RDMA_CORE_DIRS = ('/usr/include/infiniband/', '/usr/include/rdma/')
# System records rdma_cm users need field by field; every other system record is opaque.
SOCKET_RECORDS = ('sockaddr', 'sockaddr_in', 'sockaddr_in6', 'in_addr', 'in6_addr', 'sockaddr_ib')

_configured = False


class GenError(Exception):
    pass


def _configure():
    global _configured
    if _configured:
        return
    for lib in LIBCLANG_CANDIDATES:
        if os.path.exists(lib):
            ci.Config.set_library_file(lib)
            break
    else:
        raise GenError('libclang 15 not found; install it: apt-get install -y python3-clang-15 libclang1-15')
    _configured = True


# ---------------------------------------------------------------------------------------------
# Types


@dataclass
class Scalar:
    java: str          # byte short int long float double boolean MemorySegment
    layout: str        # ValueLayout constant name: JAVA_INT, ADDRESS, ...
    size: int
    align: int         # alignment of the C type


@dataclass
class Opaque:
    cname: str
    size: int
    align: int


@dataclass
class RecordRef:
    record: 'Record'


@dataclass
class AnonRecord:
    record: 'Record'


@dataclass
class Array:
    count: Optional[int]   # None: flexible array member
    elem: 'CType'
    size: int
    align: int


CType = Union[Scalar, Opaque, RecordRef, AnonRecord, Array]


def type_size(t):
    if isinstance(t, (Scalar, Opaque, Array)):
        return t.size
    return t.record.size


def type_align(t):
    if isinstance(t, (Scalar, Opaque, Array)):
        return t.align
    return t.record.align


def c_spelling(spelling):
    """A field's C type for the Javadoc: whitespace normalised, clang's anonymous-type locations dropped."""
    return re.sub(r'\((?:unnamed|anonymous) (struct|union) at [^)]*\)', r'{...}', ' '.join(spelling.split()))


@dataclass
class Field:
    name: str          # '' for an anonymous struct/union member
    offset: int        # bytes, relative to the enclosing record
    type: CType
    cspelling: str = ''  # the C declaration's type, for the Javadoc


@dataclass
class Record:
    kind: str          # 'struct' or 'union'
    tag: str           # C tag ('' for an anonymous record)
    size: int
    align: int
    fields: List[Field] = field(default_factory=list)
    module: str = ''   # 'ibverbs' or 'rdmacm' for named records
    header: str = ''   # header file that defines it

    @property
    def cname(self):
        return f'{self.kind} {self.tag}'


@dataclass
class Constant:
    name: str
    value: int         # the value with the sign the C expression has
    java: str          # 'int' or 'long'
    origin: str        # 'enum <tag>' or '#define'
    header: str


@dataclass
class Param:
    name: str
    java: str
    layout: str
    ctype: str


@dataclass
class Function:
    name: str
    ret: Optional[Param]     # None for void
    params: List[Param]
    prototype: str
    header: str


# ---------------------------------------------------------------------------------------------
# Parsing


def parse(path_or_source, unsaved_name=None):
    _configure()
    index = ci.Index.create()
    opts = ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD
    if unsaved_name:
        tu = index.parse(unsaved_name, args=CLANG_ARGS, unsaved_files=[(unsaved_name, path_or_source)], options=opts)
    else:
        tu = index.parse(path_or_source, args=CLANG_ARGS, options=opts)
    return tu


def check_diagnostics(tu, what):
    errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errors:
        raise GenError(f'{what}: clang reports errors:\n' + '\n'.join(str(d) for d in errors[:20]))


def _file_of(cursor):
    loc = cursor.location
    return loc.file.name if loc.file else ''


def is_rdma_core(path):
    return path.startswith(RDMA_CORE_DIRS)


_INT_KINDS = {
    ci.TypeKind.CHAR_U, ci.TypeKind.UCHAR, ci.TypeKind.CHAR_S, ci.TypeKind.SCHAR,
    ci.TypeKind.USHORT, ci.TypeKind.SHORT, ci.TypeKind.UINT, ci.TypeKind.INT,
    ci.TypeKind.ULONG, ci.TypeKind.LONG, ci.TypeKind.ULONGLONG, ci.TypeKind.LONGLONG,
}
_INT_BY_SIZE = {1: ('byte', 'JAVA_BYTE'), 2: ('short', 'JAVA_SHORT'), 4: ('int', 'JAVA_INT'), 8: ('long', 'JAVA_LONG')}


def scalar_of(t):
    """Scalar for a canonical clang type, or None when it is not a scalar."""
    k = t.kind
    if k in _INT_KINDS or k == ci.TypeKind.ENUM:
        size = t.get_size()
        if size not in _INT_BY_SIZE:
            raise GenError(f'integer type {t.spelling} of size {size} has no Java carrier')
        java, layout = _INT_BY_SIZE[size]
        return Scalar(java, layout, size, t.get_align())
    if k == ci.TypeKind.BOOL:
        return Scalar('boolean', 'JAVA_BOOLEAN', 1, 1)
    if k == ci.TypeKind.FLOAT:
        return Scalar('float', 'JAVA_FLOAT', 4, 4)
    if k == ci.TypeKind.DOUBLE:
        return Scalar('double', 'JAVA_DOUBLE', 8, 8)
    if k in (ci.TypeKind.POINTER, ci.TypeKind.BLOCKPOINTER):
        return Scalar('MemorySegment', 'ADDRESS', 8, 8)
    return None


class Universe:
    """All named records of one translation unit, built on demand and keyed by C name."""

    def __init__(self, module, known=None):
        self.module = module
        self.records = {}            # cname -> Record (this module)
        self.known = known or {}     # cname -> Record (modules generated earlier)
        self.pending = []            # declarations whose references still need walking

    def record_for_decl(self, decl):
        decl = decl.get_definition() or decl
        kind = 'union' if decl.kind == ci.CursorKind.UNION_DECL else 'struct'
        cname = f'{kind} {decl.spelling}'
        if cname in self.known:
            return self.known[cname]
        if cname in self.records:
            return self.records[cname]
        if not decl.is_definition():
            return None
        rec = Record(kind, decl.spelling, decl.type.get_size(), decl.type.get_align(),
                     module=self.module, header=_file_of(decl))
        self.records[cname] = rec   # before the fields: pointers may refer back
        rec.fields = self._fields(decl, rec.cname)
        self.pending.append(decl)
        return rec

    def _anon_record(self, decl, where):
        kind = 'union' if decl.kind == ci.CursorKind.UNION_DECL else 'struct'
        rec = Record(kind, '', decl.type.get_size(), decl.type.get_align())
        rec.fields = self._fields(decl, where)
        return rec

    def _fields(self, decl, where):
        out = []
        for f in decl.type.get_fields():
            if f.is_bitfield():
                raise GenError(f'{where}.{f.spelling} is a bitfield; the generator does not support bitfields')
            off_bits = f.get_field_offsetof()
            if off_bits < 0 or off_bits % 8:
                raise GenError(f'{where}.{f.spelling}: offset {off_bits} bits is not a byte offset')
            ftype = self.ctype(f.type, f'{where}.{f.spelling or "<anon>"}')
            out.append(Field(f.spelling, off_bits // 8, ftype, c_spelling(f.type.spelling)))
        return out

    def ctype(self, t, where):
        t = t.get_canonical()
        s = scalar_of(t)
        if s is not None:
            return s
        if t.kind == ci.TypeKind.CONSTANTARRAY:
            elem = self.ctype(t.element_type, where + '[]')
            return Array(t.element_count, elem, t.get_size(), type_align(elem))
        if t.kind == ci.TypeKind.INCOMPLETEARRAY:
            elem = self.ctype(t.element_type, where + '[]')
            return Array(None, elem, 0, type_align(elem))
        if t.kind == ci.TypeKind.RECORD:
            decl = t.get_declaration()
            path = _file_of(decl)
            if decl.spelling in SOCKET_RECORDS or (is_rdma_core(path) and decl.spelling):
                rec = self.record_for_decl(decl)
                if rec is None:
                    raise GenError(f'{where}: {t.spelling} has no definition')
                return RecordRef(rec)
            if not decl.spelling and decl.semantic_parent.kind in (ci.CursorKind.STRUCT_DECL, ci.CursorKind.UNION_DECL):
                # declared inside the record being generated: part of it
                return AnonRecord(self._anon_record(decl, where))
            if not is_rdma_core(path):
                return Opaque(t.spelling, t.get_size(), t.get_align())
            raise GenError(f'{where}: unnamed record {t.spelling} outside a record is not supported')
        raise GenError(f'{where}: unsupported type {t.spelling} ({t.kind})')

    def reach(self, t):
        """Generates the records a pointer or value of type t refers to (transitively)."""
        seen = set()
        stack = [t]
        while stack:
            t = stack.pop().get_canonical()
            key = t.spelling
            if key in seen:
                continue
            seen.add(key)
            if t.kind == ci.TypeKind.POINTER:
                stack.append(t.get_pointee())
            elif t.kind in (ci.TypeKind.CONSTANTARRAY, ci.TypeKind.INCOMPLETEARRAY):
                stack.append(t.element_type)
            elif t.kind == ci.TypeKind.FUNCTIONPROTO:
                stack.append(t.get_result())
                stack.extend(t.argument_types())
            elif t.kind == ci.TypeKind.RECORD:
                decl = t.get_declaration()
                if decl.spelling and (decl.spelling in SOCKET_RECORDS or is_rdma_core(_file_of(decl))):
                    self.record_for_decl(decl)

    def drain(self):
        """Walks field types of newly built records until the set of records is closed."""
        while self.pending:
            decl = self.pending.pop()
            self._walk_fields(decl)

    def _walk_fields(self, decl):
        for f in decl.type.get_fields():
            ft = f.type.get_canonical()
            if ft.kind == ci.TypeKind.RECORD and not ft.get_declaration().spelling:
                self._walk_fields(ft.get_declaration())
            else:
                self.reach(ft)


def top_level(tu, headers):
    """Cursors declared at file scope in the given header files, in source order."""
    return [c for c in tu.cursor.get_children() if _file_of(c) in headers]


def collect_records(tu, universe, root_headers):
    for c in top_level(tu, root_headers):
        if c.kind in (ci.CursorKind.STRUCT_DECL, ci.CursorKind.UNION_DECL) and c.is_definition() and c.spelling:
            universe.record_for_decl(c)
    universe.drain()


def collect_functions(tu, universe, headers, skip_names):
    funcs = []
    seen = set(skip_names)
    for c in top_level(tu, headers):
        if c.kind != ci.CursorKind.FUNCTION_DECL:
            continue
        if c.is_definition() or c.storage_class == ci.StorageClass.STATIC:
            continue
        if c.spelling in seen:
            continue
        seen.add(c.spelling)
        ftype = c.type
        if ftype.kind != ci.TypeKind.FUNCTIONPROTO:
            raise GenError(f'{c.spelling}: declared without a prototype')
        if ftype.is_function_variadic():
            raise GenError(f'{c.spelling}: variadic functions are not supported')
        ret_t = ftype.get_result()
        universe.reach(ret_t)
        ret = None if ret_t.get_canonical().kind == ci.TypeKind.VOID else _param('', ret_t, c.spelling)
        params = []
        for i, a in enumerate(c.get_arguments()):
            universe.reach(a.type)
            params.append(_param(a.spelling or f'arg{i}', a.type, c.spelling))
        universe.drain()
        args = ', '.join(_decl(a.type.spelling, a.spelling) for a in c.get_arguments()) or 'void'
        rs = ret_t.spelling
        proto = f'{rs}{"" if rs.endswith("*") else " "}{c.spelling}({args})'
        funcs.append(Function(c.spelling, ret, params, proto, _file_of(c)))
    return funcs


def _decl(type_spelling, name):
    if not name:
        return type_spelling
    if '[' in type_spelling:
        base, dims = type_spelling.split('[', 1)
        return f'{base.strip()} {name}[{dims}'
    if type_spelling.endswith('*'):
        return type_spelling.replace(' *', '*').replace('*', ' *', 1).replace('* *', '**') + name
    return f'{type_spelling} {name}'


def _param(name, t, fname):
    ct = t.get_canonical()
    if ct.kind in (ci.TypeKind.CONSTANTARRAY, ci.TypeKind.INCOMPLETEARRAY):
        ct = None  # decays to a pointer
        s = Scalar('MemorySegment', 'ADDRESS', 8, 8)
    else:
        s = scalar_of(ct)
    if s is None:
        raise GenError(f'{fname}: parameter or result {name} of type {t.spelling} is not supported (struct by value?)')
    return Param(name, s.java, s.layout, t.spelling)


# ---------------------------------------------------------------------------------------------
# Constants


def collect_enum_constants(tu, headers):
    out = []

    def visit(cursors):
        for ch in cursors:
            if ch.kind == ci.CursorKind.ENUM_DECL and ch.is_definition():
                size = ch.enum_type.get_canonical().get_size()
                tag = ch.spelling if ch.spelling and '(' not in ch.spelling else ''
                for e in ch.get_children():
                    if e.kind == ci.CursorKind.ENUM_CONSTANT_DECL:
                        out.append(Constant(e.spelling, e.enum_value, 'long' if size == 8 else 'int',
                                            f'enum {tag}'.strip(), _file_of(e)))
            elif ch.kind in (ci.CursorKind.STRUCT_DECL, ci.CursorKind.UNION_DECL):
                visit(ch.get_children())

    visit(top_level(tu, headers))
    return out


def macro_candidates(tu, headers):
    """Object-like macros defined in the headers, in source order (first definition wins)."""
    out = []
    seen = set()
    for c in tu.cursor.get_children():
        if c.kind != ci.CursorKind.MACRO_DEFINITION or _file_of(c) not in headers:
            continue
        if c.is_macro_function_like() if hasattr(c, 'is_macro_function_like') else _function_like(c):
            continue
        tokens = list(c.get_tokens())
        if len(tokens) < 2 or c.spelling in seen:
            continue   # empty macros (include guards, attribute shims)
        seen.add(c.spelling)
        out.append((c.spelling, _file_of(c)))
    return out


def _function_like(c):
    toks = list(c.get_tokens())
    if len(toks) >= 2 and toks[1].spelling == '(':
        # function-like only if '(' immediately follows the name (no whitespace)
        return toks[1].extent.start.offset == toks[0].extent.end.offset
    return False


def evaluate_macros(include_lines, names):
    """Evaluates macros with clang: returns {name: (value, size)} for those that are integer
    constant expressions. Each macro is used twice, as X and X + 1, so that an initializer
    clang rejected (value silently 0) is told apart from a real value."""
    if not names:
        return {}
    src = [*include_lines]
    for i, n in enumerate(names):
        src.append(f'enum {{ __jv_a{i} = ({n}) }};')
        src.append(f'enum {{ __jv_b{i} = ({n}) + 1 }};')
        src.append(f'enum {{ __jv_s{i} = sizeof({n}) }};')
    tu = parse('\n'.join(src) + '\n', unsaved_name='/tmp/__jverbs_macros.c')
    vals = {}
    for c in tu.cursor.get_children():
        if c.kind == ci.CursorKind.ENUM_DECL and _file_of(c) == '/tmp/__jverbs_macros.c':
            for e in c.get_children():
                if e.kind == ci.CursorKind.ENUM_CONSTANT_DECL and e.spelling.startswith('__jv_'):
                    vals[e.spelling] = e.enum_value
    out = {}
    for i, n in enumerate(names):
        a, b, s = vals.get(f'__jv_a{i}'), vals.get(f'__jv_b{i}'), vals.get(f'__jv_s{i}')
        if a is None or b is None or not s:
            continue
        if (b - a) % (1 << 64) != 1:
            continue
        out[n] = (a, s)
    return out
