#!/usr/bin/env python3
"""Generates tnbc's MPI entry points from shim/mpi.spec (see the comment at its top).

usage: gen_wrappers.py SPEC OUT_C_WRAPPERS OUT_FORTRAN_WRAPPERS OUT_F08_WRAPPERS OUT_HANDLERS_HEADER
"""
import re
import sys
from dataclasses import dataclass, field

FORTRAN_MANGLINGS = ("{lower}_", "{lower}", "{lower}__", "{upper}")
# `use mpi_f08` entry points (gfortran's names). Open MPI 4.1: mpi_x_f08_ for every routine,
# buffers as plain addresses (ignore-TKR dummies), handles as the address of the derived type
# (its only component, the integer MPI_VAL), ierror optional (a null pointer when absent); it
# ends in PMPI_X, so tnbc implements or fences it here like mpif.h. MPICH 4.0: the same
# mpi_x_f08_ for routines without a choice buffer (they end in PMPI_X too), mpi_x_f08ts_ for
# those with one (buffers as array descriptors, TS 29113), which end in the C MPI_X that tnbc's
# C wrappers intercept and fence; tnbc only attributes the intercepted ones to their Fortran
# caller (shim/fortran.hh: FortranCaller).
F08_NAME = "{lower}_f08_"
F08_DESCRIPTOR_NAME = "{lower}_f08ts_"


@dataclass
class Param:
    ctype: str            # e.g. "const void *", "int", "const int" (array flag separate)
    name: str
    array: bool = False
    extent: list = None   # [count, datatype] | ["*"] | None
    out: bool = False
    fortran: bool = True

    def decl(self, ctype=None):
        t = ctype or self.ctype
        return f"{t} {self.name}[]" if self.array else f"{t}{'' if t.endswith('*') else ' '}{self.name}"


@dataclass
class Entry:
    role: str
    bigcount: bool
    ret: str
    name: str               # "MPI_Send"
    params: list = field(default_factory=list)

    @property
    def short(self):        # "Send"
        return self.name[len("MPI_"):]

    @property
    def takes_buffer(self):  # a choice buffer (void *): MPICH's f08 binding takes a descriptor
        return any(p.ctype.replace("const ", "") == "void *" for p in self.params)


PARAM_RE = re.compile(r"^(?P<type>.*?)(?P<name>[A-Za-z_]\w*)\s*(?P<array>\[\])?\s*(?:\[(?P<ann>[^\]]*)\])?$")


def parse_param(text):
    text = text.strip()
    m = PARAM_RE.match(text)
    if not m:
        raise SystemExit(f"mpi.spec: cannot parse parameter '{text}'")
    ctype = re.sub(r"\s+", " ", m.group("type").strip())
    ctype = re.sub(r"\s*\*\s*", "*", ctype)
    ctype = re.sub(r"(\w)\*", r"\1 *", ctype).strip()
    p = Param(ctype=ctype, name=m.group("name"), array=bool(m.group("array")))
    ann = m.group("ann")
    if ann is not None:
        parts = [a.strip() for a in ann.split(",")]
        if parts == ["out"]:
            p.out = True
        elif parts == ["fortran:none"]:
            p.fortran = False
        elif parts == ["*"] or len(parts) == 2:
            p.extent = parts
        else:
            raise SystemExit(f"mpi.spec: unknown annotation [{ann}] on {p.name}")
    return p


