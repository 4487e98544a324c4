"""The CUDA backend's code generation, checked without a GPU: representative kernels compiled to PTX
through LLVM's NVPTX target, assembled by ptxas (from the nvidia-cuda-nvcc wheel the test extras
install), and the instructions that make them fast and give Triton's bits looked for.

On a machine with a GPU the execution tests (tests/execution/) also run on the backend; these
tests are what CI, which has none, can check.
"""
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
AMPERE = GPUTarget("cuda", 80, 32)


def compile_for(kernel, signature, constexprs=None, target=HOPPER, **options):
    compiled = triton.compile(ASTSource(kernel, signature, constexprs=constexprs or {}), target=target,
                              options=options)
    if nvptx.ptxas_path() is not None:
        assert compiled.asm["cubin"], "ptxas is here, so the backend must have assembled a cubin"
    return compiled


def body(compiled) -> str:
    ptx = compiled.asm["ptx"]
    return ptx[ptx.index(".entry"):]


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


_ADD = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32:16", "BLOCK": "constexpr"}


def test_aligned_contiguous_accesses_are_16_byte_vectors():
    ptx = body(compile_for(_add, _ADD, {"BLOCK": 1024}))
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx
    assert not re.search(r"ld\.global\.b32", ptx)


def test_unaligned_accesses_fall_back_to_scalar_ones():
    signature = dict(_ADD, n="i32", x_ptr="*fp32", y_ptr="*fp32", out_ptr="*fp32")
    ptx = body(compile_for(_add, signature, {"BLOCK": 256}))
    assert "ld.global.b32" in ptx and "v4" not in ptx


def test_the_target_and_ptx_version_follow_the_architecture():
    hopper = compile_for(_add, _ADD, {"BLOCK": 128}).asm["ptx"]
    ampere = compile_for(_add, _ADD, {"BLOCK": 128}, target=AMPERE).asm["ptx"]
    assert ".target sm_90a" in hopper and ".version 8.0" in hopper
    assert ".target sm_80" in ampere


@triton.jit
def _math(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr, FN: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if FN == "exp":
        r = tl.exp(x)
    elif FN == "exp2":
        r = tl.exp2(x)
    elif FN == "sqrt":
        r = tl.sqrt(x)
    elif FN == "rsqrt":
        r = tl.rsqrt(x)
    elif FN == "sqrt_rn":
        r = tl.sqrt_rn(x)
    elif FN == "div":
        r = x / y
    elif FN == "div_rn":
        r = tl.div_rn(x, y)
    elif FN == "floor":
        r = tl.floor(x)
    elif FN == "fma":
        r = x * y + x
    else:
        r = tl.log(x) + tl.sin(y) + tl.erf(x)
    tl.store(out_ptr + offs, r)


# The instructions Triton 3.6 emits for each op on an H200 (benchmarks/gpu/triton_instruction_choices.py).
@pytest.mark.parametrize("fn,instruction", [
    ("exp", "ex2.approx.f32"), ("exp2", "ex2.approx.ftz.f32"), ("sqrt", "sqrt.approx.ftz.f32"),
    ("rsqrt", "rsqrt.approx.ftz.f32"), ("sqrt_rn", "sqrt.rn.f32"), ("div", "div.full.f32"), ("div_rn", "div.rn.f32"),
    ("floor", "cvt.rmi.ftz.f32.f32"), ("fma", "fma.rn.f32")])
def test_math_uses_tritons_instructions(fn, instruction):
    signature = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "out_ptr": "*fp32:16", "BLOCK": "constexpr",
                 "FN": "constexpr"}
    ptx = body(compile_for(_math, signature, {"BLOCK": 128, "FN": fn}, enable_fp_fusion=True))
    assert instruction in ptx


@triton.jit
def _int_clamp(x_ptr, lo_ptr, hi_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.clamp(tl.load(x_ptr + offs), tl.load(lo_ptr + offs), tl.load(hi_ptr + offs)))


@pytest.mark.parametrize("dtype,instruction", [("i32", "s32"), ("u32", "u32"), ("i64", "s64"), ("u64", "u64")])
def test_integer_clamp_is_a_max_then_a_min_of_the_dtypes_signedness(dtype, instruction):
    """The clamp op reaches the GPU through the host's one-lane rule (backends/llvm/scalar.py)."""
    signature = {name: f"*{dtype}:16" for name in ("x_ptr", "lo_ptr", "hi_ptr", "out_ptr")}
    ptx = body(compile_for(_int_clamp, dict(signature, BLOCK="constexpr"), {"BLOCK": 128}))
    assert f"max.{instruction}" in ptx and f"min.{instruction}" in ptx
    other = {"s": "u", "u": "s"}[instruction[0]] + instruction[1:]
    assert f"max.{other}" not in ptx and f"min.{other}" not in ptx


def test_libdevice_is_linked_in_and_nothing_else_is_left_to_resolve():
    signature = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "out_ptr": "*fp32:16", "BLOCK": "constexpr",
                 "FN": "constexpr"}
    compiled = compile_for(_math, signature, {"BLOCK": 128, "FN": "libm"})
    assert "__nv_logf" in compiled.asm["llir"]
    assert ".extern" not in compiled.asm["ptx"]


@triton.jit
def _softmax(x_ptr, out_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + row * stride + offs, mask=m, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=m)


def test_reductions_shuffle_within_warps_and_meet_in_shared_memory():
    signature = {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "stride": "i32:16", "n": "i32", "BLOCK": "constexpr"}
    compiled = compile_for(_softmax, signature, {"BLOCK": 4096}, num_warps=8)
    ptx = body(compiled)
    # n unaligned: one element per access, so the element index's low bits are the lane's, then the
    # warp's; a thread's 16 elements combine in registers first
    assert ptx.count("shfl.sync.bfly.b32") == 10  # five lane bits, two reductions
    # the three warp bits of each reduction meet in one shared-memory round trip: two barriers each, and
    # the barriers are barrier.sync, which threads reach safely after a masked access's branch
    assert ptx.count("barrier.sync") == 4 and "bar.sync" not in ptx and ptx.count("ld.shared") == 2 * 8
    assert ".maxntid" not in ptx or "256" in ptx
    # max is PTX's max.f32, as under Triton, and the commutative combines of the shuffle levels need
    # no selects to order a lane's value and its partner's
    assert ptx.count("max.f32") == 15 + 5 + 7 and "selp" not in ptx


