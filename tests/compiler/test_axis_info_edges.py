"""Axis-info claims at the integer edge cases the IR spec defines: division by zero, wrap-around in
casts and in unsigned or narrow arithmetic, shifts past the bit width, i1 arithmetic modulo 2.

Each form computes offsets through one such edge, loads through them and stores the result; it runs
with TRITIUM_CHECK_ANALYSIS=all, so every claim (nonnegative included) about the offsets and what
they are computed from is compared with the values the interpreter computes in every program, and
the loaded values are compared with the same arithmetic in numpy (the oracle). The claims the rules
give are pinned too, worked out by hand from the values.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium import config
from tritium.backends.interpreter import analysis_check
from tritium.compiler import ASTSource, compile_source
from tritium.compiler.analysis import analyze_axis_info, axis_rules

# The interpreter checks the analyses' claims against the values it computes: these tests run on it.
pytestmark = pytest.mark.usefixtures("on_the_interpreter")

N = 16
BASE = 1024  # keeps every offset inside x
PROGRAMS = 4
_I = np.arange(N, dtype=np.int64)


def _c_div(a, b):
    """C's truncating division, with x // 0 == -1 as the spec gives it."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
    safe = np.where(b == 0, 1, b)
    return np.where(b == 0, -1, np.trunc(a / safe).astype(np.int64))


