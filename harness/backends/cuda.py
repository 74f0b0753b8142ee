"""The CUDA backend: NVRTC cubin loaded and launched through the driver API on torch's stream.

The driver calls go to the device's primary context, the one torch uses, so kernels and torch
operations order correctly on torch's current stream.

With `check_addresses` (a campaign's workers) every kernel is loaded address-checked
(harness.backends.address_check): an access that would fault is not made, and `synchronize` raises
the fault the GPU would have raised, as a KernelFault that leaves the context usable. The table of
mapped memory the check reads is rebuilt before a launch whenever torch's allocator has taken or
given back a segment since the last one.
"""

from __future__ import annotations

import ctypes
import gc
import struct
import sys
import threading
from pathlib import Path

import torch

from harness.backends import address_check, close_figures
from harness.backends.base import Backend, BackendUnavailable, KernelFault, LoadedKernel, PendingFault
from harness.compiler import cache, nvrtc, signature

# Errors after which the CUDA context is unusable until the process ends (CUDA 13 headers).
# Errors after which the context is unusable (CUDA's "persistent" errors): illegal address, launch
# timeout, assert, hardware stack error, ECC, illegal instruction, misaligned address, invalid
# address space, invalid PC, launch failed.
_STICKY_ERRORS = {700, 702, 710, 713, 714, 715, 716, 717, 718, 719}
_OUT_OF_RESOURCES = 701  # the checked kernel's extra registers may not fit a block the unchecked one fits


def _driver():
    from cuda.bindings import driver

    return driver


def _describe_error(status) -> str:
    driver = _driver()
    _, name = driver.cuGetErrorName(status)
    _, text = driver.cuGetErrorString(status)
    return f"CUDA error {int(status)} {name.decode()}: {text.decode()}"


def _check(result, what: str):
    driver = _driver()
    status, *values = result
    if status != driver.CUresult.CUDA_SUCCESS:
        raise KernelFault(f"{what}: {_describe_error(status)}", poisons_context=int(status) in _STICKY_ERRORS)
    return values[0] if len(values) == 1 else values


_STATE_HEAD_BYTES = 24  # the check's state as synchronize reads it: count, pad, address, size and fault, pad


class _DeviceWords:
    """`count` int64 at a device address, as __cuda_array_interface__ shows them to torch (no copy)."""

    def __init__(self, address: int, count: int):
        self.__cuda_array_interface__ = {"shape": (count,), "typestr": "<i8", "data": (address, False),
                                         "version": 3, "strides": None, "stream": None}


class _KernelTimer:
    """Each launch's time on the device, from a pair of CUDA events around it on its stream, added up as the pairs
    complete (never waited for: a launch's pair is read once later work has made it complete)."""

    COLLECT_EVERY = 256  # pairs held before the completed ones are read

    def __init__(self):
        self.pending, self.seconds = [], 0.0

    @staticmethod
    def start(stream: torch.cuda.Stream) -> torch.cuda.Event:
        event = torch.cuda.Event(enable_timing=True)
        event.record(stream)
        return event

    def end(self, started: torch.cuda.Event, stream: torch.cuda.Stream) -> None:
        self.pending.append((started, self.start(stream)))
        if len(self.pending) >= self.COLLECT_EVERY:
            self.collect()

    def collect(self, wait: bool = False) -> float:
        """The seconds of every completed pair so far (those still running are read next time; with `wait`, none
        is: the last launch is waited for, and with it every one before on its stream)."""
        running = []
        try:
            if wait and self.pending:
                self.pending[-1][1].synchronize()
            for started, ended in self.pending:
                if ended.query():
                    self.seconds += started.elapsed_time(ended) / 1000.0
                else:
                    running.append((started, ended))
        except RuntimeError:  # a fault left the context unusable: what ran after it is not counted
            running = []
        self.pending = running
        return self.seconds


