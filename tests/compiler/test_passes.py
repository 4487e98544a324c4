"""CSE, LICM and canonicalization on hand-written IR, pinned with CHECK lines (tests/ir_check.py),
and the claim each makes checked against the interpreter: the IR after it computes the same bits.

Oracles: the CHECK lines state what each rewrite must leave (written from the IR spec, not from
the pass's output); the interpreter running the IR before and after a pass gives bit-identical
results. Constant folding is in test_passes_folding.py.
"""
from __future__ import annotations

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from ir_check import check
from pass_helpers import after, same_results
from tritium.compiler.ir.parser import parse_function
from tritium.compiler.ir.printer import print_function
from tritium.compiler.passes import (canonicalize, eliminate_common_subexpressions, eliminate_dead_code,
                                     hoist_loop_invariants)


# the checker itself ----------------------------------------------------------------------------------
def test_the_checker_fails_on_order_next_and_not():
    text = "a = 1\nb = 2\nc = 3"
    check(text, "# CHECK: a = 1\n# CHECK-NEXT: b\n# CHECK-NOT: x\n# CHECK: c")
    check(text, "# CHECK: [[V:\\w]] = 1\n# CHECK: c = {{\\d}}")
    for wrong in ("# CHECK: c\n# CHECK: a", "# CHECK: a\n# CHECK-NEXT: c", "# CHECK: a\n# CHECK-NOT: b\n# CHECK: c",
                  "# CHECK: [[V:\\w]] = 1\n# CHECK: [[V]] = 2"):
        with pytest.raises(AssertionError):
            check(text, wrong)


# CSE ----------------------------------------------------------------------------------------------------
_REPEATS = """
func @k(%out: ptr<i32>, %n: i32) {
  %0 = arange {start=0, end=8} : <8xi32>
  %1 = arange {start=0, end=8} : <8xi32>
  %2 = arange {start=0, end=16} : <16xi32>
  %3 = splat %n : <8xi32>
  %4 = splat %n : <8xi32>
  %5 = add %0, %3 : <8xi32>
  %6 = add %4, %1 : <8xi32>
  %7 = cmp %5, %6 {predicate='lt'} : <8xi1>
  %8 = cmp %5, %6 {predicate='le'} : <8xi1>
  %9 = splat %out : <8xptr<i32>>
  %10 = addptr %9, %0 : <8xptr<i32>>
  store %10, %5, mask=%7
  store %10, %6, mask=%8
}
"""


def test_cse_merges_equal_pure_ops_and_keeps_different_attributes():
    check(after(_REPEATS, eliminate_common_subexpressions, eliminate_dead_code), """
    # CHECK: %[[A:\\d+]] = arange {start=0, end=8}
    # CHECK-NOT: arange {start=0, end=8}
    # CHECK: %[[S:\\d+]] = splat %n
    # CHECK-NOT: splat %n
    # CHECK: %[[X:\\d+]] = add %[[A]], %[[S]]
    # CHECK-NOT: add
    # CHECK: cmp %[[X]], %[[X]] {predicate='lt'}
    # CHECK-NEXT: cmp %[[X]], %[[X]] {predicate='le'}
    # CHECK: store {{%\\d+}}, %[[X]]
    # CHECK-NEXT: store {{%\\d+}}, %[[X]]
    """)


def test_cse_keeps_float_operand_order_signed_zeros_apart_and_loads():
    text = """
func @k(%x_ptr: ptr<fp32>) {
  %0 = constant {value=0.0} : fp32
  %1 = constant {value=-0.0} : fp32
  %2 = constant {value=nan} : fp32
  %3 = constant {value=nan} : fp32
  %4 = load %x_ptr : fp32
  %5 = load %x_ptr : fp32
  %6 = add %4, %0 : fp32
  %7 = add %0, %4 : fp32
  %8 = add %6, %7 : fp32
  %9 = add %8, %1 : fp32
  %10 = add %9, %2 : fp32
  %11 = add %10, %3 : fp32
  %12 = add %11, %5 : fp32
  store %x_ptr, %12
}
"""
    check(after(text, eliminate_common_subexpressions), """
    # CHECK: constant {value=0.0}
    # CHECK-NEXT: constant {value=-0.0}
    # CHECK-NEXT: %[[NAN:\\d+]] = constant {value=nan}
    # CHECK-NEXT: load
    # CHECK-NEXT: load
    # CHECK: add %[[NAN2:\\d+]], %[[NAN]]
    # CHECK: add {{%\\d+}}, %[[NAN]]
    """)
    out = after(text, eliminate_common_subexpressions)
    assert out.count("= load") == 2 and out.count("= add") == 7  # a+0 and 0+a stay two floats adds


