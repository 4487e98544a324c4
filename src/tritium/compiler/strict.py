"""``TRITIUM_STRICT=1``: refuses what compiled Triton refuses, so a kernel written against tritium
also compiles under Triton.

tritium accepts more than Triton's compiler does: ``break`` and ``continue`` in loops, ``return``
inside loops, and a loop-carried Python number that takes the type the body gives it. These are
its extensions (listed in docs/language.md); strict mode reports each at its line with the message
Triton gives. The loop-carried type check lives in frontend_loops.py; this module checks the AST.
"""
from __future__ import annotations

import ast

from .. import config


class _StrictChecker(ast.NodeVisitor):
    def __init__(self, parsed):
        self.parsed = parsed
        self.loops = 0

    def _refuse(self, node, message: str):
        from ..errors import CompilationError

        raise CompilationError(self.parsed.location(node), message,
                               "compiled Triton rejects this; unset TRITIUM_STRICT to use tritium's extension")

    def _loop(self, node):
        self.loops += 1
        for child in node.body:
            self.visit(child)
        self.loops -= 1
        for child in node.orelse:
            self.visit(child)

    visit_For = visit_While = _loop

    def visit_Break(self, node):
        self._refuse(node, "unsupported AST node type: Break")

    def visit_Continue(self, node):
        self._refuse(node, "unsupported AST node type: Continue")

    def visit_Return(self, node):
        if self.loops:
            self._refuse(node, "Cannot have `return` statements inside `while` or `for` statements in triton")

    def visit_FunctionDef(self, node):
        if node is self.parsed.source_tree:
            self.generic_visit(node)  # nested function definitions are not kernel code


def check_strict(parsed) -> None:
    """Under TRITIUM_STRICT=1, raises CompilationError at the first construct compiled Triton refuses."""
    if config.strict():
        _StrictChecker(parsed).visit(parsed.source_tree)
