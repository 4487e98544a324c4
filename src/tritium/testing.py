"""``triton.testing``: checking and timing kernels, and benchmark sweeps.

* ``assert_close(x, y, atol, rtol)``: elementwise ``|x - y| <= atol + rtol * |y|``.
* ``do_bench(fn, warmup, rep, ...)``: milliseconds per call of ``fn``.
* ``@perf_report(Benchmark(...))``: runs a function over a grid of arguments, prints a table,
  and saves a CSV (and a plot when matplotlib is installed; it is optional).

* ``get_dram_gbps()``, ``get_max_simd_tflops(dtype)``, ``get_max_tensorcore_tflops(dtype)``,
  ``nvsmi(attrs)``: what performance models ask of the device, answered for the host CPU (the
  bandwidth and the matmul rate measured once per process; clocks and memory from the system).

``TRITIUM_BENCH_QUICK=1`` shortens sweeps to the first two ``x_vals`` and makes ``do_bench``
skip its separate warm-up: meant for running benchmark scripts as smoke tests.
"""
from __future__ import annotations

import math
import os
import sys
import time
from typing import Any, Callable, Optional

import numpy as np

from . import config
from .compiler.ir import types as T

__all__ = ["Benchmark", "Mark", "assert_close", "do_bench", "do_bench_cudagraph", "get_dram_gbps",
           "get_max_simd_tflops", "get_max_tensorcore_tflops", "nvsmi", "perf_report"]


# checking ----------------------------------------------------------------------------------------
def _to_numpy(x):
    if hasattr(x, "detach"):
        x = x.detach().cpu()
        if str(x.dtype) in ("torch.bfloat16", "torch.float8_e4m3fn", "torch.float8_e5m2"):
            x = x.float()
        return x.numpy()
    return np.asarray(x)


def assert_close(x, y, atol=None, rtol=None, err_msg=""):
    """Asserts ``|x - y| <= atol + rtol * |y|`` elementwise, NaNs equal (defaults: atol 1e-2,
    rtol 0). ``atol``/``rtol`` may be functions of x's dtype."""
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    dtype = getattr(x, "dtype", None)
    atol = atol(dtype) if callable(atol) else atol
    rtol = rtol(dtype) if callable(rtol) else rtol
    a = _to_numpy(x)
    b = _to_numpy(y)
    if a.dtype != np.bool_:
        a = a.astype(np.float64)
    if b.dtype != np.bool_:
        b = b.astype(np.float64)
    if a.size > 1 or b.size > 1:
        np.testing.assert_allclose(a, b, atol=atol, rtol=rtol, equal_nan=True, err_msg=err_msg)
        return
    if not np.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True):
        raise AssertionError(f"{err_msg} {a} is not close to {b} (atol={atol}, rtol={rtol})".strip())


# timing ------------------------------------------------------------------------------------------
_RETURN_MODES = ("min", "max", "mean", "median", "all")


def _summarize(times: list[float], quantiles, return_mode: str):
    data = np.asarray(times, dtype=np.float64)
    if quantiles is not None:
        values = [float(np.quantile(data, q)) for q in quantiles]
        return values[0] if len(values) == 1 else values
    if return_mode == "all":
        return [float(t) for t in data]
    return float(getattr(np, return_mode)(data))


def _wait_for_optimized_code() -> None:
    """Every backend in use that replaces quick code by optimized code later (the CPU backend) has
    done so, so that what is timed is the code that will keep running."""
    from .backends import registry

    for backend in registry.instantiated():
        backend.wait_for_optimized_code()


def do_bench(fn: Callable, warmup: float = 25, rep: float = 100, grad_to_none=None, quantiles=None,
             return_mode: str = "mean"):
    """Times ``fn()`` and returns milliseconds per call.

    ``fn`` is called once untimed (that compiles its kernels; CPU kernels first run quick code, and
    the timing waits for their optimized code), then for about ``warmup`` ms
    untimed, then for about ``rep`` ms, each call timed on its own (at least one). ``grad_to_none``:
    tensors whose ``.grad`` is set to None before every call, outside the timing. ``quantiles``:
    return these quantiles of the times (a list, or one number for one quantile); otherwise
    ``return_mode`` picks the statistic: "mean" (default), "median", "min", "max" or "all" (the
    list of times). CPU calls are synchronous, so wall-clock time is the kernel's time; caches are
    not flushed between calls. Where launches go to a GPU (the active driver is the CUDA one, and
    torch has started CUDA), each call is timed on the GPU instead, as Triton times it: CUDA events
    around the call, and the L2 cache evicted before it (256 MB of device memory zeroed); CPU work
    on such a machine is timed by the clock with ``TRITIUM_BACKEND=cpu`` (or ``interpreter``).
    With ``TRITIUM_BENCH_QUICK=1`` there is no warm-up beyond the first call, the estimate's call
    counts as a sample, and a first call slower than ``rep`` is the only
    sample (compilation included), so a slow ``fn`` runs once.
    """
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(_RETURN_MODES)}, got {return_mode!r}")
    with config.timed_launches():  # what is timed is the code that keeps running (no interpreter tier)
        return _do_bench(fn, warmup, rep, grad_to_none, quantiles, return_mode)