_SCOPES = """
func @k(%out: ptr<i32>, %n: i32) {
  %0 = constant {value=0} : i32
  %1 = cmp %n, %0 {predicate='gt'} : i1
  %2 = mul %n, %n : i32
  %3 = if %1 : i32 {
  ^then():
    %4 = mul %n, %n : i32
    %5 = add %n, %4 : i32
    yield %5
  } {
  ^else():
    %6 = add %n, %2 : i32
    yield %6
  }
  %7 = add %n, %2 : i32
  %8 = add %7, %3 : i32
  store %out, %8
}
"""


def test_cse_lets_an_enclosing_value_replace_a_nested_one_but_not_the_reverse():
    check(after(_SCOPES, eliminate_common_subexpressions), """
    # CHECK: %[[M:\\d+]] = mul %n, %n
    # CHECK: ^then():
    # CHECK-NOT: mul
    # CHECK: add %n, %[[M]]
    # CHECK: ^else():
    # CHECK: add %n, %[[M]]
    # CHECK: }
    # CHECK: %[[A:\\d+]] = add %n, %[[M]]
    # CHECK: add %[[A]],
    """)


def test_cse_of_commutative_integer_operands_and_its_results_hold():
    text = """
func @k(%x_ptr: ptr<i32>, %out: ptr<i32>) {
  %0 = arange {start=0, end=8} : <8xi32>
  %1 = splat %x_ptr : <8xptr<i32>>
  %2 = addptr %1, %0 : <8xptr<i32>>
  %3 = load %2 : <8xi32>
  %4 = arange {start=0, end=8} : <8xi32>
  %5 = mul %3, %4 : <8xi32>
  %6 = mul %4, %3 : <8xi32>
  %7 = sub %5, %6 : <8xi32>
  %8 = splat %out : <8xptr<i32>>
  %9 = addptr %8, %0 : <8xptr<i32>>
  store %9, %7
}
"""
    values = np.array([3, -7, 2**31 - 1, -2**31, 0, 5, 11, 13], dtype=np.int32)
    fn = same_results(text, [eliminate_common_subexpressions, eliminate_dead_code],
                       [values, np.zeros(8, np.int32)])
    check(print_function(fn), "# CHECK: %[[P:\\d+]] = mul\n# CHECK-NOT: mul\n# CHECK: sub %[[P]], %[[P]]")


# LICM ---------------------------------------------------------------------------------------------------
_LOOP = """
func @k(%x_ptr: ptr<fp32>, %n: i32, %stride: i32, %out: ptr<fp32>) {
  %0 = constant {value=0} : i32
  %1 = constant {value=1} : i32
  %2 = constant {value=0.0} : fp32
  %3 = splat %2 : <8xfp32>
  %4 = for %0, %n, %1, %3 : <8xfp32> {
  ^body(%i: i32, %acc: <8xfp32>):
    %5 = arange {start=0, end=8} : <8xi32>
    %6 = splat %x_ptr : <8xptr<fp32>>
    %7 = addptr %6, %5 : <8xptr<fp32>>
    %8 = splat %stride : <8xi32>
    %9 = mul %5, %8 : <8xi32>
    %10 = addptr %7, %9 : <8xptr<fp32>>
    %11 = splat %i : <8xi32>
    %12 = addptr %10, %11 : <8xptr<fp32>>
    %13 = load %12 : <8xfp32>
    %14 = load %x_ptr : fp32
    %15 = splat %14 : <8xfp32>
    %16 = gather %13, %5 {axis=0} : <8xfp32>
    %17 = hint %5 {kind='multiple_of', values=[8]} : <8xi32>
    %18 = add %acc, %16 : <8xfp32>
    %19 = add %18, %15 : <8xfp32>
    yield %19
  }
  %20 = arange {start=0, end=8} : <8xi32>
  %21 = splat %out : <8xptr<fp32>>
  %22 = addptr %21, %20 : <8xptr<fp32>>
  store %22, %4
}
"""


