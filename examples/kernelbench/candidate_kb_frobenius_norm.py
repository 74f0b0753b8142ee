"""kb_frobenius_norm: KernelBench level 1's 37_FrobeniusNorm_.py (x / torch.norm(x, p='fro')).

forward() divides the whole input by one number, its Frobenius norm: the square root of the sum of
the squares of all its elements, whatever the rank. The Model has no parameters.

One block over the whole tensor: every output needs the norm of every input, and one launch has no
grid-wide barrier (the harness runs a single kernel without cooperative launch, and the CPU backend
does not keep every block alive at once, so a spin barrier could hang). The tensor is one long row
for one block, the block-per-row pattern with a single row. Its threads sum the squares of their
strided share in float32, a shared-memory tree adds the partial sums, and every thread divides its
share by the root. The block has 1024 threads rather than 256: one streaming multiprocessor carries
the whole tensor, and four times the threads keep four times the loads in flight. At the real size
(112 x 64 x 512 x 512 float32, 7.5 GB: 1,879,048,192 elements, indices 64-bit) each thread sums 1.8
million squares; the norm is about 25,000 and every output below 4e-5, within the 1e-2 tolerance of
zero, so T0 cannot tell a kernel writing zeros or a constant; the targeted suites are small tensors
with outputs far from zero. One multiprocessor streaming 15 GB of reads and 7.5 GB of writes takes
of the order of a second on an H200: the price of one launch.

Suites besides T0_original:
- small_signed: signed tensors of 1 to a few thousand elements, some dims 1, odd extents, scales
  1e-3 to 1e3 (outputs up to 1 whatever the scale): a kernel that forgets the root, or the scale,
  or divides by the element count, is off;
- sparse_spikes: a faint background with a few large values (the first and last element included)
  scattered over several of the block's strides: the norm is those few values, so a thread's share
  skipped or counted twice changes every large output by a large factor;
- odd_extents: uniform positive inputs whose element counts are not multiples of 32, 256 or 1024
  (fewer elements than threads, a partial last stride), outputs of about 1/sqrt(n / 3).
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 1024

extern "C" __global__ void frobenius_normalize_f32(const float* __restrict__ x, float* __restrict__ out,
                                                   long long n)
{
    __shared__ float red[BLOCK];
    if (blockIdx.x > 0) return;

    float sum = 0.0f;
    for (long long i = threadIdx.x; i < n; i += BLOCK) {
        float v = x[i];
        sum += v * v;
    }
    red[threadIdx.x] = sum;
    __syncthreads();  // sync-after-square-load
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();  // sync-after-tree-step
    }
    float norm = sqrtf(red[0]);

    for (long long i = threadIdx.x; i < n; i += BLOCK) out[i] = x[i] / norm;
}
"""

BLOCK = 1024  # the kernel's tree reduction is written for exactly this many threads

# 37_FrobeniusNorm_.py's size constants (same names, same values).
batch_size = 112
features = 64
dim1 = 512
dim2 = 512


def ref(x):
    import torch

    return x / torch.norm(x, p="fro")


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_frobenius_norm: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous():
        raise ValueError(f"kb_frobenius_norm: x must be a contiguous float32 tensor, got {x.dtype} "
                         f"(contiguous: {x.is_contiguous()})")
    n = x.numel()
    if n < 1:
        raise ValueError("kb_frobenius_norm: x is empty, it has no norm to divide by")
    out = torch.empty_like(x)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()), (ctypes.c_longlong, n)]
    return out, (1, 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 37_FrobeniusNorm_.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, features, dim1, dim2)
    return [x.to(device)]


def small_signed(t, device):
    # Few elements (one to a few thousand), signed, scaled by 1e-3 to 1e3: outputs up to +-1.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    shape = [(1, 1, 1, 1), (1, 1, 1, 5), (2, 3, 4, 5), (1, 2, 33, 7), (3, 1, 1, 41)][t]
    scale = (1e-3, 1.0, 30.0, 1e3, 0.05)[t]
    return [(torch.randn(shape, generator=g) * scale).to(device)]


def sparse_spikes(t, device):
    # A faint background (1e-3) with five large values (1 to 3, signed) at the first and last element
    # and three random places, over counts of 2 to 9 of the block's strides.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape = [(2, 3, 17, 23), (1, 4, 40, 50), (3, 2, 31, 33), (1, 1, 97, 95)][t]
    x = torch.randn(shape, generator=g) * 1e-3
    flat = x.view(-1)
    n = flat.numel()
    where = torch.cat([torch.tensor([0, n - 1]), torch.randint(1, n - 1, (3,), generator=g)])
    sign = torch.where(torch.rand(5, generator=g) < 0.5, -1.0, 1.0)
    flat[where] = sign * (1.0 + 2.0 * torch.rand(5, generator=g))
    return [x.to(device)]


def odd_extents(t, device):
    # Positive uniform inputs whose counts are not multiples of 32, 256 or 1024: fewer than the
    # block's threads, and a partial last stride.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    shape = [(1, 3, 5, 7), (1, 1, 1, 1023), (1, 1, 3, 345), (2, 1, 1, 15)][t]
    return [(torch.rand(shape, generator=g) * 2.0).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("small_signed", 5, small_signed),
        ("sparse_spikes", 4, sparse_spikes),
        ("odd_extents", 4, odd_extents),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(2, 4, 8, 32, generator=g)]),
            ("misaligned", [torch.randn(3, 5, 7, 9, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_frobenius_norm"] = dict(
        kb_file="37_FrobeniusNorm_.py",
        cuda=CUDA_SOURCE,
        kernel_name="frobenius_normalize_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
