"""A small FileCheck for printed IR: tests pin what a pass leaves with ``# CHECK:`` lines.

``check(text, expectations)`` reads the ``# CHECK...`` lines of ``expectations``:

- ``# CHECK: pattern``: a line at or after the previous match contains ``pattern``;
- ``# CHECK-NEXT: pattern``: the line right after the previous match contains it;
- ``# CHECK-NOT: pattern``: no line between the previous match and the next one (or the end of
  the text) contains it.

A pattern is literal text (runs of spaces match any run of spaces), except ``{{regex}}``, a
regular expression, and ``[[NAME:regex]]``, which matches ``regex`` and names what it matched,
so that a later ``[[NAME]]`` must match the same text (``%[[X:\\d+]] = arange`` ... ``add %[[X]]``).
A failure raises AssertionError showing the pattern, where the search started, and the numbered text.
"""
from __future__ import annotations

import re

_DIRECTIVE = re.compile(r"#\s*CHECK(?P<kind>-NEXT|-NOT)?:\s?(?P<pattern>.*)$")
_PIECE = re.compile(r"\{\{(?P<regex>.+?)\}\}|\[\[(?P<name>[A-Za-z_]\w*)(?::(?P<definition>.+?))?\]\]")


def _directives(expectations: str) -> list[tuple[str, str]]:
    found = []
    for line in expectations.splitlines():
        match = _DIRECTIVE.search(line)
        if match:
            found.append(((match.group("kind") or "").lstrip("-") or "CHECK", match.group("pattern").strip()))
    assert found, "no # CHECK lines given"
    return found


def _literal(text: str) -> str:
    return r"\s+".join(re.escape(part) for part in re.split(r"\s+", text))


def _compile(pattern: str, names: dict[str, str]) -> re.Pattern:
    regex, at = "", 0
    for piece in _PIECE.finditer(pattern):
        regex += _literal(pattern[at:piece.start()])
        if piece.group("regex") is not None:
            regex += f"(?:{piece.group('regex')})"
        elif piece.group("definition") is not None:
            regex += f"(?P<{piece.group('name')}>{piece.group('definition')})"
        else:
            name = piece.group("name")
            assert name in names, f"[[{name}]] is used before a pattern defines it"
            regex += re.escape(names[name])
        at = piece.end()
    return re.compile(regex + _literal(pattern[at:]))


def _numbered(lines: list[str]) -> str:
    return "\n".join(f"{i + 1:4}| {line}" for i, line in enumerate(lines))


def _fail(kind: str, pattern: str, start: int, lines: list[str], why: str):
    raise AssertionError(f"CHECK{'' if kind == 'CHECK' else '-' + kind}: {pattern!r} {why} "
                         f"(searching from line {start + 1})\n{_numbered(lines)}")


def check(text: str, expectations: str) -> None:
    lines = text.splitlines()
    names: dict[str, str] = {}
    position = 0  # the first line a CHECK may match
    forbidden: list[str] = []  # CHECK-NOT patterns waiting for the next match to bound them

    def bounded_by(end: int) -> None:
        for pattern in forbidden:
            regex = _compile(pattern, names)
            for index in range(position, end):
                if regex.search(lines[index]):
                    _fail("NOT", pattern, position, lines, f"matches line {index + 1}")
        forbidden.clear()

    for kind, pattern in _directives(expectations):
        if kind == "NOT":
            forbidden.append(pattern)
            continue
        regex = _compile(pattern, names)
        if kind == "NEXT":
            if position >= len(lines) or not regex.search(lines[position]):
                _fail(kind, pattern, position, lines, "does not match the next line")
            index = position
        else:
            index = next((i for i in range(position, len(lines)) if regex.search(lines[i])), None)
            if index is None:
                _fail(kind, pattern, position, lines, "matches no line")
        bounded_by(index)
        names.update({k: v for k, v in regex.search(lines[index]).groupdict().items() if v is not None})
        position = index + 1
    bounded_by(len(lines))
