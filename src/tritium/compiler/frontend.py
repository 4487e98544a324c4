"""The frontend: walks a @jit function's Python AST and emits typed tile IR.

One ``visit_<Node>`` per construct. Constexprs are evaluated here, in Python; everything else
becomes IR through ``Semantic``. Calls to other @jit functions are inlined. Every exception
raised while visiting a node is re-raised once, as a ``CompilationError`` carrying that node's
``file:line:col``.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import operator
import textwrap
import types as pytypes
from dataclasses import dataclass
from typing import Any, Optional

from ..errors import CompilationError, CompileTimeAssertionFailure
from ..language import core as lcore
from ..language import standard as lstd
from ..language.core import constexpr, tensor, unwrap
from ..language.tensor_descriptor import tensor_descriptor_type
from .aggregates import LEAF, Aggregate, describe_structure, flatten, is_composite
from .control_flow import EXIT_FLAGS, RETVAL, SKIPPED_BY_RETURN, lower_early_returns
from .ir import types as T
from .ir.builder import Builder
from .ir.ops import Function, Location, Region
from .semantics import Semantic


@dataclass
class ParsedFunction:
    """A Python function's AST with the facts needed to map nodes back to its file."""

    fn: Any
    name: str
    file: str
    first_line: int
    indent: int
    tree: ast.FunctionDef
    params: list[inspect.Parameter]

    def location(self, node: ast.AST) -> Location:
        line = self.first_line + getattr(node, "lineno", 1) - 1
        col = getattr(node, "col_offset", 0) + self.indent
        return Location(self.file, line, col, self.name)


