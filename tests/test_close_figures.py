"""The one-pass comparison kernel (harness.backends.close_figures) gives compare_close's own figures, bit for bit.

On the CPU the kernel runs through the CPU backend's shim (the same source NVRTC compiles); on a GPU (marked gpu)
through the CUDA backend's close_figures, the route the gate takes there.
"""

from __future__ import annotations

import math

import pytest
import torch

from harness.backends import close_figures, create_backend
from harness.backends.base import Backend
from harness.gate.checks import compare as compare_module
from harness.gate.checks.compare import Tolerance, _finite_figures, compare, compare_close, compare_later

DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16]
CHUNK = 1000  # small chunks, so that a few thousand elements make several, the last one short


@pytest.fixture(scope="module")
def cpu_backend(tmp_path_factory):
    return create_backend("cpu", cache_dir=tmp_path_factory.mktemp("close-figures-cache"))


def shim_figures(backend):
    """A CloseFigures that runs the kernel through `backend.load` and `backend.launch` (the CPU shim)."""
    loaded = {}

    def launcher_for(dtype):
        if dtype not in loaded:
            source, name = close_figures.program(dtype)
            loaded[dtype] = backend.load(source, name, f"{name}.cu")
        kernel = loaded[dtype]
        return lambda grid, block, args: backend.launch(kernel, grid, block, args)

    def figures(got, expected, atol, rtol, chunk):
        found = close_figures.one_pass(got, expected, atol, rtol, chunk, backend.device, launcher_for)
        backend.synchronize()
        return found

    return figures


def torch_figures(got, expected, atol, rtol, chunk):
    """compare_close's torch route: each chunk's _finite_figures."""
    flat_got, flat_expected = got.reshape(-1), expected.reshape(-1)
    return torch.stack([_finite_figures(flat_got[s:s + chunk].double(), flat_expected[s:s + chunk].double(),
                                        atol, rtol)[0] for s in range(0, flat_expected.numel(), chunk)])


def hard_pair(dtype, seed=0):
    """(got, expected) of `dtype`: close values, exact ties with the tolerance, signed zeros, subnormals, values whose
    relative error overflows, and chunks with a NaN, an infinity on either side, or (float64) a difference that
    overflows; the rest of the chunks finite."""
    n = 4321  # four chunks of CHUNK and a short one: chunk 0 finite, the others each with a value torch's rules judge
    g = torch.Generator().manual_seed(seed)
    expected = torch.randn(n, generator=g, dtype=torch.float64) * 10
    got = expected + torch.randn(n, generator=g, dtype=torch.float64) * 1e-2
    expected[:8] = torch.tensor([0.0, -0.0, 1.0, 1.0, 5e-324, 0.0, 3.0, -2.0], dtype=torch.float64)
    got[:8] = torch.tensor([-0.0, 0.0, 1.02, 0.98, 0.0, 1e-300, 3.0 + 1e-2 + 3e-2, -2.0], dtype=torch.float64)
    got[1100] = float("nan")
    expected[2100] = float("inf")
    got[3100] = float("-inf")
    got, expected = got.to(dtype), expected.to(dtype)
    if dtype == torch.float64:
        expected[3500], got[3500] = 1.5e308, -1.5e308  # finite, and |got - expected| is not
    return got, expected


def assert_same_figures(found, wanted):
    """Every chunk's finite flag; the other figures where it is set (compare_close reads no others)."""
    assert found.shape == wanted.shape and found.dtype == torch.float64
    assert found[:, 0].tolist() == wanted[:, 0].tolist()
    finite = wanted[:, 0] == 1.0
    assert finite.any() and (~finite).any()
    assert torch.equal(found[finite], wanted[finite])  # bit for bit: max abs, max rel and the count


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_kernel_on_the_cpu_shim_gives_the_torch_routes_figures_bit_for_bit(cpu_backend, dtype):
    got, expected = hard_pair(dtype)
    for atol, rtol in ((1e-2, 1e-2), (1e-4, 1e-4), (0.0, 0.0)):
        found = shim_figures(cpu_backend)(got, expected, atol, rtol, CHUNK)
        assert_same_figures(found, torch_figures(got, expected, atol, rtol, CHUNK))


