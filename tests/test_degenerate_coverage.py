"""Every family's suites cover the contract's degenerate shapes (issue 15, item 4).

The seven families (substrates/candidate_<family>.py, 28 substrates) must each have, among
their suites' trials, one of each of these (seeds/000 is the contract):

- empty_output: the kernel's output holds no element (out for the forward pads, grad_in for the
  backwards, out for masked_fill);
- extent_1_axis: an axis of extent 1 in the contract's in_shape (x, or grad_in for a backward),
  the output not empty; where the family allows a pad there (every pad family but the two
  reflect ones, whose precondition pad <= n - 1 forbids it), that axis is padded;
- rank_1 and rank_8: the contract's smallest and largest rank, the output not empty and, for
  the pad families, some axis padded (an unpadded pad is a plain copy);
- zero_pads_on_some_axes: an axis with pads (0, 0) beside an axis with a nonzero pad, the
  output not empty;
- largest_legal_width: a pad as wide as the contract allows, per family (LARGEST_WIDTH below):
  - pad_reflect, pad_backward_reflect: the precondition left <= n - 1 AND right <= n - 1 binds;
    an axis with left == right == n - 1, n >= 2, the output not empty;
  - pad_const, pad_backward_const: no pad precondition; the only bound is the contract's u32
    counts (shape_buf is buffer<u32>, n_out / n_in are u32), and the problem file adds none
    (pad_backward_const's adds left + right <= grad_out's extent, see pads_span_grad_out_axis).
    The widest legal pad takes the padded extent (out, or grad_out for the backward) to
    2**32 - 1 on an axis, both pads of it nonzero; with n_out <= 2**32 - 1 that is only possible
    within the trial budget where another axis makes the output empty, and so it is;
  - pad_replicate: no pad precondition either, but the official reference
    (problems/pad_replicate_bN.py) gathers through an int64 index of every output position of
    each axis, 32 GiB for an extent of 2**32 - 1 even when the output is empty, so no trial can
    reach the u32 bound; what is covered instead is a pad far past reflect's n - 1: both pads of
    an axis at least WIDE_FACTOR times its extent, the output not empty;
  - pad_backward_replicate: no pad precondition, but the contract's CAS loop gives up after
    1000 tries, so the suites bound the contributions per CAS word (the candidate's
    MAX_CONTENTION, 2 slots to a word for 16-bit dtypes); the widest pad is one that sends that
    many contributions to one grad_in slot.
- masked_fill has no pads: zero_pads_on_some_axes and largest_legal_width do not apply (see
  NOT_APPLICABLE); its rank is "any", so rank 8 is covered as the pad families' largest and
  rank 0 is there too.

COVERAGE lists, per family, the trial (suite, t) that covers each property; the tests build
every trial of every suite on the CPU (as the gate's builders are called) and check that the
listed trial has the property for every substrate of the family, that it is small, that the
official reference accepts it with the output shape worked out here, and that no trial of any
suite is outside the contract (rank, u32 counts, pad preconditions).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import prod

import pytest
import torch

from harness.candidates import call_builder, candidate_files, import_candidate
from harness.problems import load_problem
from tests.conftest import registered_entries

PROPERTIES = ("empty_output", "extent_1_axis", "rank_1", "rank_8", "zero_pads_on_some_axes", "largest_legal_width")
U32_MAX = 2**32 - 1
MAX_RANK = 8
WIDE_FACTOR = 64
TRIAL_BYTES = 1 << 20  # a covering trial's inputs and output stay under this

# family -> property -> (suite, trial) that covers it, for every substrate of the family.
# The shapes (x, or grad_in for a backward) and pads, axis 0 first, are in the comments.
COVERAGE = {
    "pad_const": {
        "empty_output": ("wide_pads", 4),            # x (5, 0, 3), pads [[2, 1], [0, 0], [4, 4]] -> out (8, 0, 11)
        "extent_1_axis": ("wide_pads", 1),           # x (1, 1, 1, 1, 1), pads [[2, 3], [1, 0], [0, 1], [4, 4], [255, 257]]
        "rank_1": ("wide_pads", 3),                  # x (7,), pads [[700, 1301]]
        "rank_8": ("wide_pads", 6),                  # x (2, 1, 3, 1, 2, 1, 1, 2), axis 2 (0, 0)
        "zero_pads_on_some_axes": ("misaligned", 2),  # x (27, 69, 7), pads [[0, 5], [1, 2], [0, 0]]
        "largest_legal_width": ("wide_pads", 5),     # x (2, 0, 3), pads [[1, 1], [0, 0], [2**31 - 1, 2**31 - 3]]
                                                     # -> out (4, 0, 2**32 - 1)
    },
    "pad_reflect": {
        "empty_output": ("reflect_limit", 4),        # x (3, 0, 4), pads [[2, 2], [0, 0], [3, 3]] -> out (7, 0, 10)
        "extent_1_axis": ("reflect_limit", 1),       # x (2, 3, 1, 2, 3, 2, 1, 2), the extent-1 axes (0, 0)
        "rank_1": ("reflect_limit", 0),              # x (4099,), pads [[4098, 4098]]
        "rank_8": ("reflect_limit", 1),              # x (2, 3, 1, 2, 3, 2, 1, 2), pads n - 1 or 0
        "zero_pads_on_some_axes": ("misaligned", 2),  # x (21, 61, 11), pads [[20, 20], [7, 4], [0, 0]]
        "largest_legal_width": ("reflect_limit", 0),  # x (4099,), pads [[4098, 4098]]: n - 1 both sides
    },
    "pad_replicate": {
        "empty_output": ("wide_pads", 4),            # x (4, 0, 5), pads [[1, 1], [0, 0], [0, 7]] -> out (6, 0, 12)
        "extent_1_axis": ("wide_pads", 1),           # x (1, 1, 1, 1, 1), pads [[2, 3], [1, 0], [0, 1], [4, 4], [255, 257]]
        "rank_1": ("wide_pads", 2),                  # x (3,), pads [[1000, 2001]]
        "rank_8": ("wide_pads", 5),                  # x (2, 1, 3, 1, 2, 1, 1, 2), axis 2 (0, 0)
        "zero_pads_on_some_axes": ("misaligned", 2),  # x (21, 61, 11), pads [[2, 7], [7, 4], [0, 0]]
        "largest_legal_width": ("wide_pads", 2),     # x (3,), pads [[1000, 2001]]: >= 64 x the extent
    },
    "pad_backward_const": {
        "empty_output": ("edge_pads", 0),            # grad_in (4, 0, 5), pads [[1, 1], [3, 2], [0, 7]], grad_out (6, 5, 12)
        "extent_1_axis": ("edge_pads", 1),           # grad_in (1, 1, 1), pads [[2, 2], [0, 6], [1, 1]]
        "rank_1": ("edge_pads", 2),                  # grad_in (1,), pads [[0, 3]]
        "rank_8": ("edge_pads", 10),                 # grad_in (2, 1, 3, 1, 2, 1, 1, 2), axis 2 (0, 0)
        "zero_pads_on_some_axes": ("edge_pads", 6),  # grad_in (4, 9, 1), pads [[0, 0], [0, 0], [16, 16]]
        "largest_legal_width": ("edge_pads", 9),     # grad_in (2, 0, 3), pads [[1, 1], [0, 0], [2**31 - 1, 2**31 - 3]],
                                                     # grad_out (4, 0, 2**32 - 1)
        "pads_span_grad_out_axis": ("edge_pads", 0),  # axis 1: pads (3, 2) take all 5 of grad_out's extent
    },
    "pad_backward_reflect": {
        "empty_output": ("misaligned", 8),           # grad_in (3, 0, 5), pads [[2, 2], [0, 0], [4, 4]]
        "extent_1_axis": ("heavy_overlap", 3),       # grad_in (1, 7, 2, 6), pads [[0, 0], [6, 0], [1, 1], [0, 5]]
        "rank_1": ("heavy_overlap", 1),              # grad_in (1001,), pads [[1000, 1000]]
        "rank_8": ("misaligned", 7),                 # grad_in (3, 1, 3, 1, 5, 3, 3, 3)
        "zero_pads_on_some_axes": ("heavy_overlap", 3),  # grad_in (1, 7, 2, 6), pads [[0, 0], [6, 0], [1, 1], [0, 5]]
        "largest_legal_width": ("heavy_overlap", 1),  # grad_in (1001,), pads [[1000, 1000]]: n - 1 both sides
    },
    "pad_backward_replicate": {
        "empty_output": ("misaligned", 8),           # grad_in (3, 0, 5), pads [[2, 7], [0, 0], [9, 4]]
        "extent_1_axis": ("heavy_overlap", 1),       # grad_in (2, 1, 3), pads [[3, 4], [2, 3], [5, 6]]
        "rank_1": ("heavy_overlap", 0),              # grad_in (1,), pads [[240, 239]] ([[120, 119]] for 16-bit)
        "rank_8": ("misaligned", 7),                 # grad_in (3, 1, 3, 1, 5, 3, 3, 3)
        "zero_pads_on_some_axes": ("heavy_overlap", 5),  # grad_in (33, 3), pads [[0, 0], [7, 6]]
        "largest_legal_width": ("heavy_overlap", 0),  # grad_in (1,): all MAX_CONTENTION // lanes onto one slot
    },
    "masked_fill": {
        "empty_output": ("misaligned", 8),           # x (4, 0, 5)
        "extent_1_axis": ("misaligned", 1),          # x (1,)
        "rank_1": ("misaligned", 3),                 # x (5,)
        "rank_8": ("misaligned", 7),                 # x (2, 3, 1, 5, 7, 3, 1, 9)
    },
}

NOT_APPLICABLE = {
    "masked_fill": {
        "zero_pads_on_some_axes": "masked_fill is elementwise (out[i] = mask[i] ? fill : x[i]) and takes no pads",
        "largest_legal_width": "masked_fill takes no pads, so there is no pad width to bound",
    },
}

REFLECT = ("pad_reflect", "pad_backward_reflect")
BACKWARD = ("pad_backward_const", "pad_backward_reflect", "pad_backward_replicate")


@dataclass(frozen=True)
class Trial:
    """One built trial in the contract's terms."""

    where: str                 # "suite trial t"
    in_shape: tuple            # the contract's in_shape: x, or grad_in for a backward
    padded: tuple              # the contract's out_shape: out, or grad_out for a backward (masked_fill: x's shape)
    rows: tuple | None         # ((left, right), ...) axis 0 first; None for masked_fill
    result: tuple              # the shape of what the kernel writes
    nbytes: int                # the inputs' bytes and the output's
    lanes: int                 # slots per CAS word (2 for a 16-bit dtype)
    inputs: tuple

    @property
    def nonempty(self) -> bool:
        return prod(self.result) > 0

    @property
    def padded_somewhere(self) -> bool:
        return any(left or right for left, right in self.rows or ())

    def axes(self):
        return zip(self.in_shape, self.padded, self.rows or ())


