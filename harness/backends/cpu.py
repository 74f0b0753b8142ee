"""The CPU backend: the substrate's CUDA source, unchanged, compiled by g++ against a shim and run on the CPU.

The source is compiled twice: by NVRTC, so it is held to the same language and its parameter
list is read from PTX exactly as on the GPU, and by g++ with cpu_shim/cuda_cpu.h, which maps
CUDA's built-ins to C++ (threads as loop iterations or cooperative fibers, blocks over OpenMP
threads, real atomics, bit-exact __half and __nv_bfloat16). The shared object is cached like
cubin and called through ctypes with the same argument array cuLaunchKernel takes.

A source whose threads may read-modify-write one word together (`contends`: an atomic, a compound
update of an element, a store to an element it also loads) runs under contention: every atomic and
every plain read-modify-write yields to the block's next thread, and the blocks run in order on one
OS thread, so lost updates and failed CAS exchanges happen as on a GPU, in the same schedule on every
run (cuda_cpu.h, "contention"; g++'s -fsanitize=thread instrumentation calls the shim's load and
store hooks, and no sanitizer runtime is linked).

What the shim cannot run faithfully is refused here, before compiling, naming the construct.
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
import subprocess
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import torch

from harness.backends import cpu_stacks
from harness.backends.base import Backend, KernelFault, LoadedKernel
from harness.backends.cpu_compiler import compiler_version, cxx
from harness.compiler import cache, signature
from harness.compiler.batches import batch_program
from harness.compiler.nvrtc import CompileError

SHIM_DIR = Path(__file__).resolve().parent / "cpu_shim"
CXX_FLAGS = ("-std=c++17", "-O2", "-fopenmp", "-fPIC", "-shared", "-fwrapv", "-fno-strict-aliasing")
# A source under contention (`contends`) is compiled with these too, then linked without them: g++ calls the
# shim's hooks before each load and store (cuda_cpu.h, section 3, "contention"); no sanitizer runtime is linked.
CONTEND_FLAGS = ("-fsanitize=thread", "--param", "tsan-instrument-func-entry-exit=0", "-DHARNESS_CPU_CONTEND=1")
# The launch modes of cuda_cpu.h's harness_cpu::launch.
LOOP, FIBERS, CONTEND = 0, 1, 2
MEMORY_FAULT = 5  # cuda_cpu.h's kMemoryFault: the shim caught a signal in a block
ALLOWED_HEADERS = ("cuda_fp16.h", "cuda_bf16.h", "math_constants.h")

# (pattern, what the message calls it); matched against the source with comments removed.
UNSUPPORTED = (
    (r"\b(?:asm|__asm__|__asm)\b\s*(?:volatile\s*)?\(", "inline PTX (asm)"),
    (r"\bcooperative_groups\b|\bthis_grid\s*\(|\bgrid_group\b", "cooperative groups"),
    (r"<<<", "dynamic parallelism (a kernel launch inside a kernel)"),
    (r"\bextern\s+__shared__\b", "dynamic shared memory (extern __shared__); use a fixed-size __shared__ array"),
    (r"\b(?:tex\w*|surf\w*)\s*<|\btex[123]D\w*\s*\(|\bsurf[123]D\w*\s*\(", "textures and surfaces"),
    (r"\bclock(?:64)?\s*\(|%globaltimer|\b__nanosleep\s*\(", "GPU clocks and sleeps"),
)
# Sources using any of these need every thread of a block alive at once (fibers).
_NEEDS_FIBERS = re.compile(r"\b__syncthreads(?:_count|_and|_or)?\b|\b__syncwarp\b|\b__shfl\w*_sync\b|"
                           r"\b__(?:ballot|all|any|match_any|match_all|reduce_\w+)_sync\b|\b__activemask\b")
_INCLUDE = re.compile(r"^\s*#\s*include\s*[<\"]([^>\"]+)[>\"]", re.M)
# Sources whose threads may update one word together (`contends`): an atomic read-modify-write or CAS, ...
_ATOMIC_RMW = re.compile(r"\batomic(?:Add|Sub|Exch|Min|Max|Inc|Dec|And|Or|Xor|CAS)(?:_block|_system)?\s*\(")
# ... a compound assignment, ++ or -- of an element (`a[i] += v`, `(*p)++`, `*p -= v`, `++a[i]`) ...
_COMPOUND_UPDATE = re.compile(r"(?:\]|\))\s*(?:(?:[-+*/%&|^]|<<|>>)=(?!=)|\+\+|--)"
                              r"|\*\s*\w+\s*(?:[-+*/%&|^]|<<|>>)=(?!=)"
                              r"|(?:\+\+|--)\s*(?:\(\s*\*\s*\w+\s*\)|\*\s*\w+|\w+\s*\[)")
# ... or a store through `*p` / `a[i]` of an element the source also loads (`old = *p; ... *p = f(old)`).
_STORE = re.compile(r"(\*\s*\(?\s*\w+\s*\)?|\b\w+\s*\[[^\[\];]*\])\s*=(?!=)")


def _strip_comments(source: str) -> str:
    """The source with comments blanked out, line numbers kept."""
    without_block = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), source, flags=re.S)
    return re.sub(r"//[^\n]*", "", without_block)


def unsupported_constructs(source: str, program_name: str) -> list[str]:
    """Every construct of `source` the CPU backend refuses, each with its line."""
    code = _strip_comments(source)
    lines = source.splitlines()
    found = []

    def where(offset: int) -> str:
        n = code.count("\n", 0, offset) + 1
        return f"{program_name}:{n}: {lines[n - 1].strip()}"

    for pattern, what in UNSUPPORTED:
        for m in re.finditer(pattern, code):
            found.append(f"the CPU backend cannot run {what} ({where(m.start())})")
    for m in _INCLUDE.finditer(code):
        if m.group(1) not in ALLOWED_HEADERS:
            found.append(f"the CPU backend provides only {', '.join(ALLOWED_HEADERS)}, not <{m.group(1)}> "
                         f"({where(m.start())})")
    return list(dict.fromkeys(found))  # one message per construct and line


@lru_cache(maxsize=None)
def shim_digest() -> str:
    """A hash of the shim's headers: a change to the shim must miss the cache."""
    return cache.cache_key(*[(p.name, p.read_text()) for p in sorted(SHIM_DIR.glob("*.h"))])


