"""Every transfer rule of the axis-info analysis against values the interpreter computes.

Each form below builds an offset block with one kind of operation, loads through it and stores the
result; it runs with TRITIUM_CHECK_ANALYSIS=all, so each claim about the offsets (and the pointers)
is checked in every program, and the loaded values are compared with the same arithmetic in numpy
(the oracle). A few forms also pin how precise the claims are.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.compiler import ASTSource, compile_source
from tritium.compiler.analysis import analyze_axis_info

# The interpreter checks the analyses' claims against the values it computes: these tests run on it.
pytestmark = pytest.mark.usefixtures("on_the_interpreter")

N = 16
BASE = 1024  # keeps every offset inside x
_I = np.arange(N)


def _c_div(a, b):
    return np.trunc(a / b).astype(np.int64)


def _c_mod(a, b):
    return a - _c_div(a, b) * b


# form -> the offsets the kernel computes for program p, as numpy (p is the program id)
EXPECTED = {
    0: lambda p: _I * 3 + 5,
    1: lambda p: np.where(_I < 8, _I, _I + 32),
    2: lambda p: (_I ^ 1) + (_I & 12) + (_I | 1),
    3: lambda p: (_I << 2) + (_I >> 1),
    4: lambda p: np.minimum(_I, 7) + np.maximum(_I, 3),
    5: lambda p: _I * 3,
    6: lambda p: _c_mod(_I - 8, 4) + 8,
    7: lambda p: _c_div(_I - 8, 4) + 8,
    8: lambda p: _I + 7,
    9: lambda p: (_I.reshape(4, 4) * 2).reshape(N),
    10: lambda p: _I.reshape(4, 4).T.reshape(N),
    11: lambda p: 4 * _I + 1,
    12: lambda p: 15 - _I,
    13: lambda p: np.abs(_I - 8),
    14: lambda p: _I // 2 * 2,
    15: lambda p: (_I // 4) * 16,
    16: lambda p: (_I + p * N) % 20,
    17: lambda p: _I + (p % 2),
    18: lambda p: _I + 3 * 8,
    19: lambda p: (_I + p * N) // 8 * 8 + _I % 8,
    20: lambda p: _I + (p * N) * (p < 2),
}


@triton.jit
def _forms(x_ptr, out_ptr, FORM: tl.constexpr, N: tl.constexpr, BASE: tl.constexpr):
    pid = tl.program_id(0)
    i = tl.arange(0, N)
    if FORM == 0:
        o = i * 3 + 5
    elif FORM == 1:
        o = tl.where(i < 8, i, i + 32)
    elif FORM == 2:
        o = (i ^ 1) + (i & 12) + (i | 1)
    elif FORM == 3:
        o = (i << 2) + (i >> 1)
    elif FORM == 4:
        o = tl.minimum(i, 7) + tl.maximum(i, 3)
    elif FORM == 5:
        o = (i.to(tl.int64) * 3).to(tl.int32)
    elif FORM == 6:
        o = (i - 8) % 4 + 8
    elif FORM == 7:
        o = (i - 8) // 4 + 8
    elif FORM == 8:
        o = (i.to(tl.uint32) + 7).to(tl.int32)
    elif FORM == 9:
        o = tl.reshape(tl.reshape(i, (4, 4)) * 2, (N,))
    elif FORM == 10:
        o = tl.reshape(tl.trans(tl.reshape(i, (4, 4))), (N,))
    elif FORM == 11:
        first, second = tl.split(tl.join(i * 2, i * 2 + 1))
        o = first + second
    elif FORM == 12:
        o = -i + 15
    elif FORM == 13:
        o = tl.abs(i - 8)
    elif FORM == 14:
        o = i // 2 * 2
    elif FORM == 15:
        o = tl.max_constancy(tl.multiple_of((i // 4) * 16, 16), 4)
    elif FORM == 16:
        o = (i + pid * N) % 20
    elif FORM == 17:
        if pid % 2 == 1:
            o = i + 1
        else:
            o = i
    elif FORM == 18:
        o = i
        k = 0
        while k < 3:
            o += 8
            k += 1
    elif FORM == 19:
        o = (i + pid * N) // 8 * 8 + i % 8
    else:
        o = i + tl.where(pid < 2, pid * N, 0)
    tl.store(out_ptr + pid * N + i, tl.load(x_ptr + BASE + o))


@pytest.mark.parametrize("form", sorted(EXPECTED))
def test_each_rule_holds_for_the_values_computed(form, monkeypatch):
    monkeypatch.setenv("TRITIUM_CHECK_ANALYSIS", "all")
    programs = 4
    x = torch.arange(4096, dtype=torch.float32)
    out = torch.zeros(programs * N)
    _forms[(programs,)](x, out, FORM=form, N=N, BASE=BASE)
    expected = np.concatenate([EXPECTED[form](p) for p in range(programs)]) + BASE
    assert out.numpy().tolist() == expected.astype(np.float32).tolist()


def _offset_claims(form: int):
    signature = "*fp32:16,*fp32:16"
    fn = compile_source(ASTSource(_forms, signature, constexprs={"FORM": form, "N": N, "BASE": BASE})).function
    load = next(op for op in fn.walk() if op.opcode == "load")
    offsets = load.operands[0].owner.operands[1]  # (x_ptr + BASE) + o
    return analyze_axis_info(fn).get(offsets)


@pytest.mark.parametrize("form,contiguity,divisibility,constancy", [
    (1, 8, 8, 1),  # runs [0..7] and [40..47], both starting at multiples of 8
    (9, 1, 2, 1),  # a reshape that scrambles runs keeps only what divides every element
    (14, 1, 2, 2),  # i // 2 * 2: pairs of one even value
    (15, 1, 16, 4),  # the hints: runs of 4 equal multiples of 16
    (16, 4, 4, 1),  # (i + 16 p) % 20: runs of 4 that start at multiples of 4
    (19, 8, 8, 1),  # runs of 8 from multiples of 8
])
def test_claims_are_as_precise_as_the_rules_allow(form, contiguity, divisibility, constancy):
    info = _offset_claims(form)
    assert (info.contiguity, info.divisibility, info.constancy) == ((contiguity,), (divisibility,), (constancy,))


@pytest.mark.parametrize("form", [6, 7])
def test_a_division_rule_that_ignores_the_sign_is_caught(form, monkeypatch):
    # Triton keeps runs through // and % whatever the dividend's sign; C's truncation breaks them
    # around zero (-5 // 4 == -1 but -4 // 4 == -1 and -3 // 4 == 0), and the check must say so
    from tritium.backends.interpreter import analysis_check
    from tritium.compiler.analysis import axis_rules
    from tritium.compiler.analysis.axis_info import AxisInfo

    monkeypatch.setenv("TRITIUM_CHECK_ANALYSIS", "all")
    monkeypatch.setattr(analysis_check, "_FUNCTIONS", {})
    sound = axis_rules._run_through_divisor

    def sign_ignored(a, b, d):
        return sound(AxisInfo(a.contiguity, a.divisibility, a.constancy, a.value, True), b, d)

    monkeypatch.setattr(axis_rules, "_run_through_divisor", sign_ignored)
    claim = "contiguity" if form == 6 else "constancy"
    with pytest.raises(analysis_check.AnalysisClaimError, match=rf"claims {claim}\[0\] = 4 for the (mod|floordiv)"):
        _forms[(1,)](torch.arange(4096.0), torch.zeros(N), FORM=form, N=N, BASE=BASE)
