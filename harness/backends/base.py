"""What every backend provides: compile device source, launch it on tensors, report faults.

A backend is one file beside this one; adding a backend means adding a file and a line in
harness.backends.BACKENDS, nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


class BackendUnavailable(Exception):
    """The backend cannot run on this machine (no GPU, not built yet); the message says why."""


def out_of_device_memory(error: BaseException) -> bool:
    """torch's allocator out of memory (torch.OutOfMemoryError), or a CUDA call's (`CUDA error: out of memory`):
    the harness's own allocations meeting the device's limit, never a kernel's doing (a kernel allocates nothing)."""
    return says_out_of_device_memory(f"{type(error).__name__}: {error}")


def says_out_of_device_memory(text: str) -> bool:
    """Whether an error's words (its type and message, or a traceback a process wrote) are the device's memory
    running out: torch's allocator's, or a CUDA call's."""
    return "OutOfMemoryError" in text or "out of memory" in text.lower()


class KernelFault(Exception):
    """The kernel failed while running (illegal address, launch failure).

    `poisons_context` is True when nothing more can run in this process afterwards. `memory_fault`
    is True for the CPU backend's caught memory faults: without the shim's handler they would have
    ended the process, as a fault that poisons the context does on the GPU. `foreseen` is True for
    a GPU fault the address check stopped before it happened (harness.backends.address_check): it
    would have poisoned the context.
    """

    def __init__(self, message: str, poisons_context: bool = True, memory_fault: bool = False,
                 foreseen: bool = False):
        super().__init__(message)
        self.poisons_context = poisons_context
        self.memory_fault = memory_fault
        self.foreseen = foreseen


@dataclass(frozen=True)
class LoadedKernel:
    """A compiled kernel ready to launch: its backend handle and its parameter list."""

    name: str
    params: list  # list[harness.compiler.signature.Param]
    handle: object
    from_cache: bool
    options: tuple[str, ...]
    compiler: str  # e.g. "NVRTC 13.0"
    target: str  # e.g. "sm_90"
    shared_memory: bool = True  # whether its module's PTX declares or addresses shared memory (signature)


class Backend:
    name = "base"

    @property
    def device(self):
        """The torch.device suites build their inputs on."""
        raise NotImplementedError("a backend needs a torch device")

    def describe_device(self) -> str:
        raise NotImplementedError("a backend needs describe_device")

    @property
    def nvrtc_arch(self) -> str:
        """The architecture `load` has NVRTC compile for, so PTX made elsewhere can share its cache entry."""
        from harness.compiler.nvrtc import DEFAULT_ARCH

        return DEFAULT_ARCH

    def load(self, source: str, kernel_name: str, program_name: str, locate=None, compiled=None) -> LoadedKernel:
        """Compile (or fetch from the cache) and load; raises harness.compiler.nvrtc.CompileError.

        `compiled`, a harness.compiler.nvrtc.CompiledKernel of `source` made elsewhere (one kernel of a
        batch), replaces the NVRTC step.
        """
        raise NotImplementedError("a backend needs load")

    # Whether compile_ahead builds beside the caller (the CPU backend's g++, in a process): a campaign's worker then
    # prepares its next batch before running this one's mutants.
    builds_beside = False

    def compile_ahead(self, sources: list[str], kernel_name: str, program_name: str) -> None:
        """Prepare what load() will be asked for, where compiling many at once is cheaper (the CPU
        backend's g++); load() stays the one that compiles, reports errors and loads. Here: nothing."""

    # Whether set_switch can choose the mutant a schema's kernel runs (harness.engine.schema): cuda's and the CPU's.
    switches_schemata = False

    def set_switch(self, kernel: LoadedKernel, symbol: str, value: int) -> None:
        """Write `value` into the `int` constant `symbol` (a mangled name) of the module `kernel` runs from, before
        its next launch: which of a schema's mutants it runs."""
        raise NotImplementedError(f"the {self.name} backend does not switch schemata")

    def launch(self, kernel: LoadedKernel, grid: tuple[int, int, int], block: tuple[int, int, int],
               args: list) -> None:
        """Start `kernel` over grid x block with ctypes argument objects; may return before it ends."""
        raise NotImplementedError("a backend needs launch")

    def synchronize(self) -> None:
        """Wait for launched work; raises KernelFault if it failed."""
        raise NotImplementedError("a backend needs synchronize")

    def kernel_seconds(self, wait: bool = True) -> float | None:
        """How long the kernels launched so far ran on the device, where the backend was made to time them
        (`time_kernels`): the launched work's own time, which beside other processes' contexts on one GPU also holds
        the slices the device gave them; None where it was not made to. Without `wait`, launches still running are
        counted later."""
        return None

    def pending_fault(self) -> PendingFault | None:
        """After a launch, instead of synchronize(): what says whether the launched work failed, read with other
        signals in one transfer; None where synchronize() must be called (here)."""
        return None

    def close_figures(self, got, expected, atol: float, rtol: float, chunk: int):
        """harness.gate.checks.compare's close-comparison figures of every `chunk` elements of two same-dtype tensors
        on this device, computed in one pass (harness.backends.close_figures.one_pass's answer); None where the
        backend has no quicker way than compare's own torch route (here)."""
        return None

    def memory_info(self) -> tuple[int, int]:
        """(free, total) bytes of device memory, or (0, 0) where the backend cannot tell."""
        return 0, 0

    def peak_memory_bytes(self) -> int | None:
        """The most device memory this process has held (bytes) since the last end_job(), or None where the backend
        cannot tell."""
        return None

    def end_job(self) -> bool:
        """After a gate job, in a worker that may serve another: hand back the memory the job's tensors held, start
        the peak afresh, and say whether the device can still run work (a fault can leave the context unusable)."""
        return True


@dataclass(frozen=True)
class PendingFault:
    """Backend.pending_fault's answer: `signals` (int64, where the kernels run) are read after the launched work
    with the caller's own; `read(values)` raises the KernelFault they show. A fault the device raises itself makes
    the read fail: the caller then calls synchronize(), which raises it as a KernelFault."""

    signals: object  # a torch.Tensor
    read: Callable[[list[int]], None]