# Below the source's shared arrays in the unit's thread-local block, as cuda_cpu.h's margin lies above them.
CLOSING_MARGIN = "static thread_local char harness_cpu_margin_below[8192] __attribute__((used));\n"


def _entry_points(launches: list[tuple[str, str, int]]) -> str:
    """The extern "C" functions ctypes calls: each (symbol, kernel, mode) a launch of that kernel with
    cuLaunchKernel's argument array, then harness_last_error."""
    return ('#line 1 "harness-launch-entry"\n' + "".join(
        f'extern "C" __attribute__((visibility("default"))) int {symbol}(\n'
        "    void** args, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz) {\n"
        f"    return harness_cpu::launch(&{kernel}, args, dim3(gx, gy, gz), dim3(bx, by, bz), {int(mode)});\n"
        "}\n" for symbol, kernel, mode in launches)
        + 'extern "C" const char* harness_last_error() { return harness_cpu::last_error(); }\n'
        + 'extern "C" void harness_share_guard_ledger(long* ledger) { harness_cpu::share_guard_ledger(ledger); }\n'
        + 'extern "C" void harness_release_stacks() { harness_cpu::release_stacks(); }\n')


def cpp_translation_unit(source: str, kernel_name: str, program_name: str, mode: int) -> str:
    """The C++ file g++ compiles: the shim, the unchanged source, and the launch entry points (`mode`: launch_mode;
    a unit with a contended launch is compiled with CONTEND_FLAGS, `contended_unit`)."""
    return (f'{_contend_define(mode == CONTEND)}#include "cuda_cpu.h"\n#line 1 "{program_name}"\n{source}\n'
            + _entry_points([("harness_launch", kernel_name, mode)]) + CLOSING_MARGIN)


