"""The pass manager: the order of the passes, TRITIUM_DUMP of a pass's output, TRITIUM_CHECK_IR's
verification after each pass and round trip of the final IR through its text."""
from __future__ import annotations

import pytest

import tritium as triton
import tritium.language as tl
from tritium import config
from tritium.compiler.ir.parser import IRParseError, parse_function
from tritium.compiler.ir.verifier import IRVerificationError
from tritium.compiler.passes import manager
from tritium.errors import SettingError


@triton.jit
def _scaled_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 1.0, mask=mask)


def _compile() -> str:
    return _scaled_copy.ir("*fp32,*fp32,i32", BLOCK=16)


def test_the_pipeline_runs_in_the_documented_order():
    import pathlib
    import re

    assert manager.PASS_NAMES == ("lower_tile_access", "lower_inline_asm", "fold_constants", "canonicalize", "licm",
                                  "cse", "contract", "dce")
    docs = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "ir.md").read_text()
    listed = re.search(r"after each pass:\s*(.*?)\.", docs, re.DOTALL).group(1)
    assert re.findall(r"`(\w+)`", listed) == list(manager.PASS_NAMES)


def test_a_second_round_of_passes_changes_nothing(monkeypatch):
    """One round of the pipeline suffices: on the kernels of tritium.ops (forward and backward),
    running every pass again leaves the IR's text as it is (contraction on, as by default)."""
    monkeypatch.delenv("TRITON_DEFAULT_FP_FUSION", raising=False)
    import torch

    from tritium import compiler
    from tritium import ops
    from tritium.compiler.ir.printer import print_function

    seen = []
    original = compiler.run_passes

    def run_twice(fn, *args, **kwargs):
        original(fn, *args, **kwargs)
        again = parse_function(print_function(fn))
        for stage in manager.PIPELINE:
            stage.run(again)
        seen.append((fn.name, print_function(fn), print_function(again)))

    monkeypatch.setattr(compiler, "run_passes", run_twice)
    torch.manual_seed(0)
    x = torch.randn(8, 96, requires_grad=True)
    w, b = torch.randn(96, requires_grad=True), torch.randn(96, requires_grad=True)
    q, k, v = (torch.randn(1, 2, 32, 16, requires_grad=True) for _ in range(3))
    outs = [ops.softmax(x), ops.log_softmax(x), ops.layer_norm(x, w, b), ops.rms_norm(x, w),
            ops.gelu(x), ops.matmul(x, torch.randn(96, 40)), ops.scaled_dot_product_attention(q, k, v, is_causal=True),
            ops.cross_entropy(x, torch.randint(0, 96, (8,)))]
    sum(o.float().sum() for o in outs).backward()
    assert len(seen) >= 10
    for name, once, twice in seen:
        assert twice == once, f"a second round of passes changed {name}"


def test_dumping_one_pass_prints_its_output_headed_by_pass_and_kernel(monkeypatch, capsys):
    monkeypatch.setenv("TRITIUM_DUMP", "canonicalize")
    final = _compile()
    err = capsys.readouterr().err
    assert err.startswith("// IR of _scaled_copy after canonicalize\nfunc @_scaled_copy(")
    assert err.count("// IR of") == 1
    # x * 1.0 is gone after canonicalize; its constant is left for dce, which runs later
    dumped = err.split("\n", 1)[1]
    assert not [line for line in dumped.splitlines() if "= mul" in line and "fp32" in line]
    assert "constant {value=1.0}" in dumped
    assert "constant {value=1.0}" not in final


def test_dumping_all_prints_after_every_pass(monkeypatch, capsys):
    monkeypatch.delenv("TRITON_DEFAULT_FP_FUSION", raising=False)  # contract runs too, as by default
    monkeypatch.setenv("TRITIUM_DUMP", "all")
    _compile()
    headers = [line for line in capsys.readouterr().err.splitlines() if line.startswith("// IR of")]
    assert headers == [f"// IR of _scaled_copy after {name}" for name in manager.PASS_NAMES]


def test_an_unknown_dump_name_is_refused_with_the_valid_ones(monkeypatch):
    monkeypatch.setenv("TRITIUM_DUMP", "cse,fold")
    with pytest.raises(SettingError) as caught:
        _compile()
    assert isinstance(caught.value, ValueError)
    message = str(caught.value)
    assert "'fold'" in message and "'cse'" not in message.split("the stages are")[0]
    for name in manager.PASS_NAMES + ("all", "ir", "ttir"):
        assert name in message.split("the stages are")[1]


def test_the_final_ir_and_backend_stages_are_valid_dump_names(monkeypatch, capsys):
    monkeypatch.setenv("TRITIUM_DUMP", "ir,ttir")
    _compile()
    assert "// IR of _scaled_copy\n" in capsys.readouterr().err


def test_check_ir_is_a_setting(monkeypatch):
    for text, expected in (("1", True), ("yes", True), ("0", False), ("", False)):
        monkeypatch.setenv("TRITIUM_CHECK_IR", text)
        assert config.check_ir() is expected


def test_a_pass_that_breaks_the_ir_is_named(monkeypatch):
    def break_it(fn):
        fn.body.ops.pop(0)  # the program_id: its users now read an undefined value

    broken = manager.PIPELINE[:1] + (manager.Pass("break_it", break_it),) + manager.PIPELINE[1:]
    monkeypatch.setattr(manager, "PIPELINE", broken)
    fn = parse_function(_compile())
    with pytest.raises(IRVerificationError, match="after the break_it pass"):
        manager.run_passes(fn, verify_each=True, passes=broken)
    manager.run_passes(parse_function(_compile()), verify_each=True)  # the real pipeline verifies


def test_a_round_trip_that_changes_the_text_is_an_internal_error(monkeypatch):
    fn = parse_function(_compile())
    manager.check_round_trip(fn)

    def lossy(text):
        parsed = parse_function(text)
        parsed.body.ops.pop()  # as if the parser dropped the store
        return parsed

    monkeypatch.setattr(manager, "parse_function", lossy)
    with pytest.raises(manager.IRRoundTripError, match="at line") as caught:
        manager.check_round_trip(fn)
    assert "printed:   store" in str(caught.value)
    assert isinstance(caught.value, AssertionError)  # a bug in tritium, not in the kernel

    def unreadable(text):
        raise IRParseError("line 3: cannot read")

    monkeypatch.setattr(manager, "parse_function", unreadable)
    with pytest.raises(manager.IRRoundTripError, match="does not parse back"):
        manager.check_round_trip(fn)
