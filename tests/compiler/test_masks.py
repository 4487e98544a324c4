"""Box masks: tails (``offs < n``), 2-D tiles and their ``&``, recognised so a backend can split a
full-block fast path from a masked tail; and what is not a box.

The oracle for each kernel is the mask written in its source; the kernels that run do so with
TRITIUM_CHECK_ANALYSIS=all, which rebuilds each recognised box from its bounds and compares it
with the mask the interpreter computed, lane by lane.
"""
from __future__ import annotations

import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.backends.interpreter import analysis_check
from tritium.backends.interpreter.analysis_check import AnalysisClaimError
from tritium.compiler import ASTSource, compile_source
from tritium.compiler.analysis import MaskBound, analyze_axis_info, classify_mask, masks

# The interpreter checks the analyses' claims against the values it computes: these tests run on it.
pytestmark = pytest.mark.usefixtures("on_the_interpreter")


def _function(kernel, signature: str, **constexprs):
    return compile_source(ASTSource(kernel, signature, constexprs=constexprs)).function


def _mask_of(fn, opcode: str = "load"):
    """The mask of the (only) masked load or store."""
    slot = 1 if opcode == "load" else 2
    (op,) = [op for op in fn.walk() if op.opcode == opcode and len(op.operands) > slot]
    return op.operands[slot]


def _argument(fn, name: str):
    return fn.args[fn.arg_names.index(name)]


def _summary(bound: MaskBound) -> tuple:
    return bound.dim, bound.side, bound.inclusive


@pytest.fixture
def check_every_access(monkeypatch):
    monkeypatch.setenv("TRITIUM_CHECK_ANALYSIS", "all")


@triton.jit
def _tail(x_ptr, out_ptr, n, BLOCK: tl.constexpr, FORM: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if FORM == 0:
        mask = offs < n
    elif FORM == 1:
        mask = n > offs
    else:
        mask = offs <= n - 1
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@pytest.mark.parametrize("form,inclusive", [(0, False), (1, False), (2, True)])
def test_a_tail_mask_is_a_one_dimensional_box(form, inclusive):
    fn = _function(_tail, "*fp32,*fp32,i32", BLOCK=64, FORM=form)
    mask = _mask_of(fn)
    info = classify_mask(mask, analyze_axis_info(fn))
    assert info is not None and info.shape == (64,) and info.dims == {0}
    (bound,) = info.bounds
    assert _summary(bound) == (0, "upper", inclusive)
    assert bound.index.owner.opcode == "add"  # pid * BLOCK + arange
    if form == 2:
        assert bound.bound.owner.opcode == "sub"  # n - 1, a scalar
    else:
        assert bound.bound is _argument(fn, "n")  # found behind the splat
    store_mask = classify_mask(_mask_of(fn, "store"), analyze_axis_info(fn))
    assert store_mask == info


@pytest.mark.parametrize("form", [0, 1, 2])
def test_tail_boxes_match_the_masks_computed(form, check_every_access):
    x = torch.randn(200)
    out = torch.zeros(200)
    _tail[(4,)](x, out, 200, BLOCK=64, FORM=form)
    assert torch.equal(out, x)


@triton.jit
def _tile(a_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    offs = rows[:, None] * N + cols[None, :]
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask), mask=mask)


def test_a_two_dimensional_box():
    fn = _function(_tile, "*fp32,*fp32,i32,i32", BM=16, BN=32)
    info = classify_mask(_mask_of(fn), analyze_axis_info(fn))
    assert info is not None and info.shape == (16, 32) and info.dims == {0, 1}
    by_dim = {bound.dim: bound for bound in info.bounds}
    assert _summary(by_dim[0]) == (0, "upper", False) and by_dim[0].bound is _argument(fn, "M")
    assert _summary(by_dim[1]) == (1, "upper", False) and by_dim[1].bound is _argument(fn, "N")
    # each index runs along its own dimension of its own (1-D) shape
    assert by_dim[0].index_dim == 0 and by_dim[1].index_dim == 0
    assert by_dim[0].index.type.shape == (16,)


def test_two_dimensional_boxes_match_the_masks_computed(check_every_access):
    a = torch.randn(40, 50)
    out = torch.zeros(40, 50)
    _tile[(3, 2)](a, out, 40, 50, BM=16, BN=32)
    assert torch.equal(out, a)