def _contend_define(contended: bool) -> str:
    return "#define HARNESS_CPU_CONTEND 1\n" if contended else ""


def contended_unit(unit: str) -> bool:
    return unit.startswith(_contend_define(True))


def batch_translation_unit(sources: list[str], kernel_name: str, program_name: str) -> str:
    """One C++ file for many sources, each in its namespace (harness.compiler.batches); entry point i runs source i."""
    composed = batch_program(sources, kernel_name, program_name)
    modes = [launch_mode(source) for source in sources]
    return (_contend_define(CONTEND in modes) + '#include "cuda_cpu.h"\n' + composed.source + _entry_points(
        [(f"harness_launch_{i}", expression, mode)
         for i, (mode, expression) in enumerate(zip(modes, composed.name_expressions))]) + CLOSING_MARGIN)


def needs_fibers(source: str) -> bool:
    return bool(_NEEDS_FIBERS.search(_strip_comments(source)))


def _normal(lvalue: str) -> str:
    return re.sub(r"[\s()]", "", lvalue)


def contends(source: str) -> bool:
    """Whether threads of the source may read-modify-write one word together: an atomic, a compound update of an
    element, or a store to an element the source also loads. Such a source runs under contention (cuda_cpu.h,
    "contention"): its atomics and plain read-modify-writes yield to the block's next thread, one schedule on every
    run, so a lost update happens here as on a GPU."""
    code = _strip_comments(source)
    if _ATOMIC_RMW.search(code) or _COMPOUND_UPDATE.search(code):
        return True

    def element(m: re.Match) -> bool:
        """Whether a `*p` match dereferences p: not a declaration's `T* p` nor a product's `a * b`."""
        if not m.group().startswith("*"):
            return True
        j = m.start() - 1
        while j >= 0 and code[j].isspace():
            j -= 1
        return j < 0 or not (code[j].isalnum() or code[j] in "_)]*")

    stores = {(m.start(), _normal(m.group(1))) for m in _STORE.finditer(code) if element(m)}
    stored = {lvalue for _start, lvalue in stores}
    for m in re.finditer(r"\*\s*\(?\s*\w+\s*\)?|\b\w+\s*\[[^\[\];]*\]", code):
        lvalue = _normal(m.group())
        if lvalue in stored and (m.start(), lvalue) not in stores and element(m):
            return True
    return False


@lru_cache(maxsize=4096)
def launch_mode(source: str) -> int:
    """cuda_cpu.h's launch mode for the source: a loop per block, fibers, or fibers under contention."""
    if contends(source):
        return CONTEND
    return FIBERS if needs_fibers(source) else LOOP


_MODE_NAMES = {LOOP: "threads=loop", FIBERS: "threads=fibers", CONTEND: "threads=fibers,contended"}
_MODE_TARGETS = {
    LOOP: "a loop per block",
    FIBERS: "fibers per block",
    CONTEND: "fibers per block under contention: each atomic and plain read-modify-write first yields to the "
             "block's next thread, blocks one after another; not decided on the CPU backend: races between "
             "blocks",
}


