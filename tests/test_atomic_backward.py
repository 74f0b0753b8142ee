"""The atomic-accumulate backwards pad_backward_reflect/replicate_{f32,f64,f16,bf16}.

Their kernels add into grad_in with atomics whose order changes from run to run, yet the gate
compares them bit for bit. These tests hold up that design:
- the official references are right: equal to autograd of F.pad wherever F.pad covers the case,
  and to a plain loop at every rank 1..8;
- no correct kernel is ever rejected: every trial's sums are exact in any order (checked on every
  trial), and accumulating in several random orders, in the dtype, as the kernel does, gives the
  official reference's bits;
- planted faults (a dropped, doubled or misplaced contribution; a lane update that truncates)
  are rejected by the real gate on the CPU backend, for output_matches;
- launch refuses what the kernel cannot do, with its own message.
"""

import itertools
import json

import pytest
import torch
import torch.nn.functional as F

from harness.gate.command import main
from harness.problems import load_problem
from tests.conftest import TEST_CANDIDATES, registered_entries

MODES = ("reflect", "replicate")
DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16}
NAMES = [f"pad_backward_{mode}_{suffix}" for mode in MODES for suffix in DTYPES]
ENTRIES = {entry.name: entry for entry in registered_entries() if entry.name in NAMES}
BITS = {2: torch.int16, 4: torch.int32, 8: torch.int64}
# Every integer of magnitude up to this is exact in the dtype: 2**(significand bits).
EXACT_INTEGERS = {torch.float16: 2**11, torch.bfloat16: 2**8, torch.float32: 2**24, torch.float64: 2**53}
# Contributions per CAS word the suites may put there: the kernel's loop gives up after 1000 tries.
MAX_CONTENTION = 500
FRACTIONAL_SUITE = "fractional"


def _bits(t):
    return t.contiguous().view(BITS[t.element_size()])


def _same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(_bits(a), _bits(b))


def _flat_pads(rows):
    """F.pad's pad list (last axis first) for rows of (left, right), axis 0 first."""
    return [p for left, right in reversed(rows) for p in (left, right)]


def _source_index(mode, i, n):
    """The forward's gather map of one axis, i = out_coord - left (a tensor of them)."""
    if mode == "reflect":
        i = torch.where(i < 0, -i, i)
        return torch.where(i >= n, 2 * (n - 1) - i, i)
    return torch.where(i < 0, 0, torch.where(i >= n, n - 1, i))


def _destinations(mode, grad_shape, rows):
    """The flat grad_in index each grad_out element lands on (row-major), and grad_in's shape."""
    in_shape = [m - left - right for m, (left, right) in zip(grad_shape, rows)]
    dst = torch.zeros((), dtype=torch.int64)
    for m, n, (left, _right) in zip(grad_shape, in_shape, rows):
        dst = dst.unsqueeze(-1) * n + _source_index(mode, torch.arange(m) - left, n)
    return dst.reshape(-1), in_shape


def _mode(name):
    return name.split("_")[2]


def _trials(entry, sample=False):
    """(where, inputs) for the probe and every suite; with sample, each suite's first and last trial."""
    for label, inputs in entry.probe(torch):
        yield f"probe:{label}", inputs
    for suite, n_trials, builder in entry.suites():
        chosen = sorted({0, n_trials - 1}) if sample else range(n_trials)
        for t in chosen:
            yield f"{suite}:{t}", builder(t, torch.device("cpu"))


# ---------------------------------------------------------------------------- official references


def _autograd_of_f_pad(mode, grad_out, rows, k):
    """The gradient F.pad(mode) gives, in float64, for pads on the last k axes."""
    in_shape = [m - left - right for m, (left, right) in zip(grad_out.shape, rows)]
    x = torch.zeros(in_shape, dtype=torch.float64, requires_grad=True)
    F.pad(x, _flat_pads(rows[len(rows) - k:]), mode=mode).backward(grad_out.to(torch.float64))
    return x.grad


