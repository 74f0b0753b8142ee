"""`python -m harness.benchmarks.gate CANDIDATE_FILE...`: the gate against a KernelBench-style check, time and memory.

For every substrate each file registers (or only those given with --name), one after another,
never at the same time, in one invocation:

1. the BASELINE, a correctness check done the way KernelBench's `eval_kernel_against_ref` and
   `run_and_check_correctness` do it (src/kernelbench/eval.py), in a fresh spawned process of
   its own (so its peak memory is its own), which has exited before the gate starts:
   - set_seed(seed) (eval.py's `set_seed`: torch.manual_seed, and torch.cuda.manual_seed on the
     GPU; seed 42, eval.py's `seed_num` default, or --seed), `get_init_inputs()`, each tensor
     moved to the device; set_seed(seed) again and `Model(*init_inputs)` under torch.no_grad(),
     built where its constructor builds it (the CPU) and then moved with `.to(device)`, as
     eval.py does (not put in eval() mode: eval.py does not either);
   - the candidate's CUDA source compiled and loaded with the harness's backend (`backend.load`);
   - the trial seeds as eval.py draws them: torch.manual_seed(seed) then one
     `torch.randint(0, 2**32 - 1, (1,)).item()` per trial (not the harness T0's 1000 + t, so the
     baseline's inputs are not the gate's T0 inputs); for each trial: set_seed(trial seed),
     `get_inputs()` (on the CPU, as the problem makes them), each tensor moved to the device,
     set_seed(trial seed), the official Model run on them (no clone, as in eval.py), a device
     synchronize, then the candidate's kernel on the same tensors: `launch(inputs, torch)`,
     `backend.launch`, `backend.synchronize()`; then the shape (a mismatch fails and ends the
     check, as eval.py returns there), then `torch.allclose(reference, output, atol=T, rtol=T)`
     in eval.py's argument order (rtol scales the kernel's output). A value mismatch fails the
     trial and the next trial runs; an exception fails it and ends the check, as in eval.py.
   eval.py also casts every tensor input and init input to its `precision` (float32 by default,
     integer and bool tensors included) and the Model to that dtype; that is --precision fp32
     here. The default, --precision keep, keeps `get_inputs()`'s dtypes, since this project's
     substrates include 1-, 2- and 8-byte kernels that a cast to float32 would feed wrong data.
   Tolerance: eval.py now takes it from get_tolerance_for_precision, 1e-4 for float32 (KernelBench
     v0 and v0.1 used 1e-2); the default here is the harness's own 1e-2 (--tolerance to change it).
   Timed ("check s"): from the start of the check function in that process, after its imports
     (torch and the harness modules), to the end of the last trial: importing the candidate and
     calling register(), starting the backend, loading the problem, building the Model, compiling
     (or fetching from the compile cache) and loading the kernel, and the trials. "wall s" is the
     parent's clock from spawning the process to its exit. Peak memory: that process's
     torch.cuda.max_memory_reserved (and max_memory_allocated, in the JSON) after the trials.
2. the GATE: `harness.gate.worker.run_gate_job` in its own worker process, its wall time measured
   around the call; its report's `seconds` (time inside the pipeline) and `peak_device_bytes`.

Then a table, one row per substrate, and what each column measures. Exit status: 0 every gate
admitted and every baseline passed, 1 otherwise, 2 bad usage, 130 interrupted (Ctrl-C or SIGTERM: the
rounds that finished are printed and kept in --json, marked incomplete; a cut gate is not recorded).
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import textwrap
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.gate import admissions
from harness.interrupt import EXIT_INTERRUPTED, Interruption, caught

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEFAULT_TOLERANCE = 1e-2  # the harness's (harness.gate.checks.compare.DEFAULT_TOLERANCE); eval.py's fp32 is 1e-4
EVAL_PY_FP32_TOLERANCE = 1e-4
DEFAULT_SEED = 42  # eval.py's seed_num default
PRECISIONS = {"keep": None, "fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
GIB = 2**30
PROG = "python -m harness.benchmarks.gate"


class UsageError(Exception):
    pass


# ---------------------------------------------------------------- the baseline, in its own process


@dataclass(frozen=True)
class BaselineJob:
    file: str
    name: str
    backend: str
    kb_root: str | None = None
    cache_dir: str | None = None
    trials: int = 5
    tolerance: float = DEFAULT_TOLERANCE
    seed: int = DEFAULT_SEED
    precision: str = "keep"


@dataclass
class BaselineResult:
    passed: bool = False
    trials: int = 0
    trials_run: int = 0  # fewer than `trials` when the check ended early (a setup error, a shape mismatch, a raise)
    trials_passed: int = 0
    first_failure: str = ""  # '' when every trial passed
    check_seconds: float | None = None  # the check function, after its imports, through the last trial
    setup_seconds: float | None = None  # of which: until the kernel was loaded and the Model on the device
    inputs_seconds: float = 0.0  # of which: get_inputs() and moving its tensors to the device, every trial
    wall_seconds: float | None = None  # the parent's clock: spawn to exit of the baseline process
    peak_reserved_bytes: int | None = None
    peak_allocated_bytes: int | None = None
    compile_from_cache: bool | None = None
    trial_seeds: list[int] = field(default_factory=list)
    device: str = ""


@dataclass
class _Placed:
    """What the check's trials share once set up: eval.py's placement of a tensor, its device synchronize."""

    torch: object
    device: object
    dtype: object  # the --precision cast, or None

    def place(self, x):  # eval.py's _process_input_tensor: non-tensors unchanged, tensors cast (if asked) and moved
        if not isinstance(x, self.torch.Tensor):
            return x
        return (x.to(dtype=self.dtype) if self.dtype is not None else x).to(device=self.device)

    def on_device(self, model):
        return model.to(device=self.device, dtype=self.dtype) if self.dtype is not None else model.to(device=self.device)

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(device=self.device)


def baseline_check(job: BaselineJob, progress=lambda step: None) -> BaselineResult:
    """The KernelBench-style check of one substrate (the module docstring says exactly what), in this process."""
    import torch

    from harness.backends import create_backend
    from harness.candidates import import_candidate, make_entry, register_candidate
    from harness.problems import ProblemSearch, load_problem

    started = time.perf_counter()
    result = BaselineResult(trials=job.trials)
    backend = None
    try:
        path = Path(job.file)
        progress("import")
        registered = register_candidate(import_candidate(path), path)
        if job.name not in registered:
            return _failed(result, f"{path.name} registers {sorted(registered)}, not {job.name!r}")
        entry, problems = make_entry(job.name, registered[job.name], path)
        if entry is None:
            return _failed(result, "; ".join(problems))
        backend = create_backend(job.backend, cache_dir=Path(job.cache_dir) if job.cache_dir else None)
        result.device = backend.describe_device()
        placed = _Placed(torch, backend.device,
                         getattr(torch, PRECISIONS[job.precision]) if PRECISIONS[job.precision] else None)
        progress("model")
        problem = load_problem(entry.kb_file, ProblemSearch.for_candidate(path, Path(job.kb_root) if job.kb_root
                                                                          else None))
        _baseline_trials(job, result, entry, problem, backend, placed, progress, started)
    except Exception as error:
        return _failed(result, f"{type(error).__name__}: {_first_line(error)}")
    finally:
        result.check_seconds = time.perf_counter() - started
        if backend is not None and backend.device.type == "cuda":
            result.peak_reserved_bytes = int(torch.cuda.max_memory_reserved(backend.device))
            result.peak_allocated_bytes = int(torch.cuda.max_memory_allocated(backend.device))
    result.passed = result.trials_passed == job.trials and not result.first_failure
    return result


def _failed(result: BaselineResult, why: str) -> BaselineResult:
    result.first_failure = result.first_failure or why
    return result


def _baseline_trials(job: BaselineJob, result: BaselineResult, entry, problem, backend, placed: _Placed, progress,
                     started: float) -> None:
    """The Model built and the kernel compiled as eval.py does, then its trials, into `result`."""
    from harness.checkers.kernelbench import set_seed, trial_seeds
    from harness.compiler import signature
    from harness.problems import model_state

    torch, on_gpu = placed.torch, placed.device.type == "cuda"
    set_seed(torch, job.seed, on_gpu)
    init_inputs = [placed.place(x) for x in problem.get_init_inputs()]
    with torch.no_grad():
        set_seed(torch, job.seed, on_gpu)
        model = problem.Model(*init_inputs)
    progress("compile")
    kernel = backend.load(entry.cuda, entry.kernel_name, f"{entry.name}.cu")
    result.compile_from_cache = kernel.from_cache
    with torch.no_grad():
        model = placed.on_device(model)
    state = model_state(model, entry.model_state)  # what the gate appends to each trial's inputs for launch
    placed.synchronize()
    result.setup_seconds = time.perf_counter() - started
    result.trial_seeds = trial_seeds(job.seed, job.trials)
    with torch.no_grad():
        for trial, trial_seed in enumerate(result.trial_seeds):
            progress(f"trial {trial}")
            result.trials_run += 1
            set_seed(torch, trial_seed, on_gpu)
            drawing = time.perf_counter()
            inputs = [placed.place(x) for x in problem.get_inputs()]
            placed.synchronize()
            result.inputs_seconds += time.perf_counter() - drawing
            set_seed(torch, trial_seed, on_gpu)
            model = placed.on_device(model)
            set_seed(torch, trial_seed, on_gpu)  # eval.py seeds again before moving ModelNew
            reference = model(*inputs)
            placed.synchronize()
            try:
                out, grid, block, args = entry.launch([*inputs, *state], torch)
                backend.launch(kernel, grid, block, signature.to_ctypes(args))
                backend.synchronize()
                if reference.shape != out.shape:
                    _failed(result, f"trial {trial}: output shape mismatch: expected {tuple(reference.shape)}, "
                                    f"got {tuple(out.shape)}")
                    return
                if torch.allclose(reference, out, atol=job.tolerance, rtol=job.tolerance):
                    result.trials_passed += 1
                else:
                    _failed(result, f"trial {trial}: output mismatch{_differences(torch, reference, out)}")
            except Exception as error:
                _failed(result, f"trial {trial}: {type(error).__name__}: {_first_line(error)}")
                return


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else "(no message)"


def _differences(torch, reference, out) -> str:
    """eval.py's max and mean absolute differences, where they can be computed."""
    try:
        difference = torch.abs(reference.double() - out.double())
        return f" (max difference {difference.max().item():.6f}, mean {difference.mean().item():.6f})"
    except Exception:
        return ""


