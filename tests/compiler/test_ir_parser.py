"""Printed IR parses back to the same IR: print -> parse -> print gives the same text, and the
parsed function verifies and runs like the original."""
from __future__ import annotations

import math

import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.compiler.ir.parser import IRParseError, parse_function, parse_type
from tritium.compiler.ir.printer import print_function
from tritium.compiler.ir import types as T
from tritium.compiler.ir.verifier import verify


def _round_trip(text: str) -> str:
    fn = parse_function(text)
    verify(fn)
    return print_function(fn)


@triton.jit
def _combine(a0, b0, a1, b1):
    return a0 + a1, tl.maximum(b0, b1)


@triton.jit
def _everything(x_ptr, i_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=float("nan"))
    i = tl.load(i_ptr + offs, mask=mask, other=-1)
    y = tl.where(x > -0.0, x, float("-inf")) * 2.0
    s, m = tl.reduce((y, y), 0, _combine)
    c = tl.cumsum(i, axis=0)
    k = 0
    while k < n:
        k += 3
    for j in range(0, n, 2):
        y = y + j
    if pid == 0:
        tl.atomic_add(i_ptr, 1)
    z = tl.join(y, y)
    a, b = tl.split(z)
    tl.device_print("quote ' and # and \"", s)
    tl.store(out_ptr + offs, a + b + s + m + c.to(tl.float32) + k, mask=mask)


def test_a_kernel_using_most_opcodes_round_trips():
    text = _everything.ir("*fp32,*i32,*fp32,i32", BLOCK=16)
    for opcode in ("while", "condition", "reduce", "scan", "atomic_rmw", "join", "split", "print", "if", "for"):
        assert f" {opcode} " in text or f" {opcode}\n" in text or f"= {opcode}" in text, opcode
    assert _round_trip(text) == text


@triton.jit
def _dot_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
    c = tl.dot(a, tl.trans(b), input_precision="tf32")
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.sort(c.to(tl.float16), descending=True))


def test_dot_and_shape_ops_round_trip():
    text = _dot_kernel.ir("*fp32,*fp32,*fp16", BLOCK=16)
    assert "input_precision='tf32'" in text and "permute" in text
    assert _round_trip(text) == text


def test_parsed_ir_runs_like_the_original():
    """The parsed function, run on the interpreter, gives what the kernel gives."""
    import dataclasses

    from tritium.backends import registry

    x = torch.randn(40)
    i = torch.arange(40, dtype=torch.int32)
    expected = torch.empty(40)
    _everything[(3,)](x, i.clone(), expected, 40, BLOCK=16)
    kernel = _everything.warmup(x, i, expected, 40, BLOCK=16, grid=(3,))
    parsed = parse_function(print_function(kernel.ir))
    verify(parsed)
    backend = registry.get("interpreter")
    executable = backend.compile(parsed, backend.parse_options({}), backend.default_target())
    out = torch.empty(40)
    dataclasses.replace(kernel, ir=parsed, executable=executable)[(3,)](x, i.clone(), out, 40)
    assert torch.equal(out, expected)


def test_special_constants_and_strings_round_trip():
    text = "\n".join([  # noqa: FLY002 - one line of IR per string
        "func @k(%p: ptr<fp32> {divisibility=16}, %desc.shape0: i32 {divisibility=16, equal_to_1=False}) {",
        "  %0 = constant {value=nan} : fp32",
        "  %1 = constant {value=-inf} : fp32",
        "  %2 = constant {value=-0.0} : fp32",
        "  %3 = constant {value=1e-05} : fp64",
        "  %4 = constant {value=True} : i1",
        "  %5 = constant {value=-9223372036854775808} : i64",
        "  print %0, %1, %2, %3, %4, %5 {prefix='a # b \\' \" c'}",
        "  assert %4 {message=\"it's fine\"}",
        "}",
    ])
    fn = parse_function(text)
    verify(fn)
    values = [op.attrs.get("value") for op in fn.body.ops[:6]]
    assert math.isnan(values[0]) and values[1] == -math.inf and math.copysign(1, values[2]) == -1
    assert values[3] == 1e-05 and values[4] is True and values[5] == -2 ** 63
    assert fn.body.ops[6].attrs["prefix"] == "a # b ' \" c"
    assert fn.arg_attrs == [{"divisibility": 16}, {"divisibility": 16, "equal_to_1": False}]
    assert fn.arg_names == ["p", "desc.shape0"]
    assert print_function(fn) == text


