"""harness/engine/mutants.py: each operator from a table of small sources, stable ids, nothing mutated in comments,
strings or preprocessor lines, apply/diff_line word for word, the operators each substrate gets, and a
deterministic sample of mutants compiled with NVRTC."""

import re
from functools import lru_cache
from pathlib import Path

import pytest

from harness.candidates import candidate_files, import_candidate, register_candidate
from harness.compiler.nvrtc import compile_cuda
from harness.engine.mutants import OPERATORS, Mutant, Operator, generate
from harness.problems import REPO_ROOT

(BOUNDARY, NEGATION, GUARD, CEIL, ARITH, CONST, INDEX, TERNARY, SYNC, ATOMIC, SWAP, NARROW,
 CAS) = list(Operator)
HEAD = ('extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ out, unsigned int* w, '
        'long long n, int m)')


def kernel(body: str) -> str:
    """A kernel `k` whose body is `body`, each of its lines indented by four spaces."""
    return "\n".join([HEAD, "{", *("    " + line for line in body.split("\n")), "}"]) + "\n"


def rewrites(operator: Operator, body: str) -> list[str]:
    """The bodies the operator's mutants make of `body`, in order."""
    source = kernel(body)
    return [m.apply(source) for m in generate(source, "k") if m.operator is operator]


