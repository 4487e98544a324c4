"""The type of a tuple (or named tuple) passed to a kernel: the specialization of each element.

Triton accepts tuples as kernel arguments and the kernel indexes them (``ptrs[0]``, ``cfg.scale``).
Each element is specialized as an argument of its own (a tensor becomes a pointer parameter, an
integer equal to 1 a constant, a nested tuple another ``tuple_type``); the IR gets one parameter
per run-time element, named ``name.0``, ``name.1.2``, and inside the kernel the parameter is the
tuple (of the same named-tuple class) of those values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional

from .core import constexpr


@dataclass(frozen=True)
class tuple_type:
    elements: tuple  # each an IR type, a constexpr, or a composite type (tuple_type, tensor_descriptor_type)
    factory: Optional[type] = None  # the named-tuple class, or None for a plain tuple

    def ir_arguments(self, name: str) -> list:
        """(IR parameter name, IR type) of the run-time elements, depth first."""
        out = []
        for index, element in enumerate(self.elements):
            part = f"{name}.{index}"
            if hasattr(element, "ir_arguments"):
                out.extend(element.ir_arguments(part))
            elif not isinstance(element, constexpr):
                out.append((part, element))
        return out

    def build(self, values: list) -> Any:
        """The tuple inside the kernel, from the tensors of the IR parameters (in ``ir_arguments``
        order); constexpr elements are their values."""
        return self._build(iter(values))

    def _build(self, values: Iterator) -> Any:
        items = []
        for element in self.elements:
            if isinstance(element, tuple_type):
                items.append(element._build(values))
            elif hasattr(element, "ir_arguments"):
                count = len(element.ir_arguments("_"))
                items.append(element.build([next(values) for _ in range(count)]))
            elif isinstance(element, constexpr):
                items.append(element)
            else:
                items.append(next(values))
        return self.factory(*items) if self.factory is not None else tuple(items)
