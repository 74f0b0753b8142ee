"""harness/gate/checks/guards.py: guard bands around kernel buffers, and poison patterns to find unwritten output."""

import pytest
import torch

from harness.gate.checks.guards import (GUARD_BYTE, GUARD_BYTES, POISON_BYTES, GuardDamage, GuardedTensor,
                                        checksum_parts, poison_held, tensor_checksum, unwritten_mask)

FIRST, SECOND = POISON_BYTES


def filled(shape, dtype, byte):
    """A tensor of `shape` and `dtype` whose every byte is `byte`."""
    numel = 1
    for d in shape:
        numel *= d
    itemsize = torch.empty((), dtype=dtype).element_size()
    return torch.full((numel * itemsize,), byte, dtype=torch.uint8).view(dtype).reshape(shape)


# --- GuardedTensor layout ------------------------------------------------------------------------

@pytest.mark.parametrize("shape, dtype, nbytes", [
    ((4,), torch.float32, 16),
    ((2, 3), torch.float16, 12),
    ((), torch.float64, 8),
    ((5,), torch.bool, 5),
    ((3,), torch.int8, 3),
    ((2, 2), torch.complex64, 32),
    ((2, 1, 3), torch.int64, 48),
])
def test_guarded_tensor_sits_between_two_guard_bands(shape, dtype, nbytes):
    g = GuardedTensor(shape, dtype, "cpu")
    assert g.tensor.shape == shape and g.tensor.dtype == dtype
    assert g.tensor.is_contiguous()
    assert g.nbytes == nbytes
    assert g.buffer.dtype == torch.uint8 and g.buffer.numel() == GUARD_BYTES + nbytes + GUARD_BYTES
    assert g.tensor.data_ptr() - g.buffer.data_ptr() == GUARD_BYTES
    assert bool((g.buffer[:GUARD_BYTES] == GUARD_BYTE).all())
    assert bool((g.buffer[GUARD_BYTES + nbytes:] == GUARD_BYTE).all())
    assert g.damage() == []


def test_guarded_tensor_accepts_a_torch_size():
    g = GuardedTensor(torch.Size([3, 2]), torch.float32, "cpu")
    assert g.tensor.shape == (3, 2)
    assert g.nbytes == 24


@pytest.mark.parametrize("shape", [(0,), (2, 0, 3)])
def test_empty_guarded_tensor_has_only_guard_bands(shape):
    g = GuardedTensor(shape, torch.float32, "cpu")
    assert g.tensor.shape == shape and g.tensor.numel() == 0
    assert g.nbytes == 0
    assert g.buffer.numel() == 2 * GUARD_BYTES
    assert g.damage() == []


