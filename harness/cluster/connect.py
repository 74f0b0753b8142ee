"""A client of a Dask distributed scheduler: at an address, or of a cluster started on this host."""

from __future__ import annotations

import os
from contextlib import contextmanager

LOCAL = "local"
INSTALL = "pip install -e '.[cluster]'"
QUIET = ("DASK_LOGGING__DISTRIBUTED", "error")  # a local cluster's workers: their start and stop are not news


class ClusterUnavailable(Exception):
    """dask or distributed is not installed, or the scheduler cannot be reached: a usage error (exit 2)."""


def local_worker_specs(gpus: int, cpu_workers: int, per_gpu: int, visible: str | None) -> dict:
    """Nanny specs for a cluster on this host: one Dask worker per GPU, each with the resource GPU=1, its own
    CUDA_VISIBLE_DEVICES and `per_gpu` threads (items each take 1 / per_gpu of a GPU: several per GPU run
    at once, as a local campaign's workers do); without GPUs, `cpu_workers` workers of one thread."""
    from distributed import Nanny

    if not gpus:
        return {f"cpu-{i}": {"cls": Nanny, "options": {"nthreads": 1}}
                for i in range(max(1, cpu_workers))}
    names = [n.strip() for n in visible.split(",")] if visible else [str(i) for i in range(gpus)]
    return {f"gpu-{name}": {"cls": Nanny, "options": {"nthreads": per_gpu, "resources": {"GPU": 1},
                                                       "env": {"CUDA_VISIBLE_DEVICES": name}}}
            for name in names[:gpus]}


@contextmanager
def cluster_client(address: str, gpus: int, cpu_workers: int, per_gpu: int, visible: str | None):
    """A `distributed.Client` of `address`, or of a cluster started here for `local` (and stopped after)."""
    from harness.cluster.item import client_thread_caps

    caps = client_thread_caps()
    try:
        from distributed import Client, Scheduler, SpecCluster
    except ImportError as error:
        raise ClusterUnavailable(f"--scheduler needs dask and distributed ({error}): {INSTALL}") from None

    if address == LOCAL:
        import logging

        for name in ("distributed", "distributed.nanny", "distributed.core", "distributed.scheduler"):
            logging.getLogger(name).setLevel(logging.ERROR)  # the nannies and the scheduler live in this process
        try:
            import dask_cuda  # noqa: F401  (where installed, its cluster pins each worker to its GPU)
        except ImportError:
            dask_cuda = None
        if dask_cuda is not None and gpus:
            cluster = dask_cuda.LocalCUDACluster(threads_per_worker=per_gpu, resources={"GPU": 1},
                                                 dashboard_address=None)
        else:
            # The workers' processes read their logging setting when they import distributed, before a nanny's
            # `env` applies: it is in this process's environment while they start.
            before = {QUIET[0]: os.environ.get(QUIET[0])}
            os.environ[QUIET[0]] = QUIET[1]
            try:
                cluster = SpecCluster(workers=local_worker_specs(gpus, cpu_workers, per_gpu, visible),
                                      scheduler={"cls": Scheduler, "options": {"dashboard_address": None}},
                                      silence_logs=logging.ERROR)
            finally:
                _restore(before)
        try:
            with Client(cluster) as client:
                # Every worker up before the items go: the first to register would otherwise be handed them all.
                client.wait_for_workers(len(cluster.worker_spec), timeout=120)
                _restore(caps)
                yield client
        finally:
            cluster.close()
        return
    try:
        client = Client(address, timeout=30)
    except (OSError, TimeoutError, ValueError) as error:
        raise ClusterUnavailable(f"--scheduler {address}: cannot reach the scheduler: {error}") from None
    _restore(caps)
    with client:
        yield client


def _restore(saved: dict) -> None:
    """Environment variables as they were (None: unset). For the thread caps: distributed's nannies set
    OMP_NUM_THREADS (and kin) to 1 here for the workers they spawn, and every process of ours started after
    (the items' own, this host's oracles) is to get the user's setting, as without --scheduler."""
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def require_gpu_workers(client, address: str) -> None:
    """Refuse a cluster none of whose workers has the resource GPU: items that ask for one would wait forever."""
    workers = client.scheduler_info().get("workers", {})
    if not any(w.get("resources", {}).get("GPU", 0) > 0 for w in workers.values()):
        raise ClusterUnavailable(f"--scheduler {address}: none of its {len(workers)} worker(s) has the resource GPU "
                                 f"that a cuda item needs (start each with: dask worker {address} --resources GPU=1)")
