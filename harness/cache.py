"""The on-disk cache of compiled kernels: the one place that knows compiling can be skipped.

A key covers everything that can change the compiled code: the source, the kernel name, the
options (which name the arch and the header folder), the compiler's version and
CACHE_VERSION, bumped whenever this project changes what it stores.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path

from harness import nvrtc

CACHE_VERSION = 1


def default_cache_dir() -> Path:
    override = os.environ.get("SUBSTRATE_CACHE_DIR")
    if override:
        return Path(override)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "substrate-harness"


def cache_key(source: str, kernel_name: str, options: tuple[str, ...], compiler_version: str) -> str:
    material = json.dumps([CACHE_VERSION, source, kernel_name, list(options), compiler_version])
    return hashlib.sha256(material.encode()).hexdigest()


def compile_cached(source: str, kernel_name: str, arch: str, cache_dir: Path | None = None,
                   program_name: str = "kernel.cu", locate=None) -> tuple[nvrtc.CompiledKernel, bool]:
    """Return (compiled kernel, True if it came from the cache). Compile errors are not cached."""
    cache_dir = cache_dir or default_cache_dir()
    key = cache_key(source, kernel_name, nvrtc.compile_options(arch), nvrtc.compiler_version())
    meta_path = cache_dir / f"{key}.json"
    cubin_path = cache_dir / f"{key}.cubin"
    if meta_path.is_file() and cubin_path.is_file():
        meta = json.loads(meta_path.read_text())
        meta["options"] = tuple(meta["options"])
        return nvrtc.CompiledKernel(cubin=cubin_path.read_bytes(), **meta), True

    compiled = nvrtc.compile_cuda(source, kernel_name, arch, program_name, locate)
    cache_dir.mkdir(parents=True, exist_ok=True)
    meta = {k: v for k, v in asdict(compiled).items() if k != "cubin"}
    # Written to a temporary name first, so a reader never sees half a file.
    for path, data in ((cubin_path, compiled.cubin), (meta_path, json.dumps(meta).encode())):
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return compiled, False
