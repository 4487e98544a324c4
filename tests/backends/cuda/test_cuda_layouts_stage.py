"""The CUDA backend's encodings as the IR prints, parses and verifies them: the shared operand tile
``#cuda.nvmma<swizzle=W[, transposed]>`` and the warpgroup kinds ``#cuda.wgmma`` and
``#cuda.wgmma_operand`` of docs/tensor-cores.md ("Encodings").

Oracles: the encodings the design's tables write (tutorial 03's tiles, attention's operands) must
read back to the same text and pass the verifier; the verifier must refuse what the design's rules
exclude (a swizzle other than 128, 64 or 32 bytes; a contiguous dimension that is not a whole number
of swizzle spans; fewer than 8 rows; a block of rank 1; a warpgroup fragment whose fixed bits differ).
"""
from __future__ import annotations

import pytest

from tritium.compiler.ir.encodings import Distributed, SharedTile
from tritium.compiler.ir.parser import IRParseError, parse_function
from tritium.compiler.ir.printer import print_function
from tritium.compiler.ir.verifier import IRVerificationError, verify

# design tables: the accumulator of tutorial 03's tiles, and attention's P (the register A operand)
_WGMMA_128x256_8 = ("#cuda.wgmma<reg=[1:1, 0:8, 1:8, 1:16, 1:32, 1:64, 1:128], lane=[1:2, 1:4, 0:1, 0:2, 0:4], "
                    "warp=[0:16, 0:32, 0:64]>")
_WGMMA_128x128_4 = ("#cuda.wgmma<reg=[1:1, 0:8, 1:8, 1:16, 1:32, 1:64, 0:64], lane=[1:2, 1:4, 0:1, 0:2, 0:4], "
                    "warp=[0:16, 0:32]>")
_OPERAND_128x64_8 = ("#cuda.wgmma_operand<reg=[1:1, 0:8, 1:8, 1:16, 1:32], lane=[1:2, 1:4, 0:1, 0:2, 0:4], "
                     "warp=[0:16, 0:32, 0:64]>")

_TILES = f"""
func @k(%a_ptr: ptr<fp16>, %x: fp32) {{
  %0 = arange {{start=0, end=64}} : <64xi32>
  %1 = reshape %0 {{shape=[1, 64]}} : <1x64xi32>
  %2 = broadcast %1 : <128x64xi32>
  %3 = splat %a_ptr : <128x64xptr<fp16>>
  %4 = addptr %3, %2 : <128x64xptr<fp16>>
  %5 = load %4 : <128x64xfp16, #cuda.nvmma<swizzle=128>>
  %6 = permute %5 {{order=[1, 0]}} : <64x128xfp16, #cuda.nvmma<swizzle=128, transposed>>
  %7 = reshape %5 {{shape=[4, 32, 64]}} : <4x32x64xfp16, #cuda.nvmma<swizzle=128>>
  %8 = splat %x : <128x256xfp32, {_WGMMA_128x256_8}>
  %9 = splat %x : <128x128xfp32, {_WGMMA_128x128_4}>
  %10 = splat %x : <128x64xfp32>
  %11 = cast %10 {{to=fp16}} : <128x64xfp16, {_OPERAND_128x64_8}>
}}
"""


def _round_trip(text: str):
    fn = parse_function(text)
    verify(fn)
    assert print_function(fn).split() == text.split(), "the encodings read back to the same text"
    return fn


def test_shared_tiles_and_warpgroup_layouts_round_trip():
    fn = _round_trip(_TILES)
    encodings = [r.encoding for op in fn.walk() for r in op.results if r.encoding is not None]
    assert encodings[:3] == [SharedTile(128), SharedTile(128, transposed=True), SharedTile(128)]
    assert [e.kind for e in encodings[3:]] == ["wgmma", "wgmma", "wgmma_operand"]
    assert all(isinstance(e, Distributed) for e in encodings[3:])
    assert encodings[4].reg_bits[-1] == (0, 64), "two m64n128 along M on one warpgroup: a register bit along M"
    assert SharedTile(64).text() == "#cuda.nvmma<swizzle=64>"


@pytest.mark.parametrize("shape,dtype,swizzle,transposed", [
    ((128, 64), "fp16", 128, False),  # A of tutorial 03: BLOCK_K = 64
    ((128, 32), "fp16", 64, False),  # BLOCK_K = 32
    ((128, 16), "fp16", 32, False),  # BLOCK_K = 16
    ((64, 256), "fp16", 128, False),  # B of 64x256: four 128-byte column blocks
    ((64, 8), "fp16", 32, True),  # contiguous along dimension 0: 64 x 2 bytes, 8 rows the other way
    ((3, 128, 64), "fp16", 128, False),  # a ring of three slots
    ((64, 32), "fp32", 128, False),
    ((64, 128), "fp8e4nv", 128, False),
])
def test_the_tiles_the_design_names_verify(shape, dtype, swizzle, transposed):
    dims = "x".join(map(str, shape))
    encoding = f"#cuda.nvmma<swizzle={swizzle}{', transposed' if transposed else ''}>"
    _round_trip(f"""
func @k(%x: {dtype}) {{
  %0 = splat %x : <{dims}x{dtype}, {encoding}>
}}
""")


