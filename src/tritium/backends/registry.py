"""The list of backends, and the choice of one for the memory a launch's data lives in.

Each entry names a backend and where its class lives ("module:Class"), so that no backend is
imported before it is needed. The order is the order of preference: for a device, the first
available backend serving it runs the launch, unless ``TRITIUM_BACKEND`` names one. Adding a
backend is a new folder under ``backends/`` and one line here.
"""
from __future__ import annotations

import importlib
from typing import Optional, Union

from ..errors import LaunchError
from .base import Backend

# name -> "module:Class", in order of preference.
BACKENDS: dict[str, str] = {
    "cpu": "tritium.backends.cpu:CPUBackend",
    "interpreter": "tritium.backends.interpreter:InterpreterBackend",
    "cuda": "tritium.backends.cuda:CUDABackend",
}

_loaded: dict[str, Backend] = {}
_registered: dict[str, Union[str, Backend]] = dict(BACKENDS)


def register(name: str, backend: Union[str, Backend], first: bool = False) -> None:
    """Adds (or replaces) the backend ``name``: a "module:Class" path or an instance. ``first``
    puts it ahead of the others in the order of preference."""
    global _registered
    _loaded.pop(name, None)
    rest = {k: v for k, v in _registered.items() if k != name}
    _registered = {name: backend, **rest} if first else {**rest, name: backend}


def unregister(name: str) -> None:
    """Removes a backend added with ``register`` (or a built-in one)."""
    _registered.pop(name, None)
    _loaded.pop(name, None)


def reset() -> None:
    """Back to the built-in list."""
    global _registered
    _registered = dict(BACKENDS)
    _loaded.clear()


def names() -> list[str]:
    """Every registered backend's name, in order of preference, available or not."""
    return list(_registered)


def get(name: str) -> Backend:
    """The backend called ``name``, imported on first use; a LaunchError naming the registered
    ones when there is none."""
    if name in _loaded:
        return _loaded[name]
    entry = _registered.get(name)
    if entry is None:
        raise LaunchError(f"there is no backend {name!r}; the backends are {_describe_all()}")
    if isinstance(entry, str):
        module_name, _, class_name = entry.partition(":")
        backend = getattr(importlib.import_module(module_name), class_name)()
    else:
        backend = entry
    assert backend.name == name, f"the registry entry {name!r} holds a backend named {backend.name!r}"
    _loaded[name] = backend
    return backend


def instantiated() -> list[Backend]:
    """The backends this process has made so far (``get`` makes one at its first use)."""
    return list(_loaded.values())


def available(device: Optional[str] = None) -> list[Backend]:
    """The backends that can run here (serving ``device`` when given), in order of preference."""
    found = []
    for name in _registered:
        backend = get(name)
        if backend.is_available() and (device is None or device in backend.devices):
            found.append(backend)
    return found


def _describe(backend: Backend) -> str:
    reason = backend.unavailable_reason()
    serves = ", ".join(sorted(backend.devices))
    return f"{backend.name} (serves {serves}" + (f"; unavailable: {reason})" if reason else ")")


def _describe_all() -> str:
    return "; ".join(_describe(get(name)) for name in _registered) or "none"


def for_device(device: str, requested: Optional[str] = None) -> Backend:
    """The backend that runs a launch whose data is on ``device``: ``requested`` (a name, as
    ``TRITIUM_BACKEND`` gives it) when given, else the first available one serving the device.
    A LaunchError when the requested backend is unknown, unavailable or serves another device, or
    when no backend serves the device; it names the backends there are."""
    if requested:
        backend = get(requested)
        reason = backend.unavailable_reason()
        if reason is not None:
            raise LaunchError(f"TRITIUM_BACKEND={requested!r} is not available here: {reason}; the backends are "
                              f"{_describe_all()}")
        if device not in backend.devices and device not in backend.staged_devices:
            raise LaunchError(f"TRITIUM_BACKEND={requested!r} runs kernels on {', '.join(sorted(backend.devices))} "
                              f"memory, but the arguments are on device {device!r}; the backends are "
                              f"{_describe_all()}")
        return backend
    serving = available(device)
    unavailable = [get(name) for name in names() if device in get(name).devices]
    if not serving and unavailable:
        backend = unavailable[0]
        raise LaunchError(f"the kernel's tensors are on device {device!r}, which the {backend.name} backend runs on, but "
                          f"it is not available here: {backend.unavailable_reason()}; or pass CPU tensors")
    if not serving:
        raise LaunchError(f"no backend serves device {device!r} yet: the backends are {_describe_all()}; "
                          f"pass {'CPU tensors' if device != 'cpu' else 'tensors a backend serves'}")
    return serving[0]


def for_compiling(device: str, requested: Optional[str] = None) -> Backend:
    """The backend that compiles for ``device`` without launching (``tritium.compile`` with a target):
    as ``for_device``, but a backend that can compile here counts even when it cannot launch (the
    CUDA backend makes PTX without a GPU)."""
    name = requested
    if not name:
        for candidate in names():
            backend = get(candidate)
            if device in backend.devices and backend.compile_unavailable_reason() is None:
                name = candidate
                break
        else:
            return for_device(device, requested)
    backend = get(name)
    reason = backend.compile_unavailable_reason()
    if reason is not None or (device not in backend.devices and device not in backend.staged_devices):
        return for_device(device, requested)
    return backend