def test_the_tensor_is_a_view_of_the_buffer_middle():
    g = GuardedTensor((4,), torch.float32, "cpu")
    g.tensor.copy_(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert torch.equal(g.buffer[GUARD_BYTES:GUARD_BYTES + 16].view(torch.float32), torch.tensor([1.0, 2.0, 3.0, 4.0]))


def test_writing_every_element_leaves_the_bands_intact():
    g = GuardedTensor((3, 5), torch.float64, "cpu")
    g.tensor.fill_(-1.0)
    g.tensor[1, 2] = float("nan")
    assert g.damage() == []


# --- damage ---------------------------------------------------------------------------------------

def test_one_element_past_the_end_is_reported_after():
    g = GuardedTensor((4,), torch.float32, "cpu")
    overrun = g.buffer[GUARD_BYTES:GUARD_BYTES + g.nbytes + 4].view(torch.float32)  # what a kernel would see
    overrun[4] = 1.0  # bytes 00 00 80 3f, none equal to the guard byte
    assert g.damage() == [GuardDamage("after", 4, 0)]
    assert g.damage()[0].describe("out") == "4 bytes changed in the guard band after out (nearest 0 bytes from its edge)"


def test_one_element_before_the_start_is_reported_before():
    g = GuardedTensor((4,), torch.int32, "cpu")
    underrun = g.buffer[GUARD_BYTES - 4:GUARD_BYTES + g.nbytes].view(torch.int32)
    underrun[0] = 7  # bytes 07 00 00 00
    assert g.damage() == [GuardDamage("before", 4, 0)]
    assert g.damage()[0].describe("input 1") == \
        "4 bytes changed in the guard band before input 1 (nearest 0 bytes from its edge)"


def test_only_bytes_that_changed_are_counted():
    g = GuardedTensor((2,), torch.int32, "cpu")
    g.buffer[GUARD_BYTES + 8:GUARD_BYTES + 12].view(torch.int32)[0] = int.from_bytes(
        bytes([0xFF, 0x00, GUARD_BYTE, GUARD_BYTE]), "little", signed=True)
    assert g.damage() == [GuardDamage("after", 2, 0)]


@pytest.mark.parametrize("offsets_after_end, damage", [
    ([100], GuardDamage("after", 1, 100)),
    ([200, 100], GuardDamage("after", 2, 100)),
    ([GUARD_BYTES - 1], GuardDamage("after", 1, GUARD_BYTES - 1)),  # the buffer's last byte
    ([0, 1, 2, GUARD_BYTES - 1], GuardDamage("after", 4, 0)),
])
def test_after_damage_counts_bytes_and_gives_nearest_offset(offsets_after_end, damage):
    g = GuardedTensor((8,), torch.float16, "cpu")
    for offset in offsets_after_end:
        g.buffer[GUARD_BYTES + g.nbytes + offset] = 0
    assert g.damage() == [damage]


@pytest.mark.parametrize("offsets_before_start, damage", [
    ([10], GuardDamage("before", 1, 10)),
    ([50, 10], GuardDamage("before", 2, 10)),
    ([GUARD_BYTES - 1], GuardDamage("before", 1, GUARD_BYTES - 1)),  # the buffer's first byte
    ([0, 3], GuardDamage("before", 2, 0)),
])
def test_before_damage_counts_bytes_and_gives_nearest_offset(offsets_before_start, damage):
    g = GuardedTensor((8,), torch.float16, "cpu")
    for offset in offsets_before_start:  # bytes before the first byte of the tensor: 0 is the adjacent one
        g.buffer[GUARD_BYTES - 1 - offset] = 0
    assert g.damage() == [damage]


def test_damage_on_both_sides_lists_before_then_after():
    g = GuardedTensor((3,), torch.float32, "cpu")
    g.buffer[GUARD_BYTES + g.nbytes + 5] = 1
    g.buffer[GUARD_BYTES - 1 - 7] = 1
    g.buffer[GUARD_BYTES - 1 - 9] = 1
    assert g.damage() == [GuardDamage("before", 2, 7), GuardDamage("after", 1, 5)]


@pytest.mark.parametrize("shape", [(0,), (4, 0)])
def test_any_write_through_an_empty_tensor_damages_a_band(shape):
    g = GuardedTensor(shape, torch.float32, "cpu")
    g.buffer[GUARD_BYTES] = 0
    g.buffer[GUARD_BYTES - 1] = 0
    assert g.damage() == [GuardDamage("before", 1, 0), GuardDamage("after", 1, 0)]


@pytest.mark.parametrize("damage, label, text", [
    (GuardDamage("after", 4, 0), "out", "4 bytes changed in the guard band after out (nearest 0 bytes from its edge)"),
    (GuardDamage("before", 1, 12), "input 0",
     "1 bytes changed in the guard band before input 0 (nearest 12 bytes from its edge)"),
    (GuardDamage("after", 4096, 0), "input 2",
     "4096 bytes changed in the guard band after input 2 (nearest 0 bytes from its edge)"),
])
def test_guard_damage_describe(damage, label, text):
    assert damage.describe(label) == text


# --- poison and copy_of ---------------------------------------------------------------------------

@pytest.mark.parametrize("pattern", POISON_BYTES)
def test_poison_fills_only_the_middle(pattern):
    g = GuardedTensor((2, 3), torch.float32, "cpu")
    g.poison(pattern)
    middle = g.buffer[GUARD_BYTES:GUARD_BYTES + g.nbytes]
    assert bool((middle == pattern).all())
    assert bool((g.tensor.view(torch.uint8) == pattern).all())
    assert bool((g.buffer[:GUARD_BYTES] == GUARD_BYTE).all())
    assert bool((g.buffer[GUARD_BYTES + g.nbytes:] == GUARD_BYTE).all())
    assert g.damage() == []


def test_poison_overwrites_earlier_contents():
    g = GuardedTensor((4,), torch.int16, "cpu")
    g.tensor.fill_(123)
    g.poison(FIRST)
    assert torch.equal(g.tensor, filled((4,), torch.int16, FIRST))
    g.poison(SECOND)
    assert torch.equal(g.tensor, filled((4,), torch.int16, SECOND))


@pytest.mark.parametrize("source", [
    torch.arange(6, dtype=torch.float32).reshape(2, 3),
    torch.tensor(2.5, dtype=torch.float64),
    torch.tensor([True, False, True]),
    torch.arange(6, dtype=torch.int64).reshape(2, 3).t(),  # non-contiguous source
])
def test_copy_of_copies_values_into_a_guarded_buffer(source):
    g = GuardedTensor.copy_of(source, "cpu")
    assert g.tensor.shape == source.shape and g.tensor.dtype == source.dtype
    assert torch.equal(g.tensor, source)
    assert g.tensor.data_ptr() - g.buffer.data_ptr() == GUARD_BYTES
    assert g.damage() == []


def test_copy_of_does_not_alias_its_source():
    source = torch.zeros(3)
    g = GuardedTensor.copy_of(source, "cpu")
    source.fill_(5.0)
    assert torch.equal(g.tensor, torch.zeros(3))


# --- unwritten_mask -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [
    torch.int8, torch.uint8, torch.bool,  # 1 byte
    torch.float16, torch.bfloat16, torch.int16,  # 2 bytes
    torch.float32, torch.int32,  # 4 bytes
    torch.float64, torch.int64,  # 8 bytes
])
def test_unwritten_mask_marks_elements_holding_both_poisons(dtype):
    first, second = filled((4,), dtype, FIRST), filled((4,), dtype, SECOND)
    first.view(torch.uint8)[first.element_size() * 1] = 0  # element 1 written (one byte) in run one
    second.view(torch.uint8)[second.element_size() * 3 - 1] = 0  # element 2 written (its last byte) in run two
    mask = unwritten_mask(first, second)
    assert mask.dtype == torch.bool and mask.shape == (4,)
    assert mask.tolist() == [True, False, False, True]


