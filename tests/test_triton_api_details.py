"""Pieces of Triton's API that code generators and libraries use, each used as they use it."""
from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium import knobs


@triton.jit
def _log2_block(out_ptr, BLOCK: tl.constexpr):
    # Inductor's sort helpers size their stages with tl.standard._log2 of a constexpr
    stages: tl.constexpr = tl.standard._log2(BLOCK)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.full([BLOCK], stages, tl.int32))


@triton.constexpr_function
def _twice(n):
    return 2 * n


@triton.jit
def _uses_a_constexpr_function(out_ptr, N: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, _twice(N)), tl.full([_twice(N)], _twice(N), tl.int32))


@triton.jit
def _passes_a_run_time_value(out_ptr, n):
    tl.store(out_ptr, _twice(n))  # ERR


def test_constexpr_functions_run_at_compile_time_and_from_python(backend):
    for block, expected in ((1, 0), (2, 1), (64, 6), (1024, 10)):
        out = torch.zeros(block, dtype=torch.int32)
        _log2_block[(1,)](out, BLOCK=block)
        assert out.tolist() == [expected] * block
    assert tl.standard._log2(4096) == 12 and tl.standard._is_power_of_two(48) is False
    assert tl.standard._log2(tl.constexpr(8)) == 3  # unwrapped when called from Python
    out = torch.zeros(8, dtype=torch.int32)
    _uses_a_constexpr_function[(1,)](out, N=4)
    assert out.tolist() == [8] * 8
    from tritium.runtime.jit import constexpr_function
    assert constexpr_function is triton.constexpr_function


def test_a_constexpr_function_given_a_run_time_value_names_the_line():
    with pytest.raises(triton.CompilationError) as info:
        _passes_a_run_time_value[(1,)](torch.zeros(1, dtype=torch.int32), 3)
    message = str(info.value)
    assert "@triton.constexpr_function" in message and "_twice(n))  # ERR" in message


def test_triton_runtime_jit_is_the_module():
    module = importlib.import_module("tritium.runtime.jit")
    assert triton.runtime.jit is module
    assert triton.runtime.jit.JITFunction is triton.JITFunction
    assert callable(triton.jit) and triton.jit is module.jit


def test_jit_function_source_starts_at_def():
    assert _log2_block.src.startswith("def _log2_block(out_ptr, BLOCK: tl.constexpr):\n")
    compile(_log2_block.src, "<src>", "exec")  # re-parsable alone, as Inductor re-parses it


@triton.jit
def _fill(out_ptr, value, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BLOCK), value)


def test_launch_hooks_run_around_every_launch(backend):
    calls = []
    out = torch.zeros(4)
    with knobs.runtime.scope():
        knobs.runtime.launch_enter_hook = lambda metadata: calls.append(("enter", metadata["name"],
                                                                          out.sum().item()))
        knobs.runtime.launch_exit_hook = lambda metadata: calls.append(("exit", metadata["grid"], out.sum().item()))
        _fill[(1,)](out, 2.0, BLOCK=4)
        _fill[(1,)](out, 3.0, BLOCK=4)  # the launch fast path calls them too
    _fill[(1,)](out, 1.0, BLOCK=4)  # after the scope: no hooks
    assert calls == [("enter", "_fill", 0.0), ("exit", (1, 1, 1), 8.0),
                     ("enter", "_fill", 8.0), ("exit", (1, 1, 1), 12.0)]


@triton.jit
def _erfinv(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.extra.libdevice.erfinv(tl.load(x_ptr + offs)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_libdevice_erfinv_against_mpmath(dtype, backend):
    """Inductor lowers torch.erfinv to libdevice.erfinv. fp32: correctly rounded (the fp64 result
    rounded once); fp64: within 2 ulp of mpmath's value."""
    import mpmath
    import numpy as np

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-1, 1, 240), 1 - rng.uniform(0, 1e-6, 6), -1 + rng.uniform(0, 1e-3, 4),
                        [0.0, -0.0, 0.5, -0.5, 1e-30, 2.0 ** -24]])
    x = x.astype(np.float32 if dtype == torch.float32 else np.float64)
    n = len(x)
    assert n == 256
    out = torch.zeros(n, dtype=dtype)
    _erfinv[(1,)](torch.from_numpy(x), out, N=n)
    got = out.numpy().astype(np.float64)
    exact = np.array([float(mpmath.erfinv(mpmath.mpf(float(v)))) for v in x])
    if dtype == torch.float32:
        assert np.array_equal(got, exact.astype(np.float32).astype(np.float64))
    else:
        assert np.all(np.abs(got - exact) <= 2 * np.spacing(np.abs(exact)))
    assert np.signbit(got[x == 0]).tolist() == np.signbit(x[x == 0]).tolist()
    edges = torch.tensor([1.0, -1.0, 1.5, float("nan")] * 64, dtype=dtype)
    _erfinv[(1,)](edges, out, N=n)
    assert out[:4].tolist()[:2] == [float("inf"), float("-inf")] and torch.isnan(out[2:4]).all()