def test_licm_hoists_invariant_address_arithmetic_in_order():
    check(after(_LOOP, hoist_loop_invariants), """
    # CHECK: %[[R:\\d+]] = arange {start=0, end=8}
    # CHECK-NEXT: %[[P:\\d+]] = splat %x_ptr
    # CHECK-NEXT: addptr %[[P]], %[[R]]
    # CHECK-NEXT: splat %stride
    # CHECK-NEXT: = for
    # CHECK-NEXT: ^body(%[[I:\\d+]]: i32
    # CHECK-NEXT: mul
    # CHECK-NEXT: addptr
    # CHECK-NEXT: splat %[[I]]
    # CHECK-NEXT: addptr
    # CHECK-NEXT: load
    # CHECK-NEXT: load %x_ptr
    # CHECK-NEXT: splat
    # CHECK-NEXT: gather
    # CHECK-NEXT: hint
    """)


def test_licm_leaves_ops_that_may_raise_or_report_even_when_invariant():
    text = """
func @k(%out: ptr<i32>, %n: i32) {
  %0 = constant {value=0} : i32
  %1 = constant {value=1} : i32
  %2 = arange {start=0, end=8} : <8xi32>
  %3 = splat %n : <8xi32>
  %4 = for %0, %n, %1, %2 : <8xi32> {
  ^body(%i: i32, %acc: <8xi32>):
    %5 = gather %2, %3 {axis=0} : <8xi32>
    %6 = hint %3 {kind='max_constancy', values=[8]} : <8xi32>
    %7 = add %acc, %5 : <8xi32>
    %8 = add %7, %6 : <8xi32>
    yield %8
  }
  %9 = splat %out : <8xptr<i32>>
  %10 = addptr %9, %2 : <8xptr<i32>>
  store %10, %4
}
"""
    check(after(text, hoist_loop_invariants), """
    # CHECK: = for
    # CHECK-NEXT: ^body
    # CHECK-NEXT: gather
    # CHECK-NEXT: hint
    """)


def test_licm_keeps_results_on_the_interpreter():
    x = np.arange(64, dtype=np.float32) * 0.5
    fn = same_results(_LOOP, [hoist_loop_invariants, eliminate_dead_code],
                       [x, np.int32(3), np.int32(2), np.zeros(8, np.float32)])
    assert fn.body.ops[-1].opcode == "store"


def test_licm_moves_debug_checked_ops_only_out_of_loops_that_surely_run():
    text = """
func @k(%out: ptr<i32>, %n: i32, %d: i32) {
  %0 = constant {value=0} : i32
  %1 = constant {value=1} : i32
  %2 = constant {value=4} : i32
  %3 = for %0, %n, %1, %0 : i32 {
  ^body(%i: i32, %s: i32):
    %4 = floordiv %n, %d : i32
    %5 = add %s, %4 : i32
    yield %5
  }
  %6 = for %0, %2, %1, %3 : i32 {
  ^body(%j: i32, %t: i32):
    %7 = mul %n, %d : i32
    %8 = add %t, %7 : i32
    yield %8
  }
  store %out, %6
}
"""
    check(after(text, hoist_loop_invariants), """
    # CHECK: = for %0, %n
    # CHECK-NEXT: ^body
    # CHECK-NEXT: floordiv %n, %d
    # CHECK: mul %n, %d
    # CHECK-NEXT: = for
    # CHECK-NEXT: ^body
    # CHECK-NEXT: add
    """)


def test_licm_leaves_ops_in_an_if_and_takes_chains_out_of_nested_loops():
    text = """
func @k(%out: ptr<i32>, %n: i32, %c: i1) {
  %0 = constant {value=0} : i32
  %1 = constant {value=1} : i32
  %2 = for %0, %n, %1, %0 : i32 {
  ^body(%i: i32, %s: i32):
    %3 = for %0, %n, %1, %s : i32 {
    ^body(%j: i32, %t: i32):
      %4 = xor %n, %1 : i32
      %5 = xor %4, %i : i32
      %6 = if %c : i32 {
      ^then():
        %7 = shl %n, %1 : i32
        yield %7
      } {
      ^else():
        yield %5
      }
      %8 = add %t, %6 : i32
      yield %8
    }
    yield %3
  }
  store %out, %2
}
"""
    check(after(text, hoist_loop_invariants), """
    # CHECK: xor %n, %1
    # CHECK-NEXT: = for
    # CHECK-NEXT: ^body(%[[I:\\d+]]: i32
    # CHECK-NEXT: xor {{%\\d+}}, %[[I]]
    # CHECK-NEXT: = for
    # CHECK: ^then():
    # CHECK-NEXT: shl %n, %1
    """)


