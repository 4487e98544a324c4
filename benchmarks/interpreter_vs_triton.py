"""tritium's interpreter against Triton's own interpreter (TRITON_INTERPRET=1), on the same kernels.

Run with tritium's environment:

    python benchmarks/interpreter_vs_triton.py [--cases add,gelu_fwd,...] [--repeat N]
        [--triton-repeat N] [--triton-python /path/env/bin/python] [--skip-triton]
        [--baseline /path/to/another/checkout]

``--baseline`` also runs every case on the tritium found in that checkout's ``src/`` (e.g. a
``git worktree`` of an earlier commit), in the same run, and prints its times beside this tree's
with the ratio baseline ms / tritium ms: a check that a change did not slow the interpreter.

Every case runs in a fresh subprocess of this script (``--worker tritium`` with this Python,
``--worker triton`` with the Triton environment's Python and TRITON_INTERPRET=1), so each
side's peak RSS is that case's own. A worker builds the inputs with a fixed torch seed, times
the kernel (one warm-up launch, which also compiles, then the median of N launches), times
torch eager doing the same work, and prints one JSON line. The parent prints the table and
exits non-zero if any tritium result misses its tolerance. Triton's errors are reported but
not enforced: this is a check of tritium.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import torch

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = "@@bench@@ "  # prefix of a worker's result line, so other output on stdout is harmless
SEED = 0


# --- the cases -----------------------------------------------------------------------------------

@dataclass
class Case:
    """What a case is: how to make its inputs, run the kernel on them, and compute torch's answer.

    The tolerance on max |kernel - torch| is ``atol + rtol_of_max * max|torch|``."""

    size: str
    build: Callable[[], dict]  # -> inputs (made after torch.manual_seed(SEED))
    launch: Callable[[dict], torch.Tensor]  # -> the kernel's output
    reference: Callable[[dict], torch.Tensor]  # -> torch eager's output for the same work
    atol: float = 0.0
    rtol_of_max: float = 0.0
    why: str = ""  # what the tolerance allows for

    def tolerance(self, ref) -> float:
        return self.atol + self.rtol_of_max * ref.abs().max().item()


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def case_add(k, torch) -> Case:
    n, block = 2**22, 1024

    def launch(d):
        out = torch.empty_like(d["x"])
        k.vector_add[(cdiv(n, block),)](d["x"], d["y"], out, n, BLOCK=block)
        return out

    return Case(f"{n} fp32", lambda: {"x": torch.randn(n), "y": torch.randn(n)}, launch,
                lambda d: d["x"] + d["y"], atol=0.0, why="one fp32 add, correctly rounded: bit-exact")


def case_gelu_fwd(k, torch) -> Case:
    n, block = 2**22, 1024

    def launch(d):
        out = torch.empty_like(d["x"])
        k.gelu_fwd[(cdiv(n, block),)](d["x"], out, n, BLOCK=block)
        return out

    return Case(f"{n} fp32", lambda: {"x": torch.randn(n)}, launch,
                lambda d: torch.nn.functional.gelu(d["x"], approximate="none"),
                atol=1e-5, why="a few fp32 ulps of |y| <= 5.5 (erf, then 3 rounded ops)")


def case_gelu_bwd(k, torch) -> Case:
    n, block = 2**22, 1024

    def launch(d):
        out = torch.empty_like(d["x"])
        k.gelu_bwd[(cdiv(n, block),)](d["dy"], d["x"], out, n, BLOCK=block)
        return out

    def reference(d):  # torch's own GELU backward, the same op autograd runs
        return torch.ops.aten.gelu_backward(d["dy"], d["x"], approximate="none")

    return Case(f"{n} fp32", lambda: {"x": torch.randn(n), "dy": torch.randn(n)}, launch, reference,
                atol=1e-5, why="a few fp32 ulps of |dx| <~ 5")


def case_softmax(k, torch) -> Case:
    rows, cols, block = 4096, 1024, 1024

    def launch(d):
        x = d["x"]
        out = torch.empty_like(x)
        k.softmax_rows[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=block)
        return out

    return Case(f"{rows}x{cols} fp32", lambda: {"x": torch.randn(rows, cols)}, launch,
                lambda d: torch.softmax(d["x"], dim=1), atol=1e-6,
                why="outputs <= ~0.05; fp32 exp and a 1024-term sum: ~1e-9 expected")


def case_layernorm(k, torch) -> Case:
    rows, cols, block, eps = 4096, 1024, 1024, 1e-5

    def build():
        return {"x": torch.randn(rows, cols), "w": torch.randn(cols), "b": torch.randn(cols)}

    def launch(d):
        x = d["x"]
        out = torch.empty_like(x)
        k.layernorm_rows[(rows,)](x, d["w"], d["b"], out, cols, x.stride(0), eps, BLOCK=block)
        return out

    return Case(f"{rows}x{cols} fp32", build, launch,
                lambda d: torch.nn.functional.layer_norm(d["x"], (cols,), d["w"], d["b"], eps),
                atol=2e-5, why="|y| <~ 20; fp32 mean/var over 1024 terms: a few ulps")


def _matmul_case(k, torch, size: int, tile: tuple, dtype) -> Case:
    M = N = K = size
    tm, tn, tk = tile

    def build():
        return {"a": torch.randn(M, K).to(dtype), "b": torch.randn(K, N).to(dtype)}

    def launch(d):
        a, b = d["a"], d["b"]
        c = torch.empty(M, N, dtype=dtype)
        k.matmul_tiled[(cdiv(M, tm), cdiv(N, tn))](a, b, c, M, N, K, a.stride(0), a.stride(1),
                                                   b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                                   TILE_M=tm, TILE_N=tn, TILE_K=tk)
        return c

    if dtype == torch.float32:
        return Case(f"{M}x{K}x{N} fp32, tiles {tm}x{tn}x{tk}", build, launch, lambda d: d["a"] @ d["b"],
                    rtol_of_max=1e-2,
                    why="1% of max|C|: tl.dot on fp32 defaults to tf32 (10-bit mantissa inputs)")
    # fp16 inputs, fp32 accumulation, fp16 output: torch does exactly that on fp32 copies.
    return Case(f"{M}x{K}x{N} fp16->fp32 acc->fp16, tiles {tm}x{tn}x{tk}", build, launch,
                lambda d: (d["a"].float() @ d["b"].float()).to(dtype),
                rtol_of_max=2**-10, why="one fp16 ulp at max|C| (fp32 sums in another order may round the other way)")


def case_matmul_fp32(k, torch) -> Case:
    return _matmul_case(k, torch, 512, (32, 32, 32), torch.float32)


def case_matmul_fp16(k, torch) -> Case:
    return _matmul_case(k, torch, 1024, (64, 64, 32), torch.float16)


def case_attention(k, torch) -> Case:
    bh, seq, dim, block_m, block_n = 8, 512, 64, 64, 64
    scale = 1.0 / math.sqrt(dim)

    def build():
        return {name: torch.randn(bh, seq, dim) for name in ("q", "k", "v")}

    def launch(d):
        out = torch.empty_like(d["q"])
        k.causal_attention_fwd[(cdiv(seq, block_m), bh)](d["q"], d["k"], d["v"], out, seq, scale,
                                                         HEAD_DIM=dim, BLOCK_M=block_m, BLOCK_N=block_n)
        return out

    def reference(d):
        return torch.nn.functional.scaled_dot_product_attention(d["q"], d["k"], d["v"], is_causal=True)

    return Case(f"bh={bh} seq={seq} d={dim} causal fp32", build, launch, reference, atol=1e-2,
                why="|O| <~ 3; both dots default to tf32 (rel. 2^-10 on each input)")


CASES = {
    "add": case_add,
    "gelu_fwd": case_gelu_fwd,
    "gelu_bwd": case_gelu_bwd,
    "softmax": case_softmax,
    "layernorm": case_layernorm,
    "matmul_fp32": case_matmul_fp32,
    "matmul_fp16": case_matmul_fp16,
    "attention": case_attention,
}


# --- a worker: one side, in its own process ------------------------------------------------------

def median_ms(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """One warm-up call (compilation happens there), then the median of ``repeat`` timed calls."""
    result = fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), result


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def run_worker(side: str, names: list[str], repeat: int) -> int:
    if side == "tritium":
        import tritium.compat

        tritium.compat.install()  # from here on, `import triton` is tritium
    else:
        os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before triton is imported
    import torch

    sys.path.insert(0, HERE)
    import kernels
    import triton

    version = getattr(triton, "__version__", "?")
    base_rss = peak_rss_mb()
    for name in names:
        record = {"side": side, "case": name, "version": version, "base_rss_mb": base_rss}
        try:
            case = CASES[name](kernels, torch)
            torch.manual_seed(SEED)
            inputs = case.build()
            ref = case.reference(inputs)
            record["torch_ms"], _ = median_ms(lambda: case.reference(inputs), max(repeat, 3))
            record["ms"], out = median_ms(lambda: case.launch(inputs), repeat)
            record["max_err"] = (out.double() - ref.double()).abs().max().item()
            record["tol"] = case.tolerance(ref.double())
            record["size"], record["why"] = case.size, case.why
        except Exception as e:  # report it; the parent shows it under the table
            import traceback

            record["error"] = f"{type(e).__name__}: {e}"
            record["traceback"] = traceback.format_exc()
        record["peak_rss_mb"] = peak_rss_mb()
        print(MARK + json.dumps(record), flush=True)
    return 0


# --- the parent: spawn workers, print the table --------------------------------------------------

def spawn(python: str, side: str, case: str, repeat: int, timeout: float, source: str | None = None) -> dict:
    env = dict(os.environ)
    if source is not None:  # another tritium: its src/ first on the path, ahead of the installed one
        env["PYTHONPATH"] = os.pathsep.join([os.path.join(source, "src")] + [p for p in [env.get("PYTHONPATH")] if p])
    if side == "triton":
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    cmd = [python, os.path.abspath(__file__), "--worker", side, "--cases", case, "--repeat", str(repeat)]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
    return {"error": f"worker exited with status {proc.returncode}", "traceback": "\n".join(tail)}


def triton_available(python: str) -> str | None:
    """The Triton version importable by ``python`` (with TRITON_INTERPRET=1), or None."""
    if not python or not os.path.exists(python):
        return None
    env = dict(os.environ, TRITON_INTERPRET="1")
    probe = "import numpy, torch, triton, triton.language; print(triton.__version__)"
    proc = subprocess.run([python, "-c", probe], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"note: {python} cannot run Triton's interpreter:\n  {proc.stderr.strip().splitlines()[-1]}")
        return None
    return proc.stdout.strip()


def fmt(value, spec: str) -> str:
    """``format(value, spec)``, or a '-' as wide as the spec's field when there is no value."""
    width = int(spec.split(".")[0] or 0)
    return "-".rjust(width) if value is None else format(value, spec)


