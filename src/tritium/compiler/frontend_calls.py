"""The frontend's names, attributes and calls: globals and closures, builtins, and inlined @jit functions."""
from __future__ import annotations

import ast
import builtins
import inspect
import types as pytypes
from typing import Any

from ..language import core as lcore
from ..language.aggregate import is_aggregate, is_aggregate_class, takes_parameter
from ..language import shorthands as lshort
from ..language import standard as lstd
from ..language.core import constexpr, is_const_annotation, tensor, unwrap
from .frontend_values import _is_static, _static, _wrap, is_constexpr_annotation
from .ir import types as T
from .strict import check_strict

# what code written for Python lists calls on the tuple a list literal builds in a kernel
_LIST_METHODS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"})

# Python builtins a kernel may call on constexprs (evaluated at compile time).
_STATIC_BUILTINS = {builtins.len, builtins.isinstance, builtins.int, builtins.float, builtins.bool,
                    builtins.getattr, builtins.hasattr, builtins.tuple, builtins.list, builtins.zip,
                    builtins.enumerate, builtins.str, builtins.type, builtins.abs, builtins.round,
                    builtins.divmod, builtins.all, builtins.any, builtins.reversed, builtins.sorted}


def _is_kernel_language(fn) -> bool:
    module = getattr(fn, "__module__", "") or ""
    return module.startswith("tritium.language")


def _describe(value) -> str:
    if isinstance(value, tensor):
        return f"a tensor of type {value.type}"
    if isinstance(value, pytypes.ModuleType):
        return f"module {value.__name__}"
    return f"{type(value).__name__} {value!r}"


class _BoundJit:
    """A @jit method of an aggregate instance, as ``obj.method`` gives it in a kernel."""

    def __init__(self, fn, instance):
        self.fn, self.instance = fn, instance

    @property
    def parsed(self):  # asked for by code that takes a function value (a combine function, say)
        raise TypeError(f"the method {self.fn.__name__} of a {type(self.instance).__name__} can only be called here; "
                        f"to pass it as a function, pass {type(self.instance).__name__}.{self.fn.__name__} and the "
                        "instance separately")


def _is_jit(value) -> bool:
    from .source import JITCallable

    return isinstance(value, JITCallable)