def _baseline_in_worker(job: BaselineJob, conn) -> None:
    from harness.interrupt import die_quietly_on_interrupt

    die_quietly_on_interrupt()  # Ctrl-C ends bench_gate, which says so once: no traceback from this process
    import torch  # noqa: F401  (before the first message: start-up, not the check)

    import harness.backends  # noqa: F401
    import harness.candidates  # noqa: F401
    import harness.compiler.signature  # noqa: F401
    import harness.problems  # noqa: F401

    conn.send(("step", "start"))
    result = baseline_check(job, progress=lambda step: conn.send(("step", step)))
    conn.send(("result", asdict(result)))


def run_baseline(job: BaselineJob, step_timeout: float, on_message=lambda message: None) -> BaselineResult:
    """The baseline in a fresh spawned worker (harness.processes.converse: a step silent past its limit, or a death,
    ends it as a failed check); returns once that process has exited (its memory returned)."""
    from harness.processes import WorkerLost, converse, start_worker

    started = time.perf_counter()
    try:
        worker = start_worker()
    except WorkerLost as lost:  # Ctrl-C as it started: the caller's stop_if_interrupted says so, not this result
        return BaselineResult(trials=job.trials, first_failure=f"the baseline process: {lost}",
                              wall_seconds=time.perf_counter() - started)
    said = {}

    def heard(message) -> bool:
        on_message(message)
        if message[0] == "result":
            said["result"] = BaselineResult(**message[1])
        return "result" in said

    try:
        converse(_baseline_in_worker, (job,), step_timeout, heard, worker=worker, keep=True)
        worker.process.join(60)  # let it exit on its own, so its device memory is given back
        result = said["result"]
    except WorkerLost as lost:
        result = BaselineResult(trials=job.trials, first_failure=f"the baseline process: {lost}")
    finally:
        worker.stop()  # kills it if it has not exited, then joins
    result.wall_seconds = time.perf_counter() - started
    return result