CAS_CALL = "atomicCAS(w, 0u, 1u)"
CASES = [
    # relational_boundary: only in conditions (if, while, for, ternary); template brackets are not comparisons
    (BOUNDARY, "if (n >= m) return;", ["if (n > m) return;"]),
    (BOUNDARY, "for (int i = 0; i < m; ++i) out[i] = 0.0f;", ["for (int i = 0; i <= m; ++i) out[i] = 0.0f;"]),
    (BOUNDARY, "out[0] = n > 3 ? x[0] : x[1];", ["out[0] = n >= 3 ? x[0] : x[1];"]),
    (BOUNDARY, "bool b = n < m; while (b) b = false;", []),
    (BOUNDARY, "if (n == m) return;", []),
    (BOUNDARY, "if (static_cast<int>(n) < m) return;", ["if (static_cast<int>(n) <= m) return;"]),
    # relational_negation
    (NEGATION, "if (n >= m) return;", ["if (n < m) return;"]),
    (NEGATION, "if (n == m || n != 0) return;", ["if (n != m || n != 0) return;", "if (n == m || n == 0) return;"]),
    (NEGATION, "while (n > 0) n -= 1;", ["while (n <= 0) n -= 1;"]),
    (NEGATION, "do { n -= 1; } while (n <= m);", ["do { n -= 1; } while (n > m);"]),
    # guard_deletion: a one-line if without else goes whole; a guard that is a loop's body becomes `;`
    (GUARD, "if (n >= m) return;\nout[0] = 1.0f;", ["\nout[0] = 1.0f;"]),
    (GUARD, "if (n < m) { out[0] = 1.0f; }", [""]),
    (GUARD, "if (n == 0) out[0] = 1.0f;", [""]),
    (GUARD, "for (int i = 0; i < m; ++i) if (i >= n) return;", ["for (int i = 0; i < m; ++i) ;"]),
    (GUARD, "if (n < m)\n    return;", []),
    (GUARD, "if (n < m) return; else out[0] = 1.0f;", []),
    # ceil_division
    (CEIL, "long long t = (n + 256 - 1) / 256;", ["long long t = n / 256;", "long long t = (n + 256) / 256;"]),
    (CEIL, "long long t = (n * m + blockDim.x - 1) / blockDim.x;",
     ["long long t = (n * m) / blockDim.x;", "long long t = (n * m + blockDim.x) / blockDim.x;"]),
    (CEIL, "long long t = (n + 255) / 256;", []),
    (CEIL, "long long t = (n + 32 - 1) / 64;", []),
    # arithmetic_swap: binary operators only, not unary minus, pointer declarators, casts or dereferences
    (ARITH, "out[0] = x[0] + x[1] * x[2];", ["out[0] = x[0] - x[1] * x[2];", "out[0] = x[0] + x[1] / x[2];"]),
    (ARITH, "long long r = n % m - -n;", ["long long r = n / m - -n;", "long long r = n % m + -n;"]),
    (ARITH, "const float* p = (const float*)x; out[0] = *p;", []),
    (ARITH, "unsigned int s = w[0] >> 4; s <<= 1; n += s;",
     ["unsigned int s = w[0] << 4; s <<= 1; n += s;", "unsigned int s = w[0] >> 4; s >>= 1; n += s;",
      "unsigned int s = w[0] >> 4; s <<= 1; n -= s;"]),
    (ARITH, "long long q = (long long)m * -n;", ["long long q = (long long)m / -n;"]),
    (ARITH, "unsigned int b = w[0] & 3u | 4u;", []),
    (ARITH, "if (n > 0) *out = -x[0];\nwhile (m) *w = 1u;", []),
    (ARITH, "typedef struct { int rank; } geo_t; geo_t g; g.rank = m; n = g.rank - 1;",
     ["typedef struct { int rank; } geo_t; geo_t g; g.rank = m; n = g.rank + 1;"]),
    # constant_off_by_one: integer literals in bodies, not float ones, declared sizes or a ceil division's 1
    (CONST, "out[n - 1] = 0.5f;", ["out[n - 2] = 0.5f;", "out[n - 0] = 0.5f;"]),
    (CONST, "w[0] = 0xFFu;", ["w[1] = 0xFFu;", "w[-1] = 0xFFu;", "w[0] = 0x100u;", "w[0] = 0xFEu;"]),
    (CONST, "n = n - 0;", ["n = n - 1;", "n = n - (-1);"]),
    (CONST, "__shared__ float s[32]; s[0] = 1.0f;",
     ["__shared__ float s[32]; s[1] = 1.0f;", "__shared__ float s[32]; s[-1] = 1.0f;"]),
    (CONST, "long long t = (n + 32 - 1) / 32;",
     ["long long t = (n + 33 - 1) / 32;", "long long t = (n + 31 - 1) / 32;", "long long t = (n + 32 - 1) / 33;",
      "long long t = (n + 32 - 1) / 31;"]),
    # index_off_by_one: the index parenthesised when it binds looser than `+`; a lone literal is CONST's
    (INDEX, "out[n] = x[n + 1];", ["out[n + 1] = x[n + 1];", "out[n - 1] = x[n + 1];", "out[n] = x[n + 1 + 1];",
                                   "out[n] = x[n + 1 - 1];"]),
    (INDEX, "out[n > m ? n : m] = 1.0f;", ["out[(n > m ? n : m) + 1] = 1.0f;", "out[(n > m ? n : m) - 1] = 1.0f;"]),
    (INDEX, "__shared__ float s[32]; s[0] = x[0];", []),
    (INDEX, "int d = m; out[d] = 1.0f;", ["int d = m; out[d + 1] = 1.0f;", "int d = m; out[d - 1] = 1.0f;"]),
    (CONST, "int a = 0x1f, b = 017, d = 10; n = a + b + d;",
     ["int a = 0x20, b = 017, d = 10; n = a + b + d;", "int a = 0x1e, b = 017, d = 10; n = a + b + d;",
      "int a = 0x1f, b = 017, d = 11; n = a + b + d;", "int a = 0x1f, b = 017, d = 9; n = a + b + d;"]),
    # ternary_swap
    (TERNARY, "out[0] = n > 0 ? x[0] : x[1];", ["out[0] = n > 0 ? x[1] : x[0];"]),
    (TERNARY, "out[0] = n > 0 ? x[0] : m > 0 ? x[1] : x[2];",
     ["out[0] = n > 0 ? m > 0 ? x[1] : x[2] : x[0];", "out[0] = n > 0 ? x[0] : m > 0 ? x[2] : x[1];"]),
    (TERNARY, "out[0] = n > 0 ? x[0] : x[0];", []),
    # sync_deletion: one barrier at a time; a barrier that is a body becomes `;`
    (SYNC, "__syncthreads();  // a\nout[0] = 1.0f;\n__syncthreads();  // b",
     ["  // a\nout[0] = 1.0f;\n__syncthreads();  // b", "__syncthreads();  // a\nout[0] = 1.0f;\n  // b"]),
    (SYNC, "if (n > 0) __syncthreads();", ["if (n > 0) ;"]),
    # atomic_to_plain: a compound assignment where the result is dropped, a lambda giving the old value where used
    (ATOMIC, "atomicAdd(out, x[0]);", ["(*(out) += (x[0]));"]),
    (ATOMIC, "atomicExch(w, 5u);", ["(*(w) = (5u));"]),
    (ATOMIC, "atomicMax(w, 3u);", ["(*(w) = max(*(w), (3u)));"]),
    (ATOMIC, "unsigned int old = atomicCAS(w, 0u, 1u);",
     ["unsigned int old = ([&]() { auto mutant_old = *(w); *(w) = mutant_old == (0u) ? (1u) : mutant_old; "
      "return mutant_old; }());"]),
    (ATOMIC, "float o = atomicAdd(out + 1, 2.0f);",
     ["float o = ([&]() { auto mutant_old = *(out + 1); *(out + 1) = mutant_old + (2.0f); return mutant_old; }());"]),
    # thread_block_swap
    (SWAP, "out[threadIdx.x] = x[blockIdx.y];", ["out[blockIdx.x] = x[blockIdx.y];",
                                                "out[threadIdx.x] = x[threadIdx.y];"]),
    (SWAP, "int t = blockDim.x * gridDim.x;", []),
    # narrow_long_long: local declarations and casts; parameters (`long long n` in the head) are not in a body
    (NARROW, "long long i = (long long)blockIdx.x * blockDim.x;",
     ["int i = (long long)blockIdx.x * blockDim.x;", "long long i = (int)blockIdx.x * blockDim.x;"]),
    (NARROW, "unsigned long long a = (unsigned long long)x;", ["unsigned int a = (unsigned long long)x;"]),
    (NARROW, "atomicAdd((unsigned long long*)w, 1ull);", []),
    (NARROW, "for (long long int r = 0; r < n; ++r) out[r] = 0.0f;", ["for (int r = 0; r < n; ++r) out[r] = 0.0f;"]),
    # cas_bound: only loops that call atomicCAS
    (CAS, f"for (int t = 0; t < 1000; ++t) {{ if ({CAS_CALL} == 0u) return; }}",
     [f"for (int t = 0; t < 1; ++t) {{ if ({CAS_CALL} == 0u) return; }}",
      f"for (int t = 0; t < 0; ++t) {{ if ({CAS_CALL} == 0u) return; }}"]),
    (CAS, f"for (int t = 0; m > t; ++t) {CAS_CALL};",
     [f"for (int t = 0; 1 > t; ++t) {CAS_CALL};", f"for (int t = 0; 0 > t; ++t) {CAS_CALL};"]),
    (CAS, f"while (n < m && w[0] != 0u) {{ {CAS_CALL}; n++; }}",
     [f"while (n < 1 && w[0] != 0u) {{ {CAS_CALL}; n++; }}", f"while (n < 0 && w[0] != 0u) {{ {CAS_CALL}; n++; }}"]),
    (CAS, f"int t = 0;\ndo {{ {CAS_CALL}; }} while (++t < 64);",
     [f"int t = 0;\ndo {{ {CAS_CALL}; }} while (++t < 1);", f"int t = 0;\ndo {{ {CAS_CALL}; }} while (++t < 0);"]),
    (CAS, f"if (m > 0) {{ n = 1; }} while (n < m) {CAS_CALL};",
     [f"if (m > 0) {{ n = 1; }} while (n < 1) {CAS_CALL};", f"if (m > 0) {{ n = 1; }} while (n < 0) {CAS_CALL};"]),
    (CAS, "for (int t = 0; t < 10; ++t) atomicAdd(w, 1u);", []),
]


