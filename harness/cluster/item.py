"""One substrate's campaign on a Dask worker: the task (`run_campaign_item`), and the process of ours it runs.

`python -m harness.cluster.item SPEC.pickle` runs `harness.engine.run.run_plan` over the plan in the spec,
with a store that holds the results the client already has for that substrate (for the duplicate check)
and prints every result it is given as a line `MARK {json}`; its last line is the summary (the plan's
failure and step timeout, the workers' time). It exits when the Dask worker that started it is gone.
"""

from __future__ import annotations

import functools
import json
import os
import pickle
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

MARK = "@@harness-item "


@dataclass(frozen=True)
class ItemArgs:
    """What run_plan reads of a campaign's arguments."""

    batch_size: int
    cache_dir: Path | None
    kb_root: Path | None
    store: Path  # only its folder is used: the workers' log, on the host that runs the item


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


def run_campaign_item(spec: bytes, queue_name: str) -> dict:
    """The Dask task: our process over the pickled spec, each result put on the queue as it comes; the summary."""
    from distributed import Queue

    queue = Queue(queue_name)
    with tempfile.NamedTemporaryFile(prefix="harness-item-", suffix=".pickle", delete=False) as stream:
        stream.write(spec)
    try:
        process = subprocess.Popen([sys.executable, "-m", "harness.cluster.item", stream.name],
                                   stdout=subprocess.PIPE, text=True)
        summary = None
        for line in process.stdout:
            if not line.startswith(MARK):
                continue
            message = json.loads(line[len(MARK):])
            if message["event"] == "result":
                queue.put(message)
            else:
                summary = message
        code = process.wait()
    finally:
        os.unlink(stream.name)
    if summary is None:
        raise ItemLost(f"the item's process ended without its summary (exit status {code})")
    return summary


def main(argv: list[str]) -> int:
    from harness.engine.run import Progress, WorkerTime, prepare_campaign_worker, run_plan, worker_log
    from harness.worker import WorkerStarter, watch_parent

    watch_parent(os.getppid())  # the Dask worker gone (killed, its nanny restarting it): this item is for nothing
    spec = pickle.loads(Path(argv[0]).read_bytes())
    plan, args, backend = spec["plan"], spec["args"], spec["backend"]
    store = StreamingStore(spec["known"], sys.stdout)
    args.store.parent.mkdir(parents=True, exist_ok=True)
    starter = WorkerStarter(prepare=functools.partial(prepare_campaign_worker, backend, str(worker_log(args))),
                            ahead=False)
    worker_time = WorkerTime()
    try:
        run_plan(plan, args, backend, store, Progress(len(plan.to_run), disabled=True), starter, worker_time)
    finally:
        starter.close()
    sys.stdout.write(MARK + json.dumps({"event": "summary", "failure": plan.failure,
                                        "step_timeout": plan.step_timeout, "phases": worker_time.phases,
                                        "wall": worker_time.wall, "workers": worker_time.workers}) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
