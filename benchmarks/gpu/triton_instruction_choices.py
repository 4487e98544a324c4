"""Prints the PTX instructions Triton emits for each elementwise math op and cast on this GPU.

Run on a machine with Triton and a CUDA GPU: `python benchmarks/gpu/triton_instruction_choices.py`.
The CUDA backend follows these choices so that a kernel gives the same bits under both.
"""
import importlib.util
import re
import sys
import tempfile

import torch
import triton

CASES = {
    "exp": "tl.exp(x)", "exp2": "tl.exp2(x)", "log": "tl.log(x)", "log2": "tl.log2(x)",
    "sin": "tl.sin(x)", "cos": "tl.cos(x)", "sqrt": "tl.sqrt(x)", "sqrt_rn": "tl.sqrt_rn(x)",
    "rsqrt": "tl.rsqrt(x)", "erf": "tl.erf(x)", "sigmoid": "tl.sigmoid(x)", "div": "x / y",
    "div_rn": "tl.div_rn(x, y)", "fdiv": "tl.fdiv(x, y)", "fma": "tl.fma(x, y, x)", "floor": "tl.floor(x)",
    "abs": "tl.abs(x)", "maximum": "tl.maximum(x, y)",
    "max_prop": "tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)",
    "to_fp16": "x.to(tl.float16).to(tl.float32)",
    "to_fp16_rtz": "x.to(tl.float16, fp_downcast_rounding='rtz').to(tl.float32)",
    "to_bf16": "x.to(tl.bfloat16).to(tl.float32)", "to_fp8e4nv": "x.to(tl.float8e4nv).to(tl.float32)",
    "to_fp8e5": "x.to(tl.float8e5).to(tl.float32)", "to_int32": "x.to(tl.int32).to(tl.float32)",
    "tanh_libdevice": "libdevice.tanh(x)", "exp_libdevice": "libdevice.exp(x)", "mul_add": "x * y + x",
    "exp_fp16": "tl.exp(x.to(tl.float16)).to(tl.float32)", "sum": "tl.sum(x, 0) + x * 0",
}

TEMPLATE = '''
@triton.jit
def k_{name}(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, {expr}, mask=m)
'''

SKIP = re.compile(r"^\s*(ld\.|st\.|mov\.|setp\.|add\.s|mad\.lo|mul\.wide|shl\.b64|cvt\.s64|@|\{|\}|//|\.|$|ret|\)|\()")


def main():
    source = "import triton\nimport triton.language as tl\nfrom triton.language.extra import libdevice\n"
    source += "".join(TEMPLATE.format(name=n, expr=e) for n, e in CASES.items())
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as path:
        path.write(source)
    spec = importlib.util.spec_from_file_location("cases", path.name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = torch.randn(1024, device="cuda")
    y = torch.randn(1024, device="cuda") + 3
    out = torch.empty_like(x)
    header_done = False
    for name in CASES:
        try:
            compiled = getattr(module, f"k_{name}")[(1,)](x, y, out, 1024, BLOCK=1024)
        except Exception as e:  # noqa: BLE001
            print(f"== {name}: FAILED {type(e).__name__}: {str(e)[:200]}")
            continue
        ptx = compiled.asm["ptx"]
        if not header_done:
            print("\n".join(l for l in ptx.splitlines() if l.startswith((".version", ".target", ".address_size"))))
            header_done = True
        body = [l.strip() for l in ptx.splitlines() if not SKIP.match(l.strip())]
        calls = sorted(set(re.findall(r"__nv_\w+", ptx)))
        ops = []
        for l in body:
            op = l.split()[0]
            if op not in ops:
                ops.append(op)
        print(f"== {name}: {' '.join(ops)}" + (f"  calls {calls}" if calls else ""))


if __name__ == "__main__":
    print(sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)
    main()
