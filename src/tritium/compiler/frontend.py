"""The frontend: walks a @jit function's Python AST and emits typed tile IR.

One ``visit_<Node>`` per construct. Constexprs are evaluated here, in Python; everything else
becomes IR through ``Semantic``. Calls to other @jit functions are inlined. Every exception
raised while visiting a node is re-raised once, as a ``CompilationError`` carrying that node's
``file:line:col``.

``CodeGenerator`` is put together from one class per concern: ``BranchVisitor``
(frontend_branches.py: run-time ``if`` and conditional expressions), ``LoopVisitor``
(frontend_loops.py: ``for`` and ``while``), ``CallVisitor`` (frontend_calls.py: names,
attributes, calls and inlining); statements, expressions and ``generate_ir`` are here.
"""
from __future__ import annotations

import ast
import builtins
import dataclasses
import inspect
import operator
import textwrap
from dataclasses import dataclass
from typing import Any, Optional

from ..errors import CompilationError, CompileTimeAssertionFailure
from ..language import standard as lstd
from ..language.aggregate import is_aggregate
from ..language.core import constexpr, is_const_annotation, tensor, unwrap
from ..language.tensor_descriptor import tensor_descriptor_type
from ..language.tuple_type import tuple_type
from .control_flow import lower_early_returns
from .strict import check_strict
from .frontend_branches import BranchVisitor
from .frontend_calls import CallVisitor, _is_jit
from .frontend_loops import LoopVisitor
from .frontend_values import _is_static, _static, _wrap, is_constexpr_annotation
from .ir import types as T
from .ir.builder import Builder
from .ir.ops import Function, Location, Region
from .semantics import Semantic

__all__ = ["CodeGenerator", "ParsedFunction", "generate_ir", "is_constexpr_annotation", "parse_function"]


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
    source_tree: Optional[ast.FunctionDef] = None  # as written, before early returns are rewritten

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
    lowered = lower_early_returns(tree)
    file = inspect.getsourcefile(fn) or inspect.getfile(fn)
    params = list(inspect.signature(fn).parameters.values())
    return ParsedFunction(fn, fn.__name__, file, first_line, indent, lowered, params, tree)


class _LoopSignal(Exception):
    pass


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


