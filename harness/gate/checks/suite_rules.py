"""The spec's rules for a candidate's suites and probe, as pure functions of what its builders return.

- `T0_original`: exactly 5 trials with get_inputs()'s shapes and dtypes, their values either
  bit-identical to the official `get_inputs()` under `torch.manual_seed(1000 + t)` (the way
  KernelBench seeds its own evaluation) or drawn from the same distribution, as a statistical
  test per tensor shows (harness.gate.checks.distribution);
- two or three targeted suites besides it, names unique;
- every builder deterministic: the same trial built twice is the same, whatever the global RNG;
- the probe: exactly two entries of CPU tensors, each entry under 1 MB, one aligned like T0 (its
  inputs have get_inputs()'s dtypes and ranks and its largest tensor's innermost dimension is a
  multiple of 32), one misaligned (its largest tensor has a dimension > 1 that is not).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from harness.gate.checks.compare import bits
from harness.gate.checks.distribution import (SCALE_FREE_FORM_WORDS, CallSamples, drawn_once_per_call,
                                              same_distribution, scale_free_form, scale_free_test)

T0_NAME = "T0_original"
T0_TRIALS = 5
T0_SEED_BASE = 1000
TARGETED_SUITES = range(2, 4)
PROBE_ENTRIES = 2
PROBE_MAX_BYTES = 1_000_000
ALIGNMENT = 32


def official_inputs(problem, t: int) -> list:
    """get_inputs() under torch.manual_seed(1000 + t), leaving the caller's RNG state as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(T0_SEED_BASE + t)
        return list(problem.get_inputs())


def official_signature(problem, known: tuple | None = None) -> list:
    """get_inputs()'s count, dtypes and shapes, built on the meta device where its code allows; from `known` (a
    portable_signature of it, discovery's) where given.

    The probe rules need no values, and a KernelBench-sized get_inputs() is gigabytes of random
    numbers; one that reads a value (`.item()`) is built for real.
    """
    if known is not None:
        return signature_inputs(known)
    try:
        with torch.device("meta"):
            return official_inputs(problem, 0)
    except Exception:
        return official_inputs(problem, 0)


# get_inputs()'s signature as plain data, one item an input: ("tensor", dtype name, shape) or ("value", the value).
# Discovery builds it once on the meta device and hands it to the gate's workers: some ops on meta tensors (a
# comparison, say) run Python decompositions whose first call imports torch._dynamo, 1 to 2 s a process.
PORTABLE_VALUES = (bool, int, float, complex, str, type(None))


def portable_signature(inputs: list) -> tuple | None:
    """`inputs` (official_signature's) as plain data a pipe carries; None where an input is neither a tensor nor a
    plain value (the worker then builds the signature itself)."""
    items = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            items.append(("tensor", str(x.dtype).removeprefix("torch."), tuple(x.shape)))
        elif isinstance(x, PORTABLE_VALUES):
            items.append(("value", x))
        else:
            return None
    return tuple(items)


def signature_inputs(signature: tuple) -> list:
    """The inputs portable_signature() described: meta tensors of their dtypes and shapes, and the values."""
    return [torch.empty(item[2], dtype=getattr(torch, item[1]), device="meta") if item[0] == "tensor" else item[1]
            for item in signature]


def describe_input(x) -> str:
    if isinstance(x, torch.Tensor):
        return f"{str(x.dtype).removeprefix('torch.')}{list(x.shape)}"
    return f"{type(x).__name__} {x!r:.40}"


def describe_inputs(inputs: list) -> str:
    return "(" + ", ".join(describe_input(x) for x in inputs) + ")"


