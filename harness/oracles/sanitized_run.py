"""The program compute-sanitizer runs: each planned substrate's kernel, once on each of its small cases.

`python -m harness.oracles.sanitized_run PLAN.json EVENTS.jsonl`. The plan names the backend and
the substrates (a campaign's mutant is its substrate with other CUDA source, under a label of its
own); for each, the cases are the probe's entries and the smallest trial of every suite
of at most `max_bytes` of input (a KernelBench-sized T0 is left to the probe, whose first entry is
aligned like it). Inputs are plain device copies, without the gate's guard bands, which would put
an out-of-bounds access into valid memory; the parent sets PYTORCH_NO_CUDA_MEMORY_CACHING=1 so that
every tensor is an allocation of its own, as memcheck needs to see an overrun. Targets of one substrate
in a row (a campaign's survivors follow their unmutated kernel) share its cases, built once; each
kernel runs on fresh copies of them.

Each line of EVENTS is a JSON object: `ready` once, with the wall clock, when the program has started (its
imports and backend made); then `start`, `case`, `done` per substrate, so the parent knows which substrate a
report or a death belongs to, and `done` says how long the substrate took and how much of it its loading. Under
racecheck (the plan's `tool`), a kernel whose PTX has no shared memory is loaded but not run: its `done` says
why (`skipped`), as racecheck could report nothing of it. A
CUDA error after a launch leaves the context unusable: the program writes `lost` and exits with LOST_EXIT, and
the parent starts another for the substrates left.

Started ahead (the gate starts each tool's process beside its discovery of the candidates): the environment's
`START_ENV` (harness.oracles.sanitizer's) holds the backend, compile cache and watched process as JSON; the program makes its backend, writes
`ready`, and waits for PLAN to appear (the parent writes it whole, by rename) once the substrates are known.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from harness.oracles.sanitizer import START_ENV, read_verdict

LOST_EXIT = 3
# racecheck watches shared memory only: a kernel whose module has none gets no cases under it.
NO_SHARED_MEMORY = ("the kernel's PTX declares and addresses no shared memory (no .shared state space), the only "
                    "memory racecheck watches")
PLAN_POLL_SECONDS = 0.01


def _bytes(inputs: list) -> int:
    return sum(x.numel() * x.element_size() for x in inputs if hasattr(x, "element_size"))


def cases(entry, t0_bytes: int, max_bytes: int, torch) -> tuple[list[tuple[str, list]], list[str]]:
    """The (where, host inputs) cases of one substrate, and a note for each suite left out."""
    from harness.candidates import builder_output
    from harness.gate.checks.suite_rules import T0_NAME

    found, notes = [], []
    for t, (_label, tensors) in enumerate(entry.probe(torch)):
        found.append((f"probe trial {t}", list(tensors)))
    for name, n_trials, builder in entry.suites():
        if name == T0_NAME and t0_bytes > max_bytes:
            notes.append(f"{name} left to the probe (a trial is {t0_bytes / 2**20:.0f} MiB, over "
                         f"{max_bytes / 2**20:.0f} MiB)")
            continue
        smallest = None
        # T0's trials all have get_inputs()'s shapes (the gate checks it): trial 0 is as small as any.
        for t in range(1 if name == T0_NAME else n_trials):
            inputs = builder_output(builder, t, torch.device("cpu"))
            if smallest is None or _bytes(inputs) < _bytes(smallest[1]):
                smallest = (f"{name} trial {t}", inputs)
        if smallest is not None and _bytes(smallest[1]) > max_bytes:
            notes.append(f"{name} left out (its smallest trial is {_bytes(smallest[1]) / 2**20:.0f} MiB)")
        elif smallest is not None:
            found.append(smallest)
    return found, notes


def _write(events, **record) -> None:
    events.write(json.dumps(record) + "\n")
    events.flush()


def _model_state(entry, path: Path, kb_root: str | None, device) -> list:
    """The tensors the entry's model_state names, from the official Model built as the gate builds it; [] for
    an entry that names none (its Model is not built here: the tools watch the kernel, not the Model)."""
    if not entry.model_state:
        return []
    from harness.problems import ProblemSearch, load_problem, model_state

    search = ProblemSearch.for_candidate(path, Path(kb_root) if kb_root else None)
    return model_state(load_problem(entry.kb_file, search).build_model(device), entry.model_state)


class Prepared:
    """What the targets of one substrate share, kept for the next target: its cases, their notes and the Model's
    state. A campaign's survivors of a substrate come one after another, each its substrate with other CUDA source,
    and building the cases (every suite's trials, to find each one's smallest) and the official Model again for each
    was work the tool's process repeated. The candidate itself is imported afresh for each target, as before: what
    its module keeps between launches (a cached buffer, say) must not carry one kernel's writes to the next."""

    def __init__(self):
        self._key, self._cases = None, None

    def entry(self, target: dict):
        """The target's substrate's entry, from its candidate imported now."""
        from harness.candidates import import_candidate, make_entry, register_candidate

        path, registered = Path(target["file"]), target["name"]
        entry, problems = make_entry(registered, register_candidate(import_candidate(path), path)[registered], path)
        if entry is None:
            raise ValueError("; ".join(problems))
        key = (target["file"], registered, target.get("t0_bytes", 0), target["max_bytes"], target.get("kb_root"))
        if key != self._key:
            self._key, self._cases = key, None
        return entry

    def cases(self, entry, target: dict, backend, torch) -> tuple[list, list[str], list]:
        """The substrate's (where, host inputs) cases, a note for each suite left out, and its Model's state; built
        with `entry` (this target's) where the target before was of another substrate."""
        if self._cases is None:
            found, notes = cases(entry, target.get("t0_bytes", 0), target["max_bytes"], torch)
            state = _model_state(entry, Path(target["file"]), target.get("kb_root"), backend.device)
            self._cases = (found, notes, state)
        found, notes, state = self._cases
        return found, list(notes), state