def _do_bench(fn: Callable, warmup: float, rep: float, grad_to_none, quantiles, return_mode: str):
    if quantiles is not None:
        quantiles = list(quantiles)
        if not all(0 <= q <= 1 for q in quantiles):
            raise ValueError(f"quantiles must be between 0 and 1, got {quantiles}")

    def forget_grads() -> None:
        if grad_to_none is not None:
            for tensor in grad_to_none:
                tensor.grad = None

    def timed_call() -> float:
        forget_grads()
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        from .runtime.driver import driver

        if getattr(driver.active, "backend", "") == "cuda":  # launches go to the GPU
            timed_call = _gpu_timer(torch, driver.active, fn, forget_grads)

    quick = config.bench_quick()
    first = timed_call()
    if not quick:
        _wait_for_optimized_code()  # a CPU kernel's first launch may run its quick tier's code
    if quick and first >= rep:
        # One call used the whole budget: in quick mode it is the sample (compilation included).
        return _summarize([first], quantiles, return_mode)
    # Estimate the time of one call from up to 5 calls, stopping once they used the warm-up budget.
    estimates: list[float] = []
    while len(estimates) < (1 if quick else 5):
        estimates.append(timed_call())
        if sum(estimates) >= warmup:
            break
    estimate = max(sum(estimates) / len(estimates), 1e-6)
    if quick:
        times = list(estimates)
        for _ in range(max(0, int((rep - sum(estimates)) / estimate))):
            times.append(timed_call())
        return _summarize(times, quantiles, return_mode)
    for _ in range(max(0, int((warmup - sum(estimates)) / estimate))):
        timed_call()
    times = [timed_call() for _ in range(max(1, int(rep / estimate)))]
    return _summarize(times, quantiles, return_mode)


def _gpu_timer(torch, gpu_driver, fn: Callable, before: Callable) -> Callable[[], float]:
    """A ``timed_call`` for work on the GPU: milliseconds between CUDA events recorded around
    ``fn()`` on the current stream, with the L2 cache evicted first through ``gpu_driver``'s
    benchmark cache (``before()`` runs untimed)."""
    cache = gpu_driver.get_empty_cache_for_benchmark()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def timed_call() -> float:
        before()
        gpu_driver.clear_cache(cache)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    return timed_call


def do_bench_cudagraph(fn: Callable, rep: float = 20, grad_to_none=None, quantiles=None, return_mode="mean"):
    """``do_bench`` (there are no CUDA graphs on the CPU)."""
    return do_bench(fn, warmup=rep / 4, rep=rep, grad_to_none=grad_to_none, quantiles=quantiles,
                    return_mode=return_mode)


# benchmark sweeps --------------------------------------------------------------------------------
class Benchmark:
    """One sweep for ``@perf_report``: ``fn(**{x_names: x}, **{line_arg: line}, **args)`` for every
    x in ``x_vals`` and every line in ``line_vals``.

    ``x_vals``: values given to every name of ``x_names`` at once, or tuples with one value per
    name. ``fn`` returns a number, or (value, min, max). ``line_names`` label the lines
    (``styles``: (color, linestyle) per line); ``plot_name`` names the table and the files saved;
    ``xlabel``, ``ylabel``, ``x_log``, ``y_log`` shape the plot.
    """

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name="", args=None, xlabel="",
                 ylabel="", x_log=False, y_log=False, styles=None, color=None):
        self.x_names = [x_names] if isinstance(x_names, str) else list(x_names)
        self.x_vals = list(x_vals)
        self.line_arg = line_arg
        self.line_vals = list(line_vals)
        self.line_names = list(line_names)
        if len(self.line_names) != len(self.line_vals):
            raise ValueError(f"Benchmark {plot_name!r}: {len(self.line_vals)} line_vals but "
                             f"{len(self.line_names)} line_names")
        self.plot_name = plot_name
        self.args = dict(args or {})
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.x_log = x_log
        self.y_log = y_log
        self.styles = styles
        self.color = color

    def __repr__(self) -> str:
        return f"Benchmark({self.plot_name!r}, x_names={self.x_names}, {len(self.x_vals)} x_vals)"


