"""``tl.float8e4b15``: 1 sign, 4 exponent and 3 mantissa bits, exponent bias 15, as Triton's NVIDIA
conversions define it (measured on a Hopper GPU with Triton 3.6: ``tests/data/fp8e4b15_gpu.npz``).

- every code is a finite number: S.EEEE.MMM is fp16's S.0EEEE.MMM0000000 (a code shifted into the
  fp16 layout), so 0x7f is 1.875 and 0x80 is -0.0; there is no infinity and no NaN;
- a conversion to fp8e4b15 takes fp16 or fp32 (Triton refuses the other types), clips the magnitude
  to 1.75 first (so 1.875 is never produced: infinities become +-1.75), then rounds to nearest with
  ties away from zero, whatever ``fp_downcast_rounding`` asks; a NaN becomes 1.75 with the sign it
  has in fp16, and +1.75 from fp32;
- the format has no arithmetic of its own (Triton does not compile ``+`` or ``<`` on it): values are
  converted, selected, moved and given to ``tl.dot`` (which multiplies them as fp16).

Arrays of the type are stored as their codes (``uint8``).
"""
from __future__ import annotations

import numpy as np

STORAGE = np.dtype(np.uint8)
LARGEST_PRODUCED = 1.75  # the conversions clip to this: 0x7e
CODE_OF_LARGEST = 0x7E

_CODES = np.arange(256, dtype=np.uint16)
_FP16_BITS = ((_CODES & 0x7F) << 7) | ((_CODES & 0x80) << 8)
VALUES = _FP16_BITS.astype(np.uint16).view(np.float16).astype(np.float32)  # code -> value, exactly
_MAGNITUDES = VALUES[:128].astype(np.float64)  # ascending: codes 0..127


def decode(codes: np.ndarray) -> np.ndarray:
    """The fp32 values of an array of codes (exact)."""
    return np.take(VALUES, np.asarray(codes).astype(np.uint8))


def encode(x: np.ndarray, nan_keeps_sign: bool) -> np.ndarray:
    """The codes of a float array (fp16, fp32 or fp64 values), as a conversion gives them: clipped to
    +-1.75, rounded to nearest with ties away from zero. A NaN is 1.75 with its sign when
    ``nan_keeps_sign`` (fp16 sources), else +1.75 (fp32 sources)."""
    with np.errstate(invalid="ignore"):  # signalling NaNs
        wide = np.asarray(x).astype(np.float64)
    negative = np.signbit(wide)
    nan = np.isnan(wide)
    magnitude = np.where(nan, LARGEST_PRODUCED, np.minimum(np.abs(wide), LARGEST_PRODUCED))
    above = np.clip(np.searchsorted(_MAGNITUDES, magnitude), 1, 127)  # first value >= magnitude
    below = above - 1
    to_above = magnitude - _MAGNITUDES[below] >= _MAGNITUDES[above] - magnitude  # a tie goes up
    code = np.where(to_above, above, below).astype(np.uint8)
    sign = negative & (~nan | nan_keeps_sign)
    return (code | (sign.astype(np.uint8) << 7)).astype(np.uint8)


def constant_code(value: float) -> np.ndarray:
    """A constant of the type: the value rounded to fp32, then converted as from fp32 (a one-element
    array of codes)."""
    with np.errstate(over="ignore"):
        return encode(np.array([float(value)]).astype(np.float32), nan_keeps_sign=False)
