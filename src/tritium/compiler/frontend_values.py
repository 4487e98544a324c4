"""How the frontend tells compile-time values from run-time ones, and compares and wraps them."""
from __future__ import annotations

import inspect

from ..language.core import constexpr, tensor, unwrap
from .aggregates import Aggregate, flatten, is_composite


def is_constexpr_annotation(annotation) -> bool:
    if annotation is inspect.Parameter.empty or annotation is None:
        return False
    if annotation is constexpr or annotation == "constexpr":
        return True
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == "constexpr"
    return False


def _wrap(value):
    """Python values produced inside a kernel become constexprs; tensors and objects stay."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return constexpr(value)
    if isinstance(value, tuple) and not isinstance(value, tensor):
        return _same_kind_of_tuple(value, [_wrap(v) for v in value])
    return value


def _same_kind_of_tuple(original: tuple, items: list) -> tuple:
    """``items`` as a tuple of ``original``'s class: a named tuple keeps its fields, tl.tuple stays one."""
    kind = type(original)
    if kind is tuple:
        return tuple(items)
    return kind(*items) if hasattr(kind, "_fields") else kind(items)


def _is_static(value) -> bool:
    if isinstance(value, tensor):
        return False
    if isinstance(value, (tuple, list)):
        return all(_is_static(v) for v in value)
    if isinstance(value, Aggregate):
        return all(_is_static(v) for v in flatten(value)[0])
    return True


def _static(value):
    """The Python value of a compile-time value (unwrapping constexprs, also inside tuples)."""
    if isinstance(value, (tuple, list)):
        return type(value)(_static(v) for v in value)
    return unwrap(value)


def _is_number(value) -> bool:
    value = unwrap(value)
    return isinstance(value, (bool, int, float)) and not isinstance(value, tensor)


def _same_static(a, b) -> bool:
    """Two compile-time values that are equal and of one type (so either may stand for both)."""
    a, b = _static(a), _static(b)
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - values whose == raises (or gives no bool) are not the same
        return False


def _same_leaf(a, b) -> bool:
    """The same value: one tensor (one IR value), or equal compile-time values."""
    if a is b:
        return True
    if isinstance(a, tensor) or isinstance(b, tensor):
        return isinstance(a, tensor) and isinstance(b, tensor) and a.handle is b.handle
    if is_composite(a) or is_composite(b):
        return False
    return _same_static(a, b)
