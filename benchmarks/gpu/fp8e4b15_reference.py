"""``tl.float8e4b15`` as real Triton computes it on a GPU: the reference tritium's conversions follow.

    python benchmarks/gpu/fp8e4b15_reference.py OUT.npz

Saves, for every code (0..255): its fp32, fp16 and int32 values; for every fp16 and bf16 bit
pattern and a set of fp32 and fp64 inputs (every fp16 value, the midpoints between neighbouring
fp8e4b15 values and their fp32 neighbours, specials, a wide random sample): the code a cast gives,
with the default rounding and with ``rtz`` where Triton accepts it; the results of ``+``, ``*`` and
``<`` over all 65536 pairs of codes where Triton compiles them; and a ``tl.dot`` of two fp8e4b15
tiles. ``tests/data/fp8e4b15_gpu.npz`` holds what a Hopper GPU gave (``compact``: every decode and
fp16 conversion, the fp32 inputs that are not fp16 values plus a sample of those); the suite checks
tritium's conversions against it bit for bit.
"""
import json
import sys
import traceback
import warnings

import numpy as np
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def decode(x_ptr, f32_ptr, f16_ptr, i32_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i).to(tl.float8e4b15, bitcast=True)
    tl.store(f32_ptr + i, x.to(tl.float32))
    tl.store(f16_ptr + i, x.to(tl.float16))
    tl.store(i32_ptr + i, x.to(tl.int32))


@triton.jit
def encode(x_ptr, out_ptr, n, ROUND: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i, mask=m)
    y = x.to(tl.float8e4b15, fp_downcast_rounding=ROUND)
    tl.store(out_ptr + i, y.to(tl.uint8, bitcast=True), mask=m)


@triton.jit
def pairs(out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = (i >> 8).to(tl.uint8).to(tl.float8e4b15, bitcast=True)
    b = (i & 255).to(tl.uint8).to(tl.float8e4b15, bitcast=True)
    if OP == "add":
        y = (a + b).to(tl.uint8, bitcast=True)
    elif OP == "mul":
        y = (a * b).to(tl.uint8, bitcast=True)
    else:
        y = (a < b).to(tl.uint8)
    tl.store(out_ptr + i, y)


@triton.jit
def dot(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :]).to(tl.float8e4b15, bitcast=True)
    b = tl.load(b_ptr + r[:, None] * N + r[None, :]).to(tl.float8e4b15, bitcast=True)
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b))


def fp32_inputs(codes_f32: np.ndarray) -> np.ndarray:
    every_fp16 = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
    finite = np.unique(codes_f32[np.isfinite(codes_f32)].astype(np.float64))
    mids = ((finite[1:] + finite[:-1]) / 2).astype(np.float32)
    near = np.concatenate([mids, np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf))])
    rng = np.random.default_rng(0)
    wide = (rng.standard_normal(1 << 16) * np.exp2(rng.integers(-30, 12, 1 << 16))).astype(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 3.4e38, -3.4e38, 1e-45, -1e-45, 1.9, 2.0,
                         -1.9, -2.0, 1.875, 1.75, 1.8125, 1.8124, 1.8126, 1.9375, 240.0, 448.0], np.float32)
    return np.concatenate([every_fp16, near, wide, specials]).astype(np.float32)


def run_encode(x: torch.Tensor, rounding):
    out = torch.full(x.shape, 0xAA, dtype=torch.uint8, device="cuda")
    encode[(triton.cdiv(x.numel(), BLOCK),)](x, out, x.numel(), ROUND=rounding, BLOCK=BLOCK)
    torch.cuda.synchronize()
    return out.cpu().numpy()


def compact(results: dict) -> dict:
    """What the suite keeps: the fp16 inputs are implied (every bit pattern, in order); of the fp32
    inputs (``fp32_inputs``' four blocks), every midpoint, neighbour and special, and every 16th of
    the fp16 values and of the random sample."""
    kept = {k: v for k, v in results.items() if not k.startswith(("in_", "enc_"))}
    kept["enc_f16"] = results["enc_f16_rtne"]
    x = results["in_f32"]
    table = results["decode_f32"]
    near = 3 * (np.unique(table[np.isfinite(table)]).size - 1)
    blocks = [np.arange(1 << 16) % 16 == 0, np.ones(near, bool), np.arange(1 << 16) % 16 == 0, np.ones(x.size - near - (2 << 16), bool)]
    select = np.concatenate(blocks)
    kept["in_f32"], kept["enc_f32"] = x[select], results["enc_f32_rtne"][select]
    return kept


