"""Triton's type-promotion rules, checked against a table written from the documentation.

Oracle: ``helpers_elementwise.expected_binary`` and friends (Triton's documented rules, written
out independently of tritium's promotion.py); values: numpy computing in the expected type.
Tolerance: none. Types must match exactly and stored values bit for bit.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tritium as triton
import tritium.language as tl
from helpers_elementwise import (
    ALL, FP8, INTS, NP, STANDARD, assert_bits_equal, expected_binary, expected_truediv,
    expected_with_scalar, ir_result_types, literal_type,
)

# One value per type, chosen so that sums wrap (integers at their maximum) or round (floats).
SAMPLE = {
    "int1": True,
    "int8": 127, "int16": 32767, "int32": 2**31 - 1, "int64": 2**63 - 1,
    "uint8": 255, "uint16": 65535, "uint32": 2**32 - 1, "uint64": 2**64 - 1,
    "fp8e4nv": 3.5, "fp8e5": -3.0, "fp16": 3.140625, "bf16": -2.71875,
    "fp32": float(np.float32(1 / 3)), "fp64": 1 / 7,
}


def one(name: str) -> np.ndarray:
    return np.array([SAMPLE[name]]).astype(NP[name])


def oracle_add(a: np.ndarray, b: np.ndarray, result: str) -> np.ndarray:
    """``a + b`` evaluated in ``result``: operands converted first, integers wrap, floats round once."""
    if result == "int1":
        return np.logical_xor(a.astype(bool), b.astype(bool))  # i1 addition is modulo 2
    with np.errstate(over="ignore"):  # int64 max -> fp16 is inf, as a GPU's cvt.rn gives
        x, y = a.astype(NP[result]), b.astype(NP[result])
    if result in INTS:
        return x + y  # numpy integer addition wraps like two's complement hardware
    return (x.astype(np.float64) + y.astype(np.float64)).astype(NP[result])


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr):
    c = tl.load(a_ptr) + tl.load(b_ptr)
    tl.static_print("promoted:", c.dtype)
    tl.store(out_ptr, c)


@triton.jit
def sub_kernel(a_ptr, b_ptr, out_ptr):
    tl.store(out_ptr, tl.load(a_ptr) - tl.load(b_ptr))


@triton.jit
def mul_kernel(a_ptr, b_ptr, out_ptr):
    tl.store(out_ptr, tl.load(a_ptr) * tl.load(b_ptr))


@triton.jit
def truediv_kernel(a_ptr, b_ptr, out_ptr):
    tl.store(out_ptr, tl.load(a_ptr) / tl.load(b_ptr))


@triton.jit
def mod_kernel(a_ptr, b_ptr, out_ptr):
    tl.store(out_ptr, tl.load(a_ptr) % tl.load(b_ptr))


@triton.jit
def floordiv_kernel(a_ptr, b_ptr, out_ptr):
    tl.store(out_ptr, tl.load(a_ptr) // tl.load(b_ptr))


@triton.jit
def where_kernel(a_ptr, b_ptr, out_ptr):
    tl.store(out_ptr, tl.where(tl.load(a_ptr) == tl.load(a_ptr), tl.load(a_ptr), tl.load(b_ptr)))


@triton.jit
def maximum_kernel(a_ptr, b_ptr, out_ptr):
    tl.store(out_ptr, tl.maximum(tl.load(a_ptr), tl.load(b_ptr)))


def compiled_type(kernel, a: str, b: str, opcode: str) -> str:
    """Compiles ``kernel`` for (*a, *b, *fp32) and returns the type of its one ``opcode`` result."""
    text = kernel.ir(f"*{a},*{b},*fp32")
    found = ir_result_types(text, opcode)
    assert len(found) == 1, f"expected one {opcode} in\n{text}"
    return found[0]


PAIRS = list(itertools.product(ALL, ALL))


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}+{b}" for a, b in PAIRS])
def test_add_promotes_every_pair(a, b, capsys):
    expected = expected_binary(a, b)
    x, y = one(a), one(b)
    if expected is None:
        with pytest.raises(triton.CompilationError, match="unexpected types|fp8"):
            add_kernel[(1,)](x, y, np.zeros(1, np.float32))
        return
    out = np.zeros(1, NP[expected])
    add_kernel.cache.clear()  # compile afresh so that static_print speaks
    add_kernel[(1,)](x, y, out)
    assert capsys.readouterr().out.strip() == f"promoted: {expected}"
    assert compiled_type(add_kernel, a, b, "add") == expected
    assert_bits_equal(out, oracle_add(x, y, expected), f"{a}+{b}")


@pytest.mark.parametrize("kernel,opcode", [(sub_kernel, "sub"), (mul_kernel, "mul"), (where_kernel, "select"),
                                           (maximum_kernel, "maximum")])
def test_other_binary_ops_promote_like_add(kernel, opcode):
    for a, b in itertools.product(STANDARD, STANDARD):
        expected = expected_binary(a, b)
        assert compiled_type(kernel, a, b, opcode) == expected, (opcode, a, b)


def test_promotion_table_spot_checks():
    """A few entries spelled out, so a reader can see the table's shape at a glance."""
    assert expected_binary("fp16", "bf16") == "fp16"
    assert expected_binary("bf16", "int8") == "fp32"
    assert expected_binary("fp16", "int64") == "fp16"
    assert expected_binary("int32", "uint32") == "uint32"
    assert expected_binary("int64", "uint32") == "int64"
    assert expected_binary("int8", "uint64") == "uint64"
    assert expected_binary("fp8e4nv", "fp8e5") == "fp16"
    assert expected_binary("fp8e5", "int8") is None
    assert expected_binary("int32", "uint8", div_or_mod=True) is None


