"""Helpers that Triton's own test suite imports as ``triton._internal_testing``.

Written for tritium from the names and documented behaviour of Triton's module: dtype name lists,
random test data (``numpy_random``), host <-> kernel conversions (``to_triton``, ``to_numpy``) and
the backend predicates. tritium runs kernels on the CPU with its interpreter, so ``is_interpreter()``
is True and every GPU predicate is False.
"""
from __future__ import annotations

import numpy as np

int_dtypes = ["int8", "int16", "int32", "int64"]
uint_dtypes = ["uint8", "uint16", "uint32", "uint64"]
integral_dtypes = int_dtypes + uint_dtypes
float_dtypes = ["float16", "float32", "float64"]
float_dtypes_with_bfloat16 = float_dtypes + ["bfloat16"]
dtypes = integral_dtypes + float_dtypes
dtypes_with_bfloat16 = dtypes + ["bfloat16"]
torch_float8_dtypes = ["float8_e4m3fn", "float8_e5m2"]
torch_dtypes = ["bool"] + int_dtypes + ["uint8"] + float_dtypes + ["bfloat16"]
tma_dtypes = sorted(set(dtypes_with_bfloat16) - {"int64", "uint64", "float64"})


def is_interpreter() -> bool:
    return True


def get_current_target():
    from .runtime.driver import driver
    return driver.active.get_current_target()


def is_cuda() -> bool:
    return False


def is_hip() -> bool:
    return False


def is_xpu() -> bool:
    return False


def is_hopper() -> bool:
    return False


def is_hopper_or_newer() -> bool:
    return False


def is_blackwell() -> bool:
    return False


def is_sm12x() -> bool:
    return False


def is_ampere_or_newer() -> bool:
    return False


def is_hip_cdna() -> bool:
    return False


def is_hip_cdna2() -> bool:
    return False


def is_hip_cdna3() -> bool:
    return False


def is_hip_cdna4() -> bool:
    return False


def is_hip_rdna3() -> bool:
    return False


def is_hip_rdna4() -> bool:
    return False


def is_hip_gfx11() -> bool:
    return False


def is_hip_gfx12() -> bool:
    return False


def is_hip_gfx1250() -> bool:
    return False


def is_rubin() -> bool:
    return False


def is_compile_warmup() -> bool:
    """True when a test suite runs in Triton's compile-only warm-up mode, which tritium has not."""
    return False


def get_arch() -> str:
    """The architecture of the current target, as its ``GPUTarget`` names it (the host's machine)."""
    from .runtime.driver import driver

    return str(driver.active.get_current_target().arch)


def supports_tma(byval_only: bool = False) -> bool:
    return False


def supports_ws() -> bool:
    return False


def requires_tma(fn):
    import pytest
    return pytest.mark.skip(reason="Requires TMA support")(fn)


def str_to_triton_dtype(name: str):
    """The tl dtype named by a test's dtype string ('int32', 'bfloat16', 'float8_e4m3fn', 'bool'...)."""
    from . import language as tl
    aliases = {"bool": "int1", "float8_e4m3fn": "float8e4nv", "float8_e5m2": "float8e5"}
    return getattr(tl, aliases.get(name, name))


def torch_dtype_name(dtype) -> str:
    """'torch.float32' -> 'float32' (also accepts tl dtypes and numpy dtypes)."""
    text = str(dtype)
    return text.split(".")[-1]


def numpy_random(shape, dtype_str, rs=None, low=None, high=None):
    """Random test data of the named dtype. Integers are drawn from [low, high) within the dtype's range
    and never 0 (so they divide safely); floats are standard normal; 'bfloat16' gives float32 values
    exactly representable in bfloat16; 'bool' gives a boolean mask; float8 names give small int8 codes."""
    if isinstance(shape, int):
        shape = (shape, )
    if rs is None:
        rs = np.random.RandomState(seed=17)
    if dtype_str in integral_dtypes:
        info = np.iinfo(getattr(np, dtype_str))
        low = info.min if low is None else max(low, info.min)
        high = info.max if high is None else min(high, info.max)
        x = rs.randint(low, high, shape, dtype=getattr(np, dtype_str))
        x[x == 0] = 1
        return x
    if dtype_str and "float8" in dtype_str:
        return rs.randint(20, 40, shape, dtype=np.int8)
    if dtype_str in float_dtypes:
        return rs.normal(0, 1, shape).astype(dtype_str)
    if dtype_str == "bfloat16":
        bits = rs.normal(0, 1, shape).astype("float32").view("uint32") & np.uint32(0xFFFF0000)
        return bits.view("float32")
    if dtype_str in ("bool", "int1", "bool_"):
        return rs.normal(0, 1, shape) > 0.0
    raise RuntimeError(f"Unknown dtype {dtype_str}")


