"""harness.engine.schema: many mutants in one kernel, the one that runs chosen by a __constant__.

The rewrite is faithful when each switched mutant's schema, its switch fixed at compile time, compiles to the very
code the mutant compiles to alone: checked here with NVRTC (no GPU) over two families, one with atomics.
"""

import re
from types import SimpleNamespace

import pytest

from harness.compiler.batches import batch_program, code_digests
from harness.compiler.nvrtc import compile_program
from harness.engine.compile import batches
from harness.engine.mutants import Operator, generate
from harness.engine.schema import SWITCH, UNMUTATED, schema
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
    # The deleted guard is switched, and its comparison's mutants inside it, the condition whole.
    relational = [m.id for m in mutants if m.operator is Operator.RELATIONAL_BOUNDARY][0]
    negated = [m.id for m in mutants if m.operator is Operator.RELATIONAL_NEGATION][0]
    assert (f"if ({SWITCH} == {made.switches[guard[0].id]}) {{  }} else {{ if (({SWITCH} == {made.switches[relational]} "
            f"? (i > n) : {SWITCH} == {made.switches[negated]} ? (i < n) : (i >= n))) return; }}") in made.body
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
    made = schema(SOURCE, [swap, outer, inner, crossing, mutant(5, SOURCE.index("long long i"),
                                                                SOURCE.index("long long i") + 9, Operator.NARROW_LONG_LONG)])
    assert made.left_out == ("k:1", "k:3", "k:5")
    # The swap's expression is the assignment's right side, and holds the inner index site in both its arms.
    index = f"x[({SWITCH} == 0 ? (i - 1) : (i))]"
    assert made.switches == {"k:4": 1, "k:2": 0}
    assert f"= ({SWITCH} == 1 ? ({index} / 2.0f + 1) : ({index} * 2.0f + 1));" in made.body


OPERATORS = """__device__ bool f(int a, int b) { return a > b; }
extern "C" __global__ void ops(const int* x, int* out, int n)
{
    int total = 0, scale = n * 2;
    __shared__ int tile[32 + 1];
    tile[scale % 32 + 1] = n;
    for (int k = n - 1; k >= 0 && k < n; --k) total += x[k] % 7;
    out[0] = f(x[0] + 1, n >> 1) ? total : -total;
    return;
}
"""


def test_an_operators_expression_is_the_smallest_one_around_it_or_none_in_a_declarator():
    from harness.engine.schema import _expression_around
    from harness.gate.checks.source_rules import _strip

    code = _strip(OPERATORS)[1]

    def around(token, occurrence=0):
        at = code.index("{", code.index("void ops"))  # in the kernel's body, as every mutant is
        for _ in range(occurrence + 1):
            at = code.index(token, at + 1)
        found = _expression_around(code, at, at + len(token))
        return None if found is None else code[found[0]:found[1]]

    assert around("*") == "n * 2"                       # an initializer after a comma: its own
    assert around("-") == "n - 1"                       # a for's first clause, after the declaration's `=`
    assert around(">=") == around("<") == "k >= 0 && k < n"  # the condition between the semicolons
    assert around("+=") == "total += x[k] % 7"          # a compound assignment: the whole of it
    assert around("%", 1) == around("+=")               # inside a compound assignment: the whole of it too
    assert around("+", 3) == "x[0] + 1" and around(">>") == "n >> 1"  # a call's argument
    assert around("+") is None  # a declared array's size must stay a constant
    assert around("+", 1) == "scale % 32 + 1"  # a subscript's, not a declared array's size


def test_every_operator_site_fixed_at_compile_time_is_its_mutants_own_code():
    mutants = generate(OPERATORS, "ops")
    made = schema(OPERATORS, mutants)
    by_id = {m.id: m for m in mutants}
    switched = list(made.switches)
    assert {by_id[i].operator for i in switched} >= {Operator.ARITHMETIC_SWAP, Operator.RELATIONAL_BOUNDARY,
                                                      Operator.RELATIONAL_NEGATION, Operator.TERNARY_SWAP}
    assert not [i for i in made.left_out if by_id[i].operator is Operator.ARITHMETIC_SWAP and "32 + 1" not in
                by_id[i].diff_line(OPERATORS)]  # every swap but the array size's
    specialised = _digests([made.specialised(i) for i in switched] + [made.specialised(None)], "ops")
    alone = _digests([by_id[i].apply(OPERATORS) for i in switched] + [OPERATORS], "ops")
    assert [m for m, a, b in zip(switched + ["unmutated"], specialised, alone) if a != b] == []


def test_a_schema_that_would_grow_past_its_bound_is_made_without_operator_sites(monkeypatch):
    from harness.engine import schema as schemata

    mutants = generate(OPERATORS, "ops")
    whole = schema(OPERATORS, mutants)
    assert any(m.operator is Operator.ARITHMETIC_SWAP and m.id in whole.switches for m in mutants)
    monkeypatch.setattr(schemata, "MAX_GROWTH", 1)
    small = schema(OPERATORS, mutants)
    assert not any(m.operator in schemata.OPERATOR_SITES and m.id in small.switches for m in mutants)
    assert set(small.switches) < set(whole.switches)


# ---------------------------------------------------------------- the campaign's compile with schemata


