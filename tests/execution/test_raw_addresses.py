"""Addresses made from integers (``int_to_ptr``), as kernels that take a table of ``data_ptr()``
values use them: an access inside any live tensor of the process is valid, whether or not it is an
argument; one inside no tensor is an OutOfBoundsError at the access's line, before memory is
touched. ``ptr.to(tl.int64)`` gives the tensor's real address, as on a GPU."""
from __future__ import annotations

import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.errors import OutOfBoundsError


@triton.jit
def _scale_groups(table_ptr, sizes_ptr, out_ptr, BLOCK: tl.constexpr):
    g = tl.program_id(0)
    base = tl.load(table_ptr + g).to(tl.pointer_type(tl.float32))
    n = tl.load(sizes_ptr + g)
    offs = tl.arange(0, BLOCK)
    x = tl.load(base + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + g * BLOCK + offs, x * 2, mask=offs < n)
    tl.store(base + offs, x + 1, mask=offs < n)  # written back through the raw address too


def _groups():
    big = torch.arange(40, dtype=torch.float32)
    return [torch.randn(5, generator=torch.Generator().manual_seed(1)), big[3:19], big[20:29]], big


def test_a_table_of_data_pointers_reads_and_writes_tensors_that_are_not_arguments():
    groups, big = _groups()
    before = [g.clone() for g in groups]
    table = torch.tensor([g.data_ptr() for g in groups], dtype=torch.int64)
    sizes = torch.tensor([g.numel() for g in groups], dtype=torch.int32)
    out = torch.zeros(3 * 16)
    _scale_groups[(3,)](table, sizes, out, BLOCK=16)
    for i, (g, old) in enumerate(zip(groups, before)):
        assert torch.equal(out[i * 16:i * 16 + g.numel()], old * 2)
        assert torch.equal(g, old + 1)
    untouched = torch.ones(40, dtype=torch.bool)
    untouched[3:19] = untouched[20:29] = False
    assert torch.equal(big[untouched], torch.arange(40, dtype=torch.float32)[untouched])


def test_an_address_in_no_live_tensor_is_an_out_of_bounds_error_before_memory_is_touched():
    groups, _ = _groups()
    before = [g.clone() for g in groups]
    table = torch.tensor([g.data_ptr() for g in groups], dtype=torch.int64)
    table[1] = 4096  # the first page: no tensor lives there
    sizes = torch.tensor([g.numel() for g in groups], dtype=torch.int32)
    out = torch.zeros(3 * 16)
    with pytest.raises(OutOfBoundsError, match=r"program \(1, 0, 0\), lane 0 dereferences an address that lies in "
                                               r"no tensor argument and no other live tensor") as info:
        _scale_groups[(3,)](table, sizes, out, BLOCK=16)
    assert "x = tl.load(base + offs, mask=offs < n, other=0.0)" in str(info.value) and "^" in str(info.value)
    assert torch.equal(groups[1], before[1])


def test_running_past_the_end_of_a_tensor_through_a_raw_address_is_out_of_bounds():
    small = torch.ones(5)  # its storage: 20 bytes at a 64-byte aligned address; no tensor starts before 64
    table = torch.tensor([small.data_ptr()], dtype=torch.int64)
    sizes = torch.tensor([7], dtype=torch.int32)
    with pytest.raises(OutOfBoundsError, match=r"out-of-bounds load .* program \(0, 0, 0\), lane 5"):
        _scale_groups[(1,)](table, sizes, torch.zeros(16), BLOCK=16)
    assert torch.equal(small, torch.ones(5))


@triton.jit
def _addresses(x_ptr, y_ptr, out_ptr):
    tl.store(out_ptr, x_ptr.to(tl.int64))
    tl.store(out_ptr + 1, (y_ptr + 3).to(tl.int64))
    back = (x_ptr.to(tl.int64) + 8).to(tl.pointer_type(tl.float32))  # an argument's address, made again
    tl.store(back, 42.0)


def test_pointers_convert_to_their_real_addresses_and_back():
    x, y = torch.zeros(4), torch.zeros(8, dtype=torch.float64)
    out = torch.zeros(2, dtype=torch.int64)
    _addresses[(1,)](x, y, out)
    assert out.tolist() == [x.data_ptr(), y.data_ptr() + 3 * 8]
    assert x.tolist() == [0.0, 0.0, 42.0, 0.0]


def test_debug_mode_follows_the_same_rule(monkeypatch):
    monkeypatch.setenv("TRITIUM_DEBUG", "1")
    test_a_table_of_data_pointers_reads_and_writes_tensors_that_are_not_arguments()
    test_an_address_in_no_live_tensor_is_an_out_of_bounds_error_before_memory_is_touched()