class BenchmarkTable:
    """The results of one sweep: ``columns`` and ``rows`` (lists of values), printable and
    writable as CSV. ``Mark.run(return_df=True)`` returns a pandas DataFrame instead when pandas
    is installed."""

    def __init__(self, name: str, columns: list[str], rows: list[list]):
        self.name = name
        self.columns = columns
        self.rows = rows

    def column(self, name: str) -> list:
        index = self.columns.index(name)
        return [row[index] for row in self.rows]

    def format(self, columns: Optional[list[str]] = None) -> str:
        columns = columns or self.columns
        indices = [self.columns.index(c) for c in columns]
        cells = [[_format_cell(row[i]) for i in indices] for row in self.rows]
        widths = [max([len(c)] + [len(r[j]) for r in cells]) for j, c in enumerate(columns)]
        index_width = len(str(max(len(self.rows) - 1, 0)))
        lines = [" " * index_width + "  " + "  ".join(c.rjust(w) for c, w in zip(columns, widths))]
        for n, row in enumerate(cells):
            lines.append(str(n).ljust(index_width) + "  " + "  ".join(v.rjust(w) for v, w in zip(row, widths)))
        return "\n".join(lines)

    def to_csv(self, path: str) -> None:
        with open(path, "w") as f:
            f.write(",".join(self.columns) + "\n")
            f.writelines(",".join("" if v is None else repr(v) if isinstance(v, float) else str(v) for v in row) + "\n"
                         for row in self.rows)

    def __str__(self) -> str:
        return self.format()

    def __repr__(self) -> str:
        return f"BenchmarkTable({self.name!r}, {len(self.rows)} rows)"


def _format_cell(value) -> str:
    if value is None:
        return "NaN"
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
            return f"{value:.1f}"
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    return str(value)


def _matplotlib_pyplot():
    """matplotlib.pyplot when matplotlib is installed (it is optional), else None."""
    try:
        import matplotlib

        if not os.environ.get("DISPLAY") and not os.environ.get("MPLBACKEND"):
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