def test_a_warp_level_with_several_live_registers_shares_the_combining_out():
    signature = {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "stride": "i32:16", "n": "i32:16", "BLOCK": "constexpr"}
    ptx = body(compile_for(_softmax, signature, {"BLOCK": 4096}, num_warps=8))
    # 16-byte accesses: each thread's four contiguous elements are the index's low bits, so four
    # registers are live when the warp bits (7-9) combine. Each of the 8 warps combines one of them
    # (its 8 partners' values) and publishes the result: a thread reads 8 + 4 values per reduction,
    # not 8 x 4, at the cost of a third barrier
    assert ptx.count("ld.global.v4.b32") == 4
    assert ptx.count("ld.shared") == 2 * (8 + 4) and ptx.count("barrier.sync") == 2 * 3
    assert ptx.count("max.f32") == 12 + 7 + 4 * 5 + 3 and ptx.count("shfl.sync.bfly.b32") == 2 * 4 * 5


@pytest.mark.parametrize("num_warps", [4, 32])
def test_the_ptx_states_the_programs_thread_count(num_warps):
    # .reqntid, as Triton's PTX: ptxas then keeps to the registers that many threads can have (a
    # 64K-element row softmax with 32 warps took 96 registers per thread without it, and a launch of
    # 1024 such threads failed with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    signature = {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "stride": "i32:16", "n": "i32:16", "BLOCK": "constexpr"}
    ptx = compile_for(_softmax, signature, {"BLOCK": 65536 if num_warps == 32 else 1024}, num_warps=num_warps).asm["ptx"]
    assert re.search(rf"\.reqntid {32 * num_warps}\b", ptx)


def test_shared_memory_addresses_are_32_bit():
    # as Triton's: one register per shared address instead of two (64-bit ones took the cross-entropy
    # kernel from 32 to 40 registers per thread, 6 programs of 256 threads per SM instead of 8)
    signature = {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "stride": "i32:16", "n": "i32:16", "BLOCK": "constexpr"}
    ptx = body(compile_for(_softmax, signature, {"BLOCK": 4096}, num_warps=8))
    accesses = re.findall(r"(?:ld|st)\.shared\S*\s+(?:%\w+, )?\[(%\w+)", ptx)
    assert accesses and all(base.startswith("%r") and not base.startswith("%rd") for base in accesses), accesses
    assert re.search(r"mov\.b32\s+%r\d+, tritium_shared", ptx)


@triton.jit
def _row_ops(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    centered = x - tl.sum(x, axis=1)[:, None] / N
    t = tl.trans(centered)
    s = tl.cumsum(x, axis=1)
    tl.store(out_ptr + rows * N + cols, centered + s + tl.flip(x, 1))
    tl.store(out_ptr + M * N + cols.reshape(N, 1) * M + rows.reshape(1, M), t)


def test_two_dimensional_shape_ops_and_scans_compile():
    compile_for(_row_ops, {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "M": "constexpr", "N": "constexpr"},
                {"M": 16, "N": 64})


@triton.jit
def _everything_else(x_ptr, i_ptr, counter_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(tl.float16).to(tl.bfloat16).to(tl.float8e4nv).to(tl.float32)
    i = tl.load(i_ptr + offs)
    acc = tl.zeros((BLOCK,), tl.float32)
    for k in range(n):
        if k % 2 == 0:
            acc += x * k
        else:
            acc -= tl.sort(x)
    tl.atomic_add(counter_ptr + (i & 7), 1)
    seed = tl.program_id(0)
    r = tl.rand(seed, offs)
    tl.device_assert(i >= 0, "negative index")
    tl.store(out_ptr + offs, acc + r + tl.gather(x, i & (BLOCK - 1), 0) + tl.histogram(i & (BLOCK - 1), BLOCK))
    tl.device_print("acc", acc)


def test_casts_loops_atomics_random_sort_gather_histogram_assert_and_print_compile():
    signature = {"x_ptr": "*fp32:16", "i_ptr": "*i32:16", "counter_ptr": "*i32:16", "out_ptr": "*fp32:16",
                 "n": "i32", "BLOCK": "constexpr"}
    compiled = compile_for(_everything_else, signature, {"BLOCK": 64})
    ptx = body(compiled)
    assert "atom.global" in ptx and "vprintf" in ptx
    assert "atom.sys" not in ptx  # the GPU scope, never the system's


@triton.jit
def _flag(flag_ptr, SEM: tl.constexpr):
    tl.atomic_xchg(flag_ptr, 1, sem=SEM)


@pytest.mark.parametrize("sem, before, after", [("acq_rel", 1, 1), ("release", 1, 0), ("acquire", 0, 1),
                                                ("relaxed", 0, 0)])
def test_atomic_rmw_orderings_are_fences_around_the_atom(sem, before, after):
    """LLVM's NVPTX target drops an atomicrmw's ordering (a relaxed atom): the ordering the op asks
    for must come from fences, or a lock's acquire would not order the loads after it."""
    ptx = body(compile_for(_flag, {"flag_ptr": "*i32:16", "SEM": "constexpr"}, {"SEM": sem}))
    atom = ptx.index("atom.global.exch")
    assert ptx[:atom].count("fence.acq_rel.gpu") == before and ptx[atom:].count("fence.acq_rel.gpu") == after


@triton.jit
def _dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn)
    tl.store(c_ptr + rm * N + rn, tl.dot(a, b))


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_dot_compiles(dtype):
    compile_for(_dot, {"a_ptr": f"*{dtype}:16", "b_ptr": f"*{dtype}:16", "c_ptr": "*fp32:16", "M": "constexpr",
                       "N": "constexpr", "K": "constexpr"}, {"M": 64, "N": 64, "K": 32})


@triton.jit
def _dot_as(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, PRECISION: tl.constexpr,
            OUT: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn)
    tl.store(c_ptr + rm * N + rn, tl.dot(a, b, input_precision=PRECISION, out_dtype=OUT))


@triton.jit
def _batched_dot(a_ptr, b_ptr, c_ptr, Z: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rz = tl.arange(0, Z)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rz * M * K + rm * K + rk[None, None, :])
    b = tl.load(b_ptr + rz * K * N + rk[None, :, None] * N + rn)
    tl.store(c_ptr + rz * M * N + rm * N + rn, tl.dot(a, b))


@triton.jit
def _matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
            PRECISION: tl.constexpr):
    """Triton's tutorial 03 in shape: grouped program order, a loop over K accumulating with tl.dot."""
    pid = tl.program_id(0)
    programs_m = tl.cdiv(M, BLOCK_M)
    programs_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * programs_n
    first_m = pid // in_group * GROUP_M
    group_m = min(programs_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % group_m
    pid_n = (pid % in_group) // group_m
    tl.assume(pid_m >= 0)  # as Triton's tutorial: (pid_n * BLOCK_N + arange) % N then keeps runs of 16
    tl.assume(pid_n >= 0)
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn, c, mask=(cm[:, None] < M) & (cn[None, :] < N))


