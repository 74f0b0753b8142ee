"""Candidates that each break one rule of the spec, written out from one compliant template.

The template is a small, correct elementwise substrate (`|x| + x/2`) with its own
KernelBench-format problem. Each variant is the template with a few exact text replacements,
so a reader sees precisely what breaks the rule; `write_candidates` writes chosen variants (and
the problem files they use) into a folder laid out like the project: substrates/ and problems/.
"""

from __future__ import annotations

from pathlib import Path

PROBLEM = '''"""|x| + x / 2 of a float32 matrix: a test fixture in KernelBench's format."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.abs(x) + 0.5 * x


def get_inputs():
    x = torch.randn(64, 256)
    return [x]


def get_init_inputs():
    return []
'''

TEMPLATE = '''"""A compliant elementwise substrate: out = |x| + x / 2."""

CUDA_SOURCE = r"""
extern "C" __global__ void abs_plus_half(const float* __restrict__ x, float* __restrict__ out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = fabsf(x[i]) + 0.5f * x[i];
}
"""

BLOCK = 256


def ref(x):
    import torch

    return torch.abs(x) + 0.5 * x


def launch(inputs, torch):
    import ctypes

    (x,) = inputs
    out = torch.empty_like(x)
    n = x.numel()
    grid = (max(1, (n + BLOCK - 1) // BLOCK), 1, 1)
    return out, grid, (BLOCK, 1, 1), [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
                                      (ctypes.c_longlong, n)]


def t0_original(t, device):
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.randn(64, 256)
    return [x.to(device)]


def signed_large(t, device):
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    return [((torch.rand(32, 96, generator=g) - 0.5) * 2e4).to(device)]


def misaligned(t, device):
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    return [torch.randn(3 + 2 * t, 37 + 10 * t, generator=g).to(device)]


def suites():
    return [("T0_original", 5, t0_original), ("signed_large", 3, signed_large), ("misaligned", 3, misaligned)]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.randn(4, 64, generator=g)]), ("misaligned", [torch.randn(3, 37, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["NAME"] = dict(
        kb_file="abs_plus_half.py",
        cuda=CUDA_SOURCE,
        kernel_name="abs_plus_half",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
'''

# Variant -> (the check it must fail, words its detail must hold, the replacements that make it).
# The file name of a variant is candidate_<variant>.py unless a replacement says otherwise.
VARIANTS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "rule_file_name": ("candidate_file", "a candidate file is named candidate_<snake_case_name>.py, not "
                                         "'candidate_RuleFileName.py'", [("FILE", "candidate_RuleFileName.py")]),
    "rule_register_signature": ("candidate_file", "register(K, torch) must take exactly (K, torch, ctypes)",
                                [("def register(K, torch, ctypes):", "def register(K, torch):")]),
    # Where a GPU is visible the import succeeds and the CUDA work is caught; elsewhere the import fails.
    "rule_cuda_at_import": ("import_safe", "", [('"""A compliant elementwise substrate: out = |x| + x / 2."""\n',
                                                 '"""A compliant elementwise substrate: out = |x| + x / 2."""\n'
                                                 'import torch\n\ntorch.zeros(1, device="cuda")\n')]),
    "rule_unknown_key": ("registration", "unknown key(s) notes", [("probe=probe,", "probe=probe, notes='x',")]),
    "rule_unknown_problem": ("official_reference", "kb_file 'no_such_problem.py': no such problem file",
                             [('kb_file="abs_plus_half.py"', 'kb_file="no_such_problem.py"')]),
    "rule_host_function": ("cuda_source", "[device_only]",
                           [('extern "C" __global__', '__host__ __device__ float twice(float v) { return 2.0f * v; }\n\n'
                                                      'extern "C" __global__')]),
    "rule_include": ("cuda_source", "[includes]", [('CUDA_SOURCE = r"""\n', 'CUDA_SOURCE = r"""\n#include <cuda_fp8.h>\n')]),
    "rule_kernel_not_global": ("cuda_source", "[kernel_is_global]",
                               [('kernel_name="abs_plus_half"', 'kernel_name="abs_plus_halves"')]),
    "rule_narrow_index": ("cuda_source", "[wide_indices]",
                          [("long long i = (long long)blockIdx.x", "int i = blockIdx.x")]),
    "rule_guard_two_lines": ("cuda_source", "[one_line_guards]",
                             [("if (i >= n) return;", "if (i >= n)\n        return;")]),
    "rule_ceil_division": ("cuda_source", "[ceil_division]",
                           [("if (i >= n) return;", "if (i >= (n + 255) / 256 * 256) return;\n    if (i >= n) return;")]),
    "rule_unlabelled_syncs": ("cuda_source", "[labelled_syncs]",
                              [("if (i >= n) return;", "__syncthreads();\n    __syncthreads();\n    if (i >= n) return;")]),
    "rule_t0_trial_count": ("suite_rules", "T0_original has 4 trial(s); the spec asks for exactly 5",
                            [('("T0_original", 5,', '("T0_original", 4,')]),
    # randn for rand: another distribution, so neither get_inputs()'s values nor its distribution.
    "rule_t0_not_get_inputs": ("suite_rules", "has get_inputs()'s shape and dtype but neither its values under "
                                              "torch.manual_seed(1000) nor its distribution: two-sample "
                                              "Kolmogorov-Smirnov test: statistic",
                               [("torch.manual_seed(1000 + t)\n        x = torch.randn(64, 256)",
                                 "torch.manual_seed(7 + t)\n        x = torch.rand(64, 256)")]),
    "rule_t0_shape": ("suite_rules", "T0_original trial 0 input 0 is float32[64, 128]; get_inputs() gives "
                                     "float32[64, 256]", [("x = torch.randn(64, 256)", "x = torch.randn(64, 128)")]),
    "rule_one_targeted_suite": ("suite_rules", "1 targeted suite(s) besides T0_original (signed_large); the spec "
                                               "asks for two or three",
                                [(', ("misaligned", 3, misaligned)]', ']')]),
    "rule_nondeterministic_builder": ("suite_rules", "misaligned trial 0 is not deterministic",
                                      [("torch.randn(3 + 2 * t, 37 + 10 * t, generator=g)",
                                        "torch.randn(3 + 2 * t, 37 + 10 * t)")]),
    "rule_probe_three_entries": ("probe_rules", "probe returns 3 entries; the spec asks for exactly 2",
                                 [('("misaligned", [torch.randn(3, 37, generator=g)])]',
                                   '("misaligned", [torch.randn(3, 37, generator=g)]), '
                                   '("extra", [torch.randn(5, 5, generator=g)])]')]),
    "rule_probe_too_big": ("probe_rules", "probe entry 'aligned' holds 1,048,576 bytes; each entry must be under 1 MB",
                           [("torch.randn(4, 64, generator=g)", "torch.randn(1024, 256, generator=g)")]),
    "rule_probe_not_aligned": ("probe_rules", "no probe entry is aligned like T0",
                               [("torch.randn(4, 64, generator=g)", "torch.randn(4, 6, generator=g)")]),
    "rule_wrong_ref": ("ref_matches_official", "elements differ", [("return torch.abs(x) + 0.5 * x", "return torch.abs(x)")]),
    "rule_suites_cannot_fail": ("suites_can_fail", "a kernel that writes zeros passes every trial of every suite",
                                [('kb_file="abs_plus_half.py"', 'kb_file="tiny_outputs.py"'),
                                 ("out[i] = fabsf(x[i]) + 0.5f * x[i];", "out[i] = 1e-3f * x[i];"),
                                 ("return torch.abs(x) + 0.5 * x", "return 1e-3 * x"),
                                 ("* 2e4", "* 2")]),
    "rule_output_shape": ("output_matches", "output shape (16384,) but the reference gives (64, 256)",
                          [("out = torch.empty_like(x)", "out = torch.empty(x.numel(), device=x.device)")]),
}