@pytest.mark.parametrize("first_byte, second_byte, unwritten", [
    (FIRST, SECOND, True),
    (FIRST, FIRST, False),  # run two wrote a value that happens to be pattern one
    (SECOND, SECOND, False),  # run one wrote a value that happens to be pattern two
    (SECOND, FIRST, False),
    (0x00, SECOND, False),
    (FIRST, 0x00, False),
])
def test_an_element_is_unwritten_only_if_it_kept_each_runs_poison(first_byte, second_byte, unwritten):
    mask = unwritten_mask(filled((3,), torch.float32, first_byte), filled((3,), torch.float32, second_byte))
    assert mask.tolist() == [unwritten] * 3


def test_unwritten_mask_keeps_the_output_shape():
    first, second = filled((2, 3, 4), torch.float16, FIRST), filled((2, 3, 4), torch.float16, SECOND)
    first[0, 1, 2] = 1.0
    second[1, 2, 3] = 2.0
    mask = unwritten_mask(first, second)
    expected = torch.ones(2, 3, 4, dtype=torch.bool)
    expected[0, 1, 2] = expected[1, 2, 3] = False
    assert torch.equal(mask, expected)


def test_unwritten_mask_of_non_contiguous_outputs_uses_logical_positions():
    first = filled((3, 2), torch.float32, FIRST).t()  # shape (2, 3), transposed
    second = filled((3, 2), torch.float32, SECOND).t()
    first[1, 0] = 0.0
    mask = unwritten_mask(first, second)
    assert mask.tolist() == [[True, True, True], [False, True, True]]


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float16, torch.float32, torch.float64])
@pytest.mark.parametrize("written", [False, True])
def test_unwritten_mask_of_zero_dim_output(dtype, written):
    first, second = filled((), dtype, FIRST), filled((), dtype, SECOND)
    if written:
        second.fill_(0)
    mask = unwritten_mask(first, second)
    assert mask.shape == ()
    assert bool(mask) is (not written)