def to_triton(x: np.ndarray, device="cpu", dst_type=None):
    """A tensor on ``device`` holding ``x`` for a kernel, as Triton's helper gives it: unsigned arrays
    and Triton's float8 names (``float8e4b15``, ``float8e4nv``, ``float8e5``) as a ``TensorWrapper``
    (``triton.reinterpret``) over a signed tensor of the same bytes; torch's float8 names as torch
    float8 tensors; other arrays as torch tensors, converted to ``dst_type`` when given."""
    import torch

    from . import language as tl
    from .runtime.reinterpret import reinterpret
    t = x.dtype.name
    if t in uint_dtypes:
        signed = x.astype(getattr(np, t[1:]))
        return reinterpret(torch.tensor(signed, device=device), getattr(tl, t))
    if dst_type is None:
        dst_type = t
    if dst_type.startswith("float8") and "_" not in dst_type:  # Triton's names: the codes, reinterpreted
        return reinterpret(torch.tensor(x, device=device), getattr(tl, dst_type))
    if dst_type == "bfloat16":
        if t == "float32":
            bits = (x.view("uint32") >> 16).astype("uint16").view("int16")
            return torch.from_numpy(np.ascontiguousarray(bits)).view(torch.bfloat16).to(device)
        return torch.tensor(x, device=device).to(torch.bfloat16)
    if dst_type in torch_float8_dtypes:
        return torch.from_numpy(np.ascontiguousarray(x)).to(device).view(getattr(torch, dst_type))
    if dst_type != t and dst_type in dtypes:
        x = x.astype(getattr(np, dst_type), order="K")
    if any(s < 0 for s in x.strides) or not x.flags.aligned:
        x = np.ascontiguousarray(x)
    # a copy that keeps the array's strides (tests rely on a transposed array staying transposed)
    return torch.from_numpy(x).clone().to(device)


def to_numpy(x):
    """A numpy array holding the values of a tensor: a ``TensorWrapper``'s bytes in its dtype (the
    codes, for float8 types numpy lacks), bfloat16 widened to float32."""
    import torch

    from .runtime.reinterpret import TensorWrapper
    if isinstance(x, TensorWrapper):
        raw = x.base.cpu().numpy()
        name = torch_dtype_name(x.dtype)
        return raw.view(getattr(np, name)) if hasattr(np, name) else raw
    if isinstance(x, torch.Tensor):
        if x.dtype == torch.bfloat16:
            return x.cpu().float().numpy()
        if x.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            return x.cpu().view(torch.int8).numpy()
        return x.cpu().numpy()
    if isinstance(x, np.ndarray):
        return x
    raise ValueError(f"Not a triton-compatible tensor: {x}")


def _fresh_knobs_impl(skipped_attr=None):
    """(fresh, reset) for a test suite's ``fresh_knobs`` fixture, as Triton's conftest uses them:
    ``fresh()`` puts an unassigned copy of every knob group in ``triton.knobs``, removes the knobs'
    environment variables and turns ``propagate_env`` on, and returns the module; ``reset()`` puts
    the groups, the variables and ``propagate_env`` back."""
    import os

    from . import knobs

    skipped = set(skipped_attr or ())
    groups = {name: group for name, group in vars(knobs).items()
              if isinstance(group, knobs.base_knobs) and name not in skipped}
    saved_environment: dict = {}
    saved_propagate = knobs.propagate_env

    def fresh():
        for name, group in groups.items():
            setattr(knobs, name, group.copy().reset())
            for descriptor in group.knob_descriptors.values():
                for key in (descriptor.key, *descriptor.also):
                    if key:
                        saved_environment.setdefault(key, os.environ.get(key))
                        os.environ.pop(key, None)
        knobs.propagate_env = True
        return knobs

    def reset():
        for name, group in groups.items():
            setattr(knobs, name, group)
        for key, value in saved_environment.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        knobs.propagate_env = saved_propagate

    return fresh, reset
