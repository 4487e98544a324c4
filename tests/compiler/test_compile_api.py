"""Compiling without a launch (``tritium.compile`` with an ``ASTSource``), the argument attributes the
specialization proves (``fn.arg_attrs``), and Triton's signature syntax with attributes.

Oracles: numpy results, the argument values chosen here (divisible or not, aligned or not), and
Triton's documented meaning of ``*fp32:16`` and ``i32:1``.
"""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.compiler import ASTSource, CompiledKernel, compile_ir, compile_source
from tritium.compiler.source import JITCallable, parse_type
from tritium.errors import CompilationError, LaunchError


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, alpha * x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def _host_backend() -> str:
    """The backend a host launch gets: TRITIUM_BACKEND's, else the first serving host memory (the
    compiled CPU backend)."""
    from tritium import config
    from tritium.backends import registry

    return config.backend_name() or registry.for_device("cpu").name


def _attrs(compiled) -> dict:
    return dict(zip(compiled.ir.arg_names, compiled.ir.arg_attrs))


# tritium.compile -----------------------------------------------------------------------------------
def test_compile_an_ast_source_and_launch_it():
    source = ASTSource(axpy_kernel, {"x_ptr": "*fp32:16", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                                     "alpha": "fp32", "BLOCK": "constexpr"}, constexprs={"BLOCK": 32})
    compiled = triton.compile(source, options={"num_warps": 2})
    assert isinstance(compiled, CompiledKernel) and compiled.backend == _host_backend()
    assert compiled.metadata.num_warps == 2 and compiled.metadata.target[0] == "cpu"
    assert "<32xfp32>" in compiled.asm["ttir"]
    assert _attrs(compiled) == {"x_ptr": {"divisibility": 16}, "y_ptr": {}, "out_ptr": {}, "n": {}, "alpha": {}}
    assert axpy_kernel.cache == {}, "compiling an ASTSource leaves the kernel's launch cache alone"
    x, y = np.arange(70, dtype=np.float32), np.ones(70, dtype=np.float32)
    out = np.zeros(70, dtype=np.float32)
    compiled[(3,)](x, y, out, 70, 2.0)
    np.testing.assert_array_equal(out, 2 * x + 1)


def test_ast_source_takes_triton_keys_and_attribute_lists():
    source = ASTSource(axpy_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                                     "alpha": "fp32"}, constexprs={(5,): 64},
                       attrs={(3,): [["tt.divisibility", 16]], 0: [["tt.divisibility", 16]]})
    specs, attrs = source.arg_specs()
    assert specs["BLOCK"].value == 64 and specs["n"] == tl.int32 and specs["x_ptr"] == tl.pointer_type(tl.float32)
    assert attrs == {"n": {"divisibility": 16}, "x_ptr": {"divisibility": 16}}
    fn = compile_source(source).function
    assert fn.arg_attrs == [{"divisibility": 16}, {}, {}, {"divisibility": 16}, {}]
    with pytest.raises(LaunchError, match="not parameters of axpy_kernel"):
        ASTSource(axpy_kernel, {"z": "i32"})
    with pytest.raises(LaunchError, match="give a value for the constexpr BLOCK"):
        ASTSource(axpy_kernel, "*fp32,*fp32,*fp32,i32,fp32").arg_specs()
    with pytest.raises(TypeError, match="ASTSource"):
        triton.compile(axpy_kernel)


def _plain_copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + 1)


def test_the_compiler_compiles_a_plain_function_without_the_runtime():
    """compile_ir needs only a JITCallable and the argument specs: no JITFunction, no launch."""
    kernel = JITCallable(_plain_copy)
    specs = {"x_ptr": tl.pointer_type(tl.int16), "out_ptr": tl.pointer_type(tl.int16), "BLOCK": tl.constexpr(8)}
    fn = compile_ir(kernel, specs, {"out_ptr": {"divisibility": 16}}).function
    assert fn.arg_names == ["x_ptr", "out_ptr"] and fn.arg_attrs == [{}, {"divisibility": 16}]
    assert "<8xi16>" in str(fn)
    compiled = triton.compile(ASTSource(_plain_copy, "*i16,*i16", constexprs={"BLOCK": 8}))
    x, out = np.arange(8, dtype=np.int16), np.zeros(8, dtype=np.int16)
    compiled[(1,)](x, out)
    np.testing.assert_array_equal(out, x + 1)