# ---------------------------------------------------------------- rows and the table


@dataclass
class Row:
    substrate: str
    file: str
    round: int = 1  # with --repeat, which of the substrate's baseline-and-gate rounds this is
    gate_verdict: str | None = None  # 'admitted' / 'rejected'; None: not run (--no-gate)
    gate_wall_seconds: float | None = None  # run_gate_job, start to return
    gate_pipeline_seconds: float | None = None  # SubstrateReport.seconds
    gate_peak_reserved_bytes: int | None = None  # SubstrateReport.peak_device_bytes
    gate_compile_from_cache: bool | None = None
    gate_reasons: list[str] = field(default_factory=list)
    gate_phase_seconds: dict[str, float] = field(default_factory=dict)  # SubstrateReport.phase_seconds
    gate_phase_calls: dict[str, dict] = field(default_factory=dict)  # SubstrateReport.phase_calls
    gate_phase_trace: list[dict] = field(default_factory=list)  # SubstrateReport.phase_trace (--trace)
    # The worker's start before the pipeline (its ("device", ...) message): the rest of gate_wall_seconds beside
    # gate_pipeline_seconds, by part (the candidate's import, T0's helpers, the CUDA context).
    gate_start_seconds: float | None = None
    gate_start_parts: dict[str, float] = field(default_factory=dict)
    baseline: BaselineResult | None = None  # None: not run (--no-baseline)

    @property
    def gate_ok(self) -> bool:
        return self.gate_verdict in (None, "admitted")

    @property
    def baseline_ok(self) -> bool:
        return self.baseline is None or self.baseline.passed

    @property
    def _complete_baseline(self) -> BaselineResult | None:
        """The baseline, if it ran every trial (a check that ended early is no measure of the work)."""
        return self.baseline if self.baseline and self.baseline.trials_run == self.baseline.trials else None

    @property
    def wall_ratio(self) -> float | None:
        """Gate wall over baseline wall: each a whole process, spawn to exit."""
        return _ratio(self.gate_wall_seconds, self._complete_baseline and self._complete_baseline.wall_seconds)

    @property
    def inner_ratio(self) -> float | None:
        """Gate pipeline seconds over the baseline's check seconds: each the work after its imports."""
        return _ratio(self.gate_pipeline_seconds, self._complete_baseline and self._complete_baseline.check_seconds)

    @property
    def memory_ratio(self) -> float | None:
        """Gate peak reserved bytes over the baseline's."""
        return _ratio(self.gate_peak_reserved_bytes,
                      self._complete_baseline and self._complete_baseline.peak_reserved_bytes)

    def to_json(self) -> dict:
        data = asdict(self)
        data.update(wall_ratio=self.wall_ratio, inner_ratio=self.inner_ratio, memory_ratio=self.memory_ratio)
        return data