@pytest.mark.parametrize("operator, source, expected_replacements", CASES,
                         ids=[f"{op.value}-{i}" for i, (op, _, _) in enumerate(CASES)])
def test_operator_rewrites(operator, source, expected_replacements):
    assert rewrites(operator, source) == [kernel(body) for body in expected_replacements]


def test_every_operator_is_tabled_documented_and_tested():
    assert list(OPERATORS) == list(Operator)
    for operator, generator in OPERATORS.items():
        doc = (generator.__doc__ or "").strip()
        assert doc and "\n" not in doc, f"{operator.value}: one-line docstring"
    assert {op for op, _, expected in CASES if expected} == set(Operator)


def test_ids_are_stable_readable_and_unique():
    source = kernel("if (n >= m) return;\nout[n] = x[n] * 2.0f;")
    first, again = generate(source, "pad_x"), generate(source, "pad_x")
    assert [m.id for m in first] == [m.id for m in again] and first == again
    assert "pad_x:L3C11:relational_boundary:0" in [m.id for m in first]
    assert "pad_x:L4C9:index_off_by_one:1" in [m.id for m in first]
    assert all(re.fullmatch(r"pad_x:L\d+C\d+:[a-z_]+:\d+", m.id) for m in first)
    assert len({m.id for m in first}) == len(first)
    # an edit on another line, that adds no line, leaves the other lines' ids alone
    edited = generate(kernel("if (n >= m) return;\nout[n] = x[n + 1] * 2.0f;"), "pad_x")
    assert [m.id for m in first if m.line == 3] == [m.id for m in edited if m.line == 3]