@pytest.mark.parametrize("a", STANDARD)
def test_truediv_types(a):
    for b in STANDARD:
        expected = expected_truediv(a, b)
        if expected is None:
            with pytest.raises(triton.CompilationError, match="signedness"):
                truediv_kernel.ir(f"*{a},*{b},*fp32")
        else:
            assert compiled_type(truediv_kernel, a, b, "div") == expected, (a, b)


@pytest.mark.parametrize("a", STANDARD)
def test_mod_types(a):
    for b in STANDARD:
        expected = expected_binary(a, b, div_or_mod=True)
        if expected is None:
            with pytest.raises(triton.CompilationError, match="signedness"):
                mod_kernel.ir(f"*{a},*{b},*fp32")
        else:
            assert compiled_type(mod_kernel, a, b, "mod") == expected, (a, b)


@pytest.mark.parametrize("a", STANDARD)
def test_floordiv_types(a):
    for b in STANDARD:
        expected = expected_binary(a, b, div_or_mod=True)
        if expected is None:
            with pytest.raises(triton.CompilationError, match="signedness"):
                floordiv_kernel.ir(f"*{a},*{b},*fp32")
        elif expected not in INTS:
            with pytest.raises(triton.CompilationError):
                floordiv_kernel.ir(f"*{a},*{b},*fp32")
        else:
            assert compiled_type(floordiv_kernel, a, b, "floordiv") == expected, (a, b)


def test_int_true_division_computes_in_fp32():
    a = np.array([7, -7, 1], np.int32)
    b = np.array([2, 2, 3], np.int32)
    out = np.zeros(3, np.float64)

    @triton.jit
    def k(a_ptr, b_ptr, out_ptr):
        offs = tl.arange(0, 4)
        m = offs < 3
        q = tl.load(a_ptr + offs, mask=m) / tl.load(b_ptr + offs, mask=m)
        tl.static_assert(q.dtype == tl.float32)
        tl.store(out_ptr + offs, q, mask=m)

    k[(1,)](a, b, out)
    expected = (a.astype(np.float32) / b.astype(np.float32)).astype(np.float64)
    assert_bits_equal(out, expected, "int/int")
    assert out[2] != 1 / 3  # rounded to fp32, not fp64


def test_mixed_signedness_division_error_is_explained():
    with pytest.raises(triton.CompilationError) as info:
        truediv_kernel.ir("*i32,*u32,*fp32")
    assert "signedness" in str(info.value)
    assert "truediv_kernel" in str(info.value) or "test_promotion.py" in str(info.value)


# Python scalars are weak ------------------------------------------------------------------------
@triton.jit
def scalar_add_kernel(x_ptr, out_ptr, S: tl.constexpr):
    y = tl.load(x_ptr) + S
    tl.static_print("scalar:", y.dtype)
    tl.store(out_ptr, y)


