"""The launch path: which backend runs a launch, with which options, and how a compiled kernel runs.

The backend follows the data: the device of the arguments' memory (``tensor_view(...).device``)
picks the first available backend serving it, unless ``TRITIUM_BACKEND`` names one (see
``backends.registry``). The runtime never names a backend: everything it asks of one goes through
``backends.base.Backend`` and the executable it compiled.
"""
from __future__ import annotations

import inspect
import operator
import os
import sys
import warnings
from typing import Callable, Iterable, Optional

from .. import config, knobs
from ..backends import registry
from ..backends.base import Backend, KernelArgument, Options
from ..compiler.ir import types as T
from ..errors import LaunchError, PointerArgumentError, TritonError, show_cause_once
from ..language.core import constexpr
from .arguments import expand_composites, tensor_view

# Launch options Triton accepts (with its defaults), those of one backend's own (the CUDA backend's
# ``launch_pdl`` and ``wgmma``: another backend refuses them by name), and ``warmup``, which compiles
# without launching. The backend's options record says which of them shape its code.
LAUNCH_OPTIONS = {**Options().as_dict(), "launch_pdl": False, "wgmma": False, "extern_libs": None, "warmup": False}


def backend_for(devices: Iterable[Optional[str]]) -> Backend:
    """The backend for a launch whose pointer arguments live on ``devices`` (None entries, for
    scalars, are ignored; no pointer at all means host memory)."""
    found = sorted({d for d in devices if d})
    if len(found) > 1:
        raise LaunchError(f"the kernel's tensors are on different devices ({', '.join(found)}); a launch runs on "
                          "one device, so move them to one")
    device = found[0] if found else "cpu"
    return registry.for_device(device, config.backend_name() or None)


_parsed_options: dict = {}


def parse_options(backend: Backend, options: dict) -> Options:
    """``backend.parse_options`` without ``warmup``, remembered for hashable option values (and the
    default of ``enable_fp_fusion``, which TRITON_DEFAULT_FP_FUSION gives where a launch names none)."""
    options = {k: v for k, v in options.items() if k != "warmup"}
    try:
        default = None if "enable_fp_fusion" in options else bool(knobs.language.default_fp_fusion)
        memo_key = (backend.name, id(backend), tuple(sorted(options.items())), default)
        hash(memo_key)
    except TypeError:
        return backend.parse_options(options)
    parsed = _parsed_options.get(memo_key)
    if parsed is None:
        parsed = _parsed_options[memo_key] = backend.parse_options(options)
    return parsed


def normalize_grid(grid, meta: dict, name: str = "kernel") -> tuple[int, int, int]:
    """The launch grid as three dimensions; ``name`` (the kernel's) prefixes the errors."""
    try:
        return _normalize_grid(grid, meta)
    except LaunchError as error:
        raise LaunchError(f"{name}[grid]: {error}") from None


def _normalize_grid(grid, meta: dict) -> tuple[int, int, int]:
    if type(grid) is tuple and 1 <= len(grid) <= 3 and all(type(g) is int and g >= 0 for g in grid):
        return (grid + (1, 1))[:3]  # the common case, checked as below
    if callable(grid):
        grid = grid(meta)
    if isinstance(grid, int) or hasattr(grid, "__index__") and not isinstance(grid, (tuple, list)):
        grid = (grid,)
    try:
        dims = [operator.index(g) for g in grid]  # integers only: 1.5 programs is a mistake, not 1
    except (TypeError, ValueError):
        raise LaunchError(f"the grid must be a tuple of up to 3 integers (or a function returning one), "
                          f"got {grid!r}") from None
    if not 1 <= len(dims) <= 3:
        raise LaunchError(f"the grid must have 1 to 3 dimensions, got {len(dims)}")
    if any(d < 0 for d in dims):
        raise LaunchError(f"grid dimensions must not be negative, got {tuple(dims)}")
    while len(dims) < 3:
        dims.append(1)
    return dims[0], dims[1], dims[2]


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the tritium package's folder


def _user_frame():
    """The innermost frame outside tritium: where the user launched the kernel (through an
    autotuner, heuristics or a compiled kernel, whichever frames of ours lie between)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE + os.sep) and not filename.startswith("<frozen"):
            return frame
        frame = frame.f_back
    return None


def _launched_by_tritium() -> bool:
    """True when the launch comes from tritium's own code (tritium.ops), not through the runtime
    from the user's: the first frame outside runtime/ is in the tritium package."""
    runtime = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(runtime):
        frame = frame.f_back
    return frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE + os.sep)