@triton.jit
def _block_pointer_tile(a_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    tile = tl.make_block_ptr(a_ptr, (M, N), (N, 1), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    values = tl.load(tile, boundary_check=(0, 1), padding_option="zero")
    tl.store(out_ptr + rows[:, None] * BN + cols[None, :], values)


def test_a_block_pointer_boundary_check_is_a_box_with_lower_and_upper_bounds():
    fn = _function(_block_pointer_tile, "*fp32,*fp32,i32,i32", BM=16, BN=16)
    info = classify_mask(_mask_of(fn), analyze_axis_info(fn))
    assert info is not None
    # 0 <= offset + arange < extent along each checked dimension; the column offset is the
    # constant 0, so its lower bound folds away
    assert sorted(_summary(b) for b in info.bounds) == [(0, "lower", True), (0, "upper", False),
                                                         (1, "upper", False)]


def test_block_pointer_boxes_match_the_masks_computed(check_every_access):
    a = torch.randn(20, 10)
    out = torch.zeros(32, 16)
    _block_pointer_tile[(2,)](a, out, 20, 10, BM=16, BN=16)
    expected = torch.zeros(32, 16)
    expected[:20, :10] = a
    assert torch.equal(out, expected)


@triton.jit
def _not_boxes(x_ptr, out_ptr, n, idx_ptr, BLOCK: tl.constexpr, FORM: tl.constexpr):
    i = tl.arange(0, BLOCK)
    if FORM == 0:
        mask = (i[:, None] * 8 + i[None, :]) < n  # a row-major prefix, not a box
    elif FORM == 1:
        mask = ((i % 3) < 2)[:, None] & (i < n)[None, :]  # i % 3 is not one run
    elif FORM == 2:
        mask = (i < tl.load(idx_ptr + i))[:, None] & (i < n)[None, :]  # the bound differs per lane
    else:
        mask = ((i < n) | (i > 4))[:, None] & (i < n)[None, :]  # an or
    offs = i[:, None] * BLOCK + i[None, :]
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0))


@pytest.mark.parametrize("form", [0, 1, 2, 3])
def test_masks_that_are_not_boxes_are_not_classified(form):
    fn = _function(_not_boxes, "*fp32,*fp32,i32,*i32", BLOCK=8, FORM=form)
    assert classify_mask(_mask_of(fn), analyze_axis_info(fn)) is None


@triton.jit
def _uniform(x_ptr, out_ptr, n, limit, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=(offs < n) & (pid < limit), other=-1.0))


def test_a_condition_on_the_program_is_a_bound_on_every_lane(check_every_access):
    fn = _function(_uniform, "*fp32,*fp32,i32,i32", BLOCK=32)
    info = classify_mask(_mask_of(fn), analyze_axis_info(fn))
    assert info is not None
    assert sorted((b.dim is None, b.side) for b in info.bounds) == [(False, "upper"), (True, "upper")]
    uniform = next(b for b in info.bounds if b.dim is None)
    assert uniform.bound is _argument(fn, "limit") and uniform.index.owner.opcode == "program_id"
    x = torch.randn(96)
    out = torch.zeros(96)
    _uniform[(3,)](x, out, 90, 2, BLOCK=32)
    expected = torch.full((96,), -1.0)
    expected[:64] = x[:64]
    assert torch.equal(out, expected)


def test_the_run_time_check_catches_a_wrong_box(monkeypatch, check_every_access):
    real = masks.classify_mask

    def off_by_one(mask, axis_info):
        info = real(mask, axis_info)
        if info is None:
            return None
        flipped = tuple(MaskBound(b.dim, b.index, b.index_dim, b.bound, b.side, not b.inclusive) for b in info.bounds)
        return masks.MaskInfo(info.shape, flipped)

    monkeypatch.setattr(analysis_check, "classify_mask", off_by_one)
    monkeypatch.setattr(analysis_check, "_FUNCTIONS", {})
    with pytest.raises(AnalysisClaimError, match=r"claims box mask dim 0: index <= bound for the cmp"):
        _tail[(4,)](torch.randn(200), torch.zeros(200), 200, BLOCK=64, FORM=0)
