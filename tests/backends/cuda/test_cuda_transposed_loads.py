"""backends/cuda/transposed_loads.py: a load read only through a transpose reads the transposed block
itself, where nothing between the two writes memory."""
from __future__ import annotations

import re

import tritium as triton
import tritium.language as tl
from test_cuda_ptx import compile_for


@triton.jit
def _transposed(x_ptr, out_ptr, other_ptr, WHAT: tl.constexpr):
    rows = tl.arange(0, 16)
    cols = tl.arange(0, 32)
    x = tl.load(x_ptr + rows[:, None] * 32 + cols[None, :], mask=rows[:, None] < 12, other=0.0)
    if WHAT == "also read as it is":
        tl.store(other_ptr + rows[:, None] * 32 + cols[None, :], x)
    if WHAT == "a store in between":
        tl.store(other_ptr + rows, rows.to(tl.float16))
    tl.store(out_ptr + cols[:, None] * 16 + rows[None, :], x.T)


def _loads(what: str) -> list[str]:
    signature = {"x_ptr": "*fp16:16", "out_ptr": "*fp16:16", "other_ptr": "*fp16:16", "WHAT": "constexpr"}
    layouts = compile_for(_transposed, signature, {"WHAT": what}).asm["layouts"]
    return re.findall(r"= load [^:]*: <(\d+x\d+)xfp16", layouts)


def test_a_load_read_only_through_a_transpose_reads_the_transposed_block():
    assert _loads("only transposed") == ["32x16"]


def test_a_load_read_otherwise_too_or_past_a_store_stays_as_it_is():
    assert _loads("also read as it is") == ["16x32"]
    assert _loads("a store in between") == ["16x32"]
