"""Address-checked PTX: a kernel whose global memory access would fault records it and skips the access.

On the GPU an access to an unmapped address (CUDA_ERROR_ILLEGAL_ADDRESS) or one not aligned to its
size (CUDA_ERROR_MISALIGNED_ADDRESS) ends every CUDA context of the process, so a campaign pays a
new process, context and trial set for each mutant that faults. `instrument` rewrites a module's
PTX so that before each global (or generic) load, store and atomic the thread looks the address up
in a table of the process's mapped device memory; an access that would fault is not made, and the
first one is written down (address, size, which fault) for the host to report as the fault the
GPU would have raised. Accesses that would not fault, out of their buffer's bounds or not, run
unchanged, so a kernel's values are the ones it computes without the check.

The checks are straight-line code (loads, compares, selects, predicated instructions): no branch
is added, so the basic blocks that ptxas optimises (fusing a multiply and an add, say) are the
ones NVRTC wrote. What is not rewritten (shared, local, const and param spaces, cp.async, an
instruction of a form not recognised) runs as it did: a fault there still ends the process.

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

CHECK_VERSION = 4  # bumped whenever `instrument` writes other code (a cache key of the checked cubins)
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


def _check_lines(indent: str, access: Access, predicate: str, negate: bool, instruction: str) -> list[str]:
    """The scope that checks one access and makes it only where it would not fault."""
    pad = indent + "\t"
    lines = [
        "{",
        ".reg .pred %ac_in, %ac_mis, %ac_bad, %ac_first, %ac_run;",
        ".reg .b64 %ac_s, %ac_a, %ac_p, %ac_t, %ac_lo, %ac_hi, %ac_e;",
        ".reg .b32 %ac_k, %ac_n;",
        f"ld.const.u64 %ac_s, [{STATE_SYMBOL}];",
        f"add.s64 %ac_a, {access.base}, {access.offset};",
        f"mov.u64 %ac_p, {TABLE_SYMBOL};",
    ]
    # %ac_p walks to the last entry whose first byte is at or below the address: three instructions a halving
    # (ptxas's time on a checked batch goes mostly to these; MEASUREMENTS.md, twenty-first session).
    step = TABLE_ENTRIES // 2
    while step:
        lines += [f"ld.const.u64 %ac_lo, [%ac_p+{8 * step}];",
                  "setp.le.u64 %ac_in, %ac_lo, %ac_a;",
                  f"@%ac_in add.s64 %ac_p, %ac_p, {8 * step};"]
        step //= 2
    lines += [
        "ld.const.u64 %ac_lo, [%ac_p];",
        f"ld.const.u64 %ac_hi, [%ac_p+{HI_OFFSET}];",
        f"add.s64 %ac_e, %ac_a, {access.size};",
        "setp.le.u64 %ac_in, %ac_lo, %ac_a;",
        "setp.lt.and.u64 %ac_in, %ac_a, %ac_hi, %ac_in;",  # with the next, also where a + size wraps past 2^64
        "setp.le.and.u64 %ac_in, %ac_e, %ac_hi, %ac_in;",
    ]
    if access.generic:  # an address in the shared or local window is not the table's to judge; any other is
        lines += ["isspacep.shared %ac_bad, %ac_a;", "isspacep.local %ac_mis, %ac_a;",
                  "or.pred %ac_bad, %ac_bad, %ac_mis;", "or.pred %ac_in, %ac_in, %ac_bad;"]
    lines += [
        f"and.b64 %ac_t, %ac_a, {access.size - 1};",
        "setp.ne.u64 %ac_mis, %ac_t, 0;",
        "not.pred %ac_bad, %ac_in;",
        "or.pred %ac_bad, %ac_bad, %ac_mis;",
    ]
    if predicate:  # the instruction's own guard: an access it would not make is not checked
        lines += [f"not.pred %ac_run, {predicate};" if negate else f"mov.pred %ac_run, {predicate};",
                  "and.pred %ac_bad, %ac_bad, %ac_run;"]
    lines += [
        f"selp.b32 %ac_k, {access.size | MISALIGNED_ADDRESS << 16}, {access.size | ILLEGAL_ADDRESS << 16}, %ac_mis;",
        "@%ac_bad atom.global.add.u32 %ac_n, [%ac_s], 1;",
        "setp.eq.and.u32 %ac_first, %ac_n, 0, %ac_bad;",
        "@%ac_first st.global.u64 [%ac_s+8], %ac_a;",
        "@%ac_first st.global.u32 [%ac_s+16], %ac_k;",
    ]
    if predicate:  # made where its guard holds and it would not fault
        lines += ["not.pred %ac_bad, %ac_bad;", "and.pred %ac_run, %ac_run, %ac_bad;"]
    else:
        lines += ["not.pred %ac_run, %ac_bad;"]
    lines += [f"@%ac_run {instruction}", "}"]
    return [indent + lines[0], *(pad + line for line in lines[1:-1]), indent + lines[-1]]


DECLARATIONS = [f".const .align 8 .u64 {STATE_SYMBOL};", f".const .align 8 .u64 {TABLE_SYMBOL}[{2 * TABLE_ENTRIES}];"]


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
    """The module's own .global variables whose address the code takes into a register: those a checked access
    may reach through a register, which the table must therefore hold. (An access naming the variable is not
    checked.)"""
    names = re.findall(r"^\s*(?:\.visible\s+|\.weak\s+)?\.global\s+[^;=]*?([A-Za-z_$][\w$]*)\s*(?:\[[^\]]*\]\s*)*"
                       r"(?:=[^;]*)?;", ptx, re.MULTILINE)
    taken = set(re.findall(r"^\s*(?:mov|cvta\.global)\.[ub]64\s+%\w+,\s*([A-Za-z_$][\w$]*)\s*;", ptx, re.MULTILINE))
    return [name for name in names if name in taken]
