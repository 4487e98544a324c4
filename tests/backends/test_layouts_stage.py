"""The "layouts" stage of both compiled backends on a tiled matmul of the shape of Triton's tutorial 03
(a K loop with masked tails, an fp32 accumulator carried through the loop, a dot of fp16 tiles): the
encodings printed, verified, and read back to the same text.

Oracles: the encodings the docs state for each kind of value (a CPU dot operand loaded for the dot
alone is packed in fp32; the accumulator carried through the loop is a buffer; on the GPU the dot's
result is in the tensor cores' layout); the parser and the verifier, which must accept what the
stage prints and print it the same.
"""
from __future__ import annotations

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