_MMA = {"fp16": "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "bf16": "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        "fp32": "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
        "i8": "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
        "u8": "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32"}
_LDMATRIX = "ldmatrix.sync.aligned.m8n8.x4.shared.b16"


def _dot_ptx(dtype, m, n, k, num_warps=4, precision="tf32", out="fp32", target=HOPPER):
    out_dtype = {"fp32": tl.float32, "fp16": tl.float16, "i32": tl.int32}[out]
    signature = {"a_ptr": f"*{dtype}:16", "b_ptr": f"*{dtype}:16", "c_ptr": f"*{out}:16", "M": "constexpr",
                 "N": "constexpr", "K": "constexpr", "PRECISION": "constexpr", "OUT": "constexpr"}
    return body(compile_for(_dot_as, signature, {"M": m, "N": n, "K": k, "PRECISION": precision, "OUT": out_dtype},
                            target=target, num_warps=num_warps))


def _mma_count(ptx: str) -> int:
    return len(re.findall(r"\bmma\.sync\.aligned\.", ptx))


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("m,n,k,num_warps", [(16, 16, 16, 4), (64, 64, 32, 4), (128, 128, 64, 8), (32, 128, 16, 4),
                                             (128, 32, 32, 4), (16, 8, 16, 4), (256, 16, 16, 2), (64, 64, 16, 1)])
def test_16_bit_dots_run_on_the_tensor_cores(dtype, m, n, k, num_warps):
    ptx = _dot_ptx(dtype, m, n, k, num_warps)
    assert _MMA[dtype] in ptx
    assert _LDMATRIX in ptx  # A's fragments
    assert "ldmatrix.sync.aligned.m8n8" in ptx and ".trans.shared.b16" in ptx  # B, stored K x N
    assert "fma.rn.f32" not in ptx
    # one mma per 16 x 8 tile a warp holds and per k-step (unrolled); warps past the tiles replicate
    assert _mma_count(ptx) == max(1, (m // 16) * (n // 8) // num_warps) * (k // 16)


@pytest.mark.parametrize("dtype,precision,out,instruction", [
    ("fp32", "tf32", "fp32", "fp32"), ("fp32", "tf32x3", "fp32", "fp32"), ("i8", "ieee", "i32", "i8"),
    ("u8", "ieee", "i32", "u8")])
@pytest.mark.parametrize("m,n,k,num_warps", [(16, 16, 32, 4), (64, 64, 32, 4), (128, 64, 64, 8)])
def test_tf32_and_int8_dots_run_on_the_tensor_cores(dtype, precision, out, instruction, m, n, k, num_warps):
    ptx = _dot_ptx(dtype, m, n, k, num_warps, precision, out)
    assert _MMA[instruction] in ptx and _LDMATRIX in ptx
    assert ".trans" not in ptx  # B stored N x K: 32- and 8-bit words cannot be transposed by ldmatrix
    k_step = 8 if dtype == "fp32" else 32
    per_thread = max(1, (m // 16) * (n // 8) // num_warps) * (k // k_step)
    assert _mma_count(ptx) == per_thread * (3 if precision == "tf32x3" else 1)


def test_an_fp16_result_accumulates_in_fp32_and_rounds_once():
    ptx = _dot_ptx("fp16", 64, 64, 32, out="fp16")
    assert _MMA["fp16"] in ptx and "mma.sync.aligned.m16n8k16.row.col.f16" not in ptx


def test_a_batched_dot_runs_on_the_tensor_cores():
    signature = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp32:16", "Z": "constexpr", "M": "constexpr",
                 "N": "constexpr", "K": "constexpr"}
    for z, m, n, k in [(2, 32, 32, 16), (4, 16, 16, 32), (8, 64, 16, 16)]:
        ptx = body(compile_for(_batched_dot, signature, {"Z": z, "M": m, "N": n, "K": k}))
        assert _MMA["fp16"] in ptx and _LDMATRIX in ptx


def test_what_the_tensor_cores_do_not_cover_stays_on_fmas():
    # fp32 with ieee precision, blocks smaller than one 16 x 8 tile, fp64, and GPUs before sm_80
    for ptx in (_dot_ptx("fp32", 64, 64, 32, precision="ieee"), _dot_ptx("fp16", 8, 16, 16),
                _dot_ptx("fp16", 16, 4, 16), _dot_ptx("fp16", 64, 64, 32, target=GPUTarget("cuda", 75, 32))):
        assert "mma.sync" not in ptx and "fma.rn.f32" in ptx
    assert "mma.sync" not in _dot_ptx("fp64", 16, 16, 16, out="fp32")


def test_a_long_k_goes_round_a_loop_of_k_steps():
    ptx = _dot_ptx("fp16", 16, 16, 1024)  # 64 k-steps
    assert 0 < _mma_count(ptx) < 64


def test_the_tiled_matmul_keeps_its_accumulator_in_the_mma_layout():
    signature = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "M": "i32", "N": "i32", "K": "i32",
                 "stride_am": "i32:16", "stride_ak": "constexpr", "stride_bk": "i32:16", "stride_bn": "constexpr",
                 "stride_cm": "i32:16", "stride_cn": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
                 "BLOCK_K": "constexpr", "GROUP_M": "constexpr", "PRECISION": "constexpr"}
    constants = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32,
                 "GROUP_M": 8, "PRECISION": "ieee"}
    compiled = compile_for(_matmul, signature, constants, num_warps=4)
    ptx = body(compiled)
    assert _MMA["fp16"] in ptx and _LDMATRIX in ptx
    # the loop-carried accumulator takes the dot's layout: no fp32 crosses shared memory (the operands
    # and the result are fp16), and the 64 KB of a 128 x 128 fp32 block is never reserved. Per thread,
    # the fp16 operand tiles and the fp16 result are 64 + 64 + 256 bytes of shared stores in the code
    # (LLVM merges pairs of fp16 into 32-bit stores); a 128 x 128 fp32 accumulator crossing would add 512
    stored = sum(int(vector or "1") * int(bits) // 8
                 for vector, bits in re.findall(r"st\.shared(?:\.v(\d))?\.[bfsu](\d+)", ptx))
    assert stored <= 448, stored
    # and the pointer blocks advanced by the loop keep their access layout: none crosses either
    assert not re.search(r"st\.shared(\.v\d)?\.b64", ptx)
    shared = int(re.match(r"// tritium shared memory bytes: (\d+)", compiled.asm["ptx"]).group(1))
    assert shared < 128 * 128 * 4


_TUTORIAL = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "M": "i32", "N": "i32", "K": "i32",
             "stride_am": "i32:16", "stride_ak": "i32:1", "stride_bk": "i32:16", "stride_bn": "i32:1",
             "stride_cm": "i32:16", "stride_cn": "i32:1", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
             "BLOCK_K": "constexpr", "GROUP_M": "constexpr", "PRECISION": "constexpr"}


