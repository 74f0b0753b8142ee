"""Address-checked PTX: a kernel whose global memory access would fault records it and skips the access.

On the GPU an access to an unmapped address (CUDA_ERROR_ILLEGAL_ADDRESS) or one not aligned to its
size (CUDA_ERROR_MISALIGNED_ADDRESS) ends every CUDA context of the process, so a campaign pays a
new process, context and trial set for each mutant that faults. `instrument` rewrites a module's
PTX so that before each global (or generic) load, store and atomic the thread looks the address up
in a table of the process's mapped device memory; an access that would fault is not made, and the
first one is written down (address, size, which fault) for the host to report as the fault the
GPU would have raised. Accesses that would not fault, out of their buffer's bounds or not, run
unchanged, so a kernel's values are the ones it computes without the check.

The check is one function of the module (straight-line code: loads, compares, selects, predicated
instructions), called before each access; the kernel's own code gains no branch, only the calls, so
the basic blocks that ptxas optimises are the ones NVRTC wrote, cut at each checked access. (Written
out before each access instead, ptxas took twice as long on the check; MEASUREMENTS.md, twenty-first
session.) What is not rewritten (shared, local, const and param spaces, cp.async, an instruction of
a form not recognised) runs as it did: a fault there still ends the process.

The check's state is device memory the backend allocates outside torch's allocator, so that it is not
in the table: a kernel's access to it is foreseen as the fault it would be without the check. Each
module holds a pointer to it in the constant STATE_SYMBOL. The layout, in bytes: 0 the number of
accesses stopped (u32); 8 the first one's address (u64); 16 its size and fault (u32: size | fault
<< 16). The table is each module's own constant TABLE_SYMBOL: TABLE_ENTRIES u64 first bytes of the
ranges, sorted ascending (unused entries all ones), then their ends (exclusive); the backend writes it
into a module before a launch where torch's segments have changed since. A thread finds its range by
a binary search of TABLE_ENTRIES, unrolled. In constant memory, not global: ptxas assembles the
checked code in two thirds of the time (MEASUREMENTS.md, twenty-first session), and the threads of a
warp, whose addresses mostly fall in one range, read the same entries through the constant cache.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

CHECK_VERSION = 5  # bumped whenever `instrument` writes other code (a cache key of the checked cubins)
STATE_SYMBOL = "__harness_address_check"
TABLE_SYMBOL = "__harness_address_table"
TABLE_ENTRIES = 128  # a power of two: the binary search's steps are its halvings
STATE_BYTES = 32
HI_OFFSET = 8 * TABLE_ENTRIES  # the ends, after the first bytes
UNUSED_LO = 2**64 - 1

ILLEGAL_ADDRESS = 1
MISALIGNED_ADDRESS = 2
FAULT_NAMES = {
    ILLEGAL_ADDRESS: ("CUDA error 700 CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered",
                      "outside every allocation of the process"),
    MISALIGNED_ADDRESS: ("CUDA error 716 CUDA_ERROR_MISALIGNED_ADDRESS: misaligned address",
                         "not aligned to its size"),
}

_TYPE_BYTES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "b32": 4, "u32": 4,
               "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16}
_UNCHECKED_SPACES = {"shared", "local", "const", "param"}
_MEMORY_OPCODES = {"ld", "ldu", "st", "atom", "red"}
_INSTRUCTION = re.compile(r"^(?P<indent>\s*)(?:@(?P<negate>!?)(?P<predicate>%\w+)\s+)?(?P<opcode>[a-z][\w.:]*)"
                          r"\s+(?P<operands>[^;]*);\s*$")
_ADDRESS = re.compile(r"\[\s*(?P<base>[%\w$.]+)\s*(?:\+\s*(?P<offset>-?\d+))?\s*\]")


@dataclass(frozen=True)
class Access:
    """What the check needs of one memory instruction: its address operand, bytes and space."""

    base: str  # the register holding the address (%rd5)
    offset: int
    size: int
    generic: bool  # no state space named: an address in the shared or local window is not checked


def memory_access(opcode: str, operands: str) -> Access | None:
    """The access an instruction makes, if it is a global or generic load, store or atomic the check knows."""
    parts = opcode.split(".")
    if parts[0] not in _MEMORY_OPCODES:
        return None
    qualifiers = set(parts[1:])
    if qualifiers & _UNCHECKED_SPACES or any(q.startswith(("shared::", "param::")) for q in qualifiers):
        return None
    types = [q for q in parts[1:] if q in _TYPE_BYTES]
    address = _ADDRESS.search(operands)
    if not types or address is None or not address["base"].startswith("%"):
        return None  # an access naming a variable of the module is within it
    vector = next((int(q[1:]) for q in parts[1:] if q in ("v2", "v4", "v8")), 1)
    return Access(base=address["base"], offset=int(address["offset"] or 0), size=_TYPE_BYTES[types[-1]] * vector,
                  generic="global" not in qualifiers)


CHECK_FUNCTION = "__harness_check_access"
GENERIC_FLAG = 1 << 8  # in the check's second argument, beside the access's size: a generic address


def _check_function() -> list[str]:
    """The check, once a module: `__harness_check_access(address, size | GENERIC_FLAG if generic)` returns 1 where
    the access would not fault, and records the first that would. Called before each access rather than written
    out before each: ptxas assembles a checked batch in about the time of an unchecked one (four batches 2.07 s,
    against 2.90 s written out and 1.86 s unchecked; MEASUREMENTS.md, twenty-first session)."""
    lines = [
        f".func (.param .b32 {CHECK_FUNCTION}_ok) {CHECK_FUNCTION}(.param .b64 {CHECK_FUNCTION}_address, "
        f".param .b32 {CHECK_FUNCTION}_kind)",
        "{",
        "\t.reg .pred %ac_in, %ac_mis, %ac_bad, %ac_first, %ac_generic, %ac_window;",
        "\t.reg .b64 %ac_s, %ac_a, %ac_p, %ac_t, %ac_lo, %ac_hi, %ac_e, %ac_z;",
        "\t.reg .b32 %ac_kind, %ac_size, %ac_k, %ac_n;",
        f"\tld.param.b64 %ac_a, [{CHECK_FUNCTION}_address];",
        f"\tld.param.b32 %ac_kind, [{CHECK_FUNCTION}_kind];",
        "\tand.b32 %ac_size, %ac_kind, 255;",
        "\tcvt.u64.u32 %ac_z, %ac_size;",
        f"\tld.const.u64 %ac_s, [{STATE_SYMBOL}];",
        f"\tmov.u64 %ac_p, {TABLE_SYMBOL};",
    ]
    # %ac_p walks to the last entry whose first byte is at or below the address, three instructions a halving.
    step = TABLE_ENTRIES // 2
    while step:
        lines += [f"\tld.const.u64 %ac_lo, [%ac_p+{8 * step}];",
                  "\tsetp.le.u64 %ac_in, %ac_lo, %ac_a;",
                  f"\t@%ac_in add.s64 %ac_p, %ac_p, {8 * step};"]
        step //= 2
    lines += [
        "\tld.const.u64 %ac_lo, [%ac_p];",
        f"\tld.const.u64 %ac_hi, [%ac_p+{HI_OFFSET}];",
        "\tadd.s64 %ac_e, %ac_a, %ac_z;",
        "\tsetp.le.u64 %ac_in, %ac_lo, %ac_a;",
        "\tsetp.lt.and.u64 %ac_in, %ac_a, %ac_hi, %ac_in;",  # with the next, also where a + size wraps past 2^64
        "\tsetp.le.and.u64 %ac_in, %ac_e, %ac_hi, %ac_in;",
        # A generic address in the shared or local window is not the table's to judge; any other is.
        f"\tand.b32 %ac_k, %ac_kind, {GENERIC_FLAG};",
        "\tsetp.ne.u32 %ac_generic, %ac_k, 0;",
        "\tisspacep.shared %ac_window, %ac_a;",
        "\tisspacep.local %ac_bad, %ac_a;",
        "\tor.pred %ac_window, %ac_window, %ac_bad;",
        "\tand.pred %ac_window, %ac_window, %ac_generic;",
        "\tor.pred %ac_in, %ac_in, %ac_window;",
        "\tsub.s64 %ac_t, %ac_z, 1;",
        "\tand.b64 %ac_t, %ac_a, %ac_t;",
        "\tsetp.ne.u64 %ac_mis, %ac_t, 0;",
        "\tnot.pred %ac_bad, %ac_in;",
        "\tor.pred %ac_bad, %ac_bad, %ac_mis;",
        f"\tselp.b32 %ac_k, {MISALIGNED_ADDRESS << 16}, {ILLEGAL_ADDRESS << 16}, %ac_mis;",
        "\tor.b32 %ac_k, %ac_k, %ac_size;",
        "\t@%ac_bad atom.global.add.u32 %ac_n, [%ac_s], 1;",
        "\tsetp.eq.and.u32 %ac_first, %ac_n, 0, %ac_bad;",
        "\t@%ac_first st.global.u64 [%ac_s+8], %ac_a;",
        "\t@%ac_first st.global.u32 [%ac_s+16], %ac_k;",
        "\tselp.b32 %ac_k, 0, 1, %ac_bad;",
        f"\tst.param.b32 [{CHECK_FUNCTION}_ok], %ac_k;",
        "\tret;",
        "}",
    ]
    return lines


def _check_lines(indent: str, access: Access, predicate: str, negate: bool, instruction: str) -> list[str]:
    """The scope that checks one access and makes it only where it would not fault. Under the instruction's own
    guard the check is called only where the guard holds (an access the instruction would not make is not
    checked), so the call diverges: `call`, not `call.uni`."""
    pad = indent + "\t"
    guard = f"@{'!' if negate else ''}{predicate} " if predicate else ""
    kind = access.size | (GENERIC_FLAG if access.generic else 0)
    lines = [
        "{",
        ".reg .b64 %ac_a;",
        ".reg .b32 %ac_ok;",
        ".reg .pred %ac_run;",
        ".param .b64 ac_address;",
        ".param .b32 ac_kind;",
        ".param .b32 ac_ok;",
        f"add.s64 %ac_a, {access.base}, {access.offset};",
        "st.param.b64 [ac_address], %ac_a;",
        f"st.param.b32 [ac_kind], {kind};",
    ]
    if predicate:
        lines += ["mov.u32 %ac_ok, 0;",
                  f"{guard}call (ac_ok), {CHECK_FUNCTION}, (ac_address, ac_kind);",
                  f"{guard}ld.param.b32 %ac_ok, [ac_ok];"]
    else:
        lines += [f"call.uni (ac_ok), {CHECK_FUNCTION}, (ac_address, ac_kind);",
                  "ld.param.b32 %ac_ok, [ac_ok];"]
    lines += ["setp.ne.u32 %ac_run, %ac_ok, 0;", f"@%ac_run {instruction}", "}"]
    return [indent + lines[0], *(pad + line for line in lines[1:-1]), indent + lines[-1]]


DECLARATIONS = [f".const .align 8 .u64 {STATE_SYMBOL};", f".const .align 8 .u64 {TABLE_SYMBOL}[{2 * TABLE_ENTRIES}];",
                *_check_function()]


def instrument(ptx: str) -> str:
    """`ptx` with every global and generic load, store and atomic checked, and STATE_SYMBOL and TABLE_SYMBOL
    declared."""
    out = []
    declared = False
    for line in ptx.splitlines():
        if not declared and (line.startswith((".global", ".const", ".shared", ".extern", ".visible", ".entry",
                                              ".func", ".weak"))):
            out += DECLARATIONS
            declared = True
        match = _INSTRUCTION.match(line)
        access = memory_access(match["opcode"], match["operands"]) if match else None
        if access is None:
            out.append(line)
            continue
        instruction = f"{match['opcode']} {match['operands']};"
        out += _check_lines(match["indent"], access, match["predicate"] or "", match["negate"] == "!", instruction)
    if not declared:
        raise ValueError("no module-scope directive in the PTX to put the address check's state before")
    return "\n".join(out) + "\n"


def ranges_table(ranges: list[tuple[int, int]]) -> tuple[list[int], list[int]] | None:
    """(first bytes, ends) of `ranges` (start, end) merged where they touch or overlap, padded to TABLE_ENTRIES;
    None when more than TABLE_ENTRIES remain (the table cannot say where every mapped byte is)."""
    merged: list[list[int]] = []
    for start, end in sorted(r for r in ranges if r[1] > r[0]):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    if len(merged) > TABLE_ENTRIES:
        return None
    padding = TABLE_ENTRIES - len(merged)
    return [m[0] for m in merged] + [UNUSED_LO] * padding, [m[1] for m in merged] + [0] * padding


def describe_stop(count: int, address: int, size_and_fault: int) -> str:
    """The fault the GPU would have raised, as the harness reports a fault, and what the check saw."""
    size, fault = size_and_fault & 0xFFFF, size_and_fault >> 16
    error, why = FAULT_NAMES.get(fault, FAULT_NAMES[ILLEGAL_ADDRESS])
    more = f", and {count - 1} more" if count > 1 else ""
    return (f"{error} (foreseen by the address check: a {size}-byte access at {address:#x}, {why}{more}; "
            f"not made)")



@functools.cache
def assembler() -> tuple[str | None, str]:
    """(nvJitLink's version, "") where it loads, else (None, why not): no nvidia-nvjitlink wheel nor toolkit, say."""
    try:
        from cuda.bindings import nvjitlink

        major, minor = nvjitlink.version()
    except Exception as error:  # ImportError, or the library not found: cuda.bindings raises its own kinds
        return None, f"{type(error).__name__}: {error}"
    return f"{major}.{minor}", ""


def assembler_version() -> str | None:
    return assembler()[0]


def describe_assembly(ahead: bool) -> str:
    """How a campaign's checked modules are assembled, for its header: where nvJitLink does not load, the driver
    assembles each from its PTX as a worker loads it (seconds for a batch, on the worker's time)."""
    version, problem = assembler()
    if version:
        return f"address check: on, the checked cubins assembled by nvJitLink {version}" + (" ahead" if ahead else "")
    return (f"address check: on, nvJitLink cannot be loaded here ({problem}): the driver assembles each checked "
            f"module from its PTX as a worker loads it")


class AssemblyError(RuntimeError):
    """nvJitLink's ptxas refused a module; `log` is what it said."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


def assemble(ptx: str, arch: str) -> bytes:
    """`ptx` assembled for `arch` (sm_90) by nvJitLink's ptxas, with ptxas's defaults as NVRTC runs it."""
    from cuda.bindings import nvjitlink

    handle = nvjitlink.create(1, [f"-arch={arch}"])
    try:
        data = ptx.encode()
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "address_checked.ptx")
            nvjitlink.complete(handle)
        except Exception as error:
            log = bytearray(nvjitlink.get_error_log_size(handle))
            nvjitlink.get_error_log(handle, log)
            text = log.decode(errors="replace").rstrip("\0").strip()
            raise AssemblyError(f"nvJitLink could not assemble the PTX for {arch}: {error}\n{text}", text) from error
        cubin = bytearray(nvjitlink.get_linked_cubin_size(handle))
        nvjitlink.get_linked_cubin(handle, cubin)
        return bytes(cubin)
    finally:
        nvjitlink.destroy(handle)


def address_taken_globals(ptx: str) -> list[str]:
    """The module's own .global and .const variables whose address the code takes into a register: those a
    checked access may reach through a register (a __constant__ array read through a generic pointer, after
    `cvta.const`), which the table must therefore hold. (An access naming the variable is not checked.)"""
    names = re.findall(r"^\s*(?:\.visible\s+|\.weak\s+)?\.(?:global|const)\s+[^;=]*?([A-Za-z_$][\w$]*)\s*"
                       r"(?:\[[^\]]*\]\s*)*(?:=[^;]*)?;", ptx, re.MULTILINE)
    taken = set(re.findall(r"^\s*(?:mov|cvta\.global)\.[ub]64\s+%\w+,\s*([A-Za-z_$][\w$]*)\s*;", ptx, re.MULTILINE))
    return [name for name in names if name in taken]
