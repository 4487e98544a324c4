"""The CUDA backend's PTX for language functions of Triton 3.9 (tl.fdiv(approx=True), tl.expect_zero,
atomic_load/atomic_store, tl.extra.cuda's special registers), checked without a GPU as
test_cuda_ptx.py checks the rest."""
from __future__ import annotations

import re

import pytest

import tritium as triton
import tritium.language as tl
from tritium.backends.base import GPUTarget
from tritium.backends.cuda import nvptx
from tritium.compiler import ASTSource

pytest.importorskip("llvmlite")

HOPPER = GPUTarget("cuda", 90, 32)


def ptx_of(kernel, signature, constexprs=None, **options) -> str:
    compiled = triton.compile(ASTSource(kernel, signature, constexprs=constexprs or {}), target=HOPPER,
                              options=options)
    if nvptx.ptxas_path() is not None:
        assert compiled.asm["cubin"], "ptxas is here, so the backend must have assembled a cubin"
    ptx = compiled.asm["ptx"]
    return ptx[ptx.index(".entry"):]


@triton.jit
def _divide(x_ptr, y_ptr, o_ptr, BLOCK: tl.constexpr, MODE: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r)
    y = tl.load(y_ptr + r)
    if MODE == "approx":
        q = tl.fdiv(x, y, approx=True)
    elif MODE == "ieee":
        q = tl.fdiv(x, y, ieee_rounding=True)
    else:
        q = tl.fdiv(x, y)
    tl.store(o_ptr + r, q)


_DIVIDE = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "o_ptr": "*fp32:16", "BLOCK": "constexpr", "MODE": "constexpr"}


@pytest.mark.parametrize("mode, instruction", [("approx", "div.approx.f32"), ("default", "div.full.f32"),
                                               ("ieee", "div.rn.f32")])
def test_fdiv_emits_the_division_triton_emits(mode, instruction):
    ptx = ptx_of(_divide, _DIVIDE, {"BLOCK": 128, "MODE": mode})
    assert instruction in ptx
    others = {"div.approx.f32", "div.full.f32", "div.rn.f32"} - {instruction}
    assert not any(other in ptx for other in others)


@triton.jit
def _expect(x_ptr, o_ptr, BLOCK: tl.constexpr, ASSERT: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r)
    if ASSERT:
        tl.device_assert((x == 0) | (r < 64), "x is zero")
    else:
        x = tl.expect_zero(x, r >= 64)
    tl.store(o_ptr + r, x)


def test_expect_zero_compiles_to_nothing_outside_debug_mode():
    signature = {"x_ptr": "*fp32:16", "o_ptr": "*fp32:16", "BLOCK": "constexpr", "ASSERT": "constexpr"}
    float_compare = re.compile(r"setp\.\w+\.f32")
    assert float_compare.search(ptx_of(_expect, signature, {"BLOCK": 128, "ASSERT": True}))  # the same check, always
    assert not float_compare.search(ptx_of(_expect, signature, {"BLOCK": 128, "ASSERT": False}))


