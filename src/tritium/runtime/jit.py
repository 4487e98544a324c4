"""``@jit``: a kernel object that binds arguments, specializes, compiles once per key, and launches."""
from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
from typing import Any, Callable, Optional

from .. import config, knobs
from ..compiler.compiled_kernel import CompiledKernel  # noqa: F401  (where Triton's code looks for it)
from ..compiler.frontend import is_constexpr_annotation
from ..compiler.ir import types as T
from ..compiler.source import JITCallable, parse_type
from ..errors import LaunchError, TritonError, show_cause_once
from ..language.core import ConstexprFunction, constexpr, constexpr_function  # noqa: F401  (Triton's names here)
from ..language.core import source_from_def
from ..language.tuple_type import tuple_type
from . import compilation
from .arguments import MockTensor, is_composite, specialize, tensor_view  # noqa: F401  (MockTensor: Triton's name here)
from .binder import make_binder
from .reinterpret import TensorWrapper, reinterpret  # noqa: F401  (Triton's names here)
from .launch import (
    LAUNCH_OPTIONS, at_launch_site, backend_for, direct_launcher, launch, launch_directly, normalize_grid,
    parse_options, without_internal_frames,
)

__all__ = ["CompiledKernel", "JITFunction", "KernelInterface", "KernelParam", "LAUNCH_OPTIONS", "jit"]


def _parse_type(text: str):
    """The IR type of a signature entry ('*fp32', 'i32', or with an attribute: '*fp32:16', 'i32:1')."""
    return parse_type(text)[0]


class _KernelCache(dict):
    """A JITFunction's compiled kernels; removing any also forgets the fast path's shortcuts to them
    and the kernels whose executables new options may share (``JITFunction._build``)."""

    def __init__(self, *shortcuts: dict):
        super().__init__()
        self._shortcuts = shortcuts

    def _forget(self) -> None:
        for shortcuts in self._shortcuts:
            shortcuts.clear()

    def clear(self):
        super().clear()
        self._forget()

    def pop(self, *args):
        self._forget()
        return super().pop(*args)

    def popitem(self):
        self._forget()
        return super().popitem()

    def __delitem__(self, key):
        self._forget()
        super().__delitem__(key)


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


@dataclasses.dataclass(frozen=True)
class JitFunctionInfo:
    """What Triton's jit cache hooks receive as ``fn``: the @jit function's module, name, and itself."""

    module: str
    name: str
    jit_function: Any


