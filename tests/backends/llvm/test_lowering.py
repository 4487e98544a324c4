"""The lowering skeleton the compiled backends share (backends/llvm/lowering.py): the rule table built
from a class's ``lower_<opcode>`` methods, the walker, the error for an op without a rule, and the
op indices error records carry."""
from __future__ import annotations

import pytest

from tritium.backends.cpu import codegen as cpu_codegen
from tritium.backends.cuda import codegen as cuda_codegen
from tritium.backends.llvm import scalar
from tritium.backends.llvm.lowering import Lowering, UnsupportedOp, lower_kernel, lowered_opcodes
from tritium.compiler.ir.parser import parse_function
from tritium.compiler.ir.spec import SPEC
from tritium.errors import NotLoweredError

# acc = tl.program_id(0); for i in range(0, n): acc += i * 2; tl.store(out_ptr, acc)
KERNEL = """\
func @kernel(%out_ptr: ptr<i32>, %n: i32) {
  %0 = program_id {axis=0} : i32                                          # kernel.py:6
  %1 = constant {value=0} : i32                                           # kernel.py:7
  %2 = constant {value=1} : i32                                           # kernel.py:7
  %3 = constant {value=2} : i32                                           # kernel.py:8
  %4 = for %1, %n, %2, %0 : i32 {
    ^body(%5: i32, %6: i32):
      %7 = mul %5, %3 : i32                                               # kernel.py:8
      %8 = add %6, %7 : i32                                               # kernel.py:8
      yield %8                                                            # kernel.py:7
  }                                                                       # kernel.py:7
  store %out_ptr, %4                                                      # kernel.py:9
}
"""
PRE_ORDER = ["program_id", "constant", "constant", "constant", "for", "mul", "add", "yield", "store"]


class _Recorder(Lowering):
    """Rules that note the index and opcode of each op they are given; no rule for ``store``."""

    def __init__(self, fn):
        super().__init__(fn)
        self.seen = []

    def build(self):
        self.lower_region(self.fn.body)

    def _see(self, op):
        self.seen.append((self.op_index[id(op)], op.opcode))

    def lower_program_id(self, op):
        self._see(op)

    def lower_constant(self, op):
        self._see(op)

    def lower_for(self, op):
        self._see(op)
        self._see(self.lower_region(op.regions[0]))  # the terminator: returned to the rule, not lowered

    def lower_lanes(self, op):
        self._see(op)

    def lower_something_not_an_opcode(self, op):
        raise AssertionError("a helper, never a rule")


def test_the_rules_are_the_methods_named_for_spec_opcodes():
    assert _Recorder.rules == {"program_id": _Recorder.lower_program_id, "constant": _Recorder.lower_constant,
                               "for": _Recorder.lower_for}
    assert lowered_opcodes(_Recorder) == {"program_id", "constant", "for", "yield", "condition"} | set(scalar.LOWER)
    for generator in (cpu_codegen.Codegen, cuda_codegen.Codegen):
        assert generator.rules and set(generator.rules) <= set(SPEC)
        assert all(rule is getattr(generator, f"lower_{opcode}") for opcode, rule in generator.rules.items())
        assert "region" not in generator.rules and "lanes" not in generator.rules


def test_an_op_without_a_rule_is_not_lowered_at_its_line():
    recorder = _Recorder(parse_function(KERNEL))
    with pytest.raises(NotLoweredError) as caught:
        lower_kernel(recorder, "test", "run it elsewhere")
    assert caught.value.loc.line == 9 and recorder.current.opcode == "store"
    message = str(caught.value)
    assert "kernel.py:9" in message and "the store op" in message and "kernel 'kernel'" in message
    assert "run it elsewhere" in message


def test_op_indices_are_a_pre_order_walk_of_the_kernel():
    fn = parse_function(KERNEL)
    recorder = _Recorder(fn)
    with pytest.raises(UnsupportedOp):
        recorder.build()
    assert [op.opcode for op in recorder.ops] == PRE_ORDER
    # the walker gives the rules the ops in that order, the loop's body and its terminator inside the loop
    assert recorder.seen == list(enumerate(PRE_ORDER))[:-1]
    # a generator's table is there before anything is lowered: a kernel loaded from the disk cache
    # names the ops of its error records without being lowered again
    assert [op.opcode for op in cuda_codegen.Codegen(fn).ops] == PRE_ORDER
