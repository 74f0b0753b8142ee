"""harness.gate.shared_draws: large draws made in shared memory are the draws torch makes, and pickle without a copy."""

import pytest
import torch

from harness.gate.shared_draws import draws_in_shared_memory


def _draw(call, seed: int):
    """The call's result under global seed `seed`, and the next value the global generator gives after it."""
    torch.manual_seed(seed)
    result = call()
    return result, torch.rand(3)


CALLS = {
    "rand, sizes as arguments": lambda: torch.rand(37, 129),
    "rand, a tuple": lambda: torch.rand((5, 7, 11)),
    "rand, size=": lambda: torch.rand(size=(4097,)),
    "rand, a torch.Size, float64": lambda: torch.rand(torch.Size([33, 65]), dtype=torch.float64),
    "rand, float16": lambda: torch.rand(1000, dtype=torch.float16),
    "rand, bfloat16": lambda: torch.rand(999, dtype=torch.bfloat16),
    "rand, device cpu": lambda: torch.rand(300, device="cpu"),
    "randn": lambda: torch.randn(64, 257),
    "randn, odd length, float64": lambda: torch.randn(15, dtype=torch.float64),
    "randn, a list": lambda: torch.randn([3, 1001]),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_a_draw_in_shared_memory_has_the_values_and_leaves_the_generator_as_torch_does(name):
    want, want_next = _draw(CALLS[name], 7)
    with draws_in_shared_memory(0) as mode:
        got, got_next = _draw(CALLS[name], 7)
    assert mode.drawn == 2  # the call, and the 3 values after it
    assert got.is_shared() and not want.is_shared()
    assert got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)
    assert torch.equal(got_next, want_next)


def test_a_draw_with_its_own_generator_is_the_same_and_moves_only_that_generator():
    def call(seed):
        torch.manual_seed(1)
        g = torch.Generator().manual_seed(seed)
        return torch.randn(513, 3, generator=g), g.initial_seed(), torch.rand(2, generator=g), torch.rand(2)

    want = call(5)
    with draws_in_shared_memory(0):
        got = call(5)
    assert got[0].is_shared() and torch.equal(got[0], want[0])
    assert got[1] == want[1] and torch.equal(got[2], want[2]) and torch.equal(got[3], want[3])


def test_small_draws_and_other_calls_pass_through_unchanged():
    with draws_in_shared_memory(4096) as mode:
        small = torch.rand(1023)  # 4092 bytes
        large = torch.rand(1024)
        ints = torch.randint(0, 5, (5000,))
        asked = torch.rand(2000, requires_grad=True)
        into = torch.empty(2000)
        torch.rand(2000, out=into)
        scaled = torch.rand(2000) * 2  # drawn in shared memory, then a new tensor
    assert mode.drawn == 2
    assert large.is_shared() and not small.is_shared() and not ints.is_shared()
    assert asked.requires_grad and not asked.is_shared() and not into.is_shared() and not scaled.is_shared()


def test_a_call_torch_refuses_raises_as_it_would():
    with draws_in_shared_memory(0), pytest.raises(TypeError):
        torch.rand(3, size=(3,))
    with draws_in_shared_memory(0), pytest.raises(RuntimeError, match="negative"):
        torch.rand(-1)


def test_a_shared_draw_pickles_to_another_process_without_a_copy():
    import torch.multiprocessing  # noqa: F401 (the reductions that share a tensor's storage)
    from multiprocessing.reduction import ForkingPickler

    with draws_in_shared_memory(0):
        x = torch.rand(1 << 16)
    before = x.untyped_storage().data_ptr()
    ForkingPickler.dumps(x)
    assert x.untyped_storage().data_ptr() == before  # a private storage moves into a new shared segment when pickled
    private = torch.rand(1 << 16)
    moved_from = private.untyped_storage().data_ptr()
    ForkingPickler.dumps(private)
    assert private.untyped_storage().data_ptr() != moved_from