def _describe(family: str, where: str, inputs: list) -> Trial:
    first = inputs[0]
    nbytes = sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor))
    if family == "masked_fill":
        shape = tuple(first.shape)
        return Trial(where, shape, shape, None, shape, nbytes + first.numel() * first.element_size(), 1, tuple(inputs))
    rows = tuple((int(left), int(right)) for left, right in inputs[1].tolist())
    if family in BACKWARD:
        padded = tuple(first.shape)
        in_shape = tuple(m - left - right for m, (left, right) in zip(padded, rows))
        result = in_shape
    else:
        in_shape = tuple(first.shape)
        padded = tuple(n + left + right for n, (left, right) in zip(in_shape, rows))
        result = padded
    nbytes += prod(result) * first.element_size()
    return Trial(where, in_shape, padded, rows, result, nbytes, 2 if first.element_size() == 2 else 1, tuple(inputs))


def _family(entry) -> str:
    return entry.file.stem.removeprefix("candidate_")


ENTRIES = registered_entries()
FAMILIES = sorted({_family(entry) for entry in ENTRIES})


@lru_cache(maxsize=None)
def _module(family: str):
    path = next(p for p in candidate_files() if p.stem == f"candidate_{family}")
    return import_candidate(path)


@lru_cache(maxsize=None)
def built(name: str) -> dict:
    """(suite, t) -> Trial for every trial of every suite of the substrate, built on the CPU."""
    entry = next(e for e in ENTRIES if e.name == name)
    family = _family(entry)
    trials = {}
    for suite, n_trials, builder in entry.suites():
        for t in range(n_trials):
            inputs = call_builder(builder, t, torch.device("cpu"))
            trials[(suite, t)] = _describe(family, f"{suite} trial {t}", inputs)
    return trials


