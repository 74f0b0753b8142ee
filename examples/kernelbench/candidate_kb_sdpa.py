"""kb_sdpa: KernelBench level 1's 97_ScaledDotProductAttention.py (F.scaled_dot_product_attention(Q, K, V)).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_sdpa.py

and `kb_file="97_ScaledDotProductAttention.py"` resolves in its `level1` folder. With its defaults
(no mask, no dropout, not causal, scale 1 / sqrt(E)) the op is, for each batch and head,
softmax(Q K^T / sqrt(E)) V over the keys: Q (..., L, E), K (..., S, E), V (..., S, Ev), the output
(..., L, Ev). This kernel takes equal leading dimensions, flattened into B*H pairs.

One block of 32 x 8 threads per (pair, tile of 32 query rows), walking the keys in tiles of 32
with an online softmax (a single pass over K and V, whatever S is): the 32 x 32 scores of a key
tile are a tiled product over E in 32-wide chunks (the 32x32 shared-memory matmul pattern, each
thread four rows of one key's column); one thread per query row then takes the tile's maximum,
rescales the row's running sum by exp(old max - new max) and turns the scores into
exp(score - new max); finally each thread multiplies those weights by the key tile's V rows, chunk
by chunk over Ev, adding into its output elements, which hold the running numerators (the earlier
tiles' part scaled by the same factor, overwritten on the first key tile, so out's first contents
are never read) and are divided by the row's sum after the last tile. The real size is
Q, K, V of 32 x 32 x 512 x 1024 float32 (2.1 GB each, 536,870,912 elements): 16,384 blocks,
about 1.1 TFLOP of FMAs fed from shared memory, a fraction of a second on an H200; offsets are
long long. Gate T0 on a GPU with memory to spare.

In T0 every input is uniform in [0, 1), the weights are nearly flat and every output is about
0.5 +- 0.05. `signed` draws normal Q, K, V (Q sharpened up to 3x), outputs of both signs far from
any constant or from Q; `misaligned` has L, S, E and Ev not multiples of 32 and different from one
another (one query and one key, where the output is V's row; one key dimension; S below and above
one tile), so a kernel that mixes up L and S, E and Ev, or drops a partial tile shows; `one_hot`
aims each query at one key (its score ahead of the next by 40 or more, the first and the last key among the
targets, keys over several tiles), so the output is that key's V row, and a kernel that reads the
wrong V row, misses a key tile, or does not rescale earlier tiles when a later one holds the
maximum is far off. The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#include <math_constants.h>

#define TILE 32
#define ROWS_PER_THREAD 4

extern "C" __global__ void sdpa_online_softmax_f32(const float* __restrict__ q, const float* __restrict__ k,
                                                   const float* __restrict__ v, float* __restrict__ out,
                                                   long long pairs, long long L, long long S, long long E,
                                                   long long Ev, float scale)
{
    __shared__ float q_tile[TILE][TILE + 1];
    __shared__ float kv_tile[TILE][TILE + 1];
    __shared__ float p_tile[TILE][TILE + 1];
    __shared__ float row_max[TILE];
    __shared__ float row_sum[TILE];
    __shared__ float row_rescale[TILE];

    long long q_tiles = (L + TILE - 1) / TILE;
    long long pair = blockIdx.x / q_tiles;
    if (pair >= pairs) return;
    long long q0 = (blockIdx.x % q_tiles) * TILE;
    const float* qp = q + pair * L * E;
    const float* kp = k + pair * S * E;
    const float* vp = v + pair * S * Ev;
    float* op = out + pair * L * Ev;
    int tx = threadIdx.x;
    int ty = threadIdx.y;

    // Row tx's running max and sum belong to thread (tx, 0) alone until it publishes them.
    if (ty == 0) { row_max[tx] = -CUDART_INF_F; row_sum[tx] = 0.0f; }

    for (long long k0 = 0; k0 < S; k0 += TILE) {
        float acc[ROWS_PER_THREAD];
        for (int r = 0; r < ROWS_PER_THREAD; ++r) acc[r] = 0.0f;
        for (long long d0 = 0; d0 < E; d0 += TILE) {
            long long d = d0 + tx;
            for (int r = 0; r < ROWS_PER_THREAD; ++r) {
                int i = ty + 8 * r;
                q_tile[i][tx] = (q0 + i < L && d < E) ? qp[(q0 + i) * E + d] : 0.0f;
                kv_tile[i][tx] = (k0 + i < S && d < E) ? kp[(k0 + i) * E + d] : 0.0f;
            }
            __syncthreads();  // sync-after-qk-load
            for (int j = 0; j < TILE; ++j) {
                float kj = kv_tile[tx][j];
                for (int r = 0; r < ROWS_PER_THREAD; ++r) acc[r] += q_tile[ty + 8 * r][j] * kj;
            }
            __syncthreads();  // sync-after-qk-use
        }
        float missing = -CUDART_INF_F;  // a key past S gets weight exp(-inf) = 0
        for (int r = 0; r < ROWS_PER_THREAD; ++r) p_tile[ty + 8 * r][tx] = (k0 + tx < S) ? acc[r] * scale : missing;
        __syncthreads();  // sync-after-scores

        if (ty == 0) {
            // Key k0 always exists, so new_max is finite and exp(-inf - new_max) is 0 on the first tile.
            float old_max = row_max[tx];
            float new_max = old_max;
            for (int j = 0; j < TILE; ++j) new_max = fmaxf(new_max, p_tile[tx][j]);
            float rescale = expf(old_max - new_max);
            float tile_sum = 0.0f;
            for (int j = 0; j < TILE; ++j) {
                float p = expf(p_tile[tx][j] - new_max);
                p_tile[tx][j] = p;
                tile_sum += p;
            }
            row_max[tx] = new_max;
            row_sum[tx] = row_sum[tx] * rescale + tile_sum;
            row_rescale[tx] = rescale;
        }
        __syncthreads();  // sync-after-softmax

        bool last_tile = k0 + TILE >= S;
        for (long long d0 = 0; d0 < Ev; d0 += TILE) {
            long long d = d0 + tx;
            for (int r = 0; r < ROWS_PER_THREAD; ++r) {
                int i = ty + 8 * r;
                kv_tile[i][tx] = (k0 + i < S && d < Ev) ? vp[(k0 + i) * Ev + d] : 0.0f;
            }
            __syncthreads();  // sync-after-v-load
            for (int r = 0; r < ROWS_PER_THREAD; ++r) {
                int i = ty + 8 * r;
                float o = 0.0f;
                for (int j = 0; j < TILE; ++j) o += p_tile[i][j] * kv_tile[j][tx];
                if (q0 + i >= L || d >= Ev) continue;
                float* dst = op + (q0 + i) * Ev + d;
                float numerator = (k0 == 0 ? 0.0f : *dst * row_rescale[i]) + o;
                *dst = last_tile ? numerator / row_sum[i] : numerator;
            }
            __syncthreads();  // sync-after-v-use
        }
    }
}
"""