def test_ptxas_reports_the_registers_and_spills_of_the_tiled_matmul():
    """``ptxas -v``'s report, kept on the executable: the CI check of registers and spills that the
    tensor-core work (docs/tensor-cores.md, "Register budgets") measures itself by.

    Today's figures (mma.sync with operands stored through shared memory on every iteration, ptxas
    13.5 at -O3 for sm_90a), for this kernel with M, N and K unspecialized (masked K tails) and, in
    brackets, divisible by 16 (``i32:16``, as at 4096^3): registers per thread / spill stores in bytes

    - 64x64x32, 4 warps: 187 / 0 (79 / 0); asserted below: it fits
    - 128x256x64, 8 warps: 255 / 1224 (254 / 0)
    - 128x128x64, 8 warps: 255 / 228 (168 / 0)
    - 128x128x64, 4 warps: 255 / 1844 (255 / 16)

    With N divisible by 16, ``tl.assume(pid_n >= 0)`` keeps ``(pid_n * BLOCK_N + arange) % N`` in runs
    of 16 (a sound analysis cannot know pid_n >= 0), so B is read 16 bytes at a time and only the
    first pointer of each run is carried through the loop (before: 255 / 712, 255 / 0, 255 / 892).
    Unspecialized, ``% N`` breaks the runs, as under Triton.
    """
    if nvptx.ptxas_path() is None:
        pytest.skip("no ptxas here")
    constants = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "PRECISION": "ieee"}
    compiled = compile_for(_matmul, _TUTORIAL, constants, num_warps=4)
    report = compiled.executable.ptxas_report
    assert isinstance(report, nvptx.PtxasReport)
    assert 0 < report.registers <= 255
    assert all(isinstance(n, int) and n >= 0 for n in (report.stack_frame, report.spill_stores, report.spill_loads))
    assert report.spill_stores == report.spill_loads == 0, report.text
    assert report.warnings == ()
    assert "Used" in report.text and "registers" in report.text
    # a kernel loaded from the disk cache reports the same when asked (ptxas runs again on its PTX)
    from tritium.backends import registry

    cached = {stage: compiled.asm[stage] for stage in ("llir", "ptx", "cubin")}
    loaded = registry.get("cuda").load(compiled.ir, cached, compiled.options, compiled.target)
    again = loaded.ptxas_report
    assert (again.registers, again.spill_stores, again.spill_loads) == (report.registers, 0, 0)


@pytest.mark.parametrize("block_m, block_n, block_k, num_warps", [(128, 256, 64, 8), (128, 128, 64, 8),
                                                                   (128, 128, 64, 4)])
def test_tutorial_tiles_do_not_spill_and_copy_their_operands_asynchronously(block_m, block_n, block_k, num_warps):
    """Triton's standard tutorial-03 configs, at sizes the blocks divide (``i32:16``), at Triton's
    default 3 stages: no spills (ptxas ``-v``); A and B go from global memory straight into their
    swizzled shared tiles as 16-byte ``cp.async`` copies (B's N runs survive ``% N`` given
    ``tl.assume(pid_n >= 0)``), pipelined: two tiles' copies before the loop, one group each, then in
    the loop a wait for all but the newest group, one barrier, the next tile's copies and their group;
    no global load goes through registers."""
    if nvptx.ptxas_path() is None:
        pytest.skip("no ptxas here")
    compiled = _tutorial(block_m, block_n, block_k, num_warps)
    report = compiled.executable.ptxas_report
    assert report.spill_stores == report.spill_loads == 0, report.text
    ptx = body(compiled)
    copies = block_k * (block_m + block_n) // (8 * 32 * num_warps)  # 16 bytes = 8 fp16 each
    prologue, loop, after = _loop_parts(ptx)
    assert prologue.count("cp.async.cg.shared.global") == 2 * copies and prologue.count("cp.async.commit_group") == 2
    assert loop.count("cp.async.cg.shared.global") == copies and loop.count("cp.async.commit_group") == 1
    assert loop.count("cp.async.wait_group \t1;") == 1 and loop.count("barrier.sync") == 1
    assert "cp.async.wait_group \t0;" in after and "cp.async.wait_all" not in ptx and "ld.global" not in ptx
    layouts = compiled.asm["layouts"]
    assert layouts.count("#cuda.nvmma<swizzle=128>") == 2  # the ring slots the dot reads (64 fp16 of K, of N)
    slot = block_k * (block_m + block_n) * 2  # bytes of A's and B's tiles
    assert compiled.metadata.shared == 3 * slot  # the epilogue's scratch lies over the rings, as in Triton


def _tutorial(block_m, block_n, block_k, num_warps, **options):
    signature = dict(_TUTORIAL, M="i32:16", N="i32:16", K="i32:16")
    constants = {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k, "GROUP_M": 8, "PRECISION": "ieee"}
    return compile_for(_matmul, signature, constants, num_warps=num_warps, **options)


