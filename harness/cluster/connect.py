"""A client of a Dask distributed scheduler: at an address, or of a cluster started on this host."""

from __future__ import annotations

from contextlib import contextmanager

LOCAL = "local"
INSTALL = "pip install -e '.[cluster]'"


class ClusterUnavailable(Exception):
    """dask or distributed is not installed, or the scheduler cannot be reached: a usage error (exit 2)."""


def local_worker_specs(gpus: int, cpu_workers: int, per_gpu: int, visible: str | None) -> dict:
    """Nanny specs for a cluster on this host: one Dask worker per GPU, each with the resource GPU=1, its own
    CUDA_VISIBLE_DEVICES and `per_gpu` threads (items each take 1 / per_gpu of a GPU: several per GPU run
    at once, as a local campaign's workers do); without GPUs, `cpu_workers` workers of one thread."""
    from distributed import Nanny

    if not gpus:
        return {f"cpu-{i}": {"cls": Nanny, "options": {"nthreads": 1}} for i in range(max(1, cpu_workers))}
    names = [n.strip() for n in visible.split(",")] if visible else [str(i) for i in range(gpus)]
    return {f"gpu-{name}": {"cls": Nanny, "options": {"nthreads": per_gpu, "resources": {"GPU": 1},
                                                       "env": {"CUDA_VISIBLE_DEVICES": name}}}
            for name in names[:gpus]}


@contextmanager
def cluster_client(address: str, gpus: int, cpu_workers: int, per_gpu: int, visible: str | None):
    """A `distributed.Client` of `address`, or of a cluster started here for `local` (and stopped after)."""
    try:
        from distributed import Client, Scheduler, SpecCluster
    except ImportError as error:
        raise ClusterUnavailable(f"--scheduler needs dask and distributed ({error}): {INSTALL}") from None
    if address == LOCAL:
        try:
            import dask_cuda  # noqa: F401  (where installed, its cluster pins each worker to its GPU)
        except ImportError:
            dask_cuda = None
        if dask_cuda is not None and gpus:
            cluster = dask_cuda.LocalCUDACluster(threads_per_worker=per_gpu, resources={"GPU": 1},
                                                 dashboard_address=None)
        else:
            cluster = SpecCluster(workers=local_worker_specs(gpus, cpu_workers, per_gpu, visible),
                                  scheduler={"cls": Scheduler, "options": {"dashboard_address": None}},
                                  silence_logs=40)
        try:
            with Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    try:
        client = Client(address, timeout=30)
    except (OSError, TimeoutError, ValueError) as error:
        raise ClusterUnavailable(f"--scheduler {address}: cannot reach the scheduler: {error}") from None
    with client:
        yield client
