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
    from tritium.compiler.passes.manager import PIPELINE

    for stage in PIPELINE:
        if stage.name in backend.skipped_passes:  # what the pass would have rewritten reaches the backend
            kept = set(stage.removes) - set(lowered)
            assert not kept, f"{backend.name} skips {stage.name} but does not lower {sorted(kept)}"
        else:
            assert set(stage.removes) <= set(unsupported), f"{backend.name} runs {stage.name}"


def test_passes_say_what_they_remove():
    """The reasons a backend gives for an opcode it never runs are the passes' (each names its pass)."""
    from tritium.compiler.passes.manager import PIPELINE, removed_opcodes

    for stage in PIPELINE:
        assert set(stage.removes) <= set(spec.SPEC), stage.name
        assert all(stage.name in reason for reason in stage.removes.values()), stage.name
    assert set(removed_opcodes()) == {"tile_load", "tile_store", "inline_asm"}
    assert set(removed_opcodes(skipped=("lower_inline_asm",))) == {"tile_load", "tile_store"}


# groups of opcodes ---------------------------------------------------------------------------------
def test_every_trait_is_given_to_some_op():
    used = set().union(*(entry.traits for entry in spec.SPEC.values()))
    assert used == set(spec.TRAITS)


def test_opcodes_with_takes_traits_effects_and_operand_names():
    assert spec.opcodes_with(spec.TERMINATOR) == {"yield", "condition"} == spec.TERMINATORS
    assert spec.opcodes_with(spec.READS, spec.WRITES, operand="pointer") == spec.ATOMICS == {"atomic_rmw", "atomic_cas"}
    assert spec.opcodes_with(spec.READS) >= spec.POINTER_READS | {"tile_load", "inline_asm"}
    assert spec.opcodes_with(spec.MATH, spec.COMMUTATIVE) == set()
    with pytest.raises(AssertionError, match="no trait or effect"):
        spec.opcodes_with("elementwize")


def test_math_ops_are_elementwise_functions_of_one_float():
    assert len(spec.MATH_OPCODES) >= 12 and spec.MATH_OPCODES == spec.opcodes_with(spec.MATH)
    for opcode in spec.MATH_OPCODES:
        entry = spec.SPEC[opcode]
        assert {spec.ELEMENTWISE, spec.PURE} <= entry.traits, opcode
        assert [o.name for o in entry.operands] == ["value"] and entry.result == "same_as_operand", opcode
    assert spec.opcodes_with(spec.FP_ONLY) <= spec.opcodes_with(spec.ELEMENTWISE)
    # the bit-exact ones: what a backend must give bit for bit (runtime/validate.py compares them exactly)
    assert spec.MATH_OPCODES - spec.opcodes_with(spec.INEXACT) == {"sqrt_rn", "floor", "ceil"}


def test_inexact_ops_compute_values_only():
    for opcode in spec.opcodes_with(spec.INEXACT):
        assert spec.PURE in spec.SPEC[opcode].traits, opcode


def test_copying_views_and_repeats_nest():
    copies, views, repeats = (spec.opcodes_with(t) for t in (spec.COPIES, spec.VIEW, spec.REPEATS))
    assert repeats <= views <= copies == spec.COPYING_OPCODES
    for opcode in copies:
        entry = spec.SPEC[opcode]
        assert not entry.effects & {spec.READS, spec.WRITES} and not entry.regions, opcode
    for opcode in views:
        assert [o.name for o in spec.SPEC[opcode].operands] == ["value"], opcode


def test_memory_groups_follow_the_effects():
    for opcode in spec.POINTER_READS:
        assert spec.READS in spec.SPEC[opcode].effects
    for opcode in spec.POINTER_WRITES:
        assert spec.WRITES in spec.SPEC[opcode].effects
    assert spec.POINTER_READS == {"load", "atomic_rmw", "atomic_cas", "atomic_load"}
    assert spec.POINTER_WRITES == {"store", "atomic_rmw", "atomic_cas", "atomic_store"}
    assert spec.ATOMICS == {"atomic_rmw", "atomic_cas"}
    assert spec.SYNCHRONIZING_READS == {"atomic_rmw", "atomic_cas", "atomic_load"}
    for opcode in spec.ATOMICS | spec.SYNCHRONIZING_READS | {"atomic_store"}:
        assert spec.SYNCHRONIZES in spec.SPEC[opcode].effects


def test_debug_mode_checks_elementwise_integer_arithmetic():
    overflow, divisor = spec.opcodes_with(spec.OVERFLOW_CHECKED), spec.opcodes_with(spec.ZERO_DIVISOR_CHECKED)
    assert overflow == {"add", "sub", "mul", "neg"} and divisor == {"floordiv", "mod", "div"}
    assert not overflow & divisor and (overflow | divisor) <= spec.opcodes_with(spec.ELEMENTWISE)


def test_every_math_op_has_a_numerics_reference_and_a_tl_function():
    import tritium.language as tl
    from tritium.numerics import arithmetic

    assert set(arithmetic.MATH_FUNCTIONS) == spec.MATH_OPCODES
    for opcode in spec.MATH_OPCODES:
        assert getattr(tl, opcode) is getattr(tl.math, opcode), opcode


def test_the_gpu_backend_chooses_an_instruction_for_every_math_op():
    """Triton's PTX instruction (or libdevice call) for each math op is the CUDA backend's choice, in
    its table; an op lowered as on the host must say why."""
    pytest.importorskip("llvmlite")
    from tritium.backends.cuda import math as gpu_math

    assert not set(gpu_math.LOWER) & set(gpu_math.PORTABLE_MATH)
    assert all(reason.strip() for reason in gpu_math.PORTABLE_MATH.values())
    missing = spec.MATH_OPCODES - set(gpu_math.LOWER) - set(gpu_math.PORTABLE_MATH)
    assert not missing, f"the cuda backend has no instruction for {sorted(missing)}, nor says why it needs none"


def test_the_coverage_check_can_fail():
    """A backend that forgot an opcode (here: the interpreter's table without 'dot') is caught."""
    from tritium.backends import registry

    interpreter = registry.get("interpreter")
    assert missing_opcodes(interpreter.lowered_opcodes() - {"dot"}, interpreter.unsupported_opcodes) == {"dot"}
