"""Random valid Triton kernels, as source text, for differential testing.

A ``Case`` is one kernel module (its source), the launch (grid, sizes, constexprs), its inputs'
dtypes and shapes, and how its outputs may be compared across execution paths (bit for bit, within
a math function's ulp bound, or within an fp32 accumulation bound for ``dot``). Cases are drawn
through a ``Draw`` (a few integer and choice primitives), so the same generator is driven by
``random.Random`` for long campaigns (``benchmarks/fuzz.py``) and by hypothesis for the suite
(``kernels()``, shrinking to a small failing kernel).

What the kernels cover: every dtype of inputs; power-of-two blocks including 1 and 2, sizes that
leave masked tails; 1-D and 2-D tiles with 1-D to 3-D grids (a single program included);
broadcasting of row and column vectors; chains of arithmetic, bitwise, comparison and ``where``
ops and casts (``fp_downcast_rounding``, fp8 round trips); reductions and scans on each axis, with
builtin and custom combine functions; ``for`` and ``while`` loops with carried values; ``if`` on
program ids and on loaded scalars; early returns; integer atomics; gathers through computed and
loaded offsets; math functions (as the last op, so that their ulp differences are not amplified
by later discrete ops); and small ``dot`` kernels with a K loop and an accumulator.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Optional, Protocol, Sequence

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8")
DTYPES = FLOATS + INTS + ("int1",)

# math functions: (call template on an fp32 operand, stated ulp bound of the compiled CPU backend's
# fp32 implementation, backends/llvm/math.py); arguments are kept where the bound holds
MATH = {
    "exp": ("tl.exp({x})", 1), "exp2": ("tl.exp2({x})", 1), "log": ("tl.log(tl.abs({x}) + 1.0)", 1),
    "log2": ("tl.log2(tl.abs({x}) + 1.0)", 1), "sqrt": ("tl.sqrt(tl.abs({x}))", 0),
    "rsqrt": ("tl.rsqrt(tl.abs({x}) + 1.0)", 1), "sin": ("tl.sin(tl.minimum(tl.maximum({x}, -1e4), 1e4))", 1),
    "cos": ("tl.cos(tl.minimum(tl.maximum({x}, -1e4), 1e4))", 1), "tanh": ("tl.extra.libdevice.tanh({x})", 1),
    "sigmoid": ("tl.sigmoid({x})", 2), "erf": ("tl.erf({x})", 1), "floor": ("tl.floor({x})", 0),
    "ceil": ("tl.ceil({x})", 0), "abs": ("tl.abs({x})", 0),
}

COMBINE_FUNCTIONS = '''
@triton.jit
def _combine_add(a, b):
    return a + b


@triton.jit
def _combine_max(a, b):
    return tl.maximum(a, b)


@triton.jit
def _combine_min_abs(a, b):
    return tl.where(tl.abs(a) <= tl.abs(b), a, b)


@triton.jit
def _combine_max_with_index(a, a_index, b, b_index):
    take = a > b
    return tl.where(take, a, b), tl.where(take, a_index, b_index)
'''


class Draw(Protocol):
    def integer(self, low: int, high: int) -> int: ...  # inclusive

    def choice(self, options: Sequence): ...

    def boolean(self, p: float = 0.5) -> bool: ...


class RandomDraw:
    """A ``Draw`` from ``random.Random(seed)``."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def choice(self, options: Sequence):
        return options[self.rng.randrange(len(options))]

    def boolean(self, p: float = 0.5) -> bool:
        return self.rng.random() < p


class HypothesisDraw:
    """A ``Draw`` from hypothesis's ``data`` object (so failing kernels shrink)."""

    def __init__(self, data):
        from hypothesis import strategies as st
        self.data, self.st = data, st

    def integer(self, low: int, high: int) -> int:
        return self.data.draw(self.st.integers(low, high))

    def choice(self, options: Sequence):
        return options[self.data.draw(self.st.integers(0, len(options) - 1))]

    def boolean(self, p: float = 0.5) -> bool:
        return self.data.draw(self.st.booleans())


