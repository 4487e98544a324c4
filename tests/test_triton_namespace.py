"""The parts of the ``triton`` namespace that scripts use around their kernels.

``triton.testing`` (do_bench, assert_close, perf_report/Benchmark), ``triton.runtime.driver``,
the error modules, ``Config``/``autotune``/``heuristics``, ``JITFunction.warmup`` and launching a
compiled kernel, ``tritium run -m``, and (when TRITIUM_TUTORIALS_DIR names a folder holding them)
Triton's tutorials 01, 02, 03 and 05 run unmodified under ``tritium run``.

Oracles: numpy/torch results computed independently (exact where the kernel is exact), counts
of calls made, and the documented semantics of each function.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium import compat
from tritium.backends import registry
from tritium.errors import CompilationError, CompileTimeAssertionFailure, LaunchError
from tritium.runtime.driver import driver

CLI = [sys.executable, "-m", "tritium"]

# do_bench waits for the CPU backend's optimized code: that of this module's kernels, not of every
# kernel earlier tests in the process ran
pytestmark = pytest.mark.usefixtures("fresh_cpu_optimizer_queue")


# kernels ---------------------------------------------------------------------------------------
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


@triton.jit
def accumulate_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.atomic_add(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def increment_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


@pytest.fixture
def triton_alias():
    """``import triton`` resolves to tritium inside the test, and stops afterwards."""
    compat.install()
    import triton as aliased

    yield aliased
    sys.meta_path.remove(compat._FINDER)
    for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
        del sys.modules[name]


# triton.testing.do_bench ------------------------------------------------------------------------
def _sleeper(ms: float, calls: list):
    def fn():
        calls.append(time.perf_counter())
        time.sleep(ms / 1e3)

    return fn


def test_do_bench_times_in_milliseconds_and_calls_for_about_rep_ms():
    calls = []
    times = triton.testing.do_bench(_sleeper(4, calls), warmup=8, rep=40, return_mode="all")
    # one untimed call, estimate calls up to the 8 ms warm-up (2), then ~40/4 timed calls
    assert 5 <= len(times) <= 10, len(times)
    assert all(3.9 <= t <= 30 for t in times), times
    assert len(calls) - len(times) in (2, 3)


def test_do_bench_statistics_and_quantiles():
    fn = _sleeper(1, [])
    mean = triton.testing.do_bench(fn, warmup=2, rep=10)
    assert isinstance(mean, float) and 0.9 <= mean < 20
    low, median, high = triton.testing.do_bench(fn, warmup=2, rep=10, quantiles=[0.0, 0.5, 1.0])
    assert low <= median <= high and low >= 0.9
    one = triton.testing.do_bench(fn, warmup=2, rep=10, quantiles=[0.5])
    assert isinstance(one, float)
    assert triton.testing.do_bench(fn, warmup=2, rep=10, return_mode="min") <= \
        triton.testing.do_bench(fn, warmup=2, rep=10, return_mode="max") + 5
    with pytest.raises(ValueError, match="return_mode"):
        triton.testing.do_bench(fn, return_mode="p50")


def test_do_bench_sets_grads_to_none_before_each_call():
    x = torch.ones(3, requires_grad=True)
    seen = []

    def fn():
        seen.append(x.grad is None)
        x.grad = torch.zeros(3)

    triton.testing.do_bench(fn, warmup=1, rep=2, grad_to_none=[x])
    assert seen[0] is True  # the untimed first call sees the tensor as given
    assert all(seen), seen


def test_do_bench_times_a_kernel_on_cpu_tensors():
    x, y = torch.randn(5000), torch.randn(5000)
    out = torch.empty_like(x)
    ms = triton.testing.do_bench(lambda: add_kernel[(5,)](x, y, out, 5000, BLOCK=1024), warmup=5, rep=20)
    assert ms > 0
    assert torch.equal(out, x + y)


def test_bench_quick_times_a_slow_function_once(monkeypatch):
    monkeypatch.setenv("TRITIUM_BENCH_QUICK", "1")
    calls = []
    times = triton.testing.do_bench(_sleeper(30, calls), warmup=25, rep=20, return_mode="all")
    assert len(calls) == 1 and len(times) == 1 and times[0] >= 29


# triton.testing.assert_close --------------------------------------------------------------------
def test_assert_close():
    x = torch.tensor([1.0, 2.0, float("nan")])
    triton.testing.assert_close(x, x + 0.005)  # default atol 1e-2, NaNs equal
    with pytest.raises(AssertionError):
        triton.testing.assert_close(x, x + 0.02)
    triton.testing.assert_close(x, x * 1.1, atol=0, rtol=0.2)
    triton.testing.assert_close(x, x + 0.05, atol=lambda dtype: 0.1 if dtype == torch.float32 else 0)
    triton.testing.assert_close(torch.ones(4, dtype=torch.bfloat16), np.ones(4))
    with pytest.raises(AssertionError, match="is not close to"):
        triton.testing.assert_close(1.0, 1.5, err_msg="scalars")


# perf_report / Benchmark ------------------------------------------------------------------------
def _bench(**overrides):
    settings = {"x_names": ["size"], "x_vals": [8, 16, 32], "line_arg": "provider", "line_vals": ["a", "b"],
                "line_names": ["A", "B"], "styles": [("blue", "-"), ("green", "--")], "ylabel": "GB/s",
                "plot_name": "sweep", "args": {"scale": 10}, "x_log": True, "y_log": False}
    settings.update(overrides)
    return triton.testing.Benchmark(**settings)


def test_perf_report_sweeps_and_prints_a_table(capsys, monkeypatch):
    monkeypatch.delenv("TRITIUM_BENCH_QUICK", raising=False)
    calls = []

    @triton.testing.perf_report(_bench())
    def bench(size, provider, scale):
        calls.append((size, provider, scale))
        value = size * scale + (1 if provider == "b" else 0)
        return value, value - 1, value + 1

    table = bench.run(print_data=True, show_plots=False, return_df=True)
    assert calls == [(s, p, 10) for s in (8, 16, 32) for p in ("a", "b")]
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "sweep:"
    assert printed[1].split() == ["size", "A", "B"]
    assert [line.split() for line in printed[2:]] == [["0", "8", "80.0", "81.0"], ["1", "16", "160.0", "161.0"],
                                                      ["2", "32", "320.0", "321.0"]]
    columns = list(table.columns)
    assert columns == ["size", "A", "B", "A-min", "B-min", "A-max", "B-max"]


def test_perf_report_several_x_names_and_save_path(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TRITIUM_BENCH_QUICK", raising=False)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # matplotlib absent: import fails
    bench = _bench(x_names=["M", "N"], x_vals=[(2, 3), 4], args={}, plot_name="mn")
    mark = triton.testing.perf_report([bench])(lambda M, N, provider: M * N if provider == "a" else -1.0)
    mark.run(save_path=str(tmp_path / "out"), print_data=False)
    csv = (tmp_path / "out" / "mn.csv").read_text().splitlines()
    assert csv == ["M,N,A,B", "2,3,6.0,-1.0", "4,4,16.0,-1.0"]
    assert not list((tmp_path / "out").glob("*.png"))
    assert "matplotlib is not installed" in capsys.readouterr().err


def test_perf_report_draws_plots_when_matplotlib_is_importable(tmp_path, monkeypatch):
    saved = []

    class Axes:
        def __getattr__(self, name):
            return lambda *args, **kwargs: None

    class Figure:
        def add_subplot(self, *args):
            return Axes()

        def savefig(self, path):
            saved.append(path)

    pyplot = types.ModuleType("matplotlib.pyplot")
    pyplot.figure = Figure
    pyplot.show = lambda: saved.append("shown")
    pyplot.close = lambda figure: None
    matplotlib = types.ModuleType("matplotlib")
    matplotlib.use = lambda backend: None
    matplotlib.pyplot = pyplot
    monkeypatch.setitem(sys.modules, "matplotlib", matplotlib)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", pyplot)
    mark = triton.testing.perf_report(_bench(args={}))(lambda size, provider: float(size))
    mark.run(save_path=str(tmp_path), show_plots=True)
    assert saved == [str(tmp_path / "sweep.png"), "shown"]


def test_bench_quick_runs_the_first_two_x_values(monkeypatch, capsys):
    monkeypatch.setenv("TRITIUM_BENCH_QUICK", "1")
    sizes = []
    mark = triton.testing.perf_report(_bench(args={}))(lambda size, provider: sizes.append(size) or 1.0)
    mark.run(print_data=True)
    assert sizes == [8, 8, 16, 16]
    assert "first 2 of 3 x values" in capsys.readouterr().out


# the driver and the error modules ---------------------------------------------------------------
def test_driver_describes_the_cpu(triton_alias):
    active = triton_alias.runtime.driver.active
    target = active.get_current_target()
    assert (target.backend, target.warp_size) == ("cpu", 32) and target.arch
    assert active.get_active_torch_device() == torch.device("cpu")
    assert active.get_device_interface() is torch.cpu
    assert callable(torch.cpu.set_stream)  # scripts call getattr(torch, DEVICE.type).set_stream
    torch.cpu.set_stream(torch.cpu.Stream())
    for device in (None, 0, torch.device("cpu")):
        props = active.utils.get_device_properties(device)
        for key in ("max_shared_mem", "multiprocessor_count", "max_num_regs", "warpSize", "max_threads_per_sm",
                    "sm_clock_rate", "mem_clock_rate", "mem_bus_width"):
            assert isinstance(props[key], int) and props[key] > 0, key
    assert props["multiprocessor_count"] == len(os.sched_getaffinity(0))
    assert props["warpSize"] == target.warp_size
    with pytest.raises(ValueError, match="single device"):
        active.utils.get_device_properties(1)


def test_driver_import_forms(triton_alias):
    import triton.runtime.driver  # noqa: F401  (must not hide the driver object)
    from triton.runtime import driver as imported

    assert imported.active.get_current_target().backend == "cpu"
    assert triton_alias.runtime.driver.active is driver.active
    import triton.language.extra  # noqa: F401


def test_error_modules(triton_alias):
    import triton.compiler.errors as compiler_errors
    import triton.runtime.errors as runtime_errors

    error = runtime_errors.OutOfResources(300000, 232448, "shared memory")
    assert isinstance(error, triton_alias.TritonError)
    assert (error.required, error.limit, error.name) == (300000, 232448, "shared memory")
    assert "shared memory" in str(error)
    assert issubclass(runtime_errors.InterpreterError, triton_alias.TritonError)
    assert compiler_errors.CompilationError is CompilationError
    assert issubclass(compiler_errors.CompileTimeAssertionFailure, CompilationError)
    assert triton_alias.runtime.errors is runtime_errors


def test_compiler_errors_is_an_attribute_of_triton_compiler():
    """Scripts write ``triton.compiler.errors.CompilationError`` without importing the module."""
    code = "import tritium; assert tritium.compiler.errors.CompilationError is tritium.CompilationError"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


# triton.knobs -----------------------------------------------------------------------------------
def test_knobs_read_the_environment_until_assigned_and_scope_restores(triton_alias, monkeypatch):
    from triton import knobs

    assert knobs is triton.knobs and triton_alias.knobs is knobs
    monkeypatch.setenv("TRITON_CACHE_DIR", "/from/the/environment")
    monkeypatch.setenv("TRITON_PRINT_AUTOTUNING", "1")
    assert knobs.cache.dir == "/from/the/environment" and knobs.autotuning.print is True
    monkeypatch.delenv("TRITON_CACHE_DIR")
    monkeypatch.setenv("TRITON_HOME", "/home/someone")
    assert knobs.cache.dir == os.path.join("/home/someone", ".triton", "cache")
    with knobs.cache.scope():
        knobs.cache.dir = "/assigned"
        assert knobs.cache.dir == "/assigned" and knobs.cache.is_set("dir")
        copy = knobs.cache.copy()
        knobs.cache.reset()
        assert not knobs.cache.is_set("dir") and copy.dir == "/assigned"
        knobs.cache.dir = "/assigned again"
    assert not knobs.cache.is_set("dir")
    assert knobs.cache.dir == os.path.join("/home/someone", ".triton", "cache")
    assert knobs.runtime.interpret is True  # every kernel runs on the interpreter


@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (32, 64)], key=["n"], warmup=1, rep=1)
@triton.jit
def _tuned_copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_knobs_cache_dir_is_where_autotune_results_go(tmp_path):
    from tritium import config

    default = config.cache_dir()
    x = torch.arange(100, dtype=torch.float32)
    out = torch.empty_like(x)
    with triton.knobs.cache.scope():
        triton.knobs.cache.dir = str(tmp_path / "knob-cache")
        assert config.cache_dir() == str(tmp_path / "knob-cache")
        _tuned_copy_kernel[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, out, 100)
    assert torch.equal(out, x)
    assert len(list((tmp_path / "knob-cache" / "autotune").glob("*.json"))) == 1
    assert config.cache_dir() == default


# triton.experimental.gluon ----------------------------------------------------------------------
def test_gluon_kernels_can_be_defined_but_not_launched(triton_alias):
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl

    @gluon.jit
    def gluon_kernel(x_ptr, N: gl.constexpr, BLOCK: gl.constexpr):
        gl.store(x_ptr + gl.arange(0, BLOCK, layout=gl.BlockedLayout([1], [32], [4], [0])), 1.0)

    @gluon.jit(debug=True)
    def another(x_ptr):
        pass

    assert gluon_kernel.__name__ == "gluon_kernel" and gl.float32 is tl.float32
    with pytest.raises(NotImplementedError, match="Gluon kernel 'gluon_kernel' cannot run"):
        gluon_kernel[(1,)](torch.zeros(128), 128, BLOCK=128)
    with pytest.raises(NotImplementedError, match="Gluon kernel 'another'"):
        another[(1,)](torch.zeros(1))


def test_static_assert_failure_is_a_compile_time_assertion_failure():
    @triton.jit
    def k(x_ptr, BLOCK: tl.constexpr):
        tl.static_assert(BLOCK <= 32, "BLOCK too large")
        tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float32))

    with pytest.raises(CompileTimeAssertionFailure, match="BLOCK too large"):
        k[(1,)](torch.empty(64), BLOCK=64)


# Config, autotune, heuristics ---------------------------------------------------------------------
def test_config():
    c = triton.Config({"BLOCK": 64}, num_warps=8, num_stages=2)
    assert c.all_kwargs() == {"BLOCK": 64, "num_warps": 8, "num_stages": 2, "num_ctas": 1}
    assert triton.Config({"BLOCK": 64}, num_warps=8, maxnreg=128).all_kwargs()["maxnreg"] == 128
    assert str(c).startswith("BLOCK: 64, num_warps: 8")
    assert c == triton.Config({"BLOCK": 64}, num_warps=8, num_stages=2) and len({c, c}) == 1


class FakeBench:
    """A do_bench for the autotuner that runs the call once and reports a chosen time per BLOCK."""

    def __init__(self, times: dict):
        self.times = times
        self.timed = []

    def __call__(self, kernel_call, quantiles):
        kernel_call()
        block = self.current
        self.timed.append(block)
        return [self.times[block]] * len(quantiles)

    def configs(self, blocks, num_warps=None):
        def hook(args):
            self.current = args["BLOCK"]

        return [triton.Config({"BLOCK": b}, num_warps=num_warps or 2 ** i, pre_hook=hook) for i, b in enumerate(blocks)]


def test_autotune_picks_the_fastest_config_once_per_key():
    bench = FakeBench({16: 3.0, 32: 1.0, 64: 2.0})
    grids = []

    @triton.autotune(configs=bench.configs([16, 32, 64]), key=["n"], do_bench=bench)
    @triton.jit
    def k(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2 + tl.load(y_ptr + offs, mask=mask), mask=mask)

    def grid(meta):
        grids.append((meta["BLOCK"], meta["num_warps"]))
        return (triton.cdiv(meta["n"], meta["BLOCK"]),)

    x, y = torch.randn(100), torch.randn(100)
    out = torch.empty(100)
    k[grid](x, y, out, 100)
    assert torch.equal(out, x * 2 + y)
    assert sorted(bench.timed) == [16, 32, 64]
    assert k.best_config.kwargs == {"BLOCK": 32} and k.best_config.num_warps == 2
    assert grids[-1] == (32, 2)
    assert k.configs_timings[k.best_config] == [1.0, 1.0, 1.0]
    k[grid](x, y, out, 100)  # same key: no new timing
    assert len(bench.timed) == 3 and len(k.cache) == 1
    k[grid](x[:50], y[:50], out[:50], 50)  # a new key value times the configs again
    k[grid](x.double(), y.double(), out.double(), 50)  # and so does a new dtype
    assert len(bench.timed) == 9 and len(k.cache) == 3
    assert len(k.configs) == 3


def test_autotune_with_real_timing_runs_every_config():
    @triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 128}, num_warps=8)],
                     key=["n"], warmup=1, rep=3)
    @triton.jit
    def k(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) - tl.load(y_ptr + offs, mask=mask), mask=mask)

    x, y = torch.randn(300), torch.randn(300)
    out = torch.empty(300)
    k[lambda meta: (triton.cdiv(300, meta["BLOCK"]),)](x, y, out, 300)
    assert torch.equal(out, x - y)
    assert set(k.configs_timings) == set(k.configs)
    assert all(t[0] > 0 for t in k.configs_timings.values())
    assert k.best_config in k.configs and k.cache[(300, "torch.float32", "torch.float32", "torch.float32")]


def test_autotune_reset_to_zero_and_restore_value():
    bench = FakeBench({16: 2.0, 32: 1.0})

    tuned_accumulate = triton.autotune(configs=bench.configs([16, 32]), key=["n"], do_bench=bench,
                                       reset_to_zero=["out_ptr"])(accumulate_kernel)
    x = torch.randn(100)
    out = torch.zeros(100)
    tuned_accumulate[lambda m: (triton.cdiv(100, m["BLOCK"]),)](x, out, 100)
    assert torch.equal(out, x), "out must hold one launch's sum, not the timed launches' too"

    bench = FakeBench({16: 2.0, 32: 1.0})
    tuned_increment = triton.autotune(configs=bench.configs([16, 32]), key=["n"], do_bench=bench,
                                      restore_value=["x_ptr"])(increment_kernel)
    x = torch.randn(100)
    expected = x + 1
    tuned_increment[lambda m: (triton.cdiv(100, m["BLOCK"]),)](x, 100)
    assert torch.equal(x, expected), "x must be incremented once"


def test_autotune_pruning_and_failing_configs():
    bench = FakeBench({16: 5.0, 32: 1.0, 64: 2.0, 128: 0.5})

    @triton.autotune(configs=bench.configs([16, 32, 64, 128]), key=["n"], do_bench=bench,
                     prune_configs_by={"early_config_prune": lambda configs, nargs, **kw:
                                       [c for c in configs if c.kwargs["BLOCK"] != 16]})
    @triton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        tl.static_assert(BLOCK <= 64, "BLOCK must be at most 64")
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, offs.to(tl.float32), mask=offs < n)

    x = torch.empty(100)
    k[lambda m: (triton.cdiv(100, m["BLOCK"]),)](x, 100)
    assert torch.equal(x, torch.arange(100, dtype=torch.float32))
    assert 16 not in bench.timed
    assert k.configs_timings[k.configs[3]] == [float("inf")] * 3  # BLOCK=128 fails its static_assert
    assert k.best_config.kwargs["BLOCK"] == 32

    bench = FakeBench({16: 1.0, 32: 1.0})
    tuned = triton.autotune(configs=bench.configs([16, 32]), key=["n"], do_bench=bench,
                            prune_configs_by={"perf_model": lambda **kw: -kw["BLOCK"], "top_k": 1})(increment_kernel)
    y = torch.zeros(40)
    tuned[lambda m: (triton.cdiv(40, m["BLOCK"]),)](y, 40)
    assert bench.timed == [] and tuned.best_config.kwargs["BLOCK"] == 32
    assert torch.equal(y, torch.ones(40))


def test_autotune_refuses_meta_parameters_given_at_launch():
    tuned = triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})],
                            key=["n"])(increment_kernel)
    with pytest.raises(ValueError, match="conflicting meta-parameters"):
        tuned[(1,)](torch.zeros(8), 8, BLOCK=16)
    with pytest.raises(LaunchError, match="not parameters"):
        triton.autotune(configs=[triton.Config({"BLOCK": 16})], key=["size"])(increment_kernel)


def test_heuristics_compute_meta_parameters_and_stack_under_autotune():
    seen = []

    @triton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        if EVEN:
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)
        else:
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)

    def even(args):
        seen.append((args["n"], args["BLOCK"]))
        return args["n"] % args["BLOCK"] == 0

    with_heuristics = triton.heuristics({"EVEN": even})(k)
    x = torch.zeros(64)
    with_heuristics[(2,)](x, 64, BLOCK=32)
    assert torch.equal(x, torch.ones(64)) and seen == [(64, 32)]
    assert isinstance(with_heuristics, triton.KernelInterface) and isinstance(k, triton.KernelInterface)

    block_from_n = triton.heuristics({"BLOCK": lambda a: triton.next_power_of_2(a["n"]),
                                      "EVEN": lambda a: False})(k)
    x = torch.zeros(50)
    block_from_n[(1,)](x, 50)
    assert torch.equal(x, torch.ones(50))

    bench = FakeBench({16: 2.0, 64: 1.0})
    stacked = triton.autotune(configs=bench.configs([16, 64]), key=["n"], do_bench=bench)(
        triton.heuristics({"EVEN": even})(k))
    seen.clear()
    x = torch.zeros(48)
    stacked[lambda m: (triton.cdiv(m["n"], m["BLOCK"]),)](x, 48)
    # timing ran each config once (heuristic computed with each BLOCK), then the real launch
    assert seen == [(48, 16), (48, 64), (48, 64)]
    assert torch.equal(x, torch.full((48,), 3.0))  # 2 timed launches + 1 real one, no restore asked


def test_config_pre_hook_runs_before_the_real_launch():
    calls = []
    tuned = triton.autotune(configs=[triton.Config({"BLOCK": 16}, pre_hook=lambda a: calls.append(a["BLOCK"]))],
                            key=["n"])(increment_kernel)
    tuned[(1,)](torch.zeros(16), 16)
    assert calls == [16]  # one config: nothing to time


# warmup and compiled kernels ------------------------------------------------------------------------
@triton.jit
def _ticket_kernel(counter_ptr, out_ptr):
    tl.store(out_ptr + tl.program_id(0), tl.atomic_add(counter_ptr, 1))


def test_the_run_protocol_follows_a_change_of_the_launch_settings(monkeypatch):
    """The run protocol keeps a plan per kernel; a setting the backend's direct launcher reads when
    made (here TRITIUM_SHUFFLE: programs in a seeded random order) changed between two steps is
    followed by the next step."""
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    monkeypatch.delenv("TRITIUM_SHUFFLE", raising=False)
    counter, out = torch.zeros(1, dtype=torch.int32), torch.full((64,), -1, dtype=torch.int32)
    kernel = _ticket_kernel.warmup(counter, out, grid=(64,))
    kernel._init_handles()

    def step():
        counter.zero_()
        kernel.run(64, 1, 1, 0, kernel.function, kernel.metadata, None, None, None, counter, out)
        return out.tolist()

    assert step() == list(range(64)), "programs in order"
    monkeypatch.setenv("TRITIUM_SHUFFLE", "7")
    shuffled = step()
    assert sorted(shuffled) == list(range(64)) and shuffled != list(range(64)), "programs in a shuffled order"
    monkeypatch.delenv("TRITIUM_SHUFFLE")
    assert step() == list(range(64))


def _assert_row_sums(out, x):
    """``out`` holds the fp32 sums of ``x``'s rows, in any order of addition: within n * 2^-24 * sum|x|
    of the exact sums (the error bound of a sum of n fp32 terms, whatever the order), not a relative
    tolerance, which a row whose sum cancels to near zero fails by chance."""
    exact = x.double().sum(1).numpy()
    bound = x.shape[1] * 2.0 ** -24 * x.double().abs().sum(1).numpy()
    assert (np.abs(out.numpy() - exact) <= bound).all(), (out, exact, bound)


def test_the_run_protocol_launches_with_every_parameter_or_the_run_time_ones(monkeypatch):
    """``compiled.run(grid_0, grid_1, grid_2, stream, function, metadata, launch_metadata, enter, exit,
    *args)`` as torch's Inductor calls it each step: straight to the backend's direct launcher, and
    through the generic path (with its checks) when an argument is not what the kernel was compiled
    for or a launch hook is set."""
    monkeypatch.delenv("TRITIUM_BACKEND", raising=False)
    x = torch.randn(6, 100)
    out = torch.full((6,), -1.0)
    kernel = row_sum_kernel.warmup(x, out, 100, BLOCK=128, grid=(1,))
    kernel._init_handles()

    def run(*args):
        return kernel.run(6, 1, 1, 0, kernel.function, kernel.metadata, None, None, None, *args)

    run(x, out, 100, 128)  # every parameter, constexprs included
    _assert_row_sums(out, x)
    (plan,) = [plan for key, plan in kernel._protocol_plans.items() if key[0] == 4]
    assert len(plan[0]) == 3 and plan[1] is not None
    out.fill_(0)
    run(x, out, 100)  # or only the run-time ones
    _assert_row_sums(out, x)
    with pytest.raises(LaunchError, match="compiled for fp32 elements, but holds fp64"):
        run(x.double(), out, 100)
    seen = []
    monkeypatch.setattr(triton.knobs.runtime, "launch_enter_hook", lambda metadata: seen.append(metadata["name"]))
    out.fill_(0)
    run(x, out, 100)
    assert seen == ["row_sum_kernel"]
    _assert_row_sums(out, x)


def test_warmup_returns_a_compiled_kernel_that_launches_directly():
    x = torch.randn(6, 100)
    out = torch.full((6,), -1.0)
    kernel = row_sum_kernel.warmup(x, out, 100, BLOCK=128, num_warps=8, num_stages=2, grid=(1,))
    kernel._init_handles()
    assert torch.equal(out, torch.full((6,), -1.0)), "warmup must not launch"
    assert kernel.n_regs > 0 and kernel.n_spills == 0
    assert kernel.metadata.num_warps == 8 and kernel.metadata.num_stages == 2
    assert kernel.metadata.shared == 128 * 4  # the reduction's fp32 block
    props = driver.active.utils.get_device_properties(0)
    occupancy = props["max_num_regs"] // (kernel.n_regs * props["warpSize"] * 8)
    assert occupancy >= 1 and props["max_shared_mem"] // kernel.metadata.shared >= 1

    kernel[(6, 1, 1)](x, out, 100, 128)  # every parameter, constexprs included
    _assert_row_sums(out, x)
    out.fill_(0)
    kernel[(6,)](x, out, 100)  # or only the run-time ones
    _assert_row_sums(out, x)
    with pytest.raises(LaunchError, match="specialized for BLOCK=128"):
        kernel[(6,)](x, out, 100, 256)
    with pytest.raises(LaunchError, match="compiled for fp32 elements, but holds fp64"):
        kernel[(6,)](x.double(), out, 100, 128)

    add = add_kernel.warmup(x, x, x, 600, BLOCK=64, grid=(1,))
    assert add.metadata.shared == 0  # nothing goes through shared memory on a GPU either
    assert add.metadata.num_warps == 4


# tritium run -m -------------------------------------------------------------------------------
def test_run_module_like_python_m(tmp_path):
    (tmp_path / "test_uses_triton.py").write_text(textwrap.dedent("""
        import numpy as np
        import triton
        import triton.language as tl

        @triton.jit
        def double(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

        def test_double():
            x = np.arange(10, dtype=np.float32)
            double[(1,)](x, 10, BLOCK=16)
            assert triton.__name__ == "tritium"
            assert (x == 2 * np.arange(10)).all()
    """))
    (tmp_path / "show_argv.py").write_text("import sys, triton\nprint('argv', sys.argv[1:], triton.__name__)\n")
    result = subprocess.run(CLI + ["run", "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    # a module of the current directory, with its arguments; and a missing module
    result = subprocess.run(CLI + ["run", "-m", "show_argv", "a", "-x"], capture_output=True, text=True,
                            timeout=60, cwd=tmp_path)
    assert result.stdout.strip() == "argv ['a', '-x'] tritium", result.stderr
    result = subprocess.run(CLI + ["run", "-m", "no_such_module_here"], capture_output=True, text=True,
                            timeout=60, cwd=tmp_path)
    assert result.returncode == 1 and "No module named no_such_module_here" in result.stderr


def test_run_script_sets_an_absolute_file_as_python_does(tmp_path):
    """Scripts that find their data next to themselves (os.path.dirname(__file__)) work from any folder."""
    folder = tmp_path / "scripts"
    folder.mkdir()
    (folder / "data.txt").write_text("beside the script")
    (folder / "where.py").write_text("import os, sys\n"
                                     "print(os.path.isabs(__file__), sys.argv[0])\n"
                                     "print(open(os.path.join(os.path.dirname(__file__), 'data.txt')).read())\n")
    result = subprocess.run(CLI + ["run", os.path.join("scripts", "where.py")], capture_output=True, text=True,
                            timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"True {os.path.join('scripts', 'where.py')}", "beside the script"]


# Triton's tutorials ------------------------------------------------------------------------------------
TUTORIALS_DIR = os.environ.get("TRITIUM_TUTORIALS_DIR")
TUTORIALS = ["01-vector-add.py", "02-fused-softmax.py", "03-matrix-multiplication.py", "05-layer-norm.py"]

# Runs a tutorial unmodified (its source executed as __main__ under `tritium run`), then checks its
# results against exact references where its own check compares with a torch CPU op that is less
# accurate than the tolerance it asks for.
HARNESS = r'''
import sys, traceback
import torch

path = sys.argv[1]
namespace = {"__name__": "__main__", "__file__": path}
failed_line = None
try:
    exec(compile(open(path).read(), path, "exec"), namespace)
except AssertionError:
    failed_line = traceback.extract_tb(sys.exc_info()[2])[-1].line
    print("TUTORIAL-ASSERTION-FAILED:", failed_line, flush=True)
else:
    print("TUTORIAL-COMPLETED", flush=True)
print("TUTORIAL-DEVICE:", namespace["DEVICE"], flush=True)

if path.endswith("03-matrix-multiplication.py") and failed_line is None:
    a, b, out = namespace["a"], namespace["b"], namespace["triton_output"]
    import numpy as np
    exact = a.double() @ b.double()
    # one fp16 step of the result, plus what 64 fp32 roundings of the accumulator may add
    step = torch.from_numpy(np.spacing(np.abs(exact.half().cpu().numpy()))).double().to(exact.device)
    bound = step + 64 * 2.0 ** -24 * (a.double().abs() @ b.double().abs())
    assert ((out.double() - exact).abs() <= bound).all(), "matmul off by more than fp32 accumulation allows"
    print("EXACT-CHECK-PASSED", flush=True)

if path.endswith("05-layer-norm.py"):
    if failed_line is not None:
        assert "dw_tri, dw_ref" in failed_line or "db_tri, db_ref" in failed_line, failed_line
        # Same check, against exact sums: torch's CPU fp16 layer norm sums dw/db in fp16.
        torch.manual_seed(0)
        M, N, eps = 1151, 8192, 1e-5
        weight = torch.rand(N, dtype=torch.float16, requires_grad=True)
        bias = torch.rand(N, dtype=torch.float16, requires_grad=True)
        x = (-2.3 + 0.5 * torch.randn(M, N, dtype=torch.float16)).requires_grad_(True)
        dy = .1 * torch.randn_like(x)
        namespace["layer_norm"](x, (N,), weight, bias, eps).backward(dy)
        xd = x.detach().double()
        xhat = (xd - xd.mean(1, keepdim=True)) / (xd.var(1, unbiased=False, keepdim=True) + eps).sqrt()
        dw_exact, db_exact = (dy.double() * xhat).sum(0), dy.double().sum(0)
        assert torch.allclose(weight.grad.double(), dw_exact, atol=1e-2, rtol=0)
        assert torch.allclose(bias.grad.double(), db_exact, atol=1e-2, rtol=0)
        weight.grad = bias.grad = None
        torch.nn.functional.layer_norm(x, (N,), weight, bias, eps).backward(dy)
        torch_error = (bias.grad.double() - db_exact).abs().max().item()
        print(f"EXACT-CHECK-PASSED (torch's own db is off by {torch_error:.3f})", flush=True)
        namespace["bench_layer_norm"].run(save_path=".", print_data=True)  # the rest of the tutorial
    else:
        print("EXACT-CHECK-PASSED", flush=True)
'''


@pytest.mark.parametrize("name", TUTORIALS)
def test_triton_tutorial_runs_unmodified(name, tmp_path):
    if not TUTORIALS_DIR:
        pytest.skip("set TRITIUM_TUTORIALS_DIR to a folder holding Triton's python/tutorials/*.py to run them")
    path = Path(TUTORIALS_DIR) / name
    if not path.is_file():
        pytest.skip(f"{path} does not exist")
    harness = tmp_path / "harness.py"
    harness.write_text(HARNESS)
    env = dict(os.environ, TRITIUM_BENCH_QUICK="1")
    result = subprocess.run(CLI + ["run", str(harness), str(path)], capture_output=True, text=True, timeout=900,
                            cwd=tmp_path, env=env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "TUTORIAL-COMPLETED" in output or "TUTORIAL-ASSERTION-FAILED" in output and name.startswith("05"), \
        output[-4000:]
    if name.startswith("03"):
        # Its check compares with torch's CPU fp16 matmul (MKL), itself 1 ulp off the exact product in
        # some elements, so it may print ❌; what counts is the exact check.
        assert "EXACT-CHECK-PASSED" in output, output[-4000:]
    else:
        assert "❌" not in output, output[-4000:]
    if name.startswith("05"):
        assert "EXACT-CHECK-PASSED" in output and "layer-norm-backward" in output, output[-4000:]
    if name.startswith(("01", "02", "03")):
        assert "(TRITIUM_BENCH_QUICK: the first 2 of" in output, output[-4000:]
    # on a machine with a GPU the CUDA backend can use, the tutorials allocate on it and run there
    on_gpu = torch.cuda.is_available() and registry.get("cuda").is_available() and \
        os.environ.get("TRITIUM_BACKEND", "") in ("", "cuda")
    assert f"TUTORIAL-DEVICE: {'cuda' if on_gpu else 'cpu'}" in output, output[-4000:]