# ---------------------------------------------------------------------------- the properties


def _most_replicate_contributions(trial: Trial) -> int:
    """The most grad_out elements one grad_in slot receives under the replicate (edge-clamp) map."""
    most = 1
    for n, (left, right) in zip(trial.in_shape, trial.rows):
        most *= 0 if n == 0 else left + right + 1 if n == 1 else max(left, right) + 1
    return most


def largest_legal_width(family: str, trial: Trial) -> bool:
    if family in REFLECT:
        return trial.nonempty and any(n >= 2 and left == right == n - 1 for n, _m, (left, right) in trial.axes())
    if family in ("pad_const", "pad_backward_const"):
        return any(m == U32_MAX and left > 0 and right > 0 for _n, m, (left, right) in trial.axes())
    if family == "pad_replicate":
        return trial.nonempty and any(n >= 1 and min(left, right) >= WIDE_FACTOR * n
                                      for n, _m, (left, right) in trial.axes())
    if family == "pad_backward_replicate":
        bound = _module(family).MAX_CONTENTION // trial.lanes
        return trial.nonempty and _most_replicate_contributions(trial) == bound
    return False


def has_property(family: str, prop: str, trial: Trial) -> bool:
    pads = family != "masked_fill"
    if prop == "empty_output":
        return not trial.nonempty
    if prop == "extent_1_axis":
        if not trial.nonempty or 1 not in trial.in_shape:
            return False
        if not pads or family in REFLECT:  # reflect: a pad on an extent-1 axis breaks pad <= n - 1
            return True
        return any(n == 1 and (left or right) for n, _m, (left, right) in trial.axes())
    if prop in ("rank_1", "rank_8"):
        rank = 1 if prop == "rank_1" else MAX_RANK
        return trial.nonempty and len(trial.in_shape) == rank and (not pads or trial.padded_somewhere)
    if prop == "zero_pads_on_some_axes":
        return (pads and trial.nonempty and trial.padded_somewhere
                and any(left == right == 0 for left, right in trial.rows))
    if prop == "largest_legal_width":
        return largest_legal_width(family, trial)
    if prop == "pads_span_grad_out_axis":  # pad_backward_const: left + right == grad_out's extent, all cropped
        return any(left > 0 and right > 0 and left + right == m for _n, m, (left, right) in trial.axes())
    raise KeyError(prop)


