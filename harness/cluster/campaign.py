"""A campaign's plans run on a Dask cluster: one item per substrate, results stored here as they arrive."""

from __future__ import annotations

import pickle
import threading
import uuid
from pathlib import Path

from harness.cluster.item import ITEM_RETRIES, ItemArgs, client_thread_caps, run_campaign_item
from harness.engine.store import ResultKey


def item_spec(plan, args, backend: str, store) -> bytes:
    """What one item's process needs: the plan, the arguments run_plan reads, and the substrate's stored results."""
    keys = (ResultKey(plan.source_sha256, backend, m.id) for m in plan.mutants)
    known = {key: store.get(key) for key in keys if key in store}
    # The workers' log goes to a folder of the host that runs the item, not to this host's store folder.
    remote_store = Path(".campaign-cluster") / "results.jsonl"
    item_args = ItemArgs(batch_size=args.batch_size, cache_dir=args.cache_dir, kb_root=args.kb_root,
                         store=remote_store, spare_workers=args.spare_workers,
                         device_share_bytes=getattr(args, "device_share_bytes", None))
    return pickle.dumps({"plan": plan, "args": item_args, "backend": backend, "known": known,
                         "thread_caps": client_thread_caps()})


def run_on_cluster(client, plans: list, args, backend: str, store, progress, worker_time, gpu_share: float) -> None:
    """Every plan with mutants to run as an item of the cluster; each result stored once, as it arrives.

    `gpu_share`: the GPU resource an item takes (0 on the CPU backend: none asked). A plan whose item fails
    for good gets its failure, as a local worker that cannot start does."""
    from distributed import Queue, as_completed

    queue_name = f"harness-campaign-{uuid.uuid4().hex}"
    queue = Queue(queue_name, client=client)
    resources = {"GPU": gpu_share} if gpu_share else None
    futures = {client.submit(run_campaign_item, item_spec(plan, args, backend, store), queue_name,
                             key=f"campaign-{plan.name}-{uuid.uuid4().hex[:8]}", resources=resources,
                             retries=ITEM_RETRIES, pure=False): plan
               for plan in plans if plan.to_run}
    finished = threading.Event()

    def store_arrivals() -> None:
        while True:
            done = finished.is_set()  # read before draining: what arrived before the last item ended is drained
            for message in queue.get(batch=True):
                key = ResultKey(*message["key"])
                if key in store:  # judged again by an item run again after its worker was lost: the first stays
                    continue
                store.put(key, message["record"])
                progress.done(message["record"]["status"])
            if done:
                return
            finished.wait(0.2)

    drain = threading.Thread(target=store_arrivals, name="cluster-results", daemon=True)
    drain.start()
    try:
        for future in as_completed(list(futures)):
            plan = futures[future]
            try:
                summary = future.result()
            except Exception as error:  # retries spent, or the scheduler gave up on it (KilledWorker)
                plan.failure = f"its item failed on the cluster: {type(error).__name__}: {error}"
                continue
            plan.failure = plan.failure or summary["failure"]
            plan.step_timeout = plan.step_timeout or summary["step_timeout"]
            worker_time.merge(summary["phases"], summary["wall"], summary["workers"])
    finally:
        finished.set()
        drain.join()
