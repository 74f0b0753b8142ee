"""A 1-D convolution that reads the official Model's weight and bias through `model_state`, registered twice.

register() also reseeds torch and draws random numbers between the two registrations: the gate builds
the official Model under KernelBench's seed itself, so neither registration's verdict may depend on it.
One thread per output element; each sums in_channels x kernel_size products and adds the bias.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void conv1d_f32(const float* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ bias, float* __restrict__ out,
                                      long long batch, int cin, int cout, int k, long long lin, long long lout)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long total = batch * cout * lout;
    if (i >= total) return;
    long long p = i % lout;
    int o = (int)((i / lout) % cout);
    long long b = i / (lout * cout);
    float acc = bias[o];
    for (int c = 0; c < cin; ++c) {
        for (int j = 0; j < k; ++j) acc += x[(b * cin + c) * lin + p + j] * w[(o * cin + c) * k + j];
    }
    out[i] = acc;
}
"""

BLOCK = 128


def ref(x, weight, bias):
    import torch

    return torch.nn.functional.conv1d(x, weight, bias)


def launch(inputs, torch):
    import ctypes

    x, weight, bias = inputs
    batch, cin, lin = x.shape
    cout, _cin, k = weight.shape
    lout = lin - k + 1
    out = torch.empty((batch, cout, lout), dtype=torch.float32, device=x.device)
    total = batch * cout * lout
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, weight.data_ptr()), (ctypes.c_void_p, bias.data_ptr()),
            (ctypes.c_void_p, out.data_ptr()), (ctypes.c_longlong, batch), (ctypes.c_int, cin), (ctypes.c_int, cout),
            (ctypes.c_int, k), (ctypes.c_longlong, lin), (ctypes.c_longlong, lout)]
    return out, ((total + BLOCK - 1) // BLOCK, 1, 1), (BLOCK, 1, 1), args


def t0_original(t):
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        return [torch.rand(4, 3, 45)]


def signed(t):
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    return [torch.randn((1, 2, 5)[t], 3, (3, 33, 70)[t], generator=g) * 2]


def misaligned(t):
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    return [torch.rand((7, 3)[t], 3, (4, 257)[t], generator=g) + 1]


def suites():
    return [("T0_original", 5, t0_original), ("signed", 3, signed), ("misaligned", 2, misaligned)]


def probe(torch):
    g = torch.Generator().manual_seed(4000)
    return [("aligned", [torch.rand(2, 3, 64, generator=g)]), ("misaligned", [torch.randn(3, 3, 29, generator=g)])]


def register(K, torch, ctypes):
    for name in ("conv1d_state", "conv1d_state_again"):
        K.PROBLEMS[name] = dict(kb_file="conv1d_small.py", cuda=CUDA_SOURCE, kernel_name="conv1d_f32", ref=ref,
                                launch=launch, suites=suites, probe=probe,
                                model_state=("conv1d.weight", "conv1d.bias"))
        torch.manual_seed(7)  # whatever the candidate does to the global generator decides nothing
        torch.rand(1000)