@triton.jit
def _flags(flag_ptr, data_ptr, out_ptr, BLOCK: tl.constexpr, LOAD_SEM: tl.constexpr, STORE_SEM: tl.constexpr,
           SCOPE: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.arange(0, BLOCK)
    if pid > 0:
        while tl.atomic_load(flag_ptr + pid - 1, sem=LOAD_SEM, scope=SCOPE) == 0:
            pass
    tl.store(out_ptr + r, tl.atomic_load(data_ptr + r, mask=r < 100, sem=LOAD_SEM, scope=SCOPE))
    tl.atomic_store(flag_ptr + pid, 1, sem=STORE_SEM, scope=SCOPE)
    tl.atomic_store(data_ptr + r, r.to(tl.float16), mask=r < 100, sem=STORE_SEM, scope=SCOPE)


_FLAGS = {"flag_ptr": "*i32:16", "data_ptr": "*fp16:16", "out_ptr": "*fp16:16", "BLOCK": "constexpr",
          "LOAD_SEM": "constexpr", "STORE_SEM": "constexpr", "SCOPE": "constexpr"}


@pytest.mark.parametrize("load_sem, store_sem, scope", [(None, None, None), ("relaxed", "relaxed", "sys"),
                                                        ("acquire", "release", "cta")])
def test_atomic_load_and_store_are_tritons_ld_and_st_with_their_order_and_scope(load_sem, store_sem, scope):
    ptx = ptx_of(_flags, _FLAGS, {"BLOCK": 128, "LOAD_SEM": load_sem, "STORE_SEM": store_sem, "SCOPE": scope})
    load, store, where = load_sem or "acquire", store_sem or "release", scope or "gpu"  # Triton's defaults
    assert f"ld.{load}.{where}.global.b32" in ptx  # the flag
    assert f"ld.{load}.{where}.global.b16" in ptx  # the fp16 data
    assert f"st.{store}.{where}.global.b32" in ptx and f"st.{store}.{where}.global.b16" in ptx
    assert "atom." not in ptx  # no read-modify-write stands in for them


@triton.jit
def _registers(t_ptr, s_ptr):
    tl.store(t_ptr, tl.extra.cuda.globaltimer())
    tl.store(t_ptr + 1, tl.extra.cuda.globaltimer())
    tl.store(s_ptr, tl.extra.cuda.smid() + tl.extra.cuda.num_threads())


def test_special_registers_are_read_with_tritons_mov():
    ptx = ptx_of(_registers, {"t_ptr": "*i64", "s_ptr": "*i32"}, num_warps=2)
    assert ptx.count("mov.u64 ") + ptx.count("mov.u64\t") >= 2 and ptx.count("%globaltimer") >= 2  # not merged
    assert "%smid" in ptx
    assert "64;" in ptx or ", 64" in ptx  # num_threads: 2 warps of 32, a constant


@triton.jit
def _steps(n):
    steps = 0
    while n > 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


@triton.jit
def _mapped(x_ptr, o_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    tl.store(o_ptr + r, tl.map_elementwise(_steps, tl.load(x_ptr + r)))


def test_map_elementwise_compiles_to_a_loop_over_the_elements():
    ptx = ptx_of(_mapped, {"x_ptr": "*i32", "o_ptr": "*i32", "BLOCK": "constexpr"}, {"BLOCK": 64})
    assert ptx.count("bra") >= 2  # the loop over the elements and the function's own while loop


@triton.jit
def _poll(flag_ptr, ok_ptr, TIMEOUT: tl.constexpr):
    r = tl.arange(0, 64)
    tl.store(ok_ptr + r, tl.atomic_poll(flag_ptr + r, 1, timeout_ns=TIMEOUT))


@pytest.mark.parametrize("timeout", [None, 1000])
def test_atomic_poll_is_an_acquiring_load_loop(timeout):
    ptx = ptx_of(_poll, {"flag_ptr": "*i32", "ok_ptr": "*i1", "TIMEOUT": "constexpr"}, {"TIMEOUT": timeout})
    assert "ld.acquire.gpu.global.b32" in ptx
    assert ("%globaltimer" in ptx) == (timeout is not None)


@triton.jit
def _bits(x_ptr, y_ptr, o_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r)
    y = tl.load(y_ptr + r)
    z = tl.extra.libdevice.brev(x) ^ tl.extra.libdevice.mulhi(x, y) ^ tl.extra.libdevice.byte_perm(x, y, 0x5410)
    three = tl.full((BLOCK,), 3, tl.uint32)
    tl.store(o_ptr + r, z + tl.extra.libdevice.ffs(y) + tl.extra.libdevice.sad(x, y, three))


def test_libdevice_integer_functions_compile_to_integer_instructions():
    ptx = ptx_of(_bits, {"x_ptr": "*i32", "y_ptr": "*i32", "o_ptr": "*i32", "BLOCK": "constexpr"}, {"BLOCK": 128})
    assert "mul.hi.s32" in ptx and "popc.b32" in ptx  # mulhi, and ffs through popc
    assert "call" not in ptx  # no libdevice call: each is written with integer ops