def compile_shared_object(unit: str, program_name: str) -> bytes:
    """g++ the translation unit into a shared object; raises CompileError with g++'s errors."""
    with tempfile.TemporaryDirectory(prefix="harness-cpu-") as work:
        cpp, so = Path(work) / "unit.cpp", Path(work) / "unit.so"
        cpp.write_text(unit)
        if contended_unit(unit):  # instrumented, then linked without the sanitizer's runtime (-z defs: every hook is
            obj = Path(work) / "unit.o"  # the shim's)
            compile_flags = [f for f in CXX_FLAGS if f != "-shared"]
            done = subprocess.run([cxx(), *compile_flags, *CONTEND_FLAGS, f"-I{SHIM_DIR}", "-c", str(cpp), "-o",
                                   str(obj)], capture_output=True, text=True)
            if done.returncode == 0:
                done = subprocess.run([cxx(), *CXX_FLAGS, "-Wl,-z,defs", str(obj), "-o", str(so)],
                                      capture_output=True, text=True)
        else:
            done = subprocess.run([cxx(), *CXX_FLAGS, f"-I{SHIM_DIR}", str(cpp), "-o", str(so)],
                                  capture_output=True, text=True)
        if done.returncode != 0:
            errors = [line for line in done.stderr.splitlines() if ": error:" in line][:5]
            raise CompileError(f"the CPU backend's C++ compile failed ({compiler_version()}):\n"
                               + "\n".join(errors or done.stderr.splitlines()[-10:]), done.stderr)
        return so.read_bytes()