# argument attributes from the specialization ----------------------------------------------------------
def test_launch_attributes_follow_the_values_passed():
    base = torch.arange(80, dtype=torch.float32)
    y, out = torch.ones(80), torch.empty(80)
    aligned = axpy_kernel[(3,)](base, y, out, 64, 2.0, BLOCK=32)
    assert _attrs(aligned) == {"x_ptr": {"divisibility": 16}, "y_ptr": {"divisibility": 16},
                               "out_ptr": {"divisibility": 16}, "n": {"divisibility": 16}, "alpha": {}}
    assert torch.equal(out[:64], 2 * base[:64] + 1)
    shifted = axpy_kernel[(3,)](base[1:], y, out, 70, 2.0, BLOCK=32)  # 4 bytes in; 70 is not divisible by 16
    assert _attrs(shifted)["x_ptr"] == {} and _attrs(shifted)["n"] == {}
    assert "x_ptr: ptr<fp32> {divisibility=16}" in str(aligned.ir)
    assert shifted is not aligned and len(axpy_kernel.cache) >= 2


def test_do_not_specialize_proves_nothing():
    kernel = triton.jit(axpy_kernel.fn, do_not_specialize=["n"])
    compiled = kernel[(2,)](torch.zeros(64), torch.zeros(64), torch.zeros(64), 64, 1.0, BLOCK=32)
    assert _attrs(compiled)["n"] == {}


# Triton's signature syntax ----------------------------------------------------------------------------
def test_signature_attribute_suffixes():
    assert parse_type("*fp32:16") == (tl.pointer_type(tl.float32), {"divisibility": 16})
    assert parse_type("i32:16") == (tl.int32, {"divisibility": 16})
    assert parse_type("i64:1") == (tl.int64, {"equal_to_1": True})
    assert parse_type("*kfp16") == (tl.pointer_type(tl.float16), {})
    assert parse_type(" fp32 ") == (tl.float32, {})
    for bad in ("fp32:16", "*fp32:1", "i32:8"):
        with pytest.raises(LaunchError, match="not an argument attribute"):
            parse_type(bad)
    with pytest.raises(LaunchError, match="unknown type 'f33'"):
        parse_type("f33")


def test_kernel_ir_takes_the_signature_with_attributes():
    text = axpy_kernel.ir("*fp32:16,*fp32:16,*fp32,i32:16,fp32", BLOCK=64)
    assert "%x_ptr: ptr<fp32> {divisibility=16}" in text and "%y_ptr: ptr<fp32> {divisibility=16}" in text
    assert "%out_ptr: ptr<fp32>," in text and "%n: i32 {divisibility=16}" in text
    one = axpy_kernel.ir("*fp32,*fp32,*fp32,i32:1,fp32", BLOCK=64)
    assert re.search(r"%n: i32 \{equal_to_1=(true|True)\}", one), one
    stages = axpy_kernel.stages("*fp32,*fp32,*fp32,i32,fp32", BLOCK=64)  # the host backend's: ttir first
    assert next(iter(stages)) == "ttir" and stages["ttir"] == axpy_kernel.ir("*fp32,*fp32,*fp32,i32,fp32", BLOCK=64)


def test_the_command_line_takes_attributes_and_a_stage(tmp_path):
    script = tmp_path / "kernels.py"
    script.write_text(textwrap.dedent("""
        import triton
        import triton.language as tl

        @triton.jit
        def copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)
    """))
    command = [sys.executable, "-m", "tritium", "ir", f"{script}:copy", "-s", "*fp32:16,*fp32:16,i32:16",
               "-D", "BLOCK=128"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "%n: i32 {divisibility=16}" in done.stdout and "<128xfp32>" in done.stdout
    staged = subprocess.run(command + ["--stage", "ttir"], capture_output=True, text=True, timeout=120)
    assert staged.returncode == 0 and staged.stdout == done.stdout
    missing = subprocess.run(command + ["--stage", "ptx"], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no stage 'ptx'; its stages are ttir" in missing.stderr


def test_compiling_a_kernel_whose_source_cannot_be_read_says_why():
    namespace = {"triton": triton, "tl": tl}
    code = compile("@triton.jit\ndef nowhere(x_ptr):\n    tl.store(x_ptr, 1.0)\n", "<stdin>", "exec")
    exec(code, namespace)  # noqa: S102
    with pytest.raises(CompilationError, match="cannot read the source of nowhere"):
        triton.compile(ASTSource(namespace["nowhere"], {"x_ptr": "*fp32"}))