def _loop_parts(ptx: str) -> tuple[str, str, str]:
    """The PTX before the K loop, its body (from the loop's label to the branch back to it), after it."""
    branch = re.search(r"bra(?:\.uni)?\s+(\$L__BB0_\d+);(?![\s\S]*(?:mma\.sync|mma_async))", ptx)  # the dot's loop
    label = branch.group(1)
    start = ptx.index(label + ":")
    return ptx[:start], ptx[start:branch.end()], ptx[branch.end():]


@pytest.mark.parametrize("num_stages", [1, 2, 3, 4])
def test_the_pipeliner_runs_the_operand_loads_num_stages_minus_1_iterations_ahead(num_stages):
    """``num_stages`` S: S - 1 tiles copied before the loop, a ring of S slots, the loop waiting for
    all but the S - 2 newest groups; S = 1 leaves the loop as it was (copies waited for in the dot)."""
    compiled = _tutorial(128, 128, 32, 4, num_stages=num_stages)
    layouts = compiled.asm["layouts"]
    ptx = body(compiled)
    assert str(compiled.ir) == compiled.asm["ttir"]  # the backend rewrote a copy: the kernel's IR is the tile IR
    if num_stages == 1:
        assert "async_copy" not in layouts and "shared_slot" not in layouts
        assert ptx.count("cp.async.wait_all") == 1
        return
    assert layouts.count("async_commit") == num_stages and f"async_wait {{pending={num_stages - 2}}}" in layouts
    assert layouts.count(f"stages={num_stages}") == 2 * num_stages + 2  # the copies, then the two slots
    prologue, loop, _ = _loop_parts(ptx)
    assert prologue.count("cp.async.commit_group") == num_stages - 1
    assert f"cp.async.wait_group \t{num_stages - 2};" in loop


@triton.jit
def _staged_loop(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a_ptrs = a_ptr + offs[:, None] * K + offs[None, :]
    b_ptrs = b_ptr + offs[:, None] * BLOCK + offs[None, :]
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for _ in tl.range(0, K, BLOCK, num_stages=STAGES):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BLOCK
        b_ptrs += BLOCK * BLOCK
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc)


def test_a_loops_own_num_stages_overrides_the_kernels():
    signature = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp32:16", "K": "i32:16"}
    compiled = compile_for(_staged_loop, signature, {"BLOCK": 64, "STAGES": 4}, num_stages=2)
    layouts = compiled.asm["layouts"]
    assert "async_wait {pending=2}" in layouts and layouts.count("async_commit") == 4
    compiled = compile_for(_staged_loop, signature, {"BLOCK": 64, "STAGES": 1}, num_stages=3)
    assert "async_copy" not in compiled.asm["layouts"]


@triton.jit
def _loop_with_a_reduction(a_ptr, b_ptr, c_ptr, s_ptr, K, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a_ptrs = a_ptr + offs[:, None] * K + offs[None, :]
    b_ptrs = b_ptr + offs[:, None] * BLOCK + offs[None, :]
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for _ in range(0, K, BLOCK):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        total += tl.sum(acc, axis=0)  # across the warps' rows: through shared memory, in the loop
        a_ptrs += BLOCK
        b_ptrs += BLOCK * BLOCK
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc)
    tl.store(s_ptr + offs, total)


def test_scratch_memory_used_while_a_ring_is_live_gets_bytes_of_its_own():
    """A reduction inside the pipelined loop needs the scratch memory while the ring holds tiles in
    flight: the kernel is lowered again with the scratch after the rings."""
    signature = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp32:16", "s_ptr": "*fp32:16", "K": "i32:16"}
    compiled = compile_for(_loop_with_a_reduction, signature, {"BLOCK": 64}, num_warps=4)
    rings = 3 * (64 * 64 * 2) * 2
    assert "async_copy" in compiled.asm["layouts"] and compiled.metadata.shared > rings
    plain = compile_for(_staged_loop, {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp32:16", "K": "i32:16"},
                        {"BLOCK": 64, "STAGES": 3})
    assert plain.metadata.shared == rings


@triton.jit
def _tiles_in_turn(a_ptr, b_ptr, c_ptr, K, TILES, BLOCK: tl.constexpr):
    """A persistent program's shape: an outer loop over tiles, each a pipelined K loop, then a store
    whose layout conversion goes through the scratch memory."""
    offs = tl.arange(0, BLOCK)
    for tile in range(TILES):
        a_ptrs = a_ptr + tile * BLOCK * K + offs[:, None] * K + offs[None, :]
        b_ptrs = b_ptr + offs[:, None] * BLOCK + offs[None, :]
        acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
        for _ in range(0, K, BLOCK):
            acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
            a_ptrs += BLOCK
            b_ptrs += BLOCK * BLOCK
        tl.store(c_ptr + tile * BLOCK * BLOCK + offs[:, None] * BLOCK + offs[None, :], acc.to(tl.float16))


def test_a_pipelined_loop_inside_another_waits_for_the_scratch_before_its_copies():
    """The scratch memory lies over the ring: each entry into the K loop (each tile) waits at a barrier
    for every thread's scratch uses of the tile before, then copies."""
    signature = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "K": "i32:16", "TILES": "i32"}
    compiled = compile_for(_tiles_in_turn, signature, {"BLOCK": 64}, num_warps=4)
    assert compiled.metadata.shared == 3 * (64 * 64 * 2) * 2
    ptx = body(compiled)
    first_copy = ptx.index("cp.async.cg")
    last_barrier = ptx.rindex("barrier.sync", 0, first_copy)
    assert "st.shared" not in ptx[last_barrier:first_copy] and "ld.shared" not in ptx[last_barrier:first_copy]


def test_the_pipelined_loop_keeps_its_stages_in_the_sass():
    """What the hardware runs: in the K loop, LDGSTS for each 16-byte copy, one wait on the copy groups
    (``DEPBAR.LE SB0, 0x1``: all but the newest) and one barrier."""
    if nvptx.ptxas_path() is None or triton.knobs.nvidia.nvdisasm is None:
        pytest.skip("no ptxas or nvdisasm here (the nvidia-cuda-nvcc and nvidia-cuda-nvdisasm wheels)")
    compiled = _tutorial(128, 128, 64, 4)
    sass = nvptx.disassemble(compiled.asm["cubin"])
    back = re.search(r"@!?P\d BRA `\((\.L_x_\d+)\)[^\n]*\n(?![\s\S]*HMMA)", sass) or \
        re.search(r"BRA `\((\.L_x_\d+)\)[^\n]*\n(?![\s\S]*HMMA)", sass)
    loop = sass[sass.index(back.group(1) + ":"):back.end()]
    assert loop.count("LDGSTS") == 64 * (128 + 128) // (8 * 128)
    assert loop.count("DEPBAR.LE SB0, 0x1") == 1 and loop.count("BAR.SYNC") == 1


