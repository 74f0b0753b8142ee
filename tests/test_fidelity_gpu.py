"""CPU backend against the GPU, on the lent H200: the same source must give the same bytes.

For every registered substrate, the probe and the first trial of each suite run through both
backends (the candidate's own launch, then the kernel on what it returns) and must agree bit
for bit; so must each shim feature kernel, except where the GPU itself is not bit-stable (the
float sum order of softmax), which is compared within tolerance.
"""

import pytest
import torch

from harness.backends import create_backend
from harness.compiler import signature
from harness.gate.checks.compare import compare_bitwise
from tests import shim_kernels
from tests.conftest import registered_entries

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def backends(tmp_path_factory):
    cache_dir = tmp_path_factory.mktemp("fidelity-cache")
    return create_backend("cpu", cache_dir=cache_dir), create_backend("cuda", cache_dir=cache_dir)


def _first_trials(entry):
    for label, inputs in entry.probe(torch):
        yield f"probe:{label}", inputs
    for suite, _n, builder in entry.suites():
        yield f"{suite}:0", builder(0, torch.device("cpu"))


def _output(entry, kernel, backend, inputs):
    out, grid, block, args = entry.launch(inputs, torch)
    assert not signature.check_arguments(kernel.params, args)
    backend.launch(kernel, tuple(grid), tuple(block), signature.to_ctypes(args))
    backend.synchronize()
    return out


def assert_same_bytes(entry, first, second, what: str) -> None:
    """The entry's probe and first trial of each suite, through backend `first` and backend `second` (the inputs on
    each one's device), give the same bytes."""
    kernels = [backend.load(entry.cuda, entry.kernel_name, f"{entry.name}.cu") for backend in (first, second)]
    for where, inputs in _first_trials(entry):
        a, b = (_output(entry, kernel, backend,
                        [x.to(backend.device) if isinstance(x, torch.Tensor) else x for x in inputs]).cpu()
                for kernel, backend in zip(kernels, (first, second)))
        result = compare_bitwise(a, b)
        assert result.ok, f"{entry.name} {where}: {what}: {result.describe()}"


@pytest.mark.parametrize("entry", registered_entries(), ids=lambda e: e.name)
def test_substrate_output_is_bit_identical_on_cpu_and_gpu(backends, entry):
    assert_same_bytes(entry, *backends, "CPU against GPU")


@pytest.mark.parametrize("case", shim_kernels.CASES, ids=lambda c: c.name)
def test_shim_feature_kernel_matches_the_gpu(backends, case):
    cpu, gpu = backends
    _, on_cpu = shim_kernels.execute(cpu, case)
    _, on_gpu = shim_kernels.execute(gpu, case)
    if case.exact:
        result = compare_bitwise(on_cpu, on_gpu)
        assert result.ok, f"{case.name}: CPU against GPU: {result.describe()}"
    else:
        torch.testing.assert_close(on_cpu, on_gpu, atol=1e-6, rtol=1e-5)


def test_a_cuda_backend_made_to_time_kernels_adds_up_their_runs_on_the_device(tmp_path):
    # campaign --kernel-times on cuda: CUDA events around each launch, read once later work has completed them.
    shim_kernels.check_kernel_times(create_backend("cuda", cache_dir=tmp_path, time_kernels=True),
                                    create_backend("cuda", cache_dir=tmp_path), long_run=20_000_000)