class CodeGenerator(BranchVisitor, LoopVisitor, CallVisitor, ast.NodeVisitor):
    def __init__(self, parsed: ParsedFunction, semantic: Semantic, scope: dict[str, Any], call_depth: int = 0,
                 inlined_at: Optional[Location] = None):
        self.parsed = parsed
        # The call site this @jit helper is being inlined at (None for the kernel itself): every
        # location in the helper records it, so errors show the helper's line and the call.
        self.inlined_at = inlined_at
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
    def location(self, node: ast.AST) -> Location:
        loc = self.parsed.location(node)
        return dataclasses.replace(loc, inlined_at=self.inlined_at) if self.inlined_at is not None else loc

    def visit(self, node):
        previous = self.builder.loc
        if hasattr(node, "lineno"):
            self.builder.loc = self.location(node)
        try:
            return super().visit(node)
        except CompilationError:
            raise
        except RecursionError:
            raise
        except Exception as e:  # a user mistake found while compiling this node
            loc = self.location(node) if hasattr(node, "lineno") else previous
            message = str(e) if str(e) else type(e).__name__
            kind = CompileTimeAssertionFailure if isinstance(e, AssertionError) else CompilationError
            raise kind(loc, message, getattr(e, "hint", None)) from e
        finally:
            self.builder.loc = previous

    def error(self, node, message: str, hint: Optional[str] = None) -> CompilationError:
        return CompilationError(self.location(node), message, hint)

    def generic_visit(self, node):
        raise self.error(node, f"unsupported Python construct in a kernel: {type(node).__name__}")

    # statements ---------------------------------------------------------------------------------
    def visit_block(self, statements) -> None:
        for stmt in statements:
            if self.returned:
                break
            self.visit(stmt)

    def visit_FunctionDef(self, node):
        if getattr(self, "_entered_function", False):
            raise self.error(node, "nested function definitions are not supported in kernels",
                             f"define `{node.name}` at module level with @triton.jit and call it from the kernel")
        self._entered_function = True
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
        elif isinstance(target, ast.Attribute):
            raise self.error(node, f"cannot assign to the attribute '{target.attr}' in a kernel: kernel values (an "
                             "aggregate's fields too) do not change once built",
                             "build a new value and assign it to a name")
        else:
            kind = {ast.Subscript: "an element (x[i] = ...)", ast.Starred: "a starred name"}.get(
                type(target), type(target).__name__)
            raise self.error(node, f"cannot assign to {kind} in a kernel",
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

    # expressions -------------------------------------------------------------------------------------
    def visit_Constant(self, node):
        return constexpr(node.value)

    def visit_Tuple(self, node):
        values = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                values.extend(self.visit(elt.value))
            else:
                values.append(self.visit(elt))
        return tuple(values)

    visit_List = visit_Tuple

    def visit_ListComp(self, node):
        """``[f(v) for v in values]`` over a tuple or ``tl.static_range`` (unrolled at compile
        time, as Triton does): a tuple of the results. Conditions must be compile-time values."""
        if len(node.generators) != 1 or node.generators[0].is_async:
            raise self.error(node, "a comprehension in a kernel takes one `for` over a tuple or tl.static_range")
        generator = node.generators[0]
        iterable = self.visit(generator.iter)
        if isinstance(iterable, lstd.static_range):
            bounds = [_static(iterable.start), _static(iterable.end), _static(iterable.step)]
            items = builtins.range(*bounds)
        elif isinstance(_static(iterable) if _is_static(iterable) else iterable, (tuple, list, builtins.range)):
            items = _static(iterable) if _is_static(iterable) else iterable
        else:
            raise self.error(generator.iter, "a comprehension in a kernel iterates over a tuple or tl.static_range "
                             "(it is unrolled at compile time)")
        names = [n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)]
        saved = {name: self.scope[name] for name in names if name in self.scope}
        results = []
        try:
            for item in items:
                self._assign(generator.target, _wrap(item), node)
                keep = True
                for condition in generator.ifs:
                    value = self.visit(condition)
                    if not _is_static(value):
                        raise self.error(condition, "a comprehension's condition must be a compile-time value")
                    keep = keep and bool(_static(value))
                if keep:
                    results.append(self.visit(node.elt))
        finally:
            for name in names:
                self.scope.pop(name, None)
            self.scope.update(saved)
        return tuple(results)

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
        if is_aggregate(value):
            method = getattr(type(value), "__getitem__", None)
            if method is None:
                raise self.error(node, f"the aggregate {type(value).__name__} has no __getitem__")
            if _is_jit(method):
                return self.call_jit(method, [value, index])
            return _wrap(self.call_at_compile_time(method, [value, index], {}))
        if not _is_static(index):
            raise self.error(node, "tuples and lists can only be indexed with constexprs")
        container = value.value if isinstance(value, constexpr) else value
        return _wrap(container[_static(index)])

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

# Arguments passed as several IR parameters, which the kernel sees as one value.
_COMPOSITE_ARGUMENTS = (tensor_descriptor_type, tuple_type)


def _annotated(ty, param):
    """A kernel parameter's type as the kernel sees it: a pointer annotated ``tl.const`` points to
    constant data (stores through it are refused)."""
    if is_const_annotation(param.annotation) and isinstance(ty, T.pointer_type):
        return T.const_pointer_type(ty.element_ty)
    return ty


def generate_ir(jit_fn, arg_specs: dict[str, Any], num_warps: int = 4) -> tuple[Function, list[str]]:
    """Builds the IR of kernel ``jit_fn`` for ``arg_specs``: name -> IR type, or constexpr value.

    Returns the function and the text static_print produced.
    """
    parsed = jit_fn.parsed
    check_strict(parsed)
    # IR parameters: one per run-time argument; a tensor descriptor is passed as several scalars, a
    # tuple as its run-time elements
    ir_args: list[tuple[str, Any]] = []
    for p in parsed.params:
        spec = arg_specs[p.name]
        if isinstance(spec, _COMPOSITE_ARGUMENTS):
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
        if isinstance(spec, _COMPOSITE_ARGUMENTS):
            values = [next(args) for _ in spec.ir_arguments(p.name)]
            scope[p.name] = spec.build([tensor(v, v.type) for v in values])
        else:
            scope[p.name] = spec if isinstance(spec, constexpr) else tensor(next(args), _annotated(spec, p))
    semantic = Semantic(builder)
    semantic.num_warps = num_warps
    generator = CodeGenerator(parsed, semantic, scope)
    semantic.call_jit = generator.call_jit
    with semantic, builder.insert_into(body):
        generator.visit(parsed.tree)
    fn.reads_num_warps = semantic.num_warps_read  # its code then differs with the launch's num_warps
    return fn, semantic.static_output
