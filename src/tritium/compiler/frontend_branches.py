"""The frontend's run-time ``if`` and conditional expression: both branches built, their names joined."""
from __future__ import annotations

from dataclasses import dataclass

from ..language.core import tensor
from .aggregates import LEAF, describe_structure, flatten
from .control_flow import RETVAL, SKIPPED_BY_RETURN
from .frontend_values import _is_number, _is_static, _same_leaf, _same_static, _static
from .ir import types as T
from .ir.ops import Region


@dataclass(frozen=True)
class _Result:
    """The ``index``-th result of an op being built (a joined leaf)."""

    index: int


def _type_hint(ty) -> str:
    return {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64"}.get(ty.scalar.name, ty.scalar.name)


class BranchVisitor:
    """``visit_If`` and ``visit_IfExp`` of ``CodeGenerator`` (see frontend.py), with the join of the
    values the two branches leave behind."""

    def visit_If(self, node):
        cond = self.visit(node.test)
        if _is_static(cond):
            self.visit_block(node.body if _static(cond) else node.orelse)
            return
        cond = self._runtime_condition(cond, node.test, "if")
        then_scope, else_scope, then_region, else_region, _, _ = self._branches(
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
                    before[name] = a  # both bind one value (perhaps one defined before the `if`)
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
                before[name] = a  # both bind one value (perhaps one defined before the `if`)
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
