"""kb_matrix_scalar: KernelBench level 1's 5_Matrix_scalar_multiplication.py (C = A * s).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_matrix_scalar.py

and `kb_file="5_Matrix_scalar_multiplication.py"` resolves in its `level1` folder. Elementwise
1-D grid, one thread per element. The inputs are [A, s] with s a Python float (3.14 in
get_inputs()), passed to the kernel by value as a float. T0_original is get_inputs() at its full
size (M x N = 65536 x 16384 float32, 4.3 GB: 2^30 elements), so gate it on a GPU with memory to
spare. The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void matrix_scalar_mul_f32(const float* __restrict__ A, float s, float* __restrict__ out,
                                                 long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = A[i] * s;
}
"""

BLOCK = 256

# 5_Matrix_scalar_multiplication.py's size constants (same names, same values).
M = 16384 * 4
N = 4096 * 4


def ref(A, s):
    return A * s


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_matrix_scalar: expected inputs [A, s], got {len(inputs)}")
    A, s = inputs
    if not isinstance(A, torch.Tensor) or A.dtype != torch.float32 or not A.is_contiguous():
        raise ValueError("kb_matrix_scalar: A must be a contiguous float32 tensor")
    if isinstance(s, torch.Tensor) or not isinstance(s, (int, float)) or isinstance(s, bool):
        raise ValueError(f"kb_matrix_scalar: s must be a Python number, got {type(s).__name__}")
    out = torch.empty_like(A)
    n = A.numel()
    grid = (max(1, (n + BLOCK - 1) // BLOCK), 1, 1)
    return out, grid, (BLOCK, 1, 1), [(ctypes.c_void_p, A.data_ptr()), (ctypes.c_float, float(s)),
                                      (ctypes.c_void_p, out.data_ptr()), (ctypes.c_longlong, n)]


def t0_original(t):
    # Exactly 5_Matrix_scalar_multiplication.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        A = torch.rand(M, N)
        s = 3.14
    return [A, s]


def signed(t):
    # Signed A (both signs, magnitudes 1e-3 .. 1e3) times signed scalars, fractional and large:
    # a kernel that drops the sign of s or of A, or ignores s, is wrong almost everywhere.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    s = (-2.5, 0.125, -1000.0, 7.75)[t]
    magnitude = 10.0 ** (torch.rand(128, 512, generator=g) * 6 - 3)
    sign = torch.where(torch.rand(128, 512, generator=g) < 0.5, -1.0, 1.0)
    return [magnitude * sign, s]


def misaligned(t):
    # Matrices whose element counts are not multiples of 32 or of the block: the tail guard.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape, s = [((1, 1), -3.0), ((31, 33), 0.5), ((257, 3), 3.14), ((3, 1001), -0.01), ((65, 129), 42.0)][t]
    return [torch.randn(shape, generator=g) * 4.0, s]


def suites():
    return [("T0_original", 5, t0_original), ("signed", 4, signed), ("misaligned", 5, misaligned)]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(16, 1024, generator=g), 3.14]),
            ("misaligned", [torch.randn(7, 45, generator=g), -1.5])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_matrix_scalar"] = dict(
        kb_file="5_Matrix_scalar_multiplication.py",
        cuda=CUDA_SOURCE,
        kernel_name="matrix_scalar_mul_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
