"""The "layouts" stage of both compiled backends on a tiled matmul of the shape of Triton's tutorial 03
(a K loop with masked tails, an fp32 accumulator carried through the loop, a dot of fp16 tiles): the
encodings printed, verified, and read back to the same text; and the CUDA backend's layouts pass
(backends/cuda/assign.py), which decides the layouts of the values the dot touches before the code
generator runs.

Oracles: the encodings the docs state for each kind of value (a CPU dot operand loaded for the dot
alone is packed in fp32; the accumulator carried through the loop is a buffer; on the GPU the dot's
result is in the tensor cores' layout); the parser and the verifier, which must accept what the
stage prints and print it the same; for the pass, the values docs/tensor-cores.md says it places
(the dot's result, its loaded operands, the accumulator the loop carries) and no other, each with
the layout the code generator gives it in the stage, and a code generator that follows a placement
it is given and refuses one it cannot keep.
"""
from __future__ import annotations

import re

import pytest

import tritium as triton
import tritium.language as tl
from tritium.compiler.ir.encodings import Distributed, Placement
from tritium.compiler.ir.parser import parse_function
from tritium.compiler.ir.printer import print_function
from tritium.compiler.ir.verifier import verify


@triton.jit
def _matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=ks[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=ks[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(tl.float16)
    out_rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    out_cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + out_rows[:, None] * stride_cm + out_cols[None, :] * stride_cn, c,
             mask=(out_rows[:, None] < M) & (out_cols[None, :] < N))


_SIGNATURE = "*fp16:16,*fp16:16,*fp16:16,i32,i32,i32,i32:16,i32:1,i32:16,i32:1,i32:16,i32:1"
_TILES = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}


def _layouts(monkeypatch, backend: str) -> str:
    monkeypatch.setenv("TRITIUM_BACKEND", backend)
    return _matmul.stages(_SIGNATURE, **_TILES)["layouts"]


def _encodings(text: str) -> dict:
    """opcode -> the encodings of its results, read back from ``text``."""
    fn = parse_function(text)
    verify(fn)
    assert print_function(fn) == text, "the printed layouts read back to the same text"
    found: dict = {}
    for op in fn.walk():
        found.setdefault(op.opcode, []).extend(r.encoding for r in op.results if r.encoding is not None)
        for region in op.regions:
            found.setdefault("region argument", []).extend(a.encoding for a in region.args if a.encoding is not None)
    return found


def test_the_cpu_layouts_of_a_matmul(monkeypatch):
    found = _encodings(_layouts(monkeypatch, "cpu"))
    assert found["load"] == [Placement("packed", "fp32")] * 2, "dot operands loaded in the dot's form"
    assert Placement("buffer") in found["region argument"], "the accumulator lives in the loop's buffer"
    assert found["dot"] == [Placement("buffer")]
    assert Placement("lazy") in found["arange"]


def test_the_cuda_layouts_of_a_matmul(monkeypatch):
    pytest.importorskip("llvmlite")
    from tritium.backends import registry

    if registry.get("cuda").compile_unavailable_reason() is not None:
        pytest.skip(registry.get("cuda").compile_unavailable_reason())
    found = _encodings(_layouts(monkeypatch, "cuda"))
    assert all(isinstance(e, Distributed) for kind in found.values() for e in kind)
    assert [e.kind for e in found["dot"]] == ["mma"], "the dot's result in the tensor cores' layout"
    assert all(e.kind == "blocked" for e in found["load"]), "loads in the blocked layout of their access"
    assert all(len(e.warp_bits) == 2 for kind in found.values() for e in kind), "num_warps=4: two warp bits"


# the layouts pass (backends/cuda/assign.py) ---------------------------------------------------------------
_MMA_64x64_4 = "#cuda.mma<reg=[1:1, 0:8, 1:16, 1:32, 0:32], lane=[1:2, 1:4, 0:1, 0:2, 0:4], warp=[1:8, 0:16]>"
# the same product with both warp bits along M: another tiling the tensor cores can run
_MMA_WARPS_ALONG_M = "#cuda.mma<reg=[1:1, 0:8, 1:8, 1:16, 1:32], lane=[1:2, 1:4, 0:1, 0:2, 0:4], warp=[0:16, 0:32]>"


def _tutorial_ir(monkeypatch) -> tuple[str, str]:
    """The tile IR and the "layouts" stage of the matmul (64x64x32, 4 warps, sm_90a) under the CUDA
    backend."""
    pytest.importorskip("llvmlite")
    from tritium.backends import registry

    if registry.get("cuda").compile_unavailable_reason() is not None:
        pytest.skip(registry.get("cuda").compile_unavailable_reason())
    monkeypatch.setenv("TRITIUM_BACKEND", "cuda")
    stages = _matmul.stages(_SIGNATURE, **_TILES)
    return stages["ttir"], stages["layouts"]


