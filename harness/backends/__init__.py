"""Backend selection. Each backend lives in its own module and is imported only when chosen."""

from __future__ import annotations

from harness.backends.base import Backend, BackendUnavailable, KernelFault, LoadedKernel

BACKEND_NAMES = ("cuda", "cpu")


def gpu_visible() -> bool:
    """True if a CUDA driver answers and sees at least one device. Creates no CUDA context."""
    try:
        from cuda.bindings import driver

        (status,) = driver.cuInit(0)
        if status != driver.CUresult.CUDA_SUCCESS:
            return False
        status, count = driver.cuDeviceGetCount()
        return status == driver.CUresult.CUDA_SUCCESS and count > 0
    except Exception:  # no libcuda on this machine: the loader's error type varies by version
        return False


def gpu_count() -> int:
    """How many devices the CUDA driver sees (CUDA_VISIBLE_DEVICES applied). Creates no CUDA context."""
    try:
        from cuda.bindings import driver

        (status,) = driver.cuInit(0)
        if status != driver.CUresult.CUDA_SUCCESS:
            return 0
        status, count = driver.cuDeviceGetCount()
        return count if status == driver.CUresult.CUDA_SUCCESS else 0
    except Exception:  # no libcuda on this machine
        return 0


def gpu_arch() -> str | None:
    """NVRTC's architecture for the first device the driver sees ("sm_90"), or None. Creates no CUDA context."""
    try:
        from cuda.bindings import driver

        (status,) = driver.cuInit(0)
        if status != driver.CUresult.CUDA_SUCCESS:
            return None
        attribute = driver.CUdevice_attribute
        status, major = driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0)
        status_minor, minor = driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0)
        if status != driver.CUresult.CUDA_SUCCESS or status_minor != driver.CUresult.CUDA_SUCCESS:
            return None
        return f"sm_{major}{minor}"
    except Exception:  # no libcuda on this machine
        return None


def resolve_backend_name(requested: str) -> str:
    if requested == "auto":
        return "cuda" if gpu_visible() else "cpu"
    if requested not in BACKEND_NAMES:
        raise ValueError(f"unknown backend {requested!r}; choose auto, {', '.join(BACKEND_NAMES)}")
    return requested


def create_backend(name: str, **settings) -> Backend:
    if name == "cuda":
        from harness.backends.cuda import CudaBackend

        return CudaBackend(**settings)
    if name == "cpu":
        from harness.backends.cpu import CpuBackend

        return CpuBackend(**settings)
    raise ValueError(f"unknown backend {name!r}")


__all__ = ["Backend", "BackendUnavailable", "KernelFault", "LoadedKernel", "BACKEND_NAMES", "gpu_visible", "gpu_count",
           "resolve_backend_name", "create_backend"]


def cuda_activity() -> str | None:
    """What CUDA state this process holds (a context, torch's CUDA runtime), or None.

    This is the proof that importing a candidate did no CUDA work: it is asked before the
    harness itself touches CUDA. Calling cuInit creates no context, so asking changes nothing.
    """
    import torch

    if torch.cuda.is_initialized():
        return "torch.cuda was initialized"
    try:
        from cuda.bindings import driver

        (status,) = driver.cuInit(0)
        if status != driver.CUresult.CUDA_SUCCESS:
            return None
        status, count = driver.cuDeviceGetCount()
        for index in range(count if status == driver.CUresult.CUDA_SUCCESS else 0):
            _, device = driver.cuDeviceGet(index)
            status, _flags, active = driver.cuDevicePrimaryCtxGetState(device)
            if status == driver.CUresult.CUDA_SUCCESS and active:
                return f"a CUDA context is active on device {index}"
        status, context = driver.cuCtxGetCurrent()
        if status == driver.CUresult.CUDA_SUCCESS and int(context) != 0:
            return "a CUDA context was made current"
    except Exception:  # no libcuda here: nothing but torch could have touched CUDA
        return None
    return None
