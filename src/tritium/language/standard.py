"""The rest of ``tl``: creation, memory, shapes, reductions, scans and dot (hints and debugging:
``debugging.py``).

Names, signatures and defaults follow Triton's documentation of ``triton.language``.
"""
from __future__ import annotations

import builtins
import enum
import warnings

from ..compiler.ir import types as T
from .core import builtin, constexpr, constexpr_function, tensor, unwrap, _semantic
from . import block_pointer as _block_pointer
from . import math as _math
from .debugging import (  # noqa: F401  (part of this module's names)
    assume, debug_barrier, device_assert, device_print, max_constancy, max_contiguous, multiple_of, static_assert,
    static_print)


@constexpr_function
def _log2(i):
    """The base-2 logarithm of the positive integer ``i``, rounded down (Triton's constexpr helper,
    which Inductor's sort and scan helpers call)."""
    log2 = 0
    n = i
    while n > 1:
        n >>= 1
        log2 += 1
    return log2


@constexpr_function
def _is_power_of_two(i):
    """Whether the integer ``i`` is a power of two."""
    return i > 0 and (i & (i - 1)) == 0


class PropagateNan(enum.Enum):
    NONE = "none"
    ALL = "all"


# program structure -------------------------------------------------------------------------
@builtin
def program_id(axis):
    """The index of the running program along ``axis`` (0, 1 or 2)."""
    return _semantic().program_id(axis)


@builtin
def num_programs(axis):
    """The number of programs launched along ``axis``."""
    return _semantic().num_programs(axis)


@builtin
def arange(start, end):
    """A block of consecutive int32 values ``[start, end)``; both bounds must be constexprs."""
    return _semantic().arange(start, end)


@builtin
def full(shape, value, dtype):
    """A block of ``shape`` filled with ``value`` of ``dtype``."""
    return _semantic().full(shape, value, dtype)


@builtin
def zeros(shape, dtype):
    return _semantic().full(shape, 0, dtype)


@builtin
def zeros_like(input):
    input = _semantic().to_tensor(input)
    return _semantic().full(T.shape_of(input.type), 0, input.dtype)


@builtin
def full_like(input, value):
    input = _semantic().to_tensor(input)
    return _semantic().full(T.shape_of(input.type), value, input.dtype)


# memory ---------------------------------------------------------------------------------------
@builtin
def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False):
    """Loads the elements ``pointer`` points to; lanes where ``mask`` is false take ``other``.
    Through a block pointer, ``boundary_check`` lists the dimensions to mask and
    ``padding_option`` ("zero" or "nan") what masked lanes read (see block_pointer.py)."""
    if isinstance(pointer, _block_pointer.BlockPointer):
        if unwrap(mask) is not None or unwrap(other) is not None:
            raise ValueError("mask and other cannot be given when loading through a block pointer; "
                             "use boundary_check=(dims...) and padding_option='zero' or 'nan'")
        return _block_pointer.load_block(pointer, boundary_check, padding_option, cache_modifier, eviction_policy)
    if unwrap(boundary_check) or unwrap(padding_option):
        raise ValueError("boundary_check and padding_option apply to block pointers (tl.make_block_ptr) only; "
                         "with a tensor of pointers, pass mask= and other=")
    return _semantic().load(pointer, unwrap(mask) if not isinstance(mask, tensor) else mask, other, cache_modifier,
                            eviction_policy, volatile)


@builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    """Stores ``value`` where ``pointer`` points, in lanes where ``mask`` is true. Through a block
    pointer, ``boundary_check`` lists the dimensions whose out-of-bounds lanes are not written."""
    if isinstance(pointer, _block_pointer.BlockPointer):
        if unwrap(mask) is not None:
            raise ValueError("mask cannot be given when storing through a block pointer; use boundary_check=(dims...)")
        return _block_pointer.store_block(pointer, value, boundary_check, cache_modifier, eviction_policy)
    if unwrap(boundary_check):
        raise ValueError("boundary_check applies to block pointers (tl.make_block_ptr) only; "
                         "with a tensor of pointers, pass mask=")
    return _semantic().store(pointer, value, mask, cache_modifier, eviction_policy)


