"""``triton.tools.mxfp``: host-side tensors of the OCP microscaling formats, for preparing the inputs
of ``tl.dot_scaled`` and checking its results (needs torch).

- ``MXFP4Tensor``: FP4 E2M1 values, one code per element in ``.data`` (uint8, low four bits: sign,
  two exponent bits with bias 1, one mantissa bit), so the values are 0, 0.5, 1, 1.5, 2, 3, 4, 6 and
  their negatives. Built from floats, values round to nearest with ties to an even code and clip to
  +-6 (infinities too; NaN becomes +0, the format has none); ``to_packed_tensor(dim)`` puts two codes
  in a byte along ``dim`` (the element with the even index in the low four bits);
- ``MXScaleTensor``: E8M0 scales, one byte each: code c is 2^(c - 127), 255 is NaN; built from
  floats, a positive finite value takes the nearest power of two (in the exponent), anything else
  255; ``random(low, high)`` draws scales between two values;
- ``fp8e8m0_to_float32(codes)``: the float32 values of E8M0 codes (uint8 or int8 tensors).
"""
from __future__ import annotations

FP4_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)  # codes 0..7; codes 8..15 are their negatives
E8M0_NAN = 255
E8M0_BIAS = 127


def _torch():
    import torch

    return torch


def fp8e8m0_to_float32(scale):
    """2^(code - 127) for each E8M0 code, NaN for 255."""
    torch = _torch()
    codes = scale.view(torch.uint8).to(torch.int32)
    values = torch.exp2((codes - E8M0_BIAS).to(torch.float32))
    return torch.where(codes == E8M0_NAN, torch.full_like(values, float("nan")), values)


class _Codes:
    """A tensor of one-byte codes (``.data``, uint8) on ``.device``: encoded from float ``data``, or
    zeros of ``size``."""

    def __init__(self, data=None, size=None, device=None):
        torch = _torch()
        if data is not None:
            data = torch.as_tensor(data, device=device)
            self.device = data.device
            self.data = self._encode(data)
        elif size is not None:
            self.device = torch.device(device) if device is not None else torch.device("cpu")
            self.data = torch.zeros(size, dtype=torch.uint8, device=self.device)
        else:
            raise ValueError(f"{type(self).__name__} needs data (a float tensor) or a size")

    @staticmethod
    def _encode(values):
        raise NotImplementedError


class MXFP4Tensor(_Codes):
    """FP4 E2M1 codes, one per element (see the module's notes)."""

    def random(self):
        """Fills the tensor with random codes (every one of the 16 equally likely); returns it."""
        torch = _torch()
        self.data = torch.randint(0, 16, self.data.shape, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype):
        """The values as a float tensor of ``dtype``."""
        torch = _torch()
        table = torch.tensor(FP4_VALUES + tuple(-v for v in FP4_VALUES), dtype=torch.float32, device=self.device)
        return table[self.data.to(torch.int64)].to(dtype)

    @staticmethod
    def _encode(values):
        torch = _torch()
        x = values.to(torch.float32)
        negative = torch.signbit(x)
        magnitude = torch.nan_to_num(x.abs(), nan=0.0).clamp(max=FP4_VALUES[-1])
        grid = torch.tensor(FP4_VALUES, dtype=torch.float32, device=x.device)
        above = torch.searchsorted(grid, magnitude.contiguous()).clamp(1, len(FP4_VALUES) - 1)
        below = above - 1
        to_below, to_above = magnitude - grid[below], grid[above] - magnitude
        # nearest; a tie goes to the even code (mantissa bit 0)
        take_above = (to_above < to_below) | ((to_above == to_below) & (above % 2 == 0))
        code = torch.where(take_above, above, below).to(torch.uint8)
        sign = (negative & ~torch.isnan(x)).to(torch.uint8) << 3
        return code | sign

    def to_packed_tensor(self, dim: int):
        """Two codes a byte along ``dim`` (padded with a zero code when its length is odd): the even
        index in the low four bits, the odd one in the high four."""
        torch = _torch()
        assert 0 <= dim < self.data.dim(), f"dim {dim} is not a dimension of a {self.data.dim()}-D tensor"
        data = self.data
        if data.shape[dim] % 2:
            pad = list(data.shape)
            pad[dim] = 1
            data = torch.cat([data, torch.zeros(pad, dtype=data.dtype, device=data.device)], dim=dim)
        low = data.narrow(dim, 0, data.shape[dim] // 2 * 2).unfold(dim, 2, 2)
        return (low[..., 0] | (low[..., 1] << 4)).contiguous()

    def unpack_packed_tensor(self, packed, dim: int, original_shape):
        """The codes of ``to_packed_tensor``'s bytes, cut back to ``original_shape``."""
        torch = _torch()
        low, high = packed & 0x0F, (packed >> 4) & 0x0F
        both = torch.stack([low, high], dim=dim + 1)
        shape = list(packed.shape)
        shape[dim] *= 2
        codes = both.reshape(shape)
        return codes.narrow(dim, 0, original_shape[dim]).contiguous()


class MXScaleTensor(_Codes):
    """E8M0 scale codes, one byte per element (see the module's notes)."""

    def random(self, low=None, high=None):
        """Fills the tensor with random scales between the values ``low`` and ``high`` (powers of two
        from 2^floor(log2(low)) to 2^floor(log2(high)), every code equally likely; never 255, NaN);
        returns it."""
        import math

        torch = _torch()
        first = 0 if low is None else max(0, math.floor(math.log2(low)) + E8M0_BIAS)
        last = E8M0_NAN - 1 if high is None else min(E8M0_NAN - 1, max(0, math.floor(math.log2(high)) + E8M0_BIAS))
        if first > last:
            raise ValueError(f"MXScaleTensor.random: low ({low}) is above high ({high})")
        self.data = torch.randint(first, last + 1, self.data.shape, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype):
        return fp8e8m0_to_float32(self.data).to(dtype)

    @staticmethod
    def _encode(values):
        torch = _torch()
        x = values.to(torch.float64)
        valid = torch.isfinite(x) & (x > 0)
        exponent = torch.round(torch.log2(torch.where(valid, x, torch.ones_like(x))))
        code = (exponent + E8M0_BIAS).clamp(0, E8M0_NAN - 1)
        return torch.where(valid, code, torch.full_like(code, E8M0_NAN)).to(torch.uint8)
