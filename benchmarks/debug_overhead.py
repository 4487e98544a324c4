"""What debug mode (TRITIUM_DEBUG=1) costs on each host backend: a 2**22-element add and GELU.

    .venv/bin/python benchmarks/debug_overhead.py [--n 4194304] [--repeat 7] [--backends interpreter,cpu]

Each kernel runs once per backend to compile, then ``--repeat`` times with debug mode off and on,
alternating; the medians and their ratio are printed, and the debug-mode time of each backend
against the interpreter's. The outputs of every backend and mode must be identical. (The CPU
backend's debug mode runs a compiled variant with the checks, one program at a time.)
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tritium import compat  # noqa: E402

compat.install()
import kernels  # noqa: E402  (written against `import triton`)


def _time(fn, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 22)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--backends", default="interpreter,cpu")
    args = parser.parse_args()
    n, block = args.n, 1024
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    grid = ((n + block - 1) // block,)
    cases = {
        "add": lambda out, debug: kernels.vector_add[grid](x, y, out, n, BLOCK=block, debug=debug),
        "gelu_fwd": lambda out, debug: kernels.gelu_fwd[grid](x, out, n, BLOCK=block, debug=debug),
    }
    backends = [b for b in args.backends.split(",") if b]
    print(f"n = {n}, BLOCK = {block}, median of {args.repeat}")
    print(f"{'case':10} {'backend':12} {'off ms':>9} {'debug ms':>9} {'overhead':>9} {'debug vs interpreter':>21}")
    for name, launch in cases.items():
        reference = None
        debug_ms = {}
        for backend in backends:
            os.environ["TRITIUM_BACKEND"] = backend
            out_off, out_on = np.empty(n, np.float32), np.empty(n, np.float32)
            launch(out_off, False)
            launch(out_on, True)
            off, on = [], []
            for _ in range(args.repeat):
                off += _time(lambda: launch(out_off, False), 1)
                on += _time(lambda: launch(out_on, True), 1)
            assert out_off.tobytes() == out_on.tobytes(), f"{name} on {backend}: debug mode changed the result"
            reference = out_off if reference is None else reference
            assert out_off.tobytes() == reference.tobytes(), f"{name}: {backend} differs from {backends[0]}"
            m_off, m_on = statistics.median(off) * 1e3, statistics.median(on) * 1e3
            debug_ms[backend] = m_on
            versus = (f"{debug_ms['interpreter'] / m_on:20.1f}x" if "interpreter" in debug_ms
                      and backend != "interpreter" else "")
            print(f"{name:10} {backend:12} {m_off:9.1f} {m_on:9.1f} {100 * (m_on / m_off - 1):8.0f}% {versus}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