def run_substrate(target: dict, backend, events, torch, tool: str = "", prepared: Prepared | None = None) -> bool:
    """Launch one substrate's kernel on its cases under `tool`; False when the CUDA context was lost. `prepared`:
    what the targets before it built of the same substrate."""
    from harness.compiler import signature

    prepared = prepared or Prepared()
    name = target.get("label") or target["name"]  # the program's, a mutant's
    started = time.perf_counter()
    _write(events, event="start", substrate=name)
    try:
        entry = prepared.entry(target)
        kernel = backend.load(target.get("cuda") or entry.cuda, entry.kernel_name, f"{name}.cu",
                              entry.locate_cuda_line)
        loaded = time.perf_counter() - started  # the candidate imported and its kernel loaded (under the tool)
        if tool == "racecheck" and not kernel.shared_memory:
            _write(events, event="done", substrate=name, cases=[], notes=[], skipped=NO_SHARED_MEMORY,
                   seconds=round(time.perf_counter() - started, 3), load_seconds=round(loaded, 3))
            return True
        found, notes, state = prepared.cases(entry, target, backend, torch)
    except Exception as error:
        _write(events, event="done", substrate=name, error=f"{type(error).__name__}: {error}", cases=[], notes=[])
        return True
    ran = []
    for where, inputs in found:
        # Copies, even on the device they are on (the CPU backend's): the next target of the substrate runs on them.
        views = [x.to(backend.device, copy=True) if isinstance(x, torch.Tensor) else x for x in [*inputs, *state]]
        try:
            out, grid, block, args = entry.launch(views, torch)
        except Exception as error:  # the gate reports launch's own errors; here the case is only not run
            notes.append(f"{where}: launch raised {type(error).__name__}: {error}")
            continue
        try:
            backend.launch(kernel, tuple(grid), tuple(block), signature.to_ctypes(args))
            backend.synchronize()
        except Exception as error:
            _write(events, event="lost", substrate=name, where=where, error=f"{type(error).__name__}: {error}")
            return False
        ran.append(where)
        _write(events, event="case", substrate=name, where=where)  # progress: the parent ends a process that stalls
        del out, views
    _write(events, event="done", substrate=name, cases=ran, notes=notes,
           seconds=round(time.perf_counter() - started, 3), load_seconds=round(loaded, 3))
    return True


def wait_for_verdict(verdicts: Path, target: dict, events) -> str:
    """The gate's verdict on a target that awaits it ("go", or "skip: why"), once written; meanwhile the
    `waiting` event tells the parent that this is the gate's time, not a stalled kernel's."""

    name = target.get("label") or target["name"]
    _write(events, event="waiting", substrate=name)
    while (verdict := read_verdict(verdicts, name)) is None:
        time.sleep(PLAN_POLL_SECONDS)
    return verdict


def wait_for_plan(path: Path) -> dict:
    """The plan, once the parent has renamed it into place (so it is whole when it exists)."""
    while not path.exists():
        time.sleep(PLAN_POLL_SECONDS)
    return json.loads(path.read_text())


def main(argv: list[str]) -> int:
    import torch

    from harness.backends import create_backend

    started_ahead = os.environ.get(START_ENV)
    plan = json.loads(started_ahead) if started_ahead else json.loads(Path(argv[0]).read_text())
    if plan.get("watch_pid"):  # the gate or campaign above compute-sanitizer: gone, this run is for nothing
        from harness.watch import watch_process

        watch_process(plan["watch_pid"])
    backend = create_backend(plan["backend"], cache_dir=Path(plan["cache_dir"]) if plan.get("cache_dir") else None)
    prepared = Prepared()
    with open(argv[1], "a") as events:
        _write(events, event="ready", wall=time.time())  # the parent counts the tool's and this start from it
        if started_ahead:
            plan = wait_for_plan(Path(argv[0]))
        for target in plan["targets"]:
            if target.get("await"):
                verdict = wait_for_verdict(Path(plan["verdicts"]), target, events)
                if verdict.startswith("skip: "):
                    _write(events, event="done", substrate=target.get("label") or target["name"], cases=[],
                           notes=[], skipped=verdict.removeprefix("skip: "))
                    continue
            if not run_substrate(target, backend, events, torch, plan.get("tool", ""), prepared):
                return LOST_EXIT
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