class CallVisitor:
    """``visit_Name``, ``visit_Attribute`` and ``visit_Call`` of ``CodeGenerator`` (see frontend.py),
    and ``call_jit``, which inlines a @jit function."""

    def visit_Name(self, node):
        name = node.id
        if name in self.scope:
            return self.scope[name]
        if name in self.closure:
            return self._global_value(node, name, self.closure[name])
        if name in self.globals:
            return self._global_value(node, name, self.globals[name])
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.error(node, f"name '{name}' is not defined")

    def _global_value(self, node, name, value):
        if isinstance(value, (bool, int, float)) and not isinstance(value, constexpr):
            raise self.error(node, f"cannot use the global variable `{name}` (= {value!r}) in a kernel: only "
                             "constexpr globals are allowed, because their value is compiled into the kernel",
                             f"declare it as `{name} = tl.constexpr({value!r})`, or pass it as an argument")
        return _wrap(value) if isinstance(value, (str,)) else value

    def visit_Attribute(self, node):
        value = self.visit(node.value)
        target = value.value if isinstance(value, constexpr) and not isinstance(value.value, tensor) else value
        try:
            result = getattr(target, node.attr)
        except AttributeError:
            if node.attr == "dtype" and isinstance(target, (bool, int, float)):
                # Triton makes a tensor of a number assigned to a variable: `v = 1; v.dtype` is int32
                from .promotion import python_scalar_type
                return python_scalar_type(target)
            if isinstance(target, (bool, int, float)) and hasattr(tensor, node.attr):
                # as in Triton, whose kernels hold an assigned number as a tensor: `acc = 0; acc.to(tl.int64)`
                return getattr(self.semantic.to_tensor(target), node.attr)
            if isinstance(target, tuple) and node.attr in _LIST_METHODS:
                raise self.error(node, f"lists are not supported in kernels: `[...]` builds a tuple, which has no "
                                 f"'{node.attr}'",
                                 "build a new tuple instead (`xs = xs + (value,)`), or unroll the loop with "
                                 "`for i in tl.static_range(n)` and keep one variable per value") from None
            raise self.error(node, f"{_describe(target)} has no attribute '{node.attr}'") from None
        if is_aggregate(target) and _is_jit(result):
            return _BoundJit(result, target)  # a @jit method: the instance is its first argument
        return _wrap(result) if isinstance(result, (bool, int, float, str)) else result

    # calls -----------------------------------------------------------------------------------------------
    def visit_Call(self, node):
        fn = self.visit(node.func)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                # visited once: the starred expression may have side effects (an atomic in a tuple)
                value = self.visit(a.value)
                args.extend(_static(value) if _is_static(value) else value)
            else:
                args.append(self.visit(a))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(_static(self.visit(kw.value)))
            else:
                kwargs[kw.arg] = self.visit(kw.value)
        return self.call(fn, args, kwargs, node)

    def call(self, fn, args, kwargs, node):
        from .source import JITCallable  # a @jit function, as the compiler sees it (no runtime import)

        target = unwrap(fn)
        if isinstance(target, JITCallable):
            return self.call_jit(target, args, kwargs)
        if isinstance(target, _BoundJit):
            return self.call_jit(target.fn, [target.instance, *args], kwargs)
        if is_aggregate_class(target):
            return target(*args, _semantic=self.semantic, **kwargs)
        if isinstance(target, pytypes.MethodType) and is_aggregate(target.__self__):
            return _wrap(self.call_at_compile_time(target, args, kwargs))
        if lcore.is_builtin(target):
            return _wrap(target(*args, **kwargs))
        if getattr(target, "__triton_builtin__", False):
            # a function marked the way Triton marks its builtins (Inductor's triton_helpers does):
            # called at compile time with the kernel's values, constexprs wrapped
            return _wrap(target(*args, **kwargs))
        if lcore.is_constexpr_function(target):
            dynamic = [a for a in list(args) + list(kwargs.values()) if not _is_static(a)]
            if dynamic:
                raise self.error(node, f"`{target.__name__}` is a @triton.constexpr_function, which runs at compile "
                                 f"time: it cannot take the run-time value {_describe(dynamic[0])}",
                                 "pass it constexprs or numbers, or make it a @triton.jit function")
            return constexpr(target(*[_static(a) for a in args], **{k: _static(v) for k, v in kwargs.items()}))
        if target is constexpr:
            if len(args) != 1 or not _is_static(args[0]):
                raise self.error(node, "tl.constexpr(...) takes one compile-time value")
            return constexpr(_static(args[0]))
        if target in (builtins.min, builtins.max):
            if all(_is_static(a) for a in args) and not kwargs:
                return _wrap(target(*[_static(a) for a in args]))
            fold = self.semantic.minmax
            result = args[0]
            for a in args[1:]:
                result = fold("minimum" if target is builtins.min else "maximum", result, a)
            return result
        if target is builtins.print:
            prefix = ""
            if args and _is_static(args[0]) and isinstance(_static(args[0]), str):
                prefix, args = _static(args[0]), args[1:]
            self.semantic.device_print(prefix, args)
            return None
        if target is builtins.range:
            return lstd.range(*args, **kwargs)
        if isinstance(target, type) and target in (lstd.range, lstd.static_range, lshort.condition):
            return target(*args, **kwargs)
        if isinstance(target, type) and issubclass(target, tuple) and (hasattr(target, "_fields") or
                                                                      target is lcore.tl_tuple):
            # a named tuple built in the kernel, or tl.tuple(iterable): a tuple of the values as they are
            return target(*args, **kwargs)
        if isinstance(target, pytypes.MethodType) and isinstance(target.__self__, tensor):
            return _wrap(target(*args, **kwargs))
        if callable(target) and getattr(target, "__qualname__", "").startswith("tensor.__getattr__"):
            return _wrap(target(*args, **kwargs))
        if target in (builtins.isinstance, builtins.type, builtins.len, builtins.hasattr) and not kwargs:
            # questions about a value's kind are answered at compile time, run-time value or not
            return _wrap(target(*[_static(a) for a in args]))
        if all(_is_static(a) for a in args) and all(_is_static(v) for v in kwargs.values()) and (
                target in _STATIC_BUILTINS or not _is_kernel_language(target)):
            return _wrap(target(*[_static(a) for a in args], **{k: _static(v) for k, v in kwargs.items()}))
        name = getattr(target, "__name__", repr(target))
        raise self.error(node, f"cannot call `{name}` with run-time values inside a kernel: it is neither a "
                         "@triton.jit function nor a triton.language builtin",
                         f"decorate `{name}` with @triton.jit, or use the tl equivalent")

    def call_at_compile_time(self, fn, args, kwargs):
        """A Python function or method run while compiling, given the kernel's ``_semantic`` when it
        takes one (as Triton's builtins and aggregate methods do)."""
        extra = {"_semantic": self.semantic} if takes_parameter(fn, "_semantic") else {}
        return fn(*args, **extra, **kwargs)

    def call_jit(self, jit_fn, args, kwargs=None):
        """Inlines a @jit function called from a kernel; returns what it returns."""
        kwargs = kwargs or {}
        if self.call_depth > 64:
            raise RecursionError("@jit functions call each other more than 64 levels deep (recursion is not supported)")
        parsed = jit_fn.parsed
        check_strict(parsed)
        scope: dict[str, Any] = {}
        params = parsed.params
        if len(args) > len(params):
            raise TypeError(f"{parsed.name}() takes {len(params)} arguments but {len(args)} were given")
        for param, value in zip(params, args):
            scope[param.name] = value
        for key, value in kwargs.items():
            if key not in [p.name for p in params]:
                raise TypeError(f"{parsed.name}() got an unexpected keyword argument '{key}'")
            scope[key] = value
        for param in params:
            if param.name not in scope:
                if param.default is inspect.Parameter.empty:
                    raise TypeError(f"{parsed.name}() is missing the argument '{param.name}'")
                scope[param.name] = _wrap(param.default)
            if is_constexpr_annotation(param.annotation) and _is_static(scope[param.name]):
                scope[param.name] = constexpr(_static(scope[param.name]))
            else:
                # as in Triton, what a helper's parameter holds is decided by the value passed: a
                # tl.constexpr annotation on a helper does not turn a tensor into a constant (Triton's
                # fused-attention tutorial passes its offset blocks to such parameters)
                scope[param.name] = _wrap(scope[param.name])
            held = scope[param.name]
            if is_const_annotation(param.annotation) and isinstance(held, tensor) and held.dtype.is_ptr():
                scope[param.name] = tensor(held.handle, T.with_element(held.type, T.const_pointer_type(
                    held.dtype.element_ty)))  # tl.const on a helper's parameter: no store through it there
        callee = type(self)(parsed, self.semantic, scope, self.call_depth + 1, self.builder.loc)  # a CodeGenerator
        callee.visit(parsed.tree)
        return callee.return_value
