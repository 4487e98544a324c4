"""``@jit``: a kernel object that binds arguments, specializes, compiles once per key, and launches."""
from __future__ import annotations

import functools
import inspect
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .. import config
from ..compiler.frontend import is_constexpr_annotation, parse_function
from ..compiler.ir import types as T
from ..errors import LaunchError, TritonError
from ..language.core import constexpr
from .arguments import specialize, tensor_view

# Launch options Triton accepts; they shape GPU code and are recorded but do not change results here.
LAUNCH_OPTIONS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None, "enable_fp_fusion": True,
                  "debug": None, "launch_cooperative_grid": False, "extern_libs": None, "sanitize_overflow": True,
                  "instrumentation_mode": "", "warmup": False}


@dataclass
class CompiledKernel:
    """One specialization of a kernel: its IR and what the backend made of it."""

    name: str
    key: tuple
    ir: Any  # compiler.ir.ops.Function
    executable: Any
    backend: str
    options: dict = field(default_factory=dict)
    n_regs: int = 0
    n_spills: int = 0

    @property
    def asm(self) -> dict:
        return {"ttir": str(self.ir)}

    @property
    def metadata(self):
        from types import SimpleNamespace

        return SimpleNamespace(name=self.name, shared=0, num_warps=self.options.get("num_warps", 4),
                               num_stages=self.options.get("num_stages", 3), backend=self.backend)

    def __getitem__(self, grid):
        raise LaunchError("launch the kernel itself (kernel[grid](...)), not a compiled variant")


def _parse_type(text: str):
    from ..compiler.ir.types import dtype_from_ir_name

    pointer = text.startswith("*")
    name = text[1:] if pointer else text
    ty = dtype_from_ir_name(name)
    if ty is None:
        try:
            ty = T.dtype(name)
        except ValueError:
            raise LaunchError(f"unknown type {text!r} in the signature (use e.g. *fp32, i32, fp16)") from None
    return T.pointer_type(ty) if pointer else ty


def _normalize_grid(grid, meta: dict) -> tuple[int, int, int]:
    if callable(grid):
        grid = grid(meta)
    if isinstance(grid, int) or hasattr(grid, "__index__") and not isinstance(grid, (tuple, list)):
        grid = (grid,)
    try:
        dims = [int(g) for g in grid]
    except (TypeError, ValueError):
        raise LaunchError(f"the grid must be a tuple of up to 3 integers (or a function returning one), got {grid!r}") from None
    if not 1 <= len(dims) <= 3:
        raise LaunchError(f"the grid must have 1 to 3 dimensions, got {len(dims)}")
    if any(d < 0 for d in dims):
        raise LaunchError(f"grid dimensions must not be negative, got {tuple(dims)}")
    while len(dims) < 3:
        dims.append(1)
    return dims[0], dims[1], dims[2]