def test_generate_lists_in_source_order_then_operator_order():
    order = list(Operator)
    for name, (cuda, _kernel) in substrates().items():
        mutants = generate(cuda, name)
        keys = [(m.start, order.index(m.operator)) for m in mutants]
        assert keys == sorted(keys), name


def _forbidden(source: str) -> list[tuple[int, int]]:
    """Offsets of comments, string and char literals, and preprocessor lines."""
    spans = [m.span() for m in re.finditer(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", source,
                                           re.S)]
    return spans + [m.span() for m in re.finditer(r"(?m)^[ \t]*#.*$", source)]


def test_nothing_is_mutated_in_comments_strings_or_preprocessor_lines():
    source = "\n".join([
        "#include <cuda_fp16.h>",
        "#define BOUND(n) ((n) + 256 - 1) / 256",
        "// if (n < m) return; out[n + 1] = x[threadIdx.x];",
        HEAD,
        "{",
        "#pragma unroll 4",
        "    /* long long i = blockIdx.x * 2; if (i >= n) return; */",
        "    const char* s = \"a[i] < b ? 1 : 2\"; char c = '+';",
        "    if (n >= m) return;  // n - 1 < m",
        "}",
        "",
    ])
    mutants = generate(source, "k")
    assert {m.line for m in mutants} == {9}  # line 8's code holds no site; only line 9's code is mutated
    for m in mutants:
        assert not any(a < m.end and m.start < b for a, b in _forbidden(source)), m.id
    assert [m.original for m in mutants] == ["if (n >= m) return;", ">=", ">="]


def test_apply_and_diff_line_word_for_word():
    cuda = substrates()["pad_const_b4"][0]
    by_id = {m.id: m for m in generate(cuda, "pad_const_b4")}
    boundary = by_id["pad_const_b4:L17C11:relational_boundary:0"]
    assert (boundary.original, boundary.replacement) == (">=", ">")
    assert boundary.description == "`>=` -> `>` in the condition of the `if` at line 17"
    assert boundary.diff_line(cuda) == "L17: -    if (o >= n_out) return;  +    if (o > n_out) return;"
    assert boundary.apply(cuda) == cuda.replace("if (o >= n_out) return;", "if (o > n_out) return;")
    ternary = by_id["pad_const_b4:L29C23:ternary_swap:0"]
    assert ternary.diff_line(cuda) == ("L29: -    out[o] = inside ? in[src] : (elem_t)fill;  "
                                       "+    out[o] = inside ? (elem_t)fill : in[src];")
    guard = by_id["pad_const_b4:L25C9:guard_deletion:0"]
    assert guard.description == "delete the guard `if (c < 0 || c >= g.in_shape[d]) inside = false;` at line 25"
    assert guard.diff_line(cuda) == "L25: -        if (c < 0 || c >= g.in_shape[d]) inside = false;  +        "
    with pytest.raises(AssertionError, match="pad_const_b4:L17C11:relational_boundary:0"):
        boundary.apply(cuda.replace("o >= n_out", "o <= n_out"))


