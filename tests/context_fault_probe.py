"""Does a kernel fault in a second CUDA context of a process spare the process's first context? (GPU only.)

`python tests/context_fault_probe.py` (tests/gpu_session.sh CONTEXT_FAULT=1). A campaign worker's fault costs a new
process and its CUDA context, which the driver makes one at a time (MEASUREMENTS.md). Were a fault confined to a
context, a worker could keep its trials in its primary context and run each risky mutant in a disposable one. It
prints: whether a kernel in a second context can write the first's memory, what a fault there does to the first,
how long a context of its own takes to make beside the primary one, and whether the process can go on after the
fault in a context made afresh (the faulted ones destroyed, the primary reset): if it can, a fault costs that
context, not a process (a new one's imports, its context and its trials).
"""

import ctypes
import statistics
import time

from cuda.bindings import driver

# One store of `value` to `address`: a valid pointer, or 0x10, an address no allocation holds.
PTX = b"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry store(.param .u64 address, .param .u32 value) {
  .reg .b64 %rd<3>; .reg .b32 %r<2>;
  ld.param.u64 %rd1, [address]; ld.param.u32 %r1, [value]; cvta.to.global.u64 %rd2, %rd1;
  st.global.u32 [%rd2], %r1; ret;
}
"""


def status(result) -> str:
    code = result[0] if isinstance(result, tuple) else result
    return driver.cuGetErrorName(code)[1].decode() if int(code) else "CUDA_SUCCESS"


def value(result):
    """The value a cuda.bindings call returns beside its status (None for a call that returns only a status)."""
    if int(result[0]):
        raise RuntimeError(status(result))
    return result[1] if len(result) > 1 else None


def store(function, address: int, number: int) -> str:
    pointer, word = ctypes.c_uint64(address), ctypes.c_uint32(number)
    args = (ctypes.c_void_p * 2)(ctypes.addressof(pointer), ctypes.addressof(word))
    launched = driver.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, None, ctypes.addressof(args), 0)
    return status(launched) if int(launched[0]) else status(driver.cuCtxSynchronize())


def kernel():
    return value(driver.cuModuleGetFunction(value(driver.cuModuleLoadData(PTX)), b"store"))


def new_context(device):
    try:
        return value(driver.cuCtxCreate(None, 0, device))  # CUDA 13's form: (params, flags, device)
    except TypeError:
        return value(driver.cuCtxCreate(0, device))


def main() -> None:
    value(driver.cuInit(0))
    device = value(driver.cuDeviceGet(0))
    primary = value(driver.cuDevicePrimaryCtxRetain(device))
    value(driver.cuCtxSetCurrent(primary))
    first, buffer = kernel(), value(driver.cuMemAlloc(1 << 20))
    print(f"primary context: a store {store(first, int(buffer), 1)}")
    made = []
    for _ in range(5):
        began = time.perf_counter()
        context = new_context(device)
        made.append(time.perf_counter() - began)
        value(driver.cuCtxDestroy(context))
    value(driver.cuCtxSetCurrent(primary))
    print(f"a second context made in {statistics.median(made) * 1e3:.0f} ms (median of 5) beside the primary")
    faulted = new_context(device)
    second = kernel()
    print(f"second context: a store into the primary's buffer {store(second, int(buffer), 2)}")
    print(f"second context: a store to 0x10 {store(second, 0x10, 3)}")
    value(driver.cuCtxSetCurrent(primary))
    print(f"primary context after the second's fault: a store {store(first, int(buffer), 4)}")
    began = time.perf_counter()
    destroyed = status(driver.cuCtxDestroy(faulted))
    reset = status(driver.cuDevicePrimaryCtxReset(device))
    print(f"after the fault: the second context destroyed {destroyed}, the primary reset {reset} "
          f"({(time.perf_counter() - began) * 1e3:.0f} ms)")
    began = time.perf_counter()
    try:
        fresh = value(driver.cuDevicePrimaryCtxRetain(device))
        value(driver.cuCtxSetCurrent(fresh))
        again = kernel()
        print(f"a primary context made afresh in {(time.perf_counter() - began) * 1e3:.0f} ms: a store "
              f"{store(again, int(value(driver.cuMemAlloc(1 << 20))), 5)}")
    except RuntimeError as error:
        print(f"a primary context made afresh: {error}")
    began = time.perf_counter()
    try:
        third = new_context(device)
        made_in = (time.perf_counter() - began) * 1e3
        print(f"a third context made in {made_in:.0f} ms after the fault: a store "
              f"{store(kernel(), int(value(driver.cuMemAlloc(1 << 20))), 6)}")
        value(driver.cuCtxDestroy(third))
    except RuntimeError as error:
        print(f"a third context after the fault: {error}")


if __name__ == "__main__":
    main()