TILE = 32  # query rows and keys per tile, and the chunk of E and Ev: the kernel's shared arrays
BLOCK_ROWS = 8  # threadIdx.y extent: each thread covers TILE / BLOCK_ROWS = 4 rows (ROWS_PER_THREAD)

# 97_ScaledDotProductAttention.py's size constants (same names, same values).
batch_size = 32
num_heads = 32
sequence_length = 512
embedding_dimension = 1024


def ref(Q, K, V):
    import torch

    return torch.nn.functional.scaled_dot_product_attention(Q, K, V)


def launch(inputs, torch):
    import ctypes
    import math

    if len(inputs) != 3:
        raise ValueError(f"kb_sdpa: expected inputs [Q, K, V], got {len(inputs)}")
    for label, x in zip("QKV", inputs):
        if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() < 2:
            raise ValueError(f"kb_sdpa: {label} must be a contiguous float32 tensor of rank >= 2, got {x.dtype} of "
                             f"shape {tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    Q, K, V = inputs
    lead = tuple(Q.shape[:-2])
    if tuple(K.shape[:-2]) != lead or tuple(V.shape[:-2]) != lead or Q.dim() != K.dim() or Q.dim() != V.dim():
        raise ValueError(f"kb_sdpa: Q {tuple(Q.shape)}, K {tuple(K.shape)} and V {tuple(V.shape)} must share their "
                         f"leading dimensions (this kernel does not broadcast)")
    L, E = Q.shape[-2:]
    S, Ev = V.shape[-2:]
    if K.shape[-1] != E or K.shape[-2] != S:
        raise ValueError(f"kb_sdpa: K {tuple(K.shape)} must be (..., {S}, {E}) for Q {tuple(Q.shape)} and V "
                         f"{tuple(V.shape)}")
    pairs = math.prod(lead)
    if min(pairs, L, S, E, Ev) < 1:
        raise ValueError(f"kb_sdpa: empty inputs Q {tuple(Q.shape)}, K {tuple(K.shape)}, V {tuple(V.shape)}")
    blocks = pairs * ((L + TILE - 1) // TILE)
    if blocks > 2**31 - 1:
        raise ValueError(f"kb_sdpa: {blocks} blocks exceed the grid's x dimension")
    out = torch.empty((*lead, L, Ev), dtype=torch.float32, device=Q.device)
    args = [(ctypes.c_void_p, Q.data_ptr()), (ctypes.c_void_p, K.data_ptr()), (ctypes.c_void_p, V.data_ptr()),
            (ctypes.c_void_p, out.data_ptr()), (ctypes.c_longlong, pairs), (ctypes.c_longlong, L),
            (ctypes.c_longlong, S), (ctypes.c_longlong, E), (ctypes.c_longlong, Ev),
            (ctypes.c_float, 1.0 / math.sqrt(E))]
    return out, (blocks, 1, 1), (TILE, BLOCK_ROWS, 1), args


def t0_original(t, device):
    # Exactly 97_ScaledDotProductAttention.py's get_inputs(), seeded 1000 + t: Q, then K, then V.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        Q = torch.rand(batch_size, num_heads, sequence_length, embedding_dimension)
        K = torch.rand(batch_size, num_heads, sequence_length, embedding_dimension)
        V = torch.rand(batch_size, num_heads, sequence_length, embedding_dimension)
    return [Q.to(device), K.to(device), V.to(device)]


def signed(t, device):
    # Normal Q, K, V; Q's spread 1 .. 3 sharpens the weights without saturating them.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    b, h, seq, e = [(2, 2, 64, 64), (1, 4, 96, 128), (3, 1, 128, 32)][t]
    Q = torch.randn(b, h, seq, e, generator=g) * (1.0 + t)
    K = torch.randn(b, h, seq, e, generator=g)
    V = torch.randn(b, h, seq, e, generator=g) * 2.0
    return [Q.to(device), K.to(device), V.to(device)]


def misaligned(t, device):
    # L, S, E, Ev not multiples of 32 and unequal: one query and one key, one key dimension, S just
    # past one tile, rank 3 as well as rank 4.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    lead, L, S, E, Ev = [((1, 1), 1, 1, 1, 1), ((2, 3), 5, 33, 17, 40), ((1, 2), 70, 1, 65, 3),
                         ((1, 1), 33, 100, 1, 1), ((3,), 31, 65, 48, 97)][t]
    Q = torch.randn(*lead, L, E, generator=g) * 2.0
    K = torch.randn(*lead, S, E, generator=g)
    V = torch.randn(*lead, S, Ev, generator=g) + 0.5
    return [Q.to(device), K.to(device), V.to(device)]


def one_hot(t, device):
    # Each query is 8 times one key, so that key's score (8 * |K|^2 / sqrt(E), ~8 sqrt(E)) beats
    # the others (~N(0, 64)) by 40 or more and the output is its V row; targets include keys 0 and
    # S - 1 and span every key tile.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    b, h, L, S, e = [(2, 2, 40, 100, 128), (1, 3, 64, 70, 96), (1, 1, 33, 129, 160)][t]
    K = torch.randn(b, h, S, e, generator=g)
    target = torch.randint(0, S, (b, h, L), generator=g)
    target[..., 0], target[..., -1] = 0, S - 1
    Q = 8.0 * torch.gather(K, 2, target.unsqueeze(-1).expand(b, h, L, e))
    V = torch.randn(b, h, S, e, generator=g) * 3.0
    return [Q.to(device), K.to(device), V.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed", 3, signed),
        ("misaligned", 5, misaligned),
        ("one_hot", 3, one_hot),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(1, 2, 64, 64, generator=g) for _ in range(3)]),
            ("misaligned", [torch.randn(1, 2, 45, 33, generator=g) for _ in range(3)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_sdpa"] = dict(
        kb_file="97_ScaledDotProductAttention.py",
        cuda=CUDA_SOURCE,
        kernel_name="sdpa_online_softmax_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
