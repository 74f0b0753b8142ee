"""One substrate's item on a Dask worker: the tasks (`run_campaign_item`, `run_gate_item`), and the process of
ours each runs.

`python -m harness.cluster.item SPEC.pickle` runs what the spec names: a campaign's plan through
`harness.engine.run.run_plan`, with a store that holds the results the client already has for that substrate
(for the duplicate check) and prints every result it is given as a line `MARK {json}`; or one substrate's gate
run through `harness.gate.worker.run_gate_job`. Its last line is the summary (the plan's failure, step timeout and
workers' time; the gate's report). It exits when the Dask worker that started it is gone. A process, not the
Dask worker's own threads: its fault or hang ends it alone, and it may start our worker processes (a Dask
worker is a daemon process, which multiprocessing does not let have children).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import pickle
import select
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from harness.processes import WorkerStarter
from harness.watch import watch_parent

MARK = "@@harness-item "
ITEM_RETRIES = 2  # an item whose process ends without its summary (not a lost Dask worker: the scheduler
#                   reschedules those by itself) is tried again, elsewhere if the cluster has room


@dataclass(frozen=True)
class ItemArgs:
    """What run_plan reads of a campaign's arguments."""

    batch_size: int
    cache_dir: Path | None
    kb_root: Path | None
    store: Path  # only its folder is used: the workers' log, on the host that runs the item
    spare_workers: str = "auto"  # --spare-workers: here, whether item processes are started ahead
    device_share_bytes: int | None = None  # --worker-memory, where given: the item's workers park trials past it


class ItemLost(Exception):
    """Our process ended without its summary (killed, or it crashed): the scheduler may run the item again."""


class StreamingStore:
    """The store run_plan writes into: the results handed in, and each new one printed for the Dask worker."""

    def __init__(self, known: dict, out):
        self._results, self.out = dict(known), out

    def get(self, key):
        return self._results.get(key)

    def __contains__(self, key) -> bool:
        return key in self._results

    def put(self, key, result: dict) -> None:
        self._results[key] = result
        self.out.write(MARK + json.dumps({"event": "result", "key": [key.source_sha256, key.backend, key.mutant_id],
                                          "record": result}) + "\n")
        self.out.flush()


# A Dask nanny starts its worker with these set to 1 (distributed.nanny.pre-spawn-environ), for tasks that
# would each spread over every core. Our item's workers are processes that share the host's cores as a local
# run's do (the CPU backend runs a kernel's blocks over OpenMP threads): they get what the client had, or the
# libraries' own defaults. Measured: on 2 cores, capped at 1 the CPU campaign ran 1.8x slower.
THREAD_CAPS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def client_thread_caps() -> dict[str, str | None]:
    return {name: os.environ.get(name) for name in THREAD_CAPS}


def item_environment(caps: dict[str, str | None], environ: dict[str, str]) -> dict[str, str]:
    """The environment of our item's process: the Dask worker's, with the client's thread caps (or none)."""
    environment = {k: v for k, v in environ.items() if k not in THREAD_CAPS}
    environment.update({k: v for k, v in caps.items() if v is not None})
    return environment


WANTED_POLL_SECONDS = 2.0


UNREACHABLE_CHECKS = 5  # the scheduler not answering this many checks in a row: no one can take the results


def _stop_when_unwanted(process: subprocess.Popen) -> None:
    """End our process once no client wants its result: a running Dask task cannot be cancelled, and a
    substrate's item could otherwise hold its GPU for minutes after its client was killed. Called in the
    task's thread: the worker and its client are found there, not in the watching thread."""
    import threading

    try:
        from distributed import get_client, get_worker

        key, client = get_worker().get_current_task(), get_client()
    except (ImportError, ValueError):  # not in a Dask task (a test calling the task's function)
        return

    def watch():
        unanswered = 0
        while process.poll() is None:
            time.sleep(WANTED_POLL_SECONDS)
            try:  # the scheduler holds the task while a client wants it: a killed client's futures are released
                wanted = bool(client.run_on_scheduler(lambda dask_scheduler, key=key: key in dask_scheduler.tasks))
                unanswered = 0
            except Exception:
                unanswered += 1
                wanted = unanswered < UNREACHABLE_CHECKS
            if not wanted and process.poll() is None:
                process.kill()

    threading.Thread(target=watch, name="item-wanted", daemon=True).start()


