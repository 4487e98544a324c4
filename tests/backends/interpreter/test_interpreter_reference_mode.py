"""The interpreter's reference mode (TRITIUM_REFERENCE=1), against which its fast paths are fuzzed."""
from __future__ import annotations

import torch

import tritium as triton
import tritium.language as tl


def test_reference_mode_runs_one_program_at_a_time_without_shortcuts(monkeypatch):
    """TRITIUM_REFERENCE=1: batches of one program, no affine values, no compaction; same results."""
    from tritium.backends.interpreter import affine, executor

    sizes, compactions = [], []
    original_run_batch = executor.Executor.run_batch
    original_compacted = executor.Executor.compacted

    def run_batch(self, pids, args):
        sizes.append(len(pids))
        return original_run_batch(self, pids, args)

    def compacted(self, members):
        compactions.append(len(members))
        return original_compacted(self, members)

    monkeypatch.setattr(executor.Executor, "run_batch", run_batch)
    monkeypatch.setattr(executor.Executor, "compacted", compacted)
    monkeypatch.setenv("TRITIUM_BACKEND", "interpreter")
    n = 100
    x = torch.arange(n, dtype=torch.float32)
    results = {}
    for reference in ("0", "1"):
        monkeypatch.setenv("TRITIUM_REFERENCE", reference)
        sizes.clear(), compactions.clear()
        out = torch.zeros(n)
        if reference == "1":
            for name in list(affine.AFFINE_HANDLERS):
                monkeypatch.setitem(affine.AFFINE_HANDLERS, name, None)  # any use would fail
        _reference_mode_kernel[(triton.cdiv(n, 16),)](x, out, n, BLOCK=16)
        results[reference] = (out.clone(), list(sizes), list(compactions))
    assert torch.equal(results["0"][0], results["1"][0])
    assert results["1"][1] == [1] * 7 and results["1"][2] == []
    assert results["0"][1] == [7] and results["0"][2]  # batched, and the loop was compacted


@triton.jit
def _reference_mode_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    acc = x
    for i in range(tl.program_id(0) % 3):  # a trip count per program: compacted when batched
        acc = acc * 0.5 + i
    tl.store(out_ptr + offs, acc, mask=offs < n)
