"""The passes that turn the frontend's IR into the IR backends receive, in the order they run, with
the checks and dumps between them.

``TRITIUM_DUMP=<pass>[,<pass>]`` (or ``all``) prints the IR after those passes to stderr;
``TRITIUM_CHECK_IR=1`` verifies the IR after every pass and checks that the final IR prints,
parses back and prints to the same text.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable, Collection, Iterable, Mapping, Optional

from ... import config
from ...errors import SettingError
from ..ir.ops import Function
from ..ir.parser import IRParseError, parse_function
from ..ir.printer import print_function
from ..ir.verifier import IRVerificationError, verify
from . import lower_inline_asm as _inline_asm
from . import lower_tile_access as _tile_access
from .canonicalize import canonicalize
from .constant_fold import fold_constants
from .contract import contract_multiply_adds
from .cse import eliminate_common_subexpressions
from .dce import eliminate_dead_code
from .licm import hoist_loop_invariants


@dataclass(frozen=True)
class Pass:
    name: str  # what TRITIUM_DUMP calls it
    run: Callable[[Function], None]  # changes the function in place
    removes: Mapping[str, str] = field(default_factory=dict)  # opcode it rewrites away -> into what


# The order, and why:
# - lower_tile_access and lower_inline_asm first: block-pointer and descriptor tiles become ordinary
#   address arithmetic, and inline asm the tl ops that emulate it (for the backends without a PTX
#   assembler), which the passes after them simplify like any other;
# - fold_constants before canonicalize: the frontend gives a Python number its type with a cast of a
#   constant (``x * 1`` on fp16 multiplies by ``cast(1.0)``), so identities are visible only once
#   those casts are folded;
# - canonicalize before licm and cse: removing identities leaves fewer, more often equal ops;
# - licm before cse: each loop's invariants land in front of it, where cse merges copies hoisted
#   from two loops, or equal to an op before the loop (scoping keeps cse from merging them while
#   they sit in sibling loop bodies);
# - cse merges equal pure ops, constants included (the frontend writes a constant per literal);
# - contract after them: x * y + z as one fma where the CUDA backend's LLVM fuses it (a backend that
#   contracts itself, or a launch with enable_fp_fusion=False, skips it), on the ops as they will run;
# - dce last: it drops what the others left unused (folded operands, the inner op of a reshape pair).
# One round suffices: a second leaves the IR as it is (tests/compiler/test_passes_manager.py checks
# it on the kernels of tritium.ops).
PIPELINE: tuple[Pass, ...] = (
    Pass("lower_tile_access", _tile_access.lower_tile_access, _tile_access.REMOVES),
    Pass("lower_inline_asm", _inline_asm.lower_inline_asm, _inline_asm.REMOVES),
    Pass("fold_constants", fold_constants),
    Pass("canonicalize", canonicalize),
    Pass("licm", hoist_loop_invariants),
    Pass("cse", eliminate_common_subexpressions),
    Pass("contract", contract_multiply_adds),
    Pass("dce", eliminate_dead_code),
)
PASS_NAMES: tuple[str, ...] = tuple(p.name for p in PIPELINE)


def skipped_without_fusion(enable_fp_fusion: Optional[bool] = None) -> tuple[str, ...]:
    """The passes a compilation skips for ``enable_fp_fusion`` (None: the default,
    TRITON_DEFAULT_FP_FUSION): ``contract`` where it is off."""
    if enable_fp_fusion is None:
        from ... import knobs

        enable_fp_fusion = bool(knobs.language.default_fp_fusion)
    return () if enable_fp_fusion else ("contract",)


def removed_opcodes(skipped: Collection[str] = ()) -> dict[str, str]:
    """The opcodes the pipeline's passes, but those named in ``skipped``, rewrite away, each with
    what it becomes: a backend that skips no other pass never sees them."""
    return {opcode: reason for stage in PIPELINE if stage.name not in skipped
            for opcode, reason in stage.removes.items()}


class IRRoundTripError(IRVerificationError):
    """The printed IR does not parse back to the same text: a bug in the printer or the parser."""


def passes_to_dump(requested: Iterable[str], other_stages: Collection[str] = ()) -> frozenset[str]:
    """The passes after which the IR is printed, for the stage names ``requested`` (TRITIUM_DUMP):
    pass names, ``all``, ``ir`` (the final IR) and ``other_stages``; a SettingError for any other."""
    requested = set(requested)
    known = set(PASS_NAMES) | {"all", "ir"} | set(other_stages)
    unknown = requested - known
    if unknown:
        raise SettingError(
            f"TRITIUM_DUMP names {', '.join(repr(n) for n in sorted(unknown))}, which is no stage; the stages are "
            f"{', '.join(sorted(known))} (a pass name prints the IR after that pass, 'all' after every pass, "
            "'ir' the final IR, the others a backend's output)")
    return frozenset(PASS_NAMES) if "all" in requested else frozenset(requested & set(PASS_NAMES))


def check_round_trip(fn: Function) -> None:
    """Raises IRRoundTripError unless ``fn`` prints, parses back, and prints to the same text."""
    text = print_function(fn)
    try:
        again = print_function(parse_function(text))
    except IRParseError as error:
        raise IRRoundTripError(f"the printed IR of {fn.name} does not parse back: {error}\n{text}") from error
    if again == text:
        return
    before, after = text.splitlines(), again.splitlines()
    line = next((i for i, (a, b) in enumerate(zip(before, after)) if a != b), min(len(before), len(after)))
    printed = before[line] if line < len(before) else "<end>"
    reprinted = after[line] if line < len(after) else "<end>"
    raise IRRoundTripError(f"the printed IR of {fn.name} changes when parsed and printed again, at line {line + 1}:\n"
                           f"  printed:   {printed.strip()}\n  reprinted: {reprinted.strip()}\n{text}")


def run_passes(fn: Function, verify_each: bool, *, passes: Iterable[Pass] = PIPELINE,
               other_stages: Collection[str] = ()) -> None:
    """Runs ``passes`` on ``fn`` in order. ``verify_each``: verify after every pass (naming the pass
    that broke the IR) and check the final IR's round trip through text. ``other_stages``: names
    TRITIUM_DUMP may hold besides the passes (a backend's stages)."""
    dumped = passes_to_dump(config.dump_stages(), other_stages)
    for stage in passes:
        stage.run(fn)
        if verify_each:
            try:
                verify(fn)
            except IRVerificationError as error:
                raise IRVerificationError(f"after the {stage.name} pass: {error}") from error
        if stage.name in dumped:
            print(f"// IR of {fn.name} after {stage.name}\n{fn}", file=sys.stderr)
    if verify_each:
        check_round_trip(fn)