SPARE_ARG = "--spare"  # our process started ahead: it starts its fork server, then reads its spec's path on stdin
SPARE_IDLE_SECONDS = 600.0  # a spare no item has taken by then exits, and its fork server with it


def _start_item_process(environment: dict[str, str], spare: bool, spec_path: str = "") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness.cluster.item", SPARE_ARG if spare else spec_path],
                            stdin=subprocess.PIPE if spare else subprocess.DEVNULL, stdout=subprocess.PIPE,
                            text=True, env=environment)


class SpareItems:
    """One Dask worker's item processes started ahead, a spare for each item it runs at once.

    An item's process starts Python and a fork server that imports torch and the harness: seconds, on
    every item (a campaign over the 28 runs 28), where a local campaign pays them once. A spare does
    that while the items before it run, as a local campaign's spare workers do (`--spare-workers`;
    auto: where each item and its spare can have a CPU core). Spares are kept per environment (the
    client's thread caps), so an item runs in the environment it asked for.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._waiting: dict[tuple, list[subprocess.Popen]] = {}
        self.taken_ahead = 0  # items that found a spare

    def run(self, environment: dict[str, str], spec_path: str, ahead: bool) -> subprocess.Popen:
        """Our process running the spec at spec_path: a spare if one waits, else a fresh one; with `ahead`,
        a spare is started for the next item."""
        key = tuple(sorted(environment.items()))
        with self._lock:
            waiting = self._waiting.setdefault(key, [])
            process = None
            while waiting and process is None:
                candidate = waiting.pop(0)
                if candidate.poll() is None:
                    process = candidate
            if ahead:
                waiting.append(_start_item_process(environment, spare=True))
        if process is not None:
            try:
                process.stdin.write(spec_path + "\n")
                process.stdin.close()
                with self._lock:
                    self.taken_ahead += 1
                return process
            except OSError:  # it died between the check and the write
                process.kill()
        return _start_item_process(environment, spare=False, spec_path=spec_path)

    def close(self) -> None:
        """Stop the spares no item took (they also stop by themselves: idle, or their Dask worker gone)."""
        with self._lock:
            waiting = [process for processes in self._waiting.values() for process in processes]
            self._waiting.clear()
        for process in waiting:
            process.kill()
            process.wait()


# The Dask worker's own: this module is imported once in each worker process, whose tasks share it.
SPARES = SpareItems()


def spare_items_wanted(mode: str) -> bool:
    """--spare-workers for item processes: auto when each item this host runs at once and its spare can have a core."""
    from harness.engine.run import spares_wanted

    # Only auto asks the cluster how many items this host runs (outside a Dask task there is none to ask).
    return spares_wanted(mode, _items_on_this_host() if mode == "auto" else 1, os.cpu_count() or 1)


def _run_item(spec: dict, on_result, ahead: bool = False, spares: SpareItems = SPARES) -> dict:
    """Our process over the pickled spec; on_result(message) for each result line; the summary it ends with.

    `ahead`: start a spare process for the next item on this Dask worker (SpareItems)."""
    with tempfile.NamedTemporaryFile(prefix="harness-item-", suffix=".pickle", delete=False) as stream:
        stream.write(pickle.dumps(spec))
    try:
        process = spares.run(item_environment(spec.get("thread_caps", {}), dict(os.environ)), stream.name, ahead)
        _stop_when_unwanted(process)
        summary = None
        for line in process.stdout:
            if not line.startswith(MARK):
                continue
            message = json.loads(line[len(MARK):])
            if message["event"] == "result":
                on_result(message)
            else:
                summary = message
        code = process.wait()
    finally:
        os.unlink(stream.name)
    if summary is None:
        raise ItemLost(f"the item's process ended without its summary (exit status {code})")
    return summary


def compilers_per_item(cores: int, items_on_host: int) -> int:
    """Processes an item keeps compiling its substrate's batches ahead of its worker: its share of the host's
    cores, less the one its worker runs on (a local campaign gives its compile pool the cores its workers leave)."""
    return max(0, cores // max(1, items_on_host) - 1)


def _items_on_this_host() -> int:
    """How many items the Dask workers of this task's host run at once: the threads of each worker there."""
    from distributed import get_client, get_worker

    host = get_worker().address.rsplit(":", 1)[0]
    workers = get_client().scheduler_info()["workers"]
    return sum(int(w.get("nthreads", 1)) for address, w in workers.items() if address.rsplit(":", 1)[0] == host)


