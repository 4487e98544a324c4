"""Constant folding: CHECK lines for the spec's edge cases, and a property test: random constants
of every dtype, each elementwise op folded and executed by the interpreter, compared bit for bit."""
from __future__ import annotations

import math

import numpy as np
import pytest

from ir_check import check
from pass_helpers import after, execute, same_results
from tritium.compiler.ir.parser import parse_function
from tritium.compiler.ir.printer import print_function
from tritium.compiler.ir.verifier import verify
from tritium.compiler.passes import eliminate_dead_code, fold_constants
from tritium.compiler.passes.constant_fold import FOLDABLE


# constant folding ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("lines,expected", [
    (["%a = constant {value=2} : i32", "%b = constant {value=3} : i32", "%r = add %a, %b : i32"],
     "constant {value=5} : i32"),
    (["%a = constant {value=127} : i8", "%b = constant {value=1} : i8", "%r = add %a, %b : i8"],
     "constant {value=-128} : i8"),
    (["%a = constant {value=True} : i1", "%b = constant {value=True} : i1", "%r = add %a, %b : i1"],
     "constant {value=False} : i1"),
    (["%a = constant {value=-7} : i8", "%b = constant {value=2} : i8", "%r = floordiv %a, %b : i8"],
     "constant {value=-3} : i8"),
    (["%a = constant {value=255} : u8", "%b = constant {value=2} : u8", "%r = floordiv %a, %b : u8"],
     "constant {value=127} : u8"),
    (["%a = constant {value=-128} : i8", "%b = constant {value=-1} : i8", "%r = floordiv %a, %b : i8"],
     "constant {value=-128} : i8"),
    (["%a = constant {value=127} : i16", "%b = constant {value=300} : i16", "%r = mul %a, %b : i16"],
     "constant {value=-27436} : i16"),
    (["%a = constant {value=-7} : i8", "%b = constant {value=2} : i8", "%r = mod %a, %b : i8"],
     "constant {value=-1} : i8"),
    (["%a = constant {value=1} : i32", "%b = constant {value=32} : i32", "%r = shl %a, %b : i32"],
     "constant {value=0} : i32"),
    (["%a = constant {value=-8} : i32", "%b = constant {value=40} : i32", "%r = shr %a, %b : i32"],
     "constant {value=-1} : i32"),
    (["%a = constant {value=nan} : fp32", "%b = constant {value=1.0} : fp32", "%r = minimum %a, %b : fp32"],
     "constant {value=1.0} : fp32"),
    (["%a = constant {value=nan} : fp32", "%b = constant {value=1.0} : fp32",
      "%r = maximum %a, %b {propagate_nan='all'} : fp32"], "constant {value=nan} : fp32"),
    (["%a = constant {value=0.0} : fp32", "%b = constant {value=-0.0} : fp32", "%r = minimum %a, %b : fp32"],
     "constant {value=-0.0} : fp32"),
    (["%a = constant {value=1.1} : fp32", "%r = cast %a {to=fp16, rounding='rtz'} : fp16"],
     "constant {value=1.099609375} : fp16"),
    (["%a = constant {value=1000.0} : fp32", "%r = cast %a {to=fp8e4nv} : fp8e4nv"],
     "constant {value=448.0} : fp8e4nv"),
    (["%a = constant {value=-3.7} : fp32", "%r = cast %a {to=i8} : i8"], "constant {value=-3} : i8"),
    (["%a = constant {value=5} : i32", "%b = constant {value=3} : i32", "%c = cmp %a, %b {predicate='gt'} : i1",
      "%r = select %c, %a, %b : i32"], "constant {value=5} : i32"),
    (["%a = constant {value=-128} : i8", "%r = abs %a : i8"], "constant {value=-128} : i8"),
    (["%a = constant {value=0} : u16", "%r = not %a : u16"], "constant {value=65535} : u16"),
])
def test_folding_follows_the_spec(lines, expected):
    dtype = lines[-1].rsplit(": ", 1)[1]
    body = "\n".join(f"  {line}" for line in lines)
    text = f"func @k(%out: ptr<{dtype}>) {{\n{body}\n  store %out, %r\n}}"
    out = after(text, fold_constants, eliminate_dead_code)
    check(out, f"# CHECK: {expected}\n# CHECK-NEXT: store %out")


@pytest.mark.parametrize("lines", [
    ["%a = constant {value=2147483647} : i32", "%b = constant {value=1} : i32", "%r = add %a, %b : i32"],
    ["%a = constant {value=-2147483648} : i32", "%r = neg %a : i32"],
    ["%a = constant {value=7} : i64", "%b = constant {value=0} : i64", "%r = mod %a, %b : i64"],
    ["%a = constant {value=7} : u8", "%b = constant {value=0} : u8", "%r = floordiv %a, %b : u8"],
    ["%a = constant {value=nan} : fp32", "%r = cast %a {to=i32} : i32"],
    ["%a = constant {value=3e9} : fp64", "%r = cast %a {to=i32} : i32"],
])
def test_folding_leaves_what_debug_mode_reports(lines):
    dtype = lines[-1].rsplit(": ", 1)[1]
    opcode = lines[-1].split(" = ")[1].split()[0]
    body = "\n".join(f"  {line}" for line in lines)
    text = f"func @k(%out: ptr<{dtype}>) {{\n{body}\n  store %out, %r\n}}"
    check(after(text, fold_constants), f"# CHECK: = {opcode} ")


