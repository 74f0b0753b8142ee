"""harness.gate.staged_copy: a large host tensor sent a chunk at a time through buffers that are reused."""

import pytest
import torch

from harness.gate.staged_copy import chunk_spans, copy_through


def test_the_chunks_cover_every_element_once_in_order():
    assert chunk_spans(0, 4) == []
    assert chunk_spans(3, 4) == [(0, 3)]
    assert chunk_spans(8, 4) == [(0, 4), (4, 8)]
    assert chunk_spans(10, 4) == [(0, 4), (4, 8), (8, 10)]


class _QueuedSends:
    """Sends as a device queues them: the chunk is read from its buffer only when the buffer is waited for (or at the
    end), so a buffer refilled before that sends the wrong values."""

    def __init__(self):
        self.pending: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.calls: list[tuple[str, int]] = []

    def send(self, k, destination, staged):
        assert k not in self.pending, f"buffer {k} sent again before it was waited for"
        self.calls.append(("send", k))
        self.pending[k] = (destination, staged)

    def wait(self, k):
        self.calls.append(("wait", k))
        if k in self.pending:
            destination, staged = self.pending.pop(k)
            destination.copy_(staged)

    def finish(self):
        for k in list(self.pending):
            self.wait(k)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.bool, torch.int64,
                                   torch.complex64])
@pytest.mark.parametrize("numel", [1, 7, 8, 29])
def test_every_element_arrives_whatever_its_dtype_and_a_last_chunk_s_length(dtype, numel):
    # Buffers of 16 bytes: 1 to 16 elements a chunk, so 29 elements of 8 bytes are chunks of 2, the last of 1.
    host = (torch.arange(numel) % 5 + 1).to(dtype)
    target = torch.zeros(numel, dtype=dtype)
    sends = _QueuedSends()
    copy_through(host, target, [torch.empty(16, dtype=torch.uint8) for _ in range(2)], sends.send, sends.wait)
    sends.finish()
    assert torch.equal(target, host)


def test_a_buffer_is_refilled_only_after_its_last_chunk_has_left_it_and_the_two_take_turns():
    host = torch.arange(40, dtype=torch.float32)  # 10 chunks of 4 through two buffers of 16 bytes
    target = torch.zeros(40)
    sends = _QueuedSends()
    copy_through(host, target, [torch.empty(16, dtype=torch.uint8) for _ in range(2)], sends.send, sends.wait)
    sends.finish()
    assert torch.equal(target, host)
    assert sends.calls[:6] == [("wait", 0), ("send", 0), ("wait", 1), ("send", 1), ("wait", 0), ("send", 0)]


def test_a_host_tensor_that_is_not_contiguous_arrives_in_its_logical_order():
    host = torch.arange(24, dtype=torch.float32).reshape(4, 6).t()  # 6 x 4, strided
    target = torch.zeros(6, 4)
    sends = _QueuedSends()
    copy_through(host, target, [torch.empty(20, dtype=torch.uint8) for _ in range(2)], sends.send, sends.wait)
    sends.finish()
    assert torch.equal(target, host)