@triton.jit
def scalar_radd_kernel(x_ptr, out_ptr, S: tl.constexpr):
    y = S + tl.load(x_ptr)
    tl.static_print("scalar:", y.dtype)
    tl.store(out_ptr, y)


@triton.jit
def scalar_div_kernel(x_ptr, out_ptr, S: tl.constexpr):
    y = tl.load(x_ptr) / S
    tl.static_print("scalar:", y.dtype)
    tl.store(out_ptr, y)


@triton.jit
def scalar_mod_kernel(x_ptr, out_ptr, S: tl.constexpr):
    y = tl.load(x_ptr) % S
    tl.static_print("scalar:", y.dtype)
    tl.store(out_ptr, y)


def scalar_type(kernel, tensor_ty: str, value) -> str:
    text = kernel.ir(f"*{tensor_ty},*fp64", S=value)
    opcode = {scalar_add_kernel: "add", scalar_radd_kernel: "add", scalar_div_kernel: "div",
              scalar_mod_kernel: "mod"}[kernel]
    (ty,) = ir_result_types(text, opcode)
    return ty


@pytest.mark.parametrize("case", [
    ("fp16", 1.0, "fp16"), ("bf16", 1.0, "bf16"), ("int8", 1, "int8"), ("int32", 1.5, "fp32"),
    ("uint8", 1, "uint8"), ("int16", 4.0, "fp32"), ("int1", 1, "int32"), ("int1", True, "int1"),
    ("fp32", 1e300, "fp32"), ("int8", True, "int8"), ("uint64", 5, "uint64"), ("fp8e5", 2.0, "fp8e5"),
    ("int1", 2**31, "uint32"), ("int1", 2**40, "int64"), ("int1", 2**63, "uint64"), ("int1", 1e300, "fp64"),
    ("int64", 1e-300, "fp64"),
], ids=lambda c: f"{c[0]}+{c[1]!r}")
def test_weak_scalar_add(case):
    tensor_ty, value, expected = case
    assert expected_with_scalar(tensor_ty, value) == expected  # the oracle agrees with the brief
    assert scalar_type(scalar_add_kernel, tensor_ty, value) == expected
    assert scalar_type(scalar_radd_kernel, tensor_ty, value) == expected


@pytest.mark.parametrize("case", [
    ("fp16", 2.0, "fp32"), ("bf16", 2.0, "fp32"), ("fp16", 2, "fp32"), ("int8", 2, "fp32"),
    ("fp32", 2.0, "fp32"), ("fp64", 2.0, "fp64"), ("uint16", 3, "fp32"),
], ids=lambda c: f"{c[0]}/{c[1]!r}")
def test_weak_scalar_truediv(case):
    tensor_ty, value, expected = case
    assert expected_with_scalar(tensor_ty, value, div_or_mod=True, truediv=True) == expected
    assert scalar_type(scalar_div_kernel, tensor_ty, value) == expected


@pytest.mark.parametrize("case", [("fp16", 2.0, "fp32"), ("bf16", 3, "fp32"), ("int8", 3, "int8"),
                                  ("uint32", 3, "uint32")], ids=lambda c: f"{c[0]}%{c[1]!r}")
def test_weak_scalar_mod(case):
    tensor_ty, value, expected = case
    assert expected_with_scalar(tensor_ty, value, div_or_mod=True) == expected
    assert scalar_type(scalar_mod_kernel, tensor_ty, value) == expected


@pytest.mark.parametrize("tensor_ty", STANDARD)
@pytest.mark.parametrize("value", [True, 3, 2**31, 2**40, 1.5, 1e300, -1])
def test_weak_scalar_table(tensor_ty, value):
    expected = expected_with_scalar(tensor_ty, value)
    if expected is None:
        with pytest.raises(triton.CompilationError):
            scalar_add_kernel.ir(f"*{tensor_ty},*fp64", S=value)
    else:
        assert scalar_type(scalar_add_kernel, tensor_ty, value) == expected


