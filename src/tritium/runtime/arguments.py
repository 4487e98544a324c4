"""Kernel arguments: what each one is (its type and specialization), and its memory for a launch.

Accepted: torch tensors (any dtype, any strides), numpy arrays, objects exposing
``__array_interface__``, Python ints/floats/bools, numpy scalars, and None.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional

import numpy as np

from ..backends.base import byte_range
from ..compiler.ir import types as T
from ..errors import ArgumentOverflowError, LaunchError

_TORCH_DTYPE_NAMES = {
    "float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float64": "fp64",
    "double": "fp64", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
    "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "bool": "int1", "float8_e4m3fn": "fp8e4nv",
    "float8_e5m2": "fp8e5",
}

_NUMPY_DTYPE_NAMES = {
    "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64", "int8": "int8", "int16": "int16",
    "int32": "int32", "int64": "int64", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32",
    "uint64": "uint64", "bool": "int1", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
}


@dataclass(frozen=True)
class TensorView:
    """The memory facts of a tensor argument."""

    dtype: T.dtype
    address: int  # address of the element the kernel's pointer points at
    low: int  # byte offsets, relative to ``address``, of the lowest and one past the highest byte
    high: int
    device: str
    keepalive: Any


_torch_dtypes: dict = {}  # torch dtype -> (IR dtype, bytes per element), filled as dtypes are met


def _torch_dtype(torch_dtype) -> tuple[T.dtype, int]:
    found = _torch_dtypes.get(torch_dtype)
    if found is None:
        name = str(torch_dtype).replace("torch.", "")
        if name not in _TORCH_DTYPE_NAMES:
            raise LaunchError(f"torch dtype {torch_dtype} is not supported by tritium")
        found = _torch_dtypes[torch_dtype] = (T.dtype(_TORCH_DTYPE_NAMES[name]), torch_dtype.itemsize)
    return found


def _torch_view(value) -> TensorView:
    dtype, itemsize = _torch_dtype(value.dtype)
    if value.is_contiguous():
        low, high = 0, value.numel() * itemsize
    else:
        low, high = byte_range(value.shape, [st * itemsize for st in value.stride()], itemsize)
    return TensorView(dtype, value.data_ptr(), low, high, value.device.type, value)


def _numpy_view(value) -> TensorView:
    array = np.asarray(value) if not isinstance(value, np.ndarray) else value
    name = array.dtype.name
    if name not in _NUMPY_DTYPE_NAMES:
        raise LaunchError(f"numpy dtype {array.dtype} is not supported by tritium")
    dtype = T.dtype(_NUMPY_DTYPE_NAMES[name])
    low, high = byte_range(array.shape, array.strides, array.itemsize)
    address = array.__array_interface__["data"][0]
    return TensorView(dtype, address, low, high, "cpu", array)


def _cuda_interface_view(value) -> TensorView:
    """The view of an object exposing ``__cuda_array_interface__`` (CuPy, Numba, JAX arrays):
    device memory, which the backend serving "cuda" launches on."""
    interface = value.__cuda_array_interface__
    try:
        numpy_dtype = np.dtype(interface["typestr"])
    except TypeError:
        raise LaunchError(f"CUDA array of type {interface['typestr']!r} is not supported by tritium") from None
    if numpy_dtype.name not in _NUMPY_DTYPE_NAMES:
        raise LaunchError(f"CUDA array dtype {numpy_dtype} is not supported by tritium")
    shape = tuple(interface["shape"])
    itemsize = numpy_dtype.itemsize
    strides = interface.get("strides")
    if strides is None:  # C-contiguous
        strides, step = [], itemsize
        for extent in reversed(shape):
            strides.insert(0, step)
            step *= extent
    low, high = byte_range(shape, strides, itemsize)
    dtype = T.dtype(_NUMPY_DTYPE_NAMES[numpy_dtype.name])
    return TensorView(dtype, int(interface["data"][0]), low, high, "cuda", value)


def tensor_view(value) -> Optional[TensorView]:
    """The TensorView of a tensor-like argument; None for anything else."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return _torch_view(value)
    from .reinterpret import TensorWrapper

    if isinstance(value, TensorWrapper):
        inner = tensor_view(value.base)
        return TensorView(value.dtype, inner.address, inner.low, inner.high, inner.device, inner.keepalive)
    module = type(value).__module__
    if module.startswith("torch") and hasattr(value, "data_ptr"):
        return _torch_view(value)
    if isinstance(value, np.ndarray):
        return _numpy_view(value)
    if hasattr(value, "__cuda_array_interface__"):
        return _cuda_interface_view(value)
    if hasattr(value, "__array_interface__"):
        return _numpy_view(np.asarray(value))
    if isinstance(value, MockTensor):
        dtype, _ = _torch_dtype(value.dtype) if not isinstance(value.dtype, T.dtype) else (value.dtype, 0)
        return TensorView(dtype, 0, 0, 0, "cpu", value)
    return None


