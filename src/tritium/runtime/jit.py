"""``@jit``: a kernel object that binds arguments, specializes, compiles once per key, and launches."""
from __future__ import annotations

import dataclasses
import functools
import inspect
import operator
import platform
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .. import config, knobs
from ..compiler.frontend import is_constexpr_annotation, parse_function
from ..compiler.ir import types as T
from ..errors import LaunchError, TritonError
from ..language.core import constexpr
from .arguments import expand_descriptors, specialize, tensor_view

# Launch options Triton accepts; they shape GPU code and are recorded but do not change results here.
# The last line holds the HIP backend's options, which autotune configs written for AMD GPUs carry.
LAUNCH_OPTIONS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None, "enable_fp_fusion": True,
                  "debug": None, "launch_cooperative_grid": False, "extern_libs": None, "sanitize_overflow": True,
                  "instrumentation_mode": "", "warmup": False,
                  "waves_per_eu": 0, "matrix_instr_nonkdim": 0, "kpack": 1}

# Ops a GPU routes through shared memory; ``metadata.shared`` adds up the bytes of their operands.
_SHARED_MEMORY_OPCODES = frozenset({"reduce", "scan", "dot", "permute"})


def _shared_memory_bytes(fn, num_stages: int) -> int:
    """An estimate of the shared memory a GPU would give this kernel: the largest block that a
    reduction, scan or transpose exchanges between threads, or a dot's operand tiles times
    ``num_stages - 1`` (the pipeline's buffers). 0 for kernels that need none, as on a GPU."""
    largest = 0
    for op in fn.walk():
        if op.opcode not in _SHARED_MEMORY_OPCODES:
            continue
        blocks = [v.type for v in op.operands if isinstance(v.type, T.block_type)]
        if op.opcode == "dot":
            size = sum(b.numel * b.element_ty.itemsize for b in blocks[:2]) * max(1, num_stages - 1)
        else:
            size = max((b.numel * b.element_ty.itemsize for b in blocks), default=0)
        largest = max(largest, size)
    return largest