class Mark:
    """A function decorated with ``@perf_report``: ``.run()`` performs its sweeps."""

    def __init__(self, fn: Callable, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def _sweep(self, bench: Benchmark, **kwargs) -> BenchmarkTable:
        x_vals = bench.x_vals[:2] if config.bench_quick() else bench.x_vals
        means, mins, maxs, xs = [], [], [], []
        for x in x_vals:
            values = list(x) if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            if len(values) != len(bench.x_names):
                raise ValueError(f"Benchmark {bench.plot_name!r}: x value {x!r} has {len(values)} entries for "
                                 f"{len(bench.x_names)} x_names {bench.x_names}")
            x_args = dict(zip(bench.x_names, values))
            row_mean, row_min, row_max = [], [], []
            for line in bench.line_vals:
                result = self.fn(**x_args, **{bench.line_arg: line}, **bench.args, **kwargs)
                if isinstance(result, (tuple, list)):
                    if len(result) != 3:
                        raise ValueError(f"a benchmark function returns a number or (value, min, max), "
                                         f"got {len(result)} values")
                    value, low, high = (float(r) for r in result)
                else:
                    value, low, high = float(result), None, None
                row_mean.append(value)
                row_min.append(low)
                row_max.append(high)
            xs.append(values)
            means.append(row_mean)
            mins.append(row_min)
            maxs.append(row_max)
        columns = list(bench.x_names) + list(bench.line_names)
        has_range = any(v is not None for row in mins for v in row)
        if has_range:
            columns += [f"{name}-min" for name in bench.line_names] + [f"{name}-max" for name in bench.line_names]
        rows = []
        for x, m, lo, hi in zip(xs, means, mins, maxs):
            rows.append(list(x) + m + (lo + hi if has_range else []))
        return BenchmarkTable(bench.plot_name, columns, rows)

    def _plot(self, plt, bench: Benchmark, table: BenchmarkTable, show: bool, save_path: Optional[str]) -> None:
        figure = plt.figure()
        axes = figure.add_subplot(111)
        x = table.column(bench.x_names[0])
        for i, name in enumerate(bench.line_names):
            color, style = (bench.styles[i] if bench.styles and i < len(bench.styles) else (None, "-"))
            axes.plot(x, table.column(name), label=name, color=color, ls=style)
            if f"{name}-min" in table.columns:
                low, high = table.column(f"{name}-min"), table.column(f"{name}-max")
                if all(v is not None for v in low + high):
                    axes.fill_between(x, low, high, alpha=0.15, color=color)
        axes.legend()
        axes.set_xlabel(bench.xlabel or bench.x_names[0])
        axes.set_ylabel(bench.ylabel)
        axes.set_title(bench.plot_name)
        if bench.x_log:
            axes.set_xscale("log")
        if bench.y_log:
            axes.set_yscale("log")
        if save_path:
            figure.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
        if show:
            plt.show()
        plt.close(figure)

    def run(self, show_plots: bool = False, print_data: bool = False, save_path: Optional[str] = None,
            return_df: bool = False, **kwargs):
        """Runs every sweep. ``print_data``: print each table. ``save_path``: a folder that gets
        ``<plot_name>.csv`` (and ``<plot_name>.png`` with matplotlib). ``show_plots``: show the
        plots (with matplotlib). ``return_df``: return the tables (one, or a list for several
        benchmarks), as pandas DataFrames when pandas is installed. ``kwargs`` go to the function."""
        benchmarks = self.benchmarks if isinstance(self.benchmarks, (list, tuple)) else [self.benchmarks]
        if save_path:
            os.makedirs(save_path, exist_ok=True)
        plt = _matplotlib_pyplot() if (show_plots or save_path) else None
        if (show_plots or save_path) and plt is None:
            print("tritium: matplotlib is not installed, so no plot is drawn or saved", file=sys.stderr)
        tables = []
        for bench in benchmarks:
            table = self._sweep(bench, **kwargs)
            tables.append(table)
            if print_data:
                title = f"{bench.plot_name}:" if bench.plot_name else ""
                if config.bench_quick() and len(bench.x_vals) > 2:
                    title += f" (TRITIUM_BENCH_QUICK: the first 2 of {len(bench.x_vals)} x values)"
                if title:
                    print(title)
                print(table.format(list(bench.x_names) + list(bench.line_names)))
            if save_path:
                table.to_csv(os.path.join(save_path, f"{bench.plot_name or 'benchmark'}.csv"))
            if plt is not None:
                self._plot(plt, bench, table, show_plots, save_path)
        sys.stdout.flush()
        if return_df:
            results = [_as_dataframe(t) for t in tables]
            return results[0] if len(results) == 1 else results
        return None


def _as_dataframe(table: BenchmarkTable) -> Any:
    try:
        import pandas
    except ImportError:
        return table
    return pandas.DataFrame(table.rows, columns=table.columns)


def perf_report(benchmarks):
    """Decorates a benchmark function with the sweeps ``benchmarks`` (one Benchmark or a list);
    call ``.run(print_data=True)`` on the result to perform them."""

    def decorator(fn):
        return Mark(fn, benchmarks)

    return decorator


# the device, for performance models ----------------------------------------------------------------
_MEASURED: dict = {}


def _gpu_properties(device):
    """(the active driver's GPU properties with Triton's keys, its target), or (None, None) when the
    active driver is the host's."""
    from .runtime.driver import driver

    active = driver.active
    target = active.get_current_target()
    if getattr(target, "backend", "cpu") == "cpu":
        return None, None
    if device is None:
        device = active.get_current_device()
    return active.utils.get_device_properties(device), target


def get_dram_gbps(device=None) -> float:
    """Memory bandwidth in GB/s. On a GPU, from its properties as Triton computes it: the memory clock
    (kHz) times the bus width (bits), twice a clock (double data rate). For the host CPU, measured
    once per process by copying a 64 MiB array (bytes read plus bytes written, best of three)."""
    properties, _ = _gpu_properties(device)
    if properties is not None:
        return properties["mem_clock_rate"] * properties["mem_bus_width"] * 2 / 1e6 / 8
    if "gbps" not in _MEASURED:
        source = np.ones(1 << 24, dtype=np.float32)
        target = np.empty_like(source)
        best = math.inf
        for _ in range(3):
            start = time.perf_counter()
            np.copyto(target, source)
            best = min(best, time.perf_counter() - start)
        _MEASURED["gbps"] = 2 * source.nbytes / best / 1e9
    return _MEASURED["gbps"]


# Dense floating-point operations per clock per streaming multiprocessor, by compute capability's
# major version and operand width in bits (NVIDIA's published peak rates divided by SM count and
# boost clock): the tensor cores, and the FMA units (an FMA counts two).
_TENSOR_CORE_OPS = {8: {32: 1024, 16: 2048, 8: 4096}, 9: {32: 2048, 16: 4096, 8: 8192},
                    10: {32: 4096, 16: 8192, 8: 16384}}
_SIMD_OPS = {32: 256, 16: 512}


def _dtype_bits(dtype) -> int:
    """The operand width of a torch or tl dtype (None: fp32's)."""
    if dtype is None:
        return 32
    if isinstance(dtype, T.dtype):
        return dtype.primitive_bitwidth
    return dtype.itemsize * 8  # a torch dtype


def _per_clock(table: dict, bits: int) -> int:
    """``table``'s rate for operands of ``bits`` (fp32's for widths it does not list)."""
    return table.get(bits, table[32])


def _major(arch) -> int:
    """The compute capability's major version of a target's arch (90, "sm_90a", "sm_100" ...)."""
    digits = arch if isinstance(arch, int) else int("".join(c for c in str(arch) if c.isdigit()) or 90)
    return digits // 10


def _gpu_tflops(ops_per_clock, dtype, clock_rate, device):
    """TFLOP/s of the active GPU: SMs x ``ops_per_clock(major, bits)`` x the clock; None on the host."""
    properties, target = _gpu_properties(device)
    if properties is None:
        return None
    clock = clock_rate if clock_rate is not None else properties["sm_clock_rate"]  # kHz
    ops = ops_per_clock(_major(getattr(target, "arch", 90)), _dtype_bits(dtype))
    return properties["multiprocessor_count"] * ops * clock * 1e3 / 1e12


def _matmul_tflops() -> float:
    if "tflops" not in _MEASURED:
        n = 512
        a = np.ones((n, n), dtype=np.float32)
        b = np.ones((n, n), dtype=np.float32)
        a @ b
        best = math.inf
        for _ in range(3):
            start = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - start)
        _MEASURED["tflops"] = 2 * n ** 3 / best / 1e12
    return _MEASURED["tflops"]