def run_campaign_item(plan_spec: bytes, queue_name: str) -> dict:
    """The Dask task of a campaign: one substrate's plan, each result put on the queue as it comes; the summary."""
    from distributed import Queue

    queue = Queue(queue_name)
    spec = pickle.loads(plan_spec)
    compilers = compilers_per_item(os.cpu_count() or 1, _items_on_this_host())
    return _run_item({"kind": "campaign", "compilers": compilers, **spec}, queue.put,
                     ahead=spare_items_wanted(spec["args"].spare_workers))


def run_gate_item(job, step_timeout: float, thread_caps: dict[str, str | None]) -> dict:
    """The Dask task of a gate run: one substrate gated (`harness.gate.worker.run_gate_job`); its report as JSON.

    The job shares its host's memory with the items the host's Dask workers run beside it."""
    job = dataclasses.replace(job, jobs_at_once=_items_on_this_host())
    return _run_item({"kind": "gate", "job": job, "timeout": step_timeout, "thread_caps": thread_caps},
                     lambda message: None, ahead=spare_items_wanted("auto"))


def _wait_as_spare() -> str | None:
    """A spare's start: its fork server up (Python, torch and the harness imported), then its spec's path from
    stdin; None when no item came within SPARE_IDLE_SECONDS or the Dask worker closed the pipe."""
    import multiprocessing.forkserver

    import harness.engine.compile  # noqa: F401  what the item imports before its first worker
    import harness.engine.run  # noqa: F401
    from harness.processes import quiet_openmp, worker_context

    quiet_openmp()  # as start_worker does, before the fork server starts
    if worker_context().get_start_method() == "forkserver":
        multiprocessing.forkserver.ensure_running()
    ready, _, _ = select.select([sys.stdin], [], [], SPARE_IDLE_SECONDS)
    line = sys.stdin.readline().strip() if ready else ""
    return line or None


def main(argv: list[str]) -> int:
    watch_parent(os.getppid())  # the Dask worker gone (killed, its nanny restarting it): this item is for nothing
    spec_path = _wait_as_spare() if argv[0] == SPARE_ARG else argv[0]
    if spec_path is None:
        return 0
    spec = pickle.loads(Path(spec_path).read_bytes())
    summary = _gate(spec) if spec["kind"] == "gate" else _campaign(spec)
    sys.stdout.write(MARK + json.dumps({"event": "summary", **summary}) + "\n")
    sys.stdout.flush()
    return 0


def _gate(spec: dict) -> dict:
    from harness.backends import BackendUnavailable
    from harness.gate.worker import run_gate_job

    device = []
    try:
        report = run_gate_job(spec["job"], spec["timeout"],
                              lambda message: device.append(message[1]) if message[0] == "device" else None)
    except BackendUnavailable as error:
        return {"unavailable": str(error)}
    return {"report": report.to_json(), "device": device[0] if device else ""}


def _campaign(spec: dict) -> dict:
    from harness.engine.compile import compile_ahead
    from harness.engine.run import (Progress, WorkerTime, checks_addresses, prepare_campaign_worker, run_plan,
                                    uses_schemata, worker_log)

    plan, args, backend = spec["plan"], spec["args"], spec["backend"]
    store = StreamingStore(spec["known"], sys.stdout)
    args.store.parent.mkdir(parents=True, exist_ok=True)
    starter = WorkerStarter(prepare=functools.partial(prepare_campaign_worker, backend, str(worker_log(args))),
                            ahead=False)
    worker_time = WorkerTime()
    # The plan's batches compiled into this host's cache ahead of the item's worker, as a local campaign's are.
    compile_pool = compile_ahead(spec.get("compilers", 0) if args.batch_size > 1 else 0, [plan], args.batch_size,
                                 backend, args.cache_dir, checks_addresses(args, backend),
                                 schemata=uses_schemata(args, backend))
    try:
        run_plan(plan, args, backend, store, Progress(len(plan.to_run), disabled=True), starter, worker_time)
    finally:
        compile_pool.close()
        starter.close()
    return {"failure": plan.failure, "step_timeout": plan.step_timeout, "phases": worker_time.phases,
            "wall": worker_time.wall, "workers": worker_time.workers}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