class MockTensor:
    """A stand-in for a tensor of ``dtype`` (a torch or tl dtype) where only its type matters:
    ``kernel.warmup(MockTensor(torch.float32), ...)`` compiles without memory (Triton's
    ``triton.runtime.jit.MockTensor``). Its address is 0 (16-byte aligned); launched, any access
    is out of bounds."""

    def __init__(self, dtype, shape=None):
        self.dtype = dtype
        self.shape = list(shape) if shape is not None else [1]

    @staticmethod
    def wrap_dtype(arg):
        """A torch dtype as a MockTensor of it; anything else as it is."""
        if type(arg).__name__ == "dtype" and type(arg).__module__ == "torch":
            return MockTensor(arg)
        return arg

    def stride(self):
        strides = [1]
        for size in reversed(self.shape[1:]):
            strides.append(strides[-1] * size)
        return tuple(reversed(strides))

    @staticmethod
    def data_ptr():
        return 0

    @staticmethod
    def ptr_range():
        return 0


def _launch_int_type(v: int) -> T.dtype:
    """Triton's launcher types a Python int argument i32 when it fits, u64 from 2**63 up, else i64
    (unlike a literal inside a kernel, it never becomes u32)."""
    if not -(2**63) <= v < 2**64:
        raise ArgumentOverflowError(f"integer argument {v} does not fit in 64 bits (int64 or uint64); pass it "
                                    "as a tensor, or split it into two words")
    if -(2**31) <= v < 2**31:
        return T.int32
    return T.uint64 if v >= 2**63 else T.int64


class Specialization(NamedTuple):
    """What one non-constexpr argument contributes to a launch: its part of the cache ``key``, its
    ``spec`` (IR type, or constexpr value), the ``attrs`` proved about it (``{"divisibility": 16}``
    for an integer divisible by 16 or a 16-byte aligned pointer), and the ``device`` its memory
    is on (None for scalars)."""

    key: tuple
    spec: Any
    attrs: dict
    device: Optional[str]


_DIVISIBLE = {"divisibility": 16}