def test_without_shared_memory_the_draw_is_made_as_usual(monkeypatch):
    def refuse(nbytes):
        raise RuntimeError("unable to open shared memory object")

    monkeypatch.setattr(torch.UntypedStorage, "_new_shared", staticmethod(refuse))
    want, _ = _draw(lambda: torch.rand(5000), 3)
    with draws_in_shared_memory(0) as mode:
        got, _ = _draw(lambda: torch.rand(5000), 3)
    assert mode.drawn == 0 and not got.is_shared() and torch.equal(got, want)


def _official(seed: int, n: int = 5000, then=None):
    """A get_inputs() that draws twice under its seed (then changes its first draw, where asked)."""
    torch.manual_seed(seed)
    x, y = torch.rand(n), torch.randn(n, 3)
    if then is not None:
        then(x)
    return [x, y]


def _builder(seed: int, own_generator: bool = False, n: int = 5000):
    """A candidate's T0 builder: get_inputs()'s calls under the same seed, on the global or its own generator, with
    the global state restored after it (as a builder's fork_rng does); and the global generator's next value."""
    with torch.random.fork_rng(devices=[]):
        if own_generator:
            g = torch.Generator().manual_seed(seed)
            made = [torch.rand(n, generator=g), torch.randn(n, 3, generator=g)]
            after = torch.rand(2, generator=g)
        else:
            torch.manual_seed(seed)
            made = [torch.rand(n), torch.randn(n, 3)]
            after = torch.rand(2)
    return made, after


def _replayed(seed_official: int, builder, then=None):
    from harness.gate.shared_draws import DrawLog

    log = DrawLog()
    with draws_in_shared_memory(0, record=log):
        official = _official(seed_official, then=then)
    with draws_in_shared_memory(0, replay=log):
        built, after = builder()
    return log, official, built, after


@pytest.mark.parametrize("own_generator", [False, True], ids=["global generator", "its own generator"])
def test_a_builder_making_get_inputs_calls_is_given_its_draws_and_its_generator_moves_past_them(own_generator):
    want, want_after = _builder(1004, own_generator)
    log, official, built, after = _replayed(1004, lambda: _builder(1004, own_generator))
    assert log.given == 2 and log.intact()
    assert built[0] is official[0] and built[1] is official[1]
    assert all(torch.equal(b, w) for b, w in zip(built, want)) and torch.equal(after, want_after)


def test_a_builder_drawing_otherwise_is_given_nothing_and_draws_its_own():
    want, _ = _builder(2004, n=5000)
    log, official, built, _ = _replayed(1004, lambda: _builder(2004))  # another seed
    assert log.given == 0 and built[0] is not official[0] and torch.equal(built[0], want[0])
    log, official, built, _ = _replayed(1004, lambda: _builder(1004, n=4999))  # another size on the same state
    assert log.given == 0 and torch.equal(built[0], _builder(1004, n=4999)[0][0])


def test_a_draw_get_inputs_changed_in_place_is_not_given():
    want, _ = _builder(1004)
    log, official, built, _ = _replayed(1004, lambda: _builder(1004), then=lambda x: x.mul_(2))
    assert torch.equal(official[0], want[0] * 2)
    assert log.given == 1 and built[0] is not official[0] and torch.equal(built[0], want[0])  # randn still given
    assert built[1] is official[1]


def test_a_builder_that_changes_a_given_draw_in_place_leaves_the_log_not_intact():
    def builder():
        made, after = _builder(1004)
        made[0].add_(1.0)  # its own input, and get_inputs()'s too: the caller must draw get_inputs() again
        return made, after

    log, official, built, _ = _replayed(1004, builder)
    assert log.given == 2 and not log.intact() and built[0] is official[0]


def test_a_draw_get_inputs_made_require_grad_is_not_given():
    log, official, built, _ = _replayed(1004, lambda: _builder(1004), then=lambda x: x.requires_grad_())
    assert official[0].requires_grad and not built[0].requires_grad and built[0] is not official[0]
    assert torch.equal(built[0], official[0].detach()) and built[1] is official[1]
