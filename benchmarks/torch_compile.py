"""torch.compile through tritium beside Inductor's default C++ code and beside eager, in one run.

    python benchmarks/torch_compile.py [--repeat N] [--batch B] [--seq T] [--dim D]

The model is the transformer block of docs/torch-compile.md (LayerNorm, attention with softmax,
an MLP with GELU). In one process, one after another: eager; ``torch.compile`` with Inductor's
C++ CPU code (``cpu_backend="cpp"``); ``torch.compile`` with Inductor's Triton code on tritium's
interpreter and on its compiled CPU backend (``cpu_backend="triton"``, ``TRITIUM_BACKEND``). Each
times a forward and backward step: one warm-up step (which compiles), then the median of N.
Every variant's output and input gradient are checked against eager (1e-4). Printed: ms per
step and the ratio eager ms / variant ms (above 1: faster than eager).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--dim", type=int, default=256)
    args = parser.parse_args(argv)

    import tritium.compat

    tritium.compat.install()
    import torch
    import torch._inductor.config as inductor_config

    from transformer_block import Block

    import tritium

    inductor_config.force_disable_caches = True  # each variant compiles its own kernels
    backends_used = []

    def record_backend(metadata):
        backends_used.append(metadata["backend"])
    torch.manual_seed(0)
    block = Block(args.dim)
    x = torch.randn(args.batch, args.seq, args.dim)

    def step(model):
        inp = x.clone().requires_grad_()
        out = model(inp)
        out.square().mean().backward()
        return out.detach(), inp.grad

    expected = step(block)

    def measure(name, model):
        backends_used.clear()
        tritium.knobs.runtime.launch_enter_hook = record_backend  # which backends ran the first step
        start = time.perf_counter()
        result = step(model)  # compiles
        first = time.perf_counter() - start
        tritium.knobs.runtime.launch_enter_hook = None  # a hook sends every launch down the generic path
        ok = all(torch.allclose(a, b, rtol=1e-4, atol=1e-4) for a, b in zip(result, expected))
        tritium.backends.registry.get("cpu").wait_for_optimized_code()  # time the optimized code
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            step(model)
            times.append(time.perf_counter() - start)
        return name, statistics.median(times) * 1e3, first, ok, sorted(set(backends_used))

    rows = [measure("eager", block)]
    for name, cpu_backend, backend in (("inductor C++", "cpp", None), ("tritium interpreter", "triton", "interpreter"),
                                       ("tritium cpu", "triton", "cpu")):
        torch._dynamo.reset()
        inductor_config.cpu_backend = cpu_backend
        if backend:
            os.environ["TRITIUM_BACKEND"] = backend
        rows.append(measure(name, torch.compile(block)))
        os.environ.pop("TRITIUM_BACKEND", None)
    eager_ms = rows[0][1]
    print(f"transformer block forward+backward, x {tuple(x.shape)}, {torch.get_num_threads()} torch threads, "
          f"median of {args.repeat}")
    print(f"{'variant':22} {'ms/step':>9} {'first step s':>13} {'eager/variant':>14}  check  tritium backends")
    for name, ms, first, ok, used in rows:
        print(f"{name:22} {ms:9.2f} {first:13.1f} {eager_ms / ms:14.2f}  {'ok   ' if ok else 'WRONG'}  "
              f"{', '.join(used) or '-'}")
    expected_backends = {"tritium interpreter": ["interpreter"], "tritium cpu": ["cpu"]}
    placed = all(used == expected_backends.get(name, []) for name, _, _, _, used in rows)
    if not placed:
        print("a variant ran on other backends than it names")
    return 0 if placed and all(row[3] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