def test_folding_a_block_of_splats_gives_a_splat():
    text = """
func @k(%out: ptr<i32>) {
  %a = constant {value=6} : i32
  %b = splat %a : <4xi32>
  %c = constant {value=7} : i32
  %d = splat %c : <4xi32>
  %e = mul %b, %d : <4xi32>
  %0 = arange {start=0, end=4} : <4xi32>
  %1 = splat %out : <4xptr<i32>>
  %2 = addptr %1, %0 : <4xptr<i32>>
  store %2, %e
}
"""
    out = same_results(text, [fold_constants, eliminate_dead_code], [np.zeros(4, np.int32)])
    check(print_function(out), "# CHECK: %[[C:\\d+]] = constant {value=42}\n# CHECK-NEXT: splat %[[C]] : <4xi32>")


# constant folding against execution, for random constants of every dtype ---------------------------------
_INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
_FLOATS = ["fp16", "bf16", "fp32", "fp64"]
_FP8 = ["fp8e4nv", "fp8e5"]
_TYPES = ["i1"] + _INTS + _FLOATS + _FP8


def _numpy_type(name: str) -> np.dtype:
    from tritium.compiler.ir.types import dtype_from_ir_name

    return dtype_from_ir_name(name).numpy


def _bits(name: str) -> int:
    from tritium.compiler.ir.types import dtype_from_ir_name

    return dtype_from_ir_name(name).primitive_bitwidth


def _ops(ty: str) -> list[tuple[str, str, int, str]]:
    """(opcode, attributes text, operand count, result type) of each op folded on ``ty``; clamp's
    operands are named instead of counted ("aba": a, b, a)."""
    ops = []
    binary = {"i1": ["add", "sub", "mul", "and", "or", "xor"],
              **{t: ["add", "sub", "mul", "floordiv", "mod", "and", "or", "xor", "shl", "shr"] for t in _INTS},
              **{t: ["add", "sub", "mul", "mod"] for t in _FLOATS}}.get(ty, [])
    ops += [(opcode, "", 2, ty) for opcode in binary]
    if ty not in _FP8:
        ops += [("cmp", f" {{predicate='{p}'}}", 2, "i1") for p in ("lt", "le", "gt", "ge", "eq", "ne")]
        for opcode in ("minimum", "maximum"):
            ops += [(opcode, "", 2, ty), (opcode, " {propagate_nan='all'}", 2, ty)]
        ops += [("clamp", "", "aba", ty), ("clamp", "", "bab", ty)]
        if ty in _FLOATS:
            ops += [("clamp", " {propagate_nan='all'}", "aba", ty), ("clamp", " {propagate_nan='all'}", "bab", ty)]
        ops += [("neg", "", 1, ty)]
    if ty == "i1" or ty in _INTS:
        ops += [("not", "", 1, ty)]
    if ty in _INTS or ty in _FLOATS:
        ops += [("abs", "", 1, ty)]
    ops += [("select", "", 3, ty)]
    for target in _TYPES:
        ops.append(("cast", f" {{to={target}}}", 1, target))
        narrower = ty in _FLOATS + _FP8 and target in _FLOATS + _FP8 and _bits(target) < _bits(ty)
        if narrower:
            ops.append(("cast", f" {{to={target}, rounding='rtz'}}", 1, target))
    return ops


def _as_text(value) -> str:
    from tritium.compiler.ir.printer import attr_text

    return attr_text(value)


def _debug_reports(opcode: str, ty: str, result: str, values: list) -> bool:
    """Whether debug mode stops the kernel at this op (config.debug_mode's list), from exact math."""
    if opcode in ("add", "sub", "mul", "neg") and result == "i32":
        a = values[0]
        exact = {"add": lambda: a + values[1], "sub": lambda: a - values[1], "mul": lambda: a * values[1],
                 "neg": lambda: -a}[opcode]()
        return not -2**31 <= exact < 2**31
    if opcode in ("floordiv", "mod") and ty in _INTS:
        return values[1] == 0
    if opcode == "cast" and ty in _FLOATS + _FP8 and result in _INTS:
        x = values[0]
        info = np.iinfo(_numpy_type(result))
        return math.isnan(x) or math.isinf(x) or not info.min <= math.trunc(x) <= info.max
    return False


