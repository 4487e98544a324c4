"""The differential runner and the frontend fuzzer, on fixed seeds and on hypothesis's examples.

A short campaign runs here (the long one is ``benchmarks/fuzz.py --minutes N``): every generated
kernel must agree on every execution path (``differential.py`` states the bounds), and every
mutated kernel must run or fail with one of tritium's errors at a line of the kernel. The tests
after them show that the runner can fail: a wrong fast path, an exception inside a backend, and
differences of one ulp are each reported.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from .differential import available_paths, check_case, compare
from .frontend import check_mutant, mutant
from .generator import RandomDraw, draw_case, kernels


def _reports(findings) -> str:
    return "\n\n".join(f.report() for f in findings)


@pytest.mark.parametrize("first", range(100_000, 100_080, 10))
def test_fixed_seed_kernels_agree_on_every_path(first):
    findings = []
    for seed in range(first, first + 10):
        findings += check_case(draw_case(RandomDraw(seed)), seed)
    assert not findings, _reports(findings)


@settings(max_examples=12)
@given(case=kernels())
def test_hypothesis_kernels_agree_on_every_path(case):
    findings = check_case(case, seed=1)
    assert not findings, _reports(findings)


@pytest.mark.parametrize("first", range(200_000, 200_300, 100))
def test_mutated_kernels_run_or_fail_at_a_kernel_line(first):
    findings, outcomes = [], []
    for seed in range(first, first + 100):
        case, source = mutant(RandomDraw(seed))
        outcome, found = check_mutant(case, source, seed)
        outcomes.append(outcome)
        findings += found
    assert not findings, _reports(findings)
    assert outcomes.count("compilation error") > 30 and outcomes.count("ran") > 5  # both kinds were drawn


def test_every_host_path_is_compared():
    assert {"reference", "interpreter", "interpreter-small-batches"} <= set(available_paths())
    assert "cpu" in available_paths()  # llvmlite is a dependency: the compiled backend is always here


# the runner can fail ------------------------------------------------------------------------------
def test_a_wrong_fast_path_is_a_disagreement_with_the_reference(monkeypatch):
    """The reference mode takes no affine shortcut: break the shortcut for `add` and only the other
    interpreter paths go wrong."""
    from tritium.backends.interpreter import affine

    original = affine.AFFINE_HANDLERS["add"]

    def off_by_one(ex, op, args, active):
        result = original(ex, op, args, active)
        if isinstance(result, affine.Affine) and op.result.type.scalar.is_int():
            return affine.Affine(result.base + 1, result.strides, result.shape, result.dtype)
        return result

    monkeypatch.setitem(affine.AFFINE_HANDLERS, "add", off_by_one)
    findings = []
    for seed in range(300_000, 300_040):
        findings += check_case(draw_case(RandomDraw(seed)), seed, ["reference", "interpreter"])
        if findings:
            break
    assert findings and findings[0].path == "interpreter"
    assert findings[0].kind in ("disagreement", "exception")


def test_an_exception_inside_a_backend_is_an_internal_error_finding(monkeypatch):
    from tritium.backends.interpreter import executor

    def broken(ex, op, args, active):
        raise ValueError("a bug")

    monkeypatch.setitem(executor._EXEC, "program_id", broken)
    findings = check_case(draw_case(RandomDraw(7)), 7, ["reference", "interpreter"])
    assert findings and all(f.kind == "internal error" for f in findings)
    assert "InternalError" in findings[0].detail and "a bug" in findings[0].detail


def test_comparisons_see_one_ulp_and_signed_zeros_but_not_nan_payloads():
    x = np.array([1.0, -0.0, np.nan], dtype=np.float32)
    assert compare(x, x.copy(), ("exact",), {}) is None
    one_ulp = x.copy()
    one_ulp[0] = np.nextafter(np.float32(1.0), np.float32(2.0))
    assert "1 of 3 elements differ" in compare(x, one_ulp, ("exact",), {})
    assert compare(x, one_ulp, ("ulp", 1), {}) is None
    zero = x.copy()
    zero[1] = 0.0
    assert compare(x, zero, ("exact",), {}) is not None
    other_nan = x.copy()
    other_nan.view(np.uint32)[2] = 0xFFC00000
    assert compare(x, other_nan, ("exact",), {}) is None
    assert compare(np.array([3], np.int32), np.array([4], np.int32), ("exact",), {}) is not None
