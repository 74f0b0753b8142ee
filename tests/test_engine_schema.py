"""harness.engine.schema: many mutants in one kernel, the one that runs chosen by a __constant__.

The rewrite is faithful when each switched mutant's schema, its switch fixed at compile time, compiles to the very
code the mutant compiles to alone: checked here with NVRTC (no GPU) over two families, one with atomics.
"""

import re

import pytest

from harness.batches import batch_program, code_digests
from harness.engine.compile import batches
from harness.engine.mutants import Operator, generate
from harness.engine.schema import SWITCH, UNMUTATED, schema
from harness.nvrtc import compile_program
from tests.conftest import registered_entries

SOURCE = """extern "C" __global__ void k(const float* x, float* out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = x[i] * 2.0f + 1;
}
"""


def _digests(sources: list[str], kernel_name: str) -> list[str]:
    found = []
    for batch in batches(list(range(len(sources))), 32):
        program = batch_program([sources[i] for i in batch], kernel_name, "schema.cu")
        found += code_digests(compile_program(program.source, program.name_expressions, "compute_90").ptx, len(batch))
    return found


@pytest.mark.parametrize("name", ["pad_const_b4", "pad_backward_const_b4"])
def test_each_switched_mutant_fixed_at_compile_time_is_the_mutants_own_code(name):
    (entry,) = [e for e in registered_entries() if e.name == name]
    mutants = generate(entry.cuda, entry.name)
    made = schema(entry.cuda, mutants)
    by_id = {m.id: m for m in mutants}
    switched = list(made.switches)
    assert len(switched) >= 20 and {by_id[i].operator for i in switched} >= {
        Operator.CONSTANT_OFF_BY_ONE, Operator.INDEX_OFF_BY_ONE, Operator.GUARD_DELETION}
    assert sorted(made.switches.values()) == list(range(len(switched)))
    assert set(switched) | set(made.left_out) == set(by_id) and not set(switched) & set(made.left_out)
    specialised = _digests([made.specialised(i) for i in switched] + [made.specialised(None)], entry.kernel_name)
    alone = _digests([by_id[i].apply(entry.cuda) for i in switched] + [entry.cuda], entry.kernel_name)
    assert [m for m, a, b in zip(switched + ["unmutated"], specialised, alone) if a != b] == []
    # The schema itself compiles, its switch a constant the host writes.
    program = batch_program([made.source()], entry.kernel_name, "schema.cu")
    ptx = compile_program(program.source, program.name_expressions, "compute_90").ptx
    assert re.search(rf"\.const .*{SWITCH}", ptx)


def test_a_guards_inner_sites_are_switched_inside_it_and_an_expressions_inner_site_replaces_it():
    mutants = generate(SOURCE, "k")
    made = schema(SOURCE, mutants)
    guard = [m for m in mutants if m.operator is Operator.GUARD_DELETION]
    assert guard and guard[0].id in made.switches
    # The guard's own comparison's mutants are not switched (relational ones are not), the deleted guard is; and
    # a constant inside the statement that holds it is switched as well.
    assert f"if ({SWITCH} == {made.switches[guard[0].id]}) {{  }} else {{ if (i >= n) return; }}" in made.body
    constants = [m for m in mutants if m.operator is Operator.CONSTANT_OFF_BY_ONE]
    assert constants and all(m.id in made.switches for m in constants)
    assert "+ (" in made.body and f"{SWITCH} == " in made.body
    assert made.specialised(None).startswith(f"#define {SWITCH} ({UNMUTATED})\n")


def test_overlapping_and_unswitchable_mutants_are_left_out_in_order():
    from harness.engine.mutants import Mutant

    def mutant(n, start, end, operator, replacement="0"):
        return Mutant(f"k:{n}", "k", operator, 1, start + 1, start, end, SOURCE[start:end], replacement, "")

    at = SOURCE.index("x[i]")
    outer = mutant(1, at, at + 4, Operator.INDEX_OFF_BY_ONE, "x[i + 1]")      # holds the next one
    inner = mutant(2, at + 2, at + 3, Operator.INDEX_OFF_BY_ONE, "i - 1")
    crossing = mutant(3, at + 3, at + 8, Operator.CONSTANT_OFF_BY_ONE)          # starts inside, ends outside
    swap = mutant(4, SOURCE.index("* 2.0f"), SOURCE.index("* 2.0f") + 1, Operator.ARITHMETIC_SWAP, "/")
    made = schema(SOURCE, [swap, outer, inner, crossing])
    assert made.left_out == ("k:4", "k:1", "k:3")
    assert made.switches == {"k:2": 0}
    assert f"x[({SWITCH} == 0 ? (i - 1) : (i))]" in made.body