def test_licm_while_before_region_runs_once_so_checked_ops_leave_it():
    text = """
func @k(%out: ptr<i32>, %n: i32, %d: i32) {
  %0 = constant {value=0} : i32
  %1 = while %0 : i32 {
  ^before(%k: i32):
    %2 = floordiv %n, %d : i32
    %3 = cmp %k, %2 {predicate='lt'} : i1
    condition %3, %k
  } {
  ^after(%m: i32):
    %4 = mod %n, %d : i32
    %5 = and %n, %d : i32
    %6 = add %m, %4 : i32
    %7 = add %6, %5 : i32
    yield %7
  }
  store %out, %1
}
"""
    check(after(text, hoist_loop_invariants), """
    # CHECK: floordiv %n, %d
    # CHECK-NEXT: and %n, %d
    # CHECK-NEXT: = while
    # CHECK: ^after
    # CHECK-NEXT: mod %n, %d
    """)


@triton.jit
def _invariant_addresses(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(n):
        offsets = tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offsets + i)
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


def test_a_kernel_shows_its_loop_invariant_address_arithmetic_hoisted():
    text = _invariant_addresses.ir("*fp32,*fp32,i32", BLOCK=16)
    check(text, """
    # CHECK: arange {start=0, end=16}
    # CHECK-NOT: = for
    # CHECK: splat %x_ptr
    # CHECK-NOT: = for
    # CHECK: addptr
    # CHECK: = for
    # CHECK-NOT: arange
    # CHECK: load
    """)
    x = np.arange(40, dtype=np.float32)
    out = np.zeros(16, np.float32)
    _invariant_addresses[(1,)](x, out, 5, BLOCK=16)
    expected = sum(x[i:i + 16] for i in range(5))
    assert np.array_equal(out, expected)


@triton.jit
def _three_aranges(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    again = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), x * 2.0, mask=again < n)


def test_a_kernel_calling_arange_three_times_prints_one():
    text = _three_aranges.ir("*fp32,*fp32,i32", BLOCK=32)
    assert text.count("= arange") == 1, text
    assert text.count("= splat %n") == 1, text
    x = np.arange(70, dtype=np.float32)
    out = np.zeros(70, np.float32)
    _three_aranges[(3,)](x, out, 70, BLOCK=32)
    assert np.array_equal(out, x * 2)


# canonicalize -------------------------------------------------------------------------------------------
def _binary_rule_ir(dtype: str, lines: list[str]) -> str:
    body = "\n".join(f"  {line}" for line in lines)
    return f"""
func @k(%x: {dtype}, %out: ptr<{dtype}>) {{
{body}
  store %out, %r
}}
"""


@pytest.mark.parametrize("lines,expected", [
    (["%c = constant {value=0} : i32", "%r = add %x, %c : i32"], "store %out, %x"),
    (["%c = constant {value=0} : i32", "%r = add %c, %x : i32"], "store %out, %x"),
    (["%c = constant {value=0} : i32", "%r = sub %x, %c : i32"], "store %out, %x"),
    (["%c = constant {value=1} : i32", "%r = mul %c, %x : i32"], "store %out, %x"),
    (["%c = constant {value=0} : i32", "%r = mul %x, %c : i32"], "store %out, %0"),
    (["%c = constant {value=1} : i32", "%r = floordiv %x, %c : i32"], "store %out, %x"),
    (["%c = constant {value=-1} : i32", "%r = and %x, %c : i32"], "store %out, %x"),
    (["%c = constant {value=0} : i32", "%r = and %c, %x : i32"], "store %out, %0"),
    (["%c = constant {value=0} : i32", "%r = or %x, %c : i32"], "store %out, %x"),
    (["%c = constant {value=-1} : i32", "%r = or %x, %c : i32"], "store %out, %0"),
    (["%c = constant {value=0} : i32", "%r = xor %c, %x : i32"], "store %out, %x"),
    (["%c = constant {value=0} : i32", "%r = shl %x, %c : i32"], "store %out, %x"),
    (["%c = constant {value=0} : i32", "%r = shr %x, %c : i32"], "store %out, %x"),
    (["%a = not %x : i32", "%r = not %a : i32"], "store %out, %x"),
    (["%a = neg %x : i32", "%r = neg %a : i32"], "neg %0"),  # debug mode checks neg INT_MIN: it stays
    (["%r = cast %x {to=i32} : i32"], "store %out, %x"),
    (["%c = constant {value=2} : i32", "%r = mul %x, %c : i32"], "mul %x"),  # no rule applies
    (["%c = constant {value=0} : i32", "%r = sub %c, %x : i32"], "sub"),
])
def test_integer_identities(lines, expected):
    check(after(_binary_rule_ir("i32", lines), canonicalize, eliminate_dead_code), f"# CHECK: {expected}")