def suite_list_problems(suites: list) -> list[str]:
    """What is wrong with the list of (name, n_trials, builder) as a whole."""
    names = [name for name, _n, _builder in suites]
    problems = []
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        problems.append(f"suite name(s) {', '.join(repeated)} used more than once")
    t0 = [n for name, n, _builder in suites if name == T0_NAME]
    if not t0:
        problems.append(f"no {T0_NAME} suite: the spec asks for one with exactly get_inputs()'s shapes and dtypes, "
                        f"{T0_TRIALS} trials seeded {T0_SEED_BASE} + t")
    elif t0[0] != T0_TRIALS:
        problems.append(f"{T0_NAME} has {t0[0]} trial(s); the spec asks for exactly {T0_TRIALS} "
                        f"(seeds {T0_SEED_BASE}..{T0_SEED_BASE + T0_TRIALS - 1})")
    targeted = [name for name in dict.fromkeys(names) if name != T0_NAME]
    if len(targeted) not in TARGETED_SUITES:
        listed = f" ({', '.join(targeted)})" if targeted else ""
        problems.append(f"{len(targeted)} targeted suite(s) besides {T0_NAME}{listed}; the spec asks for two or three")
    return problems


# Elements compared before whole tensors: two different draws differ within them, and a whole
# comparison first copies a device tensor to the host (a 2048x8192 plus 8192x4096 T0: 192 MiB a trial).
SAME_PREFIX = 1 << 12


def _same(a, b) -> bool:
    if a is b:  # one draw given to both builds (harness.gate.shared_draws): nothing to read
        return True
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        a, b = a.detach(), b.detach()
        if a.numel() > SAME_PREFIX and a.is_contiguous() and b.is_contiguous():
            head_a, head_b = a.reshape(-1)[:SAME_PREFIX].cpu(), b.reshape(-1)[:SAME_PREFIX].cpu()
            if not torch.equal(bits(head_a), bits(head_b)):
                return False
        return torch.equal(bits(a.cpu()), bits(b.cpu()))
    return type(a) is type(b) and a == b


def first_difference(first: list, second: list) -> str:
    """'' when two builds of a trial are identical, else where they first differ."""
    if len(first) != len(second):
        return f"{len(first)} inputs, then {len(second)}"
    for i, (a, b) in enumerate(zip(first, second)):
        if not _same(a, b):
            return f"input {i} is {describe_input(a)}, then {describe_input(b)} with different contents"
    return ""


@dataclass(frozen=True)
class Undecided:
    """A T0 tensor that failed the test against get_inputs() of its trial: decided by settle_t0 once every T0 trial
    is seen, since a value get_inputs() draws once per call shows only across calls."""

    t: int
    input_index: int
    problem: str  # the rejection, should no per-call value explain the failure
    evidence: str


@dataclass(frozen=True)
class T0Match:
    """How one T0 trial stands against get_inputs() under its seed: what is wrong, and how its values matched."""

    problems: list
    how: str  # "identical", or the statistical evidence per tensor
    undecided: list = field(default_factory=list)  # Undecided, for settle_t0
    samples: dict = field(default_factory=dict)  # input index -> distribution.CallSamples, where not identical
    t: int = 0


IDENTICAL = "identical"


