"""The CPU backend: not built yet (issue 3). Asking for it says so instead of guessing."""

from harness.backends.base import Backend, BackendUnavailable


class CpuBackend(Backend):
    name = "cpu"

    def __init__(self):
        raise BackendUnavailable(
            "the CPU backend is not built yet (it is issue 3); run the gate on a machine with a GPU "
            "(--backend cuda)"
        )