def run_parent(args) -> int:
    from tritium.runtime.driver import cpu_name

    names = args.cases
    triton_version = None if args.skip_triton else triton_available(args.triton_python)
    print(f"machine: {cpu_name()}, {os.cpu_count()} CPUs; python {platform.python_version()}")
    print(f"tritium: {sys.executable} (repeat {args.repeat}, median after 1 warm-up)")
    if args.baseline:
        print(f"baseline: the tritium in {args.baseline}/src, same Python and repeat")
    if triton_version:
        print(f"Triton {triton_version} interpreter: {args.triton_python} "
              f"(TRITON_INTERPRET=1, repeat {args.triton_repeat}, median after 1 warm-up)")
    else:
        print("Triton: skipped")
    print()

    rows, baseline = [], {}
    for name in names:
        if args.baseline:
            baseline[name] = spawn(sys.executable, "tritium", name, args.repeat, args.timeout, args.baseline)
        ours = spawn(sys.executable, "tritium", name, args.repeat, args.timeout)
        theirs = spawn(args.triton_python, "triton", name, args.triton_repeat, args.timeout) if triton_version else {}
        rows.append((name, ours, theirs))
        status = "error" if "error" in ours else f"{ours['ms']:.1f} ms"
        other = "" if not triton_version else ("error" if "error" in theirs else f"{theirs['ms']:.1f} ms")
        print(f"  done {name:<12} tritium {status:<12} {'Triton ' + other if other else ''}", file=sys.stderr)

    header = (f"{'case':<12} {'tritium ms':>11} {'Triton ms':>11} {'ratio':>8} {'torch ms':>9} "
              f"{'tritium err':>11} {'tolerance':>10} {'ok':>4} {'Triton err':>11} {'RSS MB ours':>11} {'RSS MB Triton':>13}")
    print(header)
    print("-" * len(header))
    ratios, failures = [], []
    for name, ours, theirs in rows:
        ok_ours, ok_theirs = "error" not in ours, bool(theirs) and "error" not in theirs
        ratio = theirs["ms"] / ours["ms"] if ok_ours and ok_theirs else None
        if ratio is not None:
            ratios.append(ratio)
        passed = ok_ours and ours["max_err"] <= ours["tol"]
        if not passed:
            failures.append(name)
        print(f"{name:<12} {fmt(ours.get('ms'), '11.1f')} {fmt(theirs.get('ms') if ok_theirs else None, '11.1f')} "
              f"{(fmt(ratio, '.1f') + ('x' if ratio else '')):>8} {fmt(ours.get('torch_ms'), '9.2f')} "
              f"{fmt(ours.get('max_err'), '11.2e')} {fmt(ours.get('tol'), '10.2e')} "
              f"{('PASS' if passed else 'FAIL' if ok_ours else 'ERR'):>4} "
              f"{fmt(theirs.get('max_err') if ok_theirs else None, '11.2e')} "
              f"{fmt(ours.get('peak_rss_mb'), '11.0f')} {fmt(theirs.get('peak_rss_mb') if theirs else None, '13.0f')}")
    print("-" * len(header))
    if ratios:
        print(f"ratio = Triton-interpreter ms / tritium ms over {len(ratios)} cases: "
              f"median {statistics.median(ratios):.1f}x, minimum {min(ratios):.1f}x")
    if baseline:
        print(f"\n{'case':<12} {'baseline ms':>12} {'tritium ms':>11} {'baseline/tritium':>17}")
        speedups = []
        for name, ours, _ in rows:
            before = baseline[name]
            ratio = before["ms"] / ours["ms"] if "error" not in before and "error" not in ours else None
            if ratio is not None:
                speedups.append(ratio)
            print(f"{name:<12} {fmt(before.get('ms'), '12.1f')} {fmt(ours.get('ms'), '11.1f')} "
                  f"{(fmt(ratio, '.2f') + ('x' if ratio else '')):>17}")
        if speedups:
            print(f"baseline ms / tritium ms over {len(speedups)} cases: median {statistics.median(speedups):.2f}x, "
                  f"minimum {min(speedups):.2f}x (above 1: this tree is faster)")
    base = [r.get("base_rss_mb") for _, r, _ in rows if r.get("base_rss_mb")]
    base_t = [r.get("base_rss_mb") for _, _, r in rows if r and r.get("base_rss_mb")]
    if base:
        print(f"peak RSS includes each process's imports: about {statistics.median(base):.0f} MB before any case "
              f"for tritium" + (f", {statistics.median(base_t):.0f} MB for Triton" if base_t else ""))

    print("\ncases and tolerances (tolerance = atol + rtol * max|torch|):")
    for name, ours, _ in rows:
        if "size" in ours:
            print(f"  {name:<12} {ours['size']}: {ours['why']}")
    for name, ours, theirs in rows:
        for side, rec in (("tritium", ours), ("Triton", theirs)):
            if rec and "error" in rec:
                print(f"\n{side} failed on {name}: {rec['error']}")
                if rec.get("traceback"):
                    print("    " + rec["traceback"].strip().replace("\n", "\n    "))
    if failures:
        print(f"\nFAIL: tritium missed its tolerance or errored on: {', '.join(failures)}")
        return 1
    print(f"\nall {len(rows)} tritium results within tolerance")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"comma-separated, from: {', '.join(CASES)} (default: all)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="timed launches per case after one warm-up (default 3; 1 in a --worker triton)")
    parser.add_argument("--triton-repeat", type=int, default=1,
                        help="timed launches per case for Triton's interpreter (default 1: it is slow)")
    parser.add_argument("--triton-python", default="/tmp/triton-env/bin/python",
                        help="a Python with torch and triton installed (default %(default)s)")
    parser.add_argument("--skip-triton", action="store_true", help="run tritium only")
    parser.add_argument("--baseline", default=None,
                        help="a checkout of another tritium version (its src/ is used) to time beside this one")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per worker process")
    parser.add_argument("--worker", choices=("tritium", "triton"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    names = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in names if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    args.cases = names
    if args.worker:
        repeat = args.repeat if args.repeat is not None else (1 if args.worker == "triton" else 3)
        return run_worker(args.worker, names, repeat)
    if args.repeat is None:
        args.repeat = 3
    return run_parent(args)


if __name__ == "__main__":
    raise SystemExit(main())