# ---------------------------------------------------------------------------- the contract


def contract_problems(family: str, trial: Trial) -> list[str]:
    """What about the trial is outside the contract (seeds/000) or its problem file."""
    problems = []
    if prod(trial.padded) > U32_MAX or prod(trial.in_shape) > U32_MAX:
        problems.append(f"element count over the u32 n_out / n_in ({prod(trial.padded)}, {prod(trial.in_shape)})")
    if family == "masked_fill":
        x, mask, value = trial.inputs
        if mask.dtype != torch.bool or mask.shape != x.shape or value.dim() != 0 or value.dtype != x.dtype:
            problems.append(f"mask {mask.dtype} {tuple(mask.shape)}, value {value.dtype} {tuple(value.shape)} "
                            f"for x {x.dtype} {tuple(x.shape)}")
        return problems
    if not 1 <= len(trial.in_shape) <= MAX_RANK:
        problems.append(f"rank {len(trial.in_shape)} outside 1..{MAX_RANK}")
    if trial.inputs[1].dtype != torch.int64 or tuple(trial.inputs[1].shape) != (len(trial.in_shape), 2):
        problems.append(f"pads {trial.inputs[1].dtype} {tuple(trial.inputs[1].shape)}, not int64 (rank, 2)")
    for axis, (n, m, (left, right)) in enumerate(trial.axes()):
        if left < 0 or right < 0:
            problems.append(f"axis {axis}: negative pad ({left}, {right})")
        if n < 0:
            problems.append(f"axis {axis}: pads ({left}, {right}) exceed grad_out's extent {m}")
        if max(n, m) > U32_MAX:
            problems.append(f"axis {axis}: extent {max(n, m)} does not fit a u32 shape_buf entry")
        # Zero pads on an empty axis read nothing; the problem files allow them (reflect: 0 <= n - 1
        # is read as "no index leaves the input", the only reading under which an output can be empty).
        if family in REFLECT and (left or right) and max(left, right) > n - 1:
            problems.append(f"axis {axis}: reflect pads ({left}, {right}) exceed n - 1 = {n - 1}")
        if family in ("pad_replicate", "pad_backward_replicate") and n == 0 and (left or right):
            problems.append(f"axis {axis}: replicate pads ({left}, {right}) on an empty axis (no edge element)")
    return problems


