"""The on-disk cache of compiled kernels: the one place that knows compiling can be skipped.

Compilers are pure functions (harness.compiler.nvrtc, the CPU backend's g++ step); this module stores
what they produce under a key that covers everything that can change it: the source, the
kernel name, the options (which name the arch and header folders), the compiler's version
and CACHE_VERSION, bumped whenever this project changes what it stores. Beside them, each problem's get_inputs()
signature (signature_cached): discovery's one build of it costs more than its compiles on a warm gate.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from harness.compiler import nvrtc

CACHE_VERSION = 2


def default_cache_dir() -> Path:
    override = os.environ.get("SUBSTRATE_CACHE_DIR")
    if override:
        return Path(override)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "substrate-harness"


def cache_key(*parts) -> str:
    material = json.dumps([CACHE_VERSION, *parts])
    return hashlib.sha256(material.encode()).hexdigest()


class Busy(Exception):
    """Another process is making what was asked for (lookup_or_make without waiting)."""


def lookup_or_make(key: str, suffixes: tuple[str, ...], make: Callable[[], dict[str, bytes]],
                   cache_dir: Path | None = None, wait: bool = True) -> tuple[dict[str, Path], bool]:
    """Paths of the files stored under `key` (one per suffix), making them first if any is missing.

    Returns (paths, True if they came from the cache). `make` returns {suffix: bytes}; an
    exception from it (a compile error) propagates and nothing is stored. One process makes a key at
    a time (a lock the system releases when its holder ends, however it ends): another that needs it
    waits and then finds it, rather than compiling it again beside the first (a campaign's workers
    and its compile pool ask for the same batches), or with `wait` False raises Busy at once.
    """
    import fcntl

    cache_dir = cache_dir or default_cache_dir()
    paths = {suffix: cache_dir / f"{key}.{suffix}" for suffix in suffixes}
    if all(p.is_file() for p in paths.values()):
        return paths, True
    cache_dir.mkdir(parents=True, exist_ok=True)
    lock = cache_dir / f"{key}.lock"
    with open(lock, "a") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(key) from None
        except OSError:  # a file system without locks (ENOLCK): made here, as before there were locks
            pass
        # Unlinked by its holder, whatever happens: a process still waiting on it finds the files when it gets it.
        try:
            if all(p.is_file() for p in paths.values()):  # made while this process waited
                return paths, True
            produced = make()
            for suffix, path in paths.items():
                _write_whole(path, produced[suffix])
        finally:
            lock.unlink(missing_ok=True)
    return paths, False


SIGNATURE_VERSION = 1  # bumped whenever suite_rules.portable_signature describes inputs otherwise


def _signature_json(signature: tuple) -> bytes | None:
    """`signature` as JSON, or None where JSON would not give it back as it is (a complex value, say)."""
    try:
        text = json.dumps(signature, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return text.encode() if _signature_from_json(text.encode()) == signature else None


def _signature_from_json(data: bytes) -> tuple:
    return tuple(("tensor", item[1], tuple(item[2])) if item[0] == "tensor" else ("value", item[1])
                 for item in json.loads(data))


def signature_cached(problem_source: bytes, make: Callable[[], tuple | None],
                     cache_dir: Path | None = None, kind: str = "get_inputs signature") -> tuple | None:
    """get_inputs()'s portable signature (harness.gate.checks.suite_rules) through the cache: `make()` where it is not stored.
    `kind` "official output signature": the official output's on it (harness.gate.foresight), () where the meta
    device cannot say, which is stored too.

    Keyed by the problem file's bytes and torch's version: a problem file is a module whose get_inputs() reads its
    own constants (KernelBench's format), and the admission records take its bytes for all that decides a verdict
    too. Building it on the meta device imports torch._dynamo in discovery wherever get_inputs() compares tensors
    (1 to 2 s of every gate's start on the H200); a signature JSON cannot give back as it was is not stored.
    """
    import torch

    key = cache_key(kind, SIGNATURE_VERSION, hashlib.sha256(problem_source).hexdigest(),
                    torch.__version__)
    stored = (cache_dir or default_cache_dir()) / f"{key}.json"
    if stored.is_file():
        return _signature_from_json(stored.read_bytes())
    signature = make()
    data = _signature_json(signature) if signature is not None else None
    if data is not None:
        stored.parent.mkdir(parents=True, exist_ok=True)
        _write_whole(stored, data)
    return signature


def _write_whole(path: Path, data: bytes) -> None:
    """Written under a temporary name first, so a reader (another worker) never sees half a file."""
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def compile_cached(source: str, kernel_name: str, arch: str, cache_dir: Path | None = None,
                   program_name: str = "kernel.cu", locate=None) -> tuple[nvrtc.CompiledKernel, bool]:
    """NVRTC-compile through the cache; returns (compiled kernel, True if it came from the cache). The program's name
    is in the key: its line info names it, and the sanitizers give each report to the program it names (a file that
    registers one source twice, or their mutants, would otherwise share one name)."""
    key = cache_key("nvrtc", source, kernel_name, list(nvrtc.compile_options(arch)), nvrtc.compiler_version(),
                    program_name)
    return _stored(key, lambda: nvrtc.compile_cuda(source, kernel_name, arch, program_name, locate),
                   nvrtc.CompiledKernel, cache_dir)


def _stored(key: str, compile_now, record, cache_dir: Path | None, wait: bool = True):
    """(the compiled record under `key`, True if it came from the cache): its cubin, and the rest as JSON."""
    def make() -> dict[str, bytes]:
        compiled = compile_now()
        meta = {k: v for k, v in asdict(compiled).items() if k != "cubin"}
        return {"cubin": compiled.cubin, "json": json.dumps(meta).encode()}

    paths, from_cache = lookup_or_make(key, ("json", "cubin"), make, cache_dir, wait)
    meta = json.loads(paths["json"].read_text())
    meta["options"] = tuple(meta["options"])
    return record(cubin=paths["cubin"].read_bytes(), **meta), from_cache


def compile_program_cached(source: str, name_expressions: tuple[str, ...], arch: str, program_name: str = "kernel.cu",
                           cache_dir: Path | None = None, address_checked: bool = False,
                           wait: bool = True) -> nvrtc.CompiledProgram:
    """NVRTC-compile a whole program (a campaign's batch of mutants) through the cache; with `address_checked`,
    its address-checked cubin assembled too (address_checked_cubin), so that a program ptxas rejects fails here,
    as one compiled for a real architecture fails in NVRTC, and not as it is loaded.

    A campaign compiles each batch ahead of its workers, on every core (harness.engine.compile), and the
    worker that needs the batch then finds it here. `wait` False: Busy where another process is compiling it.
    """
    key = cache_key("nvrtc program", source, list(name_expressions), list(nvrtc.compile_options(arch)),
                    nvrtc.compiler_version(), program_name)
    compiled, _ = _stored(key, lambda: nvrtc.compile_program(source, name_expressions, arch, program_name),
                          nvrtc.CompiledProgram, cache_dir, wait)
    if address_checked:
        address_checked_cubin(compiled.ptx, arch, cache_dir, wait)
    return compiled


def address_checked_cubin(ptx: str, arch: str, cache_dir: Path | None = None, wait: bool = True) -> bytes | None:
    """The cubin of `ptx` with the address check (harness.backends.address_check) built in, assembled for
    `arch`'s real architecture through the cache; None where it is not in the cache and nvJitLink, which
    assembles PTX without a GPU, cannot be loaded here (the driver then assembles the checked PTX as it loads it).
    Raises nvrtc.CompileError where ptxas rejects `ptx` itself (compiled for a virtual architecture, NVRTC ran
    no ptxas: this is where its errors show).

    Keyed by NVRTC's version, not nvJitLink's (both come from one toolkit, pinned together), so that a
    process that cannot load nvJitLink still finds what the compile pool assembled.
    """
    from harness.backends import address_check

    arch = nvrtc.real_arch(arch)
    key = cache_key("address check", address_check.CHECK_VERSION, ptx, arch, nvrtc.compiler_version())
    stored = (cache_dir or default_cache_dir()) / f"{key}.cubin"
    if not stored.is_file() and address_check.assembler_version() is None:
        return None

    def make() -> dict[str, bytes]:
        try:
            return {"cubin": address_check.assemble(address_check.instrument(ptx), arch)}
        except address_check.AssemblyError as checked_error:
            try:
                address_check.assemble(ptx, arch)
            except address_check.AssemblyError as error:
                raise nvrtc.CompileError(f"ptxas ({arch}): {error.log or error}", error.log) from error
            raise checked_error

    paths, _ = lookup_or_make(key, ("cubin",), make, cache_dir, wait)
    return paths["cubin"].read_bytes()


def assembled_cubin(ptx: str, arch: str, cache_dir: Path | None = None) -> bytes:
    """`ptx` assembled for `arch`'s real architecture by nvJitLink, through the cache, unchecked: the module of a
    kernel compiled to PTX alone for an address-checked campaign, where a launch runs unchecked."""
    from harness.backends import address_check

    arch = nvrtc.real_arch(arch)
    key = cache_key("assembled", ptx, arch, nvrtc.compiler_version())
    paths, _ = lookup_or_make(key, ("cubin",), lambda: {"cubin": address_check.assemble(ptx, arch)}, cache_dir)
    return paths["cubin"].read_bytes()