def _fold_case(ty: str, triples: list) -> tuple[str, int, int]:
    """IR storing every op of ``_ops(ty)`` on each (a, b, condition) of ``triples`` as the i64 of its
    bits; returns (text, number of stores, number of ops debug mode would stop at)."""
    lines, count, reported = [], 0, 0
    for n, (a, b, condition) in enumerate(triples):
        lines += [f"%a{n} = constant {{value={_as_text(a)}}} : {ty}",
                  f"%b{n} = constant {{value={_as_text(b)}}} : {ty}",
                  f"%c{n} = constant {{value={condition}}} : i1"]
        for k, (opcode, attrs, arity, result) in enumerate(_ops(ty)):
            name = f"%r{n}_{k}"
            operands = {1: [f"%a{n}"], 2: [f"%a{n}", f"%b{n}"], 3: [f"%c{n}", f"%a{n}", f"%b{n}"],
                        "aba": [f"%a{n}", f"%b{n}", f"%a{n}"], "bab": [f"%b{n}", f"%a{n}", f"%b{n}"]}[arity]
            lines.append(f"{name} = {opcode} {', '.join(operands)}{attrs} : {result}")
            reported += _debug_reports(opcode, ty, result, [a, b][:arity] if isinstance(arity, int) else [a, b])
            width = _bits(result)
            if result != "i1":  # the result's bits, as a signed integer of its width
                lines.append(f"{name}_bits = bitcast {name} : i{width}")
                name += "_bits"
            if result == "i1" or width < 64:
                lines.append(f"{name}_wide = cast {name} {{to=i64}} : i64")
                name += "_wide"
            lines += [f"%i{count} = constant {{value={count}}} : i32", f"%p{count} = addptr %out, %i{count} : ptr<i64>",
                      f"store %p{count}, {name}"]
            count += 1
    body = "\n".join(f"  {line}" for line in lines)
    return f"func @fold(%out: ptr<i64>) {{\n{body}\n}}", count, reported


def _rounded(value: float, ty: str) -> float:
    with np.errstate(all="ignore"):
        return float(np.array([value]).astype(_numpy_type(ty))[0])


def _constants(ty: str):
    from hypothesis import strategies as st

    if ty == "i1":
        return st.booleans()
    numpy = _numpy_type(ty)
    if ty in _INTS:
        info = np.iinfo(numpy)
        bits = info.bits
        edges = [v for v in (info.min, info.max, 0, 1, -1, 2, bits - 1, bits, bits + 1, -bits)
                 if info.min <= v <= info.max]
        return st.one_of(st.sampled_from(edges), st.integers(info.min, info.max))
    width = _bits(ty)
    unsigned = np.dtype(f"uint{max(8, width)}")
    from_bits = st.integers(0, 2 ** width - 1).map(lambda b: float(np.array([b], unsigned).view(numpy)[0]))
    specials = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, 3.0, -2.5, 1e-40, 65504.0, 1e30, 2.0**31,
                -2.0**31 - 1, 2.0**63]
    return st.one_of(st.sampled_from([_rounded(v, ty) for v in specials]), from_bits)


def _edge_pairs(ty: str) -> list[tuple]:
    """The pairs where the spec's edge cases live: signed zeros, NaN on either side, INT_MIN // -1,
    division by zero, shifts by the width and past it."""
    if ty == "i1":
        return [(True, True, False), (True, False, True)]
    if ty in _INTS:
        info = np.iinfo(_numpy_type(ty))
        minus_one = -1 if info.min < 0 else info.max
        return [(info.min, minus_one, True), (info.max, 0, False), (minus_one, info.bits, True),
                (info.min, info.bits - 1, False)]
    pairs = [(0.0, -0.0, True), (-0.0, 0.0, False), (math.nan, 1.0, True), (1.0, math.nan, False),
             (math.inf, -math.inf, True)]
    return [(_rounded(a, ty), _rounded(b, ty), c) for a, b, c in pairs]


@pytest.mark.parametrize("ty", _TYPES)
def test_folded_constants_are_bit_identical_to_executing_the_op(ty):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=3)
    @given(st.lists(st.tuples(_constants(ty), _constants(ty), st.booleans()), min_size=3, max_size=3))
    def compare(triples):
        text, count, reported = _fold_case(ty, triples + _edge_pairs(ty))
        outputs = []
        for fold in (False, True):
            fn = parse_function(text)
            if fold:
                fold_constants(fn)
                left = [op for op in fn.walk() if op.opcode in FOLDABLE
                        and all(v.owner is not None and v.owner.opcode == "constant" for v in op.operands)]
                assert len(left) == reported, [(op.opcode, op.attrs) for op in left]
            verify(fn)
            out = np.zeros(count, np.int64)
            execute(fn, out)
            outputs.append(out)
        differ = np.flatnonzero(outputs[0] != outputs[1])
        assert len(differ) == 0, (ty, triples, differ[:5], outputs[0][differ[:5]], outputs[1][differ[:5]])

    compare()
