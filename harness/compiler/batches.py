"""Many variants of one CUDA source compiled as one NVRTC program, and each variant's own compiled code.

NVRTC pays a fixed cost per program (starting up, parsing cuda_fp16.h) that is most of a small
kernel's compile; a campaign compiles hundreds of near-copies of one source, so it compiles them
together. Each copy goes into a namespace of its own (`harness_batch_0007`), its `extern "C"`
dropped so the copies' kernels stop sharing one symbol, its `#include` lines hoisted to the top
once and its macros `#undef`ined after it. Kernels are found through NVRTC name expressions.

A copy's code is the set of the PTX's top-level statements (entries, functions, shared and global
variables) that carry its namespace, with the namespace's number blanked: two copies that compile
to the same code get the same digest wherever they sit in a batch, and the unmutated source,
compiled in a batch too, is compared in the same form. Line-info directives and comments are left
out, so moving code between lines changes nothing, and so are the numbers PTX gives labels and
local stacks by the function's place in the module.

Anything the composition cannot handle (an `extern "C" { ... }` block, say) makes the batch fail
to compile; callers then compile each variant alone (`CampaignJob.batch_size = 1`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

TAG_WIDTH = 4  # fixed, so every tag has the same length and mangles to the same length prefix
_TAG = re.compile(r"harness_batch_\d{%d}" % TAG_WIDTH)
_INCLUDE_LINE = re.compile(r"^[ \t]*#[ \t]*include\b.*$", re.M)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.M)
_EXTERN_C = re.compile(r'\bextern\s+"C"\s*(?!\{)')
_NOT_CODE = re.compile(r"^\s*(\.loc|\.file|//|@@DWARF)")
_MODULE_HEADER = re.compile(r"^\.(version|target|address_size)\b")
# Names PTX numbers by the function's place in the module: blanked, as the tag is.
_PER_FUNCTION = re.compile(r"(\$L__BB|__local_depot)\d+")


def _code_lines(ptx: str) -> list[str]:
    """The PTX's lines, stripped, without blank lines, line-info directives and comments."""
    return [line.strip() for line in ptx.splitlines() if line.strip() and not _NOT_CODE.match(line)]


def ptx_digest(ptx: str) -> str:
    """A digest of what a whole program's PTX executes: line-info directives and comments left out."""
    return hashlib.sha256("\n".join(_code_lines(ptx)).encode()).hexdigest()


def tag(index: int) -> str:
    return f"harness_batch_{index:0{TAG_WIDTH}d}"


@dataclass(frozen=True)
class BatchProgram:
    source: str
    name_expressions: tuple[str, ...]  # one per variant, in order


def batch_program(sources: list[str], kernel_name: str, program_name: str) -> BatchProgram:
    """One program holding every source, each in its namespace; `#line` keeps each copy's own numbering."""
    if len(sources) >= 10 ** TAG_WIDTH:
        raise ValueError(f"a batch holds at most {10 ** TAG_WIDTH - 1} sources, not {len(sources)}")
    includes = list(dict.fromkeys(m.group().strip() for s in sources for m in _INCLUDE_LINE.finditer(s)))
    parts = includes[:]
    for i, source in enumerate(sources):
        body = _EXTERN_C.sub("", _INCLUDE_LINE.sub("", source))
        parts += [f"namespace {tag(i)} {{", f'#line 1 "{program_name} (variant {i})"', body, "}"]
        parts += [f"#undef {name}" for name in dict.fromkeys(_DEFINE.findall(source))]
    return BatchProgram("\n".join(parts) + "\n", tuple(f"{tag(i)}::{kernel_name}" for i in range(len(sources))))


def _statement_groups(lines: list[str]):
    """PTX lines cut at depth 0: a group for each entry or function with its body and each declaration ending in
    ';', and one for each module header line and each line outside any statement that is blank, a comment or line
    info."""
    current, depth = [], 0
    for line in lines:
        stripped = line.strip()
        code = bool(stripped) and not _NOT_CODE.match(stripped)
        if depth == 0 and (_MODULE_HEADER.match(stripped) or (not current and not code)):
            yield [line]
            continue
        current.append(line)
        if code:
            depth += stripped.count("{") - stripped.count("}")
        if depth == 0 and (stripped.endswith(";") or stripped.endswith("}")):
            yield current
            current = []
    if current:
        yield current


def _top_level_statements(ptx: str) -> list[str]:
    """PTX's code cut at depth 0: each entry or function with its body, each declaration ending in ';'."""
    return ["\n".join(group) for group in _statement_groups(_code_lines(ptx))]


def _blanked(statement: str) -> str:
    """A statement with its batch tag and its function-local label numbers blanked: comparable across batches."""
    return _PER_FUNCTION.sub(r"\1N", _TAG.sub("harness_batch_N", statement))


def variant_code(ptx: str, index: int) -> str:
    """The PTX statements of variant `index` of a batch, its tag blanked."""
    own = tag(index)
    return "\n".join(_blanked(s) for s in _top_level_statements(ptx) if own in s)


def code_digest(ptx: str, index: int) -> str:
    """A digest of what variant `index` executes, comparable across batches and positions."""
    return hashlib.sha256(variant_code(ptx, index).encode()).hexdigest()


def code_digests(ptx: str, count: int) -> list[str]:
    """code_digest of each of the first `count` variants, the PTX read once (not once a variant: a batch's PTX
    is thousands of lines, and a campaign's workers took seconds of their compile time reading it again)."""
    own: list[list[str]] = [[] for _ in range(count)]
    for statement in _top_level_statements(ptx):
        blanked = None
        for index in sorted({int(found[-TAG_WIDTH:]) for found in _TAG.findall(statement)}):
            if index < count:
                blanked = blanked or _blanked(statement)
                own[index].append(blanked)
    return [hashlib.sha256("\n".join(parts).encode()).hexdigest() for parts in own]


def pruned_ptx(ptx: str, count: int, keep: set[int]) -> str:
    """A batch's PTX with the code of the variants not in `keep` left out (their entries, functions and variables,
    and the comments naming them), everything else as it was, line-info included: what ptxas need assemble where the
    rest run from elsewhere (a mutant schema, harness.engine.schema). `ptx` itself where `keep` holds every one of
    its `count` variants, so that its cache keys stay those of the whole batch."""
    if keep >= set(range(count)):
        return ptx
    kept = []
    for group in _statement_groups(ptx.splitlines(keepends=True)):
        text = "".join(group)
        tags = {int(found[-TAG_WIDTH:]) for found in _TAG.findall(text)}
        if not tags or tags & keep:
            kept.append(text)
    return "".join(kept)


def variant_index(lowered_name: str) -> int:
    """The place in its batch of the variant whose kernel's lowered (mangled) name this is."""
    return int(_TAG.search(lowered_name).group()[-TAG_WIDTH:])
