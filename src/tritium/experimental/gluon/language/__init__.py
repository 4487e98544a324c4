"""``triton.experimental.gluon.language`` (as ``gl``): the names kernel signatures use at
definition time (``gl.constexpr``, the dtypes). Gluon kernels never run here (see ``gluon``), so
their bodies' other names (layouts, shared memory) are not provided."""
from __future__ import annotations

from ....compiler.ir.types import (  # noqa: F401
    block_type, dtype, pointer_type,
    int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float8e4nv, float8e5, float16, bfloat16, float32, float64,
)
from ....language.core import constexpr, tensor  # noqa: F401