@dataclass
class Tensor:
    """An argument tensor: name, dtype (a tl name), shape, and how its values are drawn
    ('values': any values of the dtype, specials included; 'index': non-negative int32;
    'flag': one int32; 'zeros': an output, zero-initialised)."""

    name: str
    dtype: str
    shape: tuple
    kind: str = "values"


@dataclass
class Case:
    source: str
    kernel: str
    tensors: list  # of Tensor, in parameter order
    scalars: dict  # run-time integer arguments, in parameter order after the tensors
    constexprs: dict
    grid: tuple
    outputs: list  # names of the tensors compared after the launch
    compare: dict = field(default_factory=dict)  # output name -> ("exact",) | ("ulp", n) | ("dot", K)
    features: set = field(default_factory=set)

    def describe(self) -> str:
        return f"{self.kernel} grid={self.grid} features={sorted(self.features)}"


@dataclass
class _Value:
    code: str
    category: str  # "float", "int" or "bool"
    shape: str  # "T" (the tile), "C" (a column: BM x 1), "R" (a row: 1 x BN), "S" (a scalar)
    literal: bool = False  # a Python number or bool in the source (no methods, constexpr arithmetic)


def _join_shape(a: str, b: str) -> str:
    if a == b:
        return a
    if "T" in (a, b) or {a, b} == {"C", "R"}:
        return "T"
    return b if a == "S" else a


def _join_category(a: str, b: str) -> str:
    if "float" in (a, b):
        return "float"
    if "int" in (a, b):
        return "int"
    return "bool"