def split_params(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def parse_spec(path):
    entries = []
    for lineno, line in enumerate(open(path), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^(intercept|fence)\s+(bigcount\s+)?(\w+)\s+(MPI_\w+)\s*\((.*)\)\s*$", line)
        if not m:
            raise SystemExit(f"{path}:{lineno}: cannot parse: {line}")
        e = Entry(role=m.group(1), bigcount=bool(m.group(2)), ret=m.group(3), name=m.group(4))
        body = m.group(5).strip()
        if body != "void":
            e.params = [parse_param(p) for p in split_params(body)]
        names = {p.name for p in e.params}
        for p in e.params:
            if p.extent and p.extent != ["*"] and not set(p.extent) <= names:
                raise SystemExit(f"{path}:{lineno}: extent of {p.name} names unknown parameters")
        entries.append(e)
    return entries


def args(e):
    return ", ".join(p.name for p in e.params)


def c_fences(e, buffer_expr=lambda p: p.name, count_expr=lambda n: n, type_expr=lambda n: n):
    """Statements that fence the buffers of `e` (empty when it takes none)."""
    lines = []
    for p in e.params:
        if not p.extent:
            continue
        if p.extent == ["*"]:
            lines.append("tnbc::shim::fence_everything();")
        else:
            cnt, typ = p.extent
            lines.append(f"tnbc::shim::fence_buffer({buffer_expr(p)}, {count_expr(cnt)}, {type_expr(typ)});")
    if not lines:
        return ""
    uniq = list(dict.fromkeys(lines))
    if "tnbc::shim::fence_everything();" in uniq:
        uniq = ["tnbc::shim::fence_everything();"]
    return "  if (tnbc::shim::fences_active()) {\n" + "".join(f"    {l}\n" for l in uniq) + "  }\n"


def bigcount_type(p):
    if "count" in p.name and p.ctype in ("int", "const int"):
        return p.ctype.replace("int", "MPI_Count")
    if ("displs" in p.name or p.name.endswith("disp")) and p.ctype in ("int", "const int"):
        return p.ctype.replace("int", "MPI_Aint")
    return p.ctype


def gen_c(entries):
    out = [HEADER, '#include "shim/handlers.hh"\n#include "shim/fortran.hh"\n\n']
    for e in entries:
        decl = ", ".join(p.decl() for p in e.params) or "void"
        out.append(f'extern "C" {e.ret} {e.name}({decl}) {{\n')
        if e.role == "intercept":
            # A C caller, or MPICH's f08 binding on behalf of the Fortran caller it recorded.
            site = "tnbc::shim::c_call_site(__builtin_return_address(0))"
            out.append(f"  return tnbc::shim::{e.short}({args(e) + ', ' if e.params else ''}{site});\n}}\n\n")
        else:
            out.append(c_fences(e))
            out.append(f"  return P{e.name}({args(e)});\n}}\n\n")
        if e.bigcount:
            decl_c = ", ".join(p.decl(bigcount_type(p)) for p in e.params)
            out.append("#if MPI_VERSION >= 4\n")
            out.append(f'extern "C" {e.ret} {e.name}_c({decl_c}) {{\n')
            out.append(c_fences(e))
            out.append(f"  return P{e.name}_c({args(e)});\n}}\n#endif\n\n")
    return "".join(out)


def f_names(e):
    lower, upper = e.name.lower(), e.name.upper()
    return [m.format(lower=lower, upper=upper) for m in FORTRAN_MANGLINGS]


F2C = {"MPI_Datatype": "MPI_Type_f2c", "MPI_Comm": "MPI_Comm_f2c", "MPI_Op": "MPI_Op_f2c"}


def fortran_arg(p):
    """C expression converting Fortran argument `p` (passed as a pointer) for the handler."""
    if not p.fortran:
        return "nullptr"
    base = p.ctype.replace("const ", "")
    if base in ("void *",):
        return f"tnbc::shim::fortran_buffer({p.name})"
    if base in F2C:
        return f"{F2C[base]}(*{p.name})"
    if base == "int" and p.array:
        return f"reinterpret_cast<const int*>({p.name})"
    if base == "int":
        return f"static_cast<int>(*{p.name})"
    if base == "int *" and p.out:
        return f"&{p.name}_c"
    raise SystemExit(f"gen_wrappers: no Fortran conversion for {p.ctype} {p.name}")


def fortran_param_decl(p):
    base = p.ctype.replace("const ", "")
    if base == "void *":
        return f"void *{p.name}"
    return f"MPI_Fint *{p.name}"


def fortran_body(e, lookup, ierr_optional):
    """Body of a Fortran wrapper of `e` whose arguments are the addresses of mpif.h's (Open MPI's
    f08 passes the same): intercept calls tnbc::shim::<Name>, fence fences and calls the MPI
    library's own binding, found by the C++ expression `lookup`."""
    out = []
    fparams = [p for p in e.params if p.fortran]
    if e.role == "intercept":
        for p in fparams:
            if p.out:
                out.append(f"  int {p.name}_c = 0;\n")
        conv = ", ".join([fortran_arg(p) for p in e.params] +
                         ["tnbc::CallSite{__builtin_return_address(0), tnbc::Lang::Fortran}"])
        out.append(f"  const int rc = tnbc::shim::{e.short}({conv});\n")
        for p in fparams:
            if p.out:
                out.append(f"  *{p.name} = static_cast<MPI_Fint>({p.name}_c);\n")
        out.append(f"  {'if (ierr) *ierr' if ierr_optional else '*ierr'} = static_cast<MPI_Fint>(rc);\n")
    else:
        out.append(c_fences(
            e,
            buffer_expr=lambda p: f"tnbc::shim::fortran_buffer({p.name})",
            count_expr=lambda n: f"static_cast<long long>(*{n})",
            type_expr=lambda n: f"MPI_Type_f2c(*{n})"))
        out.append(forward(fparams, lookup))
    return "".join(out)


def forward(fparams, lookup):
    """Calls the MPI library's binding (the C++ expression `lookup` finds it) with the same arguments."""
    ptypes = ", ".join(["void *"] * (len(fparams) + 1))
    return (f"  using Fn = void (*)({ptypes});\n"
            f"  static const Fn real = reinterpret_cast<Fn>({lookup});\n"
            f"  real({', '.join([p.name for p in fparams] + ['ierr'])});\n")


def fortran_decl(e):
    return ", ".join([fortran_param_decl(p) for p in e.params if p.fortran] + ["MPI_Fint *ierr"])


FORTRAN_HEADER = ('#include "shim/handlers.hh"\n#include "shim/fortran.hh"\n\n'
                  "static_assert(sizeof(MPI_Fint) == sizeof(int), \"tnbc assumes default-integer Fortran\");\n\n")


def gen_fortran(entries):
    """mpif.h / `use mpi`: the four manglings, the first defined, the others aliases of it."""
    out = [HEADER, FORTRAN_HEADER]
    for e in entries:
        names = f_names(e)
        decl = fortran_decl(e)
        out.append(f'extern "C" void {names[0]}({decl}) {{\n')
        out.append(fortran_body(e, f'tnbc::shim::fortran_next("{e.name.lower()}")', ierr_optional=False))
        out.append("}\n")
        for alias in names[1:]:
            out.append(f'extern "C" void {alias}({decl}) __attribute__((alias("{names[0]}")));\n')
        out.append("\n")
    return "".join(out)


def next_symbol(symbol):
    return f'tnbc::shim::fortran_next_symbol("{symbol}")'


def gen_f08(entries):
    """`use mpi_f08` (see F08_NAME): Open MPI's and MPICH's plain-address entry points, and for
    the intercepted calls with a buffer MPICH's descriptor ones, which only record their caller."""
    out = [HEADER, FORTRAN_HEADER]
    for e in entries:
        lower = e.name.lower()
        decl = fortran_decl(e)
        symbol = F08_NAME.format(lower=lower)
        out.append(f'extern "C" void {symbol}({decl}) {{\n')
        out.append(fortran_body(e, next_symbol(symbol), ierr_optional=True))
        out.append("}\n")
        if e.role == "intercept" and e.takes_buffer:
            symbol = F08_DESCRIPTOR_NAME.format(lower=lower)
            out.append(f'extern "C" void {symbol}({decl}) {{\n')
            out.append("  const tnbc::shim::FortranCaller caller(__builtin_return_address(0));\n")
            out.append(forward([p for p in e.params if p.fortran], next_symbol(symbol)))
            out.append("}\n")
        out.append("\n")
    return "".join(out)


def gen_handlers(entries):
    out = [HEADER, "#pragma once\n\n#include <mpi.h>\n\n#include \"runtime/stats.hh\"\n\n",
           "// The C++ side of every intercepted entry point (implemented in shim/*.cc).\n",
           "namespace tnbc::shim {\n\n"]
    for e in entries:
        if e.role != "intercept":
            continue
        decl = ", ".join([p.decl() for p in e.params] + ["CallSite site"])
        out.append(f"{e.ret} {e.short}({decl});\n")
    out.append("\n// Fences (shim/fence.cc).\nbool fences_active();\n"
               "void fence_buffer(const void *buf, long long count, MPI_Datatype type);\n"
               "void fence_everything();\n\n}  // namespace tnbc::shim\n")
    return "".join(out)


HEADER = "// Generated by shim/gen_wrappers.py from shim/mpi.spec. Do not edit.\n"


def main():
    if len(sys.argv) != 6:
        raise SystemExit(__doc__)
    entries = parse_spec(sys.argv[1])
    outputs = (gen_c(entries), gen_fortran(entries), gen_f08(entries), gen_handlers(entries))
    for path, text in zip(sys.argv[2:], outputs):
        with open(path, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
