"""The verifier checks every op against the IR spec: each broken invariant below is caught."""
from __future__ import annotations

import pytest

from tritium.compiler.ir import types as T
from tritium.compiler.ir.ops import Operation
from tritium.compiler.ir.parser import parse_function
from tritium.compiler.ir.verifier import IRVerificationError, verify

_GOOD = """func @k(%p: ptr<fp32>, %n: i32) {
  %0 = program_id {axis=0} : i32
  %1 = arange {start=0, end=8} : <8xi32>
  %2 = splat %0 : <8xi32>
  %3 = add %2, %1 : <8xi32>
  %4 = splat %n : <8xi32>
  %5 = cmp %3, %4 {predicate='lt'} : <8xi1>
  %6 = splat %p : <8xptr<fp32>>
  %7 = addptr %6, %3 : <8xptr<fp32>>
  %8 = constant {value=0.0} : fp32
  %9 = splat %8 : <8xfp32>
  %10 = load %7, mask=%5, other=%9 : <8xfp32>
  %11 = constant {value=1} : i32
  %12 = for %11, %n, %11, %10 : <8xfp32> {
    ^body(%13: i32, %14: <8xfp32>):
      %15 = add %14, %10 : <8xfp32>
      yield %15
  }
  %16 = reduce %12 {axis=0, kind='sum'} : fp32
  store %7, %12, mask=%5
}"""


def test_a_well_formed_function_verifies():
    fn = parse_function(_GOOD)
    verify(fn)
    load = fn.body.ops[10]
    assert load.operand("mask") is fn.body.ops[5].result and load.operand("other") is fn.body.ops[9].result
    assert load.attrs == {"cache_modifier": "", "eviction_policy": "", "volatile": False}  # defaults filled in


def _broken(mutate) -> str:
    fn = parse_function(_GOOD)
    mutate(fn)
    with pytest.raises(IRVerificationError) as info:
        verify(fn)
    return str(info.value)


def _op(fn, opcode, nth=0):
    return [op for op in fn.walk() if op.opcode == opcode][nth]


def test_unknown_opcode():
    def mutate(fn):
        _op(fn, "add").opcode = "frobnicate"
    assert "unknown opcode" in _broken(mutate)


def test_unknown_attribute():
    def mutate(fn):
        _op(fn, "load").attrs["masked"] = True
    assert "unknown attributes ['masked']" in _broken(mutate)


def test_missing_required_attribute():
    def mutate(fn):
        del _op(fn, "cmp").attrs["predicate"]
    assert "missing attribute 'predicate'" in _broken(mutate)


def test_attribute_outside_its_choices():
    def mutate(fn):
        _op(fn, "cmp").attrs["predicate"] = "lessthan"
    assert "not one of" in _broken(mutate)


def test_attribute_of_the_wrong_kind():
    def mutate(fn):
        _op(fn, "program_id").attrs["axis"] = "0"
    assert "not of kind int" in _broken(mutate)


def test_operand_in_the_wrong_slot():
    def mutate(fn):
        _op(fn, "load").operand_names = ("pointer", "other", "mask")
    assert "unexpected operands" in _broken(mutate)


def test_missing_required_operand():
    def mutate(fn):
        store = _op(fn, "store")
        store.operands, store.operand_names = store.operands[:1], ("pointer",)
    assert "missing operand 'value'" in _broken(mutate)


def test_wrong_result_type():
    def mutate(fn):
        _op(fn, "add").results[0].type = T.block_type(T.int64, (8,))
    assert "operand and result types differ" in _broken(mutate)


def test_load_result_must_be_the_pointee():
    def mutate(fn):
        _op(fn, "load").results[0].type = T.block_type(T.float16, (8,))
    assert "load through" in _broken(mutate)


def test_mask_shape_must_match():
    def mutate(fn):
        _op(fn, "cmp").results[0].type = T.block_type(T.int1, (4,))
    assert _broken(mutate)


def test_use_before_definition():
    def mutate(fn):
        ops = fn.body.ops
        ops.insert(0, ops.pop(3))  # the add, before the values it adds
    assert "before it is defined" in _broken(mutate)


def test_loop_body_must_yield_the_carried_types():
    def mutate(fn):
        body = _op(fn, "for").regions[0]
        body.ops[-1].operands = [body.args[0]]
    assert "yields" in _broken(mutate)


def test_terminator_only_at_the_end_of_a_region():
    def mutate(fn):
        body = _op(fn, "for").regions[0]
        body.ops.insert(0, Operation("yield", [body.args[1]], []))
    assert "terminator" in _broken(mutate)


def test_reduce_result_shape():
    def mutate(fn):
        _op(fn, "reduce").results[0].type = T.block_type(T.float32, (8,))
    assert "reducing" in _broken(mutate)


def test_wrong_argument_attribute_count():
    def mutate(fn):
        fn.arg_attrs = [{"divisibility": 16}]
    assert "argument attribute sets" in _broken(mutate)


def test_constant_out_of_its_type_range():
    fn = parse_function("func @k(%n: i32) {\n  %0 = constant {value=1000} : i8\n}")
    with pytest.raises(IRVerificationError, match="outside the range of int8"):
        verify(fn)
    verify(parse_function("func @k(%n: i32) {\n  %0 = constant {value=255} : u8\n  %1 = constant {value=-128} : i8\n}"))


def test_cat_needs_equal_other_dimensions():
    text = """func @k(%a: ptr<fp32>) {
  %0 = constant {value=0.0} : fp32
  %1 = splat %0 : <4x1xfp32>
  %2 = splat %0 : <4x4xfp32>
  %3 = cat %1, %2 {axis=0} : <8x1xfp32>
}"""
    with pytest.raises(IRVerificationError, match="other dimensions differ"):
        verify(parse_function(text))
