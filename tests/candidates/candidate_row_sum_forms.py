"""Row sums written the ways authors who have only the spec write them, against tests/problems/row_sum.py.

- `forms_row_sum`: builders of the form builder(t), a T0 drawn from get_inputs()'s distribution with
  its own generator (not bit-identical), and an out that launch zeroes and the kernel atomicAdds
  into, with no `accumulates` key: admitted.
- `forms_empty_out`: the kernel writes nothing into a torch.empty out (KernelBench's stale-memory
  hack): rejected by output_fully_written.
- `forms_wrong_distribution`: the forms_row_sum candidate with a T0 drawn from rand, not randn:
  rejected by suite_rules with the test's evidence.
- `forms_missing_probe`: no probe key, a kb_file that names nothing, a T0 of 3 trials: every one of
  these is reported, not only the first.
- `forms_crash_late`: wrong by 1 on misaligned trial 0 (and the probe's misaligned entry), then a
  read four terabytes past x on misaligned trial 2 (a segfault on the CPU backend, an illegal
  address on a GPU; not address 0, which a compiler may assume unreachable): the report keeps the
  earlier failures beside the crash.
- `forms_killed_late`: forms_crash_late's kernel, whose launch SIGKILLs its own worker on misaligned
  trial 2, as the host's out-of-memory killer would: the report keeps the earlier failures, and says
  whether /proc/vmstat's oom_kill count rose meanwhile (then fits_host_memory fails, not the kernel).
Not real candidates: they live under tests/ so `python gate.py` never gates them unless asked.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void row_sum_atomic(const float* __restrict__ x, float* __restrict__ out, long long rows,
                                          long long cols)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * cols) return;
    atomicAdd(&out[i / cols], x[i]);
}
"""

NOTHING_SOURCE = r"""
extern "C" __global__ void row_sum_nothing(const float* __restrict__ x, float* __restrict__ out, long long rows)
{
    long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
}
"""

CRASH_SOURCE = r"""
extern "C" __global__ void row_sum_crash(const float* __restrict__ x, float* __restrict__ out, long long rows,
                                         long long cols)
{
    long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float total = 0.0f;
    for (long long c = 0; c < cols; ++c) total += x[r * cols + c];
    if (cols == 37) total += 1.0f;
#ifdef HARNESS_CPU
    if (cols == 57) std::abort();  // the CPU shim would catch the read below: die as a GPU context does
#endif
    if (cols == 57) total += x[r * cols + (1LL << 40)];
    out[r] = total;
}
"""

BLOCK = 128


def ref(x):
    import torch

    return torch.sum(x, dim=1)


def launch(inputs, torch):
    import ctypes

    (x,) = inputs
    rows, cols = x.shape
    out = torch.zeros(rows, dtype=x.dtype, device=x.device)  # the kernel adds into it
    n = rows * cols
    grid = (max(1, (n + BLOCK - 1) // BLOCK), 1, 1)
    return out, grid, (BLOCK, 1, 1), [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
                                      (ctypes.c_longlong, rows), (ctypes.c_longlong, cols)]


def launch_empty(inputs, torch):
    import ctypes

    (x,) = inputs
    rows = x.shape[0]
    out = torch.empty(rows, dtype=x.dtype, device=x.device)
    grid = (max(1, (rows + BLOCK - 1) // BLOCK), 1, 1)
    return out, grid, (BLOCK, 1, 1), [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
                                      (ctypes.c_longlong, rows)]


def launch_rows(inputs, torch):
    import ctypes

    (x,) = inputs
    rows, cols = x.shape
    out = torch.empty(rows, dtype=x.dtype, device=x.device)
    grid = (max(1, (rows + BLOCK - 1) // BLOCK), 1, 1)
    return out, grid, (BLOCK, 1, 1), [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
                                      (ctypes.c_longlong, rows), (ctypes.c_longlong, cols)]


def launch_killed(inputs, torch):
    import os
    import signal

    if inputs[0].shape[1] == 57:
        os.kill(os.getpid(), signal.SIGKILL)
    return launch_rows(inputs, torch)


def t0_drawn(t):
    # get_inputs()'s shape and distribution (randn), from a generator of its own: not bit-identical.
    import torch

    g = torch.Generator().manual_seed(77_000 + t)
    return [torch.randn(64, 256, generator=g)]


def t0_uniform(t):
    import torch

    g = torch.Generator().manual_seed(77_000 + t)
    return [torch.rand(64, 256, generator=g)]


def positive_rows(t):
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    return [torch.rand(16, 100 + 50 * t, generator=g) * 10]


def misaligned(t):
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    return [torch.randn(3 + 2 * t, 37 + 10 * t, generator=g)]


def suites():
    return [("T0_original", 5, t0_drawn), ("positive_rows", 3, positive_rows), ("misaligned", 3, misaligned)]


def suites_uniform():
    return [("T0_original", 5, t0_uniform), ("positive_rows", 3, positive_rows), ("misaligned", 3, misaligned)]


def suites_three_t0():
    return [("T0_original", 3, t0_drawn), ("positive_rows", 3, positive_rows), ("misaligned", 3, misaligned)]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.randn(4, 64, generator=g)]), ("misaligned", [torch.randn(3, 37, generator=g)])]


def register(K, torch, ctypes):
    common = dict(kb_file="row_sum.py", ref=ref, probe=probe)
    K.PROBLEMS["forms_row_sum"] = dict(common, cuda=CUDA_SOURCE, kernel_name="row_sum_atomic", launch=launch,
                                       suites=suites)
    K.PROBLEMS["forms_empty_out"] = dict(common, cuda=NOTHING_SOURCE, kernel_name="row_sum_nothing",
                                         launch=launch_empty, suites=suites)
    K.PROBLEMS["forms_wrong_distribution"] = dict(common, cuda=CUDA_SOURCE, kernel_name="row_sum_atomic",
                                                  launch=launch, suites=suites_uniform)
    K.PROBLEMS["forms_missing_probe"] = dict(kb_file="row_sum_of_nothing.py", ref=ref, cuda=CUDA_SOURCE,
                                             kernel_name="row_sum_atomic", launch=launch, suites=suites_three_t0)
    K.PROBLEMS["forms_crash_late"] = dict(common, cuda=CRASH_SOURCE, kernel_name="row_sum_crash",
                                          launch=launch_rows, suites=suites)
    K.PROBLEMS["forms_killed_late"] = dict(common, cuda=CRASH_SOURCE, kernel_name="row_sum_crash",
                                           launch=launch_killed, suites=suites)