def test_compat_install_leaves_triton_interpret_as_the_user_set_it(monkeypatch):
    from tritium import compat

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    compat.install()
    import os
    assert os.environ["TRITON_INTERPRET"] == "1"


def test_performance_model_queries_answer_for_the_host():
    """Libraries' performance models import these at module level and size kernels from them."""
    import numpy as np

    from tritium import testing
    from tritium._internal_testing import get_arch
    from tritium.runtime.driver import driver

    gbps = testing.get_dram_gbps()
    assert 0.1 < gbps < 10_000
    # the measurement is a copy rate: a copy of 32 MiB takes about the time it predicts, not 100x less
    x = np.ones(1 << 23, dtype=np.float32)
    y = np.empty_like(x)
    import time
    start = time.perf_counter()
    np.copyto(y, x)
    predicted = 2 * x.nbytes / (gbps * 1e9)
    assert time.perf_counter() - start > predicted / 20
    tflops = testing.get_max_simd_tflops(tl.float32)
    assert 1e-4 < tflops < 1e3 and testing.get_max_tensorcore_tflops(tl.float16, 1_000_000) == tflops
    clock, total = testing.nvsmi(["clocks.max.sm", "memory.total"])
    assert clock > 100 and total > 256
    with pytest.raises(ValueError, match="power.draw"):
        testing.nvsmi(["power.draw"])
    assert get_arch() == driver.active.get_current_target().arch != ""


def test_import_triton_ops_fails_as_in_triton_3(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "probe.py"
    script.write_text("import triton\nassert not hasattr(triton, 'ops')\n"
                      "try:\n    import triton.ops\nexcept ImportError:\n    print('triton 3')\nelse:\n"
                      "    print('triton 2')\n")
    done = subprocess.run([sys.executable, "-m", "tritium", "run", str(script)], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "triton 3", done.stderr


@triton.jit
def _mixed_fp8_dot(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :]).to(tl.float8e5, bitcast=True)
    b = tl.load(b_ptr + r[:, None] * N + r[None, :]).to(tl.float8e4nv, bitcast=True)
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b))


def test_dot_of_two_fp8_formats(backend):
    """Triton multiplies fp8e5 by fp8e4nv directly; checked against the fp64 product of the same
    fp8 values, within fp32 accumulation (K = 32 products: 32 * 2^-24 of the sum of |products|)."""
    n = 32
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=gen).to(torch.float8_e5m2)
    b = torch.randn(n, n, generator=gen).to(torch.float8_e4m3fn)
    c = torch.zeros(n, n)
    _mixed_fp8_dot[(1,)](a.view(torch.uint8), b.view(torch.uint8), c, N=n)
    exact = a.double() @ b.double()
    bound = n * 2.0 ** -24 * (a.double().abs() @ b.double().abs())
    assert torch.all((c.double() - exact).abs() <= bound)


def _marked_builtin(fn):
    fn.__triton_builtin__ = True  # how torch's triton_helpers marks its compile-time helpers
    return fn


@_marked_builtin
def _next_power_of_2(n, *, _builder=None):
    assert isinstance(n, tl.constexpr)
    return tl.constexpr(triton.next_power_of_2(n.value))


@_marked_builtin
def _if_mask(mask, value, *, _builder=None):
    return tl.constexpr(None) if isinstance(mask, tl.constexpr) and mask.value is None else value


@triton.jit
def _uses_marked_builtins(x_ptr, out_ptr, N: tl.constexpr):
    P: tl.constexpr = _next_power_of_2(N)
    offs = tl.arange(0, P)
    mask = offs < N
    x = tl.load(x_ptr + offs, mask=mask, other=_if_mask(mask, 0.0))
    tl.store(out_ptr + offs, x.to(tl.core._unwrap_if_constexpr(tl.int32)), mask=mask)


def test_functions_marked_as_triton_builtins_run_at_compile_time(backend):
    x = torch.arange(5, dtype=torch.float32) * 3
    out = torch.zeros(5, dtype=torch.int32)
    _uses_marked_builtins[(1,)](x, out, N=5)
    assert out.tolist() == [0, 3, 6, 9, 12]


