"""Flash attention's forward on the CUDA backend: what its two dots become (Q copied once into its
tile, K^T and V pipelined through rings, K^T stored K-major, P read by wgmma from registers, the
running maximum and sum kept in the score dot's row layout), checked in the PTX and SASS here, and on
a GPU against an fp64 attention.
"""
from __future__ import annotations

import pathlib
import re
import sys

import pytest

import tritium as triton
import tritium.language as tl
from tritium.backends.cuda import nvptx
from tritium.compiler import ASTSource
from test_cuda_ptx import HOPPER, _loop_parts, body, compile_for


# the kernels the benchmarks time (benchmarks/attention.py), under tritium: a pointer kernel, K^T loaded
# with K contiguous; and one through tensor descriptors, K transposed after its load, the causal case in
# two loops reading one Q
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "benchmarks"))
from attention import load  # noqa: E402

_kernels = load("tritium")
_attention, _attention_descriptors = _kernels.attention_fwd, _kernels.attention_fwd_descriptors


SIGNATURE = {"Q": "*fp16:16", "K": "*fp16:16", "V": "*fp16:16", "Out": "*fp16:16", "sm_scale": "fp32",
             "stride_z": "i32:16", "stride_h": "i32:16", "stride_m": "i32:16", "H": "i32", "N_CTX": "i32:16"}