def _ratio(top, bottom) -> float | None:
    if top is None or bottom is None or bottom <= 0:
        return None
    return top / bottom


@dataclass
class Medians:
    """One substrate's rounds (--repeat) in one line: medians, each ratio the median of its rounds' own ratios
    (a gate against the baseline run beside it, so a drift of the machine's speed cancels)."""

    substrate: str
    rounds: int
    verdicts: list[str]
    gate_wall_seconds: float | None
    baseline_wall_seconds: float | None
    wall_ratio: float | None
    inner_ratio: float | None
    memory_ratio: float | None
    wall_ratios: list[float]  # every round's, in order

    @classmethod
    def of(cls, rows: list[Row]) -> "Medians":
        def median(values):
            values = [v for v in values if v is not None]
            return statistics.median(values) if values else None

        return cls(substrate=rows[0].substrate, rounds=len(rows),
                   verdicts=[r.gate_verdict or "not run" for r in rows],
                   gate_wall_seconds=median(r.gate_wall_seconds for r in rows),
                   baseline_wall_seconds=median(r.baseline and r.baseline.wall_seconds for r in rows),
                   wall_ratio=median(r.wall_ratio for r in rows), inner_ratio=median(r.inner_ratio for r in rows),
                   memory_ratio=median(r.memory_ratio for r in rows),
                   wall_ratios=[round(r.wall_ratio, 3) for r in rows if r.wall_ratio is not None])


def format_medians(medians: list[Medians]) -> str:
    lines = ["medians over the rounds (each ratio the median of the rounds' own):"]
    for m in medians:
        lines.append(f"  {m.substrate}: {m.rounds} rounds, gate {', '.join(sorted(set(m.verdicts)))}; gate wall "
                     f"{seconds(m.gate_wall_seconds)} s, base wall {seconds(m.baseline_wall_seconds)} s; wall x "
                     f"{times(m.wall_ratio)} (rounds: {', '.join(f'{r:.2f}' for r in m.wall_ratios) or 'n/a'}), "
                     f"inner x {times(m.inner_ratio)}, mem x {times(m.memory_ratio)}")
    return "\n".join(lines)


