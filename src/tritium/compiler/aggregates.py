"""Compile-time values made of parts: tuples, block pointers, tensor descriptors.

A run-time ``if`` or loop carries tensors, one IR value each. A value made of several parts
(``(acc, count)``, a block pointer with its base, shape, strides and offsets) is taken apart
into its leaves, each leaf is carried or joined like a plain variable, and the value is rebuilt
from the results afterwards. ``flatten(value)`` does the taking apart for any value:

- an ``Aggregate`` says itself what its parts are (``Aggregate.flatten``), and what about it
  must stay the same across branches and iterations (``Aggregate.structure``: a block shape,
  an order, an element type);
- a tuple's parts are its elements;
- anything else (a tensor, a constexpr, None, a dtype) is a leaf.

Parts are flattened recursively, so a tuple of block pointers works as well.
"""
from __future__ import annotations

from typing import Any, Callable

from ..language.core import tensor


class Aggregate:
    """A compile-time object made of parts, some of which may be run-time tensors."""

    def flatten(self) -> tuple[list, Callable[[list], Aggregate]]:
        """(parts, rebuild): ``rebuild(new_parts)`` is this object with its parts replaced."""
        raise NotImplementedError

    def structure(self) -> tuple:
        """What must agree between two values for one to replace the other in a join or a loop."""
        return (type(self).__name__,)


LEAF = "leaf"


def flatten(value) -> tuple[list, Callable[[list], Any], Any]:
    """(leaves, rebuild, structure) of ``value``: ``rebuild(leaves)`` gives ``value`` back, and
    two values with equal ``structure`` can be rebuilt from each other's leaves."""
    if isinstance(value, Aggregate):
        parts, rebuild_self = value.flatten()
        leaves, rebuild_parts, inner = flatten(tuple(parts))
        return leaves, (lambda new: rebuild_self(list(rebuild_parts(new)))), (value.structure(), inner)
    if isinstance(value, (tuple, list)) and not isinstance(value, tensor):
        leaves: list = []
        pieces = []
        for element in value:
            element_leaves, rebuild, structure = flatten(element)
            pieces.append((len(element_leaves), rebuild, structure))
            leaves.extend(element_leaves)

        kind = type(value)

        def rebuild_tuple(new, pieces=pieces):
            out, at = [], 0
            for n, rebuild, _ in pieces:
                out.append(rebuild(new[at:at + n]))
                at += n
            if kind is tuple or kind is list:
                return tuple(out)
            return kind(*out) if hasattr(kind, "_fields") else kind(out)  # a named tuple keeps its class

        return leaves, rebuild_tuple, ("tuple", tuple(s for _, _, s in pieces))
    return [value], (lambda new: new[0]), LEAF


def is_composite(value) -> bool:
    """True for values that ``flatten`` takes apart (tuples and aggregates)."""
    return isinstance(value, Aggregate) or (isinstance(value, (tuple, list)) and not isinstance(value, tensor))


def describe_structure(structure) -> str:
    if structure == LEAF:
        return "a single value"
    if structure[0] == "tuple":
        return f"a tuple of {len(structure[1])} elements"
    return f"a {structure[0][0]}"