def specialize(value, allow_constant_one: bool = True) -> Specialization:
    """The specialization of one non-constexpr argument. ``allow_constant_one=False``
    (``do_not_specialize``) keeps integers run-time values whatever they hold."""
    from ..language.core import constexpr

    if value is None:
        return Specialization(("none",), constexpr(None), {}, None)
    if isinstance(value, (bool, np.bool_)):
        return Specialization(("i1",), T.int1, {}, None)
    if isinstance(value, (int, np.integer)):
        v = int(value)
        if allow_constant_one and v == 1:
            return Specialization(("one",), constexpr(1), {}, None)
        ty = _launch_int_type(v) if not isinstance(value, np.integer) else T.dtype(_NUMPY_DTYPE_NAMES[value.dtype.name])
        # do_not_specialize (allow_constant_one=False) drops the divisibility-by-16 key too, as in Triton
        divisible = v % 16 == 0 if allow_constant_one else None
        return Specialization((ty.name, divisible), ty, dict(_DIVISIBLE) if divisible else {}, None)
    if isinstance(value, (float, np.floating)):
        ty = T.float32 if isinstance(value, float) else T.dtype(_NUMPY_DTYPE_NAMES[value.dtype.name])
        return Specialization((ty.name,), ty, {}, None)
    if _is_tensor_descriptor(value):
        return _specialize_descriptor(value)
    if isinstance(value, tuple):
        return _specialize_tuple(value, allow_constant_one)
    view = tensor_view(value)
    if view is not None:
        aligned = view.address % 16 == 0
        return Specialization(("ptr", view.dtype.name, aligned, view.device), T.pointer_type(view.dtype),
                              dict(_DIVISIBLE) if aligned else {}, view.device)
    if isinstance(value, T.dtype):
        return Specialization(("dtype", value.name), constexpr(value), {}, None)
    if isinstance(value, constexpr) or _is_jit_function(value):
        # a compile-time value where a run-time one may go (a tuple's element, Triton's closures):
        # compiled in, as a constexpr parameter is
        inner = value.value if isinstance(value, constexpr) else value
        try:
            hash(inner)
            identity = inner
        except TypeError:
            identity = ("id", id(inner))
        return Specialization(("constexpr", type(inner).__qualname__, identity), constexpr(inner), {}, None)
    raise LaunchError(f"cannot pass a {type(value).__name__} to a kernel: expected a tensor, a number, or None")


def _is_jit_function(value) -> bool:
    from ..compiler.source import JITCallable

    return isinstance(value, JITCallable)


# tensor descriptors ------------------------------------------------------------------------------
def _is_tensor_descriptor(value) -> bool:
    from ..tools.tensor_descriptor import TensorDescriptor

    return isinstance(value, TensorDescriptor)


def _specialize_descriptor(desc) -> Specialization:
    """A host TensorDescriptor: the kernel is specialized for its element type, block shape and
    padding, and, as integer and pointer arguments are, for its base's 16-byte alignment and which of
    its shape and strides are multiples of 16 (``attrs`` by parameter-name suffix: ``.base``,
    ``.shape0``, ``.stride0``...); its base, shape and strides are passed at run time (see
    ``expand_composites``)."""
    from ..language.tensor_descriptor import tensor_descriptor_type

    view = tensor_view(desc.base)
    if view is None:
        raise LaunchError(f"a TensorDescriptor's base must be a tensor, got a {type(desc.base).__name__}")
    if desc.padding == "nan" and not view.dtype.is_floating():
        raise LaunchError(f"a TensorDescriptor with padding='nan' needs a floating-point tensor, got {view.dtype}")
    for extent in desc.shape:
        if not 0 <= extent < 2**31:
            raise LaunchError(f"a TensorDescriptor's shape must fit in int32, got {list(desc.shape)}")
    spec = tensor_descriptor_type(view.dtype, tuple(desc.block_shape), desc.padding)
    aligned = view.address % 16 == 0
    shape = tuple(int(extent) % 16 == 0 for extent in desc.shape)
    strides = tuple(int(stride) % 16 == 0 for stride in desc.strides[:-1])
    attrs = {".base": dict(_DIVISIBLE)} if aligned else {}
    attrs.update((f".shape{i}", dict(_DIVISIBLE)) for i, divisible in enumerate(shape) if divisible)
    attrs.update((f".stride{i}", dict(_DIVISIBLE)) for i, divisible in enumerate(strides) if divisible)
    key = ("tensordesc", view.dtype.name, tuple(desc.block_shape), desc.padding, view.device, aligned, shape, strides)
    return Specialization(key, spec, attrs, view.device)