def test_a_mutant_that_repeats_an_earlier_one_is_dropped():
    source = kernel(f"for (int t = 0; t < 1; ++t) {CAS_CALL};")
    mutants = generate(source, "k")
    at_bound = [(m.operator, m.replacement) for m in mutants if m.original == "1" and m.line == 3]
    # CONSTANT_OFF_BY_ONE makes `t < 2` and `t < 0`; CAS_BOUND's `1` is the source and its `0` a repeat
    assert at_bound == [(CONST, "2"), (CONST, "0")]
    assert len({m.apply(source) for m in mutants}) == len(mutants)


@lru_cache(maxsize=None)
def substrates() -> dict[str, tuple[str, str]]:
    """name -> (CUDA source, kernel name) of every family and example substrate."""
    found = {}
    for path in candidate_files() + candidate_files(REPO_ROOT / "examples" / "substrates"):
        for name, raw in register_candidate(import_candidate(path), Path(path)).items():
            found[name] = (raw["cuda"], raw["kernel_name"])
    return found


def _balanced(text: str) -> bool:
    code = re.sub(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", "", text, flags=re.S)
    stack = []
    for ch in code:
        if ch in "([{":
            stack.append(ch)
        elif ch in ")]}":
            if not stack or "([{"[")]}".index(ch)] != stack.pop():
                return False
    return not stack


def test_every_substrate_mutant_differs_is_balanced_and_unique():
    for name, (cuda, _kernel) in substrates().items():
        mutants = generate(cuda, name)
        assert 10 <= len(mutants) <= 150, (name, len(mutants))  # tens per substrate, not thousands
        mutated = [m.apply(cuda) for m in mutants]
        assert all(text != cuda and _balanced(text) for text in mutated), name
        assert len(set(mutated)) == len(mutated) and len({m.id for m in mutants}) == len(mutants), name
        assert all(isinstance(m, Mutant) and m.substrate == name and m.id.startswith(f"{name}:L") for m in mutants)


COMMON = {BOUNDARY, NEGATION, GUARD, ARITH, INDEX, SWAP, NARROW}
OPERATOR_SETS = {  # substrate name prefix -> the operators that apply to it
    "masked_fill_b": COMMON | {CONST, TERNARY},
    "pad_backward_const_b": COMMON | {CONST},
    "pad_backward_reflect_": COMMON | {CONST, ATOMIC, CAS},
    "pad_backward_replicate_": COMMON | {CONST, ATOMIC, CAS},
    "pad_const_b": COMMON | {CONST, TERNARY},
    "pad_reflect_b": COMMON | {CONST},
    "pad_replicate_b": COMMON | {CONST},
    "example_argmax_dim1": COMMON | {CONST},
    "example_matmul": COMMON | {CONST, CEIL, SYNC},
    "example_mse_loss": COMMON | {CONST, SYNC},
    "example_silu": COMMON,
    "example_softmax_rows": COMMON | {CONST, SYNC},
}


def test_each_substrate_gets_the_operators_that_apply_to_it():
    names = substrates()
    assert len(names) == 33
    for name, (cuda, _kernel) in names.items():
        prefix = next(p for p in OPERATOR_SETS if name.startswith(p))
        assert {m.operator for m in generate(cuda, name)} == OPERATOR_SETS[prefix], name


def test_a_sample_of_three_mutants_per_operator_compiles_with_nvrtc():
    """All 1,828 mutants of the 33 substrates compiled with NVRTC when this was written (0 compile errors), so
    the threshold is none: here the first, middle and last mutant of each operator, in id order, must compile."""
    by_operator: dict[Operator, list[tuple[str, Mutant]]] = {op: [] for op in Operator}
    for name, (cuda, _kernel) in substrates().items():
        for m in generate(cuda, name):
            by_operator[m.operator].append((m.id, m))
    failures = []
    for operator, listed in by_operator.items():
        listed.sort()
        for _id, m in {k: listed[k] for k in (0, len(listed) // 2, len(listed) - 1)}.values():
            cuda, kernel_name = substrates()[m.substrate]
            try:
                compile_cuda(m.apply(cuda), kernel_name, program_name=f"{m.substrate}.cu")
            except Exception as error:  # CompileError, quoted with its line
                failures.append(f"{m.id}: {m.diff_line(cuda)}\n{error}")
    assert not failures, "\n\n".join(failures)
