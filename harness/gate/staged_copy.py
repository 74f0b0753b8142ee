"""A large host tensor copied to a CUDA device through two small pinned buffers, from a thread beside the trials.

Copied from pageable memory in one call, the whole transfer goes through the driver's own staging, and the CUDA
documentation allows any call to wait on such internal resources: on the H100, while the second references' thread
copied a CPU route's 4 GiB result to the device (0.60 s), kb_matmul_small_k's ref on the trials' stream waited
0.45 s once, on a stream of the thread's own as on the trials' stream. From pinned memory a copy is queued and the
call returns; the host fills the other buffer with the next chunk meanwhile, so no call of the copy lasts longer
than one chunk's memcpy on the host.
"""

from __future__ import annotations

from typing import Callable

import torch

CHUNK_BYTES = 32 << 20  # each pinned buffer: enough to keep the copy engine busy, small beside a large result


def chunk_spans(numel: int, chunk: int) -> list[tuple[int, int]]:
    """[start, stop) element ranges of at most `chunk` elements covering `numel`, in order."""
    return [(start, min(start + chunk, numel)) for start in range(0, numel, chunk)]


def copy_through(host: torch.Tensor, target: torch.Tensor, buffers: list[torch.Tensor],
                 send: Callable[[int, torch.Tensor, torch.Tensor], None], wait: Callable[[int], None]) -> None:
    """`host`'s elements into `target` (contiguous, of its shape and dtype), a chunk at a time through `buffers`
    (uint8, each of the same byte size) in turn: `wait(k)` until buffer k's last chunk has left it, the chunk
    copied into it on the host, then `send(k, target's slice, the staged chunk)`."""
    flat_host, flat_target = host.contiguous().view(-1), target.view(-1)
    per_chunk = buffers[0].numel() // host.element_size()
    for index, (start, stop) in enumerate(chunk_spans(flat_host.numel(), per_chunk)):
        k = index % len(buffers)
        wait(k)
        staged = buffers[k][:(stop - start) * host.element_size()].view(host.dtype)
        staged.copy_(flat_host[start:stop])
        send(k, flat_target[start:stop], staged)


class PinnedStaging:
    """Two pinned buffers of CHUNK_BYTES, made at first use, for copies to the device on `stream` (one thread's)."""

    def __init__(self, chunk_bytes: int = CHUNK_BYTES):
        self.chunk_bytes = chunk_bytes
        self._buffers: list[torch.Tensor] = []
        self._sent: list[torch.cuda.Event | None] = []

    def copy(self, host: torch.Tensor, target: torch.Tensor, stream: torch.cuda.Stream) -> None:
        """`host` into `target` (on the device) on `stream`: through the buffers past one chunk, in one copy within
        it; the caller synchronizes `stream` before it reads `target`."""
        if host.numel() * host.element_size() <= self.chunk_bytes:
            with torch.cuda.stream(stream):
                target.copy_(host)
            return
        if not self._buffers:
            self._buffers = [torch.empty(self.chunk_bytes, dtype=torch.uint8, pin_memory=True) for _ in range(2)]
            self._sent = [None, None]

        def send(k: int, destination: torch.Tensor, staged: torch.Tensor) -> None:
            with torch.cuda.stream(stream):
                destination.copy_(staged, non_blocking=True)
            self._sent[k] = torch.cuda.Event()
            self._sent[k].record(stream)

        def wait(k: int) -> None:
            if self._sent[k] is not None:
                self._sent[k].synchronize()

        copy_through(host, target, self._buffers, send, wait)

    def release(self) -> None:
        """The pinned buffers given back (after the last copy has left them)."""
        for event in self._sent:
            if event is not None:
                event.synchronize()
        self._buffers, self._sent = [], []
