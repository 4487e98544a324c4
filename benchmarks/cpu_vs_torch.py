"""tritium's native CPU backend beside torch eager (and tritium's interpreter), on the same kernels.

    python benchmarks/cpu_vs_torch.py [--cases add,softmax,...] [--repeat N] [--interpreter]
        [--threads N]

The cases are those of ``interpreter_vs_triton.py`` (the kernels in ``kernels.py``, written
against Triton's API). In one process, for each case: the kernel on the CPU backend (one warm-up
launch, which compiles, then a wait for the optimized code to replace the quick tier's) and torch eager doing the same work, timed N times each in alternating
blocks (so a slow spell of a shared machine falls on both sides), the medians compared; and with
``--interpreter`` the interpreter, with ``--checks-cost`` the kernels compiled without bounds
checks (and the checks' cost: checked ms / unchecked ms - 1, the two timed one block each, back to
back), with ``--compile-time`` the cold compile time of each case's kernels (first launch less a warm
one; per kernel; and when the optimized code was in place), with ``--inductor``
``torch.compile`` of the torch code (Inductor's C++ for the CPU; ratio inductor ms / cpu ms); every
result is checked against
torch within the case's stated tolerance. Printed: the times and the ratio torch ms / cpu ms (above 1: the compiled kernel is
faster). The process exits non-zero when a result misses its tolerance.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--interpreter", action="store_true", help="also time tritium's interpreter")
    parser.add_argument("--threads", type=int, default=0, help="TRITIUM_NUM_THREADS (0: the affinity's CPUs)")
    parser.add_argument("--compile-time", action="store_true",
                        help="also report each case's cold compile time: its first launch with every kernel "
                             "forgotten and an empty disk cache, less a warm launch")
    parser.add_argument("--checks-cost", action="store_true",
                        help="also time the kernels compiled without bounds checks (TRITIUM_BOUNDS_CHECKS=0)")
    parser.add_argument("--inductor", action="store_true",
                        help="also time torch.compile of the torch code (Inductor's C++ for the CPU)")
    args = parser.parse_args(argv)
    if args.threads:
        os.environ["TRITIUM_NUM_THREADS"] = str(args.threads)

    import torch

    import tritium.compat

    tritium.compat.install()
    import interpreter_vs_triton as bench
    import kernels

    cases = {**bench.CASES, **_library_cases(bench, kernels, torch)}
    names = [n for n in args.cases.split(",") if n] or list(cases)
    threads = torch.get_num_threads()
    print(f"CPU backend vs torch {torch.__version__} eager ({threads} threads), median of {args.repeat}")
    header = f"{'case':<15}{'size':<44}{'cpu ms':>9}{'torch ms':>10}{'torch/cpu':>10}"
    if args.interpreter:
        header += f"{'interp ms':>11}"
    if args.checks_cost:
        header += f"{'unchecked':>10}{'checks':>8}"
    if args.compile_time:
        header += f"{'compile ms':>11}{'kernels':>8}{'opt. ms':>10}"
        kernel_times = _time_each_compilation()
    if args.inductor:
        header += f"{'inductor':>10}{'ind/cpu':>8}"
    compile_times, optimized_times, cold_kernel_times = [], [], []
    from tritium.backends import registry

    CPUBackend = registry.get("cpu")
    print(header + "  check")
    failures = 0
    for name in names:
        case = cases[name](kernels, torch)
        torch.manual_seed(bench.SEED)
        inputs = case.build()
        os.environ["TRITIUM_BACKEND"] = "cpu"
        first_ms = None
        if args.compile_time:
            import tempfile

            _forget_compiled()
            os.environ["TRITIUM_CACHE_DIR"] = tempfile.mkdtemp(prefix="tritium-cold-")  # nothing on disk either
            compiled_before = len(kernel_times)
            start = time.perf_counter()
            case.launch(inputs)
            first_ms = (time.perf_counter() - start) * 1e3
            case_kernels = len(kernel_times) - compiled_before
            cold_kernel_times += kernel_times[compiled_before:]
            CPUBackend.wait_for_optimized_code()
            optimized_ms = (time.perf_counter() - start) * 1e3
        else:
            case.launch(inputs)  # compiles (or loads from the disk cache)
            CPUBackend.wait_for_optimized_code()  # time the optimized code, not the quick tier's
        (cpu_ms, result), (reference_ms, reference) = _alternating(
            lambda: case.launch(inputs), lambda: case.reference(inputs), args.repeat)
        result, reference = _joined(result, torch), _joined(reference, torch)
        error = (result.float() - reference.float()).abs().max().item()
        ok = error <= case.tolerance(reference.float())
        failures += not ok
        line = f"{name:<15}{case.size:<44}{cpu_ms:>9.2f}{reference_ms:>10.2f}{reference_ms / cpu_ms:>10.2f}"
        if args.interpreter:
            os.environ["TRITIUM_BACKEND"] = "interpreter"
            interp_ms, _ = bench.median_ms(lambda: case.launch(inputs), max(1, args.repeat // 3))
            line += f"{interp_ms:>11.2f}"
        if args.checks_cost:  # checked and unchecked timed the same way, one block each, back to back
            os.environ["TRITIUM_BACKEND"] = "cpu"
            checked_ms, _ = bench.median_ms(lambda: case.launch(inputs), args.repeat)
            _recompile(kernels, unchecked=True)
            case.launch(inputs)
            CPUBackend.wait_for_optimized_code()
            unchecked_ms, _ = bench.median_ms(lambda: case.launch(inputs), args.repeat)
            _recompile(kernels, unchecked=False)
            case.launch(inputs)
            CPUBackend.wait_for_optimized_code()
            line += f"{unchecked_ms:>10.2f}{checked_ms / unchecked_ms - 1:>+8.0%}"
        if first_ms is not None:
            compile_times.append(first_ms - cpu_ms)
            optimized_times.append(optimized_ms)
            line += f"{first_ms - cpu_ms:>11.0f}{case_kernels:>8}{optimized_ms:>10.0f}"
        if args.inductor:
            compiled = torch.compile(case.reference)
            compiled(inputs)  # compiles
            inductor_ms, _ = bench.median_ms(lambda: compiled(inputs), args.repeat)
            line += f"{inductor_ms:>10.2f}{inductor_ms / cpu_ms:>8.2f}"
        os.environ.pop("TRITIUM_BACKEND", None)
        print(line + f"  {'ok' if ok else 'FAILED'} (max err {error:.2e})", flush=True)
    if compile_times:
        print(f"cold compile, median over the cases: {statistics.median(compile_times):.0f} ms "
              f"(a case's kernels compile at its first launch; the LLVM work runs in a compile child process)")
        print(f"cold compile per kernel ({len(cold_kernel_times)} kernels; source to loaded object, "
              f"the frontend included): median {statistics.median(cold_kernel_times):.0f} ms, "
              f"range {min(cold_kernel_times):.0f}-{max(cold_kernel_times):.0f} ms")
        print(f"optimized code in place (from the first launch's start), median over the cases: "
              f"{statistics.median(optimized_times):.0f} ms")
    return 1 if failures else 0


def _joined(result, torch):
    """A case's result as one tensor: the tensors of a forward + backward case flattened end to end."""
    if isinstance(result, tuple):
        return torch.cat([t.reshape(-1) for t in result])
    return result


