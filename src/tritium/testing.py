"""Helpers for testing and timing kernels: ``assert_close`` and ``do_bench``."""
from __future__ import annotations

import time

import numpy as np


def _to_numpy(x):
    if hasattr(x, "detach"):
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
        return x.numpy()
    return np.asarray(x)


def assert_close(x, y, atol=None, rtol=None, err_msg=""):
    """Asserts ``|x - y| <= atol + rtol * |y|`` elementwise (defaults: atol 1e-2, rtol 0)."""
    a = _to_numpy(x).astype(np.float64)
    b = _to_numpy(y).astype(np.float64)
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    np.testing.assert_allclose(a, b, atol=atol, rtol=rtol, equal_nan=True, err_msg=err_msg)


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """Times ``fn`` in milliseconds: ``warmup`` ms of warm-up, then about ``rep`` ms of runs."""
    start = time.perf_counter()
    fn()
    estimate = max(1e-6, time.perf_counter() - start)
    for _ in range(max(0, int(warmup / 1000 / estimate))):
        fn()
    runs = max(1, int(rep / 1000 / estimate))
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    data = np.array(times)
    if quantiles is not None:
        values = [float(np.quantile(data, q)) for q in quantiles]
        return values[0] if len(values) == 1 else values
    return float(getattr(np, return_mode)(data))