def test_weak_scalar_values_are_converted_once():
    """A float literal joins an fp64 tensor as the fp64 nearest to it, not via fp32."""
    x = np.zeros(1, np.float64)
    out = np.zeros(1, np.float64)
    scalar_add_kernel[(1,)](x, out, S=0.1)
    assert out[0] == 0.1
    x16 = np.zeros(1, np.float16)
    out16 = np.zeros(1, np.float64)
    scalar_add_kernel[(1,)](x16, out16, S=0.1)
    assert out16[0] == float(np.float16(0.1))


def test_weak_int_scalar_wraps_in_the_tensor_type():
    x = np.array([100, -128, 127], np.int8)
    out = np.zeros(3, np.int64)

    @triton.jit
    def k(x_ptr, out_ptr):
        offs = tl.arange(0, 4)
        m = offs < 3
        y = tl.load(x_ptr + offs, mask=m) + 100
        tl.static_assert(y.dtype == tl.int8)
        tl.store(out_ptr + offs, y, mask=m)

    k[(1,)](x, out)
    np.testing.assert_array_equal(out, (x + np.int8(100)).astype(np.int64))  # wraps: 100+100 == -56


def test_scalar_out_of_range_or_negative_for_unsigned_is_rejected():
    with pytest.raises(triton.CompilationError, match="out of range|does not fit"):
        scalar_add_kernel.ir("*i8,*fp64", S=300)
    with pytest.raises(triton.CompilationError, match="unsigned|negative"):
        scalar_add_kernel.ir("*u16,*fp64", S=-1)


def test_python_literal_types(capsys):
    assert literal_type(2**31) == "uint32"
    assert literal_type(2**40) == "int64"
    assert literal_type(2**31 - 1) == "int32"
    assert literal_type(-(2**31) - 1) == "int64"
    assert literal_type(2**63) == "uint64"
    assert literal_type(1.5) == "fp32"
    assert literal_type(1e300) == "fp64"

    @triton.jit
    def k(out_ptr):
        a = tl.full((), False, tl.int1)
        tl.static_print("lit:", (a + 2**31).dtype, (a + 2**40).dtype, (a + (2**31 - 1)).dtype,
                        (a + (-(2**31) - 1)).dtype, (a + 2**63).dtype, (a + 1.5).dtype, (a + 1e300).dtype)
        tl.store(out_ptr, a + 2**31)

    out = np.zeros(1, np.uint32)
    k[(1,)](out)
    assert capsys.readouterr().out.split() == ["lit:", "uint32", "int64", "int32", "int64", "uint64", "fp32", "fp64"]
    assert out[0] == 2**31


@triton.jit
def runtime_int_kernel(out_ptr, n):
    tl.static_print("arg:", n.dtype)
    tl.store(out_ptr, n)


@pytest.mark.parametrize("value,expected", [(5, "int32"), (-(2**31), "int32"), (2**31, "int64"),
                                            (2**40, "int64"), (2**63, "uint64"), (-(2**40), "int64")])
def test_runtime_int_argument_types(value, expected, capsys):
    """Triton's launcher types an int argument as i32 when it fits, u64 above 2**63-1, else i64."""
    out = np.zeros(1, np.float64)
    runtime_int_kernel.cache.clear()
    runtime_int_kernel[(1,)](out, value)
    assert capsys.readouterr().out.split() == ["arg:", expected]
    assert out[0] == float(value)


# Property: the promoted type is symmetric and equals the table --------------------------------------
@settings(max_examples=120, deadline=None)
@given(a=st.sampled_from(ALL), b=st.sampled_from(ALL))
def test_promotion_is_symmetric_and_matches_table(a, b):
    expected = expected_binary(a, b)
    assert expected == expected_binary(b, a)
    if expected is None:
        for x, y in ((a, b), (b, a)):
            with pytest.raises(triton.CompilationError):
                add_kernel.ir(f"*{x},*{y},*fp32")
        return
    assert compiled_type(add_kernel, a, b, "add") == expected
    assert compiled_type(add_kernel, b, a, "add") == expected
    if a not in FP8 and b not in FP8:
        expected_div = expected_truediv(a, b)
        assert expected_div == expected_truediv(b, a)
        if expected_div is not None:
            assert compiled_type(truediv_kernel, a, b, "div") == expected_div
            assert compiled_type(truediv_kernel, b, a, "div") == expected_div
