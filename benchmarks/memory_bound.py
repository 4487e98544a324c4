"""Peak memory of a 2**26-element elementwise kernel, relative to the memory of its arguments.

    .venv/bin/python benchmarks/memory_bound.py [--log2-n 26]

The interpreter runs programs in batches sized to keep each value's working set within
TRITIUM_BATCH_ELEMENTS elements, so its peak memory is the arguments plus a few MB; this prints
the peak RSS growth during the launch and its ratio to the arguments' size (goal: at most ~2x).
"""
from __future__ import annotations

import argparse
import resource

import torch

import tritium as triton
import tritium.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log2-n", type=int, default=26)
    n = 1 << parser.parse_args().log2_n
    x, y = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    args_mb = 3 * n * 4 / 2**20
    before = peak_rss_mb()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    after = peak_rss_mb()
    assert torch.equal(out, x + y)
    print(f"n = 2**{n.bit_length() - 1}: arguments {args_mb:.0f} MB, peak RSS {after:.0f} MB "
          f"(grew {after - before:.0f} MB during the launch); peak / arguments = {after / args_mb:.2f}")


if __name__ == "__main__":
    main()