def gib(value: int | None) -> str:
    return "n/a" if value is None else f"{value / GIB:.1f}"


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def times(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def baseline_summary(result: BaselineResult | None) -> str:
    if result is None:
        return "not run"
    if result.passed:
        return f"passed {result.trials_passed}/{result.trials}"
    return f"FAILED {result.trials_passed}/{result.trials}"


COLUMNS = ("substrate", "gate", "gate wall s", "pipeline s", "gate GiB", "base wall s", "check s", "base GiB",
           "baseline", "wall x", "inner x", "mem x")


PHASES_SHOWN = 12  # the largest of a gate's phases, under its row (--json has them all)


def _calls_note(calls: dict | None, seconds: float) -> str:
    """' (N calls, longest S)' for a phase of several calls, where one took at least a tenth of its time."""
    if not calls or calls["calls"] < 2 or calls["longest"] < 0.1 * seconds:
        return ""
    return f" ({calls['calls']} calls, longest {calls['longest']:.2f})"


def format_table(rows: list[Row]) -> str:
    """The table, one row per substrate; under a row, why its baseline failed or its gate rejected."""
    repeated = len({r.round for r in rows}) > 1
    cells = [[r.substrate + (f" #{r.round}" if repeated else ""),
              r.gate_verdict or "not run", seconds(r.gate_wall_seconds), seconds(r.gate_pipeline_seconds),
              gib(r.gate_peak_reserved_bytes) if r.gate_verdict else "-",
              seconds(r.baseline and r.baseline.wall_seconds), seconds(r.baseline and r.baseline.check_seconds),
              gib(r.baseline.peak_reserved_bytes) if r.baseline else "-", baseline_summary(r.baseline),
              times(r.wall_ratio), times(r.inner_ratio), times(r.memory_ratio)] for r in rows]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(COLUMNS)]
    left = {0, 1, 8}  # text columns; the numbers are right-aligned

    def line(values) -> str:
        return "  ".join(v.ljust(w) if i in left else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths)))

    lines = [line(COLUMNS).rstrip()]
    for row, values in zip(rows, cells):
        lines.append(line(values).rstrip())
        if row.baseline is not None and row.baseline.first_failure:
            lines.append(f"    baseline: {row.baseline.first_failure}")
        lines += [f"    gate: {reason}" for reason in row.gate_reasons[:3]]
        if len(row.gate_reasons) > 3:
            lines.append(f"    gate: (and {len(row.gate_reasons) - 3} more)")
        if row.baseline is not None and row.baseline.check_seconds:
            lines.append(f"    baseline: get_inputs() and to the device {row.baseline.inputs_seconds:.1f} s of "
                         f"{row.baseline.check_seconds:.1f} s")
        if row.gate_start_seconds is not None:
            lines.append(f"    gate worker's start {row.gate_start_seconds:.1f} s" + "".join(
                f", {name} {value:.1f}" for name, value in row.gate_start_parts.items() if value >= 0.05))
        if row.gate_phase_seconds:
            lines.append("    gate phases (s): " + ", ".join(
                f"{name} {value:.1f}{_calls_note(row.gate_phase_calls.get(name), value)}"
                for name, value in list(row.gate_phase_seconds.items())[:PHASES_SHOWN] if value >= 0.05))
        cached = {side: hit for side, hit in (("baseline", row.baseline and row.baseline.compile_from_cache),
                                              ("gate", row.gate_compile_from_cache)) if hit is not None}
        if cached:
            lines.append("    compile: " + ", ".join(f"{side} {'from the cache' if hit else 'compiled'}"
                                                      for side, hit in cached.items()))
    return "\n".join(lines)


def legend(tolerance: float, trials: int, seed: int, precision: str) -> str:
    text = (
        "columns: gate = verdict of harness.gate.worker.run_gate_job; gate wall s = wall time of that call (spawn, "
        "imports, every check, exit); pipeline s = time inside the gate's pipeline (SubstrateReport.seconds); "
        "gate GiB / base GiB = peak torch.cuda.max_memory_reserved of that process (n/a on the CPU backend); "
        "base wall s = the baseline process, spawn to exit; check s = the baseline check after its imports "
        "(candidate import, backend start, problem load, Model build, compile, trials); "
        f"baseline = trials passed of {trials} (eval.py's seeds from {seed}; inputs "
        f"{'as get_inputs() makes them' if precision == 'keep' else 'cast to ' + PRECISIONS[precision]}; "
        f"torch.allclose(ref, out, atol=rtol={tolerance:g}); eval.py's own fp32 tolerance is "
        f"{EVAL_PY_FP32_TOLERANCE:g}); wall x = gate wall s / base wall s; inner x = pipeline s / check s; "
        "mem x = gate / baseline peak reserved bytes; a ratio is n/a where a side did not run, the baseline ended "
        "before its last trial, or the backend cannot tell memory."
    )
    return textwrap.fill(text, width=120)


# ---------------------------------------------------------------- the command


