"""TRITIUM_STRICT=1 refuses tritium's extensions as compiled Triton does; errors inside @jit
helpers name the helper's line and the call site (Location.inlined_at)."""
from __future__ import annotations

import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError, OutOfBoundsError


@triton.jit
def _with_break(out, n):
    total = 0
    for i in range(n):
        if i == 3:
            break
        total += i
    tl.store(out, total)


@triton.jit
def _with_return_in_loop(out, n):
    for i in range(n):
        if i == 3:
            return
        tl.store(out + i, i)


@triton.jit
def _changing_type(x_ptr, out, n):
    acc = 0
    for i in range(n):
        acc += tl.load(x_ptr + i)
    tl.store(out, acc)


def test_extensions_run_by_default():
    out = torch.zeros(8, dtype=torch.int32)
    _with_break[(1,)](out, 8)
    assert out[0] == 0 + 1 + 2
    x = torch.ones(4)
    res = torch.zeros(1)
    _changing_type[(1,)](x, res, 4)
    assert res[0] == 4.0


@pytest.mark.parametrize("kernel,args,message,line", [
    (_with_break, lambda: (torch.zeros(1, dtype=torch.int32), 8), "unsupported AST node type: Break", "break"),
    (_with_return_in_loop, lambda: (torch.zeros(8, dtype=torch.int32), 8),
     "Cannot have `return` statements inside `while` or `for` statements", "return"),
    (_changing_type, lambda: (torch.ones(4), torch.zeros(1), 4),
     "Loop-carried variable acc has initial type int32 but is re-assigned to fp32 in loop", "for i in range(n)"),
])
def test_strict_mode_refuses_them_at_their_line(monkeypatch, kernel, args, message, line):
    monkeypatch.setenv("TRITIUM_STRICT", "1")
    with pytest.raises(CompilationError) as info:
        kernel[(1,)](*args())
    text = str(info.value)
    assert message in text and line in text and "test_strict_and_locations.py:" in text


@triton.jit
def _load_all(p, offs):
    return tl.load(p + offs)


@triton.jit
def _through_helper(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = _load_all(x_ptr, offs)
    tl.store(out_ptr + offs, x)


def test_run_time_error_in_a_helper_names_the_helper_and_the_call():
    with pytest.raises(OutOfBoundsError) as info:
        _through_helper[(1,)](torch.randn(10), torch.empty(16), BLOCK=16)
    text = str(info.value)
    assert "return tl.load(p + offs)" in text  # the helper's line, with its caret
    assert "called from" in text and "x = _load_all(x_ptr, offs)" in text  # and the call site
    assert text.index("return tl.load") < text.index("called from")


@triton.jit
def _bad_helper(x):
    if x > 0:
        x = x + 1
    return x


@triton.jit
def _calls_bad_helper(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = _bad_helper(tl.load(x_ptr + offs))
    tl.store(x_ptr + offs, y)


def test_compile_error_in_a_helper_names_the_call_site():
    with pytest.raises(CompilationError) as info:
        _calls_bad_helper[(1,)](torch.randn(16), BLOCK=16)
    text = str(info.value)
    assert "if x > 0:" in text and "y = _bad_helper(tl.load(x_ptr + offs))" in text


def test_ir_locations_record_the_call_site():
    kernel = _through_helper.warmup(torch.randn(16), torch.empty(16), BLOCK=16, grid=(1,))
    load = next(op for op in kernel.ir.walk() if op.opcode == "load")
    assert load.loc.inlined_at is not None and load.loc.inlined_at.function == "_through_helper"
    assert "<- test_strict_and_locations.py:" in str(kernel.ir)


@triton.jit
def _block_pointer_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    source = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (BLOCK,), (0,))
    tl.store(y_ptr + tl.arange(0, BLOCK), tl.load(source, boundary_check=(0,)), mask=tl.arange(0, BLOCK) < n)


def test_block_pointers_run_and_strict_mode_warns_that_triton_3_9_has_none(monkeypatch):
    import numpy as np

    import warnings

    x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        _block_pointer_copy[(1,)](x, y, 8, BLOCK=8)  # kept, without a word
    assert y.tolist() == x.tolist()
    monkeypatch.setenv("TRITIUM_STRICT", "1")
    with pytest.warns(DeprecationWarning, match="Triton 3.9 removed block pointers") as record:
        triton.jit(_block_pointer_copy.fn)[(1,)](x, y, 8, BLOCK=8)
    from pathlib import Path

    assert record[0].filename == __file__
    assert "make_block_ptr" in Path(__file__).read_text().splitlines()[record[0].lineno - 1]
