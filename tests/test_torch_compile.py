"""torch.compile on tritium: Inductor's generated Triton kernels and user kernels in compiled graphs.

Each scenario runs as a script under ``tritium run`` (so ``import triton`` is tritium in every
module torch imports, as it is for a user), with a fresh Inductor cache, and compares every result
with eager torch: fp32 within 1e-4 relative (and 1e-5 absolute, for values near zero), fp16 and
bf16 within their usual tolerances. A launch hook counts the kernels tritium ran, so a path that
silently fell back to Inductor's C++ code (or to eager) fails.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

PRELUDE = '''
import torch, triton
import torch._inductor.config as inductor_config
inductor_config.cpu_backend = "triton"
launches = []
triton.knobs.runtime.launch_enter_hook = lambda metadata: launches.append(metadata["name"])
failures = []

def close(out, ref, rtol=1e-4, atol=1e-5):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    return all(o.dtype == r.dtype and o.shape == r.shape and torch.allclose(o.double(), r.double(), rtol=rtol, atol=atol)
               for o, r in zip(outs, refs))

def check(name, fn, *args, rtol=1e-4, atol=1e-5, expect_launches=True, **compile_kwargs):
    torch._dynamo.reset()
    launches.clear()
    try:
        out = torch.compile(fn, **compile_kwargs)(*args)
    except Exception as error:
        failures.append(f"{name}: {type(error).__name__}: {str(error).splitlines()[0][:300]}")
        return
    if not close(out, fn(*args), rtol, atol):
        failures.append(f"{name}: differs from eager")
    elif expect_launches and not launches:
        failures.append(f"{name}: no kernel ran on tritium")
'''

EPILOGUE = '''
print("FAILURES:" + repr(failures))
'''


def _run(tmp_path, body: str, timeout: int = 600) -> list[str]:
    script = tmp_path / "scenario.py"
    script.write_text(PRELUDE + textwrap.dedent(body) + EPILOGUE)
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor-cache"))
    env.pop("TORCHINDUCTOR_COMPILE_THREADS", None)
    done = subprocess.run([sys.executable, "-m", "tritium", "run", str(script)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    last = [line for line in done.stdout.splitlines() if line.startswith("FAILURES:")]
    assert last, done.stdout[-2000:] + done.stderr[-2000:]
    return eval(last[-1][len("FAILURES:"):]), done


def test_inductor_kernels_for_models_run_on_tritium(tmp_path):
    failures, _ = _run(tmp_path, '''
        import torch.nn.functional as F
        torch.manual_seed(0)
        x = torch.randn(32, 96)
        check("pointwise", lambda a: torch.sigmoid(a) * a + torch.tanh(a), x)
        check("persistent reduction", lambda a: a.sum(dim=1), x)
        check("looped reduction", lambda a: a.amax(dim=1) + a.mean(dim=1), torch.randn(3, 20000))
        check("softmax", lambda a: torch.softmax(a, dim=-1), x)
        check("layer norm", lambda a: F.layer_norm(a, (96,)), x)
        check("sort", lambda a: torch.sort(a, dim=1)[0], x)
        check("cumsum", lambda a: torch.cumsum(a, 1), x)
        # fp16 and bf16 inputs (a cast inside the graph would be skipped: Inductor computes
        # a.half() * 2 in fp32 without rounding a to fp16 first, where eager rounds it)
        check("fp16", lambda a: (a * 2).exp(), x.half(), rtol=1e-3, atol=1e-3)
        check("bf16", lambda a: (a * 2).sin(), x.bfloat16(), rtol=1.6e-2, atol=1e-2)
        # random ops: the values depend on the generator, their distribution does not
        def rand_mask(a):
            return (torch.rand_like(a) < 2).float() * a, torch.rand_like(a).ge(0).all()
        check("rand_like", rand_mask, x)
        mlp = torch.nn.Sequential(torch.nn.Linear(96, 64), torch.nn.GELU(), torch.nn.Linear(64, 8))
        check("mlp forward", mlp, x)
        def forward_backward(a):
            a = a.clone().requires_grad_()
            mlp.zero_grad()
            mlp(a).pow(2).sum().backward()
            return a.grad, mlp[0].weight.grad
        check("mlp backward", forward_backward, x, rtol=1e-4, atol=1e-4)
        # dynamic shapes: one graph for three sizes
        from torch._dynamo.utils import counters
        torch._dynamo.reset()
        counters.clear()
        scaled = torch.compile(lambda a: a * 2 + 1, dynamic=True)
        for n in (37, 64, 1000):
            v = torch.randn(n)
            if not torch.equal(scaled(v), v * 2 + 1):
                failures.append(f"dynamic: size {n} differs")
        if counters["stats"]["unique_graphs"] != 1:
            failures.append(f"dynamic: {counters['stats']['unique_graphs']} graphs for three sizes")
        # matmul through Inductor's Triton templates, autotuned
        a, b = torch.randn(64, 32), torch.randn(32, 48)
        launches.clear()
        check("max-autotune matmul", lambda a, b: a @ b, a, b, mode="max-autotune")
        if not any(name.startswith("triton_mm") for name in launches):
            failures.append(f"max-autotune matmul: no template kernel ran ({sorted(set(launches))[:4]})")
    ''')
    assert failures == [], failures


# 50+ ops Inductor lowers to Triton, each on inputs in its domain
OPS = '''
    torch.manual_seed(0)
    x = torch.randn(8, 40)
    pos = torch.rand(8, 40) + 0.1
    unit = torch.rand(8, 40) * 1.8 - 0.9
    y = torch.randn(8, 40)
    ops = {
        "abs": (torch.abs, x), "neg": (torch.neg, x), "exp": (torch.exp, x), "exp2": (torch.exp2, x),
        "expm1": (torch.expm1, x), "log": (torch.log, pos), "log2": (torch.log2, pos), "log10": (torch.log10, pos),
        "log1p": (torch.log1p, pos), "sqrt": (torch.sqrt, pos), "rsqrt": (torch.rsqrt, pos),
        "sin": (torch.sin, x), "cos": (torch.cos, x), "tan": (torch.tan, unit), "asin": (torch.asin, unit),
        "acos": (torch.acos, unit), "atan": (torch.atan, x), "sinh": (torch.sinh, x), "cosh": (torch.cosh, x),
        "tanh": (torch.tanh, x), "asinh": (torch.asinh, x), "acosh": (torch.acosh, pos + 1),
        "atanh": (torch.atanh, unit), "erf": (torch.erf, x), "erfc": (torch.erfc, x), "erfinv": (torch.erfinv, unit),
        "sigmoid": (torch.sigmoid, x), "relu": (torch.relu, x), "gelu": (torch.nn.functional.gelu, x),
        "silu": (torch.nn.functional.silu, x), "softplus": (torch.nn.functional.softplus, x),
        "floor": (torch.floor, x * 3), "ceil": (torch.ceil, x * 3), "trunc": (torch.trunc, x * 3),
        "round": (torch.round, x * 3), "frac": (torch.frac, x * 3), "sign": (torch.sign, x),
        "reciprocal": (torch.reciprocal, pos), "square": (torch.square, x), "clamp": (lambda a: a.clamp(-0.5, 0.5), x),
        "pow": (lambda a: torch.pow(pos, a), x), "atan2": (lambda a: torch.atan2(a, y), x),
        "maximum": (lambda a: torch.maximum(a, y), x), "minimum": (lambda a: torch.minimum(a, y), x),
        "fmod": (lambda a: torch.fmod(a * 5, 1.5), x), "remainder": (lambda a: torch.remainder(a * 5, 1.5), x),
        "where": (lambda a: torch.where(a > 0, a, y), x), "lerp": (lambda a: torch.lerp(a, y, 0.3), x),
        "hypot": (lambda a: torch.hypot(a, y), x), "isnan": (lambda a: torch.isnan(a.log()), x),
        "sum": (lambda a: a.sum(1), x), "mean": (lambda a: a.mean(0), x), "amax": (lambda a: a.amax(1), x),
        "amin": (lambda a: a.amin(0), x), "prod": (lambda a: a.prod(1), unit), "var": (lambda a: a.var(1), x),
        "std": (lambda a: a.std(0), x), "argmax": (lambda a: a.argmax(1), x), "argmin": (lambda a: a.argmin(0), x),
        "logsumexp": (lambda a: torch.logsumexp(a, 1), x), "norm": (lambda a: a.norm(dim=1), x),
        "any": (lambda a: (a > 2).any(1), x), "all": (lambda a: (a > -3).all(1), x),
        "int_sum": (lambda a: (a * 10).int().sum(1), x), "bitwise": (lambda a: (a * 100).int() ^ 0x55, x),
        # casts whose result is stored (Inductor drops a round trip such as a.half().float()), with
        # values in range (out-of-range float -> int conversions differ by design)
        "cast_fp16": (lambda a: a.half(), x), "cast_int8": (lambda a: (a * 20).to(torch.int8), x),
    }
    for name, (op, arg) in ops.items():
        check(name, op, arg)
    print("OPS", len(ops))
'''


def test_a_sweep_of_ops_inductor_lowers_to_triton_matches_eager(tmp_path):
    failures, done = _run(tmp_path, OPS)
    count = int(done.stdout.split("OPS ")[1].split()[0])
    assert count >= 50
    assert failures == [], failures


def test_user_kernels_inside_compiled_graphs(tmp_path):
    (tmp_path / "user_kernels.py").write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl
        from torch.library import triton_op, wrap_triton

        @triton.jit
        def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

        @triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"])
        @triton.jit
        def add_tuned(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

        @triton.heuristics({"BLOCK": lambda args: 128 if args["n"] > 500 else 32})
        @triton.jit
        def add_heuristic(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

        @triton.jit
        def add_into(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

        @triton_op("tritium_test::add", mutates_args={})
        def add_op(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(x)
            wrap_triton(add_kernel)[(triton.cdiv(x.numel(), 64),)](x, y, out, x.numel(), BLOCK=64)
            return out

        def direct(x, y):
            out = torch.empty_like(x)
            add_kernel[(triton.cdiv(x.numel(), 64),)](x, y, out, x.numel(), BLOCK=64)
            return out * 2

        def wrapped(x, y):
            out = torch.empty_like(x)
            wrap_triton(add_kernel)[(triton.cdiv(x.numel(), 64),)](x, y, out, x.numel(), BLOCK=64)
            return out * 2

        def tuned(x, y):
            out = torch.empty_like(x)
            add_tuned[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, out, x.numel())
            return out * 2

        def heuristic(x, y):
            out = torch.empty_like(x)
            add_heuristic[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, out, x.numel())
            return out * 2

        def op(x, y):
            return add_op(x, y) * 2

        def in_place(x, y):
            z = x.clone()
            add_into[(triton.cdiv(z.numel(), 64),)](z, y, z.numel(), BLOCK=64)
            return z * 2
    '''))
    failures, _ = _run(tmp_path, '''
        import sys, logging
        sys.path.insert(0, ".")
        import user_kernels as k
        x, y = torch.randn(1000), torch.randn(1000)
        for backend in ("eager", "aot_eager", "inductor"):
            for name in ("direct", "wrapped", "tuned", "heuristic", "op", "in_place"):
                check(f"{backend} {name}", getattr(k, name), x, y, backend=backend, fullgraph=True)

        # which tensors torch copies around a user kernel: those it writes, from tritium's IR
        from torch._higher_order_ops import triton_kernel_wrap as w
        out = torch.empty_like(x)
        for kernel, args, written in ((k.add_kernel, dict(x_ptr=x, y_ptr=y, out_ptr=out), ["out_ptr"]),
                                      (k.add_tuned, dict(x_ptr=x, y_ptr=y, out_ptr=out), ["out_ptr"]),
                                      (k.add_into, dict(x_ptr=x, y_ptr=y), ["x_ptr"])):
            constants = {"n": 1000} if kernel is k.add_tuned else {"n": 1000, "BLOCK": 64}
            mutated = w.get_mutated_tensors(w.kernel_side_table.add_kernel(kernel),
                                            w.kernel_side_table.add_constant_args(constants), args, {})
            if mutated != written:
                failures.append(f"{kernel}: torch thinks {mutated} are written, not {written}")
        accesses = w.identify_accessed_tensors(k.add_kernel, dict(x_ptr=x, y_ptr=y, out_ptr=out, n=1000, BLOCK=64), {})
        if sorted(d.name for d in accesses.read_writes.reads) != ["x_ptr", "y_ptr"]:
            failures.append(f"reads: {accesses.read_writes.reads}")
    ''')
    assert failures == [], failures


def test_the_compile_workers_are_not_used_under_tritium(tmp_path):
    failures, _ = _run(tmp_path, '''
        if inductor_config.compile_threads != 1:
            failures.append(f"compile_threads is {inductor_config.compile_threads}")
    ''')
    assert failures == []