def build_parser() -> argparse.ArgumentParser:
    from harness.backends import BACKEND_NAMES
    from harness.problems import KB_ROOT_ENV, kb_root_from_env
    from harness.processes import DEFAULT_STEP_TIMEOUT

    parser = argparse.ArgumentParser(
        prog=PROG, description="Gate each substrate and check it KernelBench-style, one after the other, and "
                               "compare their time and peak device memory.",
        epilog="Exit status: 0 every gate admitted and every baseline passed, 1 otherwise, 2 bad usage, "
               "130 interrupted (what finished is printed and kept in --json).")
    parser.add_argument("files", nargs="+", type=Path, metavar="CANDIDATE_FILE", help="candidate_<name>.py files")
    parser.add_argument("--name", action="append", default=[], metavar="NAME",
                        help="only this substrate (repeatable; default: every one the files register)")
    parser.add_argument("--backend", choices=("auto",) + BACKEND_NAMES, default="auto",
                        help="where kernels run; auto picks cuda when a GPU is visible (default: auto)")
    parser.add_argument("--kb-root", type=Path, metavar="DIR", default=kb_root_from_env(),
                        help=f"a KernelBench checkout for kb_files not found in problems/ (default: ${KB_ROOT_ENV})")
    parser.add_argument("--trials", type=int, default=5, metavar="N", help="baseline correctness trials (default: 5)")
    parser.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE, metavar="T",
                        help=f"the baseline's atol = rtol (default: the harness's {DEFAULT_TOLERANCE:g}; eval.py uses "
                             f"{EVAL_PY_FP32_TOLERANCE:g} for float32)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"the baseline's seed, eval.py's seed_num (default: {DEFAULT_SEED})")
    parser.add_argument("--precision", choices=tuple(PRECISIONS), default="keep",
                        help="cast the baseline's tensor inputs and Model to this dtype, as eval.py does (fp32 "
                             "there); keep: get_inputs()'s dtypes (default: keep)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_STEP_TIMEOUT, metavar="S",
                        help=f"kill a gate worker (or the baseline process) silent for S seconds (default: "
                             f"{DEFAULT_STEP_TIMEOUT:g})")
    parser.add_argument("--order", choices=("baseline-first", "gate-first"), default="baseline-first",
                        help="which runs first for each substrate (default: baseline-first)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="rounds of baseline and gate per substrate, one after the other; with more than one "
                             "the medians are printed (a 2-second gate over a 2-second baseline varies by a "
                             "third from run to run) (default: 1)")
    parser.add_argument("--no-gate", action="store_true", help="run the baseline only")
    parser.add_argument("--no-baseline", action="store_true", help="run the gate only")
    parser.add_argument("--cache-dir", type=Path, metavar="DIR",
                        help="compiled-kernel cache for both sides (default: $SUBSTRATE_CACHE_DIR or "
                             "~/.cache/substrate-harness)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the rows as JSON to PATH")
    parser.add_argument("--trace", action="store_true",
                        help="keep every timed call of each gate in --json (gate_phase_trace: phase, thread, start and "
                             "seconds), to place a slow call on the gate's timeline")
    parser.add_argument("--record", action="store_true",
                        help="record each gate verdict in the candidate folder's admissions.json, as gate.py does")
    return parser


def git_commit() -> dict:
    """The checkout's commit and whether its work tree differs from it; None values where git cannot tell."""
    from harness.problems import REPO_ROOT

    def git(*args) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != REPO_ROOT.resolve():
        return {"commit": None, "worktree_dirty": None}  # not a checkout of its own (an exported copy)
    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain") if commit else None
    return {"commit": commit, "worktree_dirty": None if status is None else bool(status)}


