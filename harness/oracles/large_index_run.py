"""The program of the large-index oracle: one substrate's unmutated kernel, then its survivors, on its large trials.

`python -m harness.oracles.large_index_run PLAN.json EVENTS.jsonl`; a campaign runs it in a worker forked from the
fork server (`run_in_worker`), a new one in milliseconds after a kernel that ends one. The plan's trials ([source,
axis, size] each, numbered from plan["first_trial"]) are built in turn, each freed before the next. A trial is T0's
trial 0 (or, with source LOWEST_RANK, the suites' trial of the lowest rank below T0's) tiled along its axis (every
input of the first input's shape alike, so a mask stays aligned; pads and scalars unchanged), the least number of
times that takes the input and the output both past `min_elements` elements, or (size LARGEST) cut along axis 0 to
the longest the counts allow: the same values, the same pads, so within every precondition the original meets, and
indices past 2^31 (the contract's counts are u32: no trial passes 2^32 - 1). The official Model's output is made
once a trial (the tiling is done on the device; a device without the memory for it makes the program say `skipped`
with the bytes; beside other processes, plan["memory_lock"], it builds the trial in its turn at the device's memory,
taken once there is room, waited for up to plan["memory_wait"] seconds, saying `waiting`: harness.oracles.memory_turns);
then each kernel runs once and is compared as the gate compares, its out poisoned as the gate poisons one. Events,
each with its trial's number: `trial` (its shapes), then per kernel a `start` (the parent's clock: a mutant running
far past the unmutated kernel is killed as hung) and a `result`, the unmutated source first, then `done`. A trial
the unmutated kernel fails judges nothing, and a survivor killed on one is not run on the next. A kernel that
faults, or changes an input or the official output (there are no guard bands at this size), is killed; where the
fault poisoned the context or the trial was written into, it ends the process, and the parent starts another on that
trial for the kernels after it (plan["judged"]: those judged on it already). Address-checked
(plan["check_addresses"], on cuda) or on the CPU shim, a fault that wrote nothing first leaves the process to judge
the next kernel on the same trial.
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from harness.gate.phases import PhaseClock
from harness.oracles.memory_turns import BACKFILL_SECONDS, turn_with_room

LOST_EXIT = 3
LOWEST_RANK = "lowest-rank"  # plan["source"]: the suites' lowest-rank trial, not T0 trial 0
LARGEST = "largest"  # plan["size"]: axis 0 as long as the u32 counts allow (else: the least past min_elements)


MAX_ELEMENTS = 2**32 - 1  # the contract's counts are u32
# Where a trial's build time goes (its `trial` event's parts): the small trial it tiles (the suites' lowest-rank one
# is found by building every suite's trials, once a process), the official Model untiled and on a 64th of the
# trial (its memory foreseen), the wait for this process's turn at the device's memory and then for room, the
# tiling, the official output (with the tiling's device time: both are waited for after the turn); the rest of the
# event's seconds is the process's start or the last trial's end.
SOURCE = "the trial it tiles"
MODEL_SMALL, MODEL_PROBE = "the Model untiled", "the Model's memory probe"
TURN, ROOM = "waiting for a turn at the memory", "waiting for room"
TILING, MODEL_LARGE = "tiling", "the official output"
BUILD_PARTS = (SOURCE, MODEL_SMALL, MODEL_PROBE, TURN, ROOM, TILING, MODEL_LARGE)


def _tiled_elements(main_shape, output_shape, factor: int, axis: int) -> tuple[int, int]:
    """(first input, output) element counts once the trial is tiled `factor` times along `axis`.

    The output is taken to grow along the same axis by the same rows (a pad adds to, or takes from, an axis
    the same count whatever its extent; an elementwise op keeps it; a reduction keeps axis 0). An output that
    cannot be told so (a scalar; another rank, tiled along another axis than 0) is not counted (-1)."""
    main = [int(e) for e in main_shape]
    numel_in = 1
    for extent in main:
        numel_in *= extent
    if not output_shape or (axis != 0 and len(output_shape) != len(main)):
        return factor * numel_in, -1
    out = [int(e) for e in output_shape]
    rest = 1
    for d, extent in enumerate(out):
        rest *= 1 if d == axis % len(out) else extent
    a = main[axis]
    return factor * numel_in, (factor * a + out[axis] - a) * rest


def tile_factor(inputs: list, output_shape, min_elements: int, axis: int = 0,
                max_elements: int = MAX_ELEMENTS) -> int | None:
    """The least factor that tiles T0 trial 0 (`inputs`, its official output of `output_shape`) along `axis`
    so that its first input and its output both have more than `min_elements` elements; where that takes one
    past the contract's u32 counts (a pad that triples an axis), the least that takes either past; None when
    no factor does (an input too large already, an empty one)."""
    numel_in, _ = _tiled_elements(inputs[0].shape, output_shape, 1, axis)
    if numel_in == 0 or inputs[0].dim() == 0:
        return None

    def least(count) -> int | None:  # the least factor past min_elements of count(factor), linear in it
        first, second = count(1), count(2)
        if first > min_elements:
            return 1
        step = second - first
        return None if step <= 0 else 1 + (min_elements - first) // step + 1

    def within(factor) -> bool:
        return factor is not None and max(_tiled_elements(inputs[0].shape, output_shape, factor, axis)) <= max_elements

    by_input = least(lambda f: _tiled_elements(inputs[0].shape, output_shape, f, axis)[0])
    if _tiled_elements(inputs[0].shape, output_shape, 1, axis)[1] == -1:
        return by_input if within(by_input) else None
    by_output = least(lambda f: _tiled_elements(inputs[0].shape, output_shape, f, axis)[1])
    candidates = [f for f in (by_input, by_output) if f is not None]
    both = max(candidates) if len(candidates) == 2 else None
    if within(both):
        return both
    either = [f for f in candidates if within(f)]
    return min(either) if either else None


def tiled(inputs: list, factor: int, device, torch, axis: int = 0) -> list:
    """Every input of the first input's shape repeated `factor` times along `axis`, on `device`."""
    shape = inputs[0].shape

    def repeat(x):
        times = [1] * x.dim()
        times[axis] = factor
        return x.to(device).repeat(*times)

    return [repeat(x) if isinstance(x, torch.Tensor) and x.shape == shape
            else (x.to(device) if isinstance(x, torch.Tensor) else x) for x in inputs]


