"""The tile IR's contract: one entry per opcode, saying what it takes, what it gives and what it means.

Each ``OpSpec`` names the operands (optional ones are named in the printed IR, never implied by
a count or a flag), the attributes with their kinds and defaults, the rule that gives the result
types, the regions, the effects on memory and the outside world, and the traits passes rely on.
``semantics`` writes out the edge cases: the places where LLVM gives poison or undefined
behaviour (shifts past the bit width, float -> int of NaN, integer division by zero, ``INT_MIN //
-1``), so every backend must emit the guard that gives the result stated here. The interpreter
is the executable form of these sentences; compiled backends are tested against it.

The builder takes operand names from here, the verifier checks every op against its entry, the
printer and parser use the names and region labels, and passes read effects and traits. Groups of
opcodes (the math functions, the ops that read memory through a pointer, those debug mode checks,
...) are traits and effects too: ``opcodes_with`` lists a group, so that no list of opcodes is
written out anywhere else.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

# Effects: what executing an op does besides computing its results.
READS = "reads"  # reads global memory
WRITES = "writes"  # writes global memory
SYNCHRONIZES = "synchronizes"  # orders memory operations between threads or programs
REPORTS = "reports"  # observable outside the kernel: prints, or stops it with an error
MAY_HANG = "may_hang"  # may run forever (a spin wait on memory): a hang must not be optimized away
EFFECTS = frozenset({READS, WRITES, SYNCHRONIZES, REPORTS, MAY_HANG})

# Traits.
ELEMENTWISE = "elementwise"  # applies lane by lane; operands and result share one shape
COMMUTATIVE = "commutative"  # the two operands may be swapped
PURE = "pure"  # no effects: may be removed when unused, merged with an equal op, moved out of a loop
TERMINATOR = "terminator"  # ends a region
# Stops the kernel with an error for some operand values (gather's index out of range): it may be
# removed when unused or merged with an equal op, but never run where the program would not run it.
MAY_RAISE = "may_raise"
# Groups of ops, each with what its members share (``opcodes_with`` lists a group).
MATH = "math"  # a function of tl.math of one float operand, the result of its type: exp ... ceil
FP_ONLY = "fp_only"  # Triton accepts fp32 and fp64 operands only: others are refused, naming the dtype
# Float results within runtime.validate's ulp bound of the interpreter's, not bit for bit: a backend
# may use its own math library (a GPU's approximate instructions) or sum in another order (dot).
INEXACT = "inexact"
# Computes nothing: each result lane is a copy of an operand lane of the same type, picked by the
# lane's position alone, or is fixed by its position (constant, arange). A lane costs a read.
COPIES = "copies"
# One operand's elements under another index: each result dimension is an operand dimension (moved
# or repeated) or a new one, in order along it. What a mask's bound on an index survives.
VIEW = "view"
# The operand repeated (a scalar to a block, a block along its size-1 dimensions): an operand that
# is the same in every lane gives a result that is too.
REPEATS = "repeats"
# On a GPU, Triton passes its operands between threads through shared memory; a host backend's
# metadata.shared estimates the bytes from these ops (compiler/compiled_kernel.py).
SHARED_MEMORY = "shared_memory"
# Debug mode (TRITIUM_DEBUG=1) stops the kernel where an int32 result wraps (Triton's overflow sanitizer).
OVERFLOW_CHECKED = "overflow_checked"
# Debug mode stops the kernel where an integer operand divides by zero.
ZERO_DIVISOR_CHECKED = "zero_divisor_checked"
# Made by a backend's own passes from ops of the tile IR (the CUDA backend's software pipeliner), never by
# the frontend: the backends that do not make them never see them.
TARGET_PASS = "target_pass"
TRAITS = frozenset({ELEMENTWISE, COMMUTATIVE, PURE, TERMINATOR, MAY_RAISE, MATH, FP_ONLY, INEXACT, COPIES, VIEW,
                    REPEATS, SHARED_MEMORY, OVERFLOW_CHECKED, ZERO_DIVISOR_CHECKED, TARGET_PASS})

_REQUIRED = object()


@dataclass(frozen=True)
class Operand:
    """One operand slot. ``optional``: may be absent (printed as ``name=%v`` when present);
    ``variadic``: takes every remaining operand, zero or more."""

    name: str
    optional: bool = False
    variadic: bool = False


@dataclass(frozen=True)
class Attr:
    """An attribute: ``kind`` is one of the names in ``ATTR_KINDS``; ``choices`` limits a ``str``
    attribute; an attribute without a default must be present."""

    name: str
    kind: str
    default: Any = _REQUIRED
    choices: tuple = ()

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED


# How attribute values are written: the verifier checks each value against its kind.
ATTR_KINDS = frozenset({"int", "bool", "str", "ints", "dtype", "scalar"})


@dataclass(frozen=True)
class OpSpec:
    opcode: str
    operands: tuple[Operand, ...]
    attrs: tuple[Attr, ...]
    result: str  # the name of a result-type rule in verifier.RESULT_RULES
    regions: tuple[str, ...] = ()  # region labels, in order (printed as ^label)
    effects: frozenset = frozenset()
    traits: frozenset = frozenset()
    semantics: str = ""

    def attr(self, name: str) -> Optional[Attr]:
        for a in self.attrs:
            if a.name == name:
                return a
        return None

    def operand_names(self, count: int) -> tuple[str, ...]:
        """Slot names for ``count`` operands given in spec order: the required slots, then as
        many optional ones (in order) as the count leaves room for, then the variadic tail."""
        fixed = [slot for slot in self.operands if not slot.variadic]
        required = sum(1 for slot in fixed if not slot.optional)
        spare = count - required
        names: list[str] = []
        for slot in self.operands:
            if slot.variadic:
                names.extend([slot.name] * (count - len(names)))
                break
            if slot.optional:
                if spare <= 0:
                    continue
                spare -= 1
            names.append(slot.name)
        return tuple(names)


SPEC: dict[str, OpSpec] = {}


def _op(opcode: str, operands=(), attrs=(), result: str = "none", regions=(), effects=(), traits=(),
        semantics: str = "") -> None:
    assert opcode not in SPEC, opcode
    slots = tuple(o if isinstance(o, Operand) else Operand(o) for o in operands)
    SPEC[opcode] = OpSpec(opcode, slots, tuple(attrs), result, tuple(regions), frozenset(effects),
                          frozenset(traits), semantics)


def _opt(name: str) -> Operand:
    return Operand(name, optional=True)


def _many(name: str) -> Operand:
    return Operand(name, variadic=True)


_PURE = (PURE,)
_ELEMENTWISE = (PURE, ELEMENTWISE)
_COMMUTATIVE = (PURE, ELEMENTWISE, COMMUTATIVE)
_COPIES = (PURE, COPIES)

# values --------------------------------------------------------------------------------------------
_op("constant", (), [Attr("value", "scalar")], "constant", traits=_COPIES,
    semantics="A scalar of the result type: a bool for i1, an int (in range) for integers, a float "
              "(NaN and infinities allowed; rounded once to nearest even to the result type, not saturated) for "
              "floats. Blocks of constants are splats of a constant.")
_op("arange", (), [Attr("start", "int"), Attr("end", "int")], "arange", traits=_COPIES,
    semantics="The i32 block [start, start + 1, ..., end - 1]; end - start is a power of two.")
_op("program_id", (), [Attr("axis", "int", choices=(0, 1, 2))], "i32", traits=_PURE,
    semantics="This program's index along grid axis `axis`, 0 <= id < grid[axis].")
_op("num_programs", (), [Attr("axis", "int", choices=(0, 1, 2))], "i32", traits=_PURE,
    semantics="The launch grid's size along `axis`.")

_op("special_register", (), [Attr("name", "str", choices=("globaltimer", "smid"))], "special_register",
    semantics="A hardware register of the GPU running the program, read where the op is (never merged with "
              "another read, nor moved out of a loop): globaltimer, an i64 count of nanoseconds (on the host "
              "backends, the host's real-time clock: nanoseconds since the Unix epoch); smid, the i32 index of the "
              "multiprocessor running the program (on the host backends, the index of the CPU core running it).")

# shapes --------------------------------------------------------------------------------------------
_op("splat", ("value",), [], "splat", traits=_COPIES + (VIEW, REPEATS),
    semantics="Every lane of the result block holds the scalar operand.")
_op("broadcast", ("value",), [], "broadcast", traits=_COPIES + (VIEW, REPEATS),
    semantics="Numpy broadcasting of a block to a shape of the same rank: size-1 dimensions repeat.")
_op("reshape", ("value",), [Attr("shape", "ints")], "reshape", traits=_COPIES + (VIEW,),
    semantics="Row-major reinterpretation of the elements in a shape of the same element count; shape () "
              "turns a one-element block into a scalar.")
_op("permute", ("value",), [Attr("order", "ints")], "permute", traits=_COPIES + (VIEW, SHARED_MEMORY),
    semantics="Result dimension i is operand dimension order[i] (numpy.transpose).")
_op("join", ("lhs", "rhs"), [], "join", traits=_COPIES,
    semantics="Stacks two blocks of one shape along a new minor dimension of size 2.")
_op("split", ("value",), [], "split", traits=_COPIES,
    semantics="The inverse of join: the minor dimension (size 2) split into two results.")
_op("cat", ("lhs", "rhs"), [Attr("axis", "int")], "cat", traits=_COPIES,
    semantics="Concatenation along `axis`; the two blocks agree in every other dimension.")
_op("flip", ("value",), [Attr("axis", "int")], "same_as_operand", traits=_COPIES,
    semantics="Reverses the order of elements along `axis`.")
_op("sort", ("value",), [Attr("descending", "bool")], "same_as_operand", traits=_PURE,
    semantics="Sorts along the last dimension with a bitonic network in which each lane decides alone: at "
              "each step a lane takes its partner's value when (own > partner) != (descending xor the lane is "
              "the pair's right one). A pair that compares false both ways (a NaN, or -0 beside +0) is merged, "
              "not swapped: the right lane copies the left, so values can be duplicated and lost (ascending "
              "[nan, 1, 3, 2, 0, 5, 4, 7] gives eight NaNs), as Triton 3.6 on an H200 does.")
_op("gather", ("source", "index"), [Attr("axis", "int")], "gather", traits=(PURE, MAY_RAISE),
    semantics="result[i...] = source[i... with index[i...] in place of the coordinate along axis]. An index "
              "outside the source's extent along axis is an error of the kernel (a run-time check).")
_op("histogram", ("value", _opt("mask")), [Attr("num_bins", "int")], "histogram", traits=_PURE,
    semantics="Counts of value == b for b in [0, num_bins); values outside that range (and masked-off lanes) "
              "are not counted.")

# casts ---------------------------------------------------------------------------------------------
_op("cast", ("value",), [Attr("to", "dtype"), Attr("rounding", "str", None, ("rtne", "rtz"))], "cast",
    traits=_ELEMENTWISE,
    semantics="Value conversion. int -> int: wraps to the target width (sign- or zero-extends by the source's "
              "signedness). Anything -> i1: x != 0. float -> int: truncates toward zero and saturates: NaN -> 0, "
              "values >= 2**(bits-1) (unsigned: 2**bits) -> the maximum, below the minimum -> the minimum (PTX "
              "cvt.rzi.sat). float -> narrower float: rounds to nearest even, or toward zero with rounding=rtz; "
              "to fp8 (e4m3fn, e5m2) it saturates to the largest finite value (448, 57344) instead of giving inf "
              "or NaN; fp64 -> bf16 and fp64 -> fp8 round once (not through fp32). float -> wider float: exact. "
              "int -> float: "
              "rounds to nearest even (64-bit integers to bf16 once, not twice); to fp8 saturates. fp8e4b15 (every "
              "code a number, fp16's bits shifted): from it exact; to it, whatever the rounding, the magnitude is "
              "clipped to 1.75 (NaN too: +1.75 from fp32, signed from fp16) and rounded to nearest, ties away from "
              "zero, as Triton's conversions on a GPU do.")
_op("bitcast", ("value",), [], "bitcast", traits=_ELEMENTWISE,
    semantics="Reinterprets the bits as the result's element type of the same width (or another pointer type).")
_op("ptr_to_int", ("value",), [], "ptr_to_int", traits=_ELEMENTWISE,
    semantics="The pointer's byte address as an integer (i64).")
_op("int_to_ptr", ("value",), [], "int_to_ptr", traits=_ELEMENTWISE,
    semantics="The i64 byte address as a pointer.")

# elementwise arithmetic ----------------------------------------------------------------------------------
_I1_WRAPS = " On i1 it works modulo 2 (add and sub are xor, mul is and)."
_op("add", ("lhs", "rhs"), [], "same_as_operands", traits=_COMMUTATIVE + (OVERFLOW_CHECKED,),
    semantics="Integers wrap modulo 2**bits (never poison: a backend emits no nsw/nuw)." + _I1_WRAPS +
              " Floats: IEEE addition, rounded to nearest even; fp16/bf16/fp8 results rounded to their type.")
_op("sub", ("lhs", "rhs"), [], "same_as_operands", traits=_ELEMENTWISE + (OVERFLOW_CHECKED,),
    semantics="As add." + _I1_WRAPS)
_op("mul", ("lhs", "rhs"), [], "same_as_operands", traits=_COMMUTATIVE + (OVERFLOW_CHECKED,),
    semantics="As add; never contracted with a following add into an fma unless the fma op is emitted." + _I1_WRAPS)
_op("div", ("lhs", "rhs"), [Attr("rounding", "str", "rn", ("rn", "full", "approx"))], "same_as_operands",
    traits=_ELEMENTWISE + (ZERO_DIVISOR_CHECKED,),
    semantics="Floats only in practice (the frontend casts integer true division to float first). IEEE division "
              "rounded to nearest (x/0 = +-inf, 0/0 = NaN). rounding=full is Triton's default `/` on fp32, an "
              "approximation within 2 ulp on a GPU (div.full.f32); the interpreter gives the correctly rounded "
              "quotient, inside that bound. rounding=approx (fp32 only: tl.fdiv(approx=True)) is div.approx.f32, "
              "x * (1 / y): within 2 ulp for 2**-126 <= |y| <= 2**126, where the interpreter gives the correctly "
              "rounded quotient; for |y| > 2**126 (infinities too) the result is x times a zero of y's sign "
              "(NaN for an infinite or NaN x), as the reciprocal underflows to zero on a GPU.")
_op("floordiv", ("lhs", "rhs"), [], "same_as_operands", traits=_ELEMENTWISE + (ZERO_DIVISOR_CHECKED,),
    semantics="Integer division truncating toward zero (C). x // 0 is all ones (-1 signed, the maximum unsigned), "
              "as an NVIDIA GPU gives. INT_MIN // -1 wraps to INT_MIN. Never undefined: backends guard both cases.")
_op("mod", ("lhs", "rhs"), [], "same_as_operands", traits=_ELEMENTWISE + (ZERO_DIVISOR_CHECKED,),
    semantics="Integers: C's remainder, the sign of the dividend; x % 0 is x; INT_MIN % -1 is 0. Floats: fmod "
              "(the sign of the dividend, exact).")
_op("and", ("lhs", "rhs"), [], "same_as_operands", traits=_COMMUTATIVE, semantics="Bitwise and.")
_op("or", ("lhs", "rhs"), [], "same_as_operands", traits=_COMMUTATIVE, semantics="Bitwise or.")
_op("xor", ("lhs", "rhs"), [], "same_as_operands", traits=_COMMUTATIVE, semantics="Bitwise xor.")
_op("shl", ("lhs", "rhs"), [], "same_as_operands", traits=_ELEMENTWISE,
    semantics="Shift left. A shift amount < 0 or >= the bit width (1 for i1) gives 0 (LLVM would give poison).")
_op("shr", ("lhs", "rhs"), [], "same_as_operands", traits=_ELEMENTWISE,
    semantics="Arithmetic shift right for signed types, logical for unsigned. An amount < 0 or >= the bit width "
              "(1 for i1) "
              "gives the sign fill: -1 for negative signed values, else 0.")
_op("minimum", ("lhs", "rhs"), [Attr("propagate_nan", "str", "none", ("none", "all"))], "same_as_operands",
    traits=_COMMUTATIVE,
    semantics="Integers: the smaller by the type's signedness. Floats: propagate_nan=none returns the other "
              "operand when one is NaN (fmin; NaN only if both are); all returns NaN if either is. Signed zeros "
              "are ordered -0 < +0: minimum(+0, -0) = -0.")
_op("maximum", ("lhs", "rhs"), [Attr("propagate_nan", "str", "none", ("none", "all"))], "same_as_operands",
    traits=_COMMUTATIVE,
    semantics="As minimum, mirrored: maximum(+0, -0) = +0.")
_op("clamp", ("value", "low", "high"), [Attr("propagate_nan", "str", "none", ("none", "all"))], "same_as_operands",
    traits=_ELEMENTWISE,
    semantics="minimum(maximum(value, low), high), each step as that op says: integers by the type's signedness "
              "(low > high gives high); floats NaN-ignoring unless propagate_nan=all, -0 < +0. tl.clamp emits it for "
              "integers; for floats it emits maximum then minimum, whose GPU instructions a backend chooses there.")
_op("umulhi", ("lhs", "rhs"), [], "same_as_operands", traits=_COMMUTATIVE,
    semantics="The high half of the double-width product of two integers (signedness of the type).")
_op("neg", ("value",), [], "same_as_operand", traits=_ELEMENTWISE + (OVERFLOW_CHECKED,),
    semantics="0 - x: integers wrap (neg INT_MIN = INT_MIN); on i1 it is the identity (mod 2); floats flip the sign "
              "bit (neg(+0) = -0, NaN stays NaN).")
_op("not", ("value",), [], "same_as_operand", traits=_ELEMENTWISE, semantics="Bitwise complement (i1: logical not).")
_op("abs", ("value",), [], "same_as_operand", traits=_ELEMENTWISE,
    semantics="Integers: |x| wrapping (abs INT_MIN = INT_MIN), unsigned: x. Floats: clears the sign bit.")
_op("fma", ("a", "b", "c"), [], "same_as_operands", traits=_ELEMENTWISE,
    semantics="a * b + c rounded once (fma.rn), for floats.")
_op("cmp", ("lhs", "rhs"), [Attr("predicate", "str", choices=("lt", "le", "gt", "ge", "eq", "ne"))], "cmp",
    traits=_ELEMENTWISE,
    semantics="An i1 block of the operands' shape. Integers compare by the type's signedness; pointers by address. "
              "Floats are ordered comparisons (false when either is NaN), except ne, which is unordered (true when "
              "either is NaN), as in C and Triton.")
_op("select", ("condition", "true_value", "false_value"), [], "select", traits=_ELEMENTWISE,
    semantics="Lane by lane, true_value where condition, else false_value. Both are evaluated; neither traps.")
_op("addptr", ("pointer", "offset"), [], "addptr", traits=_ELEMENTWISE,
    semantics="pointer + offset * sizeof(element), in bytes, offset sign-extended (unsigned: zero-extended) to 64 "
              "bits. Pointer arithmetic itself never faults; only the access through it is checked.")

_MATH = {  # name: (meaning, whether a backend may give other bits: see INEXACT)
    "exp": ("e**x", True), "exp2": ("2**x", True),
    "log": ("the natural logarithm (log 0 = -inf, log x<0 = NaN)", True), "log2": ("the base-2 logarithm", True),
    "sin": ("sine", True), "cos": ("cosine", True),
    "sqrt": ("the square root, Triton's default (sqrt.approx on a GPU for fp32)", True),
    "sqrt_rn": ("the correctly rounded square root", False), "rsqrt": ("1/sqrt(x)", True),
    "erf": ("the error function", True), "floor": ("rounds toward -inf", False), "ceil": ("rounds toward +inf", False),
}
for _name, (_meaning, _inexact) in _MATH.items():
    _op(_name, ("value",), [], "same_as_operand",
        traits=_ELEMENTWISE + (MATH, FP_ONLY) + ((INEXACT,) if _inexact else ()),
        semantics=f"{_meaning[0].upper() + _meaning[1:]}, elementwise, on fp32 or fp64. The interpreter evaluates fp32 "
                  "in fp64 and rounds once (within 0.5 ulp plus the fp64 library's error); a compiled backend states "
                  "its ulp bound against that result.")
_op("libdevice", (_many("args"),), [Attr("fn", "str"), Attr("symbol", "str")], "libdevice",
    traits=_ELEMENTWISE + (INEXACT,),
    semantics="The libdevice function `fn` (CUDA's __nv_<symbol>) elementwise; see docs/language.md for each one's "
              "accuracy. Operands share one shape; the result's element type is the signature's.")

_op("inline_asm", (_many("args"),), [Attr("asm", "str"), Attr("constraints", "str"), Attr("pack", "int"),
                                     Attr("pure", "bool")],
    "inline_asm", effects=(READS, WRITES),
    semantics="tl.inline_asm_elementwise: the PTX `asm` applied to `pack` elements of the operands at a time "
              "(operands share one shape; elements narrower than 32 bits packed into 32-bit registers, "
              "element 0 in the low bits), one result per dtype; $0.. name the results' registers, then "
              "the operands'; `constraints` are LLVM's. A GPU backend emits the asm; the host backends "
              "rewrite it first into the emulated instructions of language/inline_asm.py (the "
              "lower_inline_asm pass), and refuse other asm at its line. Its effects are unknown, so "
              "passes neither remove, merge nor move it.")

# memory --------------------------------------------------------------------------------------------
_CACHE = ("", ".ca", ".cg", ".cs", ".cv", ".wb", ".wt", ".lu")
_EVICT = ("", "evict_normal", "evict_first", "evict_last", "evict_unchanged", "no_allocate")
_op("load", ("pointer", _opt("mask"), _opt("other")),
    [Attr("cache_modifier", "str", "", _CACHE), Attr("eviction_policy", "str", "", _EVICT),
     Attr("volatile", "bool", False)],
    "load", effects=(READS,),
    semantics="Reads one element per lane through `pointer`. Lanes where mask is false read nothing and give "
              "`other` (undefined when other is absent; the interpreter gives 0). Every active lane must point "
              "inside the tensor its pointer was derived from: a stray lane is an OutOfBoundsError naming the "
              "program and offset (a GPU would fault or read garbage). cache_modifier, eviction_policy and "
              "volatile are hints for the memory system and never change the value read.")
_op("store", ("pointer", "value", _opt("mask")),
    [Attr("cache_modifier", "str", "", _CACHE), Attr("eviction_policy", "str", "", _EVICT)],
    "none", effects=(WRITES,),
    semantics="Writes value through pointer where mask (if any) is true; bounds as for load. When two lanes or "
              "programs store to one address without atomics, which value lands is unspecified (debug mode "
              "reports it as a race).")
_SEMS = ("acquire", "release", "acq_rel", "relaxed")
_SCOPES = ("gpu", "cta", "sys")
_op("atomic_rmw", ("pointer", "value", _opt("mask")),
    [Attr("kind", "str", choices=("add", "max", "min", "and", "or", "xor", "xchg")),
     Attr("sem", "str", "acq_rel", _SEMS), Attr("scope", "str", "gpu", _SCOPES)],
    "atomic", effects=(READS, WRITES, SYNCHRONIZES),
    semantics="Atomically combines value into memory and returns what was there before, per active lane. "
              "Float max/min order values by IEEE 754 totalOrder, their bits read as sign and magnitude (-NaN < "
              "-inf < ... < -0 < +0 < ... < +inf < +NaN, NaNs by payload): a NaN is not ignored, as Triton's "
              "lowering to integer atomics on an NVIDIA GPU gives (signed max/min on the bits where the sign bit "
              "is clear, unsigned min/max where it is set). Lanes of one op touching one address are applied in "
              "lane order.")
_op("atomic_cas", ("pointer", "compare", "value"), [Attr("sem", "str", "acq_rel", _SEMS),
                                                    Attr("scope", "str", "gpu", _SCOPES)],
    "atomic_cas", effects=(READS, WRITES, SYNCHRONIZES),
    semantics="Where memory equals compare bit for bit (-0 does not match +0; a NaN matches the same NaN bits), "
              "stores value; returns the old contents.")
_op("atomic_load", ("pointer", _opt("mask")),
    [Attr("sem", "str", "acquire", ("acquire", "relaxed")), Attr("scope", "str", "gpu", _SCOPES)],
    "load", effects=(READS, SYNCHRONIZES),
    semantics="tl.atomic_load: reads one element per active lane as a single access (never torn, never merged "
              "with another read nor moved out of a loop); sem=acquire orders the program's later accesses after "
              "it, and after the writes of the release it reads from. Masked-off lanes give 0. Bounds as for "
              "load. i1 is read as i8 by the frontend.")
_op("atomic_store", ("pointer", "value", _opt("mask")),
    [Attr("sem", "str", "release", ("release", "relaxed")), Attr("scope", "str", "gpu", _SCOPES)],
    "store", effects=(WRITES, SYNCHRONIZES),
    semantics="tl.atomic_store: writes value per active lane as a single access; sem=release orders the "
              "program's earlier accesses before it. Two programs storing to one address this way is no race: "
              "the later in memory order lands. Lanes of one op touching one address land in lane order.")
_op("barrier", (), [], "none", effects=(SYNCHRONIZES,),
    semantics="Orders the memory accesses of the threads of one program (__syncthreads); no effect across "
              "programs.")

# tiles of strided tensors: block pointers and tensor descriptors ------------------------------------
_TILE_SEMANTICS = (
    " The layout operands are the tensor's shape (rank integers), its strides in elements (rank) and the "
    "tile's offsets (rank i32): element (i0, i1, ...) of the tile is base[sum_d (offsets[d] + i_d) * "
    "strides[d]]. source=block_pointer (tl.make_block_ptr): only the dimensions in boundary_check are "
    "checked against 0 <= offsets[d] + i_d < shape[d]; an access outside an unchecked dimension is an "
    "OutOfBoundsError as for load. source=descriptor (tensor descriptors, TMA on a GPU): every dimension "
    "is checked. Checked lanes outside the tensor ")
_TILE_ATTRS = [Attr("block_shape", "ints"), Attr("order", "ints", ()), Attr("boundary_check", "ints", ()),
               Attr("source", "str", "block_pointer", ("block_pointer", "descriptor")),
               Attr("cache_modifier", "str", "", _CACHE), Attr("eviction_policy", "str", "", _EVICT)]
_op("tile_load", ("base", _many("layout")), _TILE_ATTRS + [Attr("padding", "str", "", ("", "zero", "nan"))],
    "tile_load", effects=(READS,),
    semantics="Reads the block_shape tile of a strided tensor." + _TILE_SEMANTICS + "read 0 (NaN with "
              "padding=nan). passes/lower_tile_access.py rewrites it into pointer arithmetic, a mask and a load, "
              "for backends without tile-copy hardware.")
_op("tile_store", ("base", "value", _many("layout")), _TILE_ATTRS, "tile_store", effects=(WRITES,),
    semantics="Writes value, a block_shape tile, into a strided tensor." + _TILE_SEMANTICS + "are not written.")

# reductions, scans, dot ------------------------------------------------------------------------------
_op("reduce", (_many("inputs"),),
    [Attr("axis", "int"), Attr("kind", "str", choices=("sum", "max", "min", "xor", "argmax", "argmin", "custom"))],
    "reduce", regions=("combine",), traits=_PURE + (SHARED_MEMORY,),
    semantics="Combines the inputs along `axis` in a fixed binary tree (halves pairwise), so results are "
              "deterministic; float sums round at each step. max/min ignore NaN and order -0 < +0, as minimum/"
              "maximum with propagate_nan=none do; argmax/argmin give the first index of the extreme. kind=custom "
              "applies the combine region (2n scalar arguments, yields n). The combine region is present only for "
              "custom.")
_op("scan", (_many("inputs"),),
    [Attr("axis", "int"), Attr("kind", "str", choices=("sum", "prod", "custom")), Attr("reverse", "bool", False)],
    "scan", regions=("combine",), traits=_PURE + (SHARED_MEMORY,),
    semantics="Inclusive prefix combination along axis (from the end when reverse). kind=custom applies the "
              "combine region.")
_op("dot", ("a", "b", "accumulator"), [Attr("input_precision", "str", "ieee", ("ieee", "tf32", "tf32x3"))],
    "dot", traits=_PURE + (INEXACT, SHARED_MEMORY),
    semantics="accumulator + a @ b over the last two dimensions (a leading batch dimension allowed). Products and "
              "sums in the accumulator's type (fp32 for float inputs unless out_dtype says otherwise; i32 for "
              "int8, wrapping). input_precision=tf32 first truncates fp32 inputs to tf32 (the low 13 mantissa "
              "bits dropped, as an H200's tensor cores do); tf32x3 splits each input into a tf32 high part and "
              "remainder and sums three products.")

# software pipelining (made by the CUDA backend's pipeliner, backends/cuda/pipeline.py) ------------------------
_RING = [Attr("ring", "int"), Attr("stages", "int"), Attr("operand", "str", choices=("a", "b"))]
_op("async_copy", ("pointer", "slot", _opt("mask")), _RING, "none", effects=(READS,),
    traits=(TARGET_PASS,),
    semantics="Starts copying the block pointer points at (0 where mask is false; a lane reads nothing there) into "
              "slot `slot` (i32, 0 <= slot < stages) of shared-memory ring `ring`, the operand `operand` of the dot "
              "that reads the ring through shared_slot. The copy lands later: async_wait says when.")
_op("async_commit", (), [], "none", effects=(SYNCHRONIZES,), traits=(TARGET_PASS,),
    semantics="Closes the group of the async_copy ops this thread started since the last commit.")
_op("async_wait", (), [Attr("pending", "int")], "none", effects=(SYNCHRONIZES,), traits=(TARGET_PASS,),
    semantics="Waits until at most `pending` of this thread's committed groups are still in flight, then for every "
              "thread of the program (a barrier), so that every copy of the groups before has landed for all.")
_op("dot_wait", ("value",), [Attr("pending", "int")], "same_as_operand", effects=(SYNCHRONIZES,),
    traits=(TARGET_PASS,),
    semantics="value, the result of a dot whose instructions may still run (an asynchronous dot: one whose only "
              "reader is a dot_wait), once at most `pending` of this warpgroup's later dots are still running.")
_op("shared_slot", ("slot",), _RING + [Attr("shape", "ints"), Attr("dtype", "dtype")], "shared_slot",
    effects=(READS,), traits=(TARGET_PASS,),
    semantics="The block of `shape` and `dtype` that the async_copy ops into slot `slot` of ring `ring` left there "
              "(read where the dot reads it: it must follow an async_wait that covers those copies, and precede "
              "the next copy into that slot).")

# random numbers --------------------------------------------------------------------------------------
_op("philox", ("c0", "c1", "c2", "c3", "k0", "k1"), [Attr("n_rounds", "int")], "philox", traits=_PURE,
    semantics="n_rounds of Philox-4x32 on counter (c0..c3) with key (k0, k1), u32 lanes; four results.")

# debugging and hints -------------------------------------------------------------------------------------
_op("print", (_many("values"),), [Attr("prefix", "str"), Attr("hex", "bool", False)], "none", effects=(REPORTS,),
    semantics="Prints each active lane's values, one line per lane, in compiled Triton's format.")
_op("assert", ("condition",), [Attr("message", "str"), Attr("debug_only", "bool", False)], "none",
    effects=(REPORTS,),
    semantics="Stops the kernel with a DeviceAssertionError naming the program and lane where condition is false. "
              "debug_only: checked in debug mode only (tl.expect_zero, as Triton checks it in debug builds only); "
              "without debug mode the op does nothing.")
_op("assume", ("condition",), [], "none", effects=(REPORTS,),
    semantics="A promise that condition (i1, a scalar or every lane of a block) holds where the op runs. Compiled "
              "backends that trust hints take `x >= c` / `x > c` (c a constant, c >= 0 / c >= -1) as the fact that "
              "x is non-negative, everywhere x is used. The interpreter evaluates the promise and reports a false "
              "one (a warning; HintViolationError in debug mode).")
_op("hint", ("value",), [Attr("kind", "str", choices=("multiple_of", "max_contiguous", "max_constancy")),
                         Attr("values", "ints")],
    "same_as_operand", effects=(REPORTS,), traits=(COPIES,),
    semantics="Returns value unchanged and promises a fact about it (per dimension): multiple_of: the first "
              "element of each contiguous run is divisible by values[d] (pointers: the byte address); "
              "max_contiguous: runs of values[d] consecutive integers; max_constancy: runs of values[d] equal "
              "values. The interpreter evaluates the promise and reports a false one at the accesses whose "
              "addresses rely on it (docs/language.md, Hints), so it is an effect: the op stays even when "
              "its result is unused.")

# control flow ------------------------------------------------------------------------------------------
_op("if", ("condition",), [], "if", regions=("then", "else"),
    semantics="Runs the then region when the scalar i1 condition holds, else the else region; results are what "
              "the region run yields.")
_op("for", ("lower", "upper", "step", _many("inits")),
    [Attr("num_stages", "int", None), Attr("loop_unroll_factor", "int", None), Attr("flatten", "bool", False),
     Attr("warp_specialize", "bool", False), Attr("disallow_acc_multi_buffer", "bool", False)],
    "for", regions=("body",),
    semantics="for i = lower; i < upper (i > upper when step < 0); i += step, the body taking (i, carried...) and "
              "yielding the next carried values; results are the last carried values. Bounds are scalars of one "
              "integer type; step != 0 (the frontend checks a constant step). The attributes are tl.range's "
              "scheduling hints; they never change results.")
_op("while", (_many("inits"),), [Attr("bounded", "bool", False)], "while", regions=("before", "after"),
    effects=(MAY_HANG,),
    semantics="Runs before on the carried values; it ends in a condition op: when false the loop exits with the "
              "condition's other operands as results; else after runs on them and yields the next carried values. "
              "bounded: the loop is a for loop with break (its trip count is bounded), not a spin wait.")
_op("yield", (_many("values"),), [], "none", traits=(TERMINATOR,),
    semantics="Ends a region of if/for/while(after)/reduce/scan, giving its values to the parent op.")
_op("condition", ("condition", _many("values")), [], "none", traits=(TERMINATOR,),
    semantics="Ends a while loop's before region: continue with values when condition holds, else exit with them.")


def opcodes_with(*names: str, operand: Optional[str] = None) -> frozenset[str]:
    """The opcodes whose entry has every trait and effect in ``names`` (``opcodes_with(MATH)``,
    ``opcodes_with(READS, WRITES)``), and, given ``operand``, an operand slot of that name."""
    unknown = set(names) - TRAITS - EFFECTS
    assert not unknown, f"no trait or effect {sorted(unknown)}"
    return frozenset(opcode for opcode, entry in SPEC.items()
                     if all(name in entry.traits or name in entry.effects for name in names)
                     and (operand is None or any(slot.name == operand for slot in entry.operands)))


# Groups the compiler and the backends ask for, derived from the entries above.
TERMINATORS = opcodes_with(TERMINATOR)
MATH_OPCODES = opcodes_with(MATH)
# Ops that read (write) memory at one address per lane, that of their ``pointer`` operand: a lane of
# the result of a reading one is the memory another program may have written. (The CUDA pipeliner's
# async_copy, which reads so into shared memory, is made after every analysis that reads these.)
POINTER_READS = opcodes_with(READS, operand="pointer") - opcodes_with(TARGET_PASS)
POINTER_WRITES = opcodes_with(WRITES, operand="pointer")
ATOMICS = POINTER_READS & POINTER_WRITES
# Reads that synchronize with other programs (atomics, atomic loads): a result the kernel uses is
# how programs talk through memory.
SYNCHRONIZING_READS = opcodes_with(READS, SYNCHRONIZES, operand="pointer")
# Ops that compute nothing (a lane costs a read): a CPU backend computes them where they are used
# rather than keeping their blocks in memory.
COPYING_OPCODES = opcodes_with(COPIES)


def spec_of(opcode: str) -> OpSpec:
    try:
        return SPEC[opcode]
    except KeyError:
        raise KeyError(f"unknown IR opcode {opcode!r}") from None


def has_effects(op) -> bool:
    """True when ``op``, or an op nested in its regions, has an effect (reads or writes memory,
    synchronizes, or reports): such an op must run even when its results are unused."""
    spec = SPEC.get(op.opcode)
    if spec is None or spec.effects:
        return True
    return any(has_effects(inner) for region in op.regions for inner in region.ops)


def is_pure(op) -> bool:
    """True when ``op`` and everything nested in it compute values only: it may be removed when
    unused, merged with an identical op, or moved out of a loop."""
    spec = SPEC.get(op.opcode)
    if spec is None or PURE not in spec.traits:
        return False
    return all(is_pure(inner) or TERMINATOR in SPEC[inner.opcode].traits
               for region in op.regions for inner in region.ops)


def checked_in_debug_mode(op) -> bool:
    """True for the ops debug mode (``TRITIUM_DEBUG=1``) checks when they run: int32 add, sub, mul and
    neg (overflow), integer ``//``, ``%`` and ``/`` (division by zero), float -> int casts (NaN, inf,
    out of range). A pass must not make such an op run where the kernel would not run it, nor fold
    away the fault it would report."""
    scalar = op.results[0].type.scalar if op.results else None
    if scalar is None:
        return False
    traits = SPEC[op.opcode].traits if op.opcode in SPEC else frozenset()
    if OVERFLOW_CHECKED in traits:
        return scalar.name == "int32"
    if ZERO_DIVISOR_CHECKED in traits:
        return not scalar.is_ptr() and scalar.is_int()
    if op.opcode == "cast":
        source = op.operands[0].type.scalar
        return source.is_floating() and scalar.is_int() and not scalar.is_bool()
    return False