def test_double_negation_of_wider_integers_goes():
    text = _binary_rule_ir("i64", ["%a = neg %x : i64", "%r = neg %a : i64"])
    check(after(text, canonicalize, eliminate_dead_code), "# CHECK: store %out, %x")


def test_unsigned_and_bool_all_ones():
    text = _binary_rule_ir("u8", ["%c = constant {value=255} : u8", "%r = and %x, %c : u8"])
    check(after(text, canonicalize), "# CHECK: store %out, %x")
    text = _binary_rule_ir("u8", ["%c = constant {value=-1} : i8", "%d = bitcast %c : u8", "%r = and %x, %d : u8"])
    check(after(text, canonicalize), "# CHECK: and %x")  # a bitcast is no constant: nothing to see
    text = _binary_rule_ir("i1", ["%c = constant {value=True} : i1", "%r = and %x, %c : i1"])
    check(after(text, canonicalize), "# CHECK: store %out, %x")
    text = _binary_rule_ir("i1", ["%c = constant {value=True} : i1", "%r = mul %c, %x : i1"])
    check(after(text, canonicalize), "# CHECK: store %out, %x")


@pytest.mark.parametrize("lines,expected", [
    (["%c = constant {value=1.0} : fp32", "%r = mul %x, %c : fp32"], "store %out, %x"),
    (["%c = constant {value=1.0} : fp32", "%r = mul %c, %x : fp32"], "store %out, %x"),
    (["%c = constant {value=-0.0} : fp32", "%r = add %x, %c : fp32"], "store %out, %x"),
    (["%c = constant {value=-0.0} : fp32", "%r = add %c, %x : fp32"], "store %out, %x"),
    (["%c = constant {value=0.0} : fp32", "%r = sub %x, %c : fp32"], "store %out, %x"),
    (["%c = constant {value=1.0} : fp32", "%r = div %x, %c : fp32"], "store %out, %x"),
    (["%c = constant {value=0.0} : fp32", "%r = add %x, %c : fp32"], "add %x"),  # -0.0 + 0.0 == +0.0
    (["%c = constant {value=-0.0} : fp32", "%r = sub %x, %c : fp32"], "sub %x"),
    (["%c = constant {value=0.0} : fp32", "%r = mul %x, %c : fp32"], "mul %x"),  # nan * 0, -1 * 0
    (["%c = constant {value=1.0} : fp32", "%r = div %x, %c {rounding='full'} : fp32"], "div %x"),
    (["%a = neg %x : fp32", "%r = neg %a : fp32"], "store %out, %x"),
])
def test_float_identities_hold_bit_for_bit(lines, expected):
    check(after(_binary_rule_ir("fp32", lines), canonicalize, eliminate_dead_code), f"# CHECK: {expected}")


def test_float_identities_on_the_interpreter():
    """Every float rule, on signed zeros, infinities and NaNs with payloads: the same bits."""
    text = """
func @k(%x_ptr: ptr<fp32>, %out: ptr<fp32>) {
  %0 = arange {start=0, end=16} : <16xi32>
  %1 = splat %x_ptr : <16xptr<fp32>>
  %2 = addptr %1, %0 : <16xptr<fp32>>
  %x = load %2 : <16xfp32>
  %one = constant {value=1.0} : fp32
  %ones = splat %one : <16xfp32>
  %nz = constant {value=-0.0} : fp32
  %nzs = splat %nz : <16xfp32>
  %z = constant {value=0.0} : fp32
  %zs = splat %z : <16xfp32>
  %a = mul %x, %ones : <16xfp32>
  %b = add %nzs, %a : <16xfp32>
  %c = sub %b, %zs : <16xfp32>
  %d = div %c, %ones : <16xfp32>
  %e = neg %d : <16xfp32>
  %f = neg %e : <16xfp32>
  %g = add %f, %zs : <16xfp32>
  %3 = splat %out : <16xptr<fp32>>
  %4 = addptr %3, %0 : <16xptr<fp32>>
  store %4, %g
}
"""
    bits = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7FC12345,
                     0x00000001, 0x80000001, 0x3F800000, 0xBF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x00800000,
                     0x80800000, 0x40490FDB], dtype=np.uint32)
    fn = same_results(text, [canonicalize, eliminate_dead_code], [bits.view(np.float32), np.zeros(16, np.float32)])
    check(print_function(fn), """
    # CHECK: %[[X:\\d+]] = load
    # CHECK-NOT: mul
    # CHECK: add %[[X]], {{%\\d+}}
    # CHECK-NOT: neg
    # CHECK-NOT: div
    # CHECK: store
    """)


