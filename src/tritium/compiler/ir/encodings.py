"""Encodings: where a backend puts each block value, written on the value (``Value.encoding``).

The tile IR says what a block is (its shape and element type); an encoding says where its elements
live on a target, decided by a backend's placement stage before lowering and read by its rules. Each
encoding is an attribute of the IR like an op's attributes: printed inside the block's type
(``<64x64xfp32, #cpu.buffer>``), parsed back, and checked by the verifier (``check``). The kinds:

- ``#cpu.<where>`` (``Placement``): the CPU backend's placement of a block value
  (docs/cpu-backend.md): ``lazy`` (each lane evaluated where it is read), ``buffer`` (written into
  a buffer where it is defined), ``in_store`` (evaluated lane by lane inside the loop of the one
  store that uses it), ``read_in_store`` (a load read inside that loop), ``packed<form>`` (a load
  whose only reader is a dot, kept in the form the dot's product reads).
- ``#cuda.<kind><reg=..., lane=..., warp=...>`` (``Distributed``): a GPU layout, which register of
  which thread of which warp holds each element (docs/cuda-backend.md): linear over the bits of the
  register, lane and warp numbers, each bit adding a power of two along one dimension (or nothing:
  replication). ``kind`` says where it came from (``blocked``, ``slice``, ``mma``, ``mma_operand``,
  ``wgmma`` for Hopper's warpgroup accumulator, ``wgmma_operand`` for its register A operand, ...);
  the bits say everything. The two ``wgmma`` kinds are checked for the fragment every warpgroup
  instruction fixes (docs/tensor-cores.md, "Encodings").
- ``#cuda.nvmma<swizzle=W[, transposed]>`` (``SharedTile``): an operand tile in shared memory in
  Hopper's swizzled layout (W = 128, 64 or 32 bytes), the one wgmma descriptors and TMA read and
  ``ldmatrix`` reads without bank conflicts.

An encoding kind is registered by its prefix (``ENCODINGS``); a backend that needs another adds a
class here, so that every stage can print and check it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, ClassVar, Optional

from . import types as T


class Encoding:
    """The base of every encoding: ``text()`` is what the printer writes, ``check(value)`` what the
    verifier asks (None when the encoding fits the value, else the problem)."""

    def text(self) -> str:
        raise NotImplementedError

    def check(self, value) -> Optional[str]:
        return None

    def __str__(self) -> str:
        return self.text()


# prefix -> parse(name, parameters, the block's shape)
ENCODINGS: dict[str, Callable[[str, str, tuple], Encoding]] = {}


def _encoding(prefix: str):
    def register(parse):
        ENCODINGS[prefix] = parse
        return parse

    return register


def _block_shape(value) -> Optional[tuple[int, ...]]:
    return tuple(value.type.shape) if isinstance(value.type, T.block_type) else None


# the CPU backend's placement -----------------------------------------------------------------------
@dataclass(frozen=True)
class Placement(Encoding):
    where: str  # one of WHERE
    form: str = ""  # packed: the element form a dot reads ("fp32", "tf32", "tf32_high", "i32")

    WHERE: ClassVar[tuple[str, ...]] = ("lazy", "buffer", "in_store", "read_in_store", "packed")

    def text(self) -> str:
        return f"#cpu.{self.where}" + (f"<{self.form}>" if self.form else "")

    def check(self, value) -> Optional[str]:
        if self.where not in self.WHERE:
            return f"unknown CPU placement {self.where!r} (one of {', '.join(self.WHERE)})"
        if _block_shape(value) is None:
            return f"a CPU placement {self.text()} on a value that is not a block"
        opcode = value.owner.opcode if value.owner is not None else None
        if self.where in ("read_in_store", "packed") and opcode != "load":
            return f"{self.text()} places loads only, not the result of {opcode or 'a region argument'}"
        if (self.where == "packed") != bool(self.form):
            return "a packed placement names its form, and only a packed one does"
        return None


@_encoding("cpu")
def _parse_placement(name: str, parameters: str, shape: tuple) -> Encoding:
    return Placement(name, parameters)


# GPU layouts -----------------------------------------------------------------------------------------
Bit = Optional[tuple[int, int]]  # (dimension, weight), or None: the bit replicates

# the fixed part of the wgmma kinds: a warp's 16 x 8 piece of one instruction
WGMMA_KINDS = ("wgmma", "wgmma_operand")
WGMMA_REG_BITS = ((1, 1), (0, 8))
WGMMA_LANE_BITS = ((1, 2), (1, 4), (0, 1), (0, 2), (0, 4))
WGMMA_WARP_BITS = ((0, 16), (0, 32))


def _bits_text(values) -> str:
    return "[" + ", ".join("_" if b is None else f"{b[0]}:{b[1]}" for b in values) + "]"


@dataclass(frozen=True)
class Distributed(Encoding):
    kind: str
    shape: tuple[int, ...]
    reg_bits: tuple[tuple[int, int], ...]
    lane_bits: tuple[Bit, ...]
    warp_bits: tuple[Bit, ...]

    def text(self) -> str:
        return (f"#cuda.{self.kind}<reg={_bits_text(self.reg_bits)}, lane={_bits_text(self.lane_bits)}, "
                f"warp={_bits_text(self.warp_bits)}>")

    def check(self, value) -> Optional[str]:
        shape = _block_shape(value)
        if shape is None:
            return "a layout on a value that is not a block"
        if shape != self.shape:
            return f"a layout of shape {list(self.shape)} on a block of shape {list(shape)}"
        covered = [0] * len(shape)
        for bit in (*self.reg_bits, *self.lane_bits, *self.warp_bits):
            if bit is None:
                continue
            dim, weight = bit
            if not 0 <= dim < len(shape) or weight <= 0 or weight & (weight - 1):
                return f"the layout bit {dim}:{weight} is not a power of two along a dimension of the block"
            if covered[dim] & weight:
                return f"two bits of the layout add {weight} along dimension {dim}"
            covered[dim] |= weight
        missing = [d for d, n in enumerate(shape) if covered[d] != n - 1]
        if missing:
            return f"the layout does not reach every element along dimension {missing[0]}"
        if self.kind in WGMMA_KINDS:
            return self._check_wgmma()
        return None

    def _check_wgmma(self) -> Optional[str]:
        """The fixed part of a warpgroup fragment (m64nNk16, rows along dimension 0): each warp of a
        warpgroup owns 16 rows, lane ``4g + t`` holds columns ``2t, 2t + 1`` of rows ``g`` and
        ``g + 8``."""
        if len(self.shape) != 2:
            return f"a {self.kind} layout is of a 2-D block, not of shape {list(self.shape)}"
        if self.lane_bits != WGMMA_LANE_BITS:
            return f"a {self.kind} layout's lane bits are {_bits_text(WGMMA_LANE_BITS)}"
        if self.warp_bits[:2] != WGMMA_WARP_BITS:
            return f"a {self.kind} layout's first two warp bits are {_bits_text(WGMMA_WARP_BITS)} (a warpgroup of 4)"
        if self.reg_bits[:2] != WGMMA_REG_BITS:
            return f"a {self.kind} layout's first two register bits are {_bits_text(WGMMA_REG_BITS)}"
        return None


_BIT = re.compile(r"^(\d+):(\d+)$")


def _parse_bits(text: str) -> tuple:
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")):
        raise ValueError(f"expected [bits], found {text!r}")
    bits = []
    for part in filter(None, (p.strip() for p in text[1:-1].split(","))):
        if part == "_":
            bits.append(None)
            continue
        match = _BIT.match(part)
        if match is None:
            raise ValueError(f"expected dim:weight or _, found {part!r}")
        bits.append((int(match.group(1)), int(match.group(2))))
    return tuple(bits)


# shared-memory operand tiles ------------------------------------------------------------------------
@dataclass(frozen=True)
class SharedTile(Encoding):
    """A block in shared memory in Hopper's swizzled layout (``#cuda.nvmma<swizzle=W[, transposed]>``):
    the last two dimensions are the tile, whose contiguous dimension (the last one, or the one before
    it when ``transposed``) is cut into column blocks of ``swizzle`` bytes, each block's rows one after
    another, the 16-byte units of a row exchanged by the row's number (PTX's ``Swizzle<log2(W/16), 4,
    3>``); leading dimensions (a ring's slots, a batch) are whole tiles, each 1024-byte aligned. The
    element size is the block's."""

    swizzle: int  # bytes: 128, 64 or 32
    transposed: bool = False  # False: the last dimension is contiguous; True: the one before it

    SWIZZLES: ClassVar[tuple[int, ...]] = (128, 64, 32)

    def text(self) -> str:
        return f"#cuda.nvmma<swizzle={self.swizzle}" + (", transposed>" if self.transposed else ">")

    def check(self, value) -> Optional[str]:
        if self.swizzle not in self.SWIZZLES:
            return f"an nvmma tile's swizzle is 128, 64 or 32 bytes, not {self.swizzle}"
        shape = _block_shape(value)
        if shape is None or len(shape) < 2:
            return "an nvmma tile is a block of rank 2 or more"
        element = value.type.scalar
        if isinstance(element, T.pointer_type):
            return "an nvmma tile holds numbers, not pointers"
        size = max(1, element.primitive_bitwidth // 8)
        contiguous, other = (-2, -1) if self.transposed else (-1, -2)
        if shape[contiguous] * size % self.swizzle:
            return (f"an nvmma tile's contiguous dimension ({shape[contiguous]} x {size} bytes) is not a multiple "
                    f"of its swizzle ({self.swizzle} bytes)")
        if shape[other] % 8:
            return f"an nvmma tile's other dimension ({shape[other]}) is not a multiple of 8 rows"
        return None


_SWIZZLE = re.compile(r"^swizzle=(\d+)(,\s*transposed)?$")


def _parse_shared_tile(parameters: str) -> Encoding:
    match = _SWIZZLE.match(parameters.strip())
    if match is None:
        raise ValueError(f"an nvmma tile is written <swizzle=W> or <swizzle=W, transposed>, found <{parameters}>")
    return SharedTile(int(match.group(1)), match.group(2) is not None)


@_encoding("cuda")
def _parse_cuda(kind: str, parameters: str, shape: tuple) -> Encoding:
    """``#cuda.nvmma<...>`` is a shared tile; every other kind is a distributed layout."""
    if kind == "nvmma":
        return _parse_shared_tile(parameters)
    return _parse_distributed(kind, parameters, shape)


def _parse_distributed(kind: str, parameters: str, shape: tuple) -> Encoding:
    fields = {}
    for part in re.split(r",\s*(?=[a-z]+=)", parameters):
        name, _, bits = part.partition("=")
        fields[name.strip()] = _parse_bits(bits)
    if set(fields) != {"reg", "lane", "warp"}:
        raise ValueError(f"a layout has reg=, lane= and warp= bits, found {sorted(fields)}")
    reg = tuple(b for b in fields["reg"] if b is not None)
    return Distributed(kind, tuple(shape), reg, fields["lane"], fields["warp"])


# text --------------------------------------------------------------------------------------------------
_TEXT = re.compile(r"^#([a-z]+)\.([a-z_]+)(?:<(.*)>)?$", re.DOTALL)


def parse_encoding(text: str, shape: tuple) -> Encoding:
    """The encoding printed as ``text`` (``#prefix.name`` or ``#prefix.name<parameters>``) of a block
    of ``shape``."""
    match = _TEXT.match(text.strip())
    if match is None or match.group(1) not in ENCODINGS:
        raise ValueError(f"not an encoding: {text!r} (known prefixes: {', '.join(sorted(ENCODINGS))})")
    return ENCODINGS[match.group(1)](match.group(2), match.group(3) or "", tuple(shape))