def _time_each_compilation() -> list:
    """The cold compile time of every kernel compiled from now on (ms, appended to the list returned):
    the frontend, LLVM and the loading of the object, timed around ``runtime.compilation.build``. The
    process's one-time costs are paid first, outside the timing: the compile child process is started
    (``backends/llvm/host.py``) and the worker pool with it."""
    from tritium.backends.cpu import launcher, workers
    from tritium.backends.llvm import host
    from tritium.runtime import compilation

    host.compile_to_object("define void @warm_up() {\n  ret void\n}\n")
    if workers.available():
        workers.pool(launcher.thread_count())
    times, depth, build = [], [0], compilation.build

    def timed(*args, **kwargs):
        depth[0] += 1
        start = time.perf_counter()
        try:
            return build(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:  # a kernel handed over to the interpreter is built twice: counted once
                times.append((time.perf_counter() - start) * 1e3)

    compilation.build = timed
    return times


def _alternating(ours, theirs, repeat: int, rounds: int = 5):
    """((median ms, result) of ``ours``, the same of ``theirs``): the two timed in turn, in
    ``rounds`` blocks each, so that a slow spell of a shared machine falls on both sides alike. Each
    block starts after a pause and an untimed call: both libraries' worker threads poll for a while
    after a call before sleeping (torch's OpenMP threads for up to milliseconds), which would take
    cores from the other side's first calls."""
    results = [None, None]
    times: list[list[float]] = [[], []]
    per_block = max(1, -(-repeat // rounds))
    for _ in range(rounds):
        for side, fn in enumerate((ours, theirs)):
            time.sleep(0.02)
            results[side] = fn()
            for _ in range(per_block):
                start = time.perf_counter()
                results[side] = fn()
                times[side].append((time.perf_counter() - start) * 1e3)
    return [(statistics.median(t), r) for t, r in zip(times, results)]


def _forget_compiled() -> None:
    """Every compiled kernel of the benchmark's kernels and of tritium.ops forgotten, so the next
    launch compiles (with the disk cache in an empty folder, nothing is found there either)."""
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "kernels" or name.startswith("tritium.ops")):
            continue
        for value in list(vars(module).values()):
            for candidate in (value, getattr(value, "fn", None)):
                cache = getattr(candidate, "cache", None)
                if isinstance(cache, dict) and hasattr(candidate, "_fast"):
                    cache.clear()


def _library_cases(bench, kernels, torch) -> dict:
    """More cases: tritium.ops' kernels (forward, and forward + backward through torch.autograd),
    and the tiled matmul at the sizes where a BLAS is at full speed."""
    from tritium import ops

    F = torch.nn.functional
    rows, cols, vocab = 4096, 1024, 32000

    def op_case(size, make, ours, theirs, atol, why, backward=False):
        def run(fn):
            def go(d):
                leaves = [x.detach().requires_grad_(backward) for x in d["inputs"]]
                out = fn(*leaves)
                if backward:
                    out.backward(d["grad"] if out.dim() else None)
                    # joined into one tensor for the check, after the timing (``_joined``): a 34 MB
                    # concatenation timed on both sides was a fresh mapping faulted in on every call
                    return (out.detach(), *(x.grad for x in leaves))
                return out.detach()
            return go

        def build():
            inputs = make()
            with torch.no_grad():
                sample = theirs(*inputs)
            return {"inputs": inputs, "grad": torch.randn(sample.shape) if sample.dim() else None}

        return lambda k, t: bench.Case(size, build, run(ours), run(theirs), atol=atol, why=why)

    def tiled(size, tile):
        return lambda k, t: bench._matmul_case(k, t, size, tile, t.float32)

    x2 = lambda: [torch.randn(rows, cols) * 2]  # noqa: E731
    return {
        "log_softmax": op_case(f"{rows}x{cols} fp32", x2, ops.log_softmax, lambda x: torch.log_softmax(x, -1),
                               1e-5, "|y| <~ 20: a few fp32 ulps"),
        "rms_norm": op_case(f"{rows}x{cols} fp32", lambda: [torch.randn(rows, cols), torch.randn(cols)], ops.rms_norm,
                            lambda x, w: F.rms_norm(x, (cols,), w, 1e-6), 1e-5, "|y| <~ 20: a few fp32 ulps"),
        "cross_entropy": op_case(f"64x{vocab} fp32", lambda: [torch.randn(64, vocab) * 3],
                                 lambda x: ops.cross_entropy(x, torch.arange(64) * 7),
                                 lambda x: F.cross_entropy(x, torch.arange(64) * 7), 1e-5, "a mean of 64 losses ~ 10"),
        "layernorm_bwd": op_case(f"{rows}x{cols} fp32, fwd+bwd", lambda: [torch.randn(rows, cols), torch.randn(cols),
                                                                         torch.randn(cols)],
                                 ops.layer_norm, lambda x, w, b: F.layer_norm(x, (cols,), w, b), 1e-3,
                                 "gradients summed over 4096 rows in fp32", backward=True),
        # rows narrower than their block (768 under 1024): the masked path in every program
        "softmax_768": op_case(f"{rows}x768 fp32", lambda: [torch.randn(rows, 768) * 2], ops.softmax,
                               lambda x: torch.softmax(x, -1), 1e-6, "y in [0, 1]: a few fp32 ulps"),
        "layernorm_768": op_case(f"{rows}x768 fp32", lambda: [torch.randn(rows, 768), torch.randn(768),
                                                              torch.randn(768)],
                                 ops.layer_norm, lambda x, w, b: F.layer_norm(x, (768,), w, b), 1e-5,
                                 "|y| <~ 20: a few fp32 ulps"),
        # Tiles chosen for a CPU, as a Triton user tunes them per device: 128x128x128 spends a smaller
        # share of the time loading tiles than 64x64x32 (2048^3: 0.67-0.70 of torch's BLAS vs 0.50).
        "matmul_1024": tiled(1024, (128, 128, 128)),
        "matmul_2048": tiled(2048, (128, 128, 128)),
    }


def _recompile(kernels, unchecked: bool) -> None:
    """Kernels compile again, with (or without) bounds checks."""
    if unchecked:
        os.environ["TRITIUM_BOUNDS_CHECKS"] = "0"
    else:
        os.environ.pop("TRITIUM_BOUNDS_CHECKS", None)
    for value in vars(kernels).values():
        cache = getattr(value, "cache", None)
        if isinstance(cache, dict):
            cache.clear()


if __name__ == "__main__":
    sys.exit(main())