def parse_function(fn) -> ParsedFunction:
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise CompilationError(None, f"cannot read the source of {getattr(fn, '__name__', fn)}: {e}",
                               "define kernels in a .py file (not in an interactive prompt or exec string)") from None
    source = "".join(lines)
    dedented = textwrap.dedent(source)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    module = ast.parse(dedented)
    tree = next((n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if tree is None:
        raise CompilationError(None, f"could not find the definition of {fn.__name__} in its source")
    tree = lower_early_returns(tree)
    file = inspect.getsourcefile(fn) or inspect.getfile(fn)
    params = list(inspect.signature(fn).parameters.values())
    return ParsedFunction(fn, fn.__name__, file, first_line, indent, tree, params)


def is_constexpr_annotation(annotation) -> bool:
    if annotation is inspect.Parameter.empty or annotation is None:
        return False
    if annotation is constexpr or annotation == "constexpr":
        return True
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == "constexpr"
    return False


class _LoopSignal(Exception):
    pass


@dataclass(frozen=True)
class _Result:
    """The ``index``-th result of an op being built (a joined leaf)."""

    index: int


# How a loop treats one leaf of a carried value (see CodeGenerator._emit_loop); otherwise an IR type.
_FIXED = "fixed"
_NATURAL = "natural"


def _initial_state(leaf):
    if isinstance(leaf, tensor):
        return leaf.type
    return _NATURAL if _is_number(leaf) else _FIXED


_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
}
_COMPARE = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_STATIC_COMPARE = {ast.Is: operator.is_, ast.IsNot: operator.is_not, ast.In: lambda a, b: a in b,
                   ast.NotIn: lambda a, b: a not in b}

# Python builtins a kernel may call on constexprs (evaluated at compile time).
_STATIC_BUILTINS = {builtins.len, builtins.isinstance, builtins.int, builtins.float, builtins.bool,
                    builtins.getattr, builtins.hasattr, builtins.tuple, builtins.list, builtins.zip,
                    builtins.enumerate, builtins.str, builtins.type, builtins.abs, builtins.round,
                    builtins.divmod, builtins.all, builtins.any, builtins.reversed, builtins.sorted}


def _wrap(value):
    """Python values produced inside a kernel become constexprs; tensors and objects stay."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return constexpr(value)
    if isinstance(value, tuple) and not isinstance(value, tensor):
        return tuple(_wrap(v) for v in value)
    return value


def _is_static(value) -> bool:
    if isinstance(value, tensor):
        return False
    if isinstance(value, (tuple, list)):
        return all(_is_static(v) for v in value)
    if isinstance(value, Aggregate):
        return all(_is_static(v) for v in flatten(value)[0])
    return True


def _static(value):
    """The Python value of a compile-time value (unwrapping constexprs, also inside tuples)."""
    if isinstance(value, (tuple, list)):
        return type(value)(_static(v) for v in value)
    return unwrap(value)


def _is_number(value) -> bool:
    value = unwrap(value)
    return isinstance(value, (bool, int, float)) and not isinstance(value, tensor)


def _same_static(a, b) -> bool:
    """Two compile-time values that are equal and of one type (so either may stand for both)."""
    a, b = _static(a), _static(b)
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def _same_leaf(a, b) -> bool:
    """The same value: one tensor (one IR value), or equal compile-time values."""
    if a is b:
        return True
    if isinstance(a, tensor) or isinstance(b, tensor):
        return isinstance(a, tensor) and isinstance(b, tensor) and a.handle is b.handle
    if is_composite(a) or is_composite(b):
        return False
    return _same_static(a, b)


def _assigned_names(statements) -> list[str]:
    """Names assigned anywhere in these statements, in first-assignment order."""
    names: list[str] = []
    for stmt in statements:
        for node in ast.walk(stmt):
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.For):
                targets = [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name) and sub.id not in names:
                        names.append(sub.id)
    return names


class CodeGenerator(ast.NodeVisitor):
    def __init__(self, parsed: ParsedFunction, semantic: Semantic, scope: dict[str, Any], call_depth: int = 0):
        self.parsed = parsed
        self.semantic = semantic
        self.builder: Builder = semantic.builder
        self.scope: dict[str, Any] = dict(scope)
        self.globals = getattr(parsed.fn, "__globals__", {})
        self.closure = inspect.getclosurevars(parsed.fn).nonlocals if getattr(parsed.fn, "__closure__", None) else {}
        self.returned = False
        self.return_value: Any = None
        self.call_depth = call_depth
        self.loop_depth = 0

    # the one place errors get their location ---------------------------------------------------
    def visit(self, node):
        previous = self.builder.loc
        if hasattr(node, "lineno"):
            self.builder.loc = self.parsed.location(node)
        try:
            return super().visit(node)
        except CompilationError:
            raise
        except RecursionError:
            raise
        except Exception as e:  # a user mistake found while compiling this node
            loc = self.parsed.location(node) if hasattr(node, "lineno") else previous
            message = str(e) if str(e) else type(e).__name__
            kind = CompileTimeAssertionFailure if isinstance(e, AssertionError) else CompilationError
            raise kind(loc, message, getattr(e, "hint", None)) from e
        finally:
            self.builder.loc = previous

    def error(self, node, message: str, hint: Optional[str] = None) -> CompilationError:
        return CompilationError(self.parsed.location(node), message, hint)

    def generic_visit(self, node):
        raise self.error(node, f"unsupported Python construct in a kernel: {type(node).__name__}")

    # statements ---------------------------------------------------------------------------------
    def visit_block(self, statements) -> None:
        for stmt in statements:
            if self.returned:
                break
            self.visit(stmt)

    def visit_FunctionDef(self, node):
        self.visit_block(node.body)

    def visit_Pass(self, node):
        pass

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.visit(node.value)

    def visit_Return(self, node):
        if self.loop_depth:
            raise self.error(node, "return inside a run-time loop is not supported yet",
                             "compute a flag and move the rest of the body under `if`")
        self.return_value = self.visit(node.value) if node.value is not None else None
        self.returned = True

    def _assign(self, target, value, node) -> None:
        if isinstance(target, ast.Name):
            self.scope[target.id] = _wrap(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = value
            if isinstance(values, constexpr):
                values = values.value
            if not isinstance(values, (tuple, list)):
                raise self.error(node, f"cannot unpack a {type(values).__name__} into {len(target.elts)} names")
            if len(values) != len(target.elts):
                raise self.error(node, f"cannot unpack {len(values)} values into {len(target.elts)} names")
            for t, v in zip(target.elts, values):
                self._assign(t, v, node)
        else:
            raise self.error(node, f"cannot assign to a {type(target).__name__} in a kernel",
                             "assign to a plain name; memory is written with tl.store")

    def visit_Assign(self, node):
        value = self.visit(node.value)
        for target in node.targets:
            self._assign(target, value, node)

    def visit_AnnAssign(self, node):
        if node.value is None:
            return
        annotation = self._annotation(node.annotation)
        value = self.visit(node.value)
        if annotation is constexpr:
            if not _is_static(value):
                raise self.error(node, f"{ast.unparse(node.target)} is annotated tl.constexpr but its value is "
                                 "only known at run time")
            value = constexpr(_static(value))
        elif isinstance(annotation, T.dtype) and isinstance(value, tensor):
            value = self.semantic.cast(value, annotation)
        self._assign(node.target, value, node)

    def _annotation(self, node):
        try:
            return unwrap(self.visit(node))
        except CompilationError:
            return None

    def visit_AugAssign(self, node):
        current = self.visit(ast.Name(id=node.target.id, ctx=ast.Load(), lineno=node.lineno,
                                      col_offset=node.col_offset)) if isinstance(node.target, ast.Name) else None
        if current is None:
            raise self.error(node, "augmented assignment is only supported on plain names")
        value = self.visit(node.value)
        self._assign(node.target, self._binary(node.op, current, value, node), node)

    def visit_Assert(self, node):
        cond = self.visit(node.test)
        msg = _static(self.visit(node.msg)) if node.msg is not None else ""
        if _is_static(cond):
            lstd.static_assert(cond, msg)
        else:
            self.semantic.device_assert(cond, str(msg) or f"assertion `{ast.unparse(node.test)}` failed")

    def visit_If(self, node):
        cond = self.visit(node.test)
        if _is_static(cond):
            self.visit_block(node.body if _static(cond) else node.orelse)
            return
        cond = self._runtime_condition(cond, node.test, "if")
        then_scope, else_scope, then_region, else_region, then_returned, else_returned = self._branches(
            lambda: self.visit_block(node.body), lambda: self.visit_block(node.orelse))
        self._join(node, cond, then_scope, else_scope, then_region, else_region,
                   else_unread=getattr(node, SKIPPED_BY_RETURN, False))

    def _runtime_condition(self, cond: tensor, node, what: str) -> tensor:
        if cond.type.is_block():
            raise self.error(
                node,
                f"the condition of `{what}` is a block of shape {list(cond.type.shape)}, not a scalar: a program "
                "takes one branch, so the condition must be one value",
                "use tl.where(mask, a, b) for a per-lane choice, or reduce the block first "
                "(tl.max, tl.sum) if you meant 'any'/'all'",
            )
        if cond.dtype.is_ptr():
            raise self.error(node, f"the condition of `{what}` is a pointer")
        return self.semantic.to_bool(cond)

    def _branches(self, run_then, run_else):
        before = dict(self.scope)
        results = []
        for run in (run_then, run_else):
            region = Region()
            self.scope = dict(before)
            self.returned = False
            with self.builder.insert_into(region):
                run()
            results.append((dict(self.scope), region, self.returned))
        self.scope = before
        self.returned = False
        (then_scope, then_region, then_ret), (else_scope, else_region, else_ret) = results
        return then_scope, else_scope, then_region, else_region, then_ret, else_ret

    def _join(self, node, cond, then_scope, else_scope, then_region, else_region, else_unread=False) -> None:
        """Binds, after a run-time ``if``, the names both branches define. Values that differ become
        results of an ``if`` op; tuples and aggregates (block pointers...) are joined leaf by leaf.

        ``else_unread``: the ``if`` guards the rest of a block after an early return, and the
        programs that take the else-branch have returned, so they read none of the kernel's
        variables again. A variable the then-branch assigns (or defines) keeps the then-branch's
        kind and type whatever it was before, as when the rest of the kernel simply follows the
        return (Triton accepts ``x = x + offsets`` there, turning a pointer into a block of them)."""
        before = self.scope
        joined = []  # (name, rebuild, leaves): a leaf is a value, or a _Result of the `if` op
        then_values, else_values = [], []
        for name in list(then_scope) + [n for n in else_scope if n not in then_scope]:
            in_then, in_else = name in then_scope, name in else_scope
            if else_unread and in_then and not name.startswith("__"):
                a = then_scope[name]
                if in_else and else_scope[name] is a:
                    continue
                if _is_static(a):
                    before[name] = a  # the else-branch's programs never read it
                    continue
                if not in_else or not self._joinable(a, else_scope[name]):
                    with self.builder.insert_into(else_region):
                        else_scope[name] = self._placeholder_like(a)
                in_else = True
            if not (in_then and in_else):
                continue  # defined in one branch only: not visible after the `if`
            a, b = then_scope[name], else_scope[name]
            if a is b:
                continue
            if _is_static(a) and _is_static(b) and _same_static(a, b):
                before[name] = a
                continue
            if name == RETVAL and (_static(a) is None) != (_static(b) is None):
                # the branch that did not return never reads this value: any value of the type will do
                if _static(a) is None:
                    with self.builder.insert_into(then_region):
                        a = self._placeholder_like(b)
                else:
                    with self.builder.insert_into(else_region):
                        b = self._placeholder_like(a)
            a_leaves, rebuild, a_structure = flatten(a)
            b_leaves, _, b_structure = flatten(b)
            if a_structure != b_structure:
                raise self.error(node, f"`{name}` is {describe_structure(a_structure)} after the then-branch but "
                                 f"{describe_structure(b_structure)} after the else-branch; both branches must give "
                                 "it the same kind of value")
            leaves = []
            for k, (x, y) in enumerate(zip(a_leaves, b_leaves)):
                if _same_leaf(x, y):
                    leaves.append(x)
                    continue
                what = f"`{name}`" if a_structure == LEAF else f"element {k} of `{name}`"
                x, y = self._join_leaf(node, what, x, y, then_region, else_region)
                leaves.append(_Result(len(then_values)))
                then_values.append(x)
                else_values.append(y)
            joined.append((name, rebuild, leaves))
        with self.builder.insert_into(then_region):
            self.semantic._create("yield", then_values)
        with self.builder.insert_into(else_region):
            self.semantic._create("yield", else_values)
        op = self.semantic._create("if", [cond], [v.type for v in then_values], regions=[then_region, else_region])
        results = [tensor(r, r.type) for r in op.results]
        for name, rebuild, leaves in joined:
            before[name] = rebuild([results[leaf.index] if isinstance(leaf, _Result) else leaf for leaf in leaves])

    def _join_leaf(self, node, what, a, b, then_region, else_region):
        """The two branches' values of one leaf as tensors of one type (to be yielded)."""
        a_static, b_static = _is_static(a), _is_static(b)
        for value in (a, b):
            if _is_static(value) and not _is_number(value):
                raise self.error(node, f"{what} is {_static(a)!r} after the then-branch but {_static(b)!r} after "
                                 "the else-branch; a value that is not a number or a tensor must be the same in "
                                 "both branches of a run-time `if`")
        with self.builder.insert_into(then_region):
            if a_static:
                a = self.semantic.to_tensor(a, b.dtype if not b_static else None)
        with self.builder.insert_into(else_region):
            if b_static:
                b = self.semantic.to_tensor(b, a.dtype)
        if a.type != b.type:
            name = what.split("`")[1]
            raise self.error(node, f"{what} has type {a.type} after the then-branch but {b.type} after the "
                             "else-branch; both branches must give it the same type",
                             f"convert one of them, e.g. {name} = {name}.to(tl.{_type_hint(a.type)})")
        return a, b

    @staticmethod
    def _joinable(a, b) -> bool:
        """Whether ``_join`` can merge ``a`` and ``b``: the same structure, and leaf by leaf the same
        value, tensors of one type, or a number beside a scalar tensor."""
        a_leaves, _, a_structure = flatten(a)
        b_leaves, _, b_structure = flatten(b)
        if a_structure != b_structure:
            return False
        for x, y in zip(a_leaves, b_leaves):
            if _same_leaf(x, y):
                continue
            if isinstance(x, tensor) and isinstance(y, tensor):
                if x.type != y.type:
                    return False
            elif isinstance(x, tensor) or isinstance(y, tensor):
                other, value = (x, y) if isinstance(x, tensor) else (y, x)
                if other.type.is_block() or not (_is_static(value) and _is_number(value)):
                    return False
            elif not (_is_number(x) and _is_number(y)):
                return False
        return True

    def _placeholder_like(self, value):
        """A value of ``value``'s kind and types (zeros), for a path that never reads it."""
        leaves, rebuild, _ = flatten(value)
        out = []
        for leaf in leaves:
            if isinstance(leaf, tensor):
                zero = self.semantic.full(T.shape_of(leaf.type), 0, T.int64 if leaf.dtype.is_ptr() else leaf.dtype)
                out.append(self.semantic.cast(zero, leaf.dtype) if leaf.dtype.is_ptr() else zero)
            else:
                out.append(leaf)
        return rebuild(out)

    def visit_IfExp(self, node):
        cond = self.visit(node.test)
        if _is_static(cond):
            return self.visit(node.body if _static(cond) else node.orelse)
        cond = self._runtime_condition(cond, node.test, "if-expression")
        slot = "__ifexp_value__"
        then_scope, else_scope, then_region, else_region, _, _ = self._branches(
            lambda: self.scope.__setitem__(slot, self.visit(node.body)),
            lambda: self.scope.__setitem__(slot, self.visit(node.orelse)))
        saved = dict(self.scope)
        self.scope = {}
        self._join(node, cond, {slot: then_scope[slot]}, {slot: else_scope[slot]}, then_region, else_region)
        value = self.scope[slot]
        self.scope = saved
        return value

    # loops -----------------------------------------------------------------------------------------
    def visit_For(self, node):
        iterable = self.visit(node.iter)
        if isinstance(iterable, lstd.static_range) or (_is_static(iterable) and not isinstance(iterable, lstd.range)):
            self._static_for(node, iterable)
            return
        if not isinstance(iterable, lstd.range):
            raise self.error(node.iter, "a run-time loop must iterate over range(...) or tl.range(...)")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a single name")
        if node.orelse:
            raise self.error(node, "for ... else is not supported in kernels")
        bounds = [iterable.start, iterable.end, iterable.step]
        if _is_static(iterable.step) and _static(iterable.step) == 0:
            raise self.error(node.iter, "range() step must not be zero")
        index_type = T.int32
        for b in bounds:
            ty = T.int32 if _is_static(b) else b.dtype
            if _is_static(b) and not isinstance(_static(b), int):
                raise self.error(node.iter, f"range() bounds must be integers, got {_static(b)!r}")
            if not _is_static(b) and (not ty.is_int() or b.type.is_block()):
                raise self.error(node.iter, f"range() bounds must be integer scalars, got {b.type}")
            if ty.primitive_bitwidth == 64 or (_is_static(b) and not -(2**31) <= _static(b) < 2**31):
                index_type = T.int64
        lb, ub, step = (self.semantic.cast(self.semantic.to_tensor(b), index_type) for b in bounds)
        carried = [n for n in _assigned_names(node.body) if n in self.scope and n != node.target.id]
        flags = getattr(node, EXIT_FLAGS, ())
        if flags:
            self._for_with_exit(node, carried, flags, lb, ub, step, iterable.step)
            return
        self._emit_loop(node, carried, lambda types, bind: self._for_body(node, types, index_type),
                        lambda region, inits: self.semantic._create(
                            "for", [lb, ub, step, *inits], [v.type for v in inits], regions=[region]))

    def _for_with_exit(self, node, carried, flags, lb, ub, step, static_step):
        """A run-time ``for`` that may ``break`` or ``return`` (see control_flow.py): a ``while`` over
        a counter that stops when the counter reaches the bound or one of ``flags`` is set, so a
        program that leaves the loop early stops iterating, while the others go on."""
        counter, step_name = f"__for_counter{id(node)}__", f"__for_step{id(node)}__"
        self.scope[counter], self.scope[step_name] = lb, step
        step_value = _static(static_step) if _is_static(static_step) else None
        sem = self.semantic
        before_regions = []

        def make_region(types, bind):
            before = Region(types)
            saved = dict(self.scope)
            bind(before.args)
            with self.builder.insert_into(before):
                iv = self.scope[counter]
                if step_value is not None:
                    cond = sem.compare("lt" if step_value > 0 else "gt", iv, ub)
                else:  # a step of 0 runs no iteration
                    up = sem.logical("and", sem.compare("gt", step, 0), sem.compare("lt", iv, ub))
                    down = sem.logical("and", sem.compare("lt", step, 0), sem.compare("gt", iv, ub))
                    cond = sem.logical("or", up, down)
                for flag in flags:
                    value = self.scope.get(flag)
                    if value is None or (_is_static(value) and not _static(value)):
                        continue
                    stop = sem.to_tensor(bool(_static(value))) if _is_static(value) else value
                    cond = sem.logical("and", cond, sem.logical_not(stop))
                sem._create("condition", [cond, *before.args])
            self.scope = saved
            body = Region(types)
            before_regions.append(before)
            return body, body.args, {}

        def name(id_, ctx):
            return ast.copy_location(ast.Name(id=id_, ctx=ctx), node)

        prelude = [
            ast.copy_location(ast.Assign(targets=[name(node.target.id, ast.Store())], value=name(counter, ast.Load())),
                              node),
            ast.copy_location(ast.Assign(targets=[name(counter, ast.Store())], value=ast.copy_location(
                ast.BinOp(left=name(counter, ast.Load()), op=ast.Add(), right=name(step_name, ast.Load())), node)),
                node),
        ]
        # "bounded": the counter ends the loop, so it is no spin wait, whatever its flags depend on
        self._emit_loop(node, [counter] + carried, make_region,
                        lambda region, inits: sem._create("while", inits, [v.type for v in inits],
                                                          attrs={"bounded": True},
                                                          regions=[before_regions[-1], region]),
                        body=prelude + node.body)
        self.scope.pop(counter, None)
        self.scope.pop(step_name, None)

    def _static_for(self, node, iterable):
        if isinstance(iterable, lstd.static_range):
            values = [_static(iterable.start), _static(iterable.end), _static(iterable.step)]
            if not all(isinstance(v, int) for v in values):
                raise self.error(node.iter, "tl.static_range bounds must be constexpr integers")
            items = builtins.range(*values)
        else:
            items = _static(iterable)
            if isinstance(iterable, (tuple, list)):
                items = iterable
        flags = getattr(node, EXIT_FLAGS, ())
        for item in items:
            values = [self.scope[f] for f in flags if f in self.scope]
            if any(_is_static(v) and _static(v) for v in values):
                break  # a break (or return) that happened at compile time
            self._assign(node.target, _wrap(item), node)
            if any(not _is_static(v) for v in values):
                # some programs may have left the loop: run this iteration only in the others
                self.visit(_guarded(node.body, flags, node))
                continue
            self.visit_block(node.body)
            if self.returned:
                break

    def _for_body(self, node, carried_types, index_type):
        region = Region([index_type] + carried_types)
        return region, region.args[1:], {node.target.id: tensor(region.args[0], index_type)}

    def _emit_loop(self, node, carried, make_region, create_op, body=None):
        """Shared by for and while: finds the carried values' types, builds the body, binds results.

        Each carried name is taken apart into leaves (``aggregates.flatten``: a tuple's elements, a
        block pointer's base, shape, strides and offsets). A leaf is either carried (a region
        argument of some IR type) or fixed (the body sees its value from before the loop). The
        body is built, and built again while some leaf's treatment has to change: a compile-time
        number assigned a run-time value becomes carried (with the type it ends the body with), a
        carried leaf the body leaves as it found it becomes fixed, so that a block pointer moved
        by ``tl.advance`` carries only its offsets.

        ``make_region(types, bind)`` returns (body region, its carried arguments, extra names to
        bind in the body); ``bind(values)`` sets the carried names from values of ``types`` (the
        while loop uses it for its condition region). ``body`` replaces ``node.body``.
        """
        statements = node.body if body is None else body
        initial = {name: self.scope[name] for name in carried}
        # per leaf: FIXED, NATURAL (a number carried with its own type), or the IR type it is carried as
        states = {name: [_initial_state(leaf) for leaf in flatten(value)[0]] for name, value in initial.items()}
        pending: dict[str, Any] = {}  # name -> a value whose kind the name takes (a returned value)
        for attempt in builtins.range(8):
            for name, value in pending.items():
                initial[name] = self._placeholder_like(value)
                states[name] = [_initial_state(leaf) for leaf in flatten(initial[name])[0]]
            pending = {}
            flats = {name: flatten(value) for name, value in initial.items()}
            slots = [(name, k) for name in carried for k, state in enumerate(states[name]) if state is not _FIXED]
            # materialise the initial values in the enclosing region, with the types settled so far
            init_tensors = []
            for name, k in slots:
                state = states[name][k]
                init_tensors.append(self._coerce(flats[name][0][k], None if state is _NATURAL else state))
            types = [t.type for t in init_tensors]

            def bind(values, flats=flats, slots=slots):
                leaves = {name: list(flats[name][0]) for name in carried}
                for (name, k), value in zip(slots, values):
                    leaves[name][k] = tensor(value, value.type)
                for name in carried:
                    self.scope[name] = flats[name][1](leaves[name])

            region, args, extra = make_region(types, bind)
            saved_scope = dict(self.scope)
            static_mark = len(self.semantic.static_output)
            bind(args)
            self.scope.update(extra)
            arg_of = {slot: arg for slot, arg in zip(slots, args)}
            retry = False
            self.loop_depth += 1
            try:
                with self.builder.insert_into(region):
                    self.visit_block(statements)
                    out_tensors = []
                    for name in carried:
                        out = self.scope[name]
                        out_leaves, _, out_structure = flatten(out)
                        if name == RETVAL and _static(initial[name]) is None and _static(out) is not None:
                            pending[name] = out  # a return inside the loop: carry a value of its kind
                            retry = True
                            continue
                        if out_structure != flats[name][2]:
                            raise self.error(node, f"loop-carried `{name}` enters the loop as "
                                             f"{describe_structure(flats[name][2])} but is "
                                             f"{describe_structure(out_structure)} at the end of the body")
                        for k, out_leaf in enumerate(out_leaves):
                            retry |= self._settle_leaf(node, name, k, out_leaf, flats[name][0][k], states[name],
                                                       arg_of.get((name, k)), out_tensors, attempt)
                    if not retry:
                        self.semantic._create("yield", out_tensors)
            finally:
                self.loop_depth -= 1
            self.scope = saved_scope
            if retry:
                # the constants materialised for this attempt are dead: DCE removes them
                del self.semantic.static_output[static_mark:]
                continue
            op = create_op(region, init_tensors)
            bind(op.results)
            return
        raise self.error(node, "could not settle the types of the loop-carried values")

    def _settle_leaf(self, node, name, k, out, init, states, arg, out_tensors, attempt) -> bool:
        """Checks one leaf of a carried name at the end of the body; appends what it yields to
        ``out_tensors``. Returns True when the body must be built again with ``states`` changed."""
        state = states[k]
        if state is _FIXED:
            if _same_leaf(out, init):
                return False
            if isinstance(init, tensor) or _is_number(init):
                states[k] = init.type if isinstance(init, tensor) else _NATURAL
                return True
            raise self.error(node, f"`{name}` is {_static(init)!r} before the loop but changes inside it; only "
                             "numbers and tensors can change from one iteration to the next",
                             f"give `{name}` a value of its final kind before the loop")
        if isinstance(out, tensor) and out.handle is arg:
            states[k] = _FIXED  # the body leaves it as it found it: no need to carry it
            return True
        if not isinstance(init, tensor) and _is_static(out) and _same_leaf(out, init):
            states[k] = _FIXED
            return True
        out = self.semantic.to_tensor(out)
        if out.type != arg.type:
            if not isinstance(init, tensor) and attempt < 6:
                states[k] = out.type
                return True
            what = f"`{name}`" if len(states) == 1 and not is_composite(init) else f"`{name}` (part {k})"
            raise self.error(node, f"loop-carried {what} enters the loop as {arg.type} but is "
                             f"{out.type} at the end of the body; a value must keep its type "
                             "across iterations",
                             f"give `{name}` its final type before the loop (e.g. tl.zeros(..., dtype))")
        out_tensors.append(out)
        return False

    def _coerce(self, value, ty) -> tensor:
        """``value`` as a tensor of type ``ty`` (its natural type when ``ty`` is None)."""
        t = self.semantic.to_tensor(value)
        if ty is None or t.type == ty:
            return t
        t = self.semantic.cast(t, ty.scalar)
        return self.semantic.broadcast_to(t, T.shape_of(ty)) if ty.is_block() else t

    def visit_While(self, node):
        if node.orelse:
            raise self.error(node, "while ... else is not supported in kernels")
        with self.builder.insert_into(Region()):  # a look at the condition; its ops are discarded
            test = self.visit(node.test)
        if _is_static(test) and not _static(test):
            return
        carried = [n for n in _assigned_names(node.body) if n in self.scope]
        before_regions = []  # this loop's own: a nested while builds its regions in between

        def make_region(types, bind):
            before = Region(types)
            saved = dict(self.scope)
            bind(before.args)
            with self.builder.insert_into(before):
                cond = self.visit(node.test)
                if _is_static(cond):
                    cond = self.semantic.to_tensor(bool(_static(cond)))
                cond = self._runtime_condition(cond, node.test, "while")
                self.semantic._create("condition", [cond, *before.args])
            self.scope = saved
            body = Region(types)
            before_regions.append(before)
            return body, body.args, {}

        self._emit_loop(node, carried, make_region,
                        lambda region, inits: self.semantic._create(
                            "while", inits, [v.type for v in inits], regions=[before_regions[-1], region]))

    def visit_Break(self, node):
        raise self.error(node, "break is not supported in kernels yet", "use a while loop with a flag")

    def visit_Continue(self, node):
        raise self.error(node, "continue is not supported in kernels yet", "put the rest of the body under `if`")

    # expressions -------------------------------------------------------------------------------------
    def visit_Constant(self, node):
        return constexpr(node.value)

    def visit_Name(self, node):
        name = node.id
        if name in self.scope:
            return self.scope[name]
        if name in self.closure:
            return self._global_value(node, name, self.closure[name])
        if name in self.globals:
            return self._global_value(node, name, self.globals[name])
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.error(node, f"name '{name}' is not defined")

    def _global_value(self, node, name, value):
        if isinstance(value, (bool, int, float)) and not isinstance(value, constexpr):
            raise self.error(node, f"cannot use the global variable `{name}` (= {value!r}) in a kernel: only "
                             "constexpr globals are allowed, because their value is compiled into the kernel",
                             f"declare it as `{name} = tl.constexpr({value!r})`, or pass it as an argument")
        return _wrap(value) if isinstance(value, (str,)) else value

    def visit_Tuple(self, node):
        values = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                values.extend(self.visit(elt.value))
            else:
                values.append(self.visit(elt))
        return tuple(values)

    visit_List = visit_Tuple

    def visit_JoinedStr(self, node):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            else:
                v = self.visit(value.value)
                if not _is_static(v):
                    raise self.error(value, "f-strings in kernels may only format constexprs")
                spec = ast.unparse(value.format_spec)[2:-1] if value.format_spec is not None else ""
                parts.append(format(_static(v), spec))
        return constexpr("".join(parts))

    def visit_Slice(self, node):
        parts = [_static(self.visit(p)) if p is not None else None for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def visit_Subscript(self, node):
        value = self.visit(node.value)
        index = self.visit(node.slice)
        if isinstance(value, tensor):
            return self.semantic.subscript(value, _static(index) if _is_static(index) else index)
        if not _is_static(index):
            raise self.error(node, "tuples and lists can only be indexed with constexprs")
        container = value.value if isinstance(value, constexpr) else value
        return _wrap(container[_static(index)])

    def visit_Attribute(self, node):
        value = self.visit(node.value)
        target = value.value if isinstance(value, constexpr) and not isinstance(value.value, tensor) else value
        try:
            result = getattr(target, node.attr)
        except AttributeError:
            if node.attr == "dtype" and isinstance(target, (bool, int, float)):
                # Triton makes a tensor of a number assigned to a variable: `v = 1; v.dtype` is int32
                from .promotion import python_scalar_type
                return python_scalar_type(target)
            raise self.error(node, f"{_describe(target)} has no attribute '{node.attr}'") from None
        return _wrap(result) if isinstance(result, (bool, int, float, str)) else result

    def _binary(self, op, lhs, rhs, node):
        fn = _BINARY.get(type(op))
        if fn is None:
            raise self.error(node, f"operator {type(op).__name__} is not supported in kernels")
        if _is_static(lhs) and _is_static(rhs):
            return _wrap(fn(_static(lhs), _static(rhs)))
        return fn(lhs, rhs)

    def visit_BinOp(self, node):
        return self._binary(node.op, self.visit(node.left), self.visit(node.right), node)

    def visit_UnaryOp(self, node):
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            if _is_static(operand):
                return constexpr(not _static(operand))
            return self.semantic.logical_not(operand)
        fn = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[type(node.op)]
        if _is_static(operand):
            return _wrap(fn(_static(operand)))
        return fn(operand)

    def visit_Compare(self, node):
        left = self.visit(node.left)
        result = None
        for op, comparator in zip(node.ops, node.comparators):
            right = self.visit(comparator)
            if type(op) in _STATIC_COMPARE:
                a = _static(left) if _is_static(left) else left
                b = _static(right) if _is_static(right) else right
                value = constexpr(_STATIC_COMPARE[type(op)](a, b))
            elif _is_static(left) and _is_static(right):
                value = constexpr(_COMPARE[type(op)](_static(left), _static(right)))
            else:
                value = _COMPARE[type(op)](left, right)
            if result is None:
                result = value
            elif _is_static(result) and _is_static(value):
                result = constexpr(bool(_static(result)) and bool(_static(value)))
            else:
                result = self.semantic.logical("and", result, value)
            left = right
        return result

    def visit_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        result = self.visit(node.values[0])
        for value_node in node.values[1:]:
            if _is_static(result):
                if bool(_static(result)) != is_and:
                    return result  # short-circuit on a constexpr
                result = self.visit(value_node)
                continue
            value = self.visit(value_node)
            result = self.semantic.logical("and" if is_and else "or", result, value)
        return result

    def visit_Lambda(self, node):
        raise self.error(node, "lambdas are not supported in kernels", "define a @triton.jit function instead")

    # calls -----------------------------------------------------------------------------------------------
    def visit_Call(self, node):
        fn = self.visit(node.func)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(_static(self.visit(a.value)) if _is_static(self.visit(a.value)) else self.visit(a.value))
            else:
                args.append(self.visit(a))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(_static(self.visit(kw.value)))
            else:
                kwargs[kw.arg] = self.visit(kw.value)
        return self.call(fn, args, kwargs, node)

    def call(self, fn, args, kwargs, node):
        from ..runtime.jit import JITFunction

        target = unwrap(fn)
        if isinstance(target, JITFunction):
            return self.call_jit(target, args, kwargs)
        if lcore.is_builtin(target):
            return _wrap(target(*args, **kwargs))
        if target is constexpr:
            if len(args) != 1 or not _is_static(args[0]):
                raise self.error(node, "tl.constexpr(...) takes one compile-time value")
            return constexpr(_static(args[0]))
        if target in (builtins.min, builtins.max):
            if all(_is_static(a) for a in args) and not kwargs:
                return _wrap(target(*[_static(a) for a in args]))
            fold = self.semantic.minmax
            result = args[0]
            for a in args[1:]:
                result = fold("minimum" if target is builtins.min else "maximum", result, a)
            return result
        if target is builtins.print:
            prefix = ""
            if args and _is_static(args[0]) and isinstance(_static(args[0]), str):
                prefix, args = _static(args[0]), args[1:]
            self.semantic.device_print(prefix, args)
            return None
        if target is builtins.range:
            return lstd.range(*args, **kwargs)
        if isinstance(target, type) and target in (lstd.range, lstd.static_range):
            return target(*args, **kwargs)
        if isinstance(target, pytypes.MethodType) and isinstance(target.__self__, tensor):
            return _wrap(target(*args, **kwargs))
        if callable(target) and getattr(target, "__qualname__", "").startswith("tensor.__getattr__"):
            return _wrap(target(*args, **kwargs))
        if target in (builtins.isinstance, builtins.type, builtins.len, builtins.hasattr) and not kwargs:
            # questions about a value's kind are answered at compile time, run-time value or not
            return _wrap(target(*[_static(a) for a in args]))
        if all(_is_static(a) for a in args) and all(_is_static(v) for v in kwargs.values()) and (
                target in _STATIC_BUILTINS or not _is_kernel_language(target)):
            return _wrap(target(*[_static(a) for a in args], **{k: _static(v) for k, v in kwargs.items()}))
        name = getattr(target, "__name__", repr(target))
        raise self.error(node, f"cannot call `{name}` with run-time values inside a kernel: it is neither a "
                         "@triton.jit function nor a triton.language builtin",
                         f"decorate `{name}` with @triton.jit, or use the tl equivalent")

    def call_jit(self, jit_fn, args, kwargs=None):
        """Inlines a @jit function called from a kernel; returns what it returns."""
        kwargs = kwargs or {}
        if self.call_depth > 64:
            raise RecursionError("@jit functions call each other more than 64 levels deep (recursion is not supported)")
        parsed = jit_fn.parsed
        scope: dict[str, Any] = {}
        params = parsed.params
        if len(args) > len(params):
            raise TypeError(f"{parsed.name}() takes {len(params)} arguments but {len(args)} were given")
        for param, value in zip(params, args):
            scope[param.name] = value
        for key, value in kwargs.items():
            if key not in [p.name for p in params]:
                raise TypeError(f"{parsed.name}() got an unexpected keyword argument '{key}'")
            scope[key] = value
        for param in params:
            if param.name not in scope:
                if param.default is inspect.Parameter.empty:
                    raise TypeError(f"{parsed.name}() is missing the argument '{param.name}'")
                scope[param.name] = _wrap(param.default)
            if is_constexpr_annotation(param.annotation) and _is_static(scope[param.name]):
                scope[param.name] = constexpr(_static(scope[param.name]))
            else:
                # as in Triton, what a helper's parameter holds is decided by the value passed: a
                # tl.constexpr annotation on a helper does not turn a tensor into a constant (Triton's
                # fused-attention tutorial passes its offset blocks to such parameters)
                scope[param.name] = _wrap(scope[param.name])
        callee = CodeGenerator(parsed, self.semantic, scope, self.call_depth + 1)
        callee.visit(parsed.tree)
        return callee.return_value


def _guarded(statements, flags, like) -> ast.If:
    """``if not (flag or flag ...): statements``."""
    names = [ast.copy_location(ast.Name(id=f, ctx=ast.Load()), like) for f in flags]
    any_set = names[0] if len(names) == 1 else ast.copy_location(ast.BoolOp(op=ast.Or(), values=names), like)
    test = ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=any_set), like)
    return ast.copy_location(ast.If(test=test, body=list(statements), orelse=[]), like)


