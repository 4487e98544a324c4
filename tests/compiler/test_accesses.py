"""compiler/analysis/accesses.py, through JITFunction.pointer_accesses: which pointer arguments a
kernel reads and writes (what torch.compile copies around a user kernel).

Oracle: kernels written so that the answer is known by construction; where a pointer cannot be
traced to one argument (a run-time choice between two), it counts against every pointer argument.
"""
from __future__ import annotations

import torch

import tritium as triton
import tritium.language as tl


@triton.jit
def _add_and_count(x_ptr, y_ptr, out_ptr, count_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(out_ptr + i, tl.load(x_ptr + i, mask=m) + tl.load(y_ptr + i, mask=m), mask=m)
    tl.atomic_add(count_ptr, 1)


@triton.jit
def _chosen(a_ptr, b_ptr, c_ptr, FIRST: tl.constexpr, flag):
    p = a_ptr if FIRST else b_ptr
    tl.store(p, tl.load(c_ptr))
    q = a_ptr if flag > 0 else b_ptr  # chosen at run time
    tl.store(q + 1, 0.0)


@triton.jit
def _blocks(a_ptr, b_ptr, unused_ptr, M, N):
    t = tl.make_block_ptr(a_ptr, (M, N), (N, 1), (0, 0), (16, 16), (1, 0))
    o = tl.make_block_ptr(b_ptr, (M, N), (N, 1), (0, 0), (16, 16), (1, 0))
    for _ in range(2):
        tl.store(o, tl.load(t, boundary_check=(0, 1)), boundary_check=(0, 1))
        o = tl.advance(o, (0, 16))


def test_loads_stores_and_atomics_name_their_arguments():
    x = torch.zeros(16)
    reads, writes = _add_and_count.pointer_accesses(x, x, x, torch.zeros(1, dtype=torch.int32), 16, BLOCK=16)
    assert (reads, writes) == (["x_ptr", "y_ptr", "count_ptr"], ["out_ptr", "count_ptr"])


def test_a_pointer_chosen_at_run_time_counts_against_every_pointer_argument():
    x = torch.zeros(16)
    reads, writes = _chosen.pointer_accesses(x, x, x, True, 5)
    assert reads == ["c_ptr"] and writes == ["a_ptr", "b_ptr", "c_ptr"]


def test_block_pointers_advanced_in_a_loop():
    a = torch.zeros(16, 32)
    assert _blocks.pointer_accesses(a, a, a, 16, 32) == (["a_ptr"], ["b_ptr"])


def _choice(a_ptr, b_ptr, c_ptr, n, W: tl.constexpr):
    if W == 0:
        tl.store(a_ptr, tl.load(c_ptr))
    else:
        tl.store(b_ptr, tl.load(c_ptr))


# the same kernel, its W chosen by autotuning over both values, or by a heuristic of n
_tuned_choice = triton.autotune(configs=[triton.Config({"W": 0}), triton.Config({"W": 1})], key=["n"])(
    triton.jit(_choice))
_heuristic_choice = triton.heuristics({"W": lambda args: 1 if args["n"] > 2 else 0})(triton.jit(_choice))


def test_what_torch_is_told_covers_every_autotune_config_and_computes_heuristics():
    from tritium.compat_torch import _accesses

    x = torch.zeros(4)
    args = {"a_ptr": x, "b_ptr": x, "c_ptr": x, "n": 4}
    assert _accesses(_tuned_choice, args, {}) == (["c_ptr"], ["a_ptr", "b_ptr"])  # one config writes each
    assert _accesses(_heuristic_choice, args, {}) == (["c_ptr"], ["b_ptr"])
    assert _accesses(_heuristic_choice, dict(args, n=1), {}) is not None


def test_torch_versions_with_the_older_analysis_function_get_tritium_s_answer():
    """torch before 2.12 has identify_mutated_tensors (the written tensors' names) instead of
    identify_accessed_tensors; either is wrapped, and a module with neither is left alone."""
    import types

    from tritium import compat_torch

    older = types.ModuleType("older_triton_kernel_wrap")
    older.identify_mutated_tensors = lambda kernel, kwargs, tma: ["torch's own answer"]
    compat_torch._answer_from_tritium_ir(older)
    x = torch.zeros(4)
    args = {"a_ptr": x, "b_ptr": x, "c_ptr": x, "n": 4}
    assert older.identify_mutated_tensors(_tuned_choice, args, {}) == ["a_ptr", "b_ptr"]
    assert older.identify_mutated_tensors(object(), {}, {}) == ["torch's own answer"]
    neither = types.ModuleType("unknown")
    compat_torch._answer_from_tritium_ir(neither)
    assert not hasattr(neither, "identify_mutated_tensors")
