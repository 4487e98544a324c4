"""A flash-attention forward (Triton tutorial 06's online softmax: scores in base 2, running row
maximum and sum, the accumulator rescaled every block; causal or not), written once and imported under
a compiler of choice: ``load("tritium").attention_fwd`` or ``load("triton").attention_fwd``, for the
benchmarks that compare them or read what one compiler makes of it. Q, K, V and the output are fp16
tensors of shape (batch, heads, seq_len, HEAD_DIM) with the same strides; ``launch`` runs it.
``attention_fwd_descriptors`` is the same through host tensor descriptors over the (batch * heads *
seq_len, HEAD_DIM) rows, K transposed after its load and the causal case in two loops (the shape of
the tutorial's TMA variant); ``launch_descriptors`` runs it (contiguous tensors).
"""
from __future__ import annotations

import importlib.util
import os
import tempfile

SOURCE = '''
import {lib} as triton
import {lib}.language as tl


@triton.jit
def attention_fwd(Q, K, V, Out, sm_scale, stride_z, stride_h, stride_m, H, N_CTX, HEAD_DIM: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    tl.assume(stride_z > 0)
    tl.assume(stride_h > 0)
    tl.assume(stride_m > 0)
    offset = (off_hz // H).to(tl.int64) * stride_z + (off_hz % H).to(tl.int64) * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + offset + offs_m[:, None] * stride_m + offs_d[None, :])
    k_ptrs = K + offset + offs_n[None, :] * stride_m + offs_d[:, None]
    v_ptrs = V + offset + offs_n[:, None] * stride_m + offs_d[None, :]
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = (start_m + 1) * BLOCK_M if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        k = tl.load(k_ptrs + start_n * stride_m)
        qk = tl.dot(q, k)
        if CAUSAL:
            qk = qk * qk_scale + tl.where(offs_m[:, None] >= start_n + offs_n[None, :], 0.0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_ptrs + start_n * stride_m)
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + offset + offs_m[:, None] * stride_m + offs_d[None, :], acc.to(tl.float16))


@triton.jit
def _keys(acc, m_i, l_i, q, desc_k, desc_v, row0, qk_scale, lo, hi, offs_m, BLOCK_N: tl.constexpr,
          DIAGONAL: tl.constexpr):
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(lo, hi, BLOCK_N):
        kt = desc_k.load([row0 + start_n, 0]).T
        qk = tl.dot(q, kt) * qk_scale
        if DIAGONAL:
            qk = tl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk, -1.0e6)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(tl.float16), desc_v.load([row0 + start_n, 0]), acc * alpha[:, None])
        m_i = m_ij
    return acc, m_i, l_i


@triton.jit
def attention_fwd_descriptors(desc_q, desc_k, desc_v, desc_o, sm_scale, N_CTX, HEAD_DIM: tl.constexpr,
                              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    row0 = tl.program_id(1) * N_CTX
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    q = desc_q.load([row0 + start_m * BLOCK_M, 0])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    if CAUSAL:
        acc, m_i, l_i = _keys(acc, m_i, l_i, q, desc_k, desc_v, row0, qk_scale, 0, start_m * BLOCK_M, offs_m,
                              BLOCK_N, False)
        acc, m_i, l_i = _keys(acc, m_i, l_i, q, desc_k, desc_v, row0, qk_scale, start_m * BLOCK_M,
                              (start_m + 1) * BLOCK_M, offs_m, BLOCK_N, True)
    else:
        acc, m_i, l_i = _keys(acc, m_i, l_i, q, desc_k, desc_v, row0, qk_scale, 0, N_CTX, offs_m, BLOCK_N, False)
    desc_o.store([row0 + start_m * BLOCK_M, 0], (acc / l_i[:, None]).to(tl.float16))
'''


def load(lib: str):
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, f"attention_{lib}.py")
    with open(path, "w") as f:
        f.write(SOURCE.format(lib=lib))
    spec = importlib.util.spec_from_file_location(f"attention_{lib}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launch(kernel, q, k, v, out, causal: bool, block_m: int, block_n: int, num_warps: int, num_stages: int,
           **options):
    """Run ``kernel`` (an ``attention_fwd``) over (batch, heads, seq_len, head_dim) tensors; seq_len must
    be a multiple of ``block_m`` and ``block_n``."""
    batch, heads, seq_len, head_dim = q.shape
    grid = (seq_len // block_m, batch * heads)
    return kernel[grid](q, k, v, out, head_dim ** -0.5, q.stride(0), q.stride(1), q.stride(2), heads, seq_len,
                        HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal, num_warps=num_warps,
                        num_stages=num_stages, **options)


def launch_descriptors(kernel, lib: str, q, k, v, out, causal: bool, block_m: int, block_n: int, num_warps: int,
                       num_stages: int, **options):
    """Run ``kernel`` (an ``attention_fwd_descriptors`` of compiler ``lib``) over contiguous (batch,
    heads, seq_len, head_dim) tensors through host tensor descriptors."""
    import importlib

    descriptor = importlib.import_module(f"{lib}.tools.tensor_descriptor").TensorDescriptor
    batch, heads, seq_len, head_dim = q.shape

    def rows(x, block):
        return descriptor.from_tensor(x.view(batch * heads * seq_len, head_dim), [block, head_dim])

    grid = (seq_len // block_m, batch * heads)
    return kernel[grid](rows(q, block_m), rows(k, block_n), rows(v, block_n), rows(out, block_m), head_dim ** -0.5,
                        seq_len, HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
                        num_warps=num_warps, num_stages=num_stages, **options)
