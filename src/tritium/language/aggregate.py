"""``@triton.aggregate``: a class whose instances kernels build, pass to functions and carry through
loops as one value (a struct of tensors and constexprs).

The class declares its fields as annotations (``x: tl.tensor``, ``n: tl.constexpr``). Without an
``__init__`` of its own it takes the fields in order (positionally or by name; a class attribute of
the same name is a default), Python numbers, strings and dtypes becoming constexprs and tuples
``tl.tuple``s; an ``__init__`` of its own may take ``_semantic`` (it is then given the kernel's,
for building values with tl functions at compile time). Every field must be set by the end of
``__init__``; afterwards the fields cannot be assigned (build a new instance instead).

Methods may be ``@triton.jit`` functions (called with the instance as ``self``, inlined like any
call) or plain Python taking ``_semantic`` (run at compile time); ``obj[i]`` calls ``__getitem__``
either way. In ``if`` and loops an instance is taken apart into its fields
(``compiler/aggregates.py``), so a loop may carry one whose tensors change.
"""
from __future__ import annotations

import inspect
import sys

from ..compiler.aggregates import Aggregate
from .core import builtin, constexpr, tensor, tl_tuple

_INITIALIZED = "_tritium_aggregate_initialized"


def _fields(cls) -> dict:
    """Field name -> annotation, the bases' first (string annotations resolved where they can be)."""
    found: dict = {}
    for klass in reversed(cls.__mro__):
        annotations = inspect.get_annotations(klass)
        module = sys.modules.get(klass.__module__)
        for name, annotation in annotations.items():
            if isinstance(annotation, str):
                try:
                    annotation = eval(annotation, vars(module) if module else {}, dict(vars(klass)))
                except Exception:  # noqa: BLE001, S110 - a name it cannot resolve: the annotation stays a string
                    pass
            found[name] = annotation
    return found


def _named_tuple_class(kind):
    """A ``tl.tuple`` with the fields of the named tuple class ``kind`` (one class per kind)."""
    cached = _NAMED.get(kind)
    if cached is None:
        namespace = {name: property(lambda self, i=i: self[i]) for i, name in enumerate(kind._fields)}
        namespace["_fields"] = kind._fields
        namespace["__new__"] = lambda this, *items: tl_tuple.__new__(this, items)
        cached = _NAMED[kind] = type(kind.__name__, (tl_tuple,), namespace)
    return cached


_NAMED: dict = {}


