"""Compile device-only CUDA source with NVRTC: a pure function of source, options and arch.

Uses cuda.bindings.nvrtc rather than CuPy: it needs no GPU or driver (so CI can compile every
substrate), and it adds no option of its own (CuPy appends -ftz=true, which changes float
results on subnormals). Caching lives in harness.compiler.cache, not here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache

# Every option is spelled out, including the IEEE defaults, so the report records exactly
# what the code was compiled with and a change of NVRTC default cannot change results unseen.
BASE_OPTIONS = ("-std=c++17", "-ftz=false", "-prec-div=true", "-prec-sqrt=true", "-fmad=true", "-lineinfo")
DEFAULT_ARCH = "sm_90"  # the lent H200; used where no device says otherwise


def ptx_only(arch: str) -> str:
    """The virtual architecture of `arch` (sm_90 -> compute_90): NVRTC stops at the PTX it writes for `arch`."""
    return "compute_" + arch.removeprefix("sm_").removeprefix("compute_")


def real_arch(arch: str) -> str:
    """The real architecture of `arch` (compute_90 -> sm_90): what ptxas assembles that PTX for."""
    return "sm_" + arch.removeprefix("compute_").removeprefix("sm_")


# A virtual architecture: NVRTC stops at PTX (the same PTX as DEFAULT_ARCH's) and runs no ptxas, in a third of
# the time; for what needs the PTX alone (the CPU backend's campaigns: parameter lists and code digests).
PTX_ONLY_ARCH = ptx_only(DEFAULT_ARCH)


def arch_without_gpu(ptxas: bool) -> str:
    """The architecture where no device names one: DEFAULT_ARCH, assembled by ptxas (its limits hold), or
    PTX_ONLY_ARCH. The CPU backend's, and its campaigns' compile pool's, which must compile what its workers load."""
    return DEFAULT_ARCH if ptxas else PTX_ONLY_ARCH