def test_a_tie_with_the_tolerance_is_within_it_as_torch_rounds_the_bound(cpu_backend):
    # |got - expected| == atol + rtol * |expected| exactly: not a mismatch; one ulp more is.
    expected = torch.full((3,), 2.0, dtype=torch.float64)
    got = torch.tensor([2.5, math.nextafter(2.5, 3.0), 1.5], dtype=torch.float64)
    found = shim_figures(cpu_backend)(got, expected, 0.1, 0.2, CHUNK)
    assert found.tolist() == [[1.0, 0.5000000000000004, 0.2500000000000002, 1.0]]
    assert torch.equal(found, torch_figures(got, expected, 0.1, 0.2, CHUNK))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_compare_close_with_the_kernels_figures_says_what_it_says_without(cpu_backend, monkeypatch, dtype):
    monkeypatch.setattr(compare_module, "COMPARE_CHUNK", CHUNK)
    got, expected = hard_pair(dtype)
    figures = shim_figures(cpu_backend)
    for pair in ((got, expected), (expected.clone(), expected), (got[3600:], expected[3600:])):
        assert compare_close(*pair, 1e-2, 1e-2, figures) == compare_close(*pair, 1e-2, 1e-2)
    described = compare(got, expected, Tolerance(atol=1e-2, rtol=1e-2), figures).describe()
    assert described.startswith(f"{compare_close(got, expected, 1e-2, 1e-2).mismatches} of 4321 elements differ")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_comparison_queued_for_later_reads_the_kernels_figures_as_it_reads_torchs(cpu_backend, dtype):
    got, expected = hard_pair(dtype)  # one chunk, NaN and all: finish() leaves it to compare()
    tolerance = Tolerance(atol=1e-2, rtol=1e-2)
    figures = shim_figures(cpu_backend)
    finished = []
    for pair in ((got, expected), (expected[:1000] + 1e-3, expected[:1000]), (got[8:20], expected[8:20])):
        queued, plain = compare_later(*pair, tolerance, figures=figures), compare_later(*pair, tolerance)
        values, read = plain.signals.tolist(), queued.signals.tolist()
        finite = values[0] != 0  # the figures of a chunk with a NaN or an infinity are not read: its flag says so
        assert (read == values) if finite else (read[0] == values[0] == 0)
        finished.append(queued.finish(read))
        assert finished[-1] == plain.finish(values)
    assert finished[0] is None and finished[1].ok  # NaN: to compare(); within the tolerance: passed


def test_a_strided_output_is_left_to_torch_and_a_flattened_copy_is_read_in_order(cpu_backend, monkeypatch):
    monkeypatch.setattr(compare_module, "COMPARE_CHUNK", CHUNK)
    g = torch.Generator().manual_seed(3)
    expected = torch.randn(60, 70, generator=g)
    got = (expected + torch.randn(60, 70, generator=g) * 1e-2).t().contiguous().t()  # same values, other strides
    figures = shim_figures(cpu_backend)
    assert not got.is_contiguous() and figures(got, expected, 1e-2, 1e-2, CHUNK) is None
    assert figures(got[0], expected[0], 1e-2, 1e-2, CHUNK) is None  # a 1-d view with a stride
    # compare_close flattens it (a copy), and the kernel reads that.
    answers = []
    said = compare_close(got, expected, 1e-2, 1e-2, lambda *args: answers.append(figures(*args)) or answers[-1])
    assert said == compare_close(got, expected, 1e-2, 1e-2) and said.mismatches > 0
    assert [a is not None for a in answers] == [True]


def test_what_the_kernel_cannot_read_is_left_to_the_callers_route_without_a_launch():
    def launcher_for(dtype):
        raise AssertionError(f"launched for {dtype}")

    cpu = torch.device("cpu")
    x = torch.ones(5)
    for got, expected, device, chunk in (
            (torch.ones(5, dtype=torch.int32), torch.ones(5, dtype=torch.int32), cpu, CHUNK),  # not a float
            (x, x.double(), cpu, CHUNK),  # two dtypes
            (x, x, torch.device("meta"), CHUNK),  # not on the backend's device
            (x[:0], x[:0], cpu, CHUNK),  # nothing to compare
            (x, x, cpu, 0),
    ):
        assert close_figures.one_pass(got, expected, 0.0, 0.0, chunk, device, launcher_for) is None
    many = torch.ones(close_figures.MAX_CHUNKS + 1)
    assert close_figures.one_pass(many, many, 0.0, 0.0, 1, cpu, launcher_for) is None  # more rows than a grid has
    # A backend that could not load the kernel for the dtype says so with None: nothing is allocated or launched.
    assert close_figures.one_pass(x, x, 0.0, 0.0, CHUNK, cpu, lambda dtype: None) is None


