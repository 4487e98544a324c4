"""tritium's native CPU backend beside torch eager (and tritium's interpreter), on the same kernels.

    python benchmarks/cpu_vs_torch.py [--cases add,softmax,...] [--repeat N] [--interpreter]
        [--threads N]

The cases are those of ``interpreter_vs_triton.py`` (the kernels in ``kernels.py``, written
against Triton's API). In one process, for each case: the kernel on the CPU backend (one warm-up
launch, which compiles, then the median of N launches), torch eager doing the same work, and with
``--interpreter`` the interpreter, with ``--checks-cost`` the kernels compiled without bounds
checks (and the checks' cost: checked ms / unchecked ms - 1); every result is checked against
torch within the case's stated tolerance. Printed: the times and the ratio torch ms / cpu ms (above 1: the compiled kernel is
faster). The process exits non-zero when a result misses its tolerance.
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--interpreter", action="store_true", help="also time tritium's interpreter")
    parser.add_argument("--threads", type=int, default=0, help="TRITIUM_NUM_THREADS (0: the affinity's CPUs)")
    parser.add_argument("--checks-cost", action="store_true",
                        help="also time the kernels compiled without bounds checks (TRITIUM_BOUNDS_CHECKS=0)")
    args = parser.parse_args(argv)
    if args.threads:
        os.environ["TRITIUM_NUM_THREADS"] = str(args.threads)

    import torch

    import tritium.compat

    tritium.compat.install()
    import interpreter_vs_triton as bench
    import kernels

    names = [n for n in args.cases.split(",") if n] or list(bench.CASES)
    threads = torch.get_num_threads()
    print(f"CPU backend vs torch {torch.__version__} eager ({threads} threads), median of {args.repeat}")
    header = f"{'case':<13}{'size':<44}{'cpu ms':>9}{'torch ms':>10}{'torch/cpu':>10}"
    if args.interpreter:
        header += f"{'interp ms':>11}"
    if args.checks_cost:
        header += f"{'unchecked':>10}{'checks':>8}"
    print(header + "  check")
    failures = 0
    for name in names:
        case = bench.CASES[name](kernels, torch)
        torch.manual_seed(bench.SEED)
        inputs = case.build()
        reference_ms, reference = bench.median_ms(lambda: case.reference(inputs), args.repeat)
        os.environ["TRITIUM_BACKEND"] = "cpu"
        cpu_ms, result = bench.median_ms(lambda: case.launch(inputs), args.repeat)
        error = (result.float() - reference.float()).abs().max().item()
        ok = error <= case.tolerance(reference.float())
        failures += not ok
        line = f"{name:<13}{case.size:<44}{cpu_ms:>9.2f}{reference_ms:>10.2f}{reference_ms / cpu_ms:>10.2f}"
        if args.interpreter:
            os.environ["TRITIUM_BACKEND"] = "interpreter"
            interp_ms, _ = bench.median_ms(lambda: case.launch(inputs), max(1, args.repeat // 3))
            line += f"{interp_ms:>11.2f}"
        if args.checks_cost:
            os.environ["TRITIUM_BACKEND"] = "cpu"
            _recompile(kernels, unchecked=True)
            unchecked_ms, _ = bench.median_ms(lambda: case.launch(inputs), args.repeat)
            _recompile(kernels, unchecked=False)
            line += f"{unchecked_ms:>10.2f}{cpu_ms / unchecked_ms - 1:>+8.0%}"
        os.environ.pop("TRITIUM_BACKEND", None)
        print(line + f"  {'ok' if ok else 'FAILED'} (max err {error:.2e})", flush=True)
    return 1 if failures else 0


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
