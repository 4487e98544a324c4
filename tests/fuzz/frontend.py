"""Fuzzing the frontend: mutated kernel sources run, or fail with an error at a line of the kernel.

A mutant is a generated kernel (``generator.py``) with one to three edits: a statement inserted
from a list of constructs Triton's language lacks or refuses (lists, lambdas, ``try``, ``with``,
subscript and attribute assignment, imports, nested ``def``, ``yield``...) or of ill-typed code
(shape mismatches, non-power-of-two ranges, pointer arithmetic between pointers, loads from
numbers, bad axes, unknown dtypes, block conditions, wrong arity), a line deleted (never a
``while`` loop's counter step, which would make a loop that runs forever on a GPU too), two lines
swapped, or a name replaced by an undefined one. The contract (``check_mutant``): the mutant
either runs, and then agrees on every execution path as any generated kernel must
(``differential.check_case``), or it raises one of tritium's errors whose location is a line of the
kernel's module -- never an internal error, never another exception, never a hang.
"""
from __future__ import annotations

import re
from dataclasses import replace

from .differential import Finding, _is_internal, check_case, load_kernel, make_inputs, run_path
from .generator import Case, Draw, draw_case, module_source

INSERTIONS = (
    "xs = [v for v in range(3)]",
    "f = lambda v: v",
    "try:\n    pass\nexcept Exception:\n    pass",
    "with open('x') as fh:\n    pass",
    "del pid0",
    "x0[0] = 1",
    "OUT.value = 1",
    "import math",
    "global TOTAL",
    "def inner(v):\n    return v",
    "yield pid0",
    "raise ValueError('no')",
    "x0 = x0 @ x0",
    "x0 = x0 + 'text'",
    "x0 = undefined_name + 1",
    "x0 = tl.arange(0, 3)",
    "x0 = x0 + tl.arange(0, 7)",
    "x0 = tl.load(pid0)",
    "x0 = tl.sum(x0, axis=5)",
    "x0 = x0.to(tl.float99)",
    "while x0:\n    pass",
    "if x0:\n    pass",
    "x0 = OUT + OUT",
    "break",
    "continue",
    "x0 = tl.program_id(3)",
    "x0 = tl.where(x0, x0)",
    "x0 = tl.zeros([3], tl.float32)",
    "x0 = tl.reshape(x0, [7, 3])",
    "x0 = tl.dot(x0, x0)",
    "x0 = tl.full([2], 1, tl.int32) + tl.full([4], 1, tl.int32)",
    "x0 = tl.max(x0, 0, 1, 2, 3)",
    "x0 = x0.nonexistent",
    "tl.store(pid0, 1.0)",
    "tl.static_assert(False, 'refused')",
    "x0 = tl.cdiv(x0)",
    "x0 = tl.exp(OUT)",
    "x0 = tl.arange(0, M)",
    "x0 = tl.zeros([BLOCK], dtype=tl.float32) if pid0 else x0",
    "x0 = x0[5]",
    "x0 = x0[:, :, :, None]",
    "pid0 = tl.program_id(0) + 1.5",
    "x0 = tl.full([1], float('nan'), tl.float32)",
    "x0 = tl.atomic_add(x0, 1)",
    "print(x0)",
    "assert pid0 >= 0, 'fine'",
    "x0 = tl.extra.libdevice.nope(x0)",
    "x0 = tl.cast(x0, tl.int32, fp_downcast_rounding='rtz')",
    "x0 = x0 // 0",
    "x0 = tl.load(OUT + offs, mask=mask, other=x0, cache_modifier='.zz')",
    "for q in range(3):\n    x0 = x0 + q\nelse:\n    pass",
    "x0 = tl.join(x0, x0, x0)",
    "x0 = tl.permute(x0, (2, 0))",
    "return 5",
    "x0: tl.constexpr = 3",
    "x0 = tl.associative_scan(x0, 0, undefined_combine)",
    "x0 = tl.reduce(x0, 0, _combine_add, 1)",
)


def mutant(d: Draw) -> tuple[Case, str]:
    """A generated case and its kernel's source, mutated; the source compiles as Python."""
    case = draw_case(d)
    for _ in range(20):
        lines = case.source.splitlines()
        for _ in range(d.integer(1, 3)):
            lines = _mutate(d, lines)
        source = "\n".join(lines) + "\n"
        try:
            compile(source, "<mutant>", "exec")
        except SyntaxError:
            continue  # Python's own error, before tritium sees the kernel: draw again
        return case, source
    return case, case.source


def _mutate(d: Draw, lines: list[str]) -> list[str]:
    body = [i for i in range(2, len(lines)) if lines[i].strip() and not lines[i].lstrip().startswith(("else", "elif"))]
    if not body:
        return lines
    kind = d.integer(0, 9)
    at = d.choice(body)
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    if kind <= 5:
        inserted = [indent + part for part in d.choice(INSERTIONS).split("\n")]
        return lines[:at] + inserted + lines[at:]
    if kind == 6 and len(body) > 1:
        if lines[at].strip().endswith("+= 1"):
            return lines  # a while loop's counter: deleting it makes a loop no GPU would leave either
        return lines[:at] + lines[at + 1:]
    if kind == 7 and len(body) > 1:
        other = d.choice(body)
        if lines[other].startswith(indent) and lines[other][len(indent):len(indent) + 1] != " ":
            swapped = list(lines)
            swapped[at], swapped[other] = lines[other], lines[at]
            return swapped
        return lines
    names = sorted(set(re.findall(r"\b(x\d|t\d+|acc\d+|v\d+|g\d+|r\d+|pid0|offs|mask)\b", lines[at])))
    if names:
        name = d.choice(names)
        return lines[:at] + [re.sub(rf"\b{name}\b", "no_such_" + name, lines[at], count=1)] + lines[at + 1:]
    return lines


def check_mutant(case: Case, source: str, seed: int) -> tuple[str, list]:
    """("ran" | "compilation error" | "error at a line" | "finding", findings)."""
    from tritium.errors import CompilationError
    mutated = replace(case, source=source)
    try:
        kernel = load_kernel(mutated)
    except Exception as error:
        if _is_internal(error) or not _names_a_kernel_line(error, mutated):
            return "finding", [Finding(mutated, "load", "frontend", f"{type(error).__name__}: {error}")]
        return "compilation error", []
    status, value = run_path(mutated, kernel, make_inputs(mutated, seed), "reference")
    if status == "ok":
        return "ran", check_case(mutated, seed)
    if _is_internal(value):
        return "finding", [Finding(mutated, "reference", "internal error", f"{type(value).__name__}: {value}")]
    if not _names_a_kernel_line(value, mutated):
        return "finding", [Finding(mutated, "reference", "frontend",
                                   f"{type(value).__name__} without a kernel line: {value}")]
    return ("compilation error" if isinstance(value, CompilationError) else "error at a line"), []


def _names_a_kernel_line(error: BaseException, case: Case) -> bool:
    """The error's message points at a line of the kernel's module below its imports, with the
    source line quoted (launch mistakes would name the caller's line instead, never made here)."""
    text = str(error)
    header = len(module_source(replace(case, source="")).splitlines())
    lines = module_source(case).splitlines()
    for match in re.finditer(r"fuzz_[0-9a-f]+\.py:(\d+)", text):
        line = int(match.group(1))
        if 2 < line <= len(lines) and (line > header - 1 or "def _combine" in "\n".join(lines[:line])):
            return lines[line - 1].strip() in text
    return False
