"""The frontend's loops: unrolled static loops, and run-time ``for`` and ``while`` with their carried values."""
from __future__ import annotations

import ast
import builtins
from typing import Any

from .. import config
from ..language import standard as lstd
from ..language.core import tensor
from ..language.shorthands import condition
from .aggregates import describe_structure, flatten, is_composite
from .control_flow import EXIT_FLAGS, RETVAL
from .frontend_values import _is_number, _is_static, _same_leaf, _static, _wrap
from .ir import types as T
from .ir.ops import Region

# How a loop treats one leaf of a carried value (see CodeGenerator._emit_loop); otherwise an IR type.
_FIXED = "fixed"
_NATURAL = "natural"


def _initial_state(leaf):
    if isinstance(leaf, tensor):
        return leaf.type
    return _NATURAL if _is_number(leaf) else _FIXED


def _assigned_names(statements) -> list[str]:
    """Names assigned anywhere in these statements, in first-assignment order."""
    names: list[str] = []
    for stmt in statements:
        for node in ast.walk(stmt):
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
                targets = [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name) and sub.id not in names:
                        names.append(sub.id)
    return names


def _guarded(statements, flags, like) -> ast.If:
    """``if not (flag or flag ...): statements``."""
    names = [ast.copy_location(ast.Name(id=f, ctx=ast.Load()), like) for f in flags]
    any_set = names[0] if len(names) == 1 else ast.copy_location(ast.BoolOp(op=ast.Or(), values=names), like)
    test = ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=any_set), like)
    return ast.copy_location(ast.If(test=test, body=list(statements), orelse=[]), like)


def _unwrap_condition(test):
    """A ``while`` test written ``tl.condition(c, disable_licm=...)`` is ``c`` (the hint is kept by no
    backend: hoisting is the passes' own choice)."""
    return test.condition if isinstance(test, condition) else test


class LoopVisitor:
    """``visit_For``, ``visit_While``, ``visit_Break`` and ``visit_Continue`` of ``CodeGenerator``
    (see frontend.py); ``_emit_loop`` settles what a run-time loop carries."""

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
                            "for", [lb, ub, step, *inits], [v.type for v in inits], iterable.options,
                            regions=[region]))

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
            if config.strict():
                raise self.error(node, f"Loop-carried variable {name} has initial type {arg.type} but is re-assigned "
                                 f"to {out.type} in loop! Please make sure that the type stays consistent.",
                                 "compiled Triton rejects this (TRITIUM_STRICT=1); give the variable its final type "
                                 "before the loop, e.g. tl.zeros(..., dtype)")
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
            test = _unwrap_condition(self.visit(node.test))
        if _is_static(test) and not _static(test):
            return
        carried = [n for n in _assigned_names(node.body) if n in self.scope]
        before_regions = []  # this loop's own: a nested while builds its regions in between

        def make_region(types, bind):
            before = Region(types)
            saved = dict(self.scope)
            bind(before.args)
            with self.builder.insert_into(before):
                cond = _unwrap_condition(self.visit(node.test))
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