def _atomic(kind: str):
    def fn(pointer, val, mask=None, sem=None, scope=None):
        return _semantic().atomic_rmw(kind, pointer, val, mask, sem, scope)

    fn.__name__ = fn.__qualname__ = f"atomic_{kind}"
    fn.__doc__ = (f"Atomically applies {kind} of ``val`` to the memory ``pointer`` points at, in lanes where "
                  "``mask`` holds; returns the previous values.")
    return builtin(fn)  # named first: Python's argument errors name the function


atomic_add = _atomic("add")
atomic_max = _atomic("max")
atomic_min = _atomic("min")
atomic_and = _atomic("and")
atomic_or = _atomic("or")
atomic_xor = _atomic("xor")
atomic_xchg = _atomic("xchg")


@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    """Atomically stores ``val`` where memory equals ``cmp``; returns the previous values."""
    return _semantic().atomic_cas(pointer, cmp, val, sem, scope)


# elementwise ----------------------------------------------------------------------------------
@builtin
def where(condition, x, y):
    """Per lane: ``x`` where ``condition`` is true, else ``y``."""
    return _semantic().where(condition, x, y)


@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False):
    return _semantic().cast(input, unwrap(dtype), unwrap(fp_downcast_rounding), bool(unwrap(bitcast)))


@builtin
def cdiv(x, div):
    """Ceiling division ``(x + div - 1) // div``."""
    if not isinstance(x, tensor) and not isinstance(div, tensor):
        return constexpr((unwrap(x) + unwrap(div) - 1) // unwrap(div))
    return (x + div - 1) // div


@builtin
def sigmoid(x):
    """``1 / (1 + exp(-x))`` (fp32/fp64, like tl.exp)."""
    return 1 / (1 + _math.exp(-_semantic().to_tensor(x)))


@builtin
def softmax(x, dim=None, *, keep_dims=None, ieee_rounding=False):
    """``exp(x - max) / sum(exp(x - max))`` along ``dim`` (0 by default, not the last axis); the
    result has ``x``'s shape. ``keep_dims`` and ``ieee_rounding`` must be passed by keyword;
    ``keep_dims`` is deprecated and ignored, as in Triton, and warns when given."""
    sem = _semantic()
    if unwrap(keep_dims) is not None:
        _warn_at_kernel_line("The keep_dims argument to tl.softmax is deprecated and ignored; softmax always "
                             "preserves the input shape.")
    x = sem.to_tensor(x)
    axis = 0 if unwrap(dim) is None else dim
    z = x - max(x, axis, keep_dims=True)
    num = _math.exp(z)
    den = sum(num, axis, keep_dims=True)
    return _math.fdiv(num, den, ieee_rounding)


def _warn_at_kernel_line(message: str, category=UserWarning):
    """A Python warning attributed to the kernel line being compiled (when it is known)."""
    loc = _semantic().builder.loc
    if loc is None:
        warnings.warn(message, category, stacklevel=3)
    else:
        warnings.warn_explicit(message, category, loc.file, loc.line)


# shapes ------------------------------------------------------------------------------------------
@builtin
def reshape(input, *shape, can_reorder=False):
    shape = _shape_args(shape)
    return _semantic().reshape(input, shape, unwrap(can_reorder))


def _shape_args(shape):
    if len(shape) == 1 and isinstance(unwrap(shape[0]), (tuple, list)):
        return tuple(unwrap(s) for s in unwrap(shape[0]))
    return tuple(unwrap(s) for s in shape)


@builtin
def view(input, *shape):
    return _semantic().reshape(input, _shape_args(shape), True)


@builtin
def ravel(x, can_reorder=False):
    x = _semantic().to_tensor(x)
    return _semantic().reshape(x, (x.numel.value,))


@builtin
def squeeze(x, dim):
    """Removes the dimension ``dim`` (negative counts from the end), which must have size 1."""
    sem = _semantic()
    x = sem.to_tensor(x)
    shape = T.shape_of(x.type)
    dim = sem._static_int(dim, "tl.squeeze's dim")
    if not -len(shape) <= dim < len(shape):
        raise ValueError(f"tl.squeeze dim {dim} is out of range for a block of rank {len(shape)}")
    dim %= len(shape)
    if shape[dim] != 1:
        raise ValueError(f"tl.squeeze can only remove a dimension of size 1; dimension {dim} of shape "
                         f"{list(shape)} has size {shape[dim]}")
    return sem.reshape(x, shape[:dim] + shape[dim + 1:])


@builtin
def unsqueeze(x, dim):
    """Inserts a dimension of size 1 at ``dim`` of the result (negative counts from the end of
    the result), the inverse of ``squeeze``."""
    sem = _semantic()
    x = sem.to_tensor(x)
    shape = T.shape_of(x.type)
    rank = len(shape) + 1
    dim = sem._static_int(dim, "tl.unsqueeze's dim")
    if not -rank <= dim < rank:
        raise ValueError(f"tl.unsqueeze dim {dim} is out of range for a result of rank {rank}")
    dim %= rank
    return sem.reshape(x, shape[:dim] + (1,) + shape[dim:])


@builtin
def broadcast_to(input, *shape):
    return _semantic().broadcast_to(input, _shape_args(shape))


@builtin
def broadcast(input, other):
    sem = _semantic()
    return sem.broadcast_pair(sem.to_tensor(input), sem.to_tensor(other))


@builtin
def expand_dims(input, axis):
    return _semantic().expand_dims(input, axis)


@builtin
def permute(input, *dims):
    return _semantic().permute(input, _shape_args(dims))


@builtin
def trans(input, *dims):
    input = _semantic().to_tensor(input)
    dims = _shape_args(dims)
    if not dims:
        rank = len(input.shape)
        if rank < 2:
            raise ValueError("tl.trans needs a block of rank 2 or more")
        dims = tuple(builtins.range(rank - 2)) + (rank - 1, rank - 2)  # `range` here is tl.range
    return _semantic().permute(input, dims)


@builtin
def join(a, b):
    """Stacks ``a`` and ``b`` along a new minor dimension: shapes (4, 8) give (4, 8, 2); two scalars give (2,)."""
    return _semantic().join(a, b)


@builtin
def split(a):
    """The inverse of join: the two halves of a block whose last dimension has size 2."""
    return _semantic().split(a)


@builtin
def interleave(a, b):
    """Alternates the elements of ``a`` and ``b`` along their last dimension:
    ``join(a, b).reshape(a.shape[:-1] + [2 * a.shape[-1]])``."""
    sem = _semantic()
    c = sem.join(a, b)
    shape = c.type.shape
    if len(shape) == 1:
        return c
    return sem.reshape(c, shape[:-2] + (2 * shape[-2],))


@builtin
def cat(input, other, can_reorder=False, dim=0):
    """Concatenates two blocks along ``dim``. The result's dimensions must be powers of two, so
    the two sizes along ``dim`` are normally equal. Elements keep their order (a valid choice
    also when ``can_reorder`` allows the compiler to reorder them)."""
    return _semantic().cat(input, other, unwrap(can_reorder), dim)


@builtin
def flip(x, dim=None):
    """Reverses ``x`` along ``dim`` (the last dimension by default)."""
    return _semantic().flip(x, dim)


@builtin
def sort(x, dim=None, descending=False):
    """Sorts ``x`` along its last dimension (``dim`` may only name that one, as in Triton), with
    the bitonic compare-and-swap network Triton runs, so NaNs and signed zeros end up where a GPU
    puts them."""
    return _semantic().sort(x, dim, descending)


@builtin
def topk(x, k, dim=None, descending=True):
    """The ``k`` largest elements along the last dimension (the ``k`` smallest when
    ``descending`` is false), in sorted order: largest first, or smallest first. ``k`` is a
    power of two no larger than that dimension."""
    return _semantic().topk(x, k, dim, descending)


@builtin
def gather(src, index, axis):
    """``out[..., i, ...] = src[..., index[..., i, ...], ...]`` along ``axis``: index has src's shape
    except along ``axis``; the result has index's shape. An index out of range is a run-time error."""
    return _semantic().gather(src, index, axis)


@builtin
def histogram(input, num_bins, mask=None):
    """Counts of the values 0 .. num_bins-1 in the 1-D integer block ``input`` (int32), over the
    lanes where ``mask`` holds; values outside that range are not counted."""
    return _semantic().histogram(input, num_bins, mask)


@builtin
def swizzle2d(i, j, size_i, size_j, size_g):
    """Maps the indices (i, j) of a row-major size_i x size_j grid to those of a grid that is
    column-major within groups of size_g rows (the last group may be shorter): the tile order
    that improves L2 reuse in a matmul."""
    linear = i * size_j + j
    group_size = size_g * size_j
    first_row = (linear // group_size) * size_g
    rows = _math.minimum(size_i - first_row, size_g)
    within = linear % group_size
    return first_row + within % rows, within // rows


@builtin
def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
    """Inline PTX applied to ``pack`` elements of the (broadcast) ``args`` at a time, one result per
    dtype of ``dtype`` (a tuple of dtypes gives a tuple of results). The CUDA backend emits the asm;
    the host backends run a table of PTX instructions emulated with tl operations
    (``language/inline_asm.py``) and refuse other asm at its line."""
    sem = _semantic()
    asm, constraints, pack, is_pure = unwrap(asm), unwrap(constraints), unwrap(pack), unwrap(is_pure)
    if not isinstance(asm, str) or not isinstance(constraints, str):
        raise TypeError("inline_asm_elementwise takes the asm and its constraints as strings")
    if not isinstance(pack, int) or isinstance(pack, bool) or pack < 1:
        raise ValueError(f"pack must be a positive constexpr integer, got {pack!r}")
    dtype = unwrap(dtype)
    dtypes = [unwrap(d) for d in dtype] if isinstance(dtype, (tuple, list)) else [dtype]
    if not dtypes or not all(isinstance(d, T.dtype) for d in dtypes):
        raise TypeError(f"inline_asm_elementwise needs one or more result dtypes, got {dtype!r}")
    values = [sem.to_tensor(a) for a in unwrap(args)]
    if not values:
        raise ValueError("inline_asm_elementwise needs at least one argument")
    values = sem._broadcast_all(values)
    shape = T.shape_of(values[0].type)
    types = [T.block_type(d, shape) if shape else d for d in dtypes]
    op = sem._create("inline_asm", values, types,
                     {"asm": asm, "constraints": constraints, "pack": pack, "pure": bool(is_pure)})
    results = [tensor(r, ty) for r, ty in zip(op.results, types)]
    return tuple(results) if isinstance(dtype, (tuple, list)) else results[0]


# reductions ---------------------------------------------------------------------------------------
def _sum_dtype(in_dtype, dtype):
    dtype = unwrap(dtype)
    if dtype is not None:
        return dtype
    if in_dtype.is_bool() or (in_dtype.is_int_signed() and in_dtype.int_bitwidth < 32):
        return T.int32
    if in_dtype.is_int_unsigned() and in_dtype.int_bitwidth < 32:
        return T.uint32
    return None


@builtin
def sum(input, axis=None, keep_dims=False, dtype=None):
    """The sum along ``axis`` (all elements when None), combined in a tree."""
    sem = _semantic()
    input = sem.to_tensor(input)
    out = _sum_dtype(input.dtype, dtype)
    if out is not None:
        input = sem.cast(input, out)
    return sem.reduce([input], axis, "sum", keep_dims=unwrap(keep_dims))[0]


def _widen_for_minmax(input):
    sem = _semantic()
    if input.dtype.primitive_bitwidth < 32:
        return sem.cast(input, T.float32 if input.dtype.is_floating() else T.int32)
    return input


def _extreme(kind: str, input, axis, return_indices, keep_dims):
    """tl.max / tl.min: narrow types are widened to 32 bits first, as in Triton, unless indices are
    asked for (then the value keeps its type, next to the index of its first occurrence)."""
    sem = _semantic()
    input = sem.to_tensor(input)
    keep_dims = unwrap(keep_dims)
    if unwrap(return_indices):
        value = sem.reduce([input], axis, kind, keep_dims=keep_dims)[0]
        index = sem.reduce([input], axis, f"arg{kind}", keep_dims=keep_dims, result_dtypes=[T.int32])[0]
        return value, index
    return sem.reduce([_widen_for_minmax(input)], axis, kind, keep_dims=keep_dims)[0]


@builtin
def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    return _extreme("max", input, axis, return_indices, keep_dims)


@builtin
def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    return _extreme("min", input, axis, return_indices, keep_dims)


@builtin
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    """The index of the largest element along ``axis`` (the first one on ties)."""
    return _semantic().reduce([input], axis, "argmax", keep_dims=unwrap(keep_dims), result_dtypes=[T.int32])[0]


@builtin
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    return _semantic().reduce([input], axis, "argmin", keep_dims=unwrap(keep_dims), result_dtypes=[T.int32])[0]


@builtin
def xor_sum(input, axis=None, keep_dims=False):
    sem = _semantic()
    input = sem.to_tensor(input)
    if not input.dtype.is_int():
        raise TypeError(f"xor_sum needs integers, got {input.dtype}")
    return sem.reduce([input], axis, "xor", keep_dims=unwrap(keep_dims))[0]


@builtin
def reduce(input, axis, combine_fn, keep_dims=False):
    """Reduce ``input`` (a tensor or a tuple of tensors) along ``axis`` with a @jit ``combine_fn``."""
    sem = _semantic()
    single = not isinstance(input, (tuple, list))
    inputs = [sem.to_tensor(x) for x in ([input] if single else input)]
    region = sem.combine_region(unwrap(combine_fn), [x.dtype for x in inputs])
    results = sem.reduce(inputs, axis, "custom", combine=region, keep_dims=unwrap(keep_dims))
    return results[0] if single else tuple(results)


@builtin
def cumsum(input, axis=0, reverse=False, dtype=None):
    sem = _semantic()
    input = _bf16_to_fp32(sem.to_tensor(input))
    out = _sum_dtype(input.dtype, dtype)
    if out is not None:
        input = sem.cast(input, out)
    return sem.scan(input, axis, "sum", reverse)[0]


@builtin
def cumprod(input, axis=0, reverse=False):
    """The running product along ``axis``; bf16 is computed (and returned) in fp32, as in Triton."""
    sem = _semantic()
    return sem.scan(_bf16_to_fp32(sem.to_tensor(input)), axis, "prod", reverse)[0]


def _bf16_to_fp32(x):
    return _semantic().cast(x, T.float32) if x.dtype.is_bf16() else x


@builtin
def associative_scan(input, axis, combine_fn, reverse=False):
    sem = _semantic()
    single = not isinstance(input, (tuple, list))
    inputs = [sem.to_tensor(x) for x in ([input] if single else input)]
    region = sem.combine_region(unwrap(combine_fn), [x.dtype for x in inputs])
    results = sem.scan(inputs, axis, "custom", reverse, combine=region)
    return results[0] if single else tuple(results)


# dot -------------------------------------------------------------------------------------------------
@builtin
def dot(input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=T.float32, **removed):
    """Matrix product of two blocks, accumulated into ``acc`` (fp32 by default)."""
    if removed:
        name = next(iter(removed))
        error = TypeError(f"dot() got an unexpected keyword argument '{name}'")
        if name in ("trans_a", "trans_b"):
            error.hint = (f"tl.dot has no {name} in current Triton (Triton 2.0 had it): transpose the operand "
                          f"instead, e.g. tl.dot(q, tl.trans(k)) or tl.dot(q, k.T)")
        raise error
    return _semantic().dot(input, other, acc, input_precision, allow_tf32, max_num_imprecise_acc, out_dtype)


# loops -----------------------------------------------------------------------------------------------
class range:
    """A run-time loop ``for i in tl.range(start, end, step)``. The scheduling options (software
    pipelining depth, unrolling, flattening, warp specialization) are kept on the IR's ``for`` for
    compiled backends; they never change what the loop computes."""

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False):
        if arg2 is None:
            self.start, self.end = 0, arg1
        else:
            self.start, self.end = arg1, arg2
        self.step = 1 if step is None else step
        self.options = {
            "num_stages": None if unwrap(num_stages) is None else int(unwrap(num_stages)),
            "loop_unroll_factor": None if unwrap(loop_unroll_factor) is None else int(unwrap(loop_unroll_factor)),
            "flatten": bool(unwrap(flatten)), "warp_specialize": bool(unwrap(warp_specialize)),
            "disallow_acc_multi_buffer": bool(unwrap(disallow_acc_multi_buffer)),
        }


class static_range:
    """A loop unrolled at compile time; bounds must be constexprs."""

    def __init__(self, arg1, arg2=None, step=None):
        if arg2 is None:
            self.start, self.end = 0, arg1
        else:
            self.start, self.end = arg1, arg2
        self.step = 1 if step is None else step
