"""The CPU backend's placement stage (backends/cpu/placement.py) on hand-written IR, pinned with CHECK
lines; its encodings printed, parsed back and verified like the rest of the IR; and the stage as
``tritium ir --stage layouts`` shows it.

Oracles: the CHECK lines state the placement docs/cpu-backend.md describes (written from that rule,
not from the stage's output); the round trip must give the same text; the verifier must refuse an
encoding that does not fit its value.
"""
from __future__ import annotations

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from ir_check import check
from tritium.backends.cpu import codegen, placement
from tritium.compiler.ir.encodings import Distributed, Placement
from tritium.compiler.ir.parser import IRParseError, parse_function
from tritium.compiler.ir.printer import print_function
from tritium.compiler.ir.verifier import IRVerificationError, verify

_KERNEL = """
func @k(%x_ptr: ptr<fp32>, %w_ptr: ptr<fp32>, %y_ptr: ptr<fp32>, %z_ptr: ptr<fp32>) {
  %0 = arange {start=0, end=64} : <64xi32>
  %1 = splat %x_ptr : <64xptr<fp32>>
  %2 = addptr %1, %0 : <64xptr<fp32>>
  %3 = load %2 : <64xfp32>
  %4 = splat %w_ptr : <64xptr<fp32>>
  %5 = addptr %4, %0 : <64xptr<fp32>>
  %6 = load %5 : <64xfp32>
  %7 = mul %6, %6 : <64xfp32>
  %8 = exp %3 : <64xfp32>
  %9 = add %8, %8 : <64xfp32>
  %10 = splat %y_ptr : <64xptr<fp32>>
  %11 = addptr %10, %0 : <64xptr<fp32>>
  store %11, %7
  %12 = splat %z_ptr : <64xptr<fp32>>
  %13 = addptr %12, %0 : <64xptr<fp32>>
  store %13, %9
  store %13, %8
}
"""


def _placed(text: str) -> str:
    fn = parse_function(text)
    placement.place(fn, codegen.Codegen.rules)
    verify(fn)
    return print_function(fn)


def test_index_arithmetic_is_lazy_a_value_read_twice_is_a_buffer_and_a_store_reads_its_own_load():
    check(_placed(_KERNEL), """
    # CHECK: arange {start=0, end=64} : <64xi32, #cpu.lazy>
    # CHECK: addptr %1, %0 : <64xptr<fp32>, #cpu.lazy>
    # CHECK: load %2 : <64xfp32, #cpu.buffer>
    # CHECK: load %5 : <64xfp32, #cpu.read_in_store>
    # CHECK-NEXT: mul %6, %6 : <64xfp32, #cpu.in_store>
    # CHECK-NEXT: exp %3 : <64xfp32, #cpu.buffer>
    # CHECK-NEXT: add %8, %8 : <64xfp32, #cpu.in_store>
    """)


_DOT = """
func @k(%a_ptr: ptr<fp16>, %c_ptr: ptr<fp32>) {
  %0 = arange {start=0, end=16} : <16xi32>
  %1 = reshape %0 {shape=[16, 1]} : <16x1xi32>
  %2 = broadcast %1 : <16x16xi32>
  %3 = splat %a_ptr : <16x16xptr<fp16>>
  %4 = addptr %3, %2 : <16x16xptr<fp16>>
  %5 = load %4 : <16x16xfp16>
  %6 = load %4 : <16x16xfp16>
  %7 = constant {value=0.0} : fp32
  %11 = splat %7 : <16x16xfp32>
  %8 = dot %5, %6, %11 : <16x16xfp32>
  %9 = splat %c_ptr : <16x16xptr<fp32>>
  %10 = addptr %9, %2 : <16x16xptr<fp32>>
  store %10, %8
}
"""


def test_a_load_only_a_dot_reads_is_held_in_the_dots_form():
    check(_placed(_DOT), """
    # CHECK: load %4 : <16x16xfp16, #cpu.packed<fp32>>
    # CHECK-NEXT: load %4 : <16x16xfp16, #cpu.packed<fp32>>
    # CHECK: dot %5, %6, %8 : <16x16xfp32, #cpu.buffer>
    """)


def test_placed_ir_round_trips_and_the_verifier_checks_encodings():
    text = _placed(_KERNEL)
    assert print_function(parse_function(text)) == text
    with pytest.raises(IRVerificationError, match="places loads only"):
        verify(parse_function(text.replace("mul %6, %6 : <64xfp32, #cpu.in_store>",
                                           "mul %6, %6 : <64xfp32, #cpu.read_in_store>")))
    with pytest.raises(IRVerificationError, match="unknown CPU placement 'somewhere'"):
        verify(parse_function(text.replace("#cpu.in_store", "#cpu.somewhere")))
    with pytest.raises(IRParseError, match="not an encoding"):
        parse_function(text.replace("#cpu.in_store", "#gpu.in_store"))


def test_a_gpu_layout_round_trips_and_must_cover_its_block():
    text = """
func @k(%x_ptr: ptr<fp32>) {
  %0 = arange {start=0, end=64} : <64xi32, #cuda.blocked<reg=[0:1], lane=[0:2, 0:4, 0:8, 0:16, 0:32], warp=[_]>>
}
"""
    fn = parse_function(text)
    verify(fn)
    layout = fn.body.ops[0].results[0].encoding
    assert isinstance(layout, Distributed) and layout.lane_bits[4] == (0, 32) and layout.warp_bits == (None,)
    assert print_function(fn).splitlines()[1].split("  #")[0].rstrip() == text.splitlines()[2]
    with pytest.raises(IRVerificationError, match="does not reach every element along dimension 0"):
        verify(parse_function(text.replace("0:32]", "_]")))
    with pytest.raises(IRVerificationError, match="two bits of the layout add 16"):
        verify(parse_function(text.replace("0:32]", "0:16]")))


@triton.jit
def _scaled_sum(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < n, other=0.0)
    tl.store(y_ptr + i, x * tl.sum(x, 0), mask=i < n)


def test_the_layouts_stage_shows_the_placement_and_the_kernel_runs_by_it(monkeypatch):
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    x = np.arange(50, dtype=np.float32)
    y = np.zeros(50, np.float32)
    kernel = _scaled_sum[(1,)](x, y, 50, BLOCK=64)
    np.testing.assert_array_equal(y, x * np.float32(x.sum()))
    layouts = kernel.asm["layouts"]
    check(layouts, """
    # CHECK: load {{.*}} : <64xfp32, #cpu.buffer>
    # CHECK: reduce
    # CHECK: mul {{.*}} : <64xfp32, #cpu.in_store>
    """)
    assert "#cpu" not in kernel.asm["ttir"], "the tile IR itself carries no placement"
    assert print_function(parse_function(layouts)) == layouts
    assert Placement("buffer").text() == "#cpu.buffer"