def _is_kernel_language(fn) -> bool:
    module = getattr(fn, "__module__", "") or ""
    return module.startswith("tritium.language")


def _describe(value) -> str:
    if isinstance(value, tensor):
        return f"a tensor of type {value.type}"
    if isinstance(value, pytypes.ModuleType):
        return f"module {value.__name__}"
    return f"{type(value).__name__} {value!r}"


def _type_hint(ty) -> str:
    return {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64"}.get(ty.scalar.name, ty.scalar.name)


def generate_ir(jit_fn, arg_specs: dict[str, Any]) -> tuple[Function, list[str]]:
    """Builds the IR of kernel ``jit_fn`` for ``arg_specs``: name -> IR type, or constexpr value.

    Returns the function and the text static_print produced.
    """
    parsed = jit_fn.parsed
    # IR parameters: one per run-time argument; a tensor descriptor is passed as several scalars
    ir_args: list[tuple[str, Any]] = []
    for p in parsed.params:
        spec = arg_specs[p.name]
        if isinstance(spec, tensor_descriptor_type):
            ir_args.extend(spec.ir_arguments(p.name))
        elif not isinstance(spec, constexpr):
            ir_args.append((p.name, spec))
    body = Region([ty for _, ty in ir_args])
    fn = Function(parsed.name, [name for name, _ in ir_args], body, parsed.location(parsed.tree),
                  {n: v.value for n, v in arg_specs.items() if isinstance(v, constexpr)})
    builder = Builder()
    scope: dict[str, Any] = {}
    args = iter(body.args)
    for p in parsed.params:
        spec = arg_specs[p.name]
        if isinstance(spec, tensor_descriptor_type):
            values = [next(args) for _ in spec.ir_arguments(p.name)]
            scope[p.name] = spec.build([tensor(v, v.type) for v in values])
        else:
            scope[p.name] = spec if isinstance(spec, constexpr) else tensor(next(args), spec)
    semantic = Semantic(builder)
    generator = CodeGenerator(parsed, semantic, scope)
    semantic.call_jit = generator.call_jit
    with semantic, builder.insert_into(body):
        generator.visit(parsed.tree)
    return fn, semantic.static_output