def main(path):
    results, notes = {}, {}
    props = torch.cuda.get_device_properties(0)
    notes["device"] = f"{props.name} sm_{props.major}{props.minor}, triton {triton.__version__}"
    dt = tl.float8e4b15
    notes["dtype"] = {"str": str(dt), "repr": repr(dt), "bits": dt.primitive_bitwidth,
                      "mantissa": dt.fp_mantissa_width, "bias": getattr(dt, "exponent_bias", None),
                      "is_fp8": dt.is_fp8(), "is_fp8e4b15": dt.is_fp8e4b15()}

    codes = torch.arange(256, dtype=torch.int32, device="cuda").to(torch.uint8)
    f32 = torch.empty(256, dtype=torch.float32, device="cuda")
    f16 = torch.empty(256, dtype=torch.float16, device="cuda")
    i32 = torch.empty(256, dtype=torch.int32, device="cuda")
    decode[(1,)](codes, f32, f16, i32, N=256)
    torch.cuda.synchronize()
    results["decode_f32"] = f32.cpu().numpy()
    results["decode_f16"] = f16.cpu().numpy()
    results["decode_i32"] = i32.cpu().numpy()

    sources = {
        "f32": torch.from_numpy(fp32_inputs(results["decode_f32"])).cuda(),
        "f16": torch.arange(1 << 16, dtype=torch.int32, device="cuda").to(torch.int16).view(torch.float16),
        "bf16": torch.arange(1 << 16, dtype=torch.int32, device="cuda").to(torch.int16).view(torch.bfloat16),
    }
    rng = np.random.default_rng(1)
    sources["f64"] = torch.from_numpy(np.concatenate([
        fp32_inputs(results["decode_f32"]).astype(np.float64),
        rng.standard_normal(1 << 14) * np.exp2(rng.integers(-24, 4, 1 << 14)),
    ])).cuda()
    sources["i32"] = torch.arange(-300, 301, dtype=torch.int32, device="cuda")
    for name, x in sources.items():
        results[f"in_{name}"] = x.view(torch.int16).cpu().numpy() if x.dtype == torch.bfloat16 else x.cpu().numpy()
        for rounding in (None, "rtz"):
            key = f"enc_{name}_{rounding or 'rtne'}"
            try:
                results[key] = run_encode(x, rounding)
            except Exception as e:  # record what Triton refuses
                notes[key] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"

    for op in ("add", "mul", "lt"):
        out = torch.empty(1 << 16, dtype=torch.uint8, device="cuda")
        try:
            pairs[(64,)](out, OP=op, BLOCK=BLOCK)
            torch.cuda.synchronize()
            results[f"pairs_{op}"] = out.cpu().numpy()
        except Exception as e:
            notes[f"pairs_{op}"] = f"{type(e).__name__}: {str(e)[:600]}"

    n = 32
    a = torch.from_numpy(rng.integers(0, 256, (n, n)).astype(np.uint8)).cuda()
    b = torch.from_numpy(rng.integers(0, 256, (n, n)).astype(np.uint8)).cuda()
    c = torch.empty((n, n), dtype=torch.float32, device="cuda")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            dot[(1,)](a, b, c, N=n)
            torch.cuda.synchronize()
            results["dot_a"], results["dot_b"], results["dot_c"] = a.cpu().numpy(), b.cpu().numpy(), c.cpu().numpy()
        except Exception as e:
            notes["dot"] = f"{type(e).__name__}: {str(e)[:600]}"
    notes["dot_warnings"] = [str(w.message)[:300] for w in caught]

    for key in ("enc_f16", "enc_f32"):
        notes[f"{key}_rtz_same_as_rtne"] = bool(np.array_equal(results[f"{key}_rtne"], results[f"{key}_rtz"]))
    results["notes"] = np.array(json.dumps(notes))
    np.savez_compressed(path, **compact(results))
    print(json.dumps(notes, indent=1))
    table = results["decode_f32"]
    print("decode 0x00..0x0f:", table[:16].tolist())
    print("decode 0x78..0x7f:", table[0x78:0x80].tolist(), " 0x80:", table[0x80], " 0xf8..0xff:", table[0xF8:].tolist())
    for key in sorted(k for k in results if k.startswith("enc_")):
        print(key, "unique codes:", len(np.unique(results[key])))


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except Exception:
        traceback.print_exc()
        sys.exit(1)