def t0_trial_match(t: int, built: list, official: list, identical: bool = False) -> T0Match:
    """T0 trial t against get_inputs() under torch.manual_seed(1000 + t).

    Shapes, dtypes and non-tensor values must be get_inputs()'s exactly. Tensor values are either
    bit-identical, or drawn from the same distribution (harness.gate.checks.distribution, one test per tensor).
    """
    where, seed = f"{T0_NAME} trial {t}", T0_SEED_BASE + t
    if identical:  # already compared, bit for bit, where the trial was built
        return T0Match([], IDENTICAL)
    if len(built) != len(official):
        return T0Match([f"{where} has {len(built)} inputs {describe_inputs(built)}; get_inputs() gives "
                        f"{len(official)} {describe_inputs(official)}"], "")
    problems, evidence, undecided, samples = [], [], [], {}
    for i, (mine, theirs) in enumerate(zip(built, official)):
        if isinstance(mine, torch.Tensor) and isinstance(theirs, torch.Tensor):
            if mine.dtype != theirs.dtype or mine.shape != theirs.shape:
                problems.append(f"{where} input {i} is {describe_input(mine)}; get_inputs() gives {describe_input(theirs)}")
            elif not _same(mine, theirs):
                test = same_distribution(mine, theirs)
                samples[i] = CallSamples.of(mine, theirs, failed=not test.ok)
                if test.ok:
                    evidence.append(f"trial {t} input {i}: {test.describe()}")
                else:
                    undecided.append(Undecided(t, i, (
                        f"{where} input {i} has get_inputs()'s shape and dtype but neither its values under "
                        f"torch.manual_seed({seed}) nor its distribution: {test.describe()}; build it as "
                        f"torch.manual_seed({T0_SEED_BASE} + t) followed by get_inputs()'s own calls, or draw from "
                        f"the same distribution"), f"trial {t} input {i}: {test.describe()}"))
        elif not _same(mine, theirs):
            problems.append(f"{where} input {i} is {describe_input(mine)}; get_inputs() gives {describe_input(theirs)}")
    how = "; ".join(evidence) or ("" if undecided else IDENTICAL)  # "": settle_t0 says how
    return T0Match(problems, how, undecided, samples, t)


def settle_t0(matches: list[T0Match]) -> tuple[list[str], list[str]]:
    """(problems, notes) for the T0 tensors that failed their own trial's test, once every T0 trial is seen.

    Where get_inputs()'s own calls (the official tensors of two trials) are not one distribution, it draws a value
    once per call (a scale): each failed tensor is tested again free of it (distribution.scale_free_form), against
    the same trial's official tensor. Elsewhere, and where no form frees get_inputs()'s calls of it, the failure
    stands.
    """
    problems, notes = [], []
    for index in sorted({u.input_index for m in matches for u in m.undecided}):
        samples = {m.t: m.samples[index] for m in matches if index in m.samples}
        failed = [u for m in matches for u in m.undecided if u.input_index == index]
        per_call = drawn_once_per_call(samples)
        form = scale_free_form(samples) if per_call else ""
        for u in failed:
            if not per_call:
                problems.append(u.problem)
                continue
            mine, theirs = samples[u.t].forms_candidate.get(form), samples[u.t].forms_official.get(form)
            if not form or mine is None or theirs is None or mine.numel() < 2:
                problems.append(f"{u.problem}; {per_call}, in a way the harness cannot factor out (neither "
                                f"{' nor '.join(SCALE_FREE_FORM_WORDS)} frees its calls of it): draw T0 as "
                                f"get_inputs() does under torch.manual_seed({T0_SEED_BASE} + t)")
                continue
            test = scale_free_test(mine, theirs)
            if test.ok:
                notes.append(f"trial {u.t} input {u.input_index}: {per_call}; free of it (its {form} ratios): "
                             f"{test.describe()}")
            else:
                problems.append(f"{T0_NAME} trial {u.t} input {u.input_index} is not drawn from get_inputs()'s "
                                f"distribution: {per_call}, and free of it (its {form} ratios) the "
                                f"{test.describe()}; before that, {u.evidence}")
    return problems, notes



def summarise_t0(hows: list[str]) -> str:
    """The values' match over every T0 trial, for the passed check's note."""
    if all(how == IDENTICAL for how in hows if how):
        return f"identical to get_inputs() under torch.manual_seed({T0_SEED_BASE} + t)"
    drawn = [how for how in hows if how and how != IDENTICAL]
    return ("drawn from get_inputs()'s distribution (each tensor tested against get_inputs() under its seed, "
            "false rejection at most 1e-6 per tensor): " + "; ".join(drawn))


def _largest(tensors: list) -> torch.Tensor | None:
    candidates = [x for x in tensors if isinstance(x, torch.Tensor)]
    return max(candidates, key=lambda x: x.numel(), default=None)