def needed_bytes(inputs: list, output_shape, output_dtype, factor: int, axis: int = 0,
                 model_bytes: int | None = None) -> int:
    """The device memory the trial takes: its inputs, and its output three times over (the official one,
    a kernel's, the comparison's chunks and the Model's own temporaries, roughly). `model_bytes`: the
    official Model's own peak at the tiled size (`model_peak_at`), held beside the inputs while the
    official output is built: a Model whose temporaries outweigh its output (an int64 index per element,
    4x a float output) is counted as it is."""
    main = inputs[0]
    in_bytes = sum(x.numel() * x.element_size() * (factor if x.shape == main.shape else 1)
                   for x in inputs if hasattr(x, "shape"))
    _in, out_elements = _tiled_elements(main.shape, output_shape, factor, axis)
    if out_elements < 0:  # not told: at most the untiled output `factor` times over
        out_elements = factor * _tiled_elements(output_shape, output_shape, 1, 0)[0] if output_shape else 1
    out_bytes = out_elements * output_dtype.itemsize
    building = in_bytes + model_bytes if model_bytes else 0
    return max(in_bytes + 3 * out_bytes, building)


def model_peak_at(factor: float, peak_untiled: int, peak_probe: int, probe: int) -> int:
    """The Model's peak at `factor` times the untiled trial, on the line through its peaks measured untiled
    and at `probe` times. One point scaled would not do: reflect pad's Model gathers through one short map
    per axis, so tiled along axis 0 of a rank-4 trial its peak hardly grows (the untiled peak scaled 1822x
    asked 159.9 GiB for a trial that had been built on 139), while on a rank-1 trial its one map is an
    int64 per element; only what grew between the two sizes is taken to grow on."""
    growth = max(0, peak_probe - peak_untiled) / max(1, probe - 1)
    return int(peak_untiled + growth * max(0.0, factor - 1))