@dataclass
class CompiledKernel:
    """One specialization of a kernel: its IR and what the backend made of it.

    ``kernel.warmup(...)`` returns one, and it can be launched directly with
    ``compiled[grid](*args)``, every parameter given (constexprs included, as Triton's compiled
    kernels take them) or only the run-time ones. ``n_regs`` and ``n_spills`` are nominal (32 and
    0); ``metadata.shared`` estimates what a GPU would use (see ``_shared_memory_bytes``).
    """

    name: str
    key: tuple
    ir: Any  # compiler.ir.ops.Function
    executable: Any
    backend: str
    options: dict = field(default_factory=dict)
    n_regs: int = 32
    n_spills: int = 0
    fn: Any = None  # the JITFunction
    specs: dict = field(default_factory=dict)  # parameter name -> IR type, or constexpr value

    @property
    def asm(self) -> dict:
        return {"ttir": str(self.ir)}

    @functools.cached_property
    def shared(self) -> int:
        return _shared_memory_bytes(self.ir, int(self.options.get("num_stages") or 3))

    @property
    def metadata(self):
        from types import SimpleNamespace

        return SimpleNamespace(name=self.name, shared=self.shared, num_warps=self.options.get("num_warps", 4),
                               num_stages=self.options.get("num_stages", 3),
                               num_ctas=self.options.get("num_ctas", 1), backend=self.backend,
                               target=("cpu", platform.machine(), 32))

    def _init_handles(self) -> None:
        """Loads the kernel onto the device: nothing left to do for the interpreter."""

    def __getitem__(self, grid):
        def launcher(*args, **kwargs):
            return self._launch_direct(grid, args, kwargs)

        return launcher

    def _launch_direct(self, grid, args, kwargs):
        if self.fn is None:
            raise LaunchError(f"compiled kernel {self.name} was not made by a JITFunction and cannot be launched")
        debug = kwargs.get("debug") if "debug" not in self.fn.arg_names else None
        kwargs = {k: v for k, v in kwargs.items() if k != "stream" and k not in LAUNCH_OPTIONS}
        runtime_names = ([n for n in self.fn.arg_names if not isinstance(self.specs.get(n), constexpr)]
                         if self.specs else list(self.ir.arg_names))
        given = len(args) + len(kwargs)
        if given == len(runtime_names) and given != len(self.fn.arg_names):
            values = dict(zip(runtime_names, args))
            values.update(kwargs)
        else:
            try:
                bound = self.fn.signature.bind(*args, **kwargs)
            except TypeError as e:
                raise LaunchError(f"compiled {self.name}[grid](...): {e}; pass every parameter in order "
                                  f"({', '.join(self.fn.arg_names)}), or only the run-time ones "
                                  f"({', '.join(runtime_names)})") from None
            bound.apply_defaults()
            values = dict(bound.arguments)
            # Constexprs (and arguments specialized to 1 or None) were fixed when compiling: a
            # different value now would be silently ignored, so refuse it.
            for name, spec in self.specs.items():
                if isinstance(spec, constexpr) and name not in runtime_names:
                    value = values[name].value if isinstance(values[name], constexpr) else values[name]
                    if not _same_constant(value, spec.value):
                        raise LaunchError(f"compiled {self.name} was specialized for {name}={spec.value!r}, "
                                          f"but launched with {name}={value!r}; launch the JITFunction "
                                          "instead (it compiles each specialization it meets)")
        unknown = [n for n in values if n not in self.fn.arg_names]
        missing = [n for n in runtime_names if n not in values]
        if unknown or missing:
            raise LaunchError(f"compiled {self.name}[grid](...): "
                              + (f"unknown arguments {unknown}" if unknown else f"missing arguments {missing}"))
        meta = dict(values)
        meta.update(self.options)
        try:
            self.launch(_normalize_grid(grid, meta), values, debug=debug)
        except TritonError as error:
            raise _without_internal_frames(error) from error.__cause__
        return self

    def launch(self, grid3, values: dict, debug=None) -> None:
        """Runs the kernel on ``grid3`` with the run-time arguments in ``values`` (name -> value).

        ``debug``: the interpreter's debug mode for this launch (``config.debug_mode``); None takes
        ``@jit(debug=...)``, and when that is None too, ``TRITIUM_DEBUG``."""
        runtime_args = []
        specs, values = expand_descriptors(self.specs, values)
        for name in self.ir.arg_names:
            ty = specs[name]
            value = values[name]
            if isinstance(value, constexpr):
                value = value.value
            if isinstance(ty, T.pointer_type):
                view = tensor_view(value)
                if view is None:
                    raise LaunchError(f"argument '{name}' of {self.name} was compiled as a pointer ({ty}), "
                                      f"but a {type(value).__name__} was passed")
                if view.device != "cpu":
                    raise LaunchError(f"argument '{name}' is on device '{view.device}', but only CPU memory "
                                      "can be used until the cuda backend lands")
                if view.dtype != ty.element_ty:
                    raise LaunchError(f"argument '{name}' of {self.name} was compiled for {ty.element_ty} "
                                      f"elements, but holds {view.dtype}")
                value = view
            runtime_args.append((name, ty, value))
        if grid3[0] * grid3[1] * grid3[2] == 0:
            return
        if debug is None and self.fn is not None:
            debug = self.fn.debug
        self.executable.launch(grid3, runtime_args, debug=debug)


def _same_constant(a, b) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


