"""``tritium demo``: every op of ``tritium.ops`` run forward and backward on the default backend,
checked against torch and timed beside it; then two stories, the chain-rule trap of a backward
kernel and an out-of-bounds access caught before it touches memory."""
from __future__ import annotations

import functools
import os
import time

import tritium as triton
import tritium.language as tl


def _demo_backend() -> tuple[str, str]:
    """(backend name, why): TRITIUM_BACKEND when set, else the compiled CPU backend when it can run
    here, else the first backend serving CPU tensors."""
    from . import config
    from .backends import registry

    requested = config.backend_name()
    if requested:
        return registry.for_device("cpu", requested).name, f"TRITIUM_BACKEND={requested} asks for it"
    if registry.get("cpu").is_available():
        return "cpu", "the fastest backend here (TRITIUM_BACKEND=interpreter runs the checked interpreter)"
    return registry.for_device("cpu").name, "the first available backend for CPU tensors"


def _backend_line(name: str, why: str) -> str:
    if name == "cpu":
        from .backends.cpu.launcher import thread_count

        how = (f"each kernel compiled through LLVM for this CPU, programs on {thread_count()} threads, every load "
               "and store still bounds-checked")
    else:
        how = "it runs a batch of programs per numpy call and bounds-checks every load and store"
    return f"backend: {name} -- {why}; {how}"


def _compute_threads(backend: str) -> int:
    if backend == "cpu":
        from .backends.cpu.launcher import thread_count

        return thread_count()
    return 1


def _bench(fn) -> float:
    """Milliseconds per call (the fastest of a few), with triton.testing.do_bench."""
    from .testing import do_bench

    return do_bench(fn, warmup=5, rep=40, return_mode="min")


def _max_error(outputs, references) -> float:
    """The largest ``max|ours - torch| / max|torch|`` over the output and the gradients."""
    errors = []
    for ours, theirs in zip(outputs, references):
        ours, theirs = ours.detach().double(), theirs.detach().double()
        errors.append((ours - theirs).abs().max().item() / max(theirs.abs().max().item(), 1e-30))
    return max(errors)


def _op_cases():
    """(name, size text, tritium function, torch function, input tensors) for each op."""
    import torch

    from tritium import ops

    F = torch.nn.functional
    g = torch.Generator().manual_seed(0)

    def randn(*shape, scale=1.0):
        return torch.randn(*shape, generator=g) * scale

    rows, cols = 1024, 1000
    x2 = randn(rows, cols, scale=2.0)
    weight, bias = randn(cols), randn(cols)
    vocab = 32000
    logits = randn(64, vocab, scale=3.0)
    target = torch.randint(0, vocab, (64,), generator=g)
    q, k, v = randn(2, 4, 256, 64), randn(2, 4, 256, 64), randn(2, 4, 256, 64)
    a, b, mm_bias = randn(384, 512), randn(512, 256), randn(256)
    return [
        ("gelu", "1M fp32", ops.gelu, F.gelu, [randn(1 << 20, scale=2.0)]),
        ("gelu (tanh)", "1M fp32", lambda x: ops.gelu(x, "tanh"), lambda x: F.gelu(x, approximate="tanh"),
         [randn(1 << 20, scale=2.0)]),
        ("bias + silu", f"{rows}x{cols} fp32", lambda x, b: ops.bias_activation(x, b, "silu"),
         lambda x, b: F.silu(x + b), [x2, bias]),
        ("softmax", f"{rows}x{cols} fp32", ops.softmax, lambda x: torch.softmax(x, -1), [x2]),
        ("log_softmax", f"{rows}x{cols} fp32", ops.log_softmax, lambda x: torch.log_softmax(x, -1), [x2]),
        ("layer_norm", f"{rows}x{cols} fp32", ops.layer_norm,
         lambda x, w, b: F.layer_norm(x, (cols,), w, b), [x2, weight, bias]),
        ("rms_norm", f"{rows}x{cols} fp32", ops.rms_norm, lambda x, w: F.rms_norm(x, (cols,), w, 1e-6),
         [x2, weight]),
        ("matmul+bias+gelu", "384x512 @ 512x256", lambda a, b, c: ops.matmul(a, b, c, "gelu"),
         lambda a, b, c: F.gelu(a @ b + c), [a, b, mm_bias]),
        ("cross_entropy", f"64x{vocab} fp32", lambda x: ops.cross_entropy(x, target),
         lambda x: F.cross_entropy(x, target), [logits]),
        ("attention causal", "2x4x256x64 fp32", lambda q, k, v: ops.scaled_dot_product_attention(q, k, v, True),
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), [q, k, v]),
    ]


def _run_op(fn, inputs, grad):
    import torch

    leaves = [x.detach().requires_grad_() for x in inputs]
    out = fn(*leaves)
    out.backward(grad if grad is not None else torch.ones_like(out))
    return [out] + [x.grad for x in leaves]


