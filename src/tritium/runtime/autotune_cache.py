"""The autotuner's persistent cache: tuning times every config, which costs far more than one
launch, so a later process asking the same question gets the answer from disk.

One JSON file per question, named by a hash of everything the answer depends on: the kernel's
source (and the sources of the @jit functions and the constexpr globals it uses), the key values,
the tensor arguments' dtypes, the configs on offer, the backend and the device. The files live in
runtime/cache.py's folder ``autotune/``, written atomically and with a checksum; a file that cannot
be read, is not valid JSON, fails its checksum, answers another question or names a config that is
not on offer is ignored, and the configs are timed again and the file rewritten.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import types
import warnings
from typing import TYPE_CHECKING, Optional

from .. import config as settings
from ..errors import TritonError
from ..language.core import constexpr
from . import cache
from .jit import JITFunction, KernelInterface

if TYPE_CHECKING:
    from .autotuner import Autotuner, Config


def _base_jit(fn):
    """The JITFunction under any number of Autotuner/Heuristics wrappers (each holds what it wraps
    as ``fn``)."""
    while isinstance(fn, KernelInterface) and not isinstance(fn, JITFunction):
        fn = fn.fn
    return fn


CACHE_FORMAT = 1
_FILES = cache.DiskCache("autotune")


def _dependencies(fn, seen: set) -> list[str]:
    """Source text of ``fn`` (a Python function) and of the @jit functions and constexpr globals it
    reaches through global names and module attributes (``activations.apply``)."""
    parts = []
    code = getattr(fn, "__code__", None)
    if code is None:
        return parts
    names: list[str] = []
    stack = [code]
    while stack:  # nested code objects (comprehensions, lambdas) name globals too
        current = stack.pop()
        names.extend(current.co_names)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    scope = getattr(fn, "__globals__", {})
    for name in names:
        value = scope.get(name)
        candidates = [value]
        if isinstance(value, types.ModuleType):
            candidates = [getattr(value, attr, None) for attr in names]
        for candidate in candidates:
            if isinstance(candidate, JITFunction) and id(candidate) not in seen:
                seen.add(id(candidate))
                parts.append(candidate.src)
                parts.extend(_dependencies(candidate.fn, seen))
            elif isinstance(candidate, constexpr) and id(candidate) not in seen:
                seen.add(id(candidate))
                parts.append(f"{name}={getattr(candidate, 'value', candidate)!r}")
    return parts


def source_hash(kernel) -> str:
    """A hash of a @jit kernel's source and of everything it calls (see ``_dependencies``)."""
    base = _base_jit(kernel)
    parts = [getattr(base, "src", "") or getattr(base, "__qualname__", "")]
    fn = getattr(base, "fn", None)
    if fn is not None:
        parts.extend(_dependencies(fn, {id(base)}))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


@functools.lru_cache(maxsize=None)
def device_name() -> str:
    """The machine tuned on: timings from another CPU (or GPU) answer a different question."""
    model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.lower().startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"cpu:{platform.machine()}:{model}:{os.cpu_count()}"


def _json_value(value):
    """``value`` as JSON, or None when it has no stable text (an object printed with its address)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    text = repr(value)
    return None if " at 0x" in text else text


def _config_record(config: Config) -> dict:
    return {"kwargs": {k: _json_value(v) for k, v in config.kwargs.items()}, "num_warps": config.num_warps,
            "num_stages": config.num_stages, "num_ctas": config.num_ctas, "maxnreg": config.maxnreg}


class DiskCache:
    """Where an Autotuner keeps its winning configs between processes."""

    def __init__(self, tuner: "Autotuner"):
        self.tuner = tuner
        self.warned = False

    @staticmethod
    def folder() -> str:
        return _FILES.folder

    def identity(self, key: tuple, configs: list, backend: str = "") -> Optional[dict]:
        """Everything the answer for ``key`` depends on; None when some part has no stable text (a
        key value, or the kernel: a stand-in object that is no @jit function has no source to key
        the answer on). ``backend``: the name of the backend the launches run on."""
        if not isinstance(_base_jit(self.tuner.fn), JITFunction):
            return None
        key_values = [_json_value(v) for v in key]
        if any(v is None and k is not None for v, k in zip(key_values, key)):
            return None
        return {"format": CACHE_FORMAT, "kernel": self.tuner.__name__, "source": source_hash(self.tuner.fn),
                "key_names": self.tuner.keys, "key": key_values, "configs": [str(c) for c in configs],
                "backend": backend or settings.backend_name(), "device": device_name()}

    def file_name(self, identity: dict) -> str:
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]
        return f"{identity['kernel']}-{digest}.json"

    def path(self, identity: dict) -> str:
        return _FILES.path(self.file_name(identity))

    def load(self, identity: dict, configs: list) -> Optional[Config]:
        """The stored winner among ``configs``; None when there is no usable file."""
        record = _FILES.load_json(self.file_name(identity))
        if record is None or record.get("identity") != identity:
            return None  # missing, unreadable, damaged or another question's: tune again and rewrite it
        wanted = record.get("config")
        for config in configs:
            if _config_record(config) == wanted:
                return config
        return None

    def store(self, identity: dict, best: Config, timings: dict, bench_time: float) -> None:
        record = {"identity": identity, "config": _config_record(best), "bench_time_s": round(bench_time, 6),
                  "timings_ms": {str(c): [float(t) for t in times] for c, times in timings.items()}}
        try:
            _FILES.store_json(self.file_name(identity), record)
        except OSError as e:
            if not self.warned:  # a read-only or full disk costs the next process a re-tune, nothing more
                self.warned = True
                warnings.warn(f"tritium could not save the autotuning result of {self.tuner.__name__} to "
                              f"{self.path(identity)}: {e}", RuntimeWarning, stacklevel=4)


def _backend_name(all_args: dict) -> str:
    """The backend the tuned launches run on: the one serving the tensor arguments' device."""
    from .arguments import tensor_view
    from .launch import backend_for

    devices = []
    for value in all_args.values():
        try:
            view = tensor_view(value)
        except TritonError:
            continue
        if view is not None:
            devices.append(view.device)
    return backend_for(devices).name
