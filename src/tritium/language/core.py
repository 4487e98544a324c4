"""The values a kernel manipulates while it is being compiled: ``constexpr`` and ``tensor``.

A ``tensor`` stands for an IR value (a scalar or a block); its operators build IR through the
active ``Semantic`` (see ``compiler/semantics.py``). A ``constexpr`` is a compile-time value.
"""
from __future__ import annotations

import builtins
import functools
from typing import Any

from ..compiler.ir import types as T


def _semantic():
    from ..compiler.semantics import current

    return current()


def builtin(fn):
    """Marks a function as a language builtin: kernels may call it; Python code may not. It accepts
    and ignores Triton's ``_semantic`` / ``_generator`` keywords, which code run at compile time
    (an aggregate's ``__init__``, say) passes on to the tl functions it calls."""

    @functools.wraps(fn)
    def call(*args, _semantic=None, _generator=None, **kwargs):
        return fn(*args, **kwargs)

    call.__tritium_builtin__ = True
    return call


class const:
    """``tl.const``: the annotation of a kernel (or ``@jit`` helper) parameter that points to
    constant data (``def kernel(x_ptr: tl.const, ...)``). The pointer and every pointer computed from
    it may be loaded from; ``tl.store`` and the atomics through them are compile errors, as in
    Triton. The annotation changes nothing else (argument types and specialization are as without it)."""


def is_const_annotation(annotation) -> bool:
    """Whether a parameter's annotation is ``tl.const`` (the class, or its name in a string annotation)."""
    if annotation is const:
        return True
    return isinstance(annotation, str) and annotation.split(".")[-1] == "const"


def is_builtin(fn) -> bool:
    return getattr(fn, "__tritium_builtin__", False)


@builtin
def _unwrap_if_constexpr(value):
    """A constexpr's value, anything else as it is (Inductor's helpers call it in kernels)."""
    return unwrap(value)


def source_from_def(source: str) -> str:
    """A function's source from its ``def`` line on, dedented, as Triton keeps ``JITFunction.src``
    (code that re-parses it, Inductor's among it, expects no decorators)."""
    import re
    import textwrap

    source = textwrap.dedent(source)
    found = re.search(r"^(async\s+)?def\s+\w+\s*\(", source, re.MULTILINE)
    return source[found.start():] if found else source


class ConstexprFunction:
    """``@triton.constexpr_function``: a Python function that kernels call at compile time, on
    compile-time values (constexprs, numbers, dtypes); its result is a constexpr. Called from
    Python, it runs as written, constexpr arguments unwrapped. ``fn`` is the function and ``src``
    its source from ``def`` on (code generators copy it, as they copy ``JITFunction.src``)."""

    __tritium_constexpr_function__ = True

    def __init__(self, fn):
        import functools

        self.fn = fn
        functools.update_wrapper(self, fn)

    @property
    def src(self) -> str:
        import inspect

        return source_from_def(inspect.getsource(self.fn))

    def __call__(self, *args, **kwargs):
        return self.fn(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})

    def __get__(self, instance, owner=None):
        """A method of a class (an aggregate's): bound to the instance it is read from."""
        return self if instance is None else functools.partial(self, instance)

    def __repr__(self) -> str:
        return f"ConstexprFunction({self.fn.__qualname__})"


def constexpr_function(fn) -> ConstexprFunction:
    return ConstexprFunction(fn)


class tl_tuple(builtins.tuple):
    """``tl.tuple(iterable)``: a tuple of kernel values (kernels hold tuples as Python tuples; this
    class names them as Triton does, for ``tl.tuple([...])`` and ``isinstance(x, tl.tuple)``)."""

    def __repr__(self) -> str:
        return f"tl.tuple({builtins.tuple.__repr__(self)})"


def is_constexpr_function(fn) -> bool:
    return getattr(fn, "__tritium_constexpr_function__", False)


class constexpr:
    """A value known at compile time. Arithmetic on constexprs happens in Python."""

    def __init__(self, value: Any):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __str__(self) -> str:
        return str(self.value)

    def __index__(self):
        return self.value.__index__()

    def __int__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __bool__(self):
        return bool(self.value)

    def __hash__(self):
        return hash(self.value)

    def __call__(self, *args, **kwargs):
        return self.value(*args, **kwargs)

    def __getattr__(self, name):
        if name == "value":
            raise AttributeError(name)
        return getattr(self.value, name)


def _binary_constexpr(name: str, reflected: bool = False):
    import operator

    fn = getattr(operator, name)

    def method(self, other):
        if isinstance(other, tensor):
            return NotImplemented
        other_value = other.value if isinstance(other, constexpr) else other
        a, b = (other_value, self.value) if reflected else (self.value, other_value)
        return constexpr(fn(a, b))

    return method


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and_", "or_", "xor",
              "lshift", "rshift", "lt", "le", "gt", "ge", "eq", "ne"):
    _dunder = _name.rstrip("_")
    setattr(constexpr, f"__{_dunder}__", _binary_constexpr(_name))
    if _name not in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(constexpr, f"__r{_dunder}__", _binary_constexpr(_name, reflected=True))
constexpr.__neg__ = lambda self: constexpr(-self.value)
constexpr.__pos__ = lambda self: constexpr(+self.value)
constexpr.__invert__ = lambda self: constexpr(~self.value)
constexpr.__abs__ = lambda self: constexpr(abs(self.value))


def unwrap(value):
    """The Python value behind a constexpr; anything else unchanged."""
    return value.value if isinstance(value, constexpr) else value


def is_constexpr_value(value) -> bool:
    return isinstance(value, (constexpr, bool, int, float)) or value is None