def _assigned(ttir: str):
    from tritium.backends.cuda import assign

    fn = parse_function(ttir)
    assign.assign_layouts(fn, 4, 90)
    verify(fn)
    return fn


def _values(fn) -> list:
    """Every value ``fn`` defines, in order: the results of its ops and the arguments of their regions."""
    found = []
    for op in fn.walk():
        found += list(op.results)
        for region in op.regions:
            found += list(region.args)
    return found


def _lowered(fn):
    """``fn`` lowered by the CUDA code generator as the backend runs it after the pass: the LLVM IR."""
    from tritium.backends.cuda import codegen

    return str(codegen.Codegen(fn, 4, capability=90).build())


def test_the_pass_places_the_values_the_dot_touches_and_nothing_else(monkeypatch):
    from ir_check import check  # tests/: imported here, so that `tritium ir` can run this file as a script

    ttir, layouts = _tutorial_ir(monkeypatch)
    placed = print_function(_assigned(ttir))
    check(placed, f"""
    # CHECK: splat %{{{{\\d+}}}} : <64x64xfp32>  #
    # CHECK: = for {{{{.*}}}} : <64x64xfp32, {_MMA_64x64_4}>, <64x32xptr<fp16>>, <32x64xptr<fp16>> {{
    # CHECK-NEXT: ^body(%{{{{\\d+}}}}: i32, %{{{{\\d+}}}}: <64x64xfp32, {_MMA_64x64_4}>, %{{{{\\d+}}}}: <64x32xptr<fp16>>,
    # CHECK: load {{{{.*}}}} : <64x32xfp16, #cuda.blocked<
    # CHECK: load {{{{.*}}}} : <32x64xfp16, #cuda.blocked<
    # CHECK-NEXT: dot {{{{.*}}}} : <64x64xfp32, {_MMA_64x64_4}>
    # CHECK-NOT: #cuda
    # CHECK: yield
    """)
    # the zeros the loop starts from are recomputed by their readers: no layout of their own; the
    # pointers the loop advances and the cast after the loop are the code generator's to choose
    assert placed.count("#cuda.") == 5
    # each placed value has the layout the code generator gives it (the "layouts" stage)
    pairs = list(zip(_values(parse_function(placed)), _values(parse_function(layouts)), strict=True))
    assert sum(mine.encoding is not None for mine, _ in pairs) == 5
    for mine, lowered in pairs:
        if mine.encoding is not None:
            assert mine.encoding == lowered.encoding


def test_the_code_generator_lowers_the_dot_in_the_layout_the_pass_gave_it(monkeypatch):
    ttir, _ = _tutorial_ir(monkeypatch)
    fn = _assigned(ttir)
    chosen = _lowered(fn)
    assert print_function(fn).count(_MMA_64x64_4) == 4
    text = print_function(_assigned(ttir)).replace(_MMA_64x64_4, _MMA_WARPS_ALONG_M)
    fn = parse_function(text)
    moved = _lowered(fn)
    assert moved != chosen, "the warp grid is read from the encoding"
    assert print_function(fn).count(_MMA_WARPS_ALONG_M) == 4 and _MMA_64x64_4 not in print_function(fn)
    # the same 8 mma.sync per thread and k-step, from A fragments of one 16-row tile per k-step
    # instead of two (a warp's 16 x 64 instead of 32 x 32)
    def count(text, name):
        return len(re.findall(r'= call [^@]*@"llvm\.nvvm\.' + re.escape(name) + '"', text))

    mma = "mma.m16n8k16.row.col.f32.f32"
    assert count(moved, mma) == count(chosen, mma) == 16
    ldmatrix_a = "ldmatrix.sync.aligned.m8n8.x4.b16.p3"
    assert (count(chosen, ldmatrix_a), count(moved, ldmatrix_a)) == (4, 2)


def test_the_code_generator_refuses_a_placement_it_does_not_follow(monkeypatch):
    ttir, _ = _tutorial_ir(monkeypatch)
    placed = print_function(_assigned(ttir))
    # the cast after the loop takes the layout of the loop's result: another one cannot be kept
    cast = next(line for line in placed.splitlines() if "= cast %" in line)
    wrong = placed.replace(cast, cast.replace("<64x64xfp16>", f"<64x64xfp16, {_MMA_WARPS_ALONG_M}>"))
    with pytest.raises(AssertionError, match="was assigned #cuda.mma<.*and lowered in #cuda.mma<"):
        _lowered(parse_function(wrong))
    # a value its readers recompute has no layout to be lowered in
    zeros = next(line for line in placed.splitlines() if ": <64x64xfp32>" in line and "splat" in line)
    wrong = placed.replace(zeros, zeros.replace("<64x64xfp32>", f"<64x64xfp32, {_MMA_64x64_4}>"))
    with pytest.raises(AssertionError, match="not lowered in a layout"):
        _lowered(parse_function(wrong))