def test_knobs_as_triton_defines_them(monkeypatch):
    """Triton 3.9's knob machinery: descriptors naming their variable, assignments written to the
    environment while propagate_env is on (and put back by scope), knobs.env and del forgetting an
    assignment, the groups' values as a dict, and the fresh-knobs helper of Triton's test suites."""
    import os

    from tritium import _internal_testing, knobs

    class group(knobs.base_knobs):
        name = knobs.env_str("TRITIUM_TEST_NAME", "default")
        flag = knobs.env_opt_bool("TRITIUM_TEST_FLAG")
        count = knobs.env_int("TRITIUM_TEST_COUNT", 3)

    monkeypatch.delenv("TRITIUM_TEST_NAME", raising=False)
    monkeypatch.setenv("TRITIUM_TEST_FLAG", "yes")
    g = group()
    assert g.knobs == {"name": "default", "flag": True, "count": 3}
    assert g.knob_descriptors["count"].key == "TRITIUM_TEST_COUNT"
    with g.scope():
        g.name = "assigned"
        assert os.environ["TRITIUM_TEST_NAME"] == "assigned"  # propagated
        monkeypatch.setenv("TRITIUM_TEST_NAME", "later")
        assert g.name == "assigned"  # an assignment wins over the variable
        g.name = knobs.env
        assert g.name == "later"
    assert "TRITIUM_TEST_NAME" not in os.environ and g.name == "default"  # scope put the variable back
    monkeypatch.setattr(knobs, "propagate_env", False)
    g.count = 7
    assert g.count == 7 and "TRITIUM_TEST_COUNT" not in os.environ
    del g.count
    assert g.count == 3

    fresh, reset = _internal_testing._fresh_knobs_impl()
    monkeypatch.setenv("TRITON_HIP_LOCAL_PREFETCH", "5")
    original = knobs.amd
    try:
        assert fresh() is knobs and knobs.amd is not original and knobs.propagate_env
        assert knobs.amd.local_prefetch == 0  # the variable is gone while fresh
        knobs.amd.local_prefetch = 9
    finally:
        reset()
    assert knobs.amd is original and os.environ["TRITON_HIP_LOCAL_PREFETCH"] == "5" and not knobs.propagate_env
    knobs.refresh_knobs()
    assert knobs.build.backend_dirs == {p for p in (os.environ.get("TRITON_CUDACRT_PATH"),
                                                    os.environ.get("TRITON_CUDART_PATH")) if p}


def test_the_file_cache_manager_stores_files_and_groups(tmp_path):
    import os

    from tritium import knobs
    from tritium.runtime.cache import FileCacheManager, get_cache_manager

    with knobs.cache.scope():
        knobs.cache.dir = str(tmp_path)
        manager = get_cache_manager("abc")
        assert isinstance(manager, FileCacheManager)
        assert manager.get_file("k.bin") is None
        path = manager.put(b"\x00\x01", "k.bin")
        text = manager.put("hello", "k.txt", binary=False)
        assert manager.get_file("k.bin") == path and Path(path).read_bytes() == b"\x00\x01"
        manager.put_group("k.json", {"k.bin": path, "k.txt": text})
        assert manager.get_group("k.json") == {"k.bin": path, "k.txt": text}
        os.remove(path)
        assert manager.get_group("k.json") is None  # a member is gone: the group is


def test_mxfp_tools_encode_and_pack():
    """triton.tools.mxfp against a brute-force oracle: every float maps to the nearest FP4 E2M1 value
    (ties to the even code, clipped to +-6); packing puts two codes a byte and unpacks to the same
    codes; E8M0 codes decode to 2^(c - 127) and 255 to NaN."""
    import math

    from tritium.tools.mxfp import MXFP4Tensor, MXScaleTensor, fp8e8m0_to_float32

    grid = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    x = torch.linspace(-8, 8, 4097)
    codes = MXFP4Tensor(x).data
    for value, code in zip(x.tolist(), codes.tolist()):
        magnitude = min(abs(value), 6.0)
        best = min(range(8), key=lambda c: (abs(grid[c] - magnitude), c % 2))  # nearest, then the even code
        assert code == best | (8 if value < 0 else 0), (value, code)
    shape = (6, 7)
    t = MXFP4Tensor(size=shape).random()
    for dim in (0, 1):
        packed = t.to_packed_tensor(dim=dim)
        assert packed.shape[dim] == (shape[dim] + 1) // 2
        assert torch.equal(t.unpack_packed_tensor(packed, dim=dim, original_shape=shape), t.data)
    row = MXFP4Tensor(size=(1, 2)).random()
    assert row.to_packed_tensor(dim=1).item() == int(row.data[0, 0]) | int(row.data[0, 1]) << 4
    scales = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    decoded = fp8e8m0_to_float32(scales)
    assert decoded[:255].tolist() == [math.ldexp(1.0, c - 127) for c in range(255)] and math.isnan(decoded[255])
    assert MXScaleTensor(torch.tensor([0.25, 3.0, -1.0, float("inf")])).data.tolist() == [125, 129, 255, 255]


