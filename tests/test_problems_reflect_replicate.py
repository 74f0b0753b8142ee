"""The reflect and replicate pad references in problems/, and the launch-side refusals of their candidates.

The official references are checked bit for bit against torch's F.pad on every case F.pad
covers (the last 1 to 3 axes of a 2-D to 5-D input, every dtype it pads in these modes), and
against numpy.pad at the ranks F.pad cannot do (1 and 6 to 8). Reflect's precondition (every
pad at most dim - 1) is enforced by launch, which must name the axis, the side, the pad and the
dim; replicate's launch refuses pads on an empty axis. Everything runs on the CPU.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from harness.candidates import SUBSTRATES_DIR, import_candidate, make_entry, register_candidate
from harness.problems import load_problem

MODES = {"reflect": "reflect", "replicate": "edge"}  # problem family -> numpy.pad mode
WIDTHS = (1, 2, 4, 8)
# Every dtype F.pad pads in reflect and replicate mode, by element width (not bool, nor the
# unsigned 16-, 32- and 64-bit types).
DTYPES = {
    1: (torch.uint8, torch.int8),
    2: (torch.float16, torch.bfloat16, torch.int16),
    4: (torch.float32, torch.int32),
    8: (torch.float64, torch.int64, torch.complex64),
}
BIT_DTYPES = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
# (input rank, padded trailing axes): the cases F.pad implements for these modes.
F_PAD_CASES = ((2, 1), (3, 1), (3, 2), (4, 2), (4, 3), (5, 3))


def _model(mode, width):
    return load_problem(f"pad_{mode}_b{width}.py").build_model("cpu")


def _random_bits(shape, dtype, generator):
    width = torch.empty((), dtype=dtype).element_size()
    raw = torch.randint(0, 256, (*shape, width), dtype=torch.uint8, generator=generator)
    return raw.view(dtype).reshape(shape)


def _bits(t):
    return t.contiguous().view(BIT_DTYPES[t.element_size()])


def _draw_pads(mode, shape, generator, widest):
    """Random (left, right) rows; `widest`: reflect at its limit (dim - 1), replicate at 2 and 3 times the dim."""
    if widest:
        return [[n - 1, n - 1] if mode == "reflect" else [2 * n, 3 * n] for n in shape]
    top = {"reflect": lambda n: n - 1, "replicate": lambda n: n + 2}[mode]
    return [[int(v) for v in torch.randint(0, top(n) + 1, (2,), generator=generator)] for n in shape]


def _small_enough(shape, rows):
    numel = 1
    for n, (left, right) in zip(shape, rows):
        numel *= n + left + right
    return numel <= 200_000


def _assert_same_bits(got, expected):
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert torch.equal(_bits(got), _bits(expected))


@pytest.mark.parametrize("widest", [False, True], ids=["random_pads", "widest_pads"])
@pytest.mark.parametrize("rank,padded", F_PAD_CASES, ids=[f"{r}d_last{k}" for r, k in F_PAD_CASES])
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("mode", MODES)
def test_official_matches_f_pad_wherever_f_pad_applies(mode, width, rank, padded, widest):
    model = _model(mode, width)
    generator = torch.Generator().manual_seed(100 * rank + 10 * padded + width)
    for dtype in DTYPES[width]:
        high = 4 if widest and mode == "replicate" else 6  # extents 1..3 under pads of 2 and 3 times them
        shape = [int(v) for v in torch.randint(1, high, (rank,), generator=generator)]
        rows = [[0, 0]] * (rank - padded) + _draw_pads(mode, shape[rank - padded:], generator, widest)
        assert _small_enough(shape, rows)
        x = _random_bits(shape, dtype, generator)
        flat = [p for left, right in reversed(rows[rank - padded:]) for p in (left, right)]
        expected = F.pad(x, flat, mode=mode)
        got = model(x, torch.tensor(rows, dtype=torch.int64))
        _assert_same_bits(got, expected)


@pytest.mark.parametrize("widest", [False, True], ids=["random_pads", "widest_pads"])
@pytest.mark.parametrize("rank", [1, 6, 7, 8])
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("mode", MODES)
def test_official_matches_numpy_pad_where_f_pad_does_not_reach(mode, width, rank, widest):
    model = _model(mode, width)
    generator = torch.Generator().manual_seed(1000 + 10 * rank + width)
    for dtype in DTYPES[width]:
        while True:  # redrawn until the output is small: at rank 8 it grows as the 8th power of each axis
            shape = [int(v) for v in torch.randint(1, 41 if rank == 1 else 4, (rank,), generator=generator)]
            rows = _draw_pads(mode, shape, generator, widest)
            if rank > 1 and mode == "replicate":  # wide pads on the first and last axes only
                rows = [row if axis in (0, rank - 1) else [int(row[0] > 0), int(row[1] > 0)]
                        for axis, row in enumerate(rows)]
            if _small_enough(shape, rows):
                break
        x = _random_bits(shape, dtype, generator)
        padded = np.pad(_bits(x).numpy(), rows, mode=MODES[mode])
        expected = torch.from_numpy(padded).view(dtype)
        got = model(x, torch.tensor(rows, dtype=torch.int64))
        _assert_same_bits(got, expected)


def test_official_reflect_keeps_nan_payloads_and_negative_zero():
    model = _model("reflect", 4)
    patterns = [0x7F800001, 0x7FC12345, -0x80000000, -0x003EDCBB]  # signalling NaN, quiet NaN, -0.0, negative NaN
    x = torch.tensor(patterns, dtype=torch.int32).view(torch.float32)
    out = model(x, torch.tensor([[3, 3]]))
    assert out.view(torch.int32).tolist() == patterns[:0:-1] + patterns + patterns[-2::-1]


def test_official_references_refuse_what_their_kernels_refuse():
    with pytest.raises(ValueError, match=r"axis 1: reflect pads \(0, 4\) exceed dim - 1 = 3"):
        _model("reflect", 4)(torch.zeros(2, 4), torch.tensor([[1, 1], [0, 4]]))
    with pytest.raises(ValueError, match=r"axis 0: replicate pads \(1, 0\) on an empty axis"):
        _model("replicate", 4)(torch.zeros(0, 4), torch.tensor([[1, 0], [0, 0]]))


# ---------------------------------------------------------------------------- launch refusals


def _entries(mode):
    path = SUBSTRATES_DIR / f"candidate_pad_{mode}.py"
    entries = {}
    for name, raw in register_candidate(import_candidate(path), path).items():
        entry, problems = make_entry(name, raw, path)
        assert not problems, problems
        entries[name] = entry
    assert sorted(entries) == [f"pad_{mode}_b{w}" for w in WIDTHS]
    return entries


REFLECT = _entries("reflect")
REPLICATE = _entries("replicate")
SHAPE = (3, 4, 5)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("axis", range(len(SHAPE)))
@pytest.mark.parametrize("width", WIDTHS)
def test_reflect_launch_refuses_a_pad_past_dim_minus_one_naming_axis_side_pad_and_dim(width, axis, side):
    name = f"pad_reflect_b{width}"
    x = torch.zeros(SHAPE, dtype=DTYPES[width][0])
    for pad in (SHAPE[axis], 3 * SHAPE[axis] + 1):
        rows = [[n - 1, n - 1] for n in SHAPE]  # every other pad at its limit, which is allowed
        rows[axis][0 if side == "left" else 1] = pad
        with pytest.raises(ValueError) as caught:
            REFLECT[name].launch([x, torch.tensor(rows, dtype=torch.int64)], torch)
        assert str(caught.value) == (f"{name}: axis {axis} has {side} pad {pad} but dim {SHAPE[axis]}; "
                                     f"reflect needs every pad <= dim - 1 = {SHAPE[axis] - 1}")


@pytest.mark.parametrize("width", WIDTHS)
def test_reflect_launch_takes_pads_at_the_limit_and_zero_pads_on_empty_or_single_axes(width):
    launch = REFLECT[f"pad_reflect_b{width}"].launch
    dtype = DTYPES[width][0]
    out, _grid, _block, _args = launch([torch.zeros(SHAPE, dtype=dtype), torch.tensor([[n - 1, n - 1] for n in SHAPE])],
                                       torch)
    assert tuple(out.shape) == tuple(3 * n - 2 for n in SHAPE)
    out, _grid, _block, _args = launch([torch.zeros(2, 0, 1, dtype=dtype), torch.tensor([[1, 1], [0, 0], [0, 0]])],
                                       torch)
    assert tuple(out.shape) == (4, 0, 1)
    with pytest.raises(ValueError, match=r"axis 2 has right pad 1 but dim 1; reflect needs every pad <= dim - 1 = 0$"):
        launch([torch.zeros(2, 0, 1, dtype=dtype), torch.tensor([[1, 1], [0, 0], [0, 1]])], torch)


@pytest.mark.parametrize("entry", [*REFLECT.values(), *REPLICATE.values()], ids=lambda e: e.name)
def test_launch_refuses_negative_pads_bad_ranks_and_the_wrong_width(entry):
    width = int(entry.name[-1])
    dtype = DTYPES[width][0]
    with pytest.raises(ValueError, match=rf"^{entry.name}: axis 1 has pad \(0, -1\); negative pads"):
        entry.launch([torch.zeros(3, 3, dtype=dtype), torch.tensor([[1, 1], [0, -1]])], torch)
    with pytest.raises(ValueError, match=rf"^{entry.name}: x has rank 9; this kernel takes rank 1\.\.8$"):
        entry.launch([torch.zeros([2] * 9, dtype=dtype), torch.zeros(9, 2, dtype=torch.int64)], torch)
    with pytest.raises(ValueError, match=rf"^{entry.name}: pads must be \(2, 2\)"):
        entry.launch([torch.zeros(3, 3, dtype=dtype), torch.zeros(3, 2, dtype=torch.int64)], torch)
    other = torch.zeros(3, 3, dtype=torch.int16 if width != 2 else torch.int32)
    with pytest.raises(ValueError, match=rf"^{entry.name}: x must be a contiguous tensor of {width}-byte elements"):
        entry.launch([other, torch.zeros(2, 2, dtype=torch.int64)], torch)


@pytest.mark.parametrize("width", WIDTHS)
def test_replicate_launch_refuses_pads_on_an_empty_axis_and_takes_any_other_width(width):
    name = f"pad_replicate_b{width}"
    launch = REPLICATE[name].launch
    dtype = DTYPES[width][0]
    with pytest.raises(ValueError) as caught:
        launch([torch.zeros(2, 0, 3, dtype=dtype), torch.tensor([[0, 0], [0, 2], [1, 1]])], torch)
    assert str(caught.value) == f"{name}: axis 1 has pad (0, 2) but dim 0; replicate has no edge element to repeat"
    out, _grid, _block, _args = launch([torch.zeros(2, 1, 3, dtype=dtype), torch.tensor([[9, 0], [40, 41], [0, 300]])],
                                       torch)
    assert tuple(out.shape) == (11, 82, 303)