class JITFunction:
    """A @jit function. Launch it as ``kernel[grid](*args, **kwargs)``."""

    def __init__(self, fn: Callable, do_not_specialize=(), debug=None, noinline=None, repr=None,
                 launch_metadata=None, do_not_specialize_on_alignment=()):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self.signature = inspect.signature(fn)
        self.params = list(self.signature.parameters.values())
        self.arg_names = [p.name for p in self.params]
        self.constexprs = [i for i, p in enumerate(self.params) if is_constexpr_annotation(p.annotation)]
        names = {p.name for p in self.params}
        self.do_not_specialize = {self.arg_names[d] if isinstance(d, int) else d for d in do_not_specialize}
        unknown = self.do_not_specialize - names
        if unknown:
            raise LaunchError(f"do_not_specialize names unknown parameters: {sorted(unknown)}")
        self.debug = debug
        self.cache: dict[tuple, CompiledKernel] = {}
        self._parsed = None
        try:
            self.src = inspect.getsource(fn)
        except (OSError, TypeError):
            self.src = ""

    @property
    def parsed(self):
        if self._parsed is None:
            self._parsed = parse_function(self.fn)
        return self._parsed

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"

    def __call__(self, *args, **kwargs):
        raise LaunchError(
            f"{self.__name__} is a @triton.jit kernel and cannot be called like a Python function; "
            f"launch it with a grid: {self.__name__}[grid](...), e.g. {self.__name__}[(triton.cdiv(n, BLOCK),)](...)"
        )

    def __getitem__(self, grid) -> Callable:
        return functools.partial(self.run, grid=grid)

    # binding and specialization ----------------------------------------------------------------
    def _bind(self, args, kwargs) -> tuple[dict, dict]:
        options = {k: kwargs.pop(k) for k in list(kwargs) if k in LAUNCH_OPTIONS and k not in self.arg_names}
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise LaunchError(f"{self.__name__}[grid](...): {e}") from None
        bound.apply_defaults()
        return dict(bound.arguments), options

    def specialization(self, values: dict) -> tuple[tuple, dict]:
        key = []
        specs: dict[str, Any] = {}
        for i, p in enumerate(self.params):
            value = values[p.name]
            if i in self.constexprs:
                raw = value.value if isinstance(value, constexpr) else value
                if isinstance(raw, T.dtype) or isinstance(raw, (bool, int, float, str, type(None), tuple)):
                    key.append(("constexpr", type(raw).__name__, raw))
                else:
                    key.append(("constexpr", type(raw).__name__, id(raw)))
                specs[p.name] = constexpr(raw)
            else:
                if isinstance(value, constexpr):
                    value = value.value
                part, spec = specialize(value, allow_constant_one=p.name not in self.do_not_specialize)
                key.append(part)
                specs[p.name] = spec
        return tuple(key), specs

    # compile and launch -----------------------------------------------------------------------------
    def _compile(self, key, specs, options) -> CompiledKernel:
        from ..compiler import compile_ir
        from ..backends import interpreter

        compiled_ir = compile_ir(self, specs)
        for text in compiled_ir.static_output:
            sys.stdout.write(text)
        executable = interpreter.compile(compiled_ir.function)
        return CompiledKernel(self.__name__, key, compiled_ir.function, executable, interpreter.NAME, dict(options))

    def ir(self, signature, **constants) -> str:
        """The IR text for run-time parameter types ``signature`` ('*fp32,i32' or a list) and constexprs."""
        types = [t.strip() for t in signature.split(",")] if isinstance(signature, str) else list(signature)
        runtime = [p.name for i, p in enumerate(self.params) if i not in self.constexprs and p.name not in constants]
        if len(types) != len(runtime):
            raise LaunchError(f"{self.__name__} has {len(runtime)} run-time parameters ({', '.join(runtime)}) "
                              f"but the signature gives {len(types)} types")
        specs = {}
        for name, text in zip(runtime, types):
            specs[name] = _parse_type(text) if isinstance(text, str) else text
        for p in self.params:
            if p.name not in specs:
                if p.name in constants:
                    specs[p.name] = constexpr(constants[p.name])
                elif p.default is not inspect.Parameter.empty:
                    specs[p.name] = constexpr(p.default)
                else:
                    raise LaunchError(f"give a value for the constexpr {p.name} (e.g. -D {p.name}=...)")
        from ..compiler import compile_ir

        return str(compile_ir(self, specs).function)

    def warmup(self, *args, grid=None, **kwargs) -> CompiledKernel:
        values, options = self._bind(args, kwargs)
        key, specs = self.specialization(values)
        kernel = self.cache.get(key)
        if kernel is None:
            kernel = self.cache[key] = self._compile(key, specs, options)
        return kernel

    def run(self, *args, grid, **kwargs):
        try:
            return self._run(args, grid, kwargs)
        except TritonError as error:
            # The user's mistake is in their kernel or call, not in tritium's frames: show it alone.
            raise error.with_traceback(None) from None

    def _run(self, args, grid, kwargs):
        backend = config.backend_name()
        if backend not in ("interpreter",):
            raise LaunchError(f"TRITIUM_BACKEND={backend!r} is not available yet; use 'interpreter'")
        values, options = self._bind(args, kwargs)
        key, specs = self.specialization(values)
        kernel = self.cache.get(key)
        if kernel is None:
            kernel = self.cache[key] = self._compile(key, specs, options)
        meta = dict(values)
        meta.update(options)
        grid3 = _normalize_grid(grid, meta)
        runtime_args = []
        for name in kernel.ir.arg_names:
            ty = specs[name]
            value = values[name]
            if isinstance(ty, T.pointer_type):
                view = tensor_view(value)
                if view.device != "cpu":
                    raise LaunchError(f"argument '{name}' is on device '{view.device}', but only CPU memory "
                                      "can be used until the cuda backend lands")
                value = view
            runtime_args.append((name, ty, value))
        if grid3[0] * grid3[1] * grid3[2] == 0:
            return kernel
        kernel.executable.launch(grid3, runtime_args)
        return kernel


def jit(fn: Optional[Callable] = None, *, do_not_specialize=(), debug=None, noinline=None, repr=None,
        launch_metadata=None, do_not_specialize_on_alignment=()):
    """Decorates a kernel (or a helper called from kernels)."""

    def decorate(f):
        return JITFunction(f, do_not_specialize=do_not_specialize, debug=debug, noinline=noinline)

    return decorate(fn) if fn is not None else decorate