def test_compare_close_decides_by_the_figures_it_is_given():
    # A route that says chunk 1 holds a mismatch is believed: the chunk is read again for its first mismatches.
    calls = []

    def figures(got, expected, atol, rtol, chunk):
        calls.append((got.numel(), atol, rtol, chunk))
        rows = torch.tensor([[1.0, 0.0, 0.0, 0.0]] * 3, dtype=torch.float64)
        rows[1, 3] = 1.0
        return rows

    x = torch.ones(2 * compare_module.COMPARE_CHUNK + 1)
    said = compare_close(x, x, 1e-3, 1e-4, figures)
    assert calls == [(x.numel(), 1e-3, 1e-4, compare_module.COMPARE_CHUNK)]
    assert (said.ok, said.mismatches, said.examples) == (False, 1, [])


def test_the_cpu_backend_leaves_comparisons_to_torch_which_is_quicker_there(cpu_backend):
    # Measured on this project's 2-core CPU: 16M float32 pairs, 0.61 s through the shim against 0.27 s in torch.
    assert type(cpu_backend).close_figures is Backend.close_figures
    assert cpu_backend.close_figures(torch.ones(3), torch.ones(3), 0.0, 0.0, CHUNK) is None


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_cuda_backends_one_pass_gives_the_torch_routes_figures_and_comparisons(tmp_path, monkeypatch, dtype):
    backend = create_backend("cuda", cache_dir=tmp_path)
    got, expected = (x.to(backend.device) for x in hard_pair(dtype))
    for atol, rtol in ((1e-2, 1e-2), (1e-4, 1e-4)):
        found = backend.close_figures(got, expected, atol, rtol, CHUNK)
        assert_same_figures(found, torch_figures(got, expected, atol, rtol, CHUNK))
    assert backend.close_figures(got.cpu(), expected.cpu(), 1e-2, 1e-2, CHUNK) is None  # not its device
    # From a thread of its own, as the gate's second references compare: the same figures.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as thread:
        found = thread.submit(lambda: backend.close_figures(got, expected, 1e-4, 1e-4, CHUNK).cpu()).result()
    assert_same_figures(found, torch_figures(got, expected, 1e-4, 1e-4, CHUNK).cpu())
    monkeypatch.setattr(compare_module, "COMPARE_CHUNK", CHUNK)
    assert compare_close(got, expected, 1e-2, 1e-2, backend.close_figures) == compare_close(got, expected, 1e-2, 1e-2)
    # A whole KernelBench-sized output, several real chunks: the same Comparison, mismatches and all.
    monkeypatch.undo()
    big = torch.rand(5 * compare_module.COMPARE_CHUNK + 7, device=backend.device).to(dtype)
    near = big + 1e-3
    near[123456] += 1.0
    assert compare_close(near, big, 1e-2, 1e-2, backend.close_figures) == compare_close(near, big, 1e-2, 1e-2)


@pytest.mark.gpu
def test_a_figures_kernel_that_does_not_compile_leaves_the_comparisons_to_torch_said_once(tmp_path, monkeypatch,
                                                                                         capsys):
    backend = create_backend("cuda", cache_dir=tmp_path)
    real = close_figures.program
    monkeypatch.setattr(close_figures, "program", lambda dtype: (real(dtype)[0] + "\nnot CUDA;\n", real(dtype)[1]))
    got = torch.rand(1000, device=backend.device)
    for _ in range(2):
        assert backend.close_figures(got, got, 1e-2, 1e-2, CHUNK) is None
        assert compare_close(got + 1.0, got, 1e-2, 1e-2, backend.close_figures).mismatches == 1000
    said = capsys.readouterr().err
    assert said.count("comparisons: the one-pass kernel for torch.float32 could not be loaded") == 1
    assert "outputs of that dtype are compared by torch's route" in said