class CudaBackend(Backend):
    name = "cuda"

    def __init__(self, device_index: int = 0, cache_dir: Path | None = None, check_addresses: bool = False,
                 blocking_sync: bool = False, time_kernels: bool = False):
        if not torch.cuda.is_available():
            raise BackendUnavailable("the cuda backend needs a visible GPU, and torch sees none")
        driver = _driver()
        self._device = torch.device("cuda", device_index)
        _check(driver.cuInit(0), "cuInit")
        cu_device = _check(driver.cuDeviceGet(device_index), "cuDeviceGet")
        if blocking_sync and not _check(driver.cuDevicePrimaryCtxGetState(cu_device), "cuDevicePrimaryCtxGetState")[1]:
            # Before the context is made: a wait for the GPU sleeps instead of spinning on a core. A campaign's many
            # workers share one GPU and wait for it most of the time; spinning, they took the cores the compile pool
            # needs (MEASUREMENTS.md, twenty-second session).
            _check(driver.cuDevicePrimaryCtxSetFlags(cu_device, driver.CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC),
                   "cuDevicePrimaryCtxSetFlags")
        torch.cuda.init()
        torch.empty(1, device=self._device)  # makes torch create and bind the primary context
        context = _check(driver.cuDevicePrimaryCtxRetain(cu_device), "cuDevicePrimaryCtxRetain")
        _check(driver.cuCtxSetCurrent(context), "cuCtxSetCurrent")
        self._context = context
        major, minor = torch.cuda.get_device_capability(self._device)
        self.arch = f"sm_{major}{minor}"
        self.cache_dir = cache_dir
        self._no_signals = torch.empty(0, dtype=torch.int64, device=self._device)
        self.blocking_sync = blocking_sync and bool(
            int(_check(driver.cuCtxGetFlags(), "cuCtxGetFlags")) & int(driver.CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC))
        self._modules = {}  # PTX -> module; loaded modules stay alive as long as the backend
        self._module_of: dict[int, object] = {}  # a loaded function -> the module it runs from
        self._switch_of: dict[int, tuple[str, int]] = {}  # a schema's function -> its switch, as last set
        self._figures_launchers = {}  # dtype -> close_figures' kernel for it as a launcher (None: not loadable)
        self._figures_lock = threading.Lock()  # the gate's second references compare in a thread of their own
        self._figures_bound = threading.local()  # the threads the driver API is bound to the context in
        self.check_addresses = check_addresses
        self._timer = _KernelTimer() if time_kernels else None
        if check_addresses:
            self._check_state = int(_check(driver.cuMemAlloc(address_check.STATE_BYTES), "cuMemAlloc"))
            _check(driver.cuMemsetD8(self._check_state, 0, address_check.STATE_BYTES), "cuMemsetD8")
            # The state's head as a tensor over that memory (not torch's: outside the check's table), so that
            # torch's ops read it after a kernel, in its stream's order.
            self._state_head = torch.as_tensor(_DeviceWords(self._check_state, _STATE_HEAD_BYTES // 8),
                                               device=self._device)
            self._checked_modules = {}  # PTX -> (the address-checked module, its table's device address)
            self._module_ranges: list[tuple[int, int]] = []  # the checked modules' own variables
            self._unchecked = {}  # a checked function's handle -> its CompiledKernel, should its launch not fit
            self._table_of = {}  # a checked function's handle -> its module's table
            self._written: dict[int, tuple] = {}  # a module's table -> what its content was made for
            self._table_made_for = None  # the allocator's segment counts when the table was last made
            self._table = None  # the table's bytes, made for those counts; None where the ranges do not fit
            self._checked_since_sync = False
            self._told: set[str] = set()  # the reasons kernels ran unchecked, said once each
        # Where nvJitLink cannot be loaded the driver assembles each checked module from its PTX as it loads it.
        self.assembles_checked_ptx = check_addresses and address_check.assembler_version() is None
        # Checked, NVRTC stops at the PTX (the same PTX): its own ptxas run would make a cubin never loaded, and
        # takes more of a batch's compile than NVRTC's front end (MEASUREMENTS.md, twenty-first session). nvJitLink
        # assembles the checked cubin, and the unchecked one only where a launch must run unchecked.
        self._compiles_to_ptx = check_addresses and not self.assembles_checked_ptx

    @property
    def device(self):
        return self._device

    @property
    def nvrtc_arch(self) -> str:
        return nvrtc.ptx_only(self.arch) if self._compiles_to_ptx else self.arch

    def describe_device(self) -> str:
        props = torch.cuda.get_device_properties(self._device)
        return f"{props.name} ({self.arch}, {props.total_memory // 2**30} GiB)"

    def load(self, source: str, kernel_name: str, program_name: str, locate=None, compiled=None) -> LoadedKernel:
        driver = _driver()
        from_cache = compiled is not None
        if compiled is None:
            compiled, from_cache = cache.compile_cached(source, kernel_name, self.nvrtc_arch, self.cache_dir,
                                                        program_name, locate)
        module, table = self._checked_module(compiled) if self.check_addresses else (self._module(compiled), None)
        function = _check(driver.cuModuleGetFunction(module, compiled.lowered_name.encode()), "cuModuleGetFunction")
        self._module_of[int(function)] = module
        if self.check_addresses:
            self._unchecked[int(function)] = compiled
            self._table_of[int(function)] = table
        return LoadedKernel(
            name=kernel_name,
            params=signature.kernel_params(compiled.ptx, compiled.lowered_name),
            shared_memory=signature.uses_shared_memory(compiled.ptx),
            handle=function,
            from_cache=from_cache,
            options=compiled.options,
            compiler=f"NVRTC {compiled.compiler_version}",
            target=self.arch,
        )

    def _module(self, compiled):
        # A batch's kernels share one cubin: it is loaded once, and each kernel is looked up in it.
        module = self._modules.get(compiled.ptx)
        if module is None:
            cubin = compiled.cubin or cache.assembled_cubin(compiled.ptx, self.arch, self.cache_dir)
            module = _check(_driver().cuModuleLoadData(cubin), "cuModuleLoadData")
            self._modules[compiled.ptx] = module
        return module

    def _checked_module(self, compiled):
        """(the address-checked module of `compiled`'s program, its table's device address), its state pointer set and
        its variables in the table."""
        found = self._checked_modules.get(compiled.ptx)
        if found is not None:
            return found
        driver = _driver()
        cubin = cache.address_checked_cubin(compiled.ptx, self.arch, self.cache_dir)
        # Without nvJitLink the driver assembles the checked PTX itself (NUL-terminated text).
        image = cubin if cubin is not None else address_check.instrument(compiled.ptx).encode() + b"\0"
        module = _check(driver.cuModuleLoadData(image), "cuModuleLoadData (address-checked)")
        pointer, _ = _check(driver.cuModuleGetGlobal(module, address_check.STATE_SYMBOL.encode()), "cuModuleGetGlobal")
        value = struct.pack("<Q", self._check_state)
        _check(driver.cuMemcpyHtoD(pointer, value, len(value)), "setting the address check's state")
        table, _ = _check(driver.cuModuleGetGlobal(module, address_check.TABLE_SYMBOL.encode()), "cuModuleGetGlobal")
        for name in address_check.address_taken_globals(compiled.ptx):
            pointer, size = _check(driver.cuModuleGetGlobal(module, name.encode()), f"cuModuleGetGlobal {name}")
            self._module_ranges.append((int(pointer), int(pointer) + int(size)))
        self._checked_modules[compiled.ptx] = module, int(table)
        return module, int(table)

    def _write_table(self, table: int) -> bool:
        """The mapped memory a kernel may reach without a fault, written into the module's `table` where torch's
        allocator has taken or given back a segment since it was last written there; False when the table cannot
        hold it all (the kernel then runs unchecked)."""
        stats = torch.cuda.memory_stats(self._device)
        made_for = (stats.get("segment.all.allocated", 0), stats.get("segment.all.freed", 0),
                    len(self._module_ranges))
        if made_for != self._table_made_for:
            segments = [(s["address"], s["address"] + s["total_size"]) for s in torch.cuda.memory_snapshot()
                        if s.get("device", self._device.index) == self._device.index]
            ranges = address_check.ranges_table(segments + self._module_ranges)
            self._table_made_for = made_for
            self._table = None if ranges is None else struct.pack(f"<{2 * len(ranges[0])}Q", *ranges[0], *ranges[1])
            if ranges is None:
                self._tell("table", f"{len(segments) + len(self._module_ranges)} ranges of mapped memory, more than "
                                    f"the table's {address_check.TABLE_ENTRIES} even merged where they touch: "
                                    f"kernels run unchecked while so")
        if self._table is None:
            return False
        if self._written.get(table) != made_for:
            # Synchronous: the stream's earlier kernels read the table this replaces.
            _check(_driver().cuMemcpyHtoD(table, self._table, len(self._table)), "writing the address check's table")
            self._written[table] = made_for
        return True

    def _tell(self, reason: str, text: str) -> None:
        """Say once per reason why kernels run unchecked: on a campaign's workers' stderr, its workers.log."""
        if reason not in self._told:
            self._told.add(reason)
            print(f"address check: {text}", file=sys.stderr, flush=True)

    def _unchecked_function(self, handle):
        compiled = self._unchecked[int(handle)]
        module = self._module(compiled)
        if (switch := self._switch_of.get(int(handle))) is not None:  # a schema's: the mutant it was set to
            self._write_switch(module, *switch)
        return _check(_driver().cuModuleGetFunction(module, compiled.lowered_name.encode()), "cuModuleGetFunction")

    switches_schemata = True

    def set_switch(self, kernel: LoadedKernel, symbol: str, value: int) -> None:
        self._switch_of[int(kernel.handle)] = (symbol, value)
        self._write_switch(self._module_of[int(kernel.handle)], symbol, value)

    def _write_switch(self, module, symbol: str, value: int) -> None:
        driver = _driver()
        pointer, _ = _check(driver.cuModuleGetGlobal(module, symbol.encode()), f"cuModuleGetGlobal {symbol}")
        data = struct.pack("<i", value)
        # Synchronous, as the table's writes: the launches before it were of the mutant before.
        _check(driver.cuMemcpyHtoD(pointer, data, len(data)), "setting a schema's switch")

    def kernel_seconds(self, wait: bool = True) -> float | None:
        return self._timer.collect(wait) if self._timer is not None else None

    def launch(self, kernel: LoadedKernel, grid, block, args: list) -> None:
        handle = kernel.handle
        if self.check_addresses:
            if self._write_table(self._table_of[int(handle)]):
                self._checked_since_sync = True
            else:
                handle = self._unchecked_function(handle)
        status = self._start(handle, grid, block, args, timed=True)
        if self.check_addresses and int(status) == _OUT_OF_RESOURCES and handle is kernel.handle:
            # The checked code needs registers the block cannot have: the kernel runs unchecked, as it would alone.
            threads = block[0] * block[1] * block[2]
            self._tell("registers", f"a checked kernel's block of {threads} threads does not fit its registers: "
                                    f"such launches run unchecked")
            handle = self._unchecked_function(handle)
            status = self._start(handle, grid, block, args, timed=True)
        _check((status,), "cuLaunchKernel")

    def _start(self, handle, grid, block, args: list, timed: bool = False):
        """cuLaunchKernel of `handle` on torch's current stream; its status. `timed`: a substrate's kernel, whose time
        kernel_seconds adds up (not the harness's own comparison kernel)."""
        pointers = (ctypes.c_void_p * max(1, len(args)))(*[ctypes.addressof(a) for a in args])
        torch_stream = torch.cuda.current_stream(self._device)
        stream = _driver().CUstream(torch_stream.cuda_stream)
        # Timed, the events hold the launch call alone: on an idle device the time from the first event to the
        # kernel's start is that call's few microseconds, not the address check's table written before it.
        started = self._timer.start(torch_stream) if timed and self._timer is not None else None
        (status,) = _driver().cuLaunchKernel(handle, *grid, *block, 0, stream, ctypes.addressof(pointers), 0)
        if started is not None:
            self._timer.end(started, torch_stream)
        return status

    def close_figures(self, got: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float,
                      chunk: int) -> torch.Tensor | None:
        """compare_close's figures in one pass of a kernel of the harness's own (harness.backends.close_figures),
        never address-checked: it reads exactly the two tensors it is given."""
        return close_figures.one_pass(got, expected, atol, rtol, chunk, self._device, self._figures_launcher)

    def _figures_launcher(self, dtype: torch.dtype):
        """The start of close_figures' kernel for `dtype`, loaded on its first use (_load_figures); None where it
        cannot be. Called for every comparison: after the first, a lookup."""
        if not getattr(self._figures_bound, "done", False):
            # The gate's second references compare in a thread of their own, which the driver API may not find bound
            # to the context (torch's runtime calls bind it there; this makes sure), once per thread.
            _check(_driver().cuCtxSetCurrent(self._context), "cuCtxSetCurrent")
            self._figures_bound.done = True
        if dtype not in self._figures_launchers:
            with self._figures_lock:
                if dtype not in self._figures_launchers:
                    self._figures_launchers[dtype] = self._load_figures(dtype)
        return self._figures_launchers[dtype]

    def _load_figures(self, dtype: torch.dtype):
        """close_figures' kernel for `dtype`, loaded unchecked, as a launcher; None, said once on stderr, where it
        cannot be compiled or loaded (compare then takes torch's route: the same verdicts, more slowly). It is the
        harness's own kernel, kept in the user's compile cache (cache.default_cache_dir) whatever cache_dir the
        backend has: a fresh one per process (the naive mode's, for each mutant) would compile it in each."""
        source, name = close_figures.program(dtype)
        try:
            try:
                compiled, _ = cache.compile_cached(source, name, self.arch, None, f"{name}.cu")
            except OSError:  # no cache to write: compiled here, for this process
                compiled = nvrtc.compile_cuda(source, name, self.arch, f"{name}.cu")
            function = _check(_driver().cuModuleGetFunction(self._module(compiled), compiled.lowered_name.encode()),
                              "cuModuleGetFunction")
        except (nvrtc.CompileError, KernelFault) as error:
            print(f"comparisons: the one-pass kernel for {dtype} could not be loaded ({error}); outputs of that dtype "
                  f"are compared by torch's route", file=sys.stderr, flush=True)
            return None

        def launch(grid, block, args: list) -> None:
            _check((self._start(function, grid, block, args),), "cuLaunchKernel (comparing outputs)")

        return launch

    def memory_info(self) -> tuple[int, int]:
        free, total = torch.cuda.mem_get_info(self._device)
        return int(free), int(total)

    def peak_memory_bytes(self) -> int | None:
        # Reserved, not allocated: what the process took from the device, its allocator's cache included.
        return int(torch.cuda.max_memory_reserved(self._device))

    def end_job(self) -> bool:
        gc.collect()  # a job's tensors held in reference cycles (tracebacks, say) would keep their blocks
        try:
            self.synchronize()
            probe = torch.ones(1, device=self._device) + 1  # a kernel of torch's: a sticky fault fails it
            healthy = probe.item() == 2
        except Exception:
            return False
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(self._device)
        return healthy

    def synchronize(self) -> None:
        driver = _driver()
        _check(driver.cuCtxSynchronize(), "kernel run")
        if self.check_addresses and self._checked_since_sync:
            self._checked_since_sync = False
            head = bytearray(_STATE_HEAD_BYTES)
            _check(driver.cuMemcpyDtoH(head, self._check_state, len(head)), "reading the address check's state")
            self._raise_foreseen(bytes(head))

    def pending_fault(self) -> PendingFault | None:
        """Checked (a campaign's workers), the check's state, read after the launched work with the caller's signals:
        one wait for the device, not the synchronize's two. A fault of the device's own makes the caller's read fail,
        and synchronize() then raises it. Unchecked (the gate), None: synchronize() at once, as always."""
        if not self.check_addresses:
            return None
        if not self._checked_since_sync:  # the launch ran unchecked (registers, or a table too long)
            return PendingFault(self._no_signals, lambda values: None)
        self._checked_since_sync = False
        return PendingFault(self._state_head, lambda values: self._raise_foreseen(
            struct.pack(f"<{len(values)}q", *values)))

    def _raise_foreseen(self, head: bytes) -> None:
        """The KernelFault a checked kernel's state `head` records, if it records one (the state cleared)."""
        count, _pad, address, size_and_fault = struct.unpack("<IIQI4x", head)
        if count:
            _check(_driver().cuMemsetD8(self._check_state, 0, len(head)), "clearing the address check's state")
            raise KernelFault(f"kernel run: {address_check.describe_stop(count, address, size_and_fault)}",
                              poisons_context=False, foreseen=True)