@pytest.mark.parametrize("block_m, block_n, block_k, num_warps, instruction, count",
                         [(128, 256, 64, 8, "HGMMA.64x256x16.F32", 4), (128, 128, 64, 8, "HGMMA.64x128x16.F32", 4),
                          (128, 128, 64, 4, "HGMMA.64x128x16.F32", 8), (64, 256, 32, 4, "HGMMA.64x256x16.F32", 2)])
def test_wgmma_multiplies_the_tutorial_tiles_from_their_rings(block_m, block_n, block_k, num_warps, instruction,
                                                               count):
    """With wgmma (``wgmma=True``): per K loop iteration one m64nNk16 per warpgroup, 64-row block and
    16-wide K step, read from the ring slots and left running while the next tile's copies go out; the
    rings' copies fenced for the async proxy before the barrier; no spills and no wgmma serialization
    warning from ptxas."""
    if nvptx.ptxas_path() is None or triton.knobs.nvidia.nvdisasm is None:
        pytest.skip("no ptxas or nvdisasm here (the nvidia-cuda-nvcc and nvidia-cuda-nvdisasm wheels)")
    compiled = _tutorial(block_m, block_n, block_k, num_warps, wgmma=True)
    report = compiled.executable.ptxas_report
    assert report.spill_stores == report.spill_loads == 0 and not report.warnings, report.text
    sass = nvptx.disassemble(compiled.asm["cubin"])
    assert sass.count("HGMMA.") == count and sass.count(instruction) == count
    assert "HMMA" not in sass.replace("HGMMA", "")
    assert sass.count("WARPGROUP.ARRIVE") == 1 and sass.count("FENCE.VIEW.ASYNC.S") >= 1
    # asynchronous: in the loop, a wait for all but the group just issued, before the next tile's copies
    # (behind a barrier when two warpgroups read the ring); after it, a wait for none
    assert sass.count("WARPGROUP.DEPBAR.LE gsb0, 0x1") == 1 and sass.count("WARPGROUP.DEPBAR.LE gsb0, 0x0") == 1
    ptx = body(compiled).replace(" \t", " ")
    _, loop, after = _loop_parts(ptx)
    assert loop.count("fence.proxy.async.shared::cta") == 1
    assert loop.count("wgmma.wait_group.sync.aligned 1") == 1 and "wgmma.wait_group.sync.aligned 0" in after
    waited = loop.index("wgmma.wait_group.sync.aligned 1")
    assert "cp.async.cg" not in loop[:waited] and "cp.async.cg" in loop[waited:]
    assert loop.count("barrier.sync") == (2 if num_warps > 4 else 1)
    assert re.search(r"dot_wait %\d+ \{pending=1\}", compiled.asm["layouts"])


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("m, n, k, num_warps, count", [(64, 64, 32, 4, 2), (128, 128, 64, 8, 4), (64, 256, 16, 4, 1),
                                                       (128, 64, 128, 4, 16)])
def test_a_dot_outside_a_loop_takes_wgmma_too(dtype, m, n, k, num_warps, count):
    """Its operands copied into their tiles (no ring): one m64nNk16 per 64-row block and K step."""
    if nvptx.ptxas_path() is None or triton.knobs.nvidia.nvdisasm is None:
        pytest.skip("no ptxas or nvdisasm here (the nvidia-cuda-nvcc and nvidia-cuda-nvdisasm wheels)")
    signature = {"a_ptr": f"*{dtype}:16", "b_ptr": f"*{dtype}:16", "c_ptr": "*fp32:16"}
    compiled = compile_for(_dot_as, signature, {"M": m, "N": n, "K": k, "PRECISION": "ieee", "OUT": tl.float32},
                           num_warps=num_warps, wgmma=True)
    report = compiled.executable.ptxas_report
    assert report.spill_stores == 0 and not report.warnings, report.text
    sass = nvptx.disassemble(compiled.asm["cubin"])
    assert sass.count(f"HGMMA.64x{n}x16.F32") == count and "HMMA" not in sass.replace("HGMMA", "")


def test_wgmma_is_off_unless_asked_for_and_needs_sm_90():
    assert "wgmma" not in body(_tutorial(128, 128, 64, 4))
    assert "wgmma" not in body(_tutorial(128, 128, 64, 4, wgmma=True, target=GPUTarget("cuda", 80, 32)))


def test_the_ptxas_report_is_read_from_its_text():
    text = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k' for 'sm_90a'
ptxas info    : Function properties for k
    560 bytes stack frame, 560 bytes spill stores, 552 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 560 bytes cumulative stack size