class _Builder:
    def __init__(self, draw: Draw):
        self.d = draw
        self.rank = draw.choice((1, 2, 2))
        self.values: list[_Value] = []
        self.lines: list[str] = []
        self.features: set[str] = set()
        self.counter = 0
        self.atomic_op: Optional[str] = None

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, line: str, indent: int = 1) -> None:
        self.lines.append("    " * indent + line)

    # expressions -------------------------------------------------------------------------------
    def leaf(self) -> _Value:
        d = self.d
        roll = d.integer(0, 9)
        if roll <= 5 or not self.values:
            candidates = self.values or []
            if candidates:
                return d.choice(candidates)
        if roll in (6, 7):
            kind = d.choice(("float", "int", "int", "bool"))
            if kind == "float":
                return _Value(repr(d.choice((0.5, -1.25, 3.0, 1e-3, 2.0 ** 20, -0.0))), "float", "S", True)
            if kind == "int":
                # non-negative: a negative Python int cannot combine with unsigned blocks (Triton's rule)
                return _Value(str(d.choice((0, 1, 2, 3, 7, 100))), "int", "S", True)
            return _Value(d.choice(("True", "False")), "bool", "S", True)
        if roll == 8:
            return _Value("pid0", "int", "S")
        return _Value(self.index_code(), "int", "T")

    def index_code(self) -> str:
        return "(rm[:, None] * N + rn[None, :])" if self.rank == 2 else "offs"

    def expr(self, depth: int) -> _Value:
        d = self.d
        if depth <= 0 or d.integer(0, 9) < 3:
            return self.leaf()
        kind = d.integer(0, 11)
        if kind <= 4:
            return self.binary(self.expr(depth - 1), self.expr(depth - 1))
        if kind == 5:
            x = self.expr(depth - 1)
            if x.literal:
                return x
            if x.category == "bool":
                return _Value(f"(~{x.code})" if d.boolean() else f"({x.code} ^ True)", "bool", x.shape)
            return _Value(f"(-{x.code})" if x.category != "int" or d.boolean() else f"(~{x.code})",
                          x.category, x.shape)
        if kind == 6:
            cond = self.condition(depth - 1)
            a, b = self.expr(depth - 1), self.expr(depth - 1)
            if cond.literal and a.literal and b.literal:
                return a
            self.features.add("where")
            return _Value(f"tl.where({cond.code}, {a.code}, {b.code})", _join_category(a.category, b.category),
                          _join_shape(cond.shape, _join_shape(a.shape, b.shape)))
        if kind == 7:
            return self.cast(self.expr(depth - 1))
        if kind in (8, 9):
            x = self.expr(depth - 1)
            if x.shape == "T":
                return self.reduction(x)
            return x
        if kind == 10:
            x = self.expr(depth - 1)
            if x.category != "bool":
                fn = d.choice(("tl.maximum", "tl.minimum"))
                y = self.expr(depth - 1)
                if y.category != "bool" and not (x.literal and y.literal):
                    self.features.add("min_max")
                    return _Value(f"{fn}({x.code}, {y.code})", _join_category(x.category, y.category),
                                  _join_shape(x.shape, y.shape))
            return x
        return self.condition(depth - 1)

    def condition(self, depth: int) -> _Value:
        a, b = self.expr(depth), self.expr(depth)
        if a.category == "bool" and b.category == "bool":
            op = self.d.choice(("&", "|", "^", "=="))
        else:
            op = self.d.choice(("<", "<=", ">", ">=", "==", "!="))
        self.features.add("compare")
        return _Value(f"({a.code} {op} {b.code})", "bool", _join_shape(a.shape, b.shape), a.literal and b.literal)

    def binary(self, a: _Value, b: _Value) -> _Value:
        d = self.d
        shape = _join_shape(a.shape, b.shape)
        category = _join_category(a.category, b.category)
        literal = a.literal and b.literal
        if category == "bool":
            return _Value(f"({a.code} {d.choice(('&', '|', '^'))} {b.code})", "bool", shape, literal)
        a, b = _bool_as_int(a), _bool_as_int(b)
        if category == "int":
            op = d.choice(("+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "/"))
            if op in ("//", "%"):
                self.features.add("int_division")
                # one signedness (Triton refuses to divide signed by unsigned), and a divisor never 0
                # (nor -1, whose quotient of the minimum overflows)
                width = d.choice(("int32", "int64"))
                a, b = _as_int(a, width), _as_int(b, width)
                return _Value(f"({a.code} {op} (({b.code} & 15) + 1))", "int", shape, literal)
            if op in ("<<", ">>"):
                self.features.add("shift")
                return _Value(f"({a.code} {op} ({b.code} & 7))", "int", shape, literal)
            if op == "/":
                b = _as_int(b, "int32")
                return _Value(f"({a.code} / (({b.code} & 15) + 1))", "float", shape, literal)
            return _Value(f"({a.code} {op} {b.code})", "int", shape, literal)
        op = d.choice(("+", "-", "*", "/", "+", "*", "%"))
        if op == "%":
            self.features.add("float_mod")
            return _Value(f"({a.code} % ({b.code} * {b.code} + 1.0))", "float", shape, literal)
        if op == "/" and literal:
            op = "*"  # a constant quotient by zero is Python's ZeroDivisionError at compile time
        return _Value(f"({a.code} {op} {b.code})", "float", shape, literal)

    def cast(self, x: _Value) -> _Value:
        d = self.d
        if x.literal:
            return x
        target = d.choice(DTYPES + ("float8e5", "float8e4nv", "rtz", "rtne"))
        if target in ("rtz", "rtne"):
            narrow = d.choice(("float16", "bfloat16"))
            self.features.add("downcast_rounding")
            code = f"{x.code}.to(tl.float32).to(tl.{narrow}, fp_downcast_rounding=\"{target}\")"
            return _Value(code, "float", x.shape)
        if target.startswith("float8"):
            self.features.add("fp8")
            source = "tl.float32" if x.category == "float" else "tl.float16"
            return _Value(f"{x.code}.to({source}).to(tl.{target}).to(tl.float32)", "float", x.shape)
        self.features.add("cast")
        category = "bool" if target == "int1" else ("float" if target in FLOATS else "int")
        return _Value(f"{x.code}.to(tl.{target})", category, x.shape)

    def reduction(self, x: _Value) -> _Value:
        d = self.d
        x = _bool_as_int(x)
        axis = d.choice((0, 1)) if self.rank == 2 else 0
        kinds = ["sum", "max", "min", "argmax", "argmin", "reduce_add", "reduce_max", "reduce_min_abs",
                 "cumsum", "scan_add", "scan_max", "cumprod", "reduce_pair", "scan_pair"]
        if x.category == "int":
            kinds.append("xor_sum")
        kind = d.choice(kinds)
        self.features.add("scan" if kind.startswith(("cum", "scan")) else "reduce")
        if kind.startswith(("reduce_", "scan_")):
            self.features.add("custom_combine")
        name = self.fresh("r")
        if kind in ("reduce_pair", "scan_pair"):
            # two operands, the index one the same in every program (Inductor's cummax / argmax)
            self.features.add("two_operand")
            index = "rn[None, :]" if axis == 1 else "rm[:, None]"
            shape = "[BM, BN]" if self.rank == 2 else "[BLOCK]"
            index = index if self.rank == 2 else "tl.arange(0, BLOCK)"
            fn = "tl.reduce" if kind == "reduce_pair" else "tl.associative_scan"
            self.emit(f"{name}, {name}i = {fn}(({x.code}, tl.broadcast_to(({index}).to(tl.int32), {shape})), {axis}, "
                      f"_combine_max_with_index)")
            picked = name if self.d.boolean() else f"{name}i"
            category = x.category if picked == name else "int"
            if kind == "scan_pair":
                return _Value(picked, category, "T")
            if self.rank == 1:
                return _Value(picked, category, "S")
            return _Value(f"{picked}[:, None]" if axis == 1 else f"{picked}[None, :]", category,
                          "C" if axis == 1 else "R")
        call = {
            "sum": f"tl.sum({x.code}, axis={axis})", "max": f"tl.max({x.code}, axis={axis})",
            "min": f"tl.min({x.code}, axis={axis})", "argmax": f"tl.argmax({x.code}, axis={axis})",
            "argmin": f"tl.argmin({x.code}, axis={axis})", "xor_sum": f"tl.xor_sum({x.code}, axis={axis})",
            "reduce_add": f"tl.reduce({x.code}, {axis}, _combine_add)",
            "reduce_max": f"tl.reduce({x.code}, {axis}, _combine_max)",
            "reduce_min_abs": f"tl.reduce({x.code}, {axis}, _combine_min_abs)",
            "cumsum": f"tl.cumsum({x.code}, axis={axis})", "cumprod": f"tl.cumprod({x.code}, axis={axis})",
            "scan_add": f"tl.associative_scan({x.code}, {axis}, _combine_add)",
            "scan_max": f"tl.associative_scan({x.code}, {axis}, _combine_max)",
        }[kind]
        self.emit(f"{name} = {call}")
        category = "int" if kind in ("argmax", "argmin") else x.category
        if kind.startswith(("cum", "scan")):
            return _Value(name, category, "T")
        if self.rank == 1:
            return _Value(name, category, "S")
        return _Value(f"{name}[:, None]" if axis == 1 else f"{name}[None, :]", category, "C" if axis == 1 else "R")

    # statements --------------------------------------------------------------------------------
    def let(self) -> None:
        v = self.expr(self.d.integer(1, 4))
        name = self.fresh("t")
        self.emit(f"{name} = {v.code}")
        self.values.append(_Value(name, v.category, v.shape, v.literal))

    def as_tile(self, v: _Value, dtype: str) -> str:
        shape = "[BM, BN]" if self.rank == 2 else "[BLOCK]"
        if v.literal:
            return f"tl.full({shape}, {v.code}, tl.{dtype})"
        code = f"({v.code}).to(tl.{dtype})"
        if v.shape != "T":
            code = f"tl.broadcast_to({code}, {shape})"
        return code

    def loop(self) -> None:
        d = self.d
        acc = self.fresh("acc")
        dtype = d.choice(("float32", "int32"))
        shape = "[BM, BN]" if self.rank == 2 else "[BLOCK]"
        self.emit(f"{acc} = tl.zeros({shape}, dtype=tl.{dtype})")
        counter = self.fresh("i")
        use_while = d.boolean()
        if use_while:
            self.features.add("while")
            self.emit(f"{counter} = 0")
            self.emit(f"while {counter} < L:")
        else:
            self.features.add("for")
            self.emit(f"for {counter} in range({d.choice(('L', '0, L', '1, L + 2', '3'))}):")
        saved = self.values
        self.values = saved + [_Value(counter, "int", "S"), _Value(acc, "float" if dtype == "float32" else "int", "T")]
        body_start = len(self.lines)
        if d.boolean(0.4):
            self.let_in_body()
        v = self.expr(2)
        if dtype == "float32":
            self.emit(f"{acc} = ({acc} * 0.5 + {self.as_tile(v, 'float32')}).to(tl.float32)", 2)
        else:
            self.emit(f"{acc} = ({acc} ^ {self.as_tile(v, 'int32')}) + 1", 2)
        if use_while:
            self.emit(f"{counter} += 1", 2)
        self._indent_body(body_start)
        self.values = saved + [_Value(acc, "float" if dtype == "float32" else "int", "T")]

    def let_in_body(self) -> None:
        v = self.expr(2)
        name = self.fresh("t")
        self.emit(f"{name} = {v.code}")
        self.values.append(_Value(name, v.category, v.shape, v.literal))

    def _indent_body(self, start: int) -> None:
        # the lines emitted since ``start`` at one level belong to the loop or branch body
        for i in range(start, len(self.lines)):
            if not self.lines[i].startswith("        "):
                self.lines[i] = "    " + self.lines[i]

    def branch(self) -> None:
        d = self.d
        self.features.add("if")
        name = self.fresh("v")
        cond = d.choice(("pid0 % 2 == 0", "pid0 == 0", "tl.load(FLAG) > 0", "pid_last > 0"))
        self.emit(f"if {cond}:")
        saved = list(self.values)
        start = len(self.lines)
        a = self.expr(2)
        self.emit(f"{name} = {self.as_tile(a, 'float32')}")
        self._indent_body(start)
        self.values = list(saved)
        self.emit("else:")
        start = len(self.lines)
        b = self.expr(2)
        self.emit(f"{name} = {self.as_tile(b, 'float32')}")
        self._indent_body(start)
        self.values = saved + [_Value(name, "float", "T")]

    def gather(self) -> None:
        d = self.d
        self.features.add("gather")
        name = self.fresh("g")
        source = d.choice(self.inputs)
        if d.boolean():
            index = f"({self.index_code()} * 7 + 3) % TOTAL"
        else:
            index = f"(tl.load(IDX + {self.offsets}, mask={self.mask}, other=0) & 0x7fffffff) % TOTAL"
        self.emit(f"{name} = tl.load({source.name} + {index}, mask={self.mask}, other={_other(source.dtype)})")
        self.values.append(_Value(name, _category(source.dtype), "T"))

    def atomic(self) -> None:
        d = self.d
        self.features.add("atomic")
        v = self.expr(2)
        if v.category == "float":
            # converted, not bitcast: a NaN's sign and payload are not specified (docs/ir.md)
            v = _Value(f"{self.as_tile(v, 'float32')}.to(tl.int32)", "int", "T")
        # one kind of atomic per kernel: each kind alone gives the same result in any order of the
        # programs, as a GPU may run them; mixing kinds on one address would not
        if self.atomic_op is None:
            self.atomic_op = d.choice(("atomic_add", "atomic_max", "atomic_min", "atomic_or", "atomic_xor",
                                       "atomic_and"))
        op = self.atomic_op
        index = self.as_tile(_Value(f"({self.index_code()} * 5 + pid0) & 7", "int", "T"), "int32")
        self.emit(f"tl.{op}(HIST + {index}, {self.as_tile(v, 'int32')}, mask={self.mask})")


def _as_int(v: _Value, dtype: str) -> _Value:
    if v.literal:
        return v
    return _Value(f"({v.code}).to(tl.{dtype})", "int", v.shape)


def _bool_as_int(v: _Value) -> _Value:
    if v.category != "bool":
        return v
    if v.literal:
        return _Value(str(int(v.code == "True")), "int", v.shape, True)
    return _Value(f"{v.code}.to(tl.int32)", "int", v.shape)


def _category(dtype: str) -> str:
    return "bool" if dtype == "int1" else ("float" if dtype in FLOATS else "int")


def _other(dtype: str) -> str:
    return {"bool": "False", "float": "0.0", "int": "0"}[_category(dtype)]


def elementwise_case(d: Draw, name: str = "kernel") -> Case:
    """A kernel over 1-D or 2-D tiles of its inputs: loads, statements, one store (plus atomics)."""
    b = _Builder(d)
    n_inputs = d.integer(1, 3)
    if b.rank == 2:
        BM, BN = d.choice((1, 2, 4, 8, 16)), d.choice((1, 2, 4, 8, 16, 32))
        M, N = d.integer(1, 3 * BM + 1), d.integer(1, 3 * BN + 1)
        batch = d.choice((1, 1, 2))
        shape = (batch, M, N)
        grid = (-(-M // BM), -(-N // BN), batch)
        constexprs = {"BM": BM, "BN": BN}
        b.offsets, b.mask = "offs", "mask"
        prologue = [
            "pid0 = tl.program_id(0)",
            "pid_last = tl.program_id(2)",
            "rm = pid0 * BM + tl.arange(0, BM)",
            "rn = tl.program_id(1) * BN + tl.arange(0, BN)",
            "mask = (rm[:, None] < M) & (rn[None, :] < N)",
            "offs = pid_last * M * N + rm[:, None] * N + rn[None, :]",
        ]
    else:
        BLOCK = d.choice((1, 2, 4, 8, 16, 32, 64))
        total = d.integer(1, 4 * BLOCK + 3)
        M, N = total, 1
        shape = (total,)
        programs = -(-total // BLOCK)
        grid = (programs,)
        constexprs = {"BLOCK": BLOCK}
        b.offsets, b.mask = "offs", "mask"
        prologue = [
            "pid0 = tl.program_id(0)",
            "pid_last = pid0",
            "offs = pid0 * BLOCK + tl.arange(0, BLOCK)",
            "mask = offs < TOTAL",
        ]
    total = 1
    for s in shape:
        total *= s
    if len(grid) == 1 and grid[0] == 1:
        b.features.add("single_program")
    b.features.add(f"grid{len(grid)}d")
    tensors = [Tensor(f"X{i}", d.choice(DTYPES + ("float32", "float32", "int32", "float16")), shape)
               for i in range(n_inputs)]
    b.inputs = tensors
    for line in prologue:
        b.emit(line)
    for t in tensors:
        var = t.name.lower()
        b.emit(f"{var} = tl.load({t.name} + offs, mask=mask, other={_other(t.dtype)})")
        b.values.append(_Value(var, _category(t.dtype), "T"))
    for _ in range(d.integer(1, 8)):
        kind = d.choice(("let", "let", "let", "loop", "branch", "gather", "atomic"))
        getattr(b, kind)()
    early_return = d.boolean(0.2)
    if early_return:
        b.features.add("early_return")
        b.emit(f"if pid0 == {d.integer(0, 1)}:")
        b.emit("return", 2)
    result = b.expr(d.integer(1, 3))
    compare = ("exact",)
    if result.category == "float" and d.boolean(0.3):
        fn = d.choice(sorted(MATH))
        template, bound = MATH[fn]
        result = _Value(template.format(x=b.as_tile(result, "float32")), "float", "T")
        b.features.add(f"math_{fn}")
        if bound:
            compare = ("ulp", bound)
    out_dtype = {"float": d.choice(("float32", "float32", "float16", "float64")), "int": "int32",
                 "bool": "int8"}[result.category]
    if compare[0] == "ulp":
        out_dtype = "float32"
    b.emit(f"tl.store(OUT + offs, {b.as_tile(result, out_dtype)}, mask=mask)")
    params = [t.name for t in tensors] + ["IDX", "FLAG", "OUT", "HIST", "M", "N", "L", "TOTAL"]
    params += [f"{k}: tl.constexpr" for k in constexprs]
    source = (f"@triton.jit\ndef {name}({', '.join(params)}):\n" + "\n".join(b.lines) + "\n")
    tensors = tensors + [Tensor("IDX", "int32", shape, "index"), Tensor("FLAG", "int32", (1,), "flag"),
                         Tensor("OUT", out_dtype, shape, "zeros"), Tensor("HIST", "int32", (8,), "zeros")]
    scalars = {"M": M, "N": N, "L": d.integer(0, 3), "TOTAL": total}
    return Case(source=source, kernel=name, tensors=tensors, scalars=scalars, constexprs=constexprs, grid=grid,
                outputs=["OUT", "HIST"], compare={"OUT": compare, "HIST": ("exact",)}, features=b.features)


def dot_case(d: Draw, name: str = "kernel") -> Case:
    """A matmul tile kernel: a K loop of masked loads and ``tl.dot`` into an accumulator."""
    dtype = d.choice(("float16", "bfloat16", "float32", "float32", "int8"))
    BM, BN = d.choice((16, 32)), d.choice((16, 32))
    BK = 32 if dtype == "int8" else d.choice((16, 32))
    M, N, K = d.integer(1, 2 * BM + 3), d.integer(1, 2 * BN + 3), d.integer(1, 2 * BK + 5)
    acc_dtype = "int32" if dtype == "int8" else "float32"
    precision = "" if dtype != "float32" else d.choice(("", ", input_precision=\"ieee\"", ", input_precision=\"tf32\""))
    accumulate = d.choice(("acc += tl.dot(a, b{p})", "acc = tl.dot(a, b, acc{p})")).format(p=precision)
    epilogue = "acc"
    features = {"dot", f"dot_{dtype}"}
    if acc_dtype == "float32" and d.boolean(0.3):
        epilogue = "acc * 0.5 + 1.0"
    source = f'''@triton.jit
def {name}(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.{acc_dtype})
    for k0 in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k0 + rk)[None, :], mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0)
        b = tl.load(B + (k0 + rk)[:, None] * N + rn[None, :], mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0)
        {accumulate}
    tl.store(C + rm[:, None] * N + rn[None, :], {epilogue}, mask=(rm[:, None] < M) & (rn[None, :] < N))
'''
    tensors = [Tensor("A", dtype, (M, K), "small"), Tensor("B", dtype, (K, N), "small"),
               Tensor("C", acc_dtype, (M, N), "zeros")]
    grid = (-(-M // BM), -(-N // BN))
    # the epilogue's rounding (of acc * 0.5 + 1.0) may turn a last-bit difference of acc into one
    # ulp of the output: the comparison allows that on top of the accumulation bound
    compare = ("exact",) if acc_dtype == "int32" else ("dot", K, epilogue != "acc")
    return Case(source=source, kernel=name, tensors=tensors, scalars={"M": M, "N": N, "K": K},
                constexprs={"BM": BM, "BN": BN, "BK": BK}, grid=grid, outputs=["C"], compare={"C": compare},
                features=features)


def draw_case(d: Draw, name: str = "kernel") -> Case:
    return dot_case(d, name) if d.integer(0, 9) == 0 else elementwise_case(d, name)


def module_source(case: Case) -> str:
    """The whole module a case's kernel lives in (the combine functions beside it)."""
    return ("import tritium as triton\nimport tritium.language as tl\n" + COMBINE_FUNCTIONS + "\n\n"
            + case.source)


def kernels():
    """The hypothesis strategy of cases."""
    from hypothesis import strategies as st

    @st.composite
    def build(draw):
        class _Adapter(HypothesisDraw):
            def __init__(self):
                self.data, self.st = None, st

            def integer(self, low, high):
                return draw(st.integers(low, high))

            def choice(self, options):
                return options[draw(st.integers(0, len(options) - 1))]

            def boolean(self, p=0.5):
                return draw(st.booleans())
        return draw_case(_Adapter())

    return build()
