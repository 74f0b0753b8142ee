"""The CUDA backend: NVRTC cubin loaded and launched through the driver API on torch's stream.

The driver calls go to the device's primary context, the one torch uses, so kernels and torch
operations order correctly on torch's current stream.
"""

from __future__ import annotations

import ctypes
import gc
from pathlib import Path

import torch

from harness import cache, signature
from harness.backends.base import Backend, BackendUnavailable, KernelFault, LoadedKernel

# Errors after which the CUDA context is unusable until the process ends (CUDA 13 headers).
# Errors after which the context is unusable (CUDA's "persistent" errors): illegal address, launch
# timeout, assert, hardware stack error, ECC, illegal instruction, misaligned address, invalid
# address space, invalid PC, launch failed.
_STICKY_ERRORS = {700, 702, 710, 713, 714, 715, 716, 717, 718, 719}


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


class CudaBackend(Backend):
    name = "cuda"

    def __init__(self, device_index: int = 0, cache_dir: Path | None = None):
        if not torch.cuda.is_available():
            raise BackendUnavailable("the cuda backend needs a visible GPU, and torch sees none")
        driver = _driver()
        self._device = torch.device("cuda", device_index)
        torch.cuda.init()
        torch.empty(1, device=self._device)  # makes torch create and bind the primary context
        _check(driver.cuInit(0), "cuInit")
        cu_device = _check(driver.cuDeviceGet(device_index), "cuDeviceGet")
        context = _check(driver.cuDevicePrimaryCtxRetain(cu_device), "cuDevicePrimaryCtxRetain")
        _check(driver.cuCtxSetCurrent(context), "cuCtxSetCurrent")
        major, minor = torch.cuda.get_device_capability(self._device)
        self.arch = f"sm_{major}{minor}"
        self.cache_dir = cache_dir
        self._modules = {}  # cubin -> module; loaded modules stay alive as long as the backend

    @property
    def device(self):
        return self._device

    @property
    def nvrtc_arch(self) -> str:
        return self.arch

    def describe_device(self) -> str:
        props = torch.cuda.get_device_properties(self._device)
        return f"{props.name} ({self.arch}, {props.total_memory // 2**30} GiB)"

    def load(self, source: str, kernel_name: str, program_name: str, locate=None, compiled=None) -> LoadedKernel:
        driver = _driver()
        from_cache = compiled is not None
        if compiled is None:
            compiled, from_cache = cache.compile_cached(source, kernel_name, self.nvrtc_arch, self.cache_dir,
                                                        program_name, locate)
        # A batch's kernels share one cubin: it is loaded once, and each kernel is looked up in it.
        module = self._modules.get(compiled.cubin)
        if module is None:
            module = _check(driver.cuModuleLoadData(compiled.cubin), "cuModuleLoadData")
            self._modules[compiled.cubin] = module
        function = _check(driver.cuModuleGetFunction(module, compiled.lowered_name.encode()), "cuModuleGetFunction")
        return LoadedKernel(
            name=kernel_name,
            params=signature.kernel_params(compiled.ptx, compiled.lowered_name),
            shared_memory=signature.uses_shared_memory(compiled.ptx),
            handle=function,
            from_cache=from_cache,
            options=compiled.options,
            compiler=f"NVRTC {compiled.compiler_version}",
            target=compiled.arch,
        )

    def launch(self, kernel: LoadedKernel, grid, block, args: list) -> None:
        driver = _driver()
        pointers = (ctypes.c_void_p * max(1, len(args)))(*[ctypes.addressof(a) for a in args])
        stream = driver.CUstream(torch.cuda.current_stream(self._device).cuda_stream)
        _check(
            driver.cuLaunchKernel(kernel.handle, *grid, *block, 0, stream, ctypes.addressof(pointers), 0),
            "cuLaunchKernel",
        )

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
