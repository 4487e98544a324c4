"""The IR spec is complete: every opcode the frontend emits has an entry, every entry is fully
described, and every backend lowers each opcode or says why it does not."""
from __future__ import annotations

import pathlib
import re

import pytest

from tritium.compiler.ir import spec
from tritium.compiler.ir.verifier import _KIND_CHECKS, RESULT_RULES

SRC = pathlib.Path(spec.__file__).resolve().parents[2]


def _opcodes_emitted_by_the_frontend() -> set[str]:
    pattern = re.compile(r"""(?:_emit|_create|\.create)\(\s*["']([a-z_0-9]+)["']""")
    found = set()
    for path in (SRC / "compiler").rglob("*.py"):
        found.update(pattern.findall(path.read_text()))
    for path in (SRC / "language").rglob("*.py"):
        found.update(pattern.findall(path.read_text()))
    return found


def test_the_verifier_checks_every_attribute_kind():
    assert set(_KIND_CHECKS) == set(spec.ATTR_KINDS)


def test_every_emitted_opcode_has_a_spec_entry():
    emitted = _opcodes_emitted_by_the_frontend()
    assert len(emitted) > 40  # the scan sees the frontend's ops at all
    assert emitted - set(spec.SPEC) == set()


@pytest.mark.parametrize("opcode", sorted(spec.SPEC))
def test_spec_entry_is_complete(opcode):
    entry = spec.SPEC[opcode]
    assert entry.semantics.strip(), f"{opcode} states no semantics"
    assert entry.result in RESULT_RULES, f"{opcode}: no result rule {entry.result!r}"
    assert entry.effects <= spec.EFFECTS and entry.traits <= spec.TRAITS
    assert all(a.kind in spec.ATTR_KINDS and a.kind in _KIND_CHECKS for a in entry.attrs)
    names = [o.name for o in entry.operands]
    assert len(names) == len(set(names)), f"{opcode}: operand names repeat"
    variadic = [o for o in entry.operands if o.variadic]
    assert not variadic or entry.operands[-1].variadic, f"{opcode}: a variadic slot must come last"
    if spec.PURE in entry.traits:
        assert not entry.effects, f"{opcode} is pure but has effects {sorted(entry.effects)}"


def test_edge_cases_where_llvm_gives_poison_are_written_out():
    """The guards a compiled backend must emit are stated in the spec, not left to LLVM."""
    text = {op: entry.semantics for op, entry in spec.SPEC.items()}
    assert "bit width" in text["shl"] and "bit width" in text["shr"]
    assert "x // 0" in text["floordiv"] and "INT_MIN // -1" in text["floordiv"]
    assert "x % 0" in text["mod"] and "INT_MIN % -1" in text["mod"]
    assert "NaN -> 0" in text["cast"] and "saturat" in text["cast"] and "rtz" in text["cast"]
    assert "-0 < +0" in text["minimum"] and "NaN" in text["minimum"]
    assert "i1" in text["add"]


def _registered_backends():
    from tritium.backends import registry

    return [registry.get(name) for name in registry.names()]


def missing_opcodes(lowered, unsupported) -> set[str]:
    """The spec's opcodes a backend neither lowers nor declares unsupported."""
    return set(spec.SPEC) - set(lowered) - set(unsupported)


@pytest.mark.parametrize("backend", _registered_backends(), ids=lambda b: b.name)
def test_every_opcode_is_lowered_or_declared_unsupported(backend):
    lowered, unsupported = backend.lowered_opcodes(), backend.unsupported_opcodes
    for opcode, reason in unsupported.items():
        assert reason.strip(), f"{backend.name} declares {opcode} unsupported without saying why"
    missing = missing_opcodes(lowered, unsupported)
    assert not missing, f"backend {backend.name} neither lowers nor declares unsupported: {sorted(missing)}"
    stray = set(lowered) - set(spec.SPEC)
    assert not stray, f"backend {backend.name} handles opcodes the spec does not define: {sorted(stray)}"
    if {"tile_load", "tile_store"} & set(unsupported):
        assert "lower_tile_access" not in backend.skipped_passes, "tile ops would reach a backend that cannot run them"


def test_the_coverage_check_can_fail():
    """A backend that forgot an opcode (here: the interpreter's table without 'dot') is caught."""
    from tritium.backends import registry

    interpreter = registry.get("interpreter")
    assert missing_opcodes(interpreter.lowered_opcodes() - {"dot"}, interpreter.unsupported_opcodes) == {"dot"}
