"""The benchmark's kernels, written once against Triton's API.

This file imports ``triton`` and ``triton.language``. Under real Triton (with
``TRITON_INTERPRET=1`` on CPU tensors) those are Triton itself; under tritium, call
``tritium.compat.install()`` before importing this module and they resolve to tritium.
Nothing here knows which of the two runs it.
"""
import triton
import triton.language as tl

INV_SQRT2 = tl.constexpr(0.7071067811865476)  # 1 / sqrt(2)
INV_SQRT_2PI = tl.constexpr(0.3989422804014327)  # 1 / sqrt(2 * pi)
LOG2E = tl.constexpr(1.4426950408889634)  # log2(e): exp(x) == exp2(x * LOG2E)


# --- elementwise -------------------------------------------------------------------------------

@triton.jit
def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    in_range = idx < n
    lhs = tl.load(x_ptr + idx, mask=in_range)
    rhs = tl.load(y_ptr + idx, mask=in_range)
    tl.store(out_ptr + idx, lhs + rhs, mask=in_range)


@triton.jit
def gelu_fwd(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """Exact GELU: x * Phi(x), with Phi(x) = (1 + erf(x / sqrt 2)) / 2."""
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    in_range = idx < n
    x = tl.load(x_ptr + idx, mask=in_range, other=0.0)
    phi = 0.5 * (1.0 + tl.math.erf(x * INV_SQRT2))
    tl.store(y_ptr + idx, x * phi, mask=in_range)


@triton.jit
def gelu_bwd(dy_ptr, x_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    """dx = dy * d/dx[x * Phi(x)] = dy * (Phi(x) + x * phi(x)), phi the standard normal density."""
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    in_range = idx < n
    x = tl.load(x_ptr + idx, mask=in_range, other=0.0)
    dy = tl.load(dy_ptr + idx, mask=in_range, other=0.0)
    cdf = 0.5 * (1.0 + tl.math.erf(x * INV_SQRT2))
    density = INV_SQRT_2PI * tl.exp(-0.5 * x * x)
    tl.store(dx_ptr + idx, dy * (cdf + x * density), mask=in_range)


# --- one row per program -----------------------------------------------------------------------

@triton.jit
def softmax_rows(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    col = tl.arange(0, BLOCK)
    valid = col < n_cols
    vals = tl.load(x_ptr + row * x_row_stride + col, mask=valid, other=float("-inf"))
    shifted = vals - tl.max(vals, axis=0)  # the row max: exp never overflows
    e = tl.exp(shifted)
    denom = tl.sum(e, axis=0)
    tl.store(y_ptr + row * y_row_stride + col, e / denom, mask=valid)


@triton.jit
def layernorm_rows(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, row_stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    col = tl.arange(0, BLOCK)
    valid = col < n_cols
    vals = tl.load(x_ptr + row * row_stride + col, mask=valid, other=0.0)
    mean = tl.sum(vals, axis=0) / n_cols
    dev = tl.where(valid, vals - mean, 0.0)
    var = tl.sum(dev * dev, axis=0) / n_cols  # biased variance, as torch's layer_norm
    inv_std = 1.0 / tl.sqrt(var + eps)
    gamma = tl.load(w_ptr + col, mask=valid, other=0.0)
    beta = tl.load(b_ptr + col, mask=valid, other=0.0)
    tl.store(y_ptr + row * row_stride + col, dev * inv_std * gamma + beta, mask=valid)


# --- tiled matmul ------------------------------------------------------------------------------

@triton.jit
def matmul_tiled(a_ptr, b_ptr, c_ptr, M, N, K,
                 s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
                 TILE_M: tl.constexpr, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    """C[M, N] = A[M, K] @ B[K, N]: one TILE_M x TILE_N tile of C per program, fp32 accumulator,
    stored in C's element type (so fp16 inputs give an fp16 C with fp32 accumulation)."""
    tile_m = tl.program_id(0)
    tile_n = tl.program_id(1)
    m_idx = tile_m * TILE_M + tl.arange(0, TILE_M)
    n_idx = tile_n * TILE_N + tl.arange(0, TILE_N)
    k_idx = tl.arange(0, TILE_K)
    a_tile = a_ptr + m_idx[:, None] * s_am + k_idx[None, :] * s_ak
    b_tile = b_ptr + k_idx[:, None] * s_bk + n_idx[None, :] * s_bn
    acc = tl.zeros((TILE_M, TILE_N), dtype=tl.float32)
    for k0 in range(0, K, TILE_K):
        k_left = K - k0
        a = tl.load(a_tile, mask=(m_idx[:, None] < M) & (k_idx[None, :] < k_left), other=0.0)
        b = tl.load(b_tile, mask=(k_idx[:, None] < k_left) & (n_idx[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += TILE_K * s_ak
        b_tile += TILE_K * s_bk
    c = acc.to(c_ptr.dtype.element_ty)
    c_mask = (m_idx[:, None] < M) & (n_idx[None, :] < N)
    tl.store(c_ptr + m_idx[:, None] * s_cm + n_idx[None, :] * s_cn, c, mask=c_mask)


# --- causal attention with an online softmax ---------------------------------------------------

@triton.jit
def causal_attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, scale,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """O = softmax(Q K^T * scale, causal) V for one (batch*head, BLOCK_M query rows) per program.

    Q, K, V, O are contiguous [batch*heads, seq_len, HEAD_DIM]. Keys are visited BLOCK_N at a
    time, only up to the diagonal; a running row max and row sum rescale what was accumulated so
    far whenever a new block raises the max, so the full score row never exists at once."""
    q_block = tl.program_id(0)
    head = tl.program_id(1)
    base = head * seq_len * HEAD_DIM
    q_rows = q_block * BLOCK_M + tl.arange(0, BLOCK_M)
    dim = tl.arange(0, HEAD_DIM)
    q_ok = q_rows < seq_len
    q = tl.load(q_ptr + base + q_rows[:, None] * HEAD_DIM + dim[None, :], mask=q_ok[:, None], other=0.0)
    q = q * (scale * LOG2E)  # fold the softmax scale and the base change for exp2 into Q once

    run_max = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    run_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    kv_end = tl.minimum((q_block + 1) * BLOCK_M, seq_len)  # causal: no key past the last query row
    for kv_start in range(0, kv_end, BLOCK_N):
        kv_rows = kv_start + tl.arange(0, BLOCK_N)
        kv_ok = kv_rows < seq_len
        k_t = tl.load(k_ptr + base + kv_rows[None, :] * HEAD_DIM + dim[:, None], mask=kv_ok[None, :], other=0.0)
        scores = tl.dot(q, k_t)  # [BLOCK_M, BLOCK_N], already in log2 units
        visible = (kv_rows[None, :] <= q_rows[:, None]) & kv_ok[None, :]
        scores = tl.where(visible, scores, float("-inf"))
        new_max = tl.maximum(run_max, tl.max(scores, axis=1))
        rescale = tl.exp2(run_max - new_max)  # 0 on the first block (run_max = -inf)
        probs = tl.exp2(scores - new_max[:, None])
        run_sum = run_sum * rescale + tl.sum(probs, axis=1)
        v = tl.load(v_ptr + base + kv_rows[:, None] * HEAD_DIM + dim[None, :], mask=kv_ok[:, None], other=0.0)
        acc = tl.dot(probs, v, acc * rescale[:, None])
        run_max = new_max
    out = acc / run_sum[:, None]
    tl.store(o_ptr + base + q_rows[:, None] * HEAD_DIM + dim[None, :], out, mask=q_ok[:, None])