@pytest.mark.parametrize("shape", [(0,), (2, 0, 3)])
@pytest.mark.parametrize("dtype", [torch.int8, torch.float16, torch.float32, torch.float64])
def test_unwritten_mask_of_empty_output(shape, dtype):
    mask = unwritten_mask(torch.empty(shape, dtype=dtype), torch.empty(shape, dtype=dtype))
    assert mask.dtype == torch.bool
    assert mask.shape == shape


def test_poisoned_guarded_runs_give_an_unwritten_mask():
    """The way the pipeline uses it: poison, (partly) write, clone; twice."""
    g = GuardedTensor((5,), torch.float32, "cpu")
    outputs = []
    for pattern in POISON_BYTES:
        g.poison(pattern)
        g.tensor[:3] = 1.0  # a kernel that forgets the last two elements
        outputs.append(g.tensor.clone())
    assert unwritten_mask(*outputs).tolist() == [False, False, False, True, True]
    assert g.damage() == []


def test_a_band_of_another_byte_is_judged_against_its_own_byte():
    g = GuardedTensor((4,), torch.float32, "cpu", guard_byte=0x7B)
    assert bool((g.buffer[:GUARD_BYTES] == 0x7B).all()) and g.damage() == []
    g.buffer[GUARD_BYTES + 16] = GUARD_BYTE  # the default byte is damage in a band of 0x7B
    assert g.damage() == [GuardDamage("after", 1, 0)]


def test_the_inputs_bands_differ_so_reads_past_two_ends_do_not_cancel():
    from harness.gate.checks.guards import INPUT_GUARD_BYTES

    assert len(set(INPUT_GUARD_BYTES) | {GUARD_BYTE} | set(POISON_BYTES)) == len(INPUT_GUARD_BYTES) + 3
    x, y = (GuardedTensor.copy_of(torch.zeros(4), "cpu", b) for b in INPUT_GUARD_BYTES[:2])
    past_x = x.buffer[GUARD_BYTES + 16:GUARD_BYTES + 20].view(torch.float32)
    past_y = y.buffer[GUARD_BYTES + 16:GUARD_BYTES + 20].view(torch.float32)
    assert abs(float(past_x - past_y)) > 1e30
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        for byte in INPUT_GUARD_BYTES:
            value = torch.tensor([byte] * 8, dtype=torch.uint8).view(dtype)[0]
            assert bool(torch.isfinite(value)) and abs(float(value)) > 20, (dtype, hex(byte), float(value))


# --- signals read in one transfer (run_kernel asks them of every trial of every mutant) ------------

def test_bands_changed_says_which_side_damage_reports():
    g = GuardedTensor((4,), torch.float32, "cpu")
    assert g.bands_changed().tolist() == [0, 0]
    g.buffer[GUARD_BYTES + 16 + 5] = 0
    assert g.bands_changed().tolist() == [0, 1]
    g.buffer[GUARD_BYTES - 3:GUARD_BYTES].fill_(0)
    assert g.bands_changed().tolist() == [1, 1]
    assert [d.changed_bytes for d in g.damage()] == [3, 1]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bool, torch.int64])
def test_poison_held_says_whether_an_element_holds_the_whole_pattern(dtype):
    t = filled((5,), dtype, FIRST)
    assert poison_held(t, FIRST).tolist() == [1] and poison_held(t, SECOND).tolist() == [0]
    t.view(torch.uint8)[:t.element_size() * 4] = 0  # four elements written
    assert poison_held(t, FIRST).tolist() == [1]
    t.view(torch.uint8)[-1] = 0  # the fifth half written: no element holds the whole pattern
    assert poison_held(t, FIRST).tolist() == [0]


@pytest.mark.parametrize("x", [torch.arange(13, dtype=torch.uint8), torch.randn(7, 3), torch.ones(0),
                               torch.randn(10, 10)[:, 3], torch.tensor(2.5, dtype=torch.float64),
                               torch.randint(-2**62, 2**62, (9,))])
def test_checksum_parts_sum_to_the_checksum(x):
    words, tail = checksum_parts(x).tolist()
    assert words + tail == tensor_checksum(x)
    changed = x.clone().reshape(-1)
    if changed.numel():
        changed.view(torch.uint8)[-1] ^= 1
        assert sum(checksum_parts(changed).tolist()) != tensor_checksum(x)
