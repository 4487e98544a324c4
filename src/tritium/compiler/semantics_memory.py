"""What memory ops mean: loads, stores and atomics, with their masks, memory orders and element types."""
from __future__ import annotations

from typing import ClassVar

from ..language.core import tensor, unwrap
from .ir import types as T
from .semantics_elementwise import _is_number


class MemorySemantics:
    """The memory ops of ``Semantic`` (see semantics.py): ``load``, ``store``, ``atomic_rmw``, ``atomic_cas``."""

    # memory ---------------------------------------------------------------------------
    def _check_pointer(self, ptr, what: str, writes: bool = False) -> tensor:
        ptr = self.to_tensor(ptr)
        if not ptr.dtype.is_ptr():
            raise TypeError(f"{what} needs a pointer (a tensor argument plus offsets), got a value of type {ptr.type}")
        if writes and ptr.dtype.const:
            raise ValueError(f"Cannot store to a constant pointer: {what} writes through a pointer derived from a "
                             "parameter annotated tl.const; remove the annotation, or write through another pointer")
        return ptr

    # Hints Triton accepts (its semantic.py's cache-modifier and eviction-policy tables); they
    # reach the IR for compiled backends and never change the values read or written.
    _LOAD_CACHE_MODIFIERS = ("", ".ca", ".cg", ".cv")
    _STORE_CACHE_MODIFIERS = ("", ".wb", ".cg", ".cs", ".wt")
    _EVICTION_POLICIES = ("", "evict_first", "evict_last")

    def _memory_hints(self, cache_modifier, eviction_policy, accepted: tuple) -> dict:
        cache_modifier, eviction_policy = unwrap(cache_modifier) or "", unwrap(eviction_policy) or ""
        if cache_modifier not in accepted:
            raise ValueError(f"Cache modifier {cache_modifier} not supported (use one of {', '.join(map(repr, accepted))})")
        if eviction_policy not in self._EVICTION_POLICIES:
            raise ValueError(f"Eviction policy {eviction_policy} not supported "
                             f"(use one of {', '.join(map(repr, self._EVICTION_POLICIES))})")
        return {"cache_modifier": cache_modifier, "eviction_policy": eviction_policy}

    def load(self, ptr, mask=None, other=None, cache_modifier="", eviction_policy="", volatile=False) -> tensor:
        ptr = self._check_pointer(ptr, "tl.load")
        element = ptr.dtype.element_ty
        operands = [ptr]
        attrs = self._memory_hints(cache_modifier, eviction_policy, self._LOAD_CACHE_MODIFIERS)
        attrs["volatile"] = bool(unwrap(volatile))
        if mask is not None and unwrap(mask) is not None:
            mask = self.to_bool(self.to_tensor(mask))
            if mask.type.is_block() and not ptr.type.is_block():
                ptr = self.broadcast_to(ptr, mask.type.shape)
            mask = self.broadcast_to(mask, T.shape_of(ptr.type))
            operands = [ptr, mask]
            if other is not None and unwrap(other) is not None:
                if element.is_fp8e4b15() and not isinstance(unwrap(other), tensor):
                    other = self.constant(other, element)  # a number, not an int32 tensor it cannot convert
                other = self.broadcast_to(self.cast(self.to_tensor(other), element), T.shape_of(ptr.type))
                operands.append(other)
        elif other is not None and unwrap(other) is not None:
            pass  # `other` without a mask is ignored, as in Triton
        return self._emit("load", operands, T.with_element(ptr.type, element), attrs)

    # tiles: block pointers and tensor descriptors --------------------------------------------------
    def _layout_operands(self, shape, strides, offsets) -> list[tensor]:
        """The tile ops' layout operands: Python ints become constants (i32 when they fit, else i64)."""
        out = []
        for part in (*shape, *strides, *offsets):
            if isinstance(part, tensor):
                out.append(part)
            else:
                out.append(self.constant(part, T.int32 if -(2 ** 31) <= part < 2 ** 31 else T.int64))
        return out

    def _tile_attrs(self, block_shape, order, boundary_check, source, cache_modifier, eviction_policy,
                    cache_modifiers) -> dict:
        attrs = {"block_shape": tuple(block_shape), "order": tuple(order), "boundary_check": tuple(boundary_check),
                 "source": source}
        attrs.update(self._memory_hints(cache_modifier, eviction_policy, cache_modifiers))
        return attrs

    def tile_load(self, base, shape, strides, offsets, block_shape, order=(), boundary_check=(), padding="",
                  source="block_pointer", cache_modifier="", eviction_policy="") -> tensor:
        """The ``block_shape`` tile of the strided tensor at ``base`` whose first element is at
        ``offsets`` (see the IR spec's ``tile_load``)."""
        attrs = self._tile_attrs(block_shape, order, boundary_check, source, cache_modifier, eviction_policy,
                                 self._LOAD_CACHE_MODIFIERS)
        attrs["padding"] = padding
        result = T.block_type(base.dtype.element_ty, tuple(block_shape))
        return self._emit("tile_load", [base, *self._layout_operands(shape, strides, offsets)], result, attrs)

    def tile_store(self, base, value, shape, strides, offsets, block_shape, order=(), boundary_check=(),
                   source="block_pointer", cache_modifier="", eviction_policy="") -> None:
        attrs = self._tile_attrs(block_shape, order, boundary_check, source, cache_modifier, eviction_policy,
                                 self._STORE_CACHE_MODIFIERS)
        self._create("tile_store", [base, value, *self._layout_operands(shape, strides, offsets)], [], attrs)

    def store(self, ptr, value, mask=None, cache_modifier="", eviction_policy="") -> None:
        ptr = self._check_pointer(ptr, "tl.store", writes=True)
        element = ptr.dtype.element_ty
        value = self.to_tensor(value, element if _is_number(value) else None)
        if value.type.is_block() and not ptr.type.is_block():
            raise ValueError(f"cannot store a block of shape {list(value.type.shape)} through a scalar pointer")
        value = self.broadcast_to(self.cast(value, element), T.shape_of(ptr.type))
        operands = [ptr, value]
        if mask is not None and unwrap(mask) is not None:
            mask = self.broadcast_to(self.to_bool(self.to_tensor(mask)), T.shape_of(ptr.type))
            operands.append(mask)
        self._create("store", operands, [], self._memory_hints(cache_modifier, eviction_policy,
                                                               self._STORE_CACHE_MODIFIERS))

    _SEMANTICS = ("acquire", "release", "acq_rel", "relaxed")
    _SCOPES = ("gpu", "cta", "sys")
    # Element types each read-modify-write kind accepts (Triton's documentation of tl.atomic_*).
    _ATOMIC_TYPES: ClassVar[dict[str, tuple[str, ...]]] = {
        "add": ("int32", "uint32", "int64", "uint64", "fp16", "bf16", "fp32", "fp64"),
        "max": ("int32", "uint32", "int64", "uint64", "fp16", "bf16", "fp32", "fp64"),
        "min": ("int32", "uint32", "int64", "uint64", "fp16", "bf16", "fp32", "fp64"),
        "and": ("int32", "uint32", "int64", "uint64"),
        "or": ("int32", "uint32", "int64", "uint64"),
        "xor": ("int32", "uint32", "int64", "uint64"),
        "xchg": ("int32", "uint32", "int64", "uint64", "fp16", "bf16", "fp32", "fp64"),
    }

    def _memory_order(self, sem, scope) -> dict:
        sem = unwrap(sem) or "acq_rel"
        scope = unwrap(scope) or "gpu"
        if sem not in self._SEMANTICS:
            raise ValueError(f"sem must be one of {self._SEMANTICS}, got {sem!r}")
        if scope not in self._SCOPES:
            raise ValueError(f"scope must be one of {self._SCOPES}, got {scope!r}")
        return {"sem": sem, "scope": scope}

    def atomic_rmw(self, kind: str, ptr, val, mask=None, sem=None, scope=None) -> tensor:
        """Atomically combines ``val`` into memory; returns the values found there before."""
        ptr = self._check_pointer(ptr, f"tl.atomic_{kind}", writes=True)
        element = ptr.dtype.element_ty
        if element.name not in self._ATOMIC_TYPES[kind]:
            raise TypeError(f"tl.atomic_{kind} does not support {element} "
                            f"(supported: {', '.join(self._ATOMIC_TYPES[kind])})")
        val = self.cast(self.to_tensor(val, element if _is_number(val) else None), element)
        if val.type.is_block() and not ptr.type.is_block():
            ptr = self.broadcast_to(ptr, val.type.shape)
        val = self.broadcast_to(val, T.shape_of(ptr.type))
        operands = [ptr, val]
        if mask is not None and unwrap(mask) is not None:
            operands.append(self.broadcast_to(self.to_bool(self.to_tensor(mask)), T.shape_of(ptr.type)))
        attrs = {"kind": kind, **self._memory_order(sem, scope)}
        return self._emit("atomic_rmw", operands, T.with_element(ptr.type, element), attrs)

    def atomic_cas(self, ptr, cmp, val, sem=None, scope=None) -> tensor:
        """Where memory equals ``cmp``, stores ``val``; returns the values found there before."""
        ptr = self._check_pointer(ptr, "tl.atomic_cas", writes=True)
        element = ptr.dtype.element_ty
        if element.name not in ("int16", "uint16", "int32", "uint32", "int64", "uint64", "fp16", "fp32", "fp64"):
            raise TypeError(f"tl.atomic_cas does not support {element}")
        cmp = self.cast(self.to_tensor(cmp, element if _is_number(cmp) else None), element)
        val = self.cast(self.to_tensor(val, element if _is_number(val) else None), element)
        shape = T.shape_of(ptr.type)
        for x in (cmp, val):
            if x.type.is_block() and not shape:
                shape = x.type.shape
        ptr, cmp, val = (self.broadcast_to(x, shape) for x in (ptr, cmp, val))
        return self._emit("atomic_cas", [ptr, cmp, val], T.with_element(ptr.type, element),
                          self._memory_order(sem, scope))

    # atomic loads and stores (tl.atomic_load, tl.atomic_store: Triton 3.9's semantic.py) ---------------
    def _atomic_access_order(self, what: str, sem, scope, default: str) -> dict:
        sem, scope = unwrap(sem) or default, unwrap(scope) or "gpu"
        if sem not in (default, "relaxed"):
            raise ValueError(f"{what} only supports {default} and relaxed semantics, got sem={sem!r}: pass "
                             f"sem='{default}' (the default) or sem='relaxed'")
        if scope not in self._SCOPES:
            raise ValueError(f"scope must be one of {self._SCOPES}, got {scope!r}")
        return {"sem": sem, "scope": scope}

    def _atomic_access_pointer(self, ptr, what: str) -> tensor:
        ptr = self._check_pointer(ptr, what)
        element = ptr.dtype.element_ty
        if element.is_ptr() or not (element.is_int() or element.is_floating()):
            raise TypeError(f"{what} only supports integer and floating-point elements, got {element}")
        if element.is_bool():  # read and written as bytes, as Triton does
            ptr = self._emit("bitcast", [ptr], T.with_element(ptr.type, T.pointer_type(T.int8)))
        return ptr

    def _atomic_access_mask(self, mask, shape) -> list:
        if mask is None or unwrap(mask) is None:
            return []
        return [self.broadcast_to(self.to_bool(self.to_tensor(mask)), shape)]

    def atomic_load(self, ptr, mask=None, sem=None, scope=None) -> tensor:
        """Reads memory as one atomic access per lane (acquire by default); masked-off lanes give 0."""
        element = self._check_pointer(ptr, "tl.atomic_load").dtype.element_ty
        ptr = self._atomic_access_pointer(ptr, "tl.atomic_load")
        attrs = self._atomic_access_order("atomic_load", sem, scope, "acquire")
        if mask is not None and unwrap(mask) is not None and not ptr.type.is_block():
            mask = self.to_tensor(mask)
            if mask.type.is_block():
                raise ValueError("the mask of tl.atomic_load cannot be a block when the pointer is a scalar")
        operands = [ptr, *self._atomic_access_mask(mask, T.shape_of(ptr.type))]
        result = self._emit("atomic_load", operands, T.with_element(ptr.type, ptr.dtype.element_ty), attrs)
        return self.compare("ne", result, 0) if element.is_bool() else result

    def atomic_store(self, ptr, value, mask=None, sem=None, scope=None) -> None:
        """Writes memory as one atomic access per lane (release by default)."""
        element = self._check_pointer(ptr, "tl.atomic_store", writes=True).dtype.element_ty
        ptr = self._atomic_access_pointer(ptr, "tl.atomic_store")
        attrs = self._atomic_access_order("atomic_store", sem, scope, "release")
        value = self.to_tensor(value, element if _is_number(value) else None)
        if value.type.is_block() and not ptr.type.is_block():
            raise ValueError("the value of tl.atomic_store cannot be a block when the pointer is a scalar")
        value = self.broadcast_to(self.cast(self.cast(value, element), ptr.dtype.element_ty), T.shape_of(ptr.type))
        operands = [ptr, value, *self._atomic_access_mask(mask, T.shape_of(ptr.type))]
        self._create("atomic_store", operands, [], attrs)