# Problems other than abs_plus_half.py, as replacements in PROBLEM. tiny_outputs.py's outputs
# all lie within the tolerance of zero, so no suite can reject a kernel that writes zeros.
OTHER_PROBLEMS = {"tiny_outputs.py": [("return torch.abs(x) + 0.5 * x", "return 1e-3 * x")]}

# A candidate that breaks five rules at once must be rejected for all five.
SEVERAL = ("rule_several", ["rule_file_name", "rule_host_function", "rule_t0_trial_count", "rule_probe_three_entries",
                            "rule_wrong_ref"])


def variant_text(name: str, replacements: list[tuple[str, str]], template: str = TEMPLATE) -> str:
    text = template.replace('K.PROBLEMS["NAME"]', f'K.PROBLEMS["{name}"]')
    for old, new in replacements:
        if old == "FILE":
            continue
        assert text.count(old) == 1, f"{name}: {old!r} must occur once in the template"
        text = text.replace(old, new)
    return text


def file_name(name: str, replacements: list[tuple[str, str]]) -> str:
    return next((new for old, new in replacements if old == "FILE"), f"candidate_{name}.py")


def write_candidates(root: Path, names: list[str]) -> list[Path]:
    """Write the template (as 'rule_compliant'), the chosen variants and SEVERAL under root/substrates."""
    (root / "substrates").mkdir(parents=True, exist_ok=True)
    (root / "problems").mkdir(exist_ok=True)
    (root / "problems" / "abs_plus_half.py").write_text(PROBLEM)
    for problem, replacements in OTHER_PROBLEMS.items():
        (root / "problems" / problem).write_text(variant_text(problem, replacements, PROBLEM))
    plans = {"rule_compliant": []} | {name: VARIANTS[name][2] for name in names}
    plans[SEVERAL[0]] = [r for part in SEVERAL[1] for r in VARIANTS[part][2] if r[0] != "FILE"]
    plans[SEVERAL[0]].append(("FILE", "candidate_RuleSeveral.py"))
    paths = []
    for name, replacements in plans.items():
        path = root / "substrates" / file_name(name, replacements)
        path.write_text(variant_text(name, replacements))
        paths.append(path)
    return paths
