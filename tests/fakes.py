"""A fake backend for CPU-only tests of the check pipeline: real NVRTC compile, Python kernels.

`FakeBackend.load` compiles the CUDA source with the real NVRTC (so compile errors and the
kernel's parameter list are the ones a GPU run would see), then hands back a Python callable
in place of the loaded function. `launch` calls it with the ctypes argument objects the
pipeline built, whose pointers are addresses of CPU memory (the harness's guarded buffers), so
a Python kernel reads and writes exactly the bytes a CUDA kernel would.

`pad_const_b4` below is a faithful, vectorised port of the substrate's kernel. The others are
the planted faults of tests/candidates/candidate_broken_pad.py, each the faithful kernel with
one line changed, plus a fault that leaves the CUDA context usable (pad_launch_failure).
"""

from __future__ import annotations

import ctypes
import math

import torch

from harness.backends import Backend, KernelFault, LoadedKernel
from harness.compiler import signature
from harness.compiler.nvrtc import compile_cuda

ELEMENT_BYTES = 4  # pad_const_b4: unsigned int elements, unsigned int fill
ILLEGAL_ADDRESS = "kernel run: CUDA error 700 CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"


class FakeBackend(Backend):
    """A backend on torch's CPU device whose kernels are Python callables `impl(grid, block, args)`."""

    name = "fake"

    def __init__(self, kernels: dict):
        self.kernels = dict(kernels)
        self.loaded: list[LoadedKernel] = []
        self.launches: list[tuple] = []  # (kernel name, grid, block) of every launch, in order

    @property
    def device(self):
        return torch.device("cpu")

    def describe_device(self) -> str:
        return "fake CPU"

    def load(self, source: str, kernel_name: str, program_name: str, locate=None, compiled=None) -> LoadedKernel:
        compiled = compile_cuda(source, kernel_name, program_name=program_name, locate=locate)
        if kernel_name not in self.kernels:
            raise LookupError(f"FakeBackend has no Python implementation of {kernel_name!r} "
                              f"(it has {sorted(self.kernels)})")
        kernel = LoadedKernel(
            name=kernel_name,
            params=signature.kernel_params(compiled.ptx, compiled.lowered_name),
            handle=self.kernels[kernel_name],
            from_cache=False,
            options=compiled.options,
            compiler=f"NVRTC {compiled.compiler_version}",
            target=compiled.arch,
        )
        self.loaded.append(kernel)
        return kernel

    def launch(self, kernel: LoadedKernel, grid, block, args: list) -> None:
        self.launches.append((kernel.name, tuple(grid), tuple(block)))
        kernel.handle(tuple(grid), tuple(block), list(args))  # a KernelFault propagates, as the real one would

    def synchronize(self) -> None:
        pass


# ------------------------------------------------------------------ raw memory


def memory(address: int | None, count: int, dtype=torch.int32) -> torch.Tensor:
    """`count` elements of `dtype` at `address`, as a tensor sharing that memory (writes go through)."""
    if count == 0:
        return torch.empty(0, dtype=dtype)
    nbytes = count * torch.empty((), dtype=dtype).element_size()
    return torch.frombuffer((ctypes.c_uint8 * nbytes).from_address(address), dtype=dtype)


# ------------------------------------------------------------------ pad_const_b4


