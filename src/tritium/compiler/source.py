"""What the compiler is given to compile: a kernel's Python function and its argument specification.

``JITCallable`` is what the compiler needs of a ``@jit`` function (the runtime's JITFunction is
one): the Python function and its parsed source. ``ASTSource`` names, as Triton's does, a kernel
with its signature (parameter name -> type string such as "*fp32", "i32" or "constexpr"), its
constexpr values and its argument attributes, so a kernel can be compiled without a launch.
Type strings may carry Triton's attribute suffixes: ":16" (divisible by 16, for a pointer its
byte address 16-byte aligned) and ":1" (an integer equal to 1).
"""
from __future__ import annotations

import hashlib
import inspect
from typing import Any, Callable, Mapping, Optional, Union

from ..errors import LaunchError
from ..language.core import constexpr
from .frontend import is_constexpr_annotation, parse_function
from .ir import types as T


class JITCallable:
    """A Python function the compiler can compile or inline: ``fn``, its ``__name__`` and its
    ``parsed`` source (read once, on first use)."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self.__name__ = fn.__name__
        self._parsed = None

    @property
    def parsed(self):
        if self._parsed is None:
            self._parsed = parse_function(self.fn)
        return self._parsed


def parse_type(text: str) -> tuple[Any, dict]:
    """The IR type and the attributes of one signature entry: '*fp32', '*fp32:16', 'i32:1', '*kfp16'
    (Triton's spelling of a pointer to constant data)."""
    base, _, suffix = text.strip().partition(":")
    pointer = base.startswith("*")
    name = base[1:] if pointer else base
    if pointer and name.startswith("k") and T.dtype_from_ir_name(name[1:]) is not None:
        name = name[1:]
    ty = T.dtype_from_ir_name(name)
    if ty is None:
        try:
            ty = T.dtype(name)
        except ValueError:
            raise LaunchError(f"unknown type {text!r} in the signature (use e.g. *fp32, i32, fp16, *fp32:16)") from None
    if pointer:
        ty = T.pointer_type(ty)
    return ty, _parse_attributes(text, suffix, ty)


def _parse_attributes(text: str, suffix: str, ty) -> dict:
    if not suffix:
        return {}
    if suffix == "16" and (isinstance(ty, T.pointer_type) or ty.is_int()):
        return {"divisibility": 16}
    if suffix == "1" and not isinstance(ty, T.pointer_type) and ty.is_int():
        return {"equal_to_1": True}
    raise LaunchError(f"{text!r}: the suffix ':{suffix}' is not an argument attribute; ':16' marks an integer "
                      "divisible by 16 (or a 16-byte aligned pointer), ':1' an integer equal to 1")


# Triton's attribute names in ASTSource(attrs=...), and ours.
_TRITON_ATTRIBUTES = {"tt.divisibility": "divisibility", "tt.equal_to_1": "equal_to_1"}


def _attribute_dict(value) -> dict:
    """``{"divisibility": 16}``, or Triton's ``[["tt.divisibility", 16]]``, as our dict."""
    if isinstance(value, Mapping):
        items = list(value.items())
    else:
        items = [tuple(pair) for pair in value]
    return {_TRITON_ATTRIBUTES.get(key, key): attribute for key, attribute in items}


class ASTSource:
    """A kernel to compile: ``fn`` (a @jit function, or a plain Python function), ``signature``
    (parameter name -> type string or IR type; parameters left out take their value from
    ``constexprs`` or their default), ``constexprs`` and ``attrs`` keyed by parameter name, by
    index or by Triton's 1-tuple of an index; ``attrs`` of the parts of an argument passed as several
    IR parameters by those parameters' names (``desc.base``, ``desc.shape0``)."""

    def __init__(self, fn, signature: Union[Mapping[str, Any], str, list], constexprs: Optional[Mapping] = None,
                 attrs: Optional[Mapping] = None):
        self.fn = fn if isinstance(fn, JITCallable) or hasattr(fn, "parsed") else JITCallable(fn)
        self.names = [p.name for p in self._parameters()]
        if isinstance(signature, str):
            signature = [t.strip() for t in signature.split(",") if t.strip()]
        if not isinstance(signature, Mapping):
            given = self._keyed(constexprs or {})
            runtime = [p.name for p in self._parameters()
                       if p.name not in given and not is_constexpr_annotation(p.annotation)]
            if len(signature) != len(runtime):
                raise LaunchError(f"{self.name} has {len(runtime)} run-time parameters ({', '.join(runtime)}) but "
                                  f"the signature gives {len(signature)} types")
            signature = dict(zip(runtime, signature))
        self.signature = dict(signature)
        self.constexprs = self._keyed(constexprs or {})
        self.attrs = {name: _attribute_dict(value) for name, value in self._keyed(attrs or {}).items()}
        unknown = sorted(set(self.signature) - set(self.names))
        if unknown:
            raise LaunchError(f"the signature names {unknown}, which are not parameters of {self.name} "
                              f"({', '.join(self.names)})")

    @property
    def name(self) -> str:
        return self.fn.__name__

    def _parameters(self) -> list[inspect.Parameter]:
        return list(inspect.signature(self.fn.fn).parameters.values())

    def _keyed(self, mapping: Mapping) -> dict:
        """``mapping`` keyed by parameter name (it may be keyed by index or (index,))."""
        keyed = {}
        for key, value in mapping.items():
            if isinstance(key, tuple) and len(key) == 1:
                key = key[0]
            if isinstance(key, int):
                if not 0 <= key < len(self.names):
                    raise LaunchError(f"{self.name} has no parameter number {key}")
                key = self.names[key]
            keyed[key] = value
        return keyed

    def arg_specs(self) -> tuple[dict, dict]:
        """(parameter name -> IR type or constexpr value, run-time parameter name -> attributes)."""
        specs: dict[str, Any] = {}
        attrs: dict[str, dict] = {}
        for param in self._parameters():
            name = param.name
            text = self.signature.get(name)
            if name in self.constexprs or text == "constexpr" or (text is None and
                                                                 is_constexpr_annotation(param.annotation)):
                if name not in self.constexprs and param.default is inspect.Parameter.empty:
                    raise LaunchError(f"give a value for the constexpr {name} (e.g. -D {name}=...)")
                value = self.constexprs.get(name, param.default)
                specs[name] = value if isinstance(value, constexpr) else constexpr(value)
                continue
            if text is None:
                if param.default is inspect.Parameter.empty:
                    raise LaunchError(f"the signature gives no type for {name}, and it has no default")
                specs[name] = constexpr(param.default)
                continue
            if isinstance(text, str):
                specs[name], parsed = parse_type(text)
            else:
                specs[name], parsed = text, {}
            merged = {**parsed, **self.attrs.get(name, {})}
            if merged:
                attrs[name] = merged
        # a part of an argument passed as several IR parameters, named as they are (``desc.shape0``)
        attrs.update((key, value) for key, value in self.attrs.items()
                     if isinstance(key, str) and key.partition(".")[0] in specs and key not in specs)
        return specs, attrs

    def hash(self) -> str:
        """A hash of the kernel's source and of this specification."""
        source = getattr(self.fn, "src", "")
        if not source:
            from .frontend import parse_function

            parse_function(self.fn.fn)  # a CompilationError saying why its source cannot be read
            source = inspect.getsource(self.fn.fn)
        text = repr((source, sorted((k, str(v)) for k, v in self.signature.items()),
                     sorted((k, repr(v)) for k, v in self.constexprs.items()),
                     sorted((k, sorted(v.items())) for k, v in self.attrs.items())))
        return hashlib.sha256(text.encode()).hexdigest()

    def __repr__(self) -> str:
        return f"ASTSource({self.name}, {self.signature}, constexprs={self.constexprs})"
