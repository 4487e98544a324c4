"""A flash-attention forward (``benchmarks/attention.py``: Triton tutorial 06's online softmax) under
tritium's CUDA backend and under Triton, config by config, on one GPU in one process, each checked
against torch's scaled_dot_product_attention, which is timed beside them.

    python benchmarks/gpu/attention_fwd.py [--batch 4] [--heads 32] [--seq 4096] [--repeat 3]

Each row: head dim, causal or not, the config (BLOCK_M x BLOCK_N, warps, stages), TFLOP/s (median of
``do_bench`` medians, alternating) of the pointer kernel under tritium with mma.sync, with Hopper's
wgmma (``wgmma=True``) and under Triton, and of the descriptor kernel (the tutorial's TMA variant's
shape) under tritium with wgmma and under Triton; the best tritium pointer kernel's ratio to Triton's,
the descriptor kernels' ratio, each one's first call (compilation included); per shape, each one's
best and SDPA's TFLOP/s.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from attention import launch, launch_descriptors, load  # noqa: E402

# (BLOCK_M, BLOCK_N, num_warps, num_stages) per head dim: tutorial 06's space on Hopper
CONFIGS = {64: [(128, 64, 8, 3), (128, 128, 8, 3), (128, 64, 4, 3), (64, 64, 4, 3), (128, 128, 8, 4)],
           128: [(128, 64, 8, 3), (128, 128, 8, 2), (128, 64, 8, 2), (64, 64, 4, 3), (128, 32, 8, 3)]}


def main() -> int:
    from triton.testing import do_bench

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--head-dims", default="64,128")
    args = parser.parse_args()
    modules = {"tritium": load("tritium"), "triton": load("triton")}
    # name -> (compiler, kernel, options): the pointer kernel with mma.sync, with wgmma and under Triton;
    # the descriptor kernel with wgmma and under Triton
    variants = {"tritium": ("tritium", "pointers", {}), "wgmma": ("tritium", "pointers", {"wgmma": True}),
                "triton": ("triton", "pointers", {}), "desc wgmma": ("tritium", "descriptors", {"wgmma": True}),
                "desc triton": ("triton", "descriptors", {})}
    print(f"card: {torch.cuda.get_device_name()}; attention forward, batch {args.batch}, heads {args.heads}, "
          f"seq {args.seq}, fp16; TFLOP/s")
    print(f"{'shape, config':>28} " + " ".join(f"{v:>11}" for v in variants) + f" {'ratio':>6} {'desc':>6} first s")
    summary = []
    for head_dim in (int(d) for d in args.head_dims.split(",")):
        generator = torch.Generator(device="cuda").manual_seed(head_dim)
        q, k, v = (torch.randn(args.batch, args.heads, args.seq, head_dim, device="cuda", generator=generator)
                   .half() for _ in range(3))
        out = torch.empty_like(q)
        for causal in (False, True):
            expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            flop = 4 * args.batch * args.heads * args.seq * args.seq * head_dim * (0.5 if causal else 1.0)
            best = {}
            for bm, bn, warps, stages in CONFIGS[head_dim]:
                def run(variant):
                    lib, kind, extra = variants[variant]
                    if kind == "pointers":
                        return launch(modules[lib].attention_fwd, q, k, v, out, causal, bm, bn, warps, stages,
                                      **extra)
                    return launch_descriptors(modules[lib].attention_fwd_descriptors, lib, q, k, v, out, causal,
                                              bm, bn, warps, stages, **extra)

                first, failed = {}, {}
                for variant in variants:
                    out.fill_(float("nan"))
                    start = time.perf_counter()
                    try:
                        run(variant)
                        torch.cuda.synchronize()
                        first[variant] = time.perf_counter() - start
                        torch.testing.assert_close(out, expected, rtol=1e-2, atol=1e-2)
                    except Exception as error:  # a config one compiler cannot run (shared memory) or gets wrong
                        failed[variant] = f"{type(error).__name__}: {str(error).splitlines()[0][:110]}"
                rates = {variant: [] for variant in first if variant not in failed}
                for _ in range(args.repeat):
                    for variant, values in rates.items():
                        ms = do_bench(lambda: run(variant), warmup=25, rep=100, return_mode="median")
                        values.append(flop / ms / 1e9)
                median = {variant: sorted(r)[len(r) // 2] for variant, r in rates.items()}
                for variant, rate in median.items():
                    best[variant] = max(best.get(variant, 0.0), rate)
                name = f"D{head_dim}{' causal' if causal else ''} {bm}x{bn} w{warps} s{stages}"
                cells = [f"{median[v]:11.1f}" if v in median else f"{'failed':>11}" for v in variants]
                ours = max((median[v] for v in ("tritium", "wgmma") if v in median), default=float("nan"))
                ratio = ours / median["triton"] if "triton" in median else float("nan")
                desc = median.get("desc wgmma", float("nan")) / median.get("desc triton", float("nan"))
                firsts = "/".join(f"{first.get(v, float('nan')):.1f}" for v in variants)
                print(f"{name:>28} {' '.join(cells)} {ratio:6.2f} {desc:6.2f} {firsts}", flush=True)
                for variant, why in failed.items():
                    print(f"    {variant}: {why}")
            ms = do_bench(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal),
                          warmup=25, rep=100, return_mode="median")
            summary.append((f"D{head_dim}{' causal' if causal else ''}", best, flop / ms / 1e9))
    print("best of the configs:")
    print(f"{'shape':>12} " + " ".join(f"{v:>11}" for v in variants) + f" {'ratio':>6} {'desc':>6} {'SDPA':>8}")
    for name, best, sdpa in summary:
        ours = max(best.get("tritium", 0.0), best.get("wgmma", 0.0))
        ratio = ours / best.get("triton", float("nan"))
        desc = best.get("desc wgmma", float("nan")) / best.get("desc triton", float("nan"))
        cells = " ".join(f"{best.get(v, float('nan')):11.1f}" for v in variants)
        print(f"{name:>12} {cells} {ratio:6.2f} {desc:6.2f} {sdpa:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