def _like_t0(tensors: list, official: list) -> bool:
    if len(tensors) != len(official):
        return False
    for mine, theirs in zip(tensors, official):
        if isinstance(theirs, torch.Tensor):
            if not (isinstance(mine, torch.Tensor) and mine.dtype == theirs.dtype and mine.dim() == theirs.dim()):
                return False
    return True


def is_aligned_like_t0(tensors: list, official: list) -> bool:
    largest = _largest(tensors)
    return (_like_t0(tensors, official) and largest is not None
            and (largest.dim() == 0 or largest.shape[-1] % ALIGNMENT == 0))


def is_misaligned(tensors: list) -> bool:
    largest = _largest(tensors)
    return largest is not None and any(d > 1 and d % ALIGNMENT for d in largest.shape)


def model_accepts(problem):
    """A function telling whether the official Model's forward() takes some inputs, run on the meta device (no
    values, no memory): what the probe rules ask of an entry's size is what the Model allows at the least."""
    model = None

    def accepts(inputs: list) -> bool:
        nonlocal model
        try:
            with torch.device("meta"):
                if model is None:
                    model = problem.Model(*problem.get_init_inputs())
                meta = [torch.empty(x.shape, dtype=x.dtype) if isinstance(x, torch.Tensor) else x for x in inputs]
                with torch.no_grad():
                    model(*meta)
            return True
        except Exception:
            return False

    return accepts


def _resized(tensors: list, j: int, k: int, size: int) -> list:
    """`tensors` with dimension k of input j (and of every input of the same shape, which the Model may pair with
    it) set to `size`; the values are never read."""
    target = tuple(tensors[j].shape)
    out = []
    for x in tensors:
        if isinstance(x, torch.Tensor) and tuple(x.shape) == target:
            shape = list(x.shape)
            shape[k] = size
            x = torch.empty(shape, dtype=x.dtype, device="meta")
        out.append(x)
    return out