# ---------------------------------------------------------------------------- the tests


def _substrates(family: str) -> list[str]:
    return [e.name for e in ENTRIES if _family(e) == family]


def test_every_family_is_listed():
    assert FAMILIES == sorted(COVERAGE), f"families {FAMILIES}, coverage table for {sorted(COVERAGE)}"
    assert len(ENTRIES) == 28 and all(len(_substrates(f)) == 4 for f in FAMILIES)


@pytest.mark.parametrize("family", sorted(COVERAGE))
def test_the_table_answers_every_property(family):
    listed = set(COVERAGE[family])
    excused = set(NOT_APPLICABLE.get(family, {}))
    missing = [p for p in PROPERTIES if p not in listed | excused]
    assert not missing, f"{family}: no trial listed for {', '.join(missing)}"
    both = sorted(listed & excused)
    assert not both, f"{family}: {', '.join(both)} both listed and excused"
    for prop, (suite, t) in COVERAGE[family].items():
        assert suite != "T0_original", f"{family} {prop}: T0_original is get_inputs()'s shapes, not a targeted trial"


def _covering(family, prop, trials) -> str:
    hits = [trial.where for trial in trials.values() if has_property(family, prop, trial)]
    return ", ".join(hits) if hits else "no trial"


@pytest.mark.parametrize("family", sorted(COVERAGE))
def test_each_listed_trial_covers_its_property(family):
    failures = []
    for name in _substrates(family):
        trials = built(name)
        for prop, (suite, t) in COVERAGE[family].items():
            trial = trials.get((suite, t))
            if trial is None:
                failures.append(f"{family} ({name}) {prop}: no {suite} trial {t} (suites: "
                                f"{sorted({s for s, _t in trials})})")
            elif not has_property(family, prop, trial):
                failures.append(f"{family} ({name}) {prop}: {trial.where} no longer covers it "
                                f"(in_shape {trial.in_shape}, pads {trial.rows}, output {trial.result}); "
                                f"trials that do: {_covering(family, prop, trials)}")
            elif trial.nbytes >= TRIAL_BYTES:
                failures.append(f"{family} ({name}) {prop}: {trial.where} has {trial.nbytes} bytes of inputs and "
                                f"output, not under {TRIAL_BYTES}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("family", sorted(COVERAGE))
def test_the_official_reference_takes_each_listed_trial_with_that_output_shape(family):
    """The property is decided from the shapes worked out here; the official Model must agree."""
    failures = []
    for name in _substrates(family):
        entry = next(e for e in ENTRIES if e.name == name)
        model = load_problem(entry.kb_file).build_model("cpu")
        trials = built(name)
        for prop, (suite, t) in COVERAGE[family].items():
            trial = trials[(suite, t)]
            out = model(*[x.clone() for x in trial.inputs])
            if tuple(out.shape) != trial.result:
                failures.append(f"{family} ({name}) {prop}: {trial.where}: the official output is "
                                f"{tuple(out.shape)}, not {trial.result}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("family", sorted(COVERAGE))
def test_no_trial_is_outside_the_contract(family):
    failures = []
    for name in _substrates(family):
        for trial in built(name).values():
            failures += [f"{family} ({name}) {trial.where}: {p}" for p in contract_problems(family, trial)]
    assert not failures, "\n".join(failures)


if __name__ == "__main__":  # python -m tests.test_degenerate_coverage: every covering trial, per family
    for family in sorted(COVERAGE):
        trials = built(_substrates(family)[0])
        print(family)
        for prop in (*PROPERTIES, *[p for p in COVERAGE[family] if p not in PROPERTIES]):
            if prop in NOT_APPLICABLE.get(family, {}):
                print(f"  {prop}: not applicable: {NOT_APPLICABLE[family][prop]}")
                continue
            suite, t = COVERAGE[family].get(prop, ("-", "-"))
            trial = trials.get((suite, t))
            shown = f"in_shape {trial.in_shape} pads {trial.rows} -> {trial.result}" if trial else "not listed"
            print(f"  {prop}: {suite} trial {t}: {shown}")
            print(f"    (also: {_covering(family, prop, trials)})")