def _without_internal_frames(error: BaseException) -> BaseException:
    """The user's mistake is in their kernel or call, not in tritium's frames: drop those frames,
    from the error and from the error it wraps (kept as ``__cause__``, as Triton keeps it)."""
    if error.__cause__ is not None:
        error.__cause__.with_traceback(None)
    return error.with_traceback(None)


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
        dims = [operator.index(g) for g in grid]  # integers only: 1.5 programs is a mistake, not 1
    except (TypeError, ValueError):
        raise LaunchError(f"the grid must be a tuple of up to 3 integers (or a function returning one), got {grid!r}") from None
    if not 1 <= len(dims) <= 3:
        raise LaunchError(f"the grid must have 1 to 3 dimensions, got {len(dims)}")
    if any(d < 0 for d in dims):
        raise LaunchError(f"grid dimensions must not be negative, got {tuple(dims)}")
    while len(dims) < 3:
        dims.append(1)
    return dims[0], dims[1], dims[2]


class KernelInterface:
    """What every launchable kernel object has: ``kernel[grid](*args, **kwargs)`` calls
    ``kernel.run(*args, grid=grid, **kwargs)``. JITFunction, Autotuner and Heuristics are ones."""

    def __getitem__(self, grid) -> Callable:
        return functools.partial(self.run, grid=grid)


_EXEC_SOURCES = 0


def _register_exec_source(fn) -> str:
    """The source of a function defined by ``exec(src)`` (as Triton's test suite does to patch kernels),
    found among the string locals of the frame that called ``exec``; registered in ``linecache`` under a
    file name of its own so that ``inspect`` (and error carets) can read it later. "" when not found."""
    import ast
    import linecache

    global _EXEC_SOURCES
    code = getattr(fn, "__code__", None)
    if code is None or not code.co_filename.startswith("<"):
        return ""
    frame, needle = sys._getframe(1), f"def {fn.__name__}("
    for _ in range(12):
        if frame is None:
            return ""
        if frame.f_code.co_filename == code.co_filename and frame.f_back is not None:
            for value in list(frame.f_back.f_locals.values()):
                if not isinstance(value, str) or needle not in value:
                    continue
                try:
                    tree = ast.parse(value)
                except SyntaxError:
                    continue
                lines = value.splitlines(keepends=True)
                for node in ast.walk(tree):
                    if (isinstance(node, ast.FunctionDef) and node.name == fn.__name__ and code.co_firstlineno
                            == min([d.lineno for d in node.decorator_list], default=node.lineno)):
                        _EXEC_SOURCES += 1
                        filename = f"<tritium-exec-{_EXEC_SOURCES}>"
                        linecache.cache[filename] = (len(value), None, lines, filename)
                        fn.__code__ = code.replace(co_filename=filename)
                        return inspect.getsource(fn)
            return ""
        frame = frame.f_back
    return ""


class KernelParam:
    """One parameter of a @jit function, described as Triton does in ``JITFunction.params``:
    ``num`` (its position), ``name``, ``annotation``, ``default`` and ``has_default``,
    ``is_constexpr``, ``is_const``, ``do_not_specialize`` (code that inspects kernels, such as torch's
    ``wrap_triton``, reads these). ``kind`` is the ``inspect.Parameter``'s."""

    def __init__(self, num: int, param: inspect.Parameter, do_not_specialize: bool,
                 do_not_specialize_on_alignment: bool = False):
        self.num = num
        self._param = param
        self.do_not_specialize = do_not_specialize
        self.do_not_specialize_on_alignment = do_not_specialize_on_alignment

    name = property(lambda self: self._param.name)
    annotation = property(lambda self: self._param.annotation)
    default = property(lambda self: self._param.default)
    kind = property(lambda self: self._param.kind)

    @property
    def has_default(self) -> bool:
        return self._param.default is not inspect.Parameter.empty

    @property
    def is_constexpr(self) -> bool:
        return is_constexpr_annotation(self._param.annotation)

    @property
    def is_const(self) -> bool:
        annotation = self._param.annotation
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        return "const" in text and not self.is_constexpr

    def __repr__(self) -> str:
        return f"KernelParam({self.num}, {self._param})"