def _random_case(mode, rank, padded_axes, generator, most_extent=6, most_pad=None):
    """A grad_out shape and pads: reflect pads up to n - 1, replicate pads up to 2n + 1 (or most_pad)."""
    in_shape = [int(v) for v in torch.randint(1, most_extent + 1, (rank,), generator=generator)]
    rows = []
    for axis, n in enumerate(in_shape):
        if axis not in padded_axes:
            rows.append([0, 0])
            continue
        most = n - 1 if mode == "reflect" else 2 * n + 1
        if most_pad is not None:
            most = min(most, most_pad)
        rows.append([int(v) for v in torch.randint(0, most + 1, (2,), generator=generator)])
    grad_shape = [n + left + right for n, (left, right) in zip(in_shape, rows)]
    return grad_shape, rows


# (k padded trailing axes, rank): every combination F.pad supports for reflect and replicate.
F_PAD_CASES = [(1, 2), (1, 3), (2, 3), (2, 4), (3, 4), (3, 5)]


@pytest.mark.parametrize("suffix", DTYPES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k, rank", F_PAD_CASES, ids=lambda v: str(v))
def test_official_matches_autograd_of_f_pad(mode, suffix, k, rank):
    model = load_problem(f"pad_backward_{mode}_{suffix}.py").build_model("cpu")
    dtype = DTYPES[suffix]
    for seed in range(4):
        generator = torch.Generator().manual_seed(100 * rank + 10 * k + seed)
        grad_shape, rows = _random_case(mode, rank, range(rank - k, rank), generator)
        grad_out = (torch.randint(1, 5, grad_shape, generator=generator)
                    * (torch.randint(0, 2, grad_shape, generator=generator) * 2 - 1)).to(dtype)
        expected = _autograd_of_f_pad(mode, grad_out, rows, k).to(dtype)
        got = model(grad_out, torch.tensor(rows, dtype=torch.int64))
        assert _same_bits(got, expected), f"{mode} {suffix} rows {rows}"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k, rank", F_PAD_CASES, ids=lambda v: str(v))
def test_official_matches_autograd_of_f_pad_on_fractional_float64(mode, k, rank):
    # Non-integer float64 sums depend on their order in the last bits: within 1e-12.
    model = load_problem(f"pad_backward_{mode}_f64.py").build_model("cpu")
    generator = torch.Generator().manual_seed(7 * rank + k)
    grad_shape, rows = _random_case(mode, rank, range(rank - k, rank), generator)
    grad_out = torch.randn(grad_shape, dtype=torch.float64, generator=generator)
    expected = _autograd_of_f_pad(mode, grad_out, rows, k)
    torch.testing.assert_close(model(grad_out, torch.tensor(rows, dtype=torch.int64)), expected,
                               rtol=1e-12, atol=1e-12)


def _loop_reference(mode, grad_out, rows):
    """grad_in by visiting every grad_out coordinate: the definition, one element at a time."""
    in_shape = [m - left - right for m, (left, right) in zip(grad_out.shape, rows)]
    grad_in = torch.zeros(in_shape, dtype=torch.float64)
    flat_in = grad_in.reshape(-1)
    values = grad_out.to(torch.float64).reshape(-1).tolist()
    for flat_out, coord in enumerate(itertools.product(*[range(m) for m in grad_out.shape])):
        index = 0
        for c, n, (left, _right) in zip(coord, in_shape, rows):
            i = c - left
            if mode == "reflect":
                i = -i if i < 0 else i
                i = 2 * (n - 1) - i if i >= n else i
            else:
                i = min(max(i, 0), n - 1)
            index = index * n + i
        flat_in[index] += values[flat_out]
    return grad_in


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rank", range(1, 9))
def test_official_matches_a_loop_at_every_rank(mode, rank):
    model = load_problem(f"pad_backward_{mode}_f64.py").build_model("cpu")
    generator = torch.Generator().manual_seed(rank)
    most_extent = {1: 9, 2: 7, 3: 5, 4: 4, 5: 3, 6: 2, 7: 2, 8: 2}[rank]
    grad_shape, rows = _random_case(mode, rank, range(rank), generator, most_extent, most_pad=1 if rank > 5 else 3)
    grad_out = torch.randint(-4, 5, grad_shape, generator=generator).to(torch.float64)
    got = model(grad_out, torch.tensor(rows, dtype=torch.int64).reshape(rank, 2))
    assert torch.equal(got, _loop_reference(mode, grad_out, rows)), f"{mode} rows {rows}"


# ---------------------------------------------------------------------------- no correct kernel rejected


def _accumulate_in_order(grad_out, dst, n_slots, generator):
    """grad_in as a correct kernel may leave it: each slot starts at +0.0 and takes its
    contributions one by one, in a random order, each add rounded as the kernel rounds it (f16 and
    bf16: widen to f32, add, round to nearest even; f32 and f64: the native add).

    Vectorised over slots: contributions are grouped by slot in a random order, then step s adds
    every slot's s-th contribution at once.
    """
    dtype = grad_out.dtype
    values = grad_out.reshape(-1)
    n = values.numel()
    order = torch.argsort(dst * n + torch.randperm(n, generator=generator))  # by slot, random within each
    slot, value = dst[order], values[order]
    counts = torch.bincount(dst, minlength=n_slots)
    step = torch.arange(n) - (torch.cumsum(counts, 0) - counts)[slot]
    grad_in = torch.zeros(n_slots, dtype=dtype)
    for k in range(int(counts.max()) if n else 0):
        chunk = torch.nonzero(step == k).reshape(-1)
        s, v = slot[chunk], value[chunk]
        if dtype in (torch.float16, torch.bfloat16):
            grad_in[s] = (grad_in[s].to(torch.float32) + v.to(torch.float32)).to(dtype)
        else:
            grad_in[s] = grad_in[s] + v
    return grad_in


@pytest.mark.parametrize("name", NAMES)
def test_every_order_of_accumulation_gives_the_official_bits(name):
    entry = ENTRIES[name]
    model = load_problem(entry.kb_file).build_model("cpu")
    generator = torch.Generator().manual_seed(sum(map(ord, name)))
    for where, (grad_out, pads) in _trials(entry, sample=True):
        expected = model(grad_out, pads)
        dst, in_shape = _destinations(_mode(name), grad_out.shape, pads.tolist())
        for attempt in range(3 if grad_out.numel() < 500_000 else 1):  # T0: one order, it is large
            got = _accumulate_in_order(grad_out, dst, expected.numel(), generator).reshape(in_shape)
            assert _same_bits(got, expected), f"{name} {where}: order {attempt} gives other bits"


@pytest.mark.parametrize("name", NAMES)
def test_every_trial_keeps_its_sums_exact_in_any_order_and_its_contention_low(name):
    # Integer suites: nonzero integers whose absolute values sum, per slot, to at most the
    # dtype's exact-integer bound, so every partial sum in every order is exact. Fractional
    # suite: at most two contributions per slot, each sum rounded once. Every suite: at most
    # MAX_CONTENTION contributions per CAS word (two 16-bit slots share one).
    entry = ENTRIES[name]
    dtype = DTYPES[name.split("_")[-1]]
    for where, (grad_out, pads) in _trials(entry):
        if grad_out.numel() == 0:  # an empty trial (misaligned's last): no contribution to bound
            continue
        dst, in_shape = _destinations(_mode(name), grad_out.shape, pads.tolist())
        n_slots = 1
        for n in in_shape:
            n_slots *= n
        values = grad_out.reshape(-1).to(torch.float64)
        assert bool(torch.isfinite(values).all()) and not bool((values == 0).any()), f"{name} {where}"
        counts = torch.bincount(dst, minlength=n_slots)
        words = torch.bincount(dst // 2 if grad_out.element_size() == 2 else dst)
        assert int(words.max()) <= MAX_CONTENTION, f"{name} {where}: {int(words.max())} contributions to one word"
        if where.startswith(FRACTIONAL_SUITE):
            assert int(counts.max()) <= 2, f"{name} {where}: {int(counts.max())} fractional values in one slot"
            assert float((values != values.round()).double().mean()) > 0.5, f"{name} {where}: mostly integers"
        else:
            assert torch.equal(values, values.round()), f"{name} {where}: not integers"
            bound = torch.zeros(n_slots, dtype=torch.float64).index_add_(0, dst, values.abs())
            assert float(bound.max()) <= EXACT_INTEGERS[dtype], f"{name} {where}: |sum| may reach {float(bound.max())}"


@pytest.mark.parametrize("name", NAMES)
def test_t0_is_the_problem_distribution(name):
    entry = ENTRIES[name]
    official = load_problem(entry.kb_file).get_inputs()
    t0 = dict((suite, builder) for suite, _n, builder in entry.suites())["T0_original"]
    for grad_out, pads in (official, t0(0, torch.device("cpu"))):
        assert grad_out.shape == official[0].shape and grad_out.dtype == official[0].dtype
        assert torch.equal(pads, official[1])
        assert set(grad_out.unique().tolist()) == {-4.0, -3.0, -2.0, -1.0, 1.0, 2.0, 3.0, 4.0}
        assert 2_000_000 <= grad_out.numel() <= 4_000_000


# ---------------------------------------------------------------------------- planted faults

PLANTED = [f"broken_backward_{fault}_{suffix}" for fault, suffixes in
           (("dropped", ("f32", "bf16")), ("doubled", ("f32", "bf16")), ("misplaced", ("f32", "bf16")),
            ("truncates", ("f16", "bf16"))) for suffix in suffixes]


@pytest.fixture(scope="module")
def planted_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("gate-broken-backward") / "report.json"
    code = main([str(TEST_CANDIDATES / "candidate_broken_backward.py"), "--backend", "cpu", "--json", str(out),
                 "--no-record", "--no-progress", "--jobs", "2", "--timeout", "120"])
    assert code == 1
    return {s["name"]: s for s in json.loads(out.read_text())["substrates"]}


def test_every_planted_fault_is_gated(planted_report):
    assert sorted(planted_report) == sorted(PLANTED)


@pytest.mark.parametrize("name", PLANTED)
def test_planted_fault_is_rejected_for_a_wrong_output(planted_report, name):
    substrate = planted_report[name]
    failed = {c["check"]: c["detail"] for c in substrate["checks"] if c["ok"] is False}
    assert not substrate["admitted"]
    assert list(failed) == ["output_matches"], failed
    assert "elements differ" in failed["output_matches"]


# ---------------------------------------------------------------------------- launch


def _launch(name, grad_out, rows_or_pads):
    pads = rows_or_pads if isinstance(rows_or_pads, torch.Tensor) else torch.tensor(rows_or_pads, dtype=torch.int64)
    return ENTRIES[name].launch([grad_out, pads], torch)


REFUSED = {
    "rank_0": ("pad_backward_reflect_f32", torch.zeros((), dtype=torch.float32), torch.zeros((0, 2), dtype=torch.int64),
               "pad_backward_reflect_f32: grad_out has rank 0; this kernel takes rank 1..8"),
    "rank_9": ("pad_backward_replicate_f16", torch.zeros([1] * 9, dtype=torch.float16), [[0, 0]] * 9,
               "pad_backward_replicate_f16: grad_out has rank 9; this kernel takes rank 1..8"),
    "dtype": ("pad_backward_replicate_f32", torch.zeros(4, 5, dtype=torch.float64), [[0, 0], [1, 1]],
              "pad_backward_replicate_f32: grad_out must be float32, got torch.float64"),
    "strided": ("pad_backward_reflect_bf16", torch.zeros(6, 4, dtype=torch.bfloat16).t(), [[0, 0], [1, 1]],
                "pad_backward_reflect_bf16: grad_out must be contiguous"),
    "pads_dtype": ("pad_backward_reflect_f64", torch.zeros(4, 5, dtype=torch.float64),
                   torch.tensor([[0, 0], [1, 1]], dtype=torch.int32),
                   "pad_backward_reflect_f64: pads must be int64, got torch.int32"),
    "pads_shape": ("pad_backward_replicate_bf16", torch.zeros(4, 5, dtype=torch.bfloat16), [1, 1],
                   "pad_backward_replicate_bf16: pads must be (2, 2), one (left, right) row per axis; got (2,)"),
    "negative": ("pad_backward_reflect_f16", torch.zeros(4, 5, dtype=torch.float16), [[0, 0], [-1, 0]],
                 "pad_backward_reflect_f16: axis 1 has pad (-1, 0); negative pads (crops) are not supported"),
    "wider_than_grad_out": ("pad_backward_replicate_f64", torch.zeros(4, 5, dtype=torch.float64), [[0, 0], [3, 3]],
                            "pad_backward_replicate_f64: axis 1 has pad (3, 3) but grad_out's extent there is only 5"),
    "replicate_empty_axis": ("pad_backward_replicate_f32", torch.zeros(4, 5, dtype=torch.float32), [[0, 0], [2, 3]],
                             "pad_backward_replicate_f32: axis 1 has pad (2, 3) around an empty input axis "
                             "(grad_out extent 5): there is no edge element to replicate"),
    "reflect_left_past_limit": ("pad_backward_reflect_f32", torch.zeros(4, 7, dtype=torch.float32), [[0, 0], [3, 1]],
                                "pad_backward_reflect_f32: axis 1 has pad (3, 1) but input extent 3: reflect needs "
                                "each pad at most extent - 1 = 2"),
    "reflect_right_past_limit": ("pad_backward_reflect_f32", torch.zeros(4, 7, dtype=torch.float32), [[1, 2], [0, 0]],
                                 "pad_backward_reflect_f32: axis 0 has pad (1, 2) but input extent 1: reflect needs "
                                 "each pad at most extent - 1 = 0"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_launch_refuses_what_the_kernel_cannot_do(case):
    name, grad_out, pads, message = REFUSED[case]
    with pytest.raises(ValueError) as caught:
        _launch(name, grad_out, pads)
    assert str(caught.value) == message


@pytest.mark.parametrize("name", NAMES)
def test_launch_zero_fills_grad_in_of_the_input_shape(name):
    dtype = DTYPES[name.split("_")[-1]]
    grad_out = torch.ones(3, 9, 11, dtype=dtype)
    out, grid, block, args = _launch(name, grad_out, [[0, 0], [2, 3], [2, 2]])
    assert out.shape == (3, 4, 7) and out.dtype == dtype and not bool(out.any())
    assert grid == ((3 * 9 * 11 + 255) // 256, 1, 1) and block == (256, 1, 1)
    assert [value for _ctype, value in args[:3]] == [grad_out.data_ptr(), out.data_ptr(), 3 * 9 * 11]
    geometry = args[3][1]
    assert (geometry.rank, list(geometry.in_shape), list(geometry.out_shape), list(geometry.left_pad)) == (
        3, [3, 4, 7, 1, 1, 1, 1, 1], [3, 9, 11, 1, 1, 1, 1, 1], [0, 2, 2, 0, 0, 0, 0, 0])


@pytest.mark.parametrize("name", ["pad_backward_reflect_f32", "pad_backward_replicate_bf16"])
def test_launch_accepts_reflect_pads_at_the_limit_and_empty_axes(name):
    dtype = DTYPES[name.split("_")[-1]]
    out, _grid, _block, _args = _launch(name, torch.ones(4, 7, dtype=dtype), [[0, 0], [2, 2]])
    assert out.shape == (4, 3)
    out, grid, _block, _args = _launch(name, torch.ones(0, 5, dtype=dtype), [[0, 0], [1, 1]])
    assert out.shape == (0, 3) and grid == (1, 1, 1)


# (grad_out's shape, pads, slices folded with CHUNK_ELEMENTS 37): T0's pads with axis 0 free, as every large-index
# trial has it (a slice is one index of axis 0 at least); nothing padded (the rank-1 large trial, 37 elements a slice);
# a left pad of 8 on axis 1, whose sums round differently where a slice along axis 1 lays them out otherwise; axis 0
# padded, and every axis padded, which are folded whole.
_CHUNK_CASES = (((7, 5, 9, 11), [[0, 0], [0, 0], [3, 2], [2, 4]], 7), ((50,), [[0, 0]], 2),
                ((12, 64), [[0, 0], [8, 3]], 12), ((20, 64), [[8, 0], [0, 0]], 1), ((6, 13), [[2, 1], [0, 0]], 1),
                ((4, 6, 8), [[1, 1], [1, 1], [1, 1]], 1))


@pytest.mark.parametrize("name", NAMES)
def test_the_official_reference_folds_a_large_input_a_slice_at_a_time_to_the_same_bits(name, monkeypatch):
    """Past CHUNK_ELEMENTS, where axis 0 is unpadded, the Model folds slices along it one after another: element for
    element what folding the whole input gives, on the problem's own integers and on values whose sums round."""
    problem = load_problem(f"{name}.py")
    space = problem.Model.forward.__globals__  # the problem file's namespace
    fold, calls = space["_fold"], []
    monkeypatch.setitem(space, "_fold", lambda *args: calls.append(1) or fold(*args))
    monkeypatch.setitem(space, "CHUNK_ELEMENTS", 37)
    model, dtype = problem.build_model("cpu"), DTYPES[name.rsplit("_", 1)[1]]
    generator = torch.Generator().manual_seed(0)
    for shape, rows, slices in _CHUNK_CASES:
        for grad_out in (torch.randint(-4, 5, shape, generator=generator).to(dtype),
                         torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)):
            calls.clear()
            sliced = model(grad_out, torch.tensor(rows, dtype=torch.int64))
            assert len(calls) == slices, (shape, rows)
            assert _same_bits(sliced, fold(grad_out, rows)), (shape, rows)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["pad_backward_replicate_f16", "pad_backward_reflect_bf16"])
def test_on_the_gpu_a_large_trials_official_reference_holds_a_slice_in_float64_not_the_whole_input(name):
    """On 2^29 float16 elements (1 GiB, T0's shape tiled along axis 0), the Model's peak beyond its input is its
    output and a few slices' float64 temporaries: folding the whole input took two float64 copies of it.
    Its bits are those of the whole fold, on the device."""
    problem = load_problem(f"{name}.py")
    space, model = problem.Model.forward.__globals__, problem.build_model("cuda")
    grad_out = torch.randint(-4, 5, (2 ** 29 // (24 * 101 * 104) + 1, 24, 101, 104), device="cuda").to(
        DTYPES[name.rsplit("_", 1)[1]])
    pads = torch.tensor([[0, 0], [0, 0], [3, 2], [2, 4]], dtype=torch.int64)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    sliced = model(grad_out, pads)
    torch.cuda.synchronize()
    beyond = torch.cuda.max_memory_allocated() - before
    slice_bytes = 8 * space["CHUNK_ELEMENTS"]
    # A slice's two float64 copies at a time, and room for a mixed-dtype add's own copy and the small sums; the
    # whole fold took 8 GiB beyond the output.
    assert beyond <= sliced.numel() * sliced.element_size() + 4 * slice_bytes, beyond / 2**30
    assert _same_bits(sliced, space["_fold"](grad_out, pads.tolist()))