def smaller_accepted(tensors: list, accepts, keep=lambda inputs: True) -> list | None:
    """Inputs smaller than `tensors` (one dimension cut to 1, half or one less) that the Model still accepts and
    `keep` keeps (the entry's role: the only misaligned one stays misaligned); None when it takes none of them: each
    dimension of the entry is then the least the Model allows. [] when the Model does not take `tensors` themselves
    on the meta device: nothing can be told, and the rule stands."""
    if not accepts(tensors):
        return []
    for j, x in enumerate(tensors):
        if not isinstance(x, torch.Tensor):
            continue
        for k, d in enumerate(x.shape):
            for size in sorted({1, d // 2, d - 1}):
                if 1 <= size < d and keep(candidate := _resized(tensors, j, k, size)) and accepts(candidate):
                    return candidate
    return None


def misaligned_accepted(tensors: list, accepts) -> list | None:
    """A misaligned variant of `tensors` (a dimension of its largest input, > 1, one more or one less, off the
    ALIGNMENT) that the Model accepts; None when it takes none; [] when it does not take `tensors` themselves."""
    largest = _largest(tensors)
    if largest is None or not accepts(tensors):
        return []
    j = next(i for i, x in enumerate(tensors) if x is largest)
    for k, d in enumerate(largest.shape):
        for size in (d - 1, d + 1):
            if size > 1 and size % ALIGNMENT and accepts(candidate := _resized(tensors, j, k, size)):
                return candidate
    return None


def _entry_sizes(entries: list, official: list, accepts) -> tuple[list[str], list[str]]:
    """The 1 MB rule over the probe's entries: (problems, readings), as probe_problems says."""
    problems, readings = [], []
    for i, (label, tensors) in enumerate(entries):
        size = sum(x.numel() * x.element_size() for x in tensors if isinstance(x, torch.Tensor))
        if size >= PROBE_MAX_BYTES:
            others = entries[:i] + entries[i + 1:]
            sole_misaligned = is_misaligned(tensors) and not any(is_misaligned(t) for _l, t in others)
            sole_aligned = (is_aligned_like_t0(tensors, official)
                            and not any(is_aligned_like_t0(t, official) for _l, t in others))

            def keep(inputs):
                return ((not sole_misaligned or is_misaligned(inputs))
                        and (not sole_aligned or is_aligned_like_t0(inputs, official)))

            smaller = smaller_accepted(list(tensors), accepts, keep) if accepts is not None else []
            if smaller is None:
                readings.append(f"probe entry {label!r} holds {size:,} bytes, over the spec's 1 MB, and is the least "
                                f"the official Model accepts (no dimension of {describe_inputs(tensors)} can be "
                                f"smaller): no correct candidate can meet the rule, so the least the Model accepts "
                                f"is taken in its place")
            else:
                offer = f"; the official Model accepts {describe_inputs(smaller)}" if smaller else ""
                problems.append(f"probe entry {label!r} holds {size:,} bytes; each entry must be under 1 MB "
                                f"({PROBE_MAX_BYTES:,} bytes){offer}")
    return problems, readings


def probe_problems(probe: list, official: list, accepts=None) -> tuple[list[str], list[str]]:
    """(what breaks the probe rules, the readings applied); `probe` is what probe(torch) returned, `official` is
    get_inputs(), `accepts` model_accepts' function.

    Where the official Model accepts no input that meets a rule (40_LayerNorm's normalized_shape fixes
    (64, 256, 256): 16 MiB at the least, all of it aligned), the rule is read as the least the Model allows: an
    entry over 1 MB passes if no dimension of it can be smaller, and no entry need be misaligned if the Model takes
    no misaligned variant of any. A candidate that breaks a rule needlessly is still rejected, and told what the
    Model would take.
    """
    if not isinstance(probe, (list, tuple)):
        return [f"probe(torch) returned a {type(probe).__name__}, not a list of (name, [tensors])"], []
    problems = []
    if len(probe) != PROBE_ENTRIES:
        problems.append(f"probe returns {len(probe)} entries; the spec asks for exactly {PROBE_ENTRIES}: one "
                        f"aligned like T0, one misaligned")
    entries = []
    for i, item in enumerate(probe):
        if not (isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[1], (list, tuple))):
            problems.append(f"probe entry {i} is {item!r:.60}, not (name, [tensors])")
            continue
        label, tensors = item
        entries.append((label, list(tensors)))
        for j, x in enumerate(tensors):
            if isinstance(x, torch.Tensor) and x.device.type != "cpu":
                problems.append(f"probe entry {label!r} input {j} is on {x.device}; probe tensors must be CPU tensors")
    sized_problems, readings = _entry_sizes(entries, official, accepts)
    problems += sized_problems
    shown = "; ".join(f"{label!r} is {describe_inputs(tensors)}" for label, tensors in entries)
    if entries and not any(is_aligned_like_t0(tensors, official) for _label, tensors in entries):
        problems.append(f"no probe entry is aligned like T0: get_inputs()'s dtypes and ranks "
                        f"{describe_inputs(official)}, the largest tensor's innermost dimension a multiple of "
                        f"{ALIGNMENT} ({shown})")
    if entries and not any(is_misaligned(tensors) for _label, tensors in entries):
        offers = [misaligned_accepted(tensors, accepts) for _label, tensors in entries] if accepts else [[]]
        if all(offer is None for offer in offers):
            readings.append(f"no probe entry is misaligned, and the official Model accepts no misaligned variant of "
                            f"any ({shown}): the rule is waived for this problem")
        else:
            offer = next((o for o in offers if o), None)
            problems.append(f"no probe entry is misaligned: its largest tensor needs a dimension > 1 that is not a "
                            f"multiple of {ALIGNMENT} ({shown})"
                            + (f"; the official Model accepts {describe_inputs(offer)}" if offer else ""))
    return problems, readings
