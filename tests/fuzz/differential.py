"""Runs one generated kernel on every execution path and compares what each computed.

The paths: the interpreter's reference mode (``TRITIUM_REFERENCE=1``: one program at a time, no
symbolic shortcuts, no compaction), the interpreter as users run it (batched programs, affine
windows, compaction; with the compiler's analysis claims checked at every access), the interpreter with small batches (many batches per launch, so programs of
one launch take different paths), and every compiled backend present for host memory (the native
CPU backend). Each path gets its own copies of the same inputs; afterwards every output tensor,
whole (so a write outside the mask shows), is compared with the reference's:

* bit for bit (NaNs compare equal to NaNs) for everything but math functions and ``dot``, as the
  IR spec fixes those bits on every backend;
* within the stated ulp bound of the function (``backends/llvm/math.py``) where the kernel's last
  op is a math function, for compiled backends whose math is their own (the interpreters and the
  CPU backend share one implementation: bits);
* within the fp32 accumulation bound ``2 * K * 2^-24 * (|A| @ |B|)`` of ``dot`` outputs (what
  reordering K fp32 additions can change), plus one ulp of the output where an epilogue rounds
  the accumulator again, for compiled backends.

An exception on any path that is not one of tritium's errors, an ``InternalError``, an error on one
path but not another, or a difference beyond these bounds is a finding.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import tempfile
import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .generator import Case, Tensor, module_source

PATHS = {
    "reference": {"TRITIUM_BACKEND": "interpreter", "TRITIUM_REFERENCE": "1"},
    # the compiler's analysis claims (which the compiled backends act on) checked at every access
    "interpreter": {"TRITIUM_BACKEND": "interpreter", "TRITIUM_CHECK_ANALYSIS": "all"},
    "interpreter-small-batches": {"TRITIUM_BACKEND": "interpreter", "TRITIUM_BATCH_ELEMENTS": "48"},
    "cpu": {"TRITIUM_BACKEND": "cpu"},
}
INTERPRETER_PATHS = ("reference", "interpreter", "interpreter-small-batches")
_SETTINGS = ("TRITIUM_BACKEND", "TRITIUM_REFERENCE", "TRITIUM_BATCH_ELEMENTS", "TRITIUM_CHECK_ANALYSIS")


@dataclass
class Finding:
    case: Case
    path: str
    kind: str  # "internal error", "exception", "disagreement"
    detail: str

    def report(self) -> str:
        return (f"{self.kind} on the {self.path} path: {self.detail}\n{self.case.describe()}\n"
                f"launch: grid={self.case.grid} scalars={self.case.scalars} constexprs={self.case.constexprs}\n"
                f"inputs: {[(t.name, t.dtype, t.shape) for t in self.case.tensors]}\n{self.case.source}")


def available_paths() -> list[str]:
    from tritium.backends import registry
    names = {b.name for b in registry.available("cpu")}
    return [p for p in PATHS if p in INTERPRETER_PATHS or p in names]


@contextlib.contextmanager
def _settings(values: dict):
    saved = {k: os.environ.get(k) for k in _SETTINGS}
    try:
        for k in _SETTINGS:
            os.environ.pop(k, None)
        os.environ.update(values)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _folder() -> str:
    folder = os.path.join(tempfile.gettempdir(), f"tritium-fuzz-{os.getpid()}")
    os.makedirs(folder, exist_ok=True)
    return folder


def load_kernel(case: Case):
    """The case's kernel, from its module written to a file (kernels are compiled from source)."""
    text = module_source(case)
    digest = hashlib.sha1(text.encode()).hexdigest()[:16]
    path = os.path.join(_folder(), f"fuzz_{digest}.py")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(text)
    name = f"tritium_fuzz_{digest}"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return getattr(module, case.kernel)


def make_inputs(case: Case, seed: int) -> dict:
    """numpy arrays for every tensor of the case, drawn from ``seed``."""
    import ml_dtypes
    rng = np.random.default_rng(seed)
    arrays = {}
    for t in case.tensors:
        arrays[t.name] = _values(t, rng, ml_dtypes)
    return arrays


def _numpy_dtype(name: str, ml_dtypes):
    return {"int1": np.bool_, "bfloat16": ml_dtypes.bfloat16}.get(name) or np.dtype(name)


def _values(t: Tensor, rng, ml_dtypes) -> np.ndarray:
    dtype = _numpy_dtype(t.dtype, ml_dtypes)
    n = int(np.prod(t.shape))
    if t.kind == "zeros":
        fill = 3 if t.name != "HIST" else 0  # outputs start from a pattern, so writes outside masks show
        return np.full(t.shape, fill).astype(dtype)
    if t.kind == "index":
        return rng.integers(0, 2 ** 31 - 1, size=t.shape, dtype=np.int64).astype(np.int32)
    if t.kind == "flag":
        return rng.integers(-1, 2, size=t.shape).astype(np.int32)
    if t.dtype == "int1":
        return rng.random(t.shape) < 0.5
    if t.dtype in ("float16", "bfloat16", "float32", "float64"):
        if t.kind == "small":
            return rng.standard_normal(t.shape).astype(dtype)
        values = rng.standard_normal(n) * rng.choice([1.0, 1.0, 100.0, 1e-3], size=n)
        special = rng.random(n)
        values[special < 0.10] = np.round(values[special < 0.10])
        picks = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 1e-40])
        chosen = special > 0.95
        values[chosen] = rng.choice(picks, size=int(chosen.sum()))
        with np.errstate(all="ignore"):
            return values.astype(dtype).reshape(t.shape)
    info = np.iinfo(dtype)
    if t.kind == "small":
        return rng.integers(-8, 9, size=t.shape).astype(dtype)
    values = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=np.int64 if info.min < 0 else np.uint64)
    small = rng.random(n) < 0.5
    values[small] = rng.integers(-10 if info.min < 0 else 0, 10, size=int(small.sum()))
    return values.astype(dtype).reshape(t.shape)