def launch_site() -> Optional[str]:
    """``file:line`` of the user's launch, or None when no frame outside tritium is found."""
    frame = _user_frame()
    return None if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def at_launch_site(error: LaunchError) -> LaunchError:
    """``error`` with the user's launch ``file:line`` in front of its message (once)."""
    if not getattr(error, "launch_site", None):
        site = launch_site()
        if site is not None:
            error.launch_site = site
            error.args = (f"{site}: {error.args[0] if error.args else ''}",) + tuple(error.args[1:])
    return error


_WARNED_EMPTY_GRIDS: set = set()


def warn_empty_grid(name: str, grid3: tuple[int, int, int]) -> None:
    """A grid with a zero dimension is legal (empty inputs launch one) but runs nothing: say so once
    per launch site, as a warning at the user's line. tritium's own ops launch empty grids for empty
    tensors on purpose: no warning for those."""
    if _launched_by_tritium():
        return
    frame = _user_frame()
    filename, line = (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("?", 0)
    if (filename, line, name) in _WARNED_EMPTY_GRIDS:
        return
    _WARNED_EMPTY_GRIDS.add((filename, line, name))
    warnings.warn_explicit(f"{filename}:{line}: {name}[grid] launched with grid {grid3}, which has a zero "
                           "dimension: no program runs", RuntimeWarning, filename, line)


def without_internal_frames(error: BaseException) -> BaseException:
    """The user's mistake is in their kernel or call, not in tritium's frames: drop those frames,
    from the error and from the error it wraps (kept as ``__cause__``, as Triton keeps it)."""
    if error.__cause__ is not None:
        error.__cause__.with_traceback(None)
    return error.with_traceback(None)


def _same_constant(a, b) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


# launching a compiled kernel --------------------------------------------------------------------
def _signature(kernel) -> inspect.Signature:
    signature = getattr(kernel.fn, "signature", None)
    return signature if signature is not None else inspect.signature(kernel.fn.fn)


def launch_direct(kernel, grid, args, kwargs):
    """``compiled[grid](*args, **kwargs)``: every parameter given (constexprs included, as Triton's
    compiled kernels take them) or only the run-time ones. A mistake is reported at the user's line."""
    try:
        return _launch_direct(kernel, grid, args, kwargs)
    except LaunchError as error:
        raise without_internal_frames(at_launch_site(error)) from show_cause_once(error)


def _launch_direct(kernel, grid, args, kwargs):
    if kernel.fn is None:
        raise LaunchError(f"compiled kernel {kernel.name} was not made from a kernel function and cannot be launched")
    signature = _signature(kernel)
    arg_names = list(signature.parameters)
    debug = kwargs.get("debug") if "debug" not in arg_names else None
    kwargs = {k: v for k, v in kwargs.items() if k != "stream" and k not in LAUNCH_OPTIONS}
    runtime_names = ([n for n in arg_names if not isinstance(kernel.specs.get(n), constexpr)]
                     if kernel.specs else list(kernel.ir.arg_names))
    given = len(args) + len(kwargs)
    if given == len(runtime_names) and given != len(arg_names):
        values = dict(zip(runtime_names, args))
        values.update(kwargs)
    else:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            raise LaunchError(f"compiled {kernel.name}[grid](...): {e}; pass every parameter in order "
                              f"({', '.join(arg_names)}), or only the run-time ones "
                              f"({', '.join(runtime_names)})") from None
        bound.apply_defaults()
        values = dict(bound.arguments)
        # Constexprs (and arguments specialized to 1 or None) were fixed when compiling: a
        # different value now would be silently ignored, so refuse it.
        for name, spec in kernel.specs.items():
            if isinstance(spec, constexpr) and name not in runtime_names:
                value = values[name].value if isinstance(values[name], constexpr) else values[name]
                if not _same_constant(value, spec.value):
                    raise LaunchError(f"compiled {kernel.name} was specialized for {name}={spec.value!r}, "
                                      f"but launched with {name}={value!r}; launch the JITFunction "
                                      "instead (it compiles each specialization it meets)")
    unknown = [n for n in values if n not in arg_names]
    missing = [n for n in runtime_names if n not in values]
    if unknown or missing:
        raise LaunchError(f"compiled {kernel.name}[grid](...): "
                          + (f"unknown arguments {unknown}" if unknown else f"missing arguments {missing}"))
    meta = dict(values)
    meta.update(kernel.options.as_dict() if kernel.options is not None else {})
    try:
        launch(kernel, normalize_grid(grid, meta, kernel.name), values, debug=debug)
    except TritonError as error:
        raise without_internal_frames(error) from show_cause_once(error)
    return kernel


def launch_protocol(kernel, grid3: tuple, args: tuple):
    """``compiled.run(grid_0, grid_1, grid_2, stream, ...)``, the launch of Triton's compiled kernels
    that code generators (torch's Inductor) call once per kernel per step: straight to the backend's
    direct launcher when every tensor is in the backend's memory with the element type the kernel
    was compiled for and nothing asks for ``launch``'s extras (hooks, debug mode, validation); else
    as ``compiled[grid](*args)``. The argument positions are worked out once per kernel."""
    settings = config.launch_settings()
    if not settings.debug and not settings.validate:  # hooks and @jit(debug=True): launch_directly's call
        plans = kernel.__dict__.setdefault("_protocol_plans", {})
        # a direct launcher may read settings when made (the CPU backend's thread count and shuffle seed)
        key = (len(args), settings.shuffle_seed, settings.num_threads_text)
        plan = plans.get(key, False)
        if plan is False:
            plan = plans[key] = _protocol_plan(kernel, len(args))
        if plan is not None:
            positions, direct, devices = plan
            values = {}
            torch = sys.modules.get("torch")
            for position, name, element in positions:
                value = args[position]
                if element is not None:
                    if torch is None or not isinstance(value, torch.Tensor) or _element_type(value.dtype) != element \
                            or ("cpu" if value.is_cpu else "cuda" if value.is_cuda else value.device.type) not in devices:
                        break  # a check the generic path makes: let it make it
                values[name] = value
            else:
                if launch_directly(kernel, direct, grid3, values):
                    return kernel
    return launch_direct(kernel, grid3, args, {})


def _element_type(torch_dtype):
    from .arguments import _torch_dtype

    try:
        return _torch_dtype(torch_dtype)[0]
    except LaunchError:
        return None


def _protocol_plan(kernel, count: int):
    """((position in ``run``'s arguments, parameter name, pointer element type or None) per run-time
    parameter, the direct launcher, its devices); None when the kernel has no direct launcher or
    composite parameters (tuples, descriptors), or ``count`` arguments match no way of passing them."""
    make = kernel.executable.direct_launcher
    if kernel.fn is None:
        return None
    arg_names = list(_signature(kernel).parameters)
    runtime = [n for n in arg_names if not isinstance(kernel.specs.get(n), constexpr)] if kernel.specs \
        else list(kernel.ir.arg_names)
    if runtime != list(kernel.ir.arg_names):
        return None
    if count == len(arg_names):
        indices = [arg_names.index(n) for n in runtime]
    elif count == len(runtime):
        indices = list(range(len(runtime)))
    else:
        return None
    direct = make(list(kernel.ir.arg_names))
    if direct is None:
        return None
    positions = []
    for index, name in zip(indices, runtime):
        ty = kernel.specs.get(name)
        positions.append((index, name, ty.element_ty if isinstance(ty, T.pointer_type) else None))
    backend = registry.get(kernel.backend)
    return positions, direct, backend.devices


def kernel_arguments(kernel, values: dict, devices: frozenset) -> list[KernelArgument]:
    """The run-time arguments of ``kernel`` (IR parameter order) from ``values`` (name -> value),
    each pointer's memory checked against its compiled element type and the backend's devices."""
    arguments = []
    specs, values = expand_composites(kernel.specs, values)
    for name in kernel.ir.arg_names:
        ty = specs[name]
        value = values[name]
        if isinstance(value, constexpr):
            value = value.value
        if isinstance(ty, T.pointer_type):
            view = tensor_view(value)
            if view is None:
                raise PointerArgumentError(f"argument '{name}' of {kernel.name} was compiled as a pointer ({ty}), "
                                           f"but a {type(value).__name__} was passed; pass a tensor")
            if view.device not in devices:
                raise LaunchError(f"argument '{name}' of {kernel.name} is on device '{view.device}', but the "
                                  f"{kernel.backend} backend it was compiled for runs on {', '.join(sorted(devices))} "
                                  "memory; launch the JITFunction (the backend follows the data) or move the tensor")
            if view.dtype != ty.element_ty:
                raise LaunchError(f"argument '{name}' of {kernel.name} was compiled for {ty.element_ty} "
                                  f"elements, but holds {view.dtype}")
            value = view
        arguments.append(KernelArgument(name, ty, value))
    return arguments


def direct_launcher(kernel, values: dict, settings: config.LaunchSettings) -> Optional[Callable]:
    """The backend's direct launcher for ``kernel`` (``Executable.direct_launcher``: plain argument
    values in, none of ``launch``'s generic checks), when the tensors in ``values`` are in the
    backend's own memory and ``settings`` (the launch's ``config.launch_settings()``) ask for
    neither debug mode nor validation; None otherwise. The fast path caches it with the kernel:
    its key holds every tensor's dtype, alignment and device and the settings, so what this
    decides holds for every launch that finds it."""
    make = kernel.executable.direct_launcher
    if settings.debug or settings.validate:
        return None
    backend = registry.get(kernel.backend)
    torch = sys.modules.get("torch")
    devices = {v.device.type for v in values.values() if torch is not None and isinstance(v, torch.Tensor)}
    if not devices <= backend.devices:
        return None  # staged host memory
    return make(list(kernel.ir.arg_names))


def launch_directly(kernel, direct: Callable, grid3: tuple[int, int, int], values: dict) -> bool:
    """Launches through ``direct`` (a ``direct_launcher``) when nothing asks for ``launch``'s extras
    (``@jit(debug=True)``, launch hooks); False when it did not launch (those, or a grid it leaves
    to ``launch``)."""
    if knobs.launch_hooked(knobs.runtime) or getattr(kernel.fn, "debug", None):
        return False
    try:
        return direct(grid3, values)
    except TritonError:
        raise
    except Exception as error:  # not the kernel's mistake: the backend's
        from ..errors import internal_error

        raise internal_error(error, kernel=kernel.name, loc=None, opcode="",
                             where=f"the {kernel.backend} backend's launch") from error


def launch(kernel, grid3: tuple[int, int, int], values: dict, debug: Optional[bool] = None, stream=None) -> None:
    """Runs ``kernel`` on ``grid3`` with the arguments in ``values`` (name -> value).

    ``debug``: debug mode for this launch; None takes ``@jit(debug=...)``, and when that is None
    too, ``TRITIUM_DEBUG``. With ``TRITIUM_VALIDATE=interpreter``, a launch on another backend is
    run again on the interpreter and the outputs compared (see ``validate``)."""
    backend = registry.get(kernel.backend)
    arguments = kernel_arguments(kernel, values, backend.devices | backend.staged_devices)
    if grid3[0] * grid3[1] * grid3[2] == 0:
        warn_empty_grid(kernel.name, grid3)
        return
    settings = config.launch_settings()
    if debug is None:
        debug = getattr(kernel.fn, "debug", None)
    if debug is None:
        debug = settings.debug
    reference = settings.validate
    if reference and reference != kernel.backend:
        from .validate import launch_and_compare

        launch_and_compare(kernel, reference, grid3, arguments, stream, bool(debug))
        return
    enter, leave = knobs.active_hook(knobs.runtime, "launch_enter_hook"), \
        knobs.active_hook(knobs.runtime, "launch_exit_hook")
    metadata = None
    if enter is not None or leave is not None:
        metadata = knobs.LaunchMetadata.of(kernel, grid3, stream or 0, values)
        if enter is not None:
            enter(metadata)
    try:
        kernel.executable.launch(grid3, arguments, stream, debug=bool(debug))
    except TritonError:
        raise
    except Exception as error:  # not the kernel's mistake: the backend's
        from ..errors import internal_error

        raise internal_error(error, kernel=kernel.name, loc=None, opcode="",
                             where=f"the {kernel.backend} backend's launch") from error
    if leave is not None:
        leave(metadata)
