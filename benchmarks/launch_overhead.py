"""Host time of a warm launch on the CPU: a one-store kernel launched many times on the compiled CPU
backend, through the direct launcher (the fast path for repeated plain launches) and through the
generic launch path, side by side in one run, with the interpreter beside them.

`python benchmarks/launch_overhead.py [--launches N]`: best of 7 rounds of N launches each (default
5000), per launch in microseconds. The kernel does almost nothing, so the figure is the runtime's
own cost: argument binding, the specialization lookup, the argument block, the ctypes call.
"""
from __future__ import annotations

import argparse
import os
import time

import torch

import tritium
import tritium.language as tl
from tritium.backends.base import Executable as ExecutableBase
from tritium.backends.cpu import launcher


@tritium.jit
def store_one(x_ptr):
    tl.store(x_ptr, 1.0)


def per_launch_us(launches: int) -> float:
    x = torch.zeros(4)
    for _ in range(200):
        store_one[(1,)](x)
    tritium.backends.registry.get("cpu").wait_for_optimized_code()
    best = float("inf")
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(launches):
            store_one[(1,)](x)
        best = min(best, (time.perf_counter() - start) / launches * 1e6)
    assert x[0].item() == 1.0
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=5000)
    args = parser.parse_args()
    rows = []
    os.environ["TRITIUM_BACKEND"] = "cpu"
    rows.append(("cpu backend, direct launcher", per_launch_us(args.launches)))
    direct = launcher.Executable.direct_launcher
    # the generic path, what a launch took before it: the seam's default offers no direct launcher
    launcher.Executable.direct_launcher = ExecutableBase.direct_launcher
    store_one.cache.clear()
    try:
        rows.append(("cpu backend, generic launch path", per_launch_us(args.launches)))
    finally:
        launcher.Executable.direct_launcher = direct
    os.environ["TRITIUM_BACKEND"] = "interpreter"
    store_one.cache.clear()
    rows.append(("interpreter", per_launch_us(max(1, args.launches // 5))))
    for name, us in rows:
        print(f"{name:34} {us:8.2f} us  ({us / rows[0][1]:.2f}x the direct launcher)")


if __name__ == "__main__":
    main()
