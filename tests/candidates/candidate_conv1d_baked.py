"""A 1-D convolution with the official Model's weights baked into its CUDA source as constants.

register() rebuilds the weights as KernelBench's evaluation builds the Model (torch.manual_seed(42),
then the same nn.Conv1d) and writes them into `__constant__` arrays; launch passes the input alone.
It is admitted only if the gate's official Model holds those same weights.
"""

KERNEL = r"""
extern "C" __global__ void conv1d_baked_f32(const float* __restrict__ x, float* __restrict__ out,
                                            long long batch, long long lin, long long lout)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long total = batch * COUT * lout;
    if (i >= total) return;
    long long p = i % lout;
    int o = (int)((i / lout) % COUT);
    long long b = i / (lout * COUT);
    float acc = BIAS[o];
    for (int c = 0; c < CIN; ++c) {
        for (int j = 0; j < KSIZE; ++j) acc += x[(b * CIN + c) * lin + p + j] * WEIGHT[(o * CIN + c) * KSIZE + j];
    }
    out[i] = acc;
}
"""

CIN, COUT, KSIZE = 3, 5, 3
BLOCK = 128


def baked_source(torch) -> tuple[str, object, object]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(42)
        conv = torch.nn.Conv1d(CIN, COUT, KSIZE)
    weight, bias = conv.weight.detach().clone(), conv.bias.detach().clone()

    def array(name, values):
        return f"__constant__ float {name}[{len(values)}] = {{{', '.join(f'{v!r}f' for v in values)}}};"

    header = (f"#define CIN {CIN}\n#define COUT {COUT}\n#define KSIZE {KSIZE}\n"
              f"{array('WEIGHT', weight.reshape(-1).tolist())}\n{array('BIAS', bias.tolist())}\n")
    return header + KERNEL, weight, bias


def register(K, torch, ctypes):
    source, weight, bias = baked_source(torch)

    def ref(x):
        return torch.nn.functional.conv1d(x, weight.to(x.device), bias.to(x.device))

    def launch(inputs, torch):
        (x,) = inputs
        batch, _cin, lin = x.shape
        lout = lin - KSIZE + 1
        out = torch.empty((batch, COUT, lout), dtype=torch.float32, device=x.device)
        total = batch * COUT * lout
        args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()), (ctypes.c_longlong, batch),
                (ctypes.c_longlong, lin), (ctypes.c_longlong, lout)]
        return out, ((total + BLOCK - 1) // BLOCK, 1, 1), (BLOCK, 1, 1), args

    def t0_original(t):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(1000 + t)
            return [torch.rand(4, 3, 45)]

    def signed(t):
        g = torch.Generator().manual_seed(2000 + t)
        return [torch.randn((1, 2, 5)[t], 3, (3, 33, 70)[t], generator=g) * 2]

    def misaligned(t):
        g = torch.Generator().manual_seed(3000 + t)
        return [torch.rand((7, 3)[t], 3, (4, 257)[t], generator=g) + 1]

    def suites():
        return [("T0_original", 5, t0_original), ("signed", 3, signed), ("misaligned", 2, misaligned)]

    def probe(torch):
        g = torch.Generator().manual_seed(4000)
        return [("aligned", [torch.rand(2, 3, 64, generator=g)]), ("misaligned", [torch.randn(3, 3, 29, generator=g)])]

    K.PROBLEMS["conv1d_baked"] = dict(kb_file="conv1d_small.py", cuda=source, kernel_name="conv1d_baked_f32", ref=ref,
                                      launch=launch, suites=suites, probe=probe)
