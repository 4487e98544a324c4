"""Block pointers and tensor descriptors reach the IR as tile ops; lower_tile_access rewrites them
into the pointer arithmetic and masks the interpreter runs."""
from __future__ import annotations

from ir_check import check

import tritium as triton
import tritium.language as tl
from tritium.compiler.frontend import generate_ir
from tritium.compiler.ir import types as T
from tritium.compiler.ir.parser import parse_function
from tritium.compiler.ir.printer import print_function
from tritium.compiler.ir.verifier import verify
from tritium.compiler.passes.lower_tile_access import lower_tile_access
from tritium.language.core import constexpr


@triton.jit
def _tile_copy(src, dst, M, N, stride, BM: tl.constexpr, BN: tl.constexpr, CHECK: tl.constexpr):
    pid = tl.program_id(0)
    if CHECK:
        p = tl.make_block_ptr(src, (M, N), (stride, 1), (pid * BM, 0), (BM, BN), (1, 0))
        tile = tl.load(p, boundary_check=(0, 1), padding_option="nan", cache_modifier=".cg")
    else:
        p = tl.make_block_ptr(src, (M, N), (stride, 1), (pid * BM, 0), (BM, BN), (1, 0))
        tile = tl.load(p)
    q = tl.make_block_ptr(dst, (M, N), (stride, 1), (pid * BM, 0), (BM, BN), (1, 0))
    tl.store(q, tile, boundary_check=(0,))


def _ir(check: bool):
    f32 = T.pointer_type(T.float32)
    specs = {"src": f32, "dst": f32, "M": T.int32, "N": T.int32, "stride": T.int32, "BM": constexpr(16),
             "BN": constexpr(32), "CHECK": constexpr(check)}
    fn, _ = generate_ir(_tile_copy, specs)
    verify(fn)
    return fn


def _ops(fn, opcode):
    return [op for op in fn.walk() if op.opcode == opcode]


def test_block_pointer_accesses_are_tile_ops_with_their_layout():
    fn = _ir(check=True)
    (load,) = _ops(fn, "tile_load")
    (store,) = _ops(fn, "tile_store")
    assert load.attrs["boundary_check"] == (0, 1) and load.attrs["padding"] == "nan"
    assert load.attrs["block_shape"] == (16, 32) and load.attrs["order"] == (1, 0)
    assert load.attrs["cache_modifier"] == ".cg" and load.attrs["source"] == "block_pointer"
    assert load.operand("base") is fn.args[0] and len(load.operands) == 1 + 3 * 2
    assert store.attrs["boundary_check"] == (0,) and store.operand("value") is load.result
    assert not _ops(fn, "load") and not _ops(fn, "addptr")  # no address arithmetic before lowering
    text = print_function(fn)
    assert print_function(parse_function(text)) == text


def test_lowering_gives_masked_accesses_for_checked_dimensions_only():
    fn = _ir(check=True)
    assert lower_tile_access(fn)
    verify(fn)
    assert not _ops(fn, "tile_load") and not _ops(fn, "tile_store")
    (load,) = _ops(fn, "load")
    (store,) = _ops(fn, "store")
    assert load.operand("mask") is not None and load.operand("other") is not None
    assert load.attrs["cache_modifier"] == ".cg"
    assert store.operand("mask") is not None


def test_unchecked_tile_loads_without_a_mask():
    fn = _ir(check=False)
    lower_tile_access(fn)
    (load,) = _ops(fn, "load")
    assert load.operand("mask") is None and load.operand("other") is None


@triton.jit
def _descriptor_copy(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    d = tl.make_tensor_descriptor(src, (M, N), (N, 1), (BM, BN))
    e = tl.make_tensor_descriptor(dst, (M, N), (N, 1), (BM, BN))
    e.store((0, 0), d.load((tl.program_id(0) * BM, 0)))


def test_descriptor_accesses_check_every_dimension():
    f32 = T.pointer_type(T.float32)
    fn, _ = generate_ir(_descriptor_copy, {"src": f32, "dst": f32, "M": T.int32, "N": T.int32,
                                           "BM": constexpr(8), "BN": constexpr(8)})
    (load,) = _ops(fn, "tile_load")
    assert load.attrs["source"] == "descriptor" and load.attrs["boundary_check"] == ()
    lower_tile_access(fn)
    verify(fn)
    (load,) = _ops(fn, "load")
    assert load.operand("mask") is not None  # both dimensions checked, though boundary_check is empty


_HAND_WRITTEN_TILE = """func @k(%src: ptr<fp32>, %m: i32, %n: i32, %stride: i32, %row: i32) {
  %0 = constant {value=1} : i32
  %1 = constant {value=0} : i32
  %2 = tile_load %src, %m, %n, %stride, %0, %row, %1 {block_shape=[4, 8], boundary_check=[0], padding='zero'} : <4x8xfp32>
  tile_store %src, %2, %m, %n, %stride, %0, %row, %1 {block_shape=[4, 8]}
}"""


def test_lowering_of_hand_written_tiles():
    """A checked row dimension becomes a range mask on the rows only; the unchecked store gets none;
    a stride of 1 and an offset of 0 cost no arithmetic."""
    fn = parse_function(_HAND_WRITTEN_TILE)
    verify(fn)
    lower_tile_access(fn)
    verify(fn)
    check(print_function(fn), """
    # CHECK: %[[ROWS:\\d+]] = arange {start=0, end=4} : <4xi32>
    # CHECK: %[[ROW:\\d+]] = splat %row : <4xi32>
    # CHECK: add %[[ROWS]], %[[ROW]]
    # CHECK: mul {{.*}} : <4x1xi64>
    # CHECK: cmp {{.*}}{predicate='ge'}
    # CHECK: cmp {{.*}}{predicate='lt'}
    # CHECK: arange {start=0, end=8} : <8xi32>
    # CHECK-NOT: mul
    # CHECK: addptr %{{\\d+}}, %{{\\d+}} : <4x8xptr<fp32>>
    # CHECK: load %{{\\d+}}, mask=%{{\\d+}}, other=%{{\\d+}} : <4x8xfp32>
    # CHECK-NOT: mask=
    # CHECK: store %{{\\d+}}, %{{\\d+}}
    # CHECK-NOT: mask=
    """)