def _log(text: str) -> None:
    print(f"bench_gate: {text}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_USAGE


def _check_usage(args) -> tuple[str, str]:
    """(backend, why auto chose it); raises UsageError."""
    from harness.backends import BackendUnavailable, create_backend, gpu_visible, resolve_backend_name
    from harness.problems import kb_root_usage_error

    for file in args.files:
        if not file.is_file():
            raise UsageError(f"cannot read candidate file {file}")
    if args.no_gate and args.no_baseline:
        raise UsageError("--no-gate and --no-baseline leave nothing to run")
    if args.trials < 1 or args.timeout <= 0 or not args.tolerance >= 0 or args.repeat < 1:
        raise UsageError("--trials and --repeat must be at least 1, --timeout positive and --tolerance not negative")
    if kb_root_error := kb_root_usage_error(args.kb_root):
        raise UsageError(kb_root_error)
    backend = resolve_backend_name(args.backend)
    why = ""
    if args.backend == "auto":
        why = " (auto: a GPU is visible)" if backend == "cuda" else " (auto: no GPU is visible)"
    if backend == "cuda" and not gpu_visible():
        raise UsageError("backend cuda: no GPU is visible (the CUDA driver is missing or sees no device)")
    if backend == "cpu":
        try:
            create_backend(backend)  # finds the C++ compiler, so a missing one is a usage error here
        except BackendUnavailable as error:
            raise UsageError(f"backend {backend}{why}: {error}")
    return backend, why


@dataclass(frozen=True)
class BenchJob:
    file: str
    name: str
    # get_inputs()'s portable signature and the official output's, as discovery found them: gate.py hands its
    # workers the same (GateJob), so the gate measured here does not run get_inputs() or the Model on the meta
    # device again (a second or two of imports)
    official_inputs: tuple | None = None
    official_output: tuple | None = None


def _jobs(args, backend: str) -> list[BenchJob]:
    """The substrates, in the order of the files and of their registration; raises UsageError."""
    from harness.gate.worker import discover

    files = list(dict.fromkeys(f.resolve() for f in args.files))
    entries, errors = discover(files, args.timeout, args.kb_root, cache_dir=args.cache_dir,
                               foresee_outputs=backend == "cuda")
    jobs = []
    for file in map(str, files):
        if file in errors:
            _log(f"{file}: {errors[file]}")
            jobs.append(BenchJob(file, Path(file).stem.removeprefix("candidate_")))  # both sides will say why it fails
            continue
        jobs += [BenchJob(file, s.name, s.official_inputs, s.official_output) for s in entries.get(file, [])
                 if not args.name or s.name in args.name]
    known = {s.name for summaries in entries.values() for s in summaries}
    unknown = [n for n in args.name if n not in known]
    if unknown:
        raise UsageError(f"unknown substrate(s) {', '.join(unknown)}; the files register "
                         f"{', '.join(sorted(known)) or 'none'}")
    return jobs


def _progress_bar(label: str):
    from tqdm import tqdm

    # disable=None: off when stderr is not a terminal, so logs hold only the one line per phase.
    return tqdm(total=0, unit="step", disable=None, dynamic_ncols=True, leave=False, file=sys.stderr, desc=label)


class _Interrupted(Exception):
    """A phase cut short by Ctrl-C or SIGTERM: what its process said is no measure, and no verdict to record."""


@dataclass
class _Bench:
    """One bench_gate run: its arguments and what it has measured so far (`run`, written to --json)."""

    args: argparse.Namespace
    backend: str
    jobs: dict  # (file, name) -> its BenchJob, with discovery's signatures
    run: dict
    interruption: Interruption = field(default_factory=Interruption)
    rows: list = field(default_factory=list)
    medians: list = field(default_factory=list)

    def stop_if_interrupted(self) -> None:
        if self.interruption.stopped():
            raise _Interrupted

    @property
    def kb_root(self) -> str | None:
        return str(self.args.kb_root) if self.args.kb_root else None

    @property
    def cache_dir(self) -> str | None:
        return str(self.args.cache_dir) if self.args.cache_dir else None

    def save(self) -> None:  # after every round: a run cut off keeps what it measured
        if self.args.json:
            self.run["rows"] = [r.to_json() for r in self.rows]
            if self.medians:
                self.run["medians"] = [asdict(m) for m in self.medians]
            self.args.json.write_text(json.dumps(self.run, indent=2) + "\n")

    def baseline_phase(self, row: Row, count: str) -> None:
        args = self.args
        bar = _progress_bar(f"{row.substrate}: baseline")
        bar.total = args.trials + 4
        row.baseline = run_baseline(
            BaselineJob(file=row.file, name=row.substrate, backend=self.backend, kb_root=self.kb_root,
                        cache_dir=self.cache_dir, trials=args.trials, tolerance=args.tolerance, seed=args.seed,
                        precision=args.precision),
            args.timeout, on_message=lambda m: bar.update(1) if m[0] == "step" else None)
        bar.close()
        self.stop_if_interrupted()  # the signal killed the baseline's process: its "died" is no result
        self.run["device"] = self.run["device"] or row.baseline.device
        _log(f"{count} {row.substrate}: baseline {baseline_summary(row.baseline)} in "
             f"{row.baseline.wall_seconds:.1f} s (check {seconds(row.baseline.check_seconds)} s)")

    def gate_phase(self, row: Row, count: str) -> None:
        from harness.backends import BackendUnavailable
        from harness.gate.worker import GateJob, run_gate_job
        from harness.processes import WorkerLost

        bar = _progress_bar(f"{row.substrate}: gate")

        def on_message(message):
            if message[0] == "plan":
                bar.total += message[1]
                bar.refresh()
            elif message[0] == "step" and message[1] != "import":
                bar.update(1)
            elif message[0] == "device":
                self.run["device"] = self.run["device"] or message[1]
                row.gate_start_seconds, row.gate_start_parts = message[2], dict(message[4])

        job = self.jobs[(row.file, row.substrate)]
        started = time.perf_counter()
        try:
            report = run_gate_job(GateJob(file=row.file, name=row.substrate, backend=self.backend,
                                          cache_dir=self.cache_dir, kb_root=self.kb_root,
                                          official_inputs=job.official_inputs, official_output=job.official_output,
                                          trace=self.args.trace),
                                  self.args.timeout, on_message)
        except BackendUnavailable as error:
            raise UsageError(f"backend {self.backend}: {error}")
        except WorkerLost:  # its worker could not start: Ctrl-C's doing, else the machine's, never a verdict
            self.stop_if_interrupted()
            raise
        finally:
            bar.close()
        self.stop_if_interrupted()  # a gate the signal cut is no rejection: nothing recorded, no row
        row.gate_wall_seconds = time.perf_counter() - started
        if self.args.record and report.source_sha256:
            # The gate's own verdict, recorded as gate.py records it: a benchmarked admission is an admission.
            admissions.update_record(admissions.record_path_for(Path(row.file)), lambda record: admissions.with_result(
                record, report, self.backend, self.run["device"]))
        _fill_gate_row(row, report)
        _log(f"{count} {row.substrate}: gate {row.gate_verdict} in {row.gate_wall_seconds:.1f} s "
             f"(pipeline {report.seconds:.1f} s)")

    def substrate(self, index: int, job: "BenchJob", total: int) -> None:
        """Its rounds (--repeat) of baseline and gate, one after the other, and their medians; raises _Interrupted
        (the round under way left out) once Ctrl-C or SIGTERM came."""
        args, rounds = self.args, []
        for round_number in range(1, args.repeat + 1):
            row = Row(substrate=job.name, file=job.file, round=round_number)
            phases = ([] if args.no_baseline else [self.baseline_phase]) + ([] if args.no_gate else [self.gate_phase])
            if args.order == "gate-first":
                phases.reverse()
            count = f"[{index}/{total}]" + (f" round {round_number}/{args.repeat}" if args.repeat > 1 else "")
            for phase in phases:  # one after the other: the baseline's process has exited before the gate starts
                self.stop_if_interrupted()
                phase(row, count)
            self.rows.append(row)
            rounds.append(row)
            self.save()
        if args.repeat > 1:
            self.medians.append(Medians.of(rounds))
            self.save()


def _fill_gate_row(row: Row, report) -> None:
    row.gate_verdict = report.verdict.value
    row.gate_pipeline_seconds = report.seconds
    row.gate_peak_reserved_bytes = report.peak_device_bytes
    row.gate_reasons = report.reasons()
    row.gate_phase_seconds = report.phase_seconds
    row.gate_phase_calls = report.phase_calls
    row.gate_phase_trace = report.phase_trace
    compile_check = [c for c in report.checks if c.check.value == "compile" and c.ok]
    if compile_check:
        row.gate_compile_from_cache = "from the compile cache" in compile_check[0].detail


def _run(args) -> int:
    backend, why = _check_usage(args)
    jobs = _jobs(args, backend)
    print(f"bench_gate: {len(jobs)} substrate(s) on backend {backend}{why}; order {args.order}; baseline "
          f"{args.trials} trials, seed {args.seed}, torch.allclose atol=rtol={args.tolerance:g}, inputs "
          f"{'as get_inputs() makes them' if args.precision == 'keep' else 'cast to ' + PRECISIONS[args.precision]}",
          flush=True)
    run = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "device": "",
           "backend": backend, **git_commit(), "order": args.order, "trials": args.trials, "seed": args.seed,
           "tolerance": args.tolerance, "precision": args.precision, "rows": []}
    bench = _Bench(args, backend, {(job.file, job.name): job for job in jobs}, run)
    done = 0
    with caught(bench.interruption):
        try:
            for index, job in enumerate(jobs, 1):
                bench.substrate(index, job, len(jobs))
                done = index
        except _Interrupted:
            pass
    print(f"{run['device'] or backend}")
    print(format_table(bench.rows))
    if bench.medians:
        print(format_medians(bench.medians))
    print(legend(args.tolerance, args.trials, args.seed, args.precision))
    if bench.interruption.stopped():
        return _interrupted(bench, jobs, done)
    return EXIT_OK if all(r.gate_ok and r.baseline_ok for r in bench.rows) else EXIT_FAILED


def _interrupted(bench: _Bench, jobs: list, done: int) -> int:
    """The run's end after Ctrl-C or SIGTERM: the rounds that finished are above and in --json, marked incomplete."""
    bench.run["incomplete"] = {"interrupted_by": bench.interruption.signal_name,
                               "not_measured": [job.name for job in jobs[done:]]}
    bench.save()
    kept = f"; {bench.args.json} holds what finished, marked incomplete" if bench.args.json else ""
    print(bench.interruption.line(done, len(jobs), "substrates") + kept, flush=True)
    return EXIT_INTERRUPTED


if __name__ == "__main__":
    # Run from the module proper, not __main__, so the spawned baseline process finds its function by name.
    from harness.benchmarks.gate import main as _main

    sys.exit(_main())