def _torch(array: np.ndarray):
    import torch
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.view(np.uint16).copy()).view(torch.bfloat16)
    return torch.from_numpy(array.copy())


def _numpy(tensor) -> np.ndarray:
    import ml_dtypes
    import torch
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.uint16).numpy().view(ml_dtypes.bfloat16).copy()
    return tensor.numpy().copy()


def run_path(case: Case, kernel, inputs: dict, path: str):
    """("ok", outputs) or ("error", exception) for one path."""
    tensors = [_torch(inputs[t.name]) for t in case.tensors]
    with _settings(PATHS[path]), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            kernel[case.grid](*tensors, *case.scalars.values(), **case.constexprs)
        except Exception as error:  # classified by the caller
            return "error", error
    by_name = {t.name: tensor for t, tensor in zip(case.tensors, tensors)}
    return "ok", {name: _numpy(by_name[name]) for name in case.outputs}


def _is_internal(error: BaseException) -> bool:
    from tritium.errors import InternalError, TritonError
    return isinstance(error, InternalError) or not isinstance(error, TritonError)


def check_case(case: Case, seed: int = 0, paths: Optional[list] = None) -> list[Finding]:
    """Runs ``case`` on ``paths`` (default: every available one); the findings (empty: agreement)."""
    paths = paths or available_paths()
    try:
        kernel = load_kernel(case)
    except Exception as error:
        return [Finding(case, "load", "exception", f"{type(error).__name__}: {error}")]
    inputs = make_inputs(case, seed)
    results = {path: run_path(case, kernel, inputs, path) for path in paths}
    findings = []
    for path, (status, value) in results.items():
        if status == "error" and _is_internal(value):
            findings.append(Finding(case, path, "internal error", f"{type(value).__name__}: {value}"))
    if findings:
        return findings
    status, reference = results["reference"]
    for path in paths:
        if path == "reference":
            continue
        other_status, other = results[path]
        if status == "error" or other_status == "error":
            if status != other_status or type(reference) is not type(other):
                shown = {p: (s, f"{type(v).__name__}: {v}" if s == "error" else "ok") for p, (s, v) in
                         ((p, results[p]) for p in ("reference", path))}
                findings.append(Finding(case, path, "exception", f"the paths disagree: {shown}"))
            continue
        for name in case.outputs:
            mode = case.compare.get(name, ("exact",)) if path not in INTERPRETER_PATHS else ("exact",)
            if mode[0] == "ulp" and _math_as_interpreter(path):
                mode = ("exact",)
            problem = compare(reference[name], other[name], mode, inputs)
            if problem:
                findings.append(Finding(case, path, "disagreement", f"output {name}: {problem}"))
    return findings


def _math_as_interpreter(path: str) -> bool:
    """True for a compiled backend whose math functions are the interpreter's (the same bits)."""
    from tritium.backends import registry

    return path in registry.names() and registry.get(path).math_as_interpreter


def compare(expected: np.ndarray, actual: np.ndarray, mode: tuple, inputs: dict) -> Optional[str]:
    """None when ``actual`` agrees with ``expected`` under ``mode``; else what differs."""
    if expected.dtype.kind in "iub":
        bad = expected != actual
    else:
        e64 = expected.astype(np.float64)
        a64 = actual.astype(np.float64)
        both_nan = np.isnan(e64) & np.isnan(a64)
        if mode[0] == "exact":
            width = expected.dtype.itemsize * 8
            bits = np.dtype(f"uint{width}")
            bad = (expected.view(bits) != actual.view(bits)) & ~both_nan
        elif mode[0] == "ulp":
            bad = (_ulp_distance(expected.astype(np.float32), actual.astype(np.float32)) > mode[1]) & ~both_nan
        else:  # ("dot", K, epilogue): the fp32 accumulation bound from the inputs
            a = np.abs(inputs["A"].astype(np.float64))
            b = np.abs(inputs["B"].astype(np.float64))
            bound = 2 * mode[1] * 2.0 ** -24 * (a @ b) + 1e-30
            if len(mode) > 2 and mode[2]:  # acc * 0.5 + 1.0, rounded once more
                bound = 0.5 * bound + np.spacing(np.abs(expected).astype(np.float32)).astype(np.float64)
            with np.errstate(invalid="ignore"):
                bad = ~(np.abs(e64 - a64) <= bound) & ~both_nan
    if not np.any(bad):
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{int(np.sum(bad))} of {bad.size} elements differ, first at {where}: expected "
            f"{expected[where]!r}, got {actual[where]!r}")


def _ulp_distance(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    def ordered(v):
        bits = v.view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)
    return np.abs(ordered(x) - ordered(y))