@pytest.mark.parametrize("typed,problem", [
    ("<128x64xfp16, #cuda.nvmma<swizzle=16>>", "swizzle is 128, 64 or 32 bytes, not 16"),
    ("<128x8xfp16, #cuda.nvmma<swizzle=32>>", r"contiguous dimension \(8 x 2 bytes\) is not a multiple"),
    ("<128x32xfp16, #cuda.nvmma<swizzle=128>>", r"contiguous dimension \(32 x 2 bytes\)"),
    ("<64x8xfp16, #cuda.nvmma<swizzle=32>>", "not a multiple of its swizzle"),
    ("<4x64xfp16, #cuda.nvmma<swizzle=128>>", r"other dimension \(4\) is not a multiple of 8 rows"),
    ("<16x4xfp16, #cuda.nvmma<swizzle=32, transposed>>", r"other dimension \(4\)"),
    ("<64xfp16, #cuda.nvmma<swizzle=128>>", "rank 2 or more"),
])
def test_the_verifier_refuses_tiles_outside_the_rules(typed, problem):
    fn = parse_function(f"""
func @k(%x: fp16) {{
  %0 = splat %x : {typed}
}}
""")
    with pytest.raises(IRVerificationError, match=problem):
        verify(fn)


def test_the_verifier_refuses_a_warpgroup_layout_whose_fixed_bits_differ():
    lanes_swapped = _TILES.replace("lane=[1:2, 1:4, 0:1, 0:2, 0:4], warp=[0:16, 0:32, 0:64]>>\n  %9",
                                   "lane=[0:1, 0:2, 0:4, 1:2, 1:4], warp=[0:16, 0:32, 0:64]>>\n  %9")
    with pytest.raises(IRVerificationError, match=r"wgmma layout's lane bits are \[1:2, 1:4, 0:1, 0:2, 0:4\]"):
        verify(parse_function(lanes_swapped))
    # warps along N first: a blocked-like fragment, not a warpgroup's
    warps_along_n = _TILES.replace(_OPERAND_128x64_8, _OPERAND_128x64_8.replace("warp=[0:16, 0:32, 0:64]",
                                                                                "warp=[1:32, 0:16, 0:32]")
                                   .replace("1:32], lane", "0:64], lane"))
    with pytest.raises(IRVerificationError, match="wgmma_operand layout's first two warp bits are"):
        verify(parse_function(warps_along_n))
    registers_moved = _TILES.replace("reg=[1:1, 0:8, 1:8, 1:16, 1:32, 1:64, 0:64]", "reg=[0:8, 1:1, 1:8, 1:16, 1:32, "
                                                                                      "1:64, 0:64]")
    with pytest.raises(IRVerificationError, match="first two register bits are"):
        verify(parse_function(registers_moved))
    # the same bits under another kind are an ordinary layout
    verify(parse_function(lanes_swapped.replace("#cuda.wgmma<", "#cuda.blocked<")))


def test_a_misspelled_tile_does_not_parse():
    for wrong in ("#cuda.nvmma", "#cuda.nvmma<swizzle=128, transpose>", "#cuda.nvmma<128>"):
        with pytest.raises(IRParseError, match="an nvmma tile is written"):
            parse_function(f"""
func @k(%x: fp16) {{
  %0 = splat %x : <64x64xfp16, {wrong}>
}}
""")


def test_the_pipelined_stage_of_a_matmul_round_trips():
    """The layouts stage of a pipelined K loop (async_copy, async_commit, async_wait, shared_slot)
    prints, parses back to the same text and verifies."""
    from test_cuda_ptx import _tutorial

    text = _tutorial(128, 128, 64, 4).asm["layouts"]
    assert "async_copy" in text and "shared_slot" in text
    _round_trip(text)


def test_a_wgmma_accumulator_prints_as_the_design_names_it():
    from test_cuda_ptx import _tutorial

    text = _tutorial(128, 128, 64, 4, wgmma=True).asm["layouts"]
    assert ("#cuda.wgmma<reg=[1:1, 0:8, 1:8, 1:16, 1:32, 1:64, 0:64], lane=[1:2, 1:4, 0:1, 0:2, 0:4], "
            "warp=[0:16, 0:32]>") in text
    _round_trip(text)