def test_integer_identities_on_the_interpreter():
    text = """
func @k(%x_ptr: ptr<i8>, %out: ptr<i8>) {
  %0 = arange {start=0, end=8} : <8xi32>
  %1 = splat %x_ptr : <8xptr<i8>>
  %2 = addptr %1, %0 : <8xptr<i8>>
  %x = load %2 : <8xi8>
  %c0 = constant {value=0} : i8
  %z = splat %c0 : <8xi8>
  %c1 = constant {value=1} : i8
  %o = splat %c1 : <8xi8>
  %cm = constant {value=-1} : i8
  %m = splat %cm : <8xi8>
  %a = add %x, %z : <8xi8>
  %b = mul %o, %a : <8xi8>
  %c = floordiv %b, %o : <8xi8>
  %d = and %c, %m : <8xi8>
  %e = or %d, %z : <8xi8>
  %f = xor %z, %e : <8xi8>
  %g = shl %f, %z : <8xi8>
  %h = mul %g, %z : <8xi8>
  %i = or %g, %m : <8xi8>
  %j = add %h, %i : <8xi8>
  %k = add %j, %g : <8xi8>
  %3 = splat %out : <8xptr<i8>>
  %4 = addptr %3, %0 : <8xptr<i8>>
  store %4, %k
}
"""
    values = np.array([0, 1, -1, 127, -128, 5, -77, 64], dtype=np.int8)
    fn = same_results(text, [canonicalize, eliminate_dead_code], [values, np.zeros(8, np.int8)])
    assert not any(op.opcode in ("mul", "floordiv", "and", "or", "xor", "shl") for op in fn.walk())


_SHAPES = """
func @k(%x: i32, %v_ptr: ptr<i32>, %out: ptr<i32>) {
  %0 = splat %x : <1x8xi32>
  %1 = broadcast %0 : <4x8xi32>
  %2 = arange {start=0, end=8} : <8xi32>
  %3 = reshape %2 {shape=[1, 8]} : <1x8xi32>
  %4 = reshape %3 {shape=[8]} : <8xi32>
  %5 = reshape %4 {shape=[2, 4]} : <2x4xi32>
  %6 = reshape %5 {shape=[8]} : <8xi32>
  %7 = broadcast %6 : <8xi32>
  %8 = constant {value=True} : i1
  %9 = splat %8 : <8xi1>
  %10 = splat %x : <8xi32>
  %11 = select %9, %7, %10 : <8xi32>
  %12 = constant {value=False} : i1
  %no = splat %12 : <8xi1>
  %13 = select %no, %11, %10 : <8xi32>
  %14 = select %no, %11, %11 : <8xi32>
  %15 = permute %1 {order=[0, 1]} : <4x8xi32>
  %16 = constant {value=0} : i32
  %17 = splat %16 : <8xi32>
  %18 = splat %out : <8xptr<i32>>
  %19 = addptr %18, %17 : <8xptr<i32>>
  %20 = add %13, %14 : <8xi32>
  store %19, %20
}
"""


def test_shape_and_select_rules():
    out = after(_SHAPES, canonicalize, eliminate_dead_code)
    check(out, """
    # CHECK: %[[A:\\d+]] = arange
    # CHECK-NEXT: %[[S:\\d+]] = splat %x : <8xi32>
    # CHECK-NEXT: %[[P:\\d+]] = splat %out
    # CHECK-NEXT: add %[[S]], %[[A]]
    # CHECK-NEXT: store %[[P]],
    """)
    kept = parse_function(_SHAPES)
    canonicalize(kept)
    arange = next(op for op in kept.walk() if op.opcode == "arange")
    reshapes = [op for op in kept.walk() if op.opcode == "reshape"]
    # 8 -> 1x8 -> 8 -> 2x4 -> 8: the two that give back the arange's type are gone, and the others
    # (dead now) read the arange itself
    assert len(reshapes) == 2 and all(op.operands[0] is arange.result for op in reshapes)
    broadcast_of_splat = next(op for op in kept.walk() if op.results and op.results[0].type.shape == (4, 8))
    assert broadcast_of_splat.opcode == "splat" and broadcast_of_splat.operands[0] is kept.args[0]
