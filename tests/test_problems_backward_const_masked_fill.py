"""The official pad_backward_const and masked_fill references, and their launches' refusals, on the CPU.

pad_backward_const is checked against autograd's gradient of F.pad (constant mode); masked_fill
against Tensor.masked_fill where its value survives the trip through a Scalar, and bit for bit
where it would not (a NaN payload, -0.0). The launches must refuse, with a clear message, what
the kernels do not handle.
"""

import re

import pytest
import torch
import torch.nn.functional as F

from harness.problems import PROBLEMS_DIR, load_problem
from tests.conftest import registered_entries

PAD_BACKWARD = sorted(PROBLEMS_DIR.glob("pad_backward_const_b*.py"))
MASKED_FILL = sorted(PROBLEMS_DIR.glob("masked_fill_b*.py"))
ENTRIES = {entry.name: entry for entry in registered_entries()}
BIT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _model(path_or_name):
    name = path_or_name.name if hasattr(path_or_name, "name") else path_or_name
    return load_problem(name).build_model("cpu")


def _dtype_of(path):
    return load_problem(path.name).get_inputs()[0].dtype


def _from_bits(bits, dtype):
    width = torch.empty((), dtype=dtype).element_size()
    if width > 1 and bits >> (8 * width - 1):
        bits -= 1 << (8 * width)
    return torch.tensor(bits, dtype=BIT_VIEW[width]).view(dtype)


# ---------------------------------------------------------------------------- pad_backward_const


def test_there_is_one_pad_backward_problem_per_width():
    assert [p.name for p in PAD_BACKWARD] == [f"pad_backward_const_b{w}.py" for w in (1, 2, 4, 8)]


@pytest.mark.parametrize("path", PAD_BACKWARD, ids=lambda p: p.stem)
@pytest.mark.parametrize("rank", range(1, 6))
def test_official_pad_backward_is_the_autograd_gradient_of_constant_pad(path, rank):
    generator = torch.Generator().manual_seed(100 + rank)
    shape = [int(v) for v in torch.randint(1, 6, (rank,), generator=generator)]
    rows = [[int(v) for v in torch.randint(0, 4, (2,), generator=generator)] for _ in range(rank)]
    rows[rank // 2] = [0, 0]  # an axis without pads
    flat = [p for left, right in reversed(rows) for p in (left, right)]
    x = torch.randn(shape, dtype=torch.float64, generator=generator, requires_grad=True)
    padded = F.pad(x, flat, mode="constant", value=3.0)
    # Integers below 256: exact in every dtype of every width, uint8 included.
    grad_out = torch.randint(0, 256, padded.shape, generator=generator).to(torch.float64)
    padded.backward(grad_out)
    dtype = _dtype_of(path)
    got = _model(path)(grad_out.to(dtype), torch.tensor(rows, dtype=torch.int64).reshape(rank, 2))
    assert got.shape == x.shape and got.is_contiguous()
    assert torch.equal(got, x.grad.to(dtype))


def test_official_pad_backward_keeps_every_bit_pattern():
    model = _model("pad_backward_const_b4.py")
    bits = torch.tensor([0x7F800001, 0x7FC00123, -0x80000000, 0x00000001, -1], dtype=torch.int32)
    grad_out = torch.cat([torch.zeros(2, dtype=torch.int32), bits, torch.zeros(1, dtype=torch.int32)])
    got = model(grad_out.view(torch.float32), torch.tensor([[2, 1]]))
    assert torch.equal(got.view(torch.int32), bits)


def test_official_pad_backward_with_no_pads_is_a_copy_and_a_full_pad_is_empty():
    model = _model("pad_backward_const_b8.py")
    grad_out = torch.arange(24, dtype=torch.float64).reshape(2, 3, 4)
    assert torch.equal(model(grad_out, torch.zeros(3, 2, dtype=torch.int64)), grad_out)
    assert model(grad_out, torch.tensor([[0, 0], [1, 2], [0, 0]])).shape == (2, 0, 4)


# ---------------------------------------------------------------------------- masked_fill


def test_there_is_one_masked_fill_problem_per_width():
    assert [p.name for p in MASKED_FILL] == [f"masked_fill_b{w}.py" for w in (1, 2, 4, 8)]


WIDTH_DTYPES = {1: (torch.uint8, torch.int8), 2: (torch.float16, torch.bfloat16, torch.int16),
                4: (torch.float32, torch.int32), 8: (torch.float64, torch.int64)}


@pytest.mark.parametrize("width,dtype", [(w, d) for w, ds in WIDTH_DTYPES.items() for d in ds], ids=str)
@pytest.mark.parametrize("shape", [(), (7,), (3, 5, 2), (2, 1, 3, 1, 2, 1, 2, 3)], ids=str)
def test_official_masked_fill_matches_tensor_masked_fill_for_plain_values(width, dtype, shape):
    model = _model(f"masked_fill_b{width}.py")
    generator = torch.Generator().manual_seed(width)
    x = (torch.rand(shape, generator=generator) * 100).to(dtype)
    mask = torch.rand(shape, generator=generator) < 0.5
    value = torch.tensor(42, dtype=dtype)
    got = model(x, mask, value)
    assert got.dtype == dtype and got.shape == x.shape
    assert torch.equal(got, x.masked_fill(mask, value))


@pytest.mark.parametrize("dtype,bits", [
    (torch.float16, 0x7C01), (torch.float16, 0x8000),
    (torch.bfloat16, 0x7F81), (torch.bfloat16, 0x8000),
    (torch.float32, 0x7F800001), (torch.float32, 0x7FC00123), (torch.float32, 0x80000000),
    (torch.float64, 0x7FF0000000000001), (torch.float64, 0x8000000000000000),
], ids=lambda v: hex(v) if isinstance(v, int) else str(v))
def test_official_masked_fill_keeps_the_fill_bits(dtype, bits):
    # A signalling NaN with a payload, a quiet one, and -0.0: masked_fill would quiet the first.
    width = torch.empty((), dtype=dtype).element_size()
    model = _model(f"masked_fill_b{width}.py")
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=dtype)
    mask = torch.tensor([True, False, True, False])
    got = model(x, mask, _from_bits(bits, dtype)).view(BIT_VIEW[width])
    fill = _from_bits(bits, dtype).view(BIT_VIEW[width])
    assert torch.equal(got[mask], fill.expand(2))
    assert torch.equal(got[~mask], x.view(BIT_VIEW[width])[~mask])