def test_autotuner_pruning_as_triton_3_9_does():
    """A fractional top_k counts the configs early pruning left; pruning everything is an error with
    Triton's message; ir_override is part of a config's identity (its disk-cache key)."""
    launched, estimated = [], []

    class Kernel:
        fn = staticmethod(lambda: None)

        def run(self, **kwargs):
            launched.append(kwargs["BLOCK"])

    tuner = triton.runtime.Autotuner(
        Kernel(), arg_names=[], configs=[triton.Config({"BLOCK": b}) for b in range(1, 11)], key=[],
        do_bench=lambda call, quantiles: (call(), [launched[-1]] * 3)[1],
        prune_configs_by={"early_config_prune": lambda configs, nargs, **kw: configs[:6],
                          "perf_model": lambda **kw: estimated.append(kw["BLOCK"]) or kw["BLOCK"], "top_k": 0.5})
    tuner.run()
    assert estimated == [1, 2, 3, 4, 5, 6] and launched == [1, 2, 3, 1]  # 3 timed, then the best
    nothing = triton.runtime.Autotuner(Kernel(), arg_names=[], configs=[triton.Config({"BLOCK": 1})], key=[],
                                       prune_configs_by={"early_config_prune": lambda configs, nargs, **kw: []})
    with pytest.raises(triton.TritonError) as e:
        nothing.run()
    assert str(e.value) == ("Autotuner error: No valid autotuner configs after pruning. `early_config_prune` should "
                            "return at least one config.")
    first, second = (triton.Config({"BLOCK": 32}, ir_override=name) for name in ("a.ttir", "b.ttir"))
    assert str(first) != str(second) and first != second


def test_rewrite_records_the_line_of_the_def():
    """JITFunction.rewrite(), which Triton's interpreter tests call: the file line of the `def`
    (after the decorator)."""
    import inspect

    lines, first = inspect.getsourcelines(_mixed_fp8_dot.fn)
    def_line = first + next(i for i, line in enumerate(lines) if line.lstrip().startswith("def "))
    assert _mixed_fp8_dot.rewrite().def_file_lineno == def_line == _mixed_fp8_dot.rewriter.def_file_lineno


def test_performance_model_numbers_of_a_gpu_come_from_its_properties():
    """With a GPU driver active, triton.testing answers from the device's properties: an H100 SXM's
    (132 SMs, 1.98 GHz, 2.619 GHz x 5120-bit HBM3) give its published peaks: 3.35 TB/s, 989 dense
    fp16 tensor-core TFLOP/s at 1.83 GHz, 67 fp32 TFLOP/s."""
    from types import SimpleNamespace

    from tritium import testing
    from tritium.runtime.driver import driver

    properties = {"mem_clock_rate": 2_619_000, "mem_bus_width": 5120, "multiprocessor_count": 132,
                  "sm_clock_rate": 1_980_000}
    gpu = SimpleNamespace(utils=SimpleNamespace(get_device_properties=lambda device: properties),
                          get_current_target=lambda: SimpleNamespace(backend="cuda", arch=90),
                          get_current_device=lambda: 0)
    driver.set_active(gpu)
    try:
        assert testing.get_dram_gbps() == pytest.approx(3352.32)
        assert testing.get_max_tensorcore_tflops(torch.float16, clock_rate=1_830_000) == pytest.approx(989.6, rel=1e-3)
        assert testing.get_max_simd_tflops(torch.float32) == pytest.approx(66.9, rel=1e-3)
    finally:
        driver.reset_active()
    assert testing.get_dram_gbps() > 0.1  # the host's, measured


def test_cdiv_of_a_symbolic_size():
    class Size:  # what a symbolic size offers: + and //
        def __init__(self, at):
            self.at = at

        def __add__(self, other):
            return Size(lambda x: self.at(x) + other)

        def __floordiv__(self, other):
            return Size(lambda x: self.at(x) // other)

    blocks = triton.cdiv(Size(lambda x: x), 32)
    assert [blocks.at(x) for x in (0, 1, 32, 33)] == [0, 1, 1, 2]