def _as_field(value):
    """A constructor argument as the auto ``__init__`` stores it."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return constexpr(value)
    if isinstance(value, tuple) and not isinstance(value, tensor):
        items = [_as_field(v) for v in value]
        kind = type(value)
        if hasattr(kind, "_fields") and not issubclass(kind, tl_tuple):
            return _named_tuple_class(kind)(*items)
        return tl_tuple(items)
    from .. import language

    if isinstance(value, language.dtype):
        return constexpr(value)
    return value


def takes_parameter(fn, name: str) -> bool:
    """True when ``fn`` has a parameter called ``name`` (False for what has no signature)."""
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def aggregate(cls):
    """Makes ``cls`` an aggregate (see the module's notes). It may derive from other aggregates,
    whose fields (with their defaults) and methods it has too."""
    bases = tuple(base for base in cls.__bases__ if base is not object)
    for base in bases:
        if not is_aggregate_class(base):
            raise TypeError(f"Aggregates can only inherit from other aggregates: {cls.__name__} derives from "
                            f"{base.__name__}, which is not decorated with @triton.aggregate")
    fields = _fields(cls)
    defaults = {}
    for base in reversed(bases):
        defaults.update(getattr(base, "__aggregate_defaults__", {}))
    defaults.update({name: cls.__dict__[name] for name in fields if name in cls.__dict__})
    own_init = cls.__dict__.get("__init__")  # without one: the automatic init, over every field
    name = cls.__name__

    def __init__(self, *args, _semantic=None, **kwargs):
        outermost = _INITIALIZED not in self.__dict__  # a derived class's __init__ may call super().__init__
        if outermost:
            object.__setattr__(self, _INITIALIZED, False)
        if own_init is not None:
            extra = {"_semantic": _semantic} if takes_parameter(own_init, "_semantic") else {}
            own_init(self, *args, **extra, **kwargs)
        else:
            order = list(fields)
            if len(args) > len(order):
                raise TypeError(f"{name}() takes {len(order)} fields ({', '.join(order)}) but {len(args)} "
                                "values were given")
            for field, value in zip(order, args):
                if field in kwargs:
                    raise TypeError(f"{name}() got two values for the field '{field}'")
                kwargs[field] = value
            for field in order:
                if field in kwargs:
                    value = kwargs.pop(field)
                elif field in defaults:
                    value = defaults[field]
                else:
                    raise TypeError(f"{name}() is missing the field '{field}'")
                setattr(self, field, _as_field(value))
            if kwargs:
                raise TypeError(f"{name}() has no field '{next(iter(kwargs))}'")
        if not outermost:
            return
        missing = [field for field in type(self).__aggregate_fields__ if field not in self.__dict__]
        if missing:
            raise AttributeError(f"{type(self).__name__}.__init__ did not set the field '{missing[0]}'")
        object.__setattr__(self, _INITIALIZED, True)

    def __setattr__(self, field, value):
        if field not in fields:
            raise AttributeError(f"{name} has no field '{field}' (its fields: {', '.join(fields)})")
        if self.__dict__.get(_INITIALIZED):
            raise AttributeError(f"cannot assign to field '{field}' on immutable aggregate {name}: an aggregate does "
                                 f"not change once built; build a changed copy with tl.aggregate_replace(obj, "
                                 f"{field}=...)")
        object.__setattr__(self, field, value)

    def flatten(self):
        parts = [self.__dict__[field] for field in fields]
        kind = type(self)

        def rebuild(new_parts):
            rebuilt = object.__new__(kind)
            rebuilt.__dict__.update(zip(fields, new_parts))
            rebuilt.__dict__[_INITIALIZED] = True
            return rebuilt

        return parts, rebuild

    def structure(self):
        return (name, tuple(fields))

    def __repr__(self):
        return f"{name}(" + ", ".join(f"{field}={self.__dict__.get(field)!r}" for field in fields) + ")"

    # a subclass of ``cls`` (its methods, and super() inside them, work as written), with the
    # aggregate's construction, immutability and taking apart
    namespace = {"__init__": __init__, "__setattr__": __setattr__, "flatten": flatten, "structure": structure,
                 "__triton_aggregate__": True, "__annotations__": dict(fields), "__aggregate_fields__": tuple(fields),
                 "__aggregate_defaults__": defaults}
    if "__repr__" not in cls.__dict__:
        namespace["__repr__"] = __repr__
    made = type(name, (cls,) if bases else (cls, Aggregate), namespace)
    made.__qualname__ = cls.__qualname__
    made.__module__ = cls.__module__
    return made


@builtin
def aggregate_replace(instance, **changes):
    """A copy of the aggregate ``instance`` with the fields named in ``changes`` replaced (Python
    values becoming constexprs, as the automatic ``__init__`` makes them); the instance is unchanged."""
    if not is_aggregate(instance):
        raise TypeError(f"tl.aggregate_replace expects an aggregate instance, got {type(instance).__name__}")
    fields = type(instance).__aggregate_fields__
    for field in changes:
        if field not in fields:
            raise TypeError(f"{type(instance).__name__} has no field '{field}' (its fields: {', '.join(fields)})")
    parts, rebuild = instance.flatten()
    return rebuild([_as_field(changes[field]) if field in changes else part for field, part in zip(fields, parts)])


def is_aggregate(value) -> bool:
    return getattr(type(value), "__triton_aggregate__", False)


def is_aggregate_class(value) -> bool:
    return isinstance(value, type) and getattr(value, "__triton_aggregate__", False)


__all__ = ["aggregate", "aggregate_replace", "is_aggregate", "is_aggregate_class", "takes_parameter"]