class JITFunction(KernelInterface):
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
        signature_params = list(self.signature.parameters.values())
        self.arg_names = [p.name for p in signature_params]
        names = set(self.arg_names)
        self.do_not_specialize = {self.arg_names[d] if isinstance(d, int) else d for d in do_not_specialize}
        unknown = self.do_not_specialize - names
        if unknown:
            raise LaunchError(f"do_not_specialize names unknown parameters: {sorted(unknown)}")
        on_alignment = {self.arg_names[d] if isinstance(d, int) else d for d in do_not_specialize_on_alignment}
        self.params = [KernelParam(i, p, p.name in self.do_not_specialize, p.name in on_alignment)
                       for i, p in enumerate(signature_params)]
        self.constexprs = [p.num for p in self.params if p.is_constexpr]
        self.debug = debug
        self.cache: dict[tuple, CompiledKernel] = {}
        self._parsed = None
        try:
            self.src = inspect.getsource(fn)
        except (OSError, TypeError):
            self.src = _register_exec_source(fn)

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
                try:
                    part, spec = specialize(value, allow_constant_one=p.name not in self.do_not_specialize)
                except LaunchError as error:
                    raise LaunchError(f"{self.__name__}[grid](...), argument '{p.name}': {error}") from None
                key.append(part)
                specs[p.name] = spec
        # read while compiling (the precision of fp32 tl.dot calls that name none): part of the key
        key.append(("fp32_default", knobs.language.fp32_default))
        return tuple(key), specs

    # compile and launch -----------------------------------------------------------------------------
    def _compile(self, key, specs, options) -> CompiledKernel:
        from ..compiler import compile_ir
        from ..backends import interpreter

        compiled_ir = compile_ir(self, specs)
        for text in compiled_ir.static_output:
            sys.stdout.write(text)
        executable = interpreter.compile(compiled_ir.function)
        return CompiledKernel(self.__name__, key, compiled_ir.function, executable, interpreter.NAME, dict(options),
                              fn=self, specs=dict(specs))

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

    def _kernel_for(self, key, specs, options) -> CompiledKernel:
        """The compiled kernel for ``key``, compiling on a miss. Launch options (num_warps...) do
        not change the code here: a hit with other options shares the code, reporting them."""
        kernel = self.cache.get(key)
        if kernel is None:
            return self.cache.setdefault(key, self._compile(key, specs, options))
        if any(kernel.options.get(k) != v for k, v in options.items()):
            kernel = dataclasses.replace(kernel, options={**kernel.options, **options})
        return kernel

    def warmup(self, *args, grid=None, **kwargs) -> CompiledKernel:
        """Compiles for these arguments without launching, and returns the compiled kernel."""
        values, options = self._bind(args, kwargs)
        options.pop("warmup", None)
        key, specs = self.specialization(values)
        return self._kernel_for(key, specs, options)

    def run(self, *args, grid, **kwargs):
        try:
            return self._run(args, grid, kwargs)
        except TritonError as error:
            raise _without_internal_frames(error) from error.__cause__

    def _run(self, args, grid, kwargs):
        backend = config.backend_name()
        if backend not in ("interpreter",):
            raise LaunchError(f"TRITIUM_BACKEND={backend!r} is not available yet; use 'interpreter'")
        values, options = self._bind(args, kwargs)
        key, specs = self.specialization(values)
        kernel = self._kernel_for(key, specs, {k: v for k, v in options.items() if k != "warmup"})
        if options.get("warmup"):
            return kernel
        meta = dict(values)
        meta.update(options)
        grid3 = _normalize_grid(grid, meta)
        kernel.launch(grid3, values, debug=options.get("debug"))
        return kernel


def jit(fn: Optional[Callable] = None, *, do_not_specialize=(), debug=None, noinline=None, repr=None,
        launch_metadata=None, do_not_specialize_on_alignment=()):
    """Decorates a kernel (or a helper called from kernels)."""

    def decorate(f):
        return JITFunction(f, do_not_specialize=do_not_specialize, debug=debug, noinline=noinline)

    return decorate(fn) if fn is not None else decorate