def _compiled(head_dim, block_m, block_n, num_warps, num_stages, causal=False, **options):
    constants = {"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n, "CAUSAL": causal}
    return compile_for(_attention, {**SIGNATURE, **{name: "constexpr" for name in constants}}, constants,
                       num_warps=num_warps, num_stages=num_stages, **options)


def _compiled_with_descriptors(head_dim, block_m, block_n, num_warps, num_stages, causal=False, **options):
    """As launched with descriptors whose base is 16-byte aligned and whose shape and strides are
    multiples of 16 (what the launch specializes them on)."""
    from tritium.language.tensor_descriptor import tensor_descriptor_type

    def descriptor(rows):
        return tensor_descriptor_type(tl.float16, (rows, head_dim), "")

    signature = {"desc_q": descriptor(block_m), "desc_k": descriptor(block_n), "desc_v": descriptor(block_n),
                 "desc_o": descriptor(block_m), "sm_scale": "fp32", "N_CTX": "i32:16"}
    constants = {"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n, "CAUSAL": causal}
    signature.update({name: "constexpr" for name in constants})
    attrs = {f"desc_{x}.{part}": {"divisibility": 16} for x in "qkvo" for part in ("base", "shape0", "shape1",
                                                                                  "stride0")}
    return triton.compile(ASTSource(_attention_descriptors, signature, constexprs=constants, attrs=attrs),
                          target=HOPPER, options={"num_warps": num_warps, "num_stages": num_stages, **options})


def test_a_transposed_descriptor_load_is_copied_k_major_into_its_ring():
    """``desc_k.load(...).T`` reads K^T as it lies (transposed_loads.py): one ring of K-major tiles."""
    layouts = _compiled_with_descriptors(64, 128, 64, 8, 3).asm["layouts"]
    assert re.search(r"shared_slot %\d+ \{ring=0, stages=3, operand='b'.*#cuda\.nvmma<swizzle=128, transposed>",
                     layouts)
    assert re.search(r"shared_slot %\d+ \{ring=1, stages=3, operand='b'.*#cuda\.nvmma<swizzle=128>>", layouts)
    assert "= load " not in layouts.split("= for ")[1]  # both of the loop's loads are copies into rings


def test_two_loops_read_one_q_tile_and_their_rings_share_bytes():
    """The causal kernel's two loops: Q copied once into one tile both dots read; the second loop's
    rings lie over the first's (the wait after a loop synchronizes): with P in registers (wgmma), no
    more shared memory than one loop's."""
    one = _compiled_with_descriptors(64, 128, 64, 8, 3, wgmma=True)
    two = _compiled_with_descriptors(64, 128, 64, 8, 3, causal=True, wgmma=True)
    layouts = two.asm["layouts"]
    assert re.search(r"= load %\d+, mask=%\d+, other=%\d+ : <128x64xfp16, #cuda\.nvmma<swizzle=128>>", layouts)
    assert layouts.count("shared_slot") == 4 and layouts.count("= for ") == 2
    assert two.metadata.shared == one.metadata.shared


def _needs_sass():
    if nvptx.ptxas_path() is None or triton.knobs.nvidia.nvdisasm is None:
        pytest.skip("no ptxas or nvdisasm here (the nvidia-cuda-nvcc and nvidia-cuda-nvdisasm wheels)")


def test_k_transposed_is_copied_k_major_and_k_and_v_run_ahead_in_rings():
    compiled = _compiled(64, 128, 64, 8, 3)
    layouts = compiled.asm["layouts"]
    # K^T (HEAD_DIM x BLOCK_N, HEAD_DIM contiguous in memory) lies in its tile as it lies in memory
    assert re.search(r"shared_slot %\d+ \{ring=0, stages=3, operand='b'.*#cuda\.nvmma<swizzle=128, transposed>",
                     layouts)
    assert re.search(r"shared_slot %\d+ \{ring=1, stages=3, operand='b'.*#cuda\.nvmma<swizzle=128>>", layouts)
    # each ring: two tiles ahead before the loop, one per iteration in it; Q copied once, not a ring
    assert layouts.count("async_copy") == 2 * 2 + 2
    assert re.search(r"= load %\d+ : <128x64xfp16, #cuda\.nvmma<swizzle=128>>", layouts)


def test_the_running_maximum_and_sum_keep_the_score_dots_row_layout():
    """No conversion through shared memory per iteration: m_i and l_i are carried in the slice of the
    dot's layout that the row reductions give."""
    for wgmma in (False, True):
        layouts = _compiled(64, 128, 64, 8, 3, wgmma=wgmma).asm["layouts"]
        carried = re.search(r"= for [^:]*: (.*)", layouts).group(1)
        assert carried.count("#cuda.slice<") == 2 and "#cuda.blocked" not in carried, carried


@pytest.mark.parametrize("head_dim, block_m, block_n, num_warps, num_stages", [(64, 128, 64, 8, 3), (128, 128, 64, 8, 3)])
def test_mma_sync_reads_p_from_registers(head_dim, block_m, block_n, num_warps, num_stages):
    """With mma.sync the two dots split their warps along M alone (assign.chained_dots), so P's
    registers are the second dot's A fragments: the loop stores nothing to shared memory (its tiles
    arrive by cp.async), and the kernel needs no more of it than with wgmma."""
    compiled = _compiled(head_dim, block_m, block_n, num_warps, num_stages)
    _, loop, _ = _loop_parts(body(compiled).replace(" \t", " "))
    assert "mma.sync" in loop and "cp.async.cg" in loop and "st.shared" not in loop
    assert compiled.metadata.shared == _compiled(head_dim, block_m, block_n, num_warps, num_stages,
                                                 wgmma=True).metadata.shared


@pytest.mark.parametrize("head_dim, block_m, block_n, num_warps, num_stages",
                         [(64, 128, 64, 8, 3), (128, 128, 128, 8, 2), (64, 64, 64, 4, 3)])
def test_wgmma_reads_k_major_k_from_its_ring_and_p_from_registers(head_dim, block_m, block_n, num_warps,
                                                                   num_stages):
    """Q K^T from two descriptors, K^T K-major (no .tnspB); P V with P in registers (the "RS" form) and
    V N-major; no spills, no serialization warning."""
    _needs_sass()
    compiled = _compiled(head_dim, block_m, block_n, num_warps, num_stages, wgmma=True)
    report = compiled.executable.ptxas_report
    assert report.spill_stores == report.spill_loads == 0 and not report.warnings, report.text
    sass = nvptx.disassemble(compiled.asm["cubin"])
    rows_per_group = block_m // (num_warps // 4)
    first = re.findall(rf"HGMMA\.64x{block_n}x16\.F32 R\d+, gdesc\[UR\d+\], (?:RZ|R\d+)", sass)
    second = re.findall(rf"HGMMA\.64x{head_dim}x16\.F32 R\d+, R\d+, gdesc\[UR\d+\]\.tnspB, R\d+", sass)
    assert len(first) == rows_per_group // 64 * head_dim // 16
    assert len(second) == rows_per_group // 64 * block_n // 16
    assert sass.count("HGMMA.") == len(first) + len(second)


torch = pytest.importorskip("torch")
from tritium.backends import registry  # noqa: E402

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available() or not registry.get("cuda").is_available(),
                               reason="no CUDA GPU here")


def _assert_attention(out, q, k, v, causal):
    """Against attention in fp64: P is rounded to fp16 before P V (2^-11 relative each, in the weighted
    sum of |v|) and the output to fp16 (2^-11 relative); the bound allows twice both."""
    expected, weighted = _reference(q, k, v, causal)
    bound = 2.0 ** -9 * weighted + 2.0 ** -10 * expected.abs() + 2.0 ** -14
    error = (out.double() - expected).abs()
    assert (error <= bound).all(), f"largest error {error.max().item():.3g}"


def _reference(q, k, v, causal):
    q, k, v = q.double(), k.double(), v.double()
    scores = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
    if causal:
        n = q.shape[-2]
        scores = scores.masked_fill(torch.ones(n, n, device=q.device).tril() == 0, float("-inf"))
    p = torch.softmax(scores, -1)
    return p @ v, p @ v.abs()


@needs_gpu
@pytest.mark.parametrize("wgmma", [False, True])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq_len", [128, 384])
@pytest.mark.parametrize("head_dim, block_m, block_n, num_warps, num_stages",
                         [(64, 128, 64, 8, 3), (64, 64, 64, 4, 2), (128, 128, 64, 8, 3), (128, 128, 128, 8, 2),
                          (64, 128, 128, 8, 4), (64, 128, 64, 4, 1)])
def test_attention_forward_on_the_gpu(head_dim, block_m, block_n, num_warps, num_stages, seq_len, causal, wgmma):
    """Against attention in fp64 (``_assert_attention``). Short sequences: fewer iterations than
    stages."""
    generator = torch.Generator(device="cuda").manual_seed(seq_len + head_dim + block_n)
    q, k, v = (torch.randn(2, 3, seq_len, head_dim, device="cuda", generator=generator).half() for _ in range(3))
    out = torch.full_like(q, float("nan"))
    grid = (seq_len // block_m, 2 * 3)
    _attention[grid](q, k, v, out, head_dim ** -0.5, q.stride(0), q.stride(1), q.stride(2), 3, seq_len,
                     HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal, num_warps=num_warps,
                     num_stages=num_stages, wgmma=wgmma)
    _assert_attention(out, q, k, v, causal)


@needs_gpu
@pytest.mark.parametrize("wgmma", [False, True])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim, block_m, block_n, num_warps, num_stages",
                         [(64, 128, 64, 8, 3), (128, 128, 64, 8, 2), (64, 64, 64, 4, 4)])
def test_attention_through_tensor_descriptors_on_the_gpu(head_dim, block_m, block_n, num_warps, num_stages, causal,
                                                         wgmma):
    """K read transposed through its descriptor, Q shared by the causal kernel's two loops, whose rings
    share their bytes: against fp64 attention, with the bound of the pointer kernel's test."""
    from tritium.tools.tensor_descriptor import TensorDescriptor

    batch_heads, seq_len = 4, 512
    generator = torch.Generator(device="cuda").manual_seed(head_dim + block_n + num_stages)
    q, k, v = (torch.randn(1, batch_heads, seq_len, head_dim, device="cuda", generator=generator).half()
               for _ in range(3))
    out = torch.full_like(q, float("nan"))

    def rows(x, block):
        return TensorDescriptor.from_tensor(x.view(batch_heads * seq_len, head_dim), [block, head_dim])

    _attention_descriptors[(seq_len // block_m, batch_heads)](
        rows(q, block_m), rows(k, block_n), rows(v, block_n), rows(out, block_m), head_dim ** -0.5, seq_len,
        HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal, num_warps=num_warps,
        num_stages=num_stages, wgmma=wgmma)
    _assert_attention(out, q, k, v, causal)