# tuples --------------------------------------------------------------------------------------------
def _specialize_tuple(value: tuple, allow_constant_one: bool) -> Specialization:
    """Each element specialized as an argument of its own. ``attrs`` are keyed by the suffix of each
    element's IR parameter name (``.0``, ``.1.2``), which the caller appends to the parameter's name."""
    from ..language.tuple_type import tuple_type

    elements, keys, attrs, device = [], [], {}, None
    for index, item in enumerate(value):
        try:
            found = specialize(item, allow_constant_one)
        except LaunchError as error:
            raise LaunchError(f"element {index} of the tuple: {error}") from None
        elements.append(found.spec)
        keys.append(found.key)
        if is_composite(found.spec):
            attrs.update({f".{index}{suffix}": a for suffix, a in found.attrs.items()})
        elif found.attrs:
            attrs[f".{index}"] = found.attrs
        device = device or found.device
    factory = type(value) if hasattr(type(value), "_fields") else None  # a named tuple keeps its class
    key = ("tuple", getattr(factory, "__qualname__", "tuple"), tuple(keys))
    return Specialization(key, tuple_type(tuple(elements), factory), attrs, device)


def is_composite(spec) -> bool:
    """``spec`` is passed as several IR parameters (a tuple's elements, a tensor descriptor's parts),
    whose ``attrs`` are keyed by the suffix of the parameter's name."""
    from ..language.tensor_descriptor import tensor_descriptor_type
    from ..language.tuple_type import tuple_type

    return isinstance(spec, (tuple_type, tensor_descriptor_type))


def _argument_parts(name: str, spec, value) -> list[tuple[str, Any, Any]]:
    """(IR parameter name, spec, value) of each IR parameter argument ``name`` is passed as: a
    tensor descriptor's base, shape and strides; a tuple's run-time elements; else itself."""
    from ..language.core import constexpr
    from ..language.tensor_descriptor import tensor_descriptor_type
    from ..language.tuple_type import tuple_type

    if isinstance(spec, tensor_descriptor_type):
        if not _is_tensor_descriptor(value):
            raise LaunchError(f"argument '{name}' was compiled as a tensor descriptor, but a "
                              f"{type(value).__name__} was passed")
        parts = [value.base, *value.shape, *value.strides[:-1]]
        return [(part_name, ty, part) for (part_name, ty), part in zip(spec.ir_arguments(name), parts)]
    if isinstance(spec, tuple_type):
        if not isinstance(value, tuple) or len(value) != len(spec.elements):
            raise LaunchError(f"argument '{name}' was compiled as a tuple of {len(spec.elements)} elements, but "
                              f"{value!r} was passed")
        out = []
        for index, (element, item) in enumerate(zip(spec.elements, value)):
            out.extend(_argument_parts(f"{name}.{index}", element, item))
        return out
    if isinstance(spec, constexpr):
        return []
    return [(name, spec, value)]


# id(specs dict) -> (that dict, its composite parameter names): a compiled kernel's specs never change,
# and every launch asks
_composite_names: dict = {}


def expand_composites(specs: dict, values: dict) -> tuple[dict, dict]:
    """``specs`` and ``values`` (parameter name -> spec, value) with the parts of each argument passed
    as several IR parameters (tensor descriptors, tuples) added under those parameters' names
    (``name.base``, ``name.shape0``, ``name.0``...)."""
    names = _composite_names.get(id(specs))
    if names is None or names[0] is not specs:
        from ..language.tensor_descriptor import tensor_descriptor_type
        from ..language.tuple_type import tuple_type

        names = (specs, [n for n, spec in specs.items() if isinstance(spec, (tensor_descriptor_type, tuple_type))])
        if len(_composite_names) > 4096:
            _composite_names.clear()
        _composite_names[id(specs)] = names
    names = names[1]
    if not names:
        return specs, values
    specs, values = dict(specs), dict(values)
    for name in names:
        for part_name, spec, value in _argument_parts(name, specs[name], values[name]):
            specs[part_name] = spec
            values[part_name] = value
    return specs, values