def test_inlined_locations_round_trip():
    text = "\n".join([
        "func @k(%p: ptr<fp32>) {",
        f"{'  %0 = program_id {axis=0} : i32':<72}  # helper.py:3 <- kernel.py:12",
        "}",
    ])
    fn = parse_function(text)
    loc = fn.body.ops[0].loc
    assert (loc.file, loc.line, loc.inlined_at.file, loc.inlined_at.line) == ("helper.py", 3, "kernel.py", 12)
    assert print_function(fn) == text


@pytest.mark.parametrize("text,ty", [
    ("i32", T.int32), ("ptr<fp16>", T.pointer_type(T.float16)), ("<8x16xbf16>", T.block_type(T.bfloat16, (8, 16))),
    ("<4xptr<u8>>", T.block_type(T.pointer_type(T.uint8), (4,))), ("fp8e4nv", T.float8e4nv),
])
def test_types_parse(text, ty):
    assert parse_type(text) == ty and ty.ir_name == text


@pytest.mark.parametrize("body,message", [
    ("  %0 = frobnicate : i32", "unknown opcode 'frobnicate'"),
    ("  %0 = neg %9 : i32", "%9 is used before it is defined"),
    ("  %0 = constant {value=1} : i33", "unknown IR type 'i33'"),
    ("  store %p, %p, bogus=%p", "no optional operand 'bogus'"),
])
def test_parse_errors_name_the_line(body, message):
    with pytest.raises(IRParseError, match="line 2") as info:
        parse_function("func @k(%p: ptr<fp32>) {\n" + body + "\n}")
    assert message in str(info.value)


def test_nan_sign_and_payload_survive_the_text():
    import struct

    negative = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
    payload = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000123))[0]
    text = ("func @k(%n: i32) {\n  %0 = constant {value=nan(0xfff8000000000000)} : fp32\n"
            "  %1 = constant {value=nan(0x7ff8000000000123)} : fp64\n  %2 = constant {value=nan} : fp32\n}")
    fn = parse_function(text)
    bits = [struct.pack("<d", op.attrs["value"]) for op in fn.body.ops]
    assert bits == [struct.pack("<d", negative), struct.pack("<d", payload), struct.pack("<d", float("nan"))]
    assert print_function(fn) == text


def test_parsing_twice_gives_independent_functions():
    text = "func @k(%p: ptr<fp32>) {\n  %0 = program_id {axis=1} : i32\n}"
    a, b = parse_function(text), parse_function(text)
    a.body.ops[0].attrs["axis"] = 2
    assert b.body.ops[0].attrs == {"axis": 1}
    assert a.body.ops[0].result.id != b.body.ops[0].result.id


def test_a_copied_function_prints_the_same_and_shares_nothing_mutable():
    """``Function.copy``: what a backend's own passes rewrite (the CUDA pipeliner), the original left
    as it was."""
    fn = parse_function(_everything.ir("*fp32,*i32,*fp32,i32", BLOCK=16))
    text = print_function(fn)
    copy = fn.copy()
    verify(copy)
    assert print_function(copy) == text
    original_ids = {v.id for op in fn.walk() for v in op.results} | {a.id for a in fn.args}
    assert not original_ids & ({v.id for op in copy.walk() for v in op.results} | {a.id for a in copy.args})
    for op in copy.walk():  # every operand is the copy's own (or an argument of it)
        assert not {v.id for v in op.operands} & original_ids
    copy.body.ops[0].attrs["axis"] = 2
    copy.body.ops.pop()
    assert print_function(fn) == text
