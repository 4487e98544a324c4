"""The launch fast path's argument binder: a function generated once per kernel from its parameter
list, which turns a launch's arguments into the fast path's key in one call.

``binder(*args, **kwargs)`` returns ``(key, values, settings, options)`` for a launch whose
arguments are all plain (tensors, Python numbers, None; constexprs of Python scalars or dtypes)
and whose other keywords are compile options of plain values (``num_warps=8``), and None for
anything else, which takes the full path (so does a call the parameter list does not bind: the
full path says what is wrong). ``key`` holds everything the full specialization key is computed
from (each tensor's dtype, 16-byte alignment and device; each integer's ``== 1``, divisibility by
16 and width; constexpr values; the options; the launch settings), so one maps to exactly one
compiled kernel and one way of launching it. ``values``: parameter name -> value, defaults applied;
``settings``: ``config.launch_settings()``; ``options``: the compile options given.

Generated rather than a loop over the parameters: a launch of a kernel with a handful of
parameters spends less time binding than one of the loop's attribute reads per parameter.
"""
from __future__ import annotations

import inspect
import keyword
import sys
from typing import Callable

from .. import config
from ..compiler.ir import types as T

# the Python types of constexpr values whose launches take the fast path (their value is the key)
PLAIN_CONSTANTS = frozenset({int, float, bool, str, type(None)})

_PREFIX = "_tritium_"


def _never(*args, **kwargs):
    return None


# the builtins the generated code uses, under names of its own: a parameter may be called `type` or `int`
_BUILTINS = {f"{_PREFIX}{name}": value for name, value in
             (("type", type), ("isinstance", isinstance), ("tuple", tuple), ("sorted", sorted), ("int", int),
              ("float", float), ("bool", bool))}


def _runtime_lines(name: str, specialize: bool) -> list[str]:
    """The statements that set ``_tritium_k_<name>``, the token of the run-time argument ``name``
    (``return None`` for a value the fast path does not take)."""
    token = f"{_PREFIX}k_{name}"
    if specialize:
        integer = (f"({_PREFIX}int, {name} == 1, {name} % 16 == 0, {name} >= 9223372036854775808, "
                   f"not -2147483648 <= {name} < 2147483648)")
    else:  # do_not_specialize: neither == 1 nor divisibility is part of the key
        integer = (f"({_PREFIX}int, False, False, {name} >= 9223372036854775808, "
                   f"not -2147483648 <= {name} < 2147483648)")
    return [
        f"    {_PREFIX}t = {_PREFIX}type({name})",
        f"    if {_PREFIX}t is {_PREFIX}int:",
        # the full path says such an integer fits no integer type
        f"        if not -9223372036854775808 <= {name} < 18446744073709551616:",
        "            return None",
        f"        {token} = {integer}",
        f"    elif {_PREFIX}t is {_PREFIX}float or {_PREFIX}t is {_PREFIX}bool or {name} is None:",
        f"        {token} = {_PREFIX}t",
        f"    elif {_PREFIX}isinstance({name}, {_PREFIX}tensor):",
        # is_cpu and is_cuda first: a tensor's .device builds an object on every read (after a
        # kernel that streamed megabytes, the slowest step of a launch: 40 us against 10)
        f"        {token} = ({name}.dtype, {name}.data_ptr() % 16 == 0, "
        f"'cpu' if {name}.is_cpu else 'cuda' if {name}.is_cuda else {name}.device.type)",
        "    else:",
        "        return None",
    ]


def _constexpr_lines(name: str) -> list[str]:
    token = f"{_PREFIX}k_{name}"
    return [
        f"    {_PREFIX}t = {_PREFIX}type({name})",
        f"    if {_PREFIX}t not in {_PREFIX}plain and not {_PREFIX}isinstance({name}, {_PREFIX}dtype):",
        "        return None",
        f"    {token} = ({_PREFIX}t, {name})",
    ]


def make_binder(params, constexprs: frozenset, fast_options: frozenset) -> Callable:
    """The binder of a kernel with ``params`` (its ``KernelParam`` list), the parameters at the
    positions ``constexprs`` constexprs, ``fast_options`` the launch options the fast path takes.
    A parameter list it cannot bind with a plain Python signature (a name it uses itself, a
    parameter that is not positional-or-keyword) gets a binder that always says None."""
    names = [p.name for p in params]
    if any(p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD or not name.isidentifier()
           or keyword.iskeyword(name) or name.startswith(_PREFIX) for p, name in zip(params, names)):
        return _never
    namespace = {f"{_PREFIX}tensor_type": _tensor_type, f"{_PREFIX}plain": PLAIN_CONSTANTS,
                 f"{_PREFIX}dtype": T.dtype, f"{_PREFIX}options": fast_options,
                 f"{_PREFIX}settings": config.launch_settings, **_BUILTINS}
    signature = []
    for p in params:
        if p.has_default:
            namespace[f"{_PREFIX}d_{p.name}"] = p.default
            signature.append(f"{p.name}={_PREFIX}d_{p.name}")
        else:
            signature.append(p.name)
    lines = [f"def {_PREFIX}bind({', '.join(signature + [f'**{_PREFIX}kw'])}):",
             f"    {_PREFIX}tensor = {_PREFIX}tensor_type()"]
    for i, p in enumerate(params):
        lines += _constexpr_lines(p.name) if i in constexprs else _runtime_lines(p.name, not p.do_not_specialize)
    tokens = [f"{_PREFIX}k_{name}" for name in names]
    lines += [
        f"    if {_PREFIX}kw:",
        f"        for {_PREFIX}n, {_PREFIX}v in {_PREFIX}kw.items():",
        f"            if {_PREFIX}n not in {_PREFIX}options or {_PREFIX}type({_PREFIX}v) not in {_PREFIX}plain:",
        "                return None",
        f"        {_PREFIX}extra = ({_PREFIX}tuple({_PREFIX}sorted({_PREFIX}kw.items())),)",
        "    else:",
        f"        {_PREFIX}extra = ()",
        f"    {_PREFIX}s = {_PREFIX}settings()",
        f"    return (({''.join(t + ', ' for t in tokens)}) + {_PREFIX}extra + "
        f"({_PREFIX}s,), "
        "{" + ", ".join(f"{name!r}: {name}" for name in names) + "}, "
        f"{_PREFIX}s, {_PREFIX}kw)",
    ]
    exec(compile("\n".join(lines) + "\n", "<tritium launch binder>", "exec"), namespace)
    return namespace[f"{_PREFIX}bind"]


def _tensor_type():
    """torch.Tensor once torch is imported (a kernel can be defined before it is), else ()."""
    torch = sys.modules.get("torch")
    return torch.Tensor if torch is not None else ()
