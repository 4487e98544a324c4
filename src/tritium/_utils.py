"""``triton._utils``: block-shape rules that library code and Triton's tests import."""
from __future__ import annotations

# the most elements one block may hold, as in Triton
TRITON_MAX_TENSOR_NUMEL = 1048576


def is_power_of_two(x) -> bool:
    """True for 1, 2, 4, ...; False for 0 and negative numbers."""
    return x > 0 and (x & (x - 1)) == 0


def validate_block_shape(shape) -> int:
    """The element count of a block of ``shape``: every dimension an int power of two, the count at
    most TRITON_MAX_TENSOR_NUMEL; otherwise a TypeError or ValueError saying which dimension."""
    count = 1
    for i, size in enumerate(shape):
        if not isinstance(size, int):
            raise TypeError(f"Shape element {i} must have type `constexpr[int]`, got `constexpr[{type(size)}]")
        if not is_power_of_two(size):
            raise ValueError(f"Shape element {i} must be a power of 2, got {size}")
        count *= size
    if count > TRITON_MAX_TENSOR_NUMEL:
        raise ValueError(f"numel ({count}) exceeds triton maximum tensor numel ({TRITON_MAX_TENSOR_NUMEL})")
    return count