class JITFunction(KernelInterface, JITCallable):
    """A @jit function. Launch it as ``kernel[grid](*args, **kwargs)``.

    ``cache`` holds one compiled kernel per (specialization key, backend name, options record):
    launches with other launch options (num_warps, num_stages, ...) compile separately."""

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
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature_params):
            raise TypeError(f"{fn.__name__}: JIT functions do not support **kwargs (a kernel's parameters are "
                            "compiled into it by name); list the parameters")
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
        self._constexpr_set = frozenset(self.constexprs)
        self.debug = debug
        self.repr = repr  # specialization -> the compiled kernel's name (compilation._kernel_name)
        self.launch_metadata = launch_metadata  # (grid, kernel metadata, arguments) -> what launch hooks add
        self._fast: dict[tuple, tuple] = {}  # the binder's key -> (kernel, its direct launcher or None)
        self._binder: Optional[Callable] = None  # made at the first launch (binder.make_binder)
        self._by_code: dict[tuple, CompiledKernel] = {}  # kernels by what their code depends on (_build)
        self.cache: dict[tuple, CompiledKernel] = _KernelCache(self._fast, self._by_code)
        self._parsed = None  # JITCallable.parsed reads the source on first use
        try:
            source = inspect.getsource(fn)
        except (OSError, TypeError):
            source = _register_exec_source(fn)
        self.src = source_from_def(source)

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"

    def __call__(self, *args, **kwargs):
        raise without_internal_frames(at_launch_site(LaunchError(
            f"{self.__name__} is a @triton.jit kernel and cannot be called like a Python function; "
            f"launch it with a grid: {self.__name__}[grid](...), e.g. {self.__name__}[(triton.cdiv(n, BLOCK),)](...)"
        )))

    # binding and specialization ----------------------------------------------------------------
    def _bind(self, args, kwargs) -> tuple[dict, dict]:
        options = {k: kwargs.pop(k) for k in list(kwargs) if k in LAUNCH_OPTIONS and k not in self.arg_names}
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise LaunchError(f"{self.__name__}[grid](...): {e}; {self.__name__} takes "
                              f"({', '.join(self.arg_names)})") from None
        bound.apply_defaults()
        return dict(bound.arguments), options

    def specialization(self, values: dict) -> tuple[tuple, dict]:
        """(cache key, parameter name -> IR type or constexpr value) for the bound ``values``."""
        key, specs, _, _ = self._specialize(values)
        return key, specs

    def _specialize(self, values: dict) -> tuple[tuple, dict, dict, list]:
        """The specialization of a launch: its key, the specs, the attributes proved about the
        run-time arguments (name -> {"divisibility": 16}...) and the devices of their memory."""
        key = []
        specs: dict[str, Any] = {}
        attrs: dict[str, dict] = {}
        devices = []
        for i, p in enumerate(self.params):
            value = values[p.name]
            if i in self.constexprs:
                raw = value.value if isinstance(value, constexpr) else value
                if tensor_view(raw) is not None:
                    raise LaunchError(f"{self.__name__}[grid](...): parameter '{p.name}' is a tl.constexpr, which "
                                      f"takes a Python value (an int, float, bool, str, dtype or tuple), but a "
                                      f"{type(raw).__name__} was passed; pass e.g. {p.name}=int(t) or drop the "
                                      "tl.constexpr annotation to pass a tensor")
                if isinstance(raw, T.dtype) or isinstance(raw, (bool, int, float, str, type(None), tuple)):
                    key.append(("constexpr", type(raw).__name__, raw))
                else:
                    key.append(("constexpr", type(raw).__name__, id(raw)))
                specs[p.name] = constexpr(raw)
                continue
            if isinstance(value, constexpr):
                value = value.value
            try:
                found = specialize(value, allow_constant_one=p.name not in self.do_not_specialize)
            except LaunchError as error:
                raise type(error)(f"{self.__name__}[grid](...), argument '{p.name}': {error}") from None
            key.append(found.key)
            specs[p.name] = found.spec
            if is_composite(found.spec):  # its parts' attributes, by parameter-name suffix
                attrs.update({p.name + suffix: a for suffix, a in found.attrs.items()})
            elif found.attrs:
                attrs[p.name] = found.attrs
            devices.append(found.device)
        # read while compiling (the precision of fp32 tl.dot calls that name none; whether strict
        # mode refuses tritium's extensions): part of the key
        key.append(("fp32_default", knobs.language.fp32_default))
        key.append(("strict", config.strict()))
        return tuple(key), specs, attrs, devices

    # compile and launch -----------------------------------------------------------------------------
    def _ir_specs(self, signature, constants: dict) -> tuple[dict, dict]:
        """Specs and attributes for run-time parameter types ``signature`` and constexpr values."""
        types = [t.strip() for t in signature.split(",")] if isinstance(signature, str) else list(signature)
        runtime = [p.name for i, p in enumerate(self.params) if i not in self.constexprs and p.name not in constants]
        if len(types) != len(runtime):
            raise LaunchError(f"{self.__name__} has {len(runtime)} run-time parameters ({', '.join(runtime)}) "
                              f"but the signature gives {len(types)} types")
        specs: dict[str, Any] = {}
        attrs: dict[str, dict] = {}
        for name, text in zip(runtime, types):
            if isinstance(text, str):
                specs[name], found = parse_type(text)
                if found:
                    attrs[name] = found
            else:
                specs[name] = text
        for p in self.params:
            if p.name not in specs:
                if p.name in constants:
                    specs[p.name] = constexpr(constants[p.name])
                elif p.default is not inspect.Parameter.empty:
                    specs[p.name] = constexpr(p.default)
                else:
                    raise LaunchError(f"give a value for the constexpr {p.name} (e.g. -D {p.name}=...)")
        return specs, attrs

    def ir(self, signature, **constants) -> str:
        """The IR text for run-time parameter types ``signature`` ('*fp32,i32', with Triton's
        attribute suffixes '*fp32:16,i32:16', or a list) and constexprs. Launches nothing."""
        from ..backends import registry
        from ..compiler import compile_ir

        from ..compiler.passes.manager import skipped_without_fusion

        specs, attrs = self._ir_specs(signature, constants)
        stages = set().union(*(registry.get(name).stages for name in registry.names()))
        return str(compile_ir(self, specs, attrs, skipped_without_fusion(), other_stages=stages).function)

    def stages(self, signature, **constants) -> dict:
        """Each stage's output (stage name -> text or bytes) of the backend that runs host-memory
        launches (or the one TRITIUM_BACKEND names), for ``signature`` and constexprs as in ``ir``.
        Launches nothing."""
        specs, attrs = self._ir_specs(signature, constants)
        requested = config.backend_name()
        if requested:  # the backend TRITIUM_BACKEND names, when it can compile here (the CUDA one without a GPU)
            from ..backends import registry

            backend = registry.get(requested)
            device = next(iter(sorted(backend.devices)))
            backend = registry.for_compiling(device, requested)
        else:
            backend = backend_for([])
        kernel = compilation.build(self, specs, attrs, backend, parse_options(backend, {}), ("stages",))
        return kernel.asm

    def _kernel_for(self, key, specs, attrs, devices, options: dict, warmup: bool = False
                    ) -> Optional[CompiledKernel]:
        """The compiled kernel for ``key`` on the backend serving ``devices`` with launch ``options``
        (name -> value), compiling on a miss. Different options compile separately. On a miss,
        ``knobs.runtime.jit_cache_hook`` is asked first (a true answer: no kernel, None) and
        ``jit_post_compile_hook`` told after, as Triton calls them."""
        backend = backend_for(devices)
        record = parse_options(backend, options)
        # a backend named by TRITIUM_BACKEND compiles apart: chosen by default, it may have left the
        # kernel to the interpreter (compilation.build), which a named one never does
        cache_key = (key, backend.name, record, bool(config.backend_name()))
        kernel = self.cache.get(cache_key)
        if kernel is None:
            runtime = knobs.runtime
            if runtime.jit_cache_hook is not None and self._call_hook(
                    runtime.jit_cache_hook, key, specs, attrs, record, backend, warmup):
                return None
            kernel = self.cache.setdefault(cache_key, self._build(key, specs, attrs, backend, record))
            if runtime.jit_post_compile_hook is not None:
                self._call_hook(runtime.jit_post_compile_hook, key, specs, attrs, record, backend, warmup)
        return kernel

    def _call_hook(self, hook, key, specs, attrs, record, backend, warmup: bool):
        """``hook`` called with the keywords Triton's jit cache hooks take."""
        signature = {name: ("constexpr" if isinstance(spec, constexpr) else getattr(spec, "ir_name", str(spec)))
                     for name, spec in specs.items()}
        constants = {name: spec.value for name, spec in specs.items() if isinstance(spec, constexpr)}
        settings = {name: getattr(record, name, None) for name in
                    ("num_warps", "num_ctas", "num_stages", "enable_fp_fusion", "launch_cooperative_grid")}
        arguments = ", ".join(f"{name}: {ty}" for name, ty in signature.items())
        text = f"{self.__qualname__}[{', '.join(f'{k}={v}' for k, v in settings.items())}]({arguments})"
        compile_info = {"key": key, "signature": signature, "device": 0, "constants": constants, **settings,
                        "extern_libs": getattr(record, "extern_libs", ()), "configs": [attrs],
                        "specialization_data": repr((self.__qualname__, key, backend.name)), "is_warmup": warmup}
        return hook(key=key, repr=text, fn=JitFunctionInfo(self.__module__, self.__qualname__, self),
                    compile=compile_info, is_manual_warmup=warmup, already_compiled=False)

    def _build(self, key, specs, attrs, backend, record) -> CompiledKernel:
        """A new compiled kernel; it shares the executable of one compiled for options that differ only
        in what the backend's code ignores (``Backend.code_options``: an autotune over ``num_warps``
        on the CPU backend compiles once)."""
        code_key = (key, backend.name, backend.code_key(record), backend.default_target(),
                    bool(config.backend_name()))
        sibling = self._by_code.get(code_key)
        if sibling is not None and sibling.backend == backend.name and (
                not getattr(sibling.ir, "reads_num_warps", False)
                or getattr(sibling.options, "num_warps", None) == getattr(record, "num_warps", None)):
            return dataclasses.replace(sibling, options=record)  # (a kernel that reads num_warps: the same one)
        kernel = compilation.build(self, specs, attrs, backend, record, key)
        self._by_code[code_key] = kernel
        return kernel

    def warmup(self, *args, grid=None, **kwargs) -> CompiledKernel:
        """Compiles for these arguments without launching, and returns the compiled kernel."""
        values, options = self._bind(args, kwargs)
        options.pop("warmup", None)
        key, specs, attrs, devices = self._specialize(values)
        return self._kernel_for(key, specs, attrs, devices, options, warmup=True)

    def rewrite(self):
        """Triton's interpreter rewrites a kernel's source to keep its line numbers and records the
        file line of its ``def`` as ``rewriter.def_file_lineno``; tritium's frontend compiles the
        source as it is (its locations are the file's), so this only records that line."""
        import types

        parsed = self.parsed  # parsed.tree: the function's own node, its lineno that of the `def`
        self.rewriter = types.SimpleNamespace(def_file_lineno=parsed.first_line + parsed.tree.lineno - 1)
        return self.rewriter

    def pointer_accesses(self, *args, **kwargs) -> tuple[list[str], list[str]]:
        """(the parameters whose memory the kernel may read, those it may write), compiled for these
        arguments (tensors, numbers, constexprs, as for a launch) without launching. From the IR's
        effects (compiler/analysis/accesses.py): a pointer the analysis cannot trace to one parameter
        counts against all of them. torch.compile asks this of user kernels (compat.py)."""
        from ..compiler import compile_ir
        from ..compiler.analysis.accesses import argument_accesses

        values, _ = self._bind(args, kwargs)
        _, specs, attrs, _ = self._specialize(values)
        fn = compile_ir(self, specs, attrs).function
        names = [next(p for p in self.arg_names if arg == p or arg.startswith(p + ".")) for arg in fn.arg_names]
        reads, writes = argument_accesses(fn)
        return ([p for p in self.arg_names if any(names[i] == p for i in reads)],
                [p for p in self.arg_names if any(names[i] == p for i in writes)])

    def run(self, *args, grid, **kwargs):
        try:
            return self._run(args, grid, kwargs)
        except LaunchError as error:
            raise without_internal_frames(at_launch_site(error)) from show_cause_once(error)
        except TritonError as error:
            raise without_internal_frames(error) from show_cause_once(error)

    def _run(self, args, grid, kwargs):
        # The fast path, written flat (a launch after a kernel that streamed megabytes runs this code
        # out of the caches, where every call and attribute read costs microseconds).
        bind = self._binder
        if bind is None:
            bind = self._binder = make_binder(self.params, self._constexpr_set, _FAST_OPTIONS)
        try:
            fast = bind(*args, **kwargs)
        except TypeError:  # arguments the parameter list does not bind: the full path says what is wrong
            fast = None
        if fast is not None:
            entry = self._fast.get(fast[0])
            if entry is not None:
                kernel, direct = entry
                values = fast[1]
                if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int and grid[0] >= 0:
                    grid3 = (grid[0], 1, 1)
                elif callable(grid):
                    meta = dict(values)
                    meta.update(fast[3])
                    grid3 = normalize_grid(grid, meta, self.__name__)
                else:
                    grid3 = normalize_grid(grid, values, self.__name__)
                if direct is None or not launch_directly(kernel, direct, grid3, values):
                    launch(kernel, grid3, values)
                return kernel
        values, options = self._bind(args, kwargs)
        key, specs, attrs, devices = self._specialize(values)
        kernel = self._kernel_for(key, specs, attrs, devices, options, warmup=bool(options.get("warmup")))
        if kernel is None or options.get("warmup"):  # jit_cache_hook declined the compilation
            return kernel
        if fast is not None and options == fast[3] and not any(isinstance(s, tuple_type) for s in specs.values()):
            self._fast[fast[0]] = (kernel, direct_launcher(kernel, fast[1], fast[2]))
        meta = dict(values)
        meta.update(options)
        grid3 = normalize_grid(grid, meta, self.__name__)
        launch(kernel, grid3, values, debug=options.get("debug"))
        return kernel


# launch options the fast path takes as part of its key: they only choose what is compiled (a launch
# with debug=, warmup= or extern_libs= takes the full path)
_FAST_OPTIONS = frozenset(LAUNCH_OPTIONS) - {"debug", "warmup", "extern_libs"}


def jit(fn: Optional[Callable] = None, *, do_not_specialize=(), debug=None, noinline=None, repr=None,
        launch_metadata=None, do_not_specialize_on_alignment=()):
    """Decorates a kernel (or a helper called from kernels)."""

    def decorate(f):
        return JITFunction(f, do_not_specialize=do_not_specialize, debug=debug, noinline=noinline, repr=repr,
                           launch_metadata=launch_metadata,
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment)

    return decorate(fn) if fn is not None else decorate
