"""The address check on the GPU: a fault it foresees is reported as the GPU's and the process goes on; accesses
that would not fault run as they would unchecked."""

import ctypes

import pytest
import torch

from harness.backends import KernelFault, create_backend
from harness.compiler import signature
from tests.conftest import registered_entries
from tests.test_fidelity_gpu import assert_same_bytes

pytestmark = pytest.mark.gpu

STORE_AT = r"""
extern "C" __global__ void store_at(float* out, long long n, long long offset)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i + offset] = (float)i;
}
"""

READ_AT_BYTE = r"""
extern "C" __global__ void read_at_byte(const unsigned char* in, float* out, long long byte)
{
    out[0] = *(const float*)(in + byte);
}
"""


@pytest.fixture(scope="module")
def backends(tmp_path_factory):
    cache_dir = tmp_path_factory.mktemp("address-check-cache")
    return (create_backend("cuda", cache_dir=cache_dir),
            create_backend("cuda", cache_dir=cache_dir, check_addresses=True))


def _store_at(backend, out, offset):
    kernel = backend.load(STORE_AT, "store_at", "store_at.cu")
    args = [(ctypes.c_void_p, out.data_ptr()), (ctypes.c_longlong, out.numel()),
            (ctypes.c_longlong, offset)]
    backend.launch(kernel, (1, 1, 1), (out.numel(), 1, 1), signature.to_ctypes(args))
    backend.synchronize()


def test_a_store_far_past_every_allocation_is_the_gpus_fault_foreseen_and_the_process_goes_on(backends):
    _, checked = backends
    out = torch.zeros(64, device="cuda")
    with pytest.raises(KernelFault) as caught:
        _store_at(checked, out, 1 << 40)
    text = str(caught.value)
    assert text.startswith("kernel run: CUDA error 700 CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was "
                           "encountered (foreseen by the address check: a 4-byte access at 0x"), text
    assert text.endswith(", outside every allocation of the process, and 63 more; not made)"), text
    assert not caught.value.poisons_context
    assert torch.count_nonzero(out).item() == 0  # no thread stored anything
    _store_at(checked, out, 0)  # the same process, the same context: the next kernel runs
    assert torch.equal(out, torch.arange(64, dtype=torch.float32, device="cuda"))


def test_a_store_just_past_its_buffer_into_mapped_memory_runs_as_it_would_unchecked(backends):
    _, checked = backends
    block = torch.zeros(128, device="cuda")  # one allocation: the store past `out` lands in its second half
    out = block[:64]
    _store_at(checked, out, 64)
    assert torch.equal(block[64:], torch.arange(64, dtype=torch.float32, device="cuda"))


def test_a_misaligned_read_is_foreseen_as_the_misaligned_address_fault(backends):
    _, checked = backends
    data = torch.zeros(16, dtype=torch.uint8, device="cuda")
    out = torch.zeros(1, device="cuda")
    kernel = checked.load(READ_AT_BYTE, "read_at_byte", "read_at_byte.cu")
    args = [(ctypes.c_void_p, data.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, 1)]
    checked.launch(kernel, (1, 1, 1), (1, 1, 1), signature.to_ctypes(args))
    with pytest.raises(KernelFault, match=r"CUDA error 716 CUDA_ERROR_MISALIGNED_ADDRESS: misaligned address "
                                          r"\(foreseen by the address check: a 4-byte access at 0x[0-9a-f]+, not "
                                          r"aligned to its size; not made\)"):
        checked.synchronize()


@pytest.mark.parametrize("entry", registered_entries(), ids=lambda e: e.name)
def test_every_substrate_checked_gives_the_bytes_it_gives_unchecked(backends, entry):
    unchecked, checked = backends
    assert_same_bytes(entry, unchecked, checked, "checked against unchecked")


LOAD_THROUGH = r"""
extern "C" __global__ void load_through(const float* in, float* out, int keep_low_half_only)
{
    unsigned long long address = (unsigned long long)in;
    if (keep_low_half_only) address = (unsigned int)address;  // a pointer narrowed to 32 bits
    else address -= 1ull << 62;  // far below every window
    out[0] = *(const float*)address;  // a generic load: no state space known to the compiler
}
"""


@pytest.mark.parametrize("narrowed", [1, 0], ids=["narrowed_to_32_bits", "far_below"])
def test_a_generic_load_from_an_address_in_no_window_is_foreseen(backends, narrowed):
    _, checked = backends
    data = torch.ones(4, device="cuda")
    out = torch.zeros(1, device="cuda")
    kernel = checked.load(LOAD_THROUGH, "load_through", "load_through.cu")
    args = [(ctypes.c_void_p, data.data_ptr()), (ctypes.c_void_p, out.data_ptr()), (ctypes.c_int, narrowed)]
    checked.launch(kernel, (1, 1, 1), (1, 1, 1), signature.to_ctypes(args))
    with pytest.raises(KernelFault, match=r"CUDA_ERROR_ILLEGAL_ADDRESS: .* \(foreseen by the address check: a 4-byte "
                                          r"access at 0x[0-9a-f]+, outside every allocation of the process; not made"):
        checked.synchronize()
    # The process goes on: torch reads the output (what the kernel stored from the load's register the
    # check left unwritten) and would raise had the context been lost.
    assert isinstance(out.item(), float)


def test_a_constant_array_read_through_a_generic_pointer_runs_as_it_would_unchecked(backends):
    # The generic address `cvta.const` gives is the one the module's symbol has: in the table, not a fault.
    from tests.test_address_check import WEIGH_CONSTANT

    x = torch.arange(32, dtype=torch.float32, device="cuda")
    outs = []
    for backend in backends:
        out = torch.zeros(32, device="cuda")
        kernel = backend.load(WEIGH_CONSTANT, "weigh", "weigh.cu")
        args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()), (ctypes.c_int, 1)]
        backend.launch(kernel, (1, 1, 1), (32, 1, 1), signature.to_ctypes(args))
        backend.synchronize()
        outs.append(out)
    expected = torch.tensor([1.0, 2.0, 3.0, 4.0] * 8, device="cuda") * x
    assert torch.equal(outs[0], expected) and torch.equal(outs[1], expected)
