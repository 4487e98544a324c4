"""A test suite's workload: many kernels, each compiled for the first time and launched once or
twice on a few thousand elements, timed whole under each way of running them.

    .venv/bin/python benchmarks/first_launches.py [--kernels 24] [--launches 1]

Each mode runs in a fresh process with an empty disk cache: the CPU backend as the default (its
first small launch on the interpreter: ``cpu/interpreter_tier.py``), the same with
``TRITIUM_INTERPRETER_FIRST=0`` (compiled before the first launch, as before that tier), the
interpreter (``TRITIUM_BACKEND=interpreter``) and the CPU backend named (``TRITIUM_BACKEND=cpu``).
The kernels are ``kernels.py``'s elementwise and row kernels at distinct block sizes (each a
compilation of its own); every result is checked against numpy. Printed: wall seconds per mode
and the ratio to the interpreter's.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

MODES = {
    "cpu (default)": {},
    "cpu, compiled first": {"TRITIUM_INTERPRETER_FIRST": "0"},
    "interpreter": {"TRITIUM_BACKEND": "interpreter"},
    "cpu (named)": {"TRITIUM_BACKEND": "cpu"},
}


def workload(kernels: int, launches: int) -> None:
    """The kernels, each launched ``launches`` times and checked (run in the child process)."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    from tritium import compat

    compat.install()
    import kernels as k  # noqa: E402  (written against `import triton`)

    rng = np.random.default_rng(0)
    for i in range(kernels):  # 24 distinct (kernel, block) pairs, then the same again
        kind, block = i % 3, 2 ** (4 + (i // 3) % 8)
        n = 3 * block + 5
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        out = np.zeros(n, np.float32)
        grid = ((n + block - 1) // block,)
        for _ in range(launches):
            if kind == 0:
                k.vector_add[grid](x, y, out, n, BLOCK=block)
                np.testing.assert_array_equal(out, x + y)
            elif kind == 1:
                k.gelu_fwd[grid](x, out, n, BLOCK=block)
                assert np.isfinite(out).all()
            else:
                rows, cols = 4, max(2, block // 2)
                m = rng.standard_normal((rows, cols)).astype(np.float32)
                r = np.zeros_like(m)
                k.softmax_rows[(rows,)](m, r, cols, cols, cols, BLOCK=block)
                np.testing.assert_allclose(r.sum(axis=1), 1.0, rtol=1e-5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=24)
    parser.add_argument("--launches", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        workload(args.kernels, args.launches)
        return 0
    print(f"{args.kernels} kernels, each compiled for the first time and launched {args.launches}x")
    times = {}
    for mode, environ in MODES.items():
        with tempfile.TemporaryDirectory() as cache:
            env = {k: v for k, v in os.environ.items() if not k.startswith("TRITIUM_")}
            env.update(environ, TRITIUM_CACHE_DIR=cache)
            start = time.perf_counter()
            subprocess.run([sys.executable, __file__, "--child", "--kernels", str(args.kernels), "--launches",
                            str(args.launches)], env=env, check=True)
            times[mode] = time.perf_counter() - start
    for mode, seconds in times.items():
        print(f"{mode:22} {seconds:7.2f} s  {seconds / times['interpreter']:5.2f}x the interpreter's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