class tensor:
    """A scalar or block value inside a kernel being compiled."""

    def __init__(self, handle, type):
        self.handle = handle
        self.type = type
        self.dtype = type.scalar
        self.shape = tuple(constexpr(s) for s in T.shape_of(type))

    def __repr__(self) -> str:
        return f"tensor({self.type})"

    def __str__(self) -> str:
        return str(self.type)

    @property
    def numel(self) -> constexpr:
        n = 1
        for s in T.shape_of(self.type):
            n *= s
        return constexpr(n)

    @property
    def T(self) -> tensor:
        return _semantic().permute(self, tuple(reversed(range(len(self.shape)))))

    def __bool__(self):
        raise TypeError(
            "a run-time tensor has no Python truth value at compile time; "
            "use it in `if`/`while` inside the kernel, or tl.where for blocks"
        )

    def __index__(self):
        raise TypeError("a run-time tensor cannot be used where a constexpr integer is required")

    def __iter__(self):
        raise TypeError("a tensor is not iterable; use tl.static_range or tl.range to loop")

    # arithmetic ------------------------------------------------------------
    def __add__(self, other):
        return _semantic().add(self, other)

    def __radd__(self, other):
        return _semantic().add(other, self)

    def __sub__(self, other):
        return _semantic().sub(self, other)

    def __rsub__(self, other):
        return _semantic().sub(other, self)

    def __mul__(self, other):
        return _semantic().mul(self, other)

    def __rmul__(self, other):
        return _semantic().mul(other, self)

    def __truediv__(self, other):
        return _semantic().truediv(self, other)

    def __rtruediv__(self, other):
        return _semantic().truediv(other, self)

    def __floordiv__(self, other):
        return _semantic().floordiv(self, other)

    def __rfloordiv__(self, other):
        return _semantic().floordiv(other, self)

    def __mod__(self, other):
        return _semantic().mod(self, other)

    def __rmod__(self, other):
        return _semantic().mod(other, self)

    def __pow__(self, other):
        raise TypeError("** is not supported on tensors; use tl.extra.libdevice.pow or repeated multiplication")

    def __neg__(self):
        return _semantic().neg(self)

    def __pos__(self):
        return self

    def __invert__(self):
        return _semantic().invert(self)

    def __abs__(self):
        return _semantic().abs(self)

    def __and__(self, other):
        return _semantic().bitwise("and", self, other)

    def __rand__(self, other):
        return _semantic().bitwise("and", other, self)

    def __or__(self, other):
        return _semantic().bitwise("or", self, other)

    def __ror__(self, other):
        return _semantic().bitwise("or", other, self)

    def __xor__(self, other):
        return _semantic().bitwise("xor", self, other)

    def __rxor__(self, other):
        return _semantic().bitwise("xor", other, self)

    def __lshift__(self, other):
        return _semantic().shift("shl", self, other)

    def __rlshift__(self, other):
        return _semantic().shift("shl", other, self)

    def __rshift__(self, other):
        return _semantic().shift("shr", self, other)

    def __rrshift__(self, other):
        return _semantic().shift("shr", other, self)

    def __lt__(self, other):
        return _semantic().compare("lt", self, other)

    def __le__(self, other):
        return _semantic().compare("le", self, other)

    def __gt__(self, other):
        return _semantic().compare("gt", self, other)

    def __ge__(self, other):
        return _semantic().compare("ge", self, other)

    def __eq__(self, other):
        return _semantic().compare("eq", self, other)

    def __ne__(self, other):
        return _semantic().compare("ne", self, other)

    __hash__ = object.__hash__

    def logical_and(self, other):
        return _semantic().logical("and", self, other)

    def logical_or(self, other):
        return _semantic().logical("or", self, other)

    def __getitem__(self, slices):
        return _semantic().subscript(self, slices)

    # member functions (the same builtins as tl.*) ----------------------------
    def to(self, dtype, fp_downcast_rounding=None, bitcast=False):
        return _semantic().cast(self, unwrap(dtype), unwrap(fp_downcast_rounding), bool(unwrap(bitcast)))

    def __getattr__(self, name):
        # x.sum(), x.exp(), x.reshape(...) etc.: the tl function of that name, bound to x.
        from . import _tensor_member_functions

        fn = _tensor_member_functions().get(name)
        if fn is None:
            raise AttributeError(f"tensor has no attribute {name!r}")
        return lambda *args, **kwargs: fn(self, *args, **kwargs)


class tuple_type(builtins.tuple):
    pass


CONSTEXPR_0 = constexpr(0)


@builtin
def get_int_dtype(bitwidth, signed):
    """The integer dtype of ``bitwidth`` bits (1, 8, 16, 32 or 64), signed or not; callable from
    Python and, with compile-time arguments, from kernels (as Triton's ``tl.core.get_int_dtype``)."""
    bitwidth, signed = int(unwrap(bitwidth)), bool(unwrap(signed))
    if bitwidth == 1:
        return T.int1
    if bitwidth not in (8, 16, 32, 64):
        raise ValueError(f"get_int_dtype: no integer dtype of {bitwidth} bits (1, 8, 16, 32 or 64)")
    return T.dtype(f"{'' if signed else 'u'}int{bitwidth}")


def __getattr__(name):
    # Triton defines its builtins (tl.view, tl.load, the dtypes...) in triton.language.core, and
    # code reaches them there; tritium defines them in other modules of the package.
    import importlib

    package = importlib.import_module(__package__)
    value = package.__dict__.get(name)
    if value is None or isinstance(value, type(builtins)):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return value