# ---------------------------------------------------------------------------- launch refusals


def test_masked_fill_launch_refuses_a_mask_that_is_not_bool():
    launch = ENTRIES["masked_fill_b4"].launch
    x = torch.zeros(3, 4)
    with pytest.raises(ValueError, match=r"^masked_fill_b4: mask must be torch\.bool, got torch\.uint8$"):
        launch([x, torch.ones(3, 4, dtype=torch.uint8), torch.tensor(1.0)], torch)


def test_masked_fill_launch_refuses_a_mask_of_another_shape():
    launch = ENTRIES["masked_fill_b2"].launch
    x = torch.zeros(3, 4, dtype=torch.float16)
    message = ("masked_fill_b2: mask has shape (3, 1) but x has shape (3, 4); "
               "the mask must have x's shape (no broadcasting)")
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        launch([x, torch.ones(3, 1, dtype=torch.bool), torch.tensor(1.0, dtype=torch.float16)], torch)


def test_pad_backward_launch_refuses_a_pad_larger_than_grad_out_allows():
    launch = ENTRIES["pad_backward_const_b8"].launch
    grad_out = torch.zeros(4, 5, dtype=torch.float64)
    message = ("pad_backward_const_b8: axis 1 has pad (3, 3) but grad_out has only 5 elements along it; "
               "left + right must be at most 5")
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        launch([grad_out, torch.tensor([[1, 1], [3, 3]])], torch)


def test_pad_backward_launch_takes_a_pad_that_uses_up_the_whole_axis():
    launch = ENTRIES["pad_backward_const_b1"].launch
    grad_in, grid, block, _args = launch([torch.zeros(4, 5, dtype=torch.uint8), torch.tensor([[1, 1], [2, 3]])], torch)
    assert grad_in.shape == (2, 0) and grid == (1, 1, 1) and block == (256, 1, 1)