def test_a_batch_pruned_to_some_variants_keeps_their_code_and_assembles_without_the_others():
    from harness.backends import address_check
    from harness.compiler.batches import pruned_ptx, variant_index

    (entry,) = [e for e in registered_entries() if e.name == "pad_backward_reflect_f16"]
    mutants = generate(entry.cuda, entry.name)[:6]
    program = batch_program([m.apply(entry.cuda) for m in mutants], entry.kernel_name, "x.cu")
    compiled = compile_program(program.source, program.name_expressions, "compute_90")
    pruned = pruned_ptx(compiled.ptx, 6, {1, 4})
    whole, kept = code_digests(compiled.ptx, 6), code_digests(pruned, 6)
    assert [i for i in range(6) if kept[i] == whole[i]] == [1, 4]
    assert compiled.lowered_names[program.name_expressions[0]] not in pruned
    assert compiled.lowered_names[program.name_expressions[4]] in pruned and ".loc" in pruned  # line info kept
    assert variant_index(compiled.lowered_names[program.name_expressions[4]]) == 4
    assert pruned_ptx(compiled.ptx, 6, set(range(6))) is compiled.ptx  # every one kept: the batch's own cache key
    assert address_check.assemble(address_check.instrument(pruned), "sm_90")


def test_with_schemata_the_pool_compiles_each_schema_with_its_unmutated_source_and_cubins_of_the_rest():
    from types import SimpleNamespace

    from harness.engine.compile import precompile_order

    mutants = generate(SOURCE, "k")
    made = schema(SOURCE, mutants)
    plan = SimpleNamespace(name="k", source=SOURCE, kernel_name="k", mutants=mutants, to_run=[m.id for m in mutants])
    without = precompile_order([plan], 4, "compute_90", None, address_checked=True)
    order = precompile_order([plan], 4, "compute_90", None, address_checked=True, schemata=True)
    assert [t.args[0] for t in order] == [[SOURCE], [made.source()]] + [t.args[0] for t in without[1:]]
    assert order[1].first and order[1].args[6] is None  # the schema's own cubin, whole
    for task, batch in zip(order[2:], batches([m.id for m in mutants], 4)):
        assert task.args[6] == tuple(i for i, mutant_id in enumerate(batch) if mutant_id not in made.switches)
    assert all(task.args[6] is None for task in without)


def test_a_pool_task_stores_the_checked_cubin_of_the_unswitched_variants_the_worker_then_asks_for(tmp_path):
    from harness.compiler.cache import address_checked_cubin, compile_program_cached
    from harness.engine.compile import checked_cubin_ptx, precompile_batch

    mutants = generate(SOURCE, "k")[:3]
    sources = [m.apply(SOURCE) for m in mutants]
    assert precompile_batch(sources, "k", "k.cu", "compute_90", str(tmp_path), True, (0, 2))
    program = batch_program(sources, "k", "k.cu")
    compiled = compile_program_cached(program.source, program.name_expressions, "compute_90", "k.cu", tmp_path)
    stored = set(tmp_path.iterdir())
    assert address_checked_cubin(checked_cubin_ptx(compiled.ptx, 3, (0, 2)), "compute_90", tmp_path)
    assert set(tmp_path.iterdir()) == stored  # found, not assembled again
    assert address_checked_cubin(compiled.ptx, "compute_90", tmp_path)
    assert len(set(tmp_path.iterdir()) - stored) == 1  # the whole batch's was not made: it is now
    alone = tmp_path / "all switched"
    assert precompile_batch(sources, "k", "k.cu", "compute_90", str(alone), True, ())
    made = set(alone.iterdir())
    compile_program_cached(program.source, program.name_expressions, "compute_90", "k.cu", alone)
    assert set(alone.iterdir()) == made  # the batch's NVRTC compile only (its code compared): no cubin at all


def test_a_worker_loads_its_unswitched_mutants_from_the_pruned_batch_and_leaves_the_switched_ones():
    from harness.engine.compile import checked_cubin_ptx, compile_variants
    from harness.engine.worker import _unswitched_cubins

    mutants = generate(SOURCE, "k")[:4]
    batch = tuple(m.id for m in mutants)
    variants = dict(zip(batch, compile_variants([m.apply(SOURCE) for m in mutants], SimpleNamespace(kernel_name="k"),
                                                "compute_90", "k.cu")))
    switches = {batch[1]: 0, batch[3]: 1}
    made = _unswitched_cubins(variants, batch, switches)
    pruned = checked_cubin_ptx(variants[batch[0]].kernel.ptx, 4, (0, 2))
    assert made[batch[0]].kernel.ptx == made[batch[2]].kernel.ptx == pruned != variants[batch[0]].kernel.ptx
    assert made[batch[1]] is variants[batch[1]] and made[batch[3]] is variants[batch[3]]
    assert [made[i].digest for i in batch] == [variants[i].digest for i in batch]  # compared as before
    assert made[batch[0]].kernel.lowered_name in pruned and made[batch[1]].kernel.lowered_name not in pruned


def test_the_switch_is_the_symbol_the_backend_writes():
    from harness.engine.schema import switch_symbol

    made = schema(SOURCE, generate(SOURCE, "k"))
    program = batch_program([made.source()], "k", "k.cu")
    ptx = compile_program(program.source, program.name_expressions, "compute_90").ptx
    assert f".const .align 4 .u32 {switch_symbol()} = -1;" in ptx
