"""``tl.const``: a kernel parameter annotated with it points to constant data. Loads through it (and
through pointers computed from it) run as usual; a store or an atomic through it is a compile error
at the call, as Triton refuses it ("Cannot store to a constant pointer")."""
from __future__ import annotations

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError


@triton.jit
def _scale(x_ptr: tl.const, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ptrs = x_ptr + offs
    acc = tl.zeros((BLOCK,), tl.float32)
    for k in range(3):  # a const pointer carried through a loop stays one
        acc += tl.load(ptrs, mask=offs < n, other=0.0)
        ptrs += 0
    tl.store(out_ptr + offs, acc, mask=offs < n)


def test_loads_through_a_const_pointer_run():
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    out = np.zeros_like(x)
    _scale[(4,)](x, out, 1000, BLOCK=256)
    assert np.array_equal(out, (x + x) + x)  # the same two roundings as the kernel's


@triton.jit
def _write(x_ptr: tl.const, y_ptr, WHAT: tl.constexpr):
    r = tl.arange(0, 8)
    if WHAT == "store":
        tl.store(x_ptr + r, tl.load(y_ptr + r))
    elif WHAT == "atomic":
        tl.atomic_add(x_ptr + r, 1.0)
    else:
        tl.atomic_store(x_ptr + r, 1.0)


@triton.jit
def _store_into(p: tl.const, v):
    tl.store(p, v)


@triton.jit
def _through_a_helper(x_ptr, y_ptr):
    _store_into(x_ptr, tl.load(y_ptr))


@pytest.mark.parametrize("what, call", [("store", "tl.store(x_ptr + r, tl.load(y_ptr + r))"),
                                        ("atomic", "tl.atomic_add(x_ptr + r, 1.0)"),
                                        ("atomic_store", "tl.atomic_store(x_ptr + r, 1.0)")])
def test_writing_through_a_const_pointer_is_a_compile_error_at_the_call(what, call):
    x, y = np.zeros(8, np.float32), np.ones(8, np.float32)
    with pytest.raises(CompilationError, match="Cannot store to a constant pointer") as info:
        _write[(1,)](x, y, WHAT=what)
    message = str(info.value)
    assert call in message and "^" in message and "tl.const" in message
    assert not x.any()


def test_a_helper_parameter_annotated_const_refuses_stores_too():
    x, y = np.zeros(1, np.float32), np.ones(1, np.float32)
    with pytest.raises(CompilationError, match="Cannot store to a constant pointer") as info:
        _through_a_helper[(1,)](x, y)
    assert "tl.store(p, v)" in str(info.value) and "_store_into(x_ptr, tl.load(y_ptr))" in str(info.value)


def test_the_annotation_is_recognised_as_a_class_and_as_text():
    from tritium.language.core import is_const_annotation

    assert is_const_annotation(tl.const) and is_const_annotation("tl.const") and is_const_annotation("const")
    assert not is_const_annotation(tl.constexpr) and not is_const_annotation("tl.constexpr")
