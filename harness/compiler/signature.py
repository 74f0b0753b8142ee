"""A kernel's parameter list, read from its PTX, and the check of a launch's arguments against it.

PTX fixes each parameter's size and whether it is an integer, a float or an aggregate (a
struct or a __half, passed as `.b8 name[N]`); it does not fix signedness. That is what can
be checked without a GPU, and what a mismatched launch silently gets wrong on one.
"""

from __future__ import annotations

import ctypes
import enum
import re
from dataclasses import dataclass


class Kind(str, enum.Enum):
    INTEGER = "integer"  # also pointers: PTX passes them as .u64
    FLOAT = "float"
    AGGREGATE = "aggregate"


@dataclass(frozen=True)
class Param:
    index: int
    kind: Kind
    size: int

    def describe(self) -> str:
        return f"{'an' if self.kind is not Kind.FLOAT else 'a'} {self.kind.value} of {self.size} bytes"


_ENTRY = re.compile(r"\.entry\s+(?P<name>[\w$]+)\s*\((?P<params>[^)]*)\)", re.S)
# One parameter declaration: `.param [.align N] .TYPE [.ptr[.space][.align N]] NAME[[COUNT]]`; the
# pointer attributes may be written with or without spaces (`.ptr.global.align 16`).
_PARAM_TYPE = re.compile(r"\.(?P<type>[subf]\d+)\b")
_PARAM_COUNT = re.compile(r"\[(?P<count>\d+)\]\s*$")


_SHARED_STATE_SPACE = re.compile(r"\.shared\b")


def uses_shared_memory(ptx: str) -> bool:
    """Whether a PTX module declares or addresses shared memory (`.shared`: a variable, a load or store, an atom, a
    cvta; `.shared::cta` and `.shared::cluster` too). Without it no instruction can reach shared memory, the only
    memory compute-sanitizer's racecheck watches. Pure."""
    return _SHARED_STATE_SPACE.search(ptx) is not None


def kernel_params(ptx: str, entry_name: str) -> list[Param]:
    """The parameters of `.entry entry_name` in `ptx`. Raises KeyError if there is no such entry."""
    for m in _ENTRY.finditer(ptx):
        if m["name"] != entry_name:
            continue
        params = []
        declarations = [d.strip() for d in m["params"].split(",") if d.strip()]
        for i, declaration in enumerate(declarations):
            type_match = _PARAM_TYPE.search(declaration.removeprefix(".param"))
            if type_match is None:
                raise ValueError(f"cannot read PTX parameter {i} of {entry_name}: {declaration!r}")
            letter, bits = type_match["type"][0], int(type_match["type"][1:])
            count = _PARAM_COUNT.search(declaration)
            if count is not None:
                params.append(Param(i, Kind.AGGREGATE, int(count["count"]) * bits // 8))
            else:
                params.append(Param(i, Kind.FLOAT if letter == "f" else Kind.INTEGER, bits // 8))
        return params
    raise KeyError(entry_name)


_FLOAT_TYPES = (ctypes.c_float, ctypes.c_double)
_INTEGER_TYPES = (
    ctypes.c_bool, ctypes.c_byte, ctypes.c_ubyte, ctypes.c_short, ctypes.c_ushort, ctypes.c_int, ctypes.c_uint,
    ctypes.c_long, ctypes.c_ulong, ctypes.c_longlong, ctypes.c_ulonglong, ctypes.c_int8, ctypes.c_uint8,
    ctypes.c_int16, ctypes.c_uint16, ctypes.c_int32, ctypes.c_uint32, ctypes.c_int64, ctypes.c_uint64,
    ctypes.c_size_t, ctypes.c_ssize_t,
)
_UNSIGNED = {ctypes.c_bool, ctypes.c_ubyte, ctypes.c_ushort, ctypes.c_uint, ctypes.c_ulong, ctypes.c_ulonglong,
             ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t}


def is_pointer_type(ctype) -> bool:
    return ctype in (ctypes.c_void_p, ctypes.c_char_p) or (
        isinstance(ctype, type) and issubclass(ctype, ctypes._Pointer)
    )


def _kind_of(ctype) -> Kind | None:
    if is_pointer_type(ctype) or ctype in _INTEGER_TYPES:
        return Kind.INTEGER
    if ctype in _FLOAT_TYPES:
        return Kind.FLOAT
    if isinstance(ctype, type) and issubclass(ctype, (ctypes.Structure, ctypes.Union, ctypes.Array)):
        return Kind.AGGREGATE
    return None


def _type_name(ctype) -> str:
    return getattr(ctype, "__name__", repr(ctype))


def _value_problem(ctype, value) -> str | None:
    """Why `value` cannot be passed as `ctype` unchanged, or None if it can."""
    if is_pointer_type(ctype):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0 or value >= 1 << 64:
            return f"value {value!r} is not a device address (an int from tensor.data_ptr())"
        return None
    if ctype in _INTEGER_TYPES:
        if not isinstance(value, int):
            return f"value {value!r} is a {type(value).__name__}, not an int"
        bits = ctypes.sizeof(ctype) * 8
        lo, hi = (0, (1 << bits) - 1) if ctype in _UNSIGNED else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        if ctype is ctypes.c_bool:
            lo, hi = 0, 1
        if not lo <= value <= hi:
            return f"value {value} does not fit {_type_name(ctype)} [{lo}, {hi}] (it would be truncated)"
        return None
    if ctype in _FLOAT_TYPES:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return f"value {value!r} is not a number"
        return None
    if not isinstance(value, ctype):
        return f"value {value!r} is not an instance of {_type_name(ctype)}"
    return None


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def check_arguments(params: list[Param], args: list) -> list[str]:
    """Every way `args` ([(ctypes type, value), ...]) does not fit `params`; empty when it fits."""
    problems = []
    if not isinstance(args, (list, tuple)):
        return [f"launch returned {type(args).__name__} for the argument list, not a list of (ctypes_type, value)"]
    if len(args) != len(params):
        problems.append(f"launch passes {_count(len(args), 'argument')} but the kernel takes {len(params)}")
    for i, (param, arg) in enumerate(zip(params, args)):
        if not (isinstance(arg, (tuple, list)) and len(arg) == 2):
            problems.append(f"argument {i}: {arg!r} is not a (ctypes_type, value) pair")
            continue
        ctype, value = arg
        kind = _kind_of(ctype)
        if kind is None:
            problems.append(f"argument {i}: {ctype!r} is not a ctypes scalar, pointer or structure type")
            continue
        size = ctypes.sizeof(ctype)
        if kind is not param.kind or size != param.size:
            problems.append(
                f"argument {i}: launch passes {_type_name(ctype)} ({kind.value}, {_count(size, 'byte')}) but kernel "
                f"parameter {i} is {param.describe()}"
            )
        value_problem = _value_problem(ctype, value)
        if value_problem:
            problems.append(f"argument {i} ({_type_name(ctype)}): {value_problem}")
    return problems


def to_ctypes(args: list) -> list:
    """The ctypes objects for a checked argument list, in order."""
    objects = []
    for ctype, value in args:
        if isinstance(value, ctype):
            objects.append(value)
        elif is_pointer_type(ctype):
            objects.append(ctypes.c_void_p(value))
        else:
            objects.append(ctype(value))
    return objects
