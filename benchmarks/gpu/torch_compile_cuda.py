"""torch.compile on CUDA tensors with tritium as Triton, beside Inductor with the real Triton.

    python3 -m tritium run benchmarks/gpu/torch_compile_cuda.py     # Inductor's kernels on tritium
    python3 benchmarks/gpu/torch_compile_cuda.py                     # the same on the installed Triton

On a machine with a GPU, torch and (for the second line) Triton. Each scenario compiles a function
with ``torch.compile`` and compares its result with eager torch (fp32 within 1e-4 relative and 1e-5
absolute; fp16/bf16 within their usual tolerances); a launch hook counts the Triton kernels that
ran, so a scenario that silently fell back to eager fails. Then the transformer block of
docs/torch-compile.md (wider: x of shape (8, 512, 512), 8 heads), forward and backward, is timed
(median of 20 steps after 3 warm-ups, CUDA-synchronized): eager and compiled. Prints one line per
scenario, the timings, and on failure the end of the traceback; exits non-zero when a scenario
fails.
"""
from __future__ import annotations

import statistics
import sys
import time
import traceback
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from transformer_block import Block  # noqa: E402

DEVICE = "cuda"
UNDER_TRITIUM = hasattr(triton, "__tritium_version__")
launches: list[str] = []


def count_launch(metadata) -> None:
    launches.append(metadata.get("name", "?") if isinstance(metadata, dict) else getattr(metadata, "name", "?"))


def close(out, ref, rtol, atol) -> bool:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    return all(o.dtype == r.dtype and o.shape == r.shape and torch.allclose(o.double(), r.double(), rtol=rtol, atol=atol)
               for o, r in zip(outs, refs))


failures = []


def check(name, fn, *args, rtol=1e-4, atol=1e-5, **compile_kwargs) -> None:
    torch._dynamo.reset()
    launches.clear()
    triton.knobs.runtime.launch_enter_hook = count_launch  # off again for the timings: a hook slows launches
    try:
        out = torch.compile(fn, **compile_kwargs)(*args)
        torch.cuda.synchronize()
        ok = close(out, fn(*args), rtol, atol)
        ran = len(launches)
        status = "ok" if ok and (ran or not UNDER_TRITIUM) else ("differs from eager" if not ok else "no kernel ran")
    except Exception:  # noqa: BLE001 - reported
        status = "error: " + traceback.format_exc().strip().splitlines()[-1][:300]
        print(traceback.format_exc()[-3000:], file=sys.stderr)
        ran = len(launches)
    if status != "ok":
        failures.append(f"{name}: {status}")
    print(f"  {name:22} {status} ({ran} launches)", flush=True)


def scenarios() -> None:
    torch.manual_seed(0)
    x = torch.randn(64, 384, device=DEVICE)
    check("pointwise", lambda a: torch.sigmoid(a) * a + torch.tanh(a), x)
    check("persistent reduction", lambda a: a.sum(dim=1), x)
    check("looped reduction", lambda a: a.amax(dim=1) + a.mean(dim=1), torch.randn(8, 100000, device=DEVICE))
    check("softmax", lambda a: torch.softmax(a, dim=-1), x)
    check("layer norm", lambda a: F.layer_norm(a, (384,)), x)
    check("sort", lambda a: torch.sort(a, dim=1)[0], x[:, :128])
    check("cumsum", lambda a: torch.cumsum(a, 1), x)
    check("fp16", lambda a: (a * 2).exp(), x.half(), rtol=1e-3, atol=1e-3)
    check("bf16", lambda a: (a * 2).sin(), x.bfloat16(), rtol=1.6e-2, atol=1e-2)
    check("erfinv", lambda a: torch.erfinv(a.clamp(-0.9, 0.9)), x)
    mlp = nn.Sequential(nn.Linear(384, 256), nn.GELU(), nn.Linear(256, 16)).to(DEVICE)
    check("mlp forward", mlp, x)

    def forward_backward(a):
        a = a.clone().requires_grad_()
        mlp.zero_grad()
        mlp(a).pow(2).sum().backward()
        return a.grad, mlp[0].weight.grad

    check("mlp backward", forward_backward, x, rtol=1e-3, atol=1e-4)
    a, b = torch.randn(256, 128, device=DEVICE), torch.randn(128, 192, device=DEVICE)
    check("max-autotune matmul", lambda a, b: a @ b, a, b, rtol=1e-2, atol=1e-2, mode="max-autotune-no-cudagraphs")
    block = Block(64, 4).to(DEVICE)
    bx = torch.randn(2, 32, 64, device=DEVICE)

    def block_step(inp):
        inp = inp.clone().requires_grad_()
        block.zero_grad()
        out = block(inp)
        out.square().sum().backward()
        return out, inp.grad

    check("transformer block", block_step, bx, rtol=1e-3, atol=1e-3)


def timings() -> None:
    triton.knobs.runtime.launch_enter_hook = None
    torch.manual_seed(0)
    block = Block(512, 8).to(DEVICE)
    x = torch.randn(8, 512, 512, device=DEVICE, requires_grad=True)

    def step(module):
        out = module(x)
        out.square().mean().backward()

    def median_ms(module) -> float:
        for _ in range(3):
            step(module)
        torch.cuda.synchronize()
        times = []
        for _ in range(20):
            start = time.perf_counter()
            step(module)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)

    torch._dynamo.reset()
    eager = median_ms(block)
    compiled_block = torch.compile(block)
    start = time.perf_counter()
    step(compiled_block)
    torch.cuda.synchronize()
    first = time.perf_counter() - start
    compiled = median_ms(compiled_block)
    who = "tritium" if UNDER_TRITIUM else f"Triton {triton.__version__}"
    print(f"transformer block (8, 512, 512), 8 heads, fwd+bwd: eager {eager:.2f} ms, "
          f"torch.compile on {who} {compiled:.2f} ms (eager/compiled {eager / compiled:.2f}; first step {first:.1f} s)")
    if "--profile" in sys.argv:  # where a compiled step's GPU time goes, and how long the host takes to issue it
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                step(compiled_block)
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=14, max_name_column_width=60))


def main() -> int:
    who = f"tritium {triton.__tritium_version__} as Triton" if UNDER_TRITIUM else f"Triton {triton.__version__}"
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}, Inductor's kernels on {who}")
    scenarios()
    try:
        timings()
    except Exception:  # noqa: BLE001 - reported
        failures.append("timings: " + traceback.format_exc().strip().splitlines()[-1][:300])
        print(traceback.format_exc()[-3000:], file=sys.stderr)
    print(f"{len(failures)} failures" + ("".join(f"\n  {f}" for f in failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