class CompileError(Exception):
    """NVRTC refused the source. `message` quotes each error with its source line."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


@dataclass(frozen=True)
class CompiledKernel:
    kernel_name: str
    lowered_name: str  # the entry symbol in PTX/cubin (differs from kernel_name without extern "C")
    ptx: str
    cubin: bytes
    options: tuple[str, ...]
    arch: str
    compiler_version: str
    log: str = ""


def _check(result, what: str):
    """Unwrap a cuda.bindings return tuple, raising on a non-success status."""
    from cuda.bindings import nvrtc

    status, *values = result if isinstance(result, tuple) else (result,)
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, text = nvrtc.nvrtcGetErrorString(status)
        raise CompileError(f"NVRTC {what} failed: {text.decode()}")
    return values[0] if len(values) == 1 else values


def compiler_version() -> str:
    from cuda.bindings import nvrtc

    major, minor = _check(nvrtc.nvrtcVersion(), "version query")
    return f"{major}.{minor}"


@lru_cache(maxsize=None)
def cuda_include_dir() -> str:
    """The folder holding cuda_fp16.h and friends: the nvidia-cuda-runtime wheel, else CUDA_HOME."""
    try:
        import cuda.pathfinder

        found = cuda.pathfinder.find_nvidia_header_directory("cudart")
        if found:
            return str(found)
    except Exception:  # pathfinder's errors vary by version; the fallbacks below say what failed
        pass
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.path.isfile(os.path.join(root, "include", "cuda_fp16.h")):
            return os.path.join(root, "include")
    raise CompileError(
        "cannot find the CUDA headers (cuda_fp16.h): install the nvidia-cuda-runtime wheel or set CUDA_HOME"
    )


def compile_options(arch: str) -> tuple[str, ...]:
    return (*BASE_OPTIONS, f"-arch={arch}", f"-I{cuda_include_dir()}")


_LOG_LINE = re.compile(r"^(?P<file>[^()\n]+)\((?P<line>\d+)\): (?P<kind>error|warning|catastrophic error)(?P<rest>.*)$")


def format_compile_log(log: str, source: str, program_name: str, locate=None) -> str:
    """Quote every error of an NVRTC log with its source line.

    `locate(line_text)` may return "file.py:N" for where that CUDA line sits in the candidate.
    """
    lines = source.splitlines()
    out = []
    for raw in log.splitlines():
        m = _LOG_LINE.match(raw.strip())
        if not m or m["kind"] == "warning":
            continue
        n = int(m["line"])
        text = lines[n - 1] if 0 < n <= len(lines) else ""
        where = f"{program_name}:{n}"
        python_place = locate(text) if (locate and text.strip()) else None
        if python_place:
            where += f" ({python_place})"
        out.append(f"{where}: {m['kind']}{m['rest']}\n    {n:4d} | {text}")
    return "\n".join(out) if out else log.strip()


@dataclass(frozen=True)
class CompiledProgram:
    """One NVRTC program: its PTX and cubin, and the lowered (entry) name of each name expression."""

    ptx: str
    cubin: bytes
    lowered_names: dict[str, str]
    options: tuple[str, ...]
    arch: str
    compiler_version: str
    log: str = ""

    def kernel(self, name_expression: str, kernel_name: str | None = None) -> CompiledKernel:
        """The kernel behind `name_expression` (a batch's kernels share the program's PTX and cubin)."""
        return CompiledKernel(kernel_name=kernel_name or name_expression,
                              lowered_name=self.lowered_names[name_expression], ptx=self.ptx, cubin=self.cubin,
                              options=self.options, arch=self.arch, compiler_version=self.compiler_version,
                              log=self.log)


def compile_program(source: str, name_expressions: tuple[str, ...], arch: str = DEFAULT_ARCH,
                    program_name: str = "kernel.cu", locate=None) -> CompiledProgram:
    """Compile `source` for `arch`; every name expression must name a __global__ function of it."""
    from cuda.bindings import nvrtc

    options = compile_options(arch)
    prog = _check(nvrtc.nvrtcCreateProgram(source.encode(), program_name.encode(), 0, [], []), "program creation")
    try:
        for name in name_expressions:
            _check(nvrtc.nvrtcAddNameExpression(prog, name.encode()), "name expression")
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(options), [o.encode() for o in options])
        size = _check(nvrtc.nvrtcGetProgramLogSize(prog), "log size")
        buf = b" " * size
        _check(nvrtc.nvrtcGetProgramLog(prog, buf), "log")
        log = buf.rstrip(b"\x00").decode(errors="replace")
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            if "Error in parsing name expression" in log and len(name_expressions) == 1:
                raise CompileError(f"kernel_name {name_expressions[0]!r} is not a __global__ function of the source",
                                   log)
            raise CompileError(format_compile_log(log, source, program_name, locate), log)
        lowered = {}
        for name in name_expressions:
            status, found = nvrtc.nvrtcGetLoweredName(prog, name.encode())
            if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
                raise CompileError(f"kernel_name {name!r} is not a __global__ function of the source", log)
            lowered[name] = found.decode()
        size = _check(nvrtc.nvrtcGetPTXSize(prog), "PTX size")
        ptx = b" " * size
        _check(nvrtc.nvrtcGetPTX(prog, ptx), "PTX")
        size = _check(nvrtc.nvrtcGetCUBINSize(prog), "cubin size")
        cubin = b" " * size
        _check(nvrtc.nvrtcGetCUBIN(prog, cubin), "cubin")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return CompiledProgram(ptx=ptx.rstrip(b"\x00").decode(), cubin=bytes(cubin), lowered_names=lowered,
                           options=options, arch=arch, compiler_version=compiler_version(), log=log)


def compile_cuda(source: str, kernel_name: str, arch: str = DEFAULT_ARCH, program_name: str = "kernel.cu",
                 locate=None) -> CompiledKernel:
    """Compile `source` for `arch` and return PTX, cubin and the lowered name of `kernel_name`."""
    return compile_program(source, (kernel_name,), arch, program_name, locate).kernel(kernel_name)