def get_max_simd_tflops(dtype=None, clock_rate=None, device=None) -> float:
    """Peak vector floating-point rate in TFLOP/s. On a GPU: SMs x FMA lanes x 2 x the clock
    (``clock_rate`` in kHz, else the SM clock). For the host CPU, an fp32 matmul's measured rate
    (once per process; CPUs compute fp16 and bf16 at the fp32 rate or slower, so it serves for
    every dtype, and ``clock_rate`` is not needed)."""
    found = _gpu_tflops(lambda major, bits: _per_clock(_SIMD_OPS, bits), dtype, clock_rate, device)
    return found if found is not None else _matmul_tflops()


def get_max_tensorcore_tflops(dtype=None, clock_rate=None, device=None) -> float:
    """Peak matrix-unit rate in TFLOP/s. On a GPU: SMs x the tensor cores' dense operations per
    clock for ``dtype``'s width and the architecture x the clock. A CPU has no tensor cores: its
    vector rate."""
    found = _gpu_tflops(lambda major, bits: _per_clock(_TENSOR_CORE_OPS.get(major, _TENSOR_CORE_OPS[9]), bits),
                        dtype, clock_rate, device)
    return found if found is not None else _matmul_tflops()


def nvsmi(attrs) -> list:
    """``nvidia-smi --query-gpu=<attrs>`` values as ints, answered for the host CPU: clocks in MHz
    (``clocks.sm``, ``clocks.max.sm``, ``clocks.mem``, ``clocks.max.mem``) and memory in MiB
    (``memory.total``, ``memory.used``, ``memory.free``). Other attributes are a ValueError."""
    from .runtime.driver import cpu_properties

    properties = cpu_properties()
    page, pages = os.sysconf("SC_PAGE_SIZE"), os.sysconf("SC_PHYS_PAGES")
    available = os.sysconf("SC_AVPHYS_PAGES")
    answers = {
        "clocks.sm": properties["sm_clock_rate"] // 1000, "clocks.max.sm": properties["sm_clock_rate"] // 1000,
        "clocks.mem": properties["mem_clock_rate"] // 1000, "clocks.max.mem": properties["mem_clock_rate"] // 1000,
        "memory.total": page * pages >> 20, "memory.free": page * available >> 20,
        "memory.used": page * (pages - available) >> 20,
    }
    unknown = [a for a in attrs if a not in answers]
    if unknown:
        raise ValueError(f"nvsmi: tritium answers {sorted(answers)} for the host CPU, not {unknown}")
    return [answers[a] for a in attrs]
