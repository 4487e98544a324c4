"""``tritium.language``: Triton's kernel language, imported as ``tl``."""
from __future__ import annotations

from ..compiler.ir.types import (  # noqa: F401
    block_type, dtype, pointer_type,
    int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float8e4b15, float8e4nv, float8e5, float16, bfloat16, float32, float64,
)
from . import math  # noqa: F401
from .core import builtin, const, constexpr, tensor  # noqa: F401
from .math import abs, clamp, div_rn, fdiv, fma, maximum, minimum, umulhi  # noqa: F401
from .standard import (  # noqa: F401
    PropagateNan, arange, assume, atomic_add, atomic_and, atomic_cas, atomic_max, atomic_min, atomic_or, atomic_xchg,
    atomic_xor, argmax, argmin, associative_scan, broadcast, broadcast_to, cast, cdiv, cumprod,
    cumsum, debug_barrier, device_assert, device_print, dot, expand_dims, full, full_like, load, max,
    max_constancy, max_contiguous, min, multiple_of, num_programs, permute, program_id, range, ravel,
    reduce, reshape, sigmoid, softmax, squeeze, static_assert, static_print, static_range, store, sum, trans,
    unsqueeze, view, where, xor_sum, zeros, zeros_like,
)
from .standard import (  # noqa: F401
    cat, flip, gather, histogram, inline_asm_elementwise, interleave, join, sort, split, swizzle2d, topk,
)
from .block_pointer import advance, make_block_ptr  # noqa: F401
from .tensor_descriptor import make_tensor_descriptor, tensor_descriptor, tensor_descriptor_type  # noqa: F401
from . import random  # noqa: F401
from .random import (  # noqa: F401
    pair_uniform_to_normal, philox, philox_impl, rand, rand4x, randint, randint4x, randn, randn4x,
    uint_to_uniform_float,
)
from . import extra  # noqa: F401
from .aggregate import aggregate_replace  # noqa: F401
from .dot_scaled import dot_scaled  # noqa: F401
from .debugging import expect_zero  # noqa: F401
from .atomics import atomic_load, atomic_poll, atomic_store  # noqa: F401
from .elementwise import map_elementwise  # noqa: F401
from .shorthands import (  # noqa: F401
    TRITON_MAX_TENSOR_NUMEL, add, condition, load_tensor_descriptor, mul, reduce_or, store_tensor_descriptor, sub,
    to_tensor,
)

globals().update(math._BY_OPCODE)  # tl.exp ... tl.ceil: one function per math opcode of the IR spec

bool_ = int1
pi32_t = pointer_type(int32)
void = None

int_types = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)

# tl.tuple, as Triton names the tuples kernels hold (defined last: it shadows the builtin here)
from .core import tl_tuple as tuple  # noqa: E402,F401,A001


def _tensor_member_functions():
    """The tl functions available as tensor methods (``x.sum(0)``, ``x.exp()``...)."""
    from . import standard

    names = ["sum", "max", "min", "argmax", "argmin", "reduce", "cumsum", "cumprod", "reshape", "view",
             "ravel", "broadcast_to", "expand_dims", "permute", "trans", "sigmoid", "softmax", "xor_sum",
             "associative_scan", "sort", "flip", "histogram", "gather", "split", "join", "interleave", "cast"]
    table = {name: getattr(standard, name) for name in names}
    table.update(atomic_load=atomic_load, atomic_store=atomic_store, atomic_poll=atomic_poll)
    for name in [*math._BY_OPCODE, "abs", "fma", "umulhi"]:
        table[name] = getattr(math, name)
    return table