ptxas warning : Potential Performance Loss: wgmma.mma_async instructions are serialized
"""
    report = nvptx.parse_report(text)
    assert (report.registers, report.stack_frame, report.spill_stores, report.spill_loads) == (255, 560, 560, 552)
    assert report.warnings == ("Potential Performance Loss: wgmma.mma_async instructions are serialized",)


def test_debug_mode_compiles_a_bounds_checked_variant():
    compiled = compile_for(_add, _ADD, {"BLOCK": 1024})
    checked = compiled.executable.make_checked()
    assert checked.checks and not compiled.executable.checks
    ptx = checked.asm["ptx"]
    entry = ptx[ptx.index(".entry"):ptx.index(")", ptx.index(".entry"))]
    # the four arguments, each pointer's [low, high) byte range, then the error record
    assert entry.count(".param") == 4 + 2 * 3 + 1
    assert re.search(r"atom\.relaxed\.gpu\.global\.cas\.b64", ptx)  # the first failing program claims the record
    assert "v4" not in body(checked)  # lane by lane, each checked


def test_the_stages_of_the_named_backend_without_a_gpu(monkeypatch):
    """`TRITIUM_BACKEND=cuda tritium ir FILE:KERNEL --stage ptx` (kernel.stages) compiles for the GPU
    where there is none."""
    monkeypatch.setenv("TRITIUM_BACKEND", "cuda")
    stages = _add.stages("*fp32:16,*fp32:16,*fp32:16,i32:16", BLOCK=1024)
    assert set(stages) >= {"ttir", "llir", "ptx", "cubin"}
    assert "ptx_kernel" in stages["llir"] and "ld.global.v4.b32" in stages["ptx"]


def test_libdevice_is_the_copy_an_installed_triton_ships(tmp_path, monkeypatch):
    """libdevice versions differ in their polynomials (erf's changed between CUDA releases): the copy
    Triton ships gives Triton's bits, so it comes first; TRITIUM_LIBDEVICE overrides."""
    bundled = tmp_path / "triton" / "backends" / "nvidia" / "lib" / "libdevice.10.bc"
    bundled.parent.mkdir(parents=True)
    bundled.write_bytes(b"BC")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("TRITIUM_LIBDEVICE", raising=False)
    nvptx.libdevice_path.cache_clear()
    try:
        assert nvptx.libdevice_path() == str(bundled)
        monkeypatch.setenv("TRITIUM_LIBDEVICE", "/elsewhere/libdevice.10.bc")
        nvptx.libdevice_path.cache_clear()
        assert nvptx.libdevice_path() == "/elsewhere/libdevice.10.bc"
    finally:
        nvptx.libdevice_path.cache_clear()


@triton.jit
def _wait_for_previous(flags_ptr, out_ptr):
    pid = tl.program_id(0)
    ready = (pid == 0).to(tl.int32)
    while ready == 0:  # a spin wait: the condition depends on memory the loop reads
        ready = tl.load(flags_ptr + pid - 1)
    tl.store(out_ptr + pid, tl.load(out_ptr + pid - 1, mask=pid > 0, other=0) + pid)
    tl.atomic_xchg(flags_ptr + pid, 1)


def test_a_spin_wait_reads_memory_on_every_iteration_with_acquire():
    """A plain load LLVM would hoist out of the loop (which then never ends on a GPU); inside a spin
    wait it is an acquiring load, so the loads after the loop see what the other program wrote."""
    ptx = body(compile_for(_wait_for_previous, {"flags_ptr": "*i32:16", "out_ptr": "*i32:16"}))
    loop = re.search(r"\$L__BB\d+_(\d+):\s*\n\s*ld\.acquire\.gpu\.global\.b32[^\n]*\n(?:[^\n]*\n){0,3}?\s*@%p\d+ bra\s+\$L__BB\d+_\1;",
                     ptx)
    assert loop, ptx


def test_fp32_scalar_arguments_take_the_bits_numpy_rounds_them_to():
    import numpy as np

    from tritium.backends.llvm.types import scalar_bits
    from tritium.compiler.ir import types as T

    for value in (1.5, -0.0, 3.4028235e38, 3.4028236e38, 1e39, -1e39, 1e-46, float("inf")):
        with np.errstate(over="ignore"):
            expected = int(np.array([value]).astype(np.float32).view(np.uint32)[0])
        assert scalar_bits(value, T.float32) == expected, value


def test_the_direct_launchers_scalar_bits_are_those_of_scalar_bits():
    import numpy as np

    from tritium.backends.llvm.types import parameter_plan, scalar_bits
    from tritium.compiler.ir import types as T

    class Argument:
        def __init__(self, dtype):
            self.type = dtype

    dtypes = (T.float32, T.float64, T.float16, T.bfloat16, T.int32, T.int64, T.uint64)
    plan = dict(parameter_plan([str(d) for d in dtypes], [Argument(d) for d in dtypes]))
    for dtype in dtypes:
        values = (0, 1, -1, 7, True, 2**63, -2**63) if dtype.is_int() else \
            (1.5, -0.0, 1e-5, 3.4028236e38, 1e39, -1e39, 1e-46, float("nan"), 7, True, 2**100)
        for value in values:
            with np.errstate(over="ignore"):
                assert plan[str(dtype)](value) == scalar_bits(value, dtype), (dtype, value)


@triton.jit
def _hinted_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr, LOAD: tl.constexpr, STORE: tl.constexpr,
                 EVICT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, cache_modifier=LOAD, eviction_policy=EVICT)
    tl.store(out_ptr + offs, x, mask=offs < n, cache_modifier=STORE, eviction_policy=EVICT)


@pytest.mark.parametrize("load,store,evict,load_op,store_op", [
    (".cg", ".cs", "", "ld.global.cg.v4.b32", "st.global.cs.v4.b32"),
    (".ca", ".wt", "", "ld.global.ca.v4.b32", "st.global.wt.v4.b32"),
    (".cv", ".wb", "", "ld.global.cv.v4.b32", "st.global.wb.v4.b32"),
    ("", "", "evict_last", "ld.global.L1::evict_last.v4.b32", "st.global.L1::evict_last.v4.b32"),
    ("", "", "evict_first", "ld.global.L1::evict_first.v4.b32", "st.global.L1::evict_first.v4.b32"),
    (".cg", "", "evict_first", "ld.global.cg.v4.b32", "st.global.L1::evict_first.v4.b32"),
])
@pytest.mark.parametrize("aligned_n", [True, False])
def test_cache_modifiers_and_eviction_policies_reach_the_instructions(load, store, evict, load_op, store_op,
                                                                      aligned_n):
    signature = {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32:16" if aligned_n else "i32",
                 "BLOCK": "constexpr", "LOAD": "constexpr", "STORE": "constexpr", "EVICT": "constexpr"}
    ptx = body(compile_for(_hinted_copy, signature, {"BLOCK": 1024, "LOAD": load, "STORE": store, "EVICT": evict}))
    if not aligned_n:  # a mask of unknown constancy: one element per access
        load_op, store_op = load_op.replace(".v4", ""), store_op.replace(".v4", "")
    assert load_op in ptx and store_op in ptx
    assert not re.search(r"ld\.global\.(v4\.)?b32", ptx) and not re.search(r"st\.global\.(v4\.)?b32", ptx)


def test_unhinted_unmasked_accesses_stay_llvm_loads_and_stores():
    signature = {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32:16", "BLOCK": "constexpr", "LOAD": "constexpr",
                 "STORE": "constexpr", "EVICT": "constexpr"}
    ptx = body(compile_for(_hinted_copy, signature, {"BLOCK": 1024, "LOAD": "", "STORE": "", "EVICT": ""}))
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx and "::" not in ptx


