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


def _top_level_statements(ptx: str) -> list[str]:
    """PTX cut at depth 0: each entry or function with its body, each declaration ending in ';'."""
    statements, current, depth = [], [], 0
    for stripped in _code_lines(ptx):
        if depth == 0 and _MODULE_HEADER.match(stripped):
            statements.append(stripped)
            continue
        current.append(stripped)
        depth += stripped.count("{") - stripped.count("}")
        if depth == 0 and (stripped.endswith(";") or stripped.endswith("}")):
            statements.append("\n".join(current))
            current = []
    if current:
        statements.append("\n".join(current))
    return statements


def variant_code(ptx: str, index: int) -> str:
    """The PTX statements of variant `index` of a batch, its tag blanked."""
    own = tag(index)
    return "\n".join(_PER_FUNCTION.sub(r"\1N", _TAG.sub("harness_batch_N", s))
                     for s in _top_level_statements(ptx) if own in s)


def code_digest(ptx: str, index: int) -> str:
    """A digest of what variant `index` executes, comparable across batches and positions."""
    return hashlib.sha256(variant_code(ptx, index).encode()).hexdigest()


def to_load(sources: list[str], variants: list, digests: dict | None) -> list[str]:
    """The sources of a batch that will be loaded: not those whose code is known already (equivalent
    to the unmutated source, or a duplicate of a mutant before them), when code is compared."""
    wanted, seen = [], set(digests or ())
    for source, variant in zip(sources, variants):
        if digests is not None and variant is not None:
            if variant.digest in seen:
                continue
            seen.add(variant.digest)
        wanted.append(source)
    return wanted


@dataclass(frozen=True)
class Variant:
    kernel: object  # harness.nvrtc.CompiledKernel, sharing its batch's PTX and cubin
    digest: str     # harness.engine.compile.code_digest: comparable across batches


def compile_variants(sources: list[str], entry, arch: str, program: str, compile_program=None) -> list[Variant | None]:
    """Every source compiled as one NVRTC program; a failed batch is compiled one source at a time.

    None stands for a source that does not compile in batch form (a compile error, which compiling
    it alone then reports, or a construct the batch's composition cannot take). `compile_program`
    is harness.nvrtc's, or one through the cache (a campaign's workers: the batch compiled ahead).
    """
    from harness import nvrtc  # here: the pure part above needs no NVRTC

    compile_program = compile_program or nvrtc.compile_program

    def attempt(batch: list[str]) -> list[Variant]:
        composed = batch_program(batch, entry.kernel_name, program)
        compiled = compile_program(composed.source, composed.name_expressions, arch, program)
        return [Variant(compiled.kernel(name, entry.kernel_name), code_digest(compiled.ptx, i))
                for i, name in enumerate(composed.name_expressions)]

    try:
        return attempt(sources)
    except nvrtc.CompileError:
        if len(sources) == 1:
            return [None]
        return [compile_variants([source], entry, arch, program, compile_program)[0] for source in sources]


def batches(mutant_ids: list[str], size: int) -> list[tuple[str, ...]]:
    """A substrate's mutants cut into batches of `size`, in order: fixed by the plan, so a worker started
    after a fault compiles the same batches (and finds them compiled ahead) whatever is left to run."""
    return [tuple(mutant_ids[first:first + size]) for first in range(0, len(mutant_ids), size)]


def group_by_batch(mutant_ids: tuple[str, ...], fixed: tuple[tuple[str, ...], ...]) -> list[tuple[tuple[str, ...],
                                                                                                   tuple[str, ...]]]:
    """(a fixed batch, the mutants of `mutant_ids` in it) for each run of consecutive mutants of one batch,
    in the order of `mutant_ids`; a mutant in no fixed batch is a batch of its own."""
    batch_of = {mutant_id: batch for batch in fixed for mutant_id in batch}
    groups: list[tuple[tuple[str, ...], list[str]]] = []
    for mutant_id in mutant_ids:
        batch = batch_of.get(mutant_id, (mutant_id,))
        if groups and groups[-1][0] == batch:
            groups[-1][1].append(mutant_id)
        else:
            groups.append((batch, [mutant_id]))
    return [(batch, tuple(members)) for batch, members in groups]


def precompile_batch(sources: list[str], kernel_name: str, program: str, arch: str, cache_dir: str | None) -> bool:
    """Compile one batch into the cache (a compile pool's task); False where it does not compile as a batch
    (the worker then compiles its mutants one at a time, as it would have)."""
    from pathlib import Path

    from harness import cache, nvrtc

    composed = batch_program(sources, kernel_name, program)
    try:
        cache.compile_program_cached(composed.source, composed.name_expressions, arch, program,
                                     Path(cache_dir) if cache_dir else None)
    except nvrtc.CompileError:
        return False
    return True


class CompilePool:
    """Processes that compile a campaign's batches into the cache ahead of its workers.

    NVRTC needs no GPU, and a worker that compiles its next batch itself leaves its GPU idle meanwhile;
    the cores the workers leave free compile every batch ahead instead, the first batch of each substrate
    first. A worker that needs a batch not compiled yet compiles it itself, as before.
    """

    def __init__(self, processes: int):
        from concurrent.futures import ProcessPoolExecutor

        from harness.worker import worker_context

        self.executor = ProcessPoolExecutor(max_workers=processes, mp_context=worker_context()) if processes else None

    def submit(self, work: list[tuple[list[str], str, str, str, str | None]]) -> None:
        """Each (sources, kernel name, program name, arch, cache folder) in order."""
        for task in work if self.executor else []:
            self.executor.submit(precompile_batch, *task)

    def close(self, wait: bool = False) -> None:
        """Batches not started are dropped (the campaign is over, or `wait`: every one finishes first)."""
        if self.executor:
            self.executor.shutdown(wait=wait, cancel_futures=not wait)


def precompile_order(plans: list, size: int, arch: str, cache_dir: str | None) -> list[tuple]:
    """The batches of every plan with mutants to run, as CompilePool tasks: round robin over the plans, so
    each substrate's first batch comes before any substrate's second."""
    per_plan = []
    for plan in plans:
        sources = {m.id: m.apply(plan.source) for m in plan.mutants}
        waiting = set(plan.to_run)
        per_plan.append([([sources[m] for m in batch], plan.kernel_name, f"{plan.name}.cu", arch, cache_dir)
                         for batch in batches([m.id for m in plan.mutants], size) if waiting & set(batch)])
    order = []
    for round_ in range(max((len(p) for p in per_plan), default=0)):
        order += [p[round_] for p in per_plan if round_ < len(p)]
    return order