def _ops_rows() -> None:
    import torch

    for name, size, ours, theirs, inputs in _op_cases():
        with torch.no_grad():
            sample = theirs(*inputs)
        # a non-uniform grad_output: all ones would hide a backward that forgets to multiply by it
        grad = torch.randn(sample.shape, generator=torch.Generator().manual_seed(1)) if sample.dim() else None
        error = _max_error(_run_op(ours, inputs, grad), _run_op(theirs, inputs, grad))
        with torch.no_grad():
            forward_ours = _bench(functools.partial(ours, *inputs))
            forward_theirs = _bench(functools.partial(theirs, *inputs))
        both_ours = _bench(functools.partial(_run_op, ours, inputs, grad))
        both_theirs = _bench(functools.partial(_run_op, theirs, inputs, grad))
        print(f"{name:<18}{size:<20}{error:>16.1e}{forward_ours:>9.1f}/{forward_theirs:<6.1f}"
              f"{both_ours:>9.1f}/{both_theirs:<6.1f}")


def ops_table(backend: str = "interpreter") -> None:
    import torch

    from .ops.matmul import matmul_kernel

    print(f"{'op':<18}{'size':<20}{'error vs torch':>16}{'forward ms':>16}{'fwd+bwd ms':>16}")
    print(f"{'':<18}{'':<20}{'(relative)':>16}{'tritium/torch':>16}{'tritium/torch':>16}")
    threads = torch.get_num_threads()
    compute = _compute_threads(backend)
    torch.set_num_threads(compute)  # torch on as many cores as tritium's kernels
    try:
        _ops_rows()
    finally:
        torch.set_num_threads(threads)
    if matmul_kernel.configs_timings is None:
        tuning = f"tile sizes from the autotune cache in {os.path.join(_cache_dir(), 'autotune')}"
    else:
        tuning = (f"tile sizes autotuned ({len(matmul_kernel.configs_timings)} configs timed), saved to "
                  f"{os.path.join(_cache_dir(), 'autotune')} for the next run")
    print(f"(matmul: {tuning}; best {matmul_kernel.best_config.kwargs})")
    print("(error: max |tritium - torch| / max |torch| over the output and every input's gradient, with the same\n"
          " non-uniform grad_output; times: the fastest of a few calls by triton.testing.do_bench, torch on "
          f"{compute}\n thread{'s' if compute > 1 else ''}, as many as tritium's kernels use)")


def _cache_dir() -> str:
    from . import config

    return config.cache_dir().replace(os.path.expanduser("~"), "~", 1)


@triton.jit
def gelu_backward_forgets_grad_output(grad_out_ptr, x_ptr, grad_in_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    cdf = 0.5 * (1.0 + tl.math.erf(x * 0.7071067811865476))
    pdf = 0.3989422804014327 * tl.exp(-0.5 * x * x)
    tl.store(grad_in_ptr + offsets, cdf + x * pdf, mask=mask)  # the chain-rule trap: grad_out never used


def chain_rule_story() -> None:
    import torch

    from .ops.gelu import gelu_backward

    print("\nThe chain-rule trap (chapter 16): a backward kernel that forgets grad_output")
    x = torch.tensor([-1.0, 0.5, 2.0])
    for label, g in (("grad_output = 1", torch.ones(3)), ("grad_output = 2", torch.full((3,), 2.0))):
        good = gelu_backward(g, x)  # tritium.ops.gelu's backward: grad_output * gelu'(x)
        bad = torch.empty(3)
        gelu_backward_forgets_grad_output[(1,)](g, x, bad, 3, BLOCK=4)
        xr = x.clone().requires_grad_(True)
        torch.nn.functional.gelu(xr).backward(g)
        print(f"  {label}: correct kernel matches torch: {torch.allclose(good, xr.grad)}, "
              f"buggy kernel matches torch: {torch.allclose(bad, xr.grad)}")
    print("  -> test backward kernels with a non-uniform grad_output; .sum().backward() hides the bug.")


def out_of_bounds_story() -> None:
    import torch

    print("\nAnd a mistake a GPU would not report: an unmasked tail")
    n = 1000
    x = torch.randn(n)
    out = torch.empty(n)

    @triton.jit
    def unmasked_copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets))

    try:
        unmasked_copy[(triton.cdiv(n, 256),)](x, out, BLOCK=256)
    except triton.OutOfBoundsError as e:
        print("  " + str(e).replace("\n", "\n  "))


def main() -> int:
    import torch

    started = time.perf_counter()
    torch.manual_seed(0)
    print("tritium demo: the ops of tritium.ops (kernels in tritium's language, wired into torch.autograd),")
    print("run forward and backward, checked against torch and timed beside it")
    name, why = _demo_backend()
    print(_backend_line(name, why) + "\n")
    saved = os.environ.get("TRITIUM_BACKEND")
    os.environ["TRITIUM_BACKEND"] = name
    try:
        ops_table(name)
        chain_rule_story()
        out_of_bounds_story()
    finally:
        if saved is None:
            os.environ.pop("TRITIUM_BACKEND", None)
        else:
            os.environ["TRITIUM_BACKEND"] = saved
    print(f"\n(demo ran in {time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