class PadCall:
    """One launch of pad_const_b4, decoded from its ctypes arguments the way the kernel sees them."""

    def __init__(self, grid, block, args):
        in_ptr, out_ptr, n_out, fill, g = args
        self.in_address = in_ptr.value
        self.out_address = out_ptr.value
        self.n_out = n_out.value
        fill_bits = fill.value & 0xFFFFFFFF
        self.fill = fill_bits - (1 << 32) if fill_bits >= 1 << 31 else fill_bits  # as an int32 bit pattern
        self.rank = g.rank
        self.in_shape = [int(v) for v in g.in_shape[:g.rank]]
        self.out_shape = [int(v) for v in g.out_shape[:g.rank]]
        self.left_pad = [int(v) for v in g.left_pad[:g.rank]]
        self.n_in = math.prod(self.in_shape)
        # Only blockIdx.x and threadIdx.x enter the index (threads along y and z repeat it).
        self.launched = grid[0] * block[0]

    def input(self) -> torch.Tensor:
        return memory(self.in_address, self.n_in)

    def output(self, count: int | None = None, offset: int = 0) -> torch.Tensor:
        """The output memory from element `offset` on (past n_out it is whatever lies after out)."""
        count = self.n_out if count is None else count
        if count == 0:  # an empty out may have no address (a null pointer)
            return memory(None, 0)
        return memory(self.out_address + offset * ELEMENT_BYTES, count)

    def compute(self):
        """What the kernel computes for every output element, flattened: (values, inside, src).

        The kernel decomposes each linear index o against out_shape; here each axis's coordinate
        comes from an arange broadcast along that axis, which gives the same numbers for all o
        at once: c_d = coordinate - left_pad[d], inside = every c_d in [0, in_shape[d]), and
        src = sum of c_d times the input stride of axis d.
        """
        if self.n_out == 0:  # no thread gets past the guard (and an axis may be 2**32 - 1 long)
            return (torch.empty(0, dtype=torch.int32), torch.empty(0, dtype=torch.bool),
                    torch.empty(0, dtype=torch.int64))
        src = torch.zeros((), dtype=torch.int64)
        inside = torch.ones((), dtype=torch.bool)
        in_stride = 1
        for d in range(self.rank - 1, -1, -1):
            along = [1] * self.rank
            along[d] = self.out_shape[d]
            c = (torch.arange(self.out_shape[d], dtype=torch.int64) - self.left_pad[d]).reshape(along)
            inside = inside & (c >= 0) & (c < self.in_shape[d])
            src = src + c * in_stride
            in_stride *= self.in_shape[d]
        inside = inside.expand(self.out_shape).reshape(-1)
        src = src.expand(self.out_shape).reshape(-1)
        values = torch.full((self.n_out,), self.fill, dtype=torch.int32)
        if bool(inside.any()):
            values[inside] = self.input()[src[inside]]
        return values, inside, src

    def threads(self) -> torch.Tensor:
        """The linear index o of every thread that gets past `if (o >= n_out) return;`."""
        return torch.arange(min(self.n_out, self.launched), dtype=torch.int64)


def pad_const_b4(grid, block, args) -> None:
    """Faithful: out[o] = inside ? in[src] : fill for every thread o < n_out."""
    call = PadCall(grid, block, args)
    o = call.threads()
    values, _inside, _src = call.compute()
    call.output()[o] = values[o]


def pad_wrong_value(grid, block, args) -> None:
    """Planted fault: bit 0 of every interior element flipped (`in[src] ^ 1u`)."""
    call = PadCall(grid, block, args)
    o = call.threads()
    values, inside, _src = call.compute()
    values[inside] ^= 1
    call.output()[o] = values[o]


def pad_unwritten(grid, block, args) -> None:
    """Planted fault: every 7th element is never written (`if (o % 7 == 3) return;`)."""
    call = PadCall(grid, block, args)
    o = call.threads()
    o = o[o % 7 != 3]
    values, _inside, _src = call.compute()
    call.output()[o] = values[o]


OVERRUN_ELEMENTS = 16


def pad_out_of_bounds(grid, block, args) -> None:
    """Planted fault: threads o < n_out + 16 write (`if (o >= n_out + 16) return;`): 16 elements past out.

    Those 64 bytes lie in the harness's guard band after out, so writing them harms nothing.
    For o >= n_out every coordinate wraps around, so thread o writes what thread o % n_out does.
    """
    call = PadCall(grid, block, args)
    values, _inside, _src = call.compute()
    o = call.threads()
    call.output()[o] = values[o]
    beyond = torch.arange(call.n_out, call.n_out + OVERRUN_ELEMENTS, dtype=torch.int64)
    call.output(OVERRUN_ELEMENTS, offset=call.n_out)[:] = values[beyond % call.n_out]


def pad_changes_input(grid, block, args) -> None:
    """Planted fault: every interior thread inverts the input element it read (`in[src] = ~in[src]`)."""
    call = PadCall(grid, block, args)
    o = call.threads()
    values, inside, src = call.compute()
    call.output()[o] = values[o]
    x = call.input()
    read = src[o][inside[o]]
    x[read] = ~x[read]


def pad_illegal_address(grid, block, args) -> None:
    """Planted fault: the kernel faults, as `out[o + (1LL << 40)] = ...` does on a GPU."""
    raise KernelFault(ILLEGAL_ADDRESS, poisons_context=True)


def pad_launch_failure(grid, block, args) -> None:
    """A fault that leaves the context usable (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES is not sticky)."""
    raise KernelFault("cuLaunchKernel: CUDA error 701 CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: too many resources "
                      "requested for launch", poisons_context=False)