def _c_mod(a, b):
    """C's remainder, with x % 0 == x."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
    return np.where(b == 0, a, a - _c_div(a, b) * b)


def _as(values, dtype):
    """``values`` wrapped to ``dtype`` (two's complement), back as int64."""
    return np.asarray(values, dtype=np.int64).astype(dtype).astype(np.int64)


def _quotient_of_zero(p):
    return _c_div(1, p)  # 1 // pid: -1 in program 0


# form -> the offsets program p computes, in numpy
EXPECTED = {
    # u32 -> i32 of values that reach 2**31: they become negative, and the run breaks there
    0: lambda p: _c_mod(_as(_I + (2**31 - 8), np.int32), 8) + 8,
    # a quotient by zero is -1, so it is no longer non-negative: C's // and % cut runs around 0
    1: lambda p: _c_div(_quotient_of_zero(p) * 16 + _I, 4) + 8,
    2: lambda p: _c_mod(_quotient_of_zero(p) * 16 + _I, 4) + 8,
    # unsigned arithmetic wraps modulo 2**32: i - 8 runs 2**32 - 8, ..., 2**32 - 1, 0, 1, ...
    3: lambda p: _c_mod(_as(_I - 8, np.uint32), 64),
    # i8 arithmetic wraps at 127
    4: lambda p: _as(_as(_I, np.int8) + 120, np.int8) + 128,
    # a narrowing cast wraps: (i + 120) as i8
    5: lambda p: _as(_I + 120, np.int8) + 128,
    # shr past the width of a value that may be negative: the sign fill, -1 or 0
    6: lambda p: np.where(_I // 4 - 2 < 0, -1, 0) + _I + 1,
    # i1 addition is xor: (i < 8) + (i < 8) is 0
    7: lambda p: ((_I < 8) ^ (_I < 8)).astype(np.int64) + _I,
    # only the sign of 1 // pid is at stake here: nothing else claimed about it could be false
    8: lambda p: _I + _quotient_of_zero(p) + 1,
}


@triton.jit
def _edges(x_ptr, out_ptr, FORM: tl.constexpr, N: tl.constexpr, BASE: tl.constexpr):
    pid = tl.program_id(0)
    i = tl.arange(0, N)
    if FORM == 0:
        o = (i.to(tl.uint32) + 2147483640).to(tl.int32) % 8 + 8
    elif FORM == 1:
        o = ((1 // pid) * 16 + i) // 4 + 8
    elif FORM == 2:
        o = ((1 // pid) * 16 + i) % 4 + 8
    elif FORM == 3:
        o = (i.to(tl.uint32) - 8).to(tl.int64) % 64
    elif FORM == 4:
        o = (i.to(tl.int8) + 120).to(tl.int32) + 128
    elif FORM == 5:
        o = (i + 120).to(tl.int8).to(tl.int32) + 128
    elif FORM == 6:
        o = ((i // 4 - 2) >> 40) + i + 1
    elif FORM == 7:
        flag = i < 8
        o = (flag + flag).to(tl.int32) + i
    else:
        o = i + 1 // pid + 1
    tl.store(out_ptr + pid * N + i, tl.load(x_ptr + BASE + o))


@pytest.mark.parametrize("form", sorted(EXPECTED))
def test_each_edge_case_keeps_the_claims_true(form, monkeypatch):
    monkeypatch.setenv("TRITIUM_CHECK_ANALYSIS", "all")
    x = torch.arange(4096, dtype=torch.float32)
    out = torch.zeros(PROGRAMS * N)
    _edges[(PROGRAMS,)](x, out, FORM=form, N=N, BASE=BASE)
    expected = np.concatenate([np.broadcast_to(EXPECTED[form](p), (N,)) for p in range(PROGRAMS)]) + BASE
    assert out.numpy().tolist() == expected.astype(np.float32).tolist()


@triton.jit
def _narrowed(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # BLOCK = 256: the i8 values run 0, 1, ..., 127, -128, ..., -1, a run cut at 128
    i = tl.arange(0, BLOCK)
    tl.store(out_ptr + i, tl.load(x_ptr + i.to(tl.int8).to(tl.int32) + 128))


def test_a_narrowing_cast_cuts_runs_at_the_wrap_point(monkeypatch):
    monkeypatch.setenv("TRITIUM_CHECK_ANALYSIS", "all")
    x = torch.arange(256, dtype=torch.float32)
    out = torch.zeros(256)
    _narrowed[(1,)](x, out, BLOCK=256)
    assert out.numpy().tolist() == (_as(np.arange(256), np.int8) + 128).astype(np.float32).tolist()
    fn = compile_source(ASTSource(_narrowed, "*fp32:16,*fp32:16", constexprs={"BLOCK": 256})).function
    narrowed = next(op for op in fn.walk() if op.opcode == "cast" and op.result.type.scalar.name == "int8")
    assert analyze_axis_info(fn).get(narrowed.result).contiguity == (128,)


def _claims_of(form: int, opcode: str, index: int = 0):
    """The claims about the ``index``-th result of ``opcode`` in ``_edges`` for ``form``."""
    source = ASTSource(_edges, "*fp32:16,*fp32:16", constexprs={"FORM": form, "N": N, "BASE": BASE})
    fn = compile_source(source).function
    return analyze_axis_info(fn).get([op for op in fn.walk() if op.opcode == opcode][index].result)


def _summary(info) -> tuple:
    return info.contiguity[0], info.divisibility[0], info.constancy[0], info.nonnegative


@pytest.mark.parametrize("form,opcode,index,claims", [
    # u32 + (2**31 - 8), as i32: pieces of 8 from multiples of 8, no longer non-negative
    (0, "cast", 1, (8, 8, 1, False)),
    (0, "mod", 0, (1, 1, 1, False)),
    # 1 // pid may be 1 // 0 == -1: not non-negative, so // 4 and % 4 keep no runs
    (1, "floordiv", 0, (1, 1, 1, False)),
    (1, "floordiv", 1, (1, 1, 1, False)),
    (2, "mod", 0, (1, 1, 1, False)),
    # u32 i - 8 wraps at 2**32 - 1 -> 0: pieces of 8 (what -8 divides by)
    (3, "sub", 0, (8, 8, 1, True)),
    (3, "mod", 0, (8, 8, 1, True)),
    # i8 i + 120 wraps at 127 -> -128: pieces of 8, no longer non-negative
    (4, "add", 0, (8, 8, 1, False)),
    # the sign fill of i // 4 - 2 (pieces of 4 equal values) is constant in pieces of 4 too
    (6, "shr", 0, (1, 1, 4, False)),
])
def test_edge_case_claims(form, opcode, index, claims):
    assert _summary(_claims_of(form, opcode, index)) == claims


def test_a_false_sign_claim_is_caught(monkeypatch):
    # a floordiv rule that takes the dividend's and divisor's signs for the quotient's, as the
    # rule once did: 1 // pid is -1 in program 0, and the check must say so at the floordiv
    monkeypatch.setenv("TRITIUM_CHECK_ANALYSIS", "all")
    monkeypatch.setattr(analysis_check, "_FUNCTIONS", {})
    sound = axis_rules._RULES["floordiv"]
    monkeypatch.setitem(axis_rules._RULES, "floordiv",
                        lambda op, infos: dataclasses.replace(sound(op, infos), nonnegative=True))
    caught = r"claims nonnegative for the floordiv .* program \(0, 0, 0\) computed \[-1\]"
    with pytest.raises(analysis_check.AnalysisClaimError, match=caught):
        _edges[(PROGRAMS,)](torch.arange(4096.0), torch.zeros(PROGRAMS * N), FORM=8, N=N, BASE=BASE)


@pytest.mark.parametrize("text,setting,limit", [
    ("", "", None), ("0", "", None), ("off", "", None), ("1", "sampled", 4), ("yes", "sampled", 4),
    (" ALL ", "all", 0),
])
def test_the_check_setting(text, setting, limit, monkeypatch):
    monkeypatch.setenv("TRITIUM_CHECK_ANALYSIS", text)
    assert config.check_analysis() == setting
    assert analysis_check.check_limit() == limit