def _model_peak(model, inputs: list, torch, again: bool = True) -> tuple:
    """The Model's output on `inputs` (on the device already), and the device memory it took at its peak
    beyond what was held before (None off a CUDA device). With `again`, measured on a second run: what a
    first run allocates once and keeps (a cuBLAS workspace) does not grow with the trial."""
    on_cuda = any(isinstance(x, torch.Tensor) and x.is_cuda for x in inputs)
    if again or not on_cuda:
        out = model(*inputs)
        if not on_cuda:
            return out, None
        del out
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out = model(*inputs)
    torch.cuda.synchronize()
    return out, torch.cuda.max_memory_allocated() - before


def _model_bytes(model, small: list, factor: float, device, axis: int, torch, peak_untiled) -> int | None:
    """The Model's peak at `factor` times `small`, from its peaks untiled and tiled a 64th of the way (at
    least twice): far enough that what does not grow (the caching allocator's rounding, short per-axis
    maps) is told from what does, near enough to cost a fraction of the trial."""
    if peak_untiled is None:
        return None
    probe = max(2, int(factor) // 64)
    with torch.no_grad():
        probe_inputs = tiled(small, probe, device, torch, axis)
        probe_out, peak_probe = _model_peak(model, probe_inputs, torch, again=False)
    del probe_out, probe_inputs
    return model_peak_at(factor, peak_untiled, peak_probe, probe)


def largest_length(main_shape, output_shape, max_elements: int = MAX_ELEMENTS) -> int:
    """The longest axis 0 a trial of these shapes can be given (its other axes kept) with no tensor past the
    contract's 2^32 - 1 elements; the output's axis 0 grows with it as `_tiled_elements` takes it to."""
    main = [int(e) for e in main_shape]
    per_row_in = 1
    for extent in main[1:]:
        per_row_in *= extent
    length = max_elements // max(1, per_row_in)
    if output_shape:
        out = [int(e) for e in output_shape]
        per_row_out = 1
        for extent in out[1:]:
            per_row_out *= extent
        length = min(length, max_elements // max(1, per_row_out) - (out[0] - main[0]))
    return length


def cut(inputs: list, length: int, torch) -> list:
    """Every input of the first input's shape cut along axis 0 to `length` (a mask stays aligned)."""
    shape = inputs[0].shape
    return [x[:length] if isinstance(x, torch.Tensor) and x.shape == shape else x for x in inputs]


def _rank(inputs: list, torch) -> int | None:
    return inputs[0].dim() if inputs and isinstance(inputs[0], torch.Tensor) else None


def lowest_rank_trial(entry, t0: list, torch, below_t0: bool = True, found: dict | None = None
                      ) -> tuple[list | None, str]:
    """The suites' trial of the lowest rank below T0's (the most elements among those), and where it comes from;
    or None and why there is none. Tiled along its axis 0, its one long axis takes a coordinate past 2^31,
    which T0's shape, tiled along any axis, spreads over axes that each stay short. With `below_t0` False, T0's
    own rank will do (the trial at the largest legal count is worth running on T0's shape too). `found`: a memo
    kept across calls, so that the suites' trials are built once a process (0.3 s for pad_const_b2's on the
    development machine; its two lowest-rank trials each spent 1.5 to 1.9 s that no timed part explained on an
    H100, beside the other oracles' processes)."""
    found = {} if found is None else found
    if "best" not in found:
        found["best"], found["where"] = _lowest_rank_of_suites(entry, torch)
    best, where = found["best"], found["where"]
    if best is None or (below_t0 and _rank(best, torch) >= (_rank(t0, torch) or 0)):
        return None, f"no suite's trial has a rank below T0's ({_rank(t0, torch)})"
    return best, where


def _lowest_rank_of_suites(entry, torch) -> tuple[list | None, str]:
    """Every suite's trials built on the CPU: the one of the lowest rank (the most elements among those), and where
    it comes from."""
    from harness.candidates import builder_output

    best, where = None, ""
    for suite, n_trials, builder in entry.suites():
        for t in range(n_trials):
            inputs = [x.cpu() if isinstance(x, torch.Tensor) else x for x in builder_output(builder, t, "cpu")]
            r = _rank(inputs, torch)
            if r is None or r == 0 or inputs[0].numel() == 0:
                continue
            if best is None or (r, -inputs[0].numel()) < (_rank(best, torch), -best[0].numel()):
                best, where = inputs, f"{suite} trial {t}"
    return best, where


def _device_words(error: BaseException) -> str:
    """The first line of an out-of-memory error: what was asked for, and what the device had."""
    return str(error).splitlines()[0][:200]


def _write(events, **record) -> None:
    events.write(json.dumps(record) + "\n")
    events.flush()


def _loaded(plan: dict):
    """The plan's backend, the substrate's entry and its official problem."""
    from harness.backends import create_backend
    from harness.candidates import import_candidate, make_entry, register_candidate
    from harness.problems import ProblemSearch, load_problem

    # Address-checked on cuda (plan["check_addresses"]): a survivor's out-of-range access is foreseen and raised with
    # the context alive, so the next survivor runs on the trial already built rather than in a process that builds
    # it again.
    settings = {"check_addresses": True} if plan.get("check_addresses") else {}
    backend = create_backend(plan["backend"], cache_dir=Path(plan["cache_dir"]) if plan.get("cache_dir") else None,
                             **settings)
    path = Path(plan["file"])
    entry, _problems = make_entry(plan["name"], register_candidate(import_candidate(path), path)[plan["name"]], path)
    problem = load_problem(entry.kb_file, ProblemSearch.for_candidate(path, Path(plan["kb_root"])
                                                                      if plan.get("kb_root") else None))
    return backend, entry, problem


def main(argv: list[str]) -> int:
    import torch

    from harness.gate.checks.suite_rules import official_inputs
    from harness.problems import model_state

    plan = json.loads(Path(argv[0]).read_text())
    if plan.get("watch_pid"):  # the campaign: gone, this run is for nothing
        from harness.watch import watch_process

        watch_process(plan["watch_pid"])
    began = time.perf_counter()  # what building the first trial costs, the process's start and imports aside
    backend, entry, problem = _loaded(plan)
    model = problem.build_model(backend.device)
    state = model_state(model, entry.model_state)  # appended to the large trial's inputs for launch, as in the gate
    t0 = official_inputs(problem, 0)
    first = int(plan.get("first_trial", 0))
    kernels = [tuple(k) for k in plan["kernels"]]  # the unmutated source first, under the substrate's own name
    judged = set(plan.get("judged", ()))  # judged on the first trial by a process before this one
    compiled, loaded, lowest = None, {}, {}
    with open(argv[1], "a") as events:
        for index, spec in enumerate(plan.get("trials") or [["t0", 0, "least"]], first):
            todo = [k for k in kernels if index > first or k[0] not in judged]
            if all(key == plan["name"] for key, _source in todo):  # every survivor killed: nothing left to judge
                break
            built = _built(plan, spec, index, model, t0, entry, backend, torch, events, began, lowest)
            if built is not None:
                if compiled is None:
                    compiled = _compiled_said(plan, entry, backend, events)
                code, killed = _judge_all(plan, entry, backend, [*built[0], *state], built[1], events, torch,
                                          compiled, todo, index, loaded)
                if code:
                    return code
                kernels = [k for k in kernels if k[0] not in killed]
                _write(events, event="done", trial=index)
            del built
            if backend.device.type == "cuda":  # the next trial is of other shapes: give the cached blocks back
                torch.cuda.empty_cache()
            began = time.perf_counter()
    return 0


def _built(plan: dict, spec: list, index: int, model, t0: list, entry, backend, torch, events, began: float,
           lowest: dict):
    """The trial `spec` ([source, axis, size]) and the official output on it, its `trial` event written; None, with
    a `skipped` event saying why, where it has none (no lower rank, no tiling within the counts, the memory).
    `lowest`: the process's memo of the suites' lowest-rank trial (lowest_rank_trial)."""
    source_kind, axis, size = spec[0], int(spec[1]), spec[2]
    small, source = t0, "T0 trial 0"
    largest = size == LARGEST
    clock = PhaseClock()
    if source_kind == LOWEST_RANK:
        with clock.timing(SOURCE):
            small, source = lowest_rank_trial(entry, small, torch, below_t0=not largest, found=lowest)
        if small is None:
            _write(events, event="skipped", trial=index, redundant=True, why=source)
            return None
    elif axis % max(1, small[0].dim()) == 0 and axis != 0:  # rank 1: the trial along axis 0 was this one
        _write(events, event="skipped", trial=index, redundant=True, why="rank 1: the last axis is axis 0")
        return None
    else:
        clock.add(SOURCE, 0.0)  # T0's is at hand: said all the same, every part in every event
    built = _build(plan, index, model, small, largest, axis, source, backend, torch, events, clock)
    if built is None:
        return None
    inputs, expected, length, factor = built
    took = clock.seconds()
    _write(events, event="trial", trial=index, source=source, factor=factor, axis=axis, cut=length or None,
           out=list(expected.shape), seconds=round(time.perf_counter() - began, 3),
           parts={name: took[name] for name in BUILD_PARTS if name in took},
           shapes=[list(x.shape) for x in inputs if isinstance(x, torch.Tensor)])
    return inputs, expected


def _build(plan: dict, index: int, model, small: list, largest: bool, axis: int, source: str, backend, torch,
           events, clock: PhaseClock):
    """The tiled (or cut) trial and its official output, and the factor and length it took; None, with a `skipped`
    event, where the device lacks the memory. `clock` gets the seconds of each step (BUILD_PARTS)."""
    device = backend.device
    with torch.no_grad(), clock.timing(MODEL_SMALL):
        small_out, model_peak = _model_peak(model, [x.to(device) if isinstance(x, torch.Tensor) else x
                                                    for x in small], torch)
    most = plan.get("max_elements", MAX_ELEMENTS)
    if largest:
        length = largest_length(small[0].shape, tuple(small_out.shape), most)
        rows = int(small[0].shape[0])
        factor = -(-length // rows) if length > rows else None  # enough copies to cut `length` rows from
    else:
        length, factor = 0, tile_factor(small, tuple(small_out.shape), plan["min_elements"], axis, most)
    output_shape, output_dtype = tuple(small_out.shape), small_out.dtype
    del small_out
    if factor is None:
        _write(events, event="skipped", trial=index,
               why=f"{source} (first input {tuple(small[0].shape)}, output {output_shape}) cannot be tiled along "
                   f"axis {axis} past {plan['min_elements']} elements within the contract's u32 counts")
        return None
    try:
        with clock.timing(MODEL_PROBE):
            model_bytes = _model_bytes(model, small, length / int(small[0].shape[0]) if largest else factor,
                                       device, axis, torch, model_peak)
    except torch.OutOfMemoryError as error:  # a 64th of the trial does not fit: the whole cannot
        _write(events, event="skipped", trial=index, memory=True,
               why=f"the official Model ran out of device memory on a 64th of the large trial: {_device_words(error)}")
        return None
    need = needed_bytes(small, output_shape, output_dtype, factor, axis, model_bytes)
    # What the trial holds once its official output is made, the Model's temporaries given back to the others (a
    # backward pad's: pad_backward_reflect_bf16's first trial asked 39.9 GiB on the H100; judging it takes 16.5).
    hold = needed_bytes(small, output_shape, output_dtype, factor, axis)
    if device.type == "cuda":  # the Model's measured runs' blocks given back: the free memory read next is all of it
        torch.cuda.empty_cache()
    # In this process's turn (harness.oracles.memory_turns), so that a trial built beside it in another process
    # has taken, by the time the memory is read, all it will take.
    turn_asked = time.perf_counter()
    with _room_for(need, plan, index, backend, torch, events) as wait:
        clock.add(TURN, wait.turn_seconds, turn_asked)
        clock.add(ROOM, wait.seconds - wait.turn_seconds, turn_asked + wait.turn_seconds)
        if not wait.fits:
            return None
        try:
            with clock.timing(TILING):
                inputs = tiled(small, factor, device, torch, axis)
                if largest:
                    inputs = cut(inputs, length, torch)
            with torch.no_grad(), clock.timing(MODEL_LARGE):
                expected = model(*inputs)
        except torch.OutOfMemoryError as error:  # the estimate fell short: the device lacks the memory all the same
            _write(events, event="skipped", trial=index, memory=True,
                   why=f"the large trial did not fit in the device's memory while it was built (about "
                       f"{need / 2**30:.1f} GiB estimated): {_device_words(error)}")
            return None
        if hold < need and device.type == "cuda":  # the temporaries' blocks back to the device before the next reads
            with clock.timing(MODEL_LARGE):
                torch.cuda.synchronize(device)
            torch.cuda.empty_cache()
        _reserve(hold, backend, torch)
    if device.type == "cuda":  # outside the turn: the next process reads the memory while the output is made
        with clock.timing(MODEL_LARGE):
            torch.cuda.synchronize(device)
    return inputs, expected, length, factor


@contextmanager
def _room_for(need: int, plan: dict, index: int, backend, torch, events):
    """This process's turn at the device's memory once `need` bytes are free for trial `index`, waited for up to
    plan["memory_wait"] s outside the turn (saying `waiting`); yields the MemoryWait, and where it does not fit,
    a `skipped` event has said why."""
    def say_waiting(waited: float, free: int | None) -> None:
        _write(events, event="waiting", trial=index, waited=round(waited, 1),
               **({"turn": True} if free is None else {"need": need, "free": free}))

    with turn_with_room(plan.get("memory_lock"), need, backend.memory_info, lambda: _held_here(backend, torch),
                        float(plan.get("memory_wait", 0)), say_waiting,
                        backfill_seconds=float(plan.get("backfill", BACKFILL_SECONDS))) as wait:
        if not wait.fits:  # beyond_device: alone on the device it would be skipped the same
            _write(events, event="skipped", trial=index, memory=True, beyond_device=wait.beyond_device,
                   why=f"the large trial needs about {need / 2**30:.1f} GiB of device memory; "
                       f"{wait.free / 2**30:.1f} GiB of {wait.total / 2**30:.1f} GiB are free ({wait.gave_up})")
        yield wait


def _held_here(backend, torch) -> int:
    """The device memory this process's allocator holds (what it would not gain by others giving theirs back)."""
    return int(torch.cuda.memory_reserved(backend.device)) if backend.device.type == "cuda" else 0


def _reserve(hold: int, backend, torch) -> None:
    """What the trial will take beyond what it holds now, up to `hold` bytes in all (the kernels' outputs, the
    comparisons' chunks), taken from the device and left in this process's allocator cache, so that a process after
    it in the turns reads the memory without it. Where the device will not give it, the trial goes on as it did
    before the turns."""
    if backend.device.type != "cuda":
        return
    rest = hold - int(torch.cuda.memory_allocated(backend.device))
    if rest <= 0:
        return
    try:
        held = torch.empty(rest, dtype=torch.uint8, device=backend.device)
    except torch.OutOfMemoryError:
        return
    del held  # its block stays in the cache, where the trial's next allocations are carved from it


def _compiled_said(plan: dict, entry, backend, events) -> dict:
    """compiled_in_batches over the plan's programs, its time written as an event of its own."""
    compiling = time.perf_counter()
    compiled = compiled_in_batches(plan.get("batches", []), entry, backend)
    _write(events, event="compiled", programs=len(plan.get("batches", [])), kernels=len(compiled),
           seconds=round(time.perf_counter() - compiling, 3))
    return compiled


def compiled_in_batches(programs: list[dict], entry, backend) -> dict:
    """{kernel key: its CompiledKernel} from the NVRTC programs the campaign compiled its kernels in (the compile
    cache has them: the same program name and sources), each compiled once here where it has not; a kernel whose
    program does not compile as a batch is left out, to be compiled alone, and its error said, as it is loaded.
    Address-checked, each program's kernels load from the checked cubin of its members alone."""
    from harness.compiler import cache
    from harness.engine.compile import compile_variants, kernels_of_their_own

    def compile_program(source, name_expressions, arch, program):
        return cache.compile_program_cached(source, name_expressions, arch, program, backend.cache_dir)

    checked = getattr(backend, "check_addresses", False)
    found = {}
    for program in programs:
        variants = compile_variants(program["sources"], entry, backend.nvrtc_arch, program["program"], compile_program)
        members = {key: variants[index].kernel for key, index in program["members"].items()
                   if variants[index] is not None}
        # A campaign's pool assembles a batch's checked cubin of the mutants its schema does not switch, and most
        # survivors are switched ones: each large-index process that loaded one assembled the whole batch's with
        # nvJitLink, 0.7 to 3.6 s a substrate of `loading kernels` on an H100 (MEASUREMENTS.md, forty-ninth session).
        # A substrate's processes all ask for the same members, so the first one's assembly serves the others.
        found.update(kernels_of_their_own(members, len(program["sources"])) if checked else members)
    return found


def _judge_all(plan, entry, backend, inputs, expected, events, torch, compiled: dict, kernels: list, index: int,
               loaded: dict) -> tuple[int, set]:
    """`kernels` in turn on trial `index` (`inputs`, `expected`): LOST_EXIT where one of them ends the process (else
    0), and the survivors it killed. Where the unmutated kernel fails the trial (or does not run) the trial judges
    nothing, and the rest are not run on it. `loaded`: the kernels loaded by the trials before, by key."""
    from harness.compiler import signature
    from harness.gate.checks.compare import compare
    from harness.gate.checks.guards import POISON_BYTES, poisoned_allocations, tensor_checksum

    sums = [tensor_checksum(x) if isinstance(x, torch.Tensor) else None for x in inputs]
    expected_sum = tensor_checksum(expected)

    def judge(key: str, cuda: str) -> tuple[bool, bool | None]:
        """Whether the process goes on after the kernel, and whether it was killed (None: not judged, its launch
        raised)."""
        loading = time.perf_counter()
        try:
            if key not in loaded:
                loaded[key] = _load(backend, cuda, entry.kernel_name, key, compiled.get(key))
            kernel = loaded[key]
            parts = {"loading": round(time.perf_counter() - loading, 4)}
            # As in the gate: an out that launch leaves uninitialised holds poison, not the last kernel's
            # output that the allocator hands back (a kernel writing half of it would pass on those bytes).
            with poisoned_allocations(POISON_BYTES[0]):
                out, grid, block, args = entry.launch(inputs, torch)
        except Exception as error:  # not judged; where the device's memory was short, another run may judge it
            _write(events, event="result", trial=index, key=key, killed=False,
                   error=f"{type(error).__name__}: {error}", memory=isinstance(error, torch.OutOfMemoryError))
            return True, None
        _write(events, event="start", trial=index, key=key, at=time.time())  # the parent's clock for a hang
        started = time.perf_counter()
        try:
            backend.launch(kernel, tuple(grid), tuple(block), signature.to_ctypes(args))
            backend.synchronize()
            ran = time.perf_counter() - started
        except Exception as error:  # a fault on an input within the contract: detected
            # A fault that leaves the context usable (foreseen by the address check, or caught by the CPU shim) ends
            # the process only where the kernel wrote into the trial before it: the next kernel is judged on it.
            ends = getattr(error, "poisons_context", True) or bool(harmed_by(inputs, sums, expected, expected_sum))
            _write(events, event="result", trial=index, key=key, killed=True, ends=ends, parts=parts,
                   detail=f"the kernel faulted: {type(error).__name__}: {error}")
            return not ends, True
        parts["running"] = round(ran, 4)
        checking = time.perf_counter()
        try:
            try:
                comparison = compare(out, expected, entry.tolerance, backend.close_figures)
            finally:
                del out
            # No guard bands here: a kernel that wrote outside its output may have changed what the next is judged
            # by. It is killed for that, and a fresh process takes the kernels after it.
            harmed = harmed_by(inputs, sums, expected, expected_sum)
        except torch.OutOfMemoryError as error:  # the comparison's own memory, beside other processes: not judged
            if backend.device.type == "cuda":
                torch.cuda.empty_cache()
            _write(events, event="result", trial=index, key=key, killed=False, memory=True, parts=parts,
                   error=f"checking its output: {_device_words(error)}")
            return True, None
        parts["checking"] = round(time.perf_counter() - checking, 4)
        if harmed:
            _write(events, event="result", trial=index, key=key, killed=True, ends=True, parts=parts,
                   detail=f"wrote outside its output: {', '.join(harmed)} changed")
            return False, True
        _write(events, event="result", trial=index, key=key, killed=not comparison.ok, seconds=round(ran, 4),
               parts=parts, detail="" if comparison.ok else comparison.describe())
        return True, not comparison.ok

    killed: set = set()
    for key, cuda in kernels:
        went_on, verdict = judge(key, cuda)
        if key == plan["name"] and verdict is not False:  # the unmutated kernel fails it: the trial judges nothing
            return (0 if went_on else LOST_EXIT), set()
        if verdict:
            killed.add(key)
        if not went_on:
            return LOST_EXIT, killed
    return 0, killed


def _load(backend, cuda: str, kernel_name: str, key: str, compiled):
    """The kernel from its campaign's program where given; alone where that program does not load (ptxas refused it
    address-checked, another kernel of it at fault), as a campaign's worker does."""
    from harness.compiler.nvrtc import CompileError

    try:
        return backend.load(cuda, kernel_name, f"{key}.cu", compiled=compiled)
    except CompileError:
        if compiled is None:
            raise
        return backend.load(cuda, kernel_name, f"{key}.cu")


def harmed_by(inputs: list, sums: list, expected, expected_sum) -> list[str]:
    """What of the trial a kernel changed, by the checksums taken when it was built: inputs, the official output."""
    from harness.gate.checks.guards import tensor_checksum

    harmed = [f"input {i}" for i, (x, before) in enumerate(zip(inputs, sums))
              if before is not None and tensor_checksum(x) != before]
    return harmed + (["the official output"] if tensor_checksum(expected) != expected_sum else [])


def run_in_worker(plan_path: str, events_path: str, stderr_path: str, conn) -> None:
    """main() as a campaign's forked worker runs it (harness.engine.large_index): its stderr to a file the parent
    reads for the words of an end, its exit status main's."""
    import os

    log = open(stderr_path, "a", buffering=1)
    os.dup2(log.fileno(), 2)
    sys.stderr = log
    conn.close()  # the parent waits for this process's exit, not for messages
    sys.exit(main([plan_path, events_path]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