def unqualified(symbol: str) -> str:
    """A variable's name from its mangled symbol in namespaces (`_ZN2ns1xE` -> `x`); a symbol that is no such name
    is given back as it is."""
    if not (symbol.startswith("_ZN") and symbol.endswith("E")):
        return symbol
    rest, name = symbol[3:-1], None
    while rest:
        digits = re.match(r"\d+", rest)
        if digits is None:
            return symbol
        length, rest = int(digits.group()), rest[len(digits.group()):]
        if length > len(rest):
            return symbol
        name, rest = rest[:length], rest[length:]
    return name or symbol


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class CpuBackend(Backend):
    name = "cpu"

    def __init__(self, cache_dir: Path | None = None, ptxas: bool = True, time_kernels: bool = False):
        """`ptxas`: NVRTC assembles for the GPU too, so ptxas's limits (shared memory, registers) hold here as they
        would there (the gate); without it NVRTC stops at PTX, all a run here reads, in a third of the time (a
        campaign's workers: a mutant beyond those limits then runs here, where the GPU would refuse to compile it).
        `time_kernels`: each launch's time is added up (kernel_seconds); a launch here runs to its end."""
        compiler_version()  # fails early, with the reason, where there is no compiler
        self.cache_dir = cache_dir
        self.ptxas = ptxas
        self._kernel_seconds = 0.0 if time_kernels else None
        self._libraries = []  # loaded shared objects stay alive as long as the backend
        # (source, kernel name) -> (its batch's compile: (library, from the cache), its entry point): sources
        # compiled ahead, together, by a thread of their own while the caller goes on (g++ is a process).
        self._compiled_ahead: dict[tuple[str, str], tuple[Future, str]] = {}
        self._compiler = ThreadPoolExecutor(max_workers=1, thread_name_prefix="g++ ahead")

    @property
    def device(self):
        return torch.device("cpu")

    @property
    def nvrtc_arch(self) -> str:
        from harness.compiler.nvrtc import arch_without_gpu

        return arch_without_gpu(self.ptxas)

    def describe_device(self) -> str:
        return f"CPU: {_cpu_name()} ({os.cpu_count()} cores, {compiler_version()})"

    def load(self, source: str, kernel_name: str, program_name: str, locate=None, compiled=None) -> LoadedKernel:
        refused = unsupported_constructs(source, program_name)
        if refused:
            raise CompileError("\n".join(refused))
        if compiled is None:  # NVRTC's PTX gives the parameter list, as on the GPU
            compiled, _ = cache.compile_cached(source, kernel_name, self.nvrtc_arch, self.cache_dir, program_name,
                                               locate)
        mode = launch_mode(source)
        ahead = self._compiled_ahead.get((source, kernel_name))
        batch = ahead[0].result() if ahead is not None else None  # waits for its g++ run
        if batch is not None:
            (library, from_cache), entry_name = batch, ahead[1]
        else:
            unit = cpp_translation_unit(source, kernel_name, program_name, mode)
            library, from_cache = self._library(unit, program_name)
            entry_name = "harness_launch"
        entry = getattr(library, entry_name)
        entry.restype = ctypes.c_int
        entry.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6
        library.harness_last_error.restype = ctypes.c_char_p
        return LoadedKernel(
            name=kernel_name,
            params=signature.kernel_params(compiled.ptx, compiled.lowered_name),
            shared_memory=signature.uses_shared_memory(compiled.ptx),
            handle=(entry, library.harness_last_error, library),
            from_cache=from_cache,
            options=(*CXX_FLAGS, *(CONTEND_FLAGS if mode == CONTEND else ()), _MODE_NAMES[mode]),
            compiler=compiler_version(),
            target=f"the CPU ({_MODE_TARGETS[mode]})",
        )

    builds_beside = True

    def compile_ahead(self, sources: list[str], kernel_name: str, program_name: str) -> None:
        """Start compiling sources (a campaign's mutants, or its schema alone) with one g++ run, for load() to find.

        Most of g++'s time on a small kernel goes to the shim's header, once per run; and the run
        goes on beside the caller, who loads the sources when it needs them (load waits for it). A
        batch that does not compile is left alone: load() compiles each source by itself, which
        names the one at fault, as it would have without this.
        """
        wanted = [s for s in dict.fromkeys(sources)
                  if (s, kernel_name) not in self._compiled_ahead and not unsupported_constructs(s, program_name)]
        if not wanted:
            return
        unit = batch_translation_unit(wanted, kernel_name, program_name)

        def compile_batch() -> tuple[ctypes.CDLL, bool] | None:
            try:
                return self._library(unit, program_name)
            except CompileError:
                return None

        batch = self._compiler.submit(compile_batch)
        for i, source in enumerate(wanted):
            self._compiled_ahead[(source, kernel_name)] = (batch, f"harness_launch_{i}")

    switches_schemata = True

    def set_switch(self, kernel: LoadedKernel, symbol: str, value: int) -> None:
        """The switch is a plain global of the kernel's shared object (the shim exports a `__constant__`), read at
        each launch. `symbol` names it in a batch's namespace; a source loaded alone (the schema, which no batch
        holds) declares it at global scope, where C++ leaves a variable's name unmangled."""
        library = kernel.handle[2]
        for name in dict.fromkeys((symbol, unqualified(symbol))):
            try:
                ctypes.c_int.in_dll(library, name).value = value
                return
            except ValueError:  # not in this object
                continue
        raise ValueError(f"the CPU backend's {kernel.name} has no switch {symbol!r}")

    def _library(self, unit: str, program_name: str) -> tuple[ctypes.CDLL, bool]:
        key = cache.cache_key("g++", unit, list(CXX_FLAGS), list(CONTEND_FLAGS), compiler_version(), shim_digest())
        paths, from_cache = cache.lookup_or_make(
            key, ("so",), lambda: {"so": compile_shared_object(unit, program_name)}, self.cache_dir)
        library = ctypes.CDLL(str(paths["so"]))
        cpu_stacks.share_ledger(library)
        self._libraries.append(library)
        return library, from_cache

    def launch(self, kernel: LoadedKernel, grid, block, args: list) -> None:
        pointers = (ctypes.c_void_p * max(1, len(args)))(*[ctypes.addressof(a) for a in args])
        entry, last_error, library = kernel.handle
        cpu_stacks.launching(library)
        started = time.perf_counter()
        status = entry(ctypes.addressof(pointers), *grid, *block)
        if self._kernel_seconds is not None:
            self._kernel_seconds += time.perf_counter() - started
        if status != 0:
            message = last_error().decode(errors="replace")
            raise KernelFault(f"CPU backend: {message}", poisons_context=False, memory_fault=status == MEMORY_FAULT)

    def kernel_seconds(self, wait: bool = True) -> float | None:
        return self._kernel_seconds  # a launch here has ended when it returns

    def synchronize(self) -> None:
        """Launches on the CPU run to completion before returning: nothing to wait for."""
