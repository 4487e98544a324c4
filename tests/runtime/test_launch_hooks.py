"""Triton 3.9's runtime hooks, used as Triton's own runtime tests use them: launch hooks are chains
(``knobs.runtime.launch_enter_hook.add(f)`` / ``.remove(f)``) whose hooks get a metadata object with
``.get()`` (what ``@jit(launch_metadata=...)`` adds included); kernel-load hooks run around every
compilation with the kernel's hash; ``jit_cache_hook`` / ``jit_post_compile_hook`` run on every
kernel-cache miss. Assigning a single function, as before, still works."""
from __future__ import annotations

import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium import knobs


@pytest.fixture(autouse=True)
def _no_hooks_left_behind():
    runtime = knobs.runtime
    names = ("launch_enter_hook", "launch_exit_hook", "kernel_load_start_hook", "kernel_load_end_hook")
    with runtime.scope():
        for name in names:  # each test starts from an empty chain, whatever an earlier one assigned
            if not hasattr(getattr(runtime, name), "calls"):
                delattr(runtime, name)
        chains = [getattr(runtime, name) for name in names]
        before = [list(chain.calls) for chain in chains]
        yield
    for chain, calls in zip(chains, before):
        chain.calls[:] = calls


def _record_grid_and_value(grid, kernel, args):
    return {"grid": grid, "value": args["x"], "num_warps": kernel.num_warps}


@triton.jit(launch_metadata=_record_grid_and_value)
def _with_metadata(x, out_ptr):
    tl.store(out_ptr, x)


def test_an_added_enter_hook_sees_the_launch_metadata(backend):
    seen = []

    def hook(launch_metadata):
        seen.append(launch_metadata.get())

    out = torch.zeros(1, dtype=torch.int32)
    knobs.runtime.launch_enter_hook.add(hook)
    knobs.runtime.launch_enter_hook.add(hook)  # added once only
    for _ in range(2):  # the second launch would take the fast path, which hooks turn off
        _with_metadata[(1, 3, 2)](6, out)
    knobs.runtime.launch_enter_hook.remove(hook)
    _with_metadata[(1, 3, 2)](7, out)
    assert out.item() == 7 and len(seen) == 2
    assert seen[0]["grid"] == (1, 3, 2) and seen[0]["value"] == 6 and seen[0]["num_warps"] == 4
    assert seen[0]["name"] == "_with_metadata" and seen[0]["backend"] == backend


@triton.jit
def _add_one(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) + 1)


def test_enter_hooks_run_in_order_and_exit_hooks_in_reverse_around_the_launch(backend):
    calls = []
    x = torch.zeros(1)

    def hook(label):
        return lambda metadata: calls.append((label, metadata["name"], x.item()))

    first_in, second_in, first_out, second_out = hook("in 1"), hook("in 2"), hook("out 1"), hook("out 2")
    knobs.runtime.launch_enter_hook.add(first_in)
    knobs.runtime.launch_enter_hook.add(second_in)
    knobs.runtime.launch_exit_hook.add(first_out)
    knobs.runtime.launch_exit_hook.add(second_out)
    _add_one[(1,)](x)
    assert calls == [("in 1", "_add_one", 0.0), ("in 2", "_add_one", 0.0), ("out 2", "_add_one", 1.0),
                     ("out 1", "_add_one", 1.0)]


def test_an_assigned_function_replaces_the_chain_until_the_assignment_is_forgotten():
    calls = []
    chained, assigned = (lambda m: calls.append("chained")), (lambda m: calls.append("assigned"))
    x = torch.zeros(1)
    knobs.runtime.launch_enter_hook.add(chained)
    knobs.runtime.launch_enter_hook = assigned
    _add_one[(1,)](x)
    knobs.runtime.launch_enter_hook = None
    _add_one[(1,)](x)
    del knobs.runtime.launch_enter_hook  # back to the chain
    _add_one[(1,)](x)
    assert calls == ["assigned", "chained"] and x.item() == 3.0


def test_kernel_load_hooks_run_around_each_compilation_with_one_hash():
    starts, ends = [], []
    knobs.runtime.kernel_load_start_hook.add(lambda *args: starts.append(args))
    knobs.runtime.kernel_load_end_hook.add(lambda *args: ends.append(args))

    @triton.jit
    def kernel(x):
        pass

    kernel[(1, 3, 2)](6)
    kernel[(1, 3, 2)](6)  # cached: no new compilation
    kernel[(1,)](2**40)  # another specialization
    assert len(starts) == len(ends) == 2
    for (module, function, name, group, start_hash), (_, _, end_name, _, end_hash) in zip(starts, ends):
        assert module is None and function is None and name == end_name == "kernel" and isinstance(group, dict)
        assert start_hash == end_hash
    assert starts[0][4] != starts[1][4]


@pytest.mark.parametrize("options", [{"num_warps": 1}, {"enable_fp_fusion": False}])
def test_jit_cache_hooks_run_on_every_cache_miss(options, monkeypatch):
    monkeypatch.delenv("TRITON_DEFAULT_FP_FUSION", raising=False)  # Triton's default: fusion on
    compile_info, counter = {}, 0

    def post_compile(key, repr, fn, compile, is_manual_warmup, already_compiled):
        nonlocal compile_info
        compile_info = compile
        assert fn.jit_function is kernel and fn.name.endswith("kernel") and not already_compiled

    def cache_hook(*args, **kwargs):
        nonlocal counter
        counter += 1

    @triton.jit
    def kernel(x):
        pass

    knobs.runtime.jit_post_compile_hook = post_compile
    knobs.runtime.jit_cache_hook = cache_hook
    kernel[(1, 1, 1)](6)
    assert counter == 1
    kernel[(1, 1, 1)](6, **options)  # other options: a new compilation
    assert counter == 2
    kernel[(1, 1, 1)](6, **options)  # found in the cache
    assert counter == 2
    name, value = next(iter(options.items()))
    assert compile_info[name] == value
    kernel[(1, 1, 1)](6, extern_libs={})  # an option at its default value shares the first compilation
    assert counter == 2 and compile_info["extern_libs"] == ()


def test_a_cache_hook_that_answers_true_skips_the_compilation_and_the_launch():
    @triton.jit
    def add_two(x_ptr):
        tl.store(x_ptr, tl.load(x_ptr) + 2)

    asked = []
    knobs.runtime.jit_cache_hook = lambda **info: asked.append(info["compile"]["signature"]) or True
    x = torch.zeros(1)
    assert add_two[(1,)](x) is None
    assert x.item() == 0.0 and not add_two.cache and asked == [{"x_ptr": "ptr<fp32>"}]
    knobs.runtime.jit_cache_hook = None
    add_two[(1,)](x)
    assert x.item() == 2.0