# inline asm: the asm itself ---------------------------------------------------------------------------
@triton.jit
def _asm_tanh(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f", [tl.load(x_ptr + offs)], dtype=tl.float32,
                                  is_pure=True, pack=1)
    tl.store(out_ptr + offs, y)


@triton.jit
def _asm_bytes_and_floats(a_ptr, b_ptr, c_ptr, d_ptr, BLOCK: tl.constexpr):
    # four uint8 in one register beside four fp32 registers; two results of four registers each
    offs = tl.arange(0, BLOCK)
    c, d = tl.inline_asm_elementwise(
        """
        {
            .reg .b8 byte<4>;
            mov.b32 {byte0, byte1, byte2, byte3}, $8;
            cvt.u32.u8 $0, byte0;
            cvt.u32.u8 $1, byte1;
            cvt.u32.u8 $2, byte2;
            cvt.u32.u8 $3, byte3;
        }
        cvt.rn.f32.s32 $4, $0;
        cvt.rn.f32.s32 $5, $1;
        cvt.rn.f32.s32 $6, $2;
        cvt.rn.f32.s32 $7, $3;
        max.f32 $4, $4, $9;
        max.f32 $5, $5, $10;
        max.f32 $6, $6, $11;
        max.f32 $7, $7, $12;
        """,
        "=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r", [tl.load(a_ptr + offs), tl.load(b_ptr + offs)],
        dtype=(tl.int32, tl.float32), is_pure=True, pack=4)
    tl.store(c_ptr + offs, c)
    tl.store(d_ptr + offs, d)


@triton.jit
def _asm_half2(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr, PACK: tl.constexpr, CONSTRAINTS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = tl.inline_asm_elementwise("add.rn.f16x2 $0, $1, $2;", CONSTRAINTS,
                                  [tl.load(a_ptr + offs), tl.load(b_ptr + offs)], dtype=tl.float16, is_pure=True,
                                  pack=PACK)
    tl.store(out_ptr + offs, y)


def test_inline_asm_is_the_asm_itself():
    ptx = body(compile_for(_asm_tanh, {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "BLOCK": "constexpr"},
                           {"BLOCK": 1024}))
    assert ptx.count("tanh.approx.f32") == 1024 // (32 * 4)  # one per register of a thread
    assert "ex2" not in ptx  # not the emulation (libdevice's tanh)


def test_inline_asm_packs_narrow_elements_into_32_bit_registers():
    signature = {"a_ptr": "*u8:16", "b_ptr": "*fp32:16", "c_ptr": "*i32:16", "d_ptr": "*fp32:16", "BLOCK": "constexpr"}
    ptx = body(compile_for(_asm_bytes_and_floats, signature, {"BLOCK": 512}))
    assert ptx.count("cvt.u32.u8") == 4 * 512 // 128 and ptx.count("max.f32") == 4 * 512 // 128
    signature = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "out_ptr": "*fp16:16", "BLOCK": "constexpr",
                 "PACK": "constexpr", "CONSTRAINTS": "constexpr"}
    ptx = body(compile_for(_asm_half2, signature, {"BLOCK": 1024, "PACK": 2, "CONSTRAINTS": "=r,r,r"}))
    assert ptx.count("add.rn.f16x2") == 1024 // 128 // 2  # two fp16 in each 32-bit register


def test_inline_asm_constraints_must_match_the_registers():
    signature = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "out_ptr": "*fp16:16", "BLOCK": "constexpr",
                 "PACK": "constexpr", "CONSTRAINTS": "constexpr"}
    with pytest.raises(triton.CompilationError) as info:
        compile_for(_asm_half2, signature, {"BLOCK": 1024, "PACK": 2, "CONSTRAINTS": "=r,r,r,r"})
    assert "give 1 outputs and 3 inputs" in str(info.value) and "tl.inline_asm_elementwise(" in str(info.value)


def test_validation_runs_a_cuda_kernels_inline_asm_on_the_interpreters_emulation():
    # TRITIUM_VALIDATE=interpreter re-runs a launch on the interpreter: the CUDA kernel's IR keeps its
    # inline_asm op, so the reference gets the host's rewrite of it (and a clear error for other asm)
    from tritium.backends import registry
    from tritium.runtime import validate

    compiled = compile_for(_asm_tanh, {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "BLOCK": "constexpr"},
                           {"BLOCK": 128})
    assert any(op.opcode == "inline_asm" for op in compiled.ir.walk())
    reference = validate._reference_ir(compiled, "interpreter", registry.get("interpreter"))
    assert not any(op.opcode == "inline_asm" for op in reference.walk())
    assert any(op.opcode == "inline_asm" for op in compiled.ir.walk())  # the kernel's own IR untouched
    registry.get("interpreter").compile(reference, registry.get("interpreter").parse_options({}), compiled.target)
    signature = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "out_ptr": "*fp16:16", "BLOCK": "constexpr",
                 "PACK": "constexpr", "CONSTRAINTS": "constexpr"}
    packed = compile_for(_asm_half2, signature, {"BLOCK": 256, "PACK": 2, "CONSTRAINTS": "=r,r,r"})
    from tritium.errors import ValidationError

    with pytest.raises(ValidationError, match="not emulated"):
        validate._reference_ir(packed, "interpreter", registry.get("interpreter"))


@triton.jit
def _short_k_dot(a_ptr, b_ptr, c_ptr, K: tl.constexpr):
    r, rk = tl.arange(0, 16), tl.arange(0, K)
    a = tl.load(a_ptr + r[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * 16 + r[None, :])
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b))


@pytest.mark.parametrize("element,k,minimum", [("fp16", 8, 16), ("fp32", 4, 8), ("i8", 16, 32)])
def test_a_dot_with_k_below_the_tensor_cores_tile_is_a_compile_error_in_tritons_words(element, k, minimum):
    """The host backends take any K; the CUDA backend refuses what its tensor-core tiles cannot take."""
    signature = f"*{element},*{element},*{'i32' if element == 'i8' else 'fp32'}"
    with pytest.raises(triton.CompilationError, match=f"Input shapes should have M >= 1, N >= 1 and K >= {minimum}") \
            as info:
        compile_for(_short_k_dot, signature, constexprs={"K": k})
    assert "tl.dot(a, b)" in str(info.value) and "^" in str(info.value)
    compile_for(_short_k_dot, signature, constexprs={"K": minimum})  # the minimum itself compiles
