"""The axis-info analysis: contiguity, divisibility and constancy claims on small kernels.

Each expected claim is worked out in the test from the index arithmetic (the oracle); the kernels
that run also run with TRITIUM_CHECK_ANALYSIS=all, so every claim is compared with the values the
interpreter computes, and a deliberately wrong rule must be caught.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.backends.interpreter import analysis_check
from tritium.backends.interpreter.analysis_check import AnalysisClaimError
from tritium.compiler import ASTSource, compile_source
from tritium.compiler.analysis import AxisInfo, analyze_axis_info, axis_info, axis_rules
from tritium.compiler.analysis.axis_info import MAX_DIVISIBILITY, make

# The interpreter checks the analyses' claims against the values it computes: these tests run on it.
pytestmark = pytest.mark.usefixtures("on_the_interpreter")


def _function(kernel, signature: str, **constexprs):
    return compile_source(ASTSource(kernel, signature, constexprs=constexprs)).function


def _ops(fn, opcode: str):
    return [op for op in fn.walk() if op.opcode == opcode]


def _pointer_of(fn, opcode: str, index: int = 0):
    return _ops(fn, opcode)[index].operands[0]


def _claims(info: AxisInfo) -> tuple:
    return info.contiguity, info.divisibility, info.constancy


@pytest.fixture
def check_every_access(monkeypatch):
    monkeypatch.setenv("TRITIUM_CHECK_ANALYSIS", "all")


@triton.jit
def _copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def test_block_offsets_are_contiguous_and_aligned_to_the_block():
    fn = _function(_copy, "*fp32:16,*fp32,i32:16", BLOCK=128)
    claims = analyze_axis_info(fn)
    load = _ops(fn, "load")[0]
    pointer = load.operands[0]
    offsets = pointer.owner.operands[1]
    # offs = pid * 128 + [0, 1, ..., 127]: one run of 128 starting at a multiple of 128
    assert _claims(claims.get(offsets)) == ((128,), (128,), (1,))
    # x_ptr is 16-byte aligned and every run starts 128 * 4 bytes further on
    assert _claims(claims.get(pointer)) == ((128,), (16,), (1,))
    # out_ptr has no alignment fact: its run starts are only known to be ... nothing
    assert _claims(claims.get(_pointer_of(fn, "store"))) == ((128,), (1,), (1,))
    # n % 16 == 0 and the runs of offs start at multiples of 128: offs < n is the same across
    # aligned pieces of 16
    assert claims.get(load.operands[1]).constancy == (16,)


def test_program_ids_are_scalars_that_divide_by_one():
    fn = _function(_copy, "*fp32,*fp32,i32", BLOCK=64)
    info = analyze_axis_info(fn).get(_ops(fn, "program_id")[0].result)
    assert _claims(info) == ((1,), (1,), (1,))
    assert info.nonnegative


def test_a_block_of_sixteen_bytes_keeps_the_pointer_alignment_and_four_does_not():
    # BLOCK * 4 bytes must be a multiple of 16 for every program's run to start 16-aligned
    for block, expected in ((4, 16), (2, 8), (1, 4)):
        fn = _function(_copy, "*fp32:16,*fp32,i32", BLOCK=block)
        assert analyze_axis_info(fn).get(_pointer_of(fn, "load")).divisibility == (expected,), block


@triton.jit
def _tile(a_ptr, out_ptr, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    row_starts = a_ptr + rows[:, None] * stride
    tile = tl.load(row_starts + cols[None, :], mask=(rows < M)[:, None] & (cols < N)[None, :])
    tl.store(out_ptr + rows[:, None] * BN + cols[None, :], tile, mask=(rows < M)[:, None] & (cols < N)[None, :])


def test_a_row_major_tile_is_contiguous_along_its_rows():
    fn = _function(_tile, "*fp32:16,*fp32:16,i32,i32,i32:16", BM=16, BN=32)
    claims = analyze_axis_info(fn)
    pointer = _pointer_of(fn, "load")
    # element (r, c) is at a + (row r) * stride * 4 + c * 4 bytes: runs of 32 along dim 1; along
    # dim 0 every element stands alone and (r, 1) is only 4-byte aligned; each row starts at a
    # multiple of 16 * 4 bytes
    assert _claims(claims.get(pointer)) == ((1, 32), (4, 16), (1, 1))
    broadcast_rows = pointer.owner.operands[0]
    # a + rows * stride, broadcast along the columns: constant along dim 1
    assert broadcast_rows.owner.opcode == "broadcast"
    assert _claims(claims.get(broadcast_rows)) == ((1, 1), (16, 16), (1, 32))


def test_claims_print_one_line_per_value():
    fn = _function(_tile, "*fp32:16,*fp32:16,i32,i32,i32:16", BM=16, BN=32)
    text = analyze_axis_info(fn).format()
    assert text.splitlines()[0] == "axis info of @_tile:"
    assert "%a_ptr = argument : ptr<fp32>  contiguity=[1] divisibility=[16] constancy=[1]" in text
    assert "= addptr : <16x32xptr<fp32>>  contiguity=[1, 32] divisibility=[4, 16] constancy=[1, 1]" in text
    assert "arange : <32xi32>  contiguity=[32] divisibility=[2**62] constancy=[1]" in text


@triton.jit
def _gather_hinted(x_ptr, idx_ptr, out_ptr, BLOCK: tl.constexpr):
    start = tl.multiple_of(tl.load(idx_ptr), 32)
    offs = tl.max_contiguous(tl.multiple_of(start + tl.arange(0, BLOCK), 32), BLOCK)
    loaded = tl.load(idx_ptr + tl.arange(0, BLOCK))
    runs = tl.max_contiguous(tl.multiple_of(loaded, 32), BLOCK)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + offs) + tl.load(x_ptr + runs))


def test_hints_set_the_claims_they_promise():
    fn = _function(_gather_hinted, "*fp32:16,*i32:16,*fp32:16", BLOCK=64)
    claims = analyze_axis_info(fn)
    hints = _ops(fn, "hint")
    scalar, _, offs_contiguous, loaded_multiple, loaded_contiguous = hints
    assert _claims(claims.get(scalar.result)) == ((1,), (32,), (1,))
    # start + arange is already one run of 64: multiple_of(32) is about its first element
    assert _claims(claims.get(offs_contiguous.result)) == ((64,), (32,), (1,))
    # loaded values: nothing known until the hints; multiple_of alone promises a multiple at the
    # start of each true run, which the analysis cannot place, max_contiguous then places them
    assert claims.get(loaded_multiple.result).divisibility == (1,)
    assert _claims(claims.get(loaded_contiguous.result)) == ((64,), (32,), (1,))


def test_true_hints_pass_the_run_time_check(check_every_access):
    x = torch.randn(256)
    idx = torch.arange(64, dtype=torch.int32) + 96  # a run of 64 starting at 96, a multiple of 32
    idx[0] = 96
    out = torch.zeros(64)
    _gather_hinted[(1,)](x, idx, out, BLOCK=64)
    assert torch.equal(out, x[96:160] + x[96:160])


@triton.jit
def _walk(x_ptr, out_ptr, STEP: tl.constexpr, BLOCK: tl.constexpr, ROUNDS: tl.constexpr):
    pointers = x_ptr + tl.arange(0, BLOCK)
    total = tl.zeros((BLOCK,), tl.float32)
    for k in range(0, ROUNDS * 16, 16):
        total += tl.load(pointers)
        total += tl.load(x_ptr + k + tl.arange(0, BLOCK))
        pointers += STEP
    tl.store(out_ptr + tl.arange(0, BLOCK), total)


@pytest.mark.parametrize("step,divisibility", [(32, 16), (4, 16), (2, 8), (1, 4)])
def test_a_loop_carried_pointer_keeps_what_every_step_keeps(step, divisibility):
    fn = _function(_walk, "*fp32:16,*fp32:16", STEP=step, BLOCK=32, ROUNDS=3)
    claims = analyze_axis_info(fn)
    (loop,) = _ops(fn, "for")
    carried = loop.regions[0].args[2]  # (induction variable, total, pointers)
    # the first iteration's pointers start 16-aligned; each step adds step * 4 bytes
    assert _claims(claims.get(carried)) == ((32,), (divisibility,), (1,))
    assert _claims(claims.get(loop.results[1])) == ((32,), (divisibility,), (1,))
    # k runs over multiples of 16, so x_ptr + k + arange starts at multiples of 64 bytes: 16-aligned
    assert claims.get(loop.regions[0].args[0]).divisibility == (16,)
    assert claims.get(_pointer_of(fn, "load", 1)).divisibility == (16,)


def test_loop_carried_pointers_pass_the_run_time_check(check_every_access):
    x = torch.arange(128, dtype=torch.float32)
    out = torch.zeros(32)
    _walk[(1,)](x, out, STEP=2, BLOCK=32, ROUNDS=3)
    base = np.arange(32)
    expected = sum(base + 2 * r for r in range(3)) + sum(base + 16 * r for r in range(3))
    assert out.numpy().tolist() == expected.astype(np.float32).tolist()


@triton.jit
def _index_arithmetic(x_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    by_rows = tl.load(x_ptr + (i // 4) * 16 + i % 4)  # runs of 4, 16 apart
    shifted = tl.load(x_ptr + (i >> 2))  # each element four times
    halves = tl.load(x_ptr + 16 + i + (i // 2) * 8)  # [16, 17, 26, 27, 36, 37, ...]
    centred = tl.load(x_ptr + 64 + (i - BLOCK // 2) // 4)  # C's // truncates: -1, -1, ..., 0, 0, ...
    tl.store(out_ptr + i, by_rows + shifted + halves + centred)


def test_division_and_remainder_by_constants():
    fn = _function(_index_arithmetic, "*fp32:16,*fp32:16", BLOCK=16)
    claims = analyze_axis_info(fn)
    pointers = [claims.get(_pointer_of(fn, "load", k)) for k in range(4)]
    # (i // 4) * 16 + i % 4: runs of 4 starting at multiples of 16 elements (64 bytes)
    assert _claims(pointers[0]) == ((4,), (16,), (1,))
    # i >> 2: constant across pieces of 4
    assert _claims(pointers[1]) == ((1,), (4,), (4,))
    # 16 + i plus a value constant in pairs and a multiple of 8: runs of 2; their starts
    # (16, 26, 36, ...) are only even -- Triton's rule would claim the gcd of 16 and 8
    assert _claims(pointers[2]) == ((2,), (8,), (1,))
    # a dividend that may be negative: no constancy claim from the division
    assert pointers[3].constancy == (1,)


def test_index_arithmetic_passes_the_run_time_check(check_every_access):
    x = torch.arange(128, dtype=torch.float32)
    out = torch.zeros(16)
    _index_arithmetic[(1,)](x, out, BLOCK=16)
    i = np.arange(16)
    centred = np.trunc((i - 8) / 4).astype(np.int64)
    expected = (i // 4) * 16 + i % 4 + (i >> 2) + 16 + i + (i // 2) * 8 + 64 + centred
    assert out.numpy().tolist() == expected.astype(np.float32).tolist()


def test_constants_fold_and_zero_divides_by_everything():
    fn = _function(_index_arithmetic, "*fp32:16,*fp32:16", BLOCK=16)
    claims = analyze_axis_info(fn)
    zero = next(op.result for op in _ops(fn, "arange"))
    assert claims.get(zero).divisibility == (MAX_DIVISIBILITY,)  # arange starts at 0
    sixteen = next(op.result for op in _ops(fn, "constant") if op.attrs["value"] == 16)
    assert claims.get(sixteen) == make(sixteen.type, (1,), (16,), (1,), value=16)


@triton.jit
def _strided(x_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(out_ptr + i, tl.load(x_ptr + i * 2))


def test_the_run_time_check_catches_an_over_claim(monkeypatch, check_every_access):
    x = torch.arange(64, dtype=torch.float32)
    out = torch.zeros(32)
    _strided[(1,)](x, out, BLOCK=32)  # the true claims pass
    assert torch.equal(out, x[::2])
    # a broken rule: i * 2 "keeps" i's run of 32
    monkeypatch.setitem(axis_rules._RULES, "mul", lambda op, infos: infos[0])
    monkeypatch.setattr(analysis_check, "_FUNCTIONS", {})
    with pytest.raises(AnalysisClaimError, match=r"contiguity\[0\] = 32 .*feeding this load in kernel '_strided'") as e:
        _strided[(1,)](x, out, BLOCK=32)
    assert "program (0, 0, 0) computed [ 0  2  4" in str(e.value)


def test_the_run_time_check_reads_byte_addresses(monkeypatch, check_every_access):
    x = torch.arange(65, dtype=torch.float32)[1:]  # 4 bytes past the allocation's start
    out = torch.zeros(16)
    if x.data_ptr() % 16 == 0:
        pytest.skip("the allocator placed the view 16-aligned")
    # a broken seed: every pointer argument claimed 16-byte aligned
    monkeypatch.setattr(axis_info, "_argument_info",
                        lambda value, attrs: make(value.type, (1,), (16 if value.type.is_ptr() else 1,), (1,)))
    monkeypatch.setattr(analysis_check, "_FUNCTIONS", {})
    with pytest.raises(AnalysisClaimError, match=r"divisibility\[0\] = 16 for argument x_ptr"):
        _strided[(1,)](x, out, BLOCK=16)


@triton.jit
def _wrapped_columns(x_ptr, out_ptr, n, groups, BLOCK: tl.constexpr, ASSUME: tl.constexpr):
    column_block = tl.program_id(0) // groups  # a quotient by a divisor of unknown sign: sign unknown
    if ASSUME:
        tl.assume(column_block >= 0)
    cols = (column_block * BLOCK + tl.arange(0, BLOCK)) % n
    tl.store(out_ptr + cols, tl.load(x_ptr + cols))


@pytest.mark.parametrize("assume", [False, True])
def test_an_assumed_sign_keeps_runs_through_a_remainder(assume):
    """``(q * 64 + arange(64)) % n`` with n a multiple of 16: runs of 16 when q >= 0 (pieces of 16
    meet no multiple of n past their first element); for a q that may be negative, truncation breaks
    them differently (-16 % 16 = 0, -15 % 16 = -15), so nothing without the assumption. Hints off,
    the assumption adds nothing either."""
    fn = _function(_wrapped_columns, "*fp32:16,*fp32:16,i32:16,i32", BLOCK=64, ASSUME=assume)
    cols = _pointer_of(fn, "load").owner.operands[1]
    assert claims_of(analyze_axis_info(fn), cols) == ((16,) if assume else (1,))
    assert claims_of(analyze_axis_info(fn, trust_hints=False), cols) == (1,)


def claims_of(claims, value) -> tuple:
    return claims.get(value).contiguity


def test_assumed_signs_pass_the_run_time_check(check_every_access):
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    _wrapped_columns[(4,)](x, out, 32, 2, BLOCK=64, ASSUME=True)
    np.testing.assert_array_equal(out[:32], x[:32])


@triton.jit
def _assumes_positive(out_ptr, SHIFT: tl.constexpr):
    q = tl.program_id(0) - SHIFT
    tl.assume(q > 0)
    tl.store(out_ptr + tl.program_id(0), q)


def test_a_false_assumption_is_reported_where_it_is_made():
    out = np.zeros(4, np.int32)
    with pytest.warns(RuntimeWarning, match=r"tl.assume is false in kernel '_assumes_positive', program \(0, 0, 0\)"):
        _assumes_positive[(4,)](out, SHIFT=1)
    assert out.tolist() == [-1, 0, 1, 2]  # the interpreter computes on: the promise is only reported
    with pytest.raises(triton.HintViolationError, match="tl.assume"):
        _assumes_positive[(4,)](out, SHIFT=1, debug=True)
    _assumes_positive[(4,)](out, SHIFT=-1, debug=True)  # true everywhere: silent
