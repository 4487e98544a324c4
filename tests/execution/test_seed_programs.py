"""The seed chapters' programs, run unmodified with `tritium run`, print what the chapters show.

Oracle: ../shared/seed_programs/expected/*.out, captured under Triton 3.9's interpreter.
Allowed differences, as listed in ../shared/seed_programs/README.md: the three programs Triton's
interpreter gets wrong or words differently must be clear errors naming the line; object
addresses differ; floating-point measurements (max abs diffs, ratios of errors) may differ in
their last digits but not in magnitude, and values torch itself computes may differ in the last
bits between CPUs.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SEEDS = Path(__file__).resolve().parents[3] / "shared" / "seed_programs"
if not SEEDS.is_dir():
    SEEDS = Path(os.environ.get("TRITIUM_SEEDS", "/nonexistent"))
PROGRAMS = sorted(SEEDS.glob("ch*.py")) if SEEDS.is_dir() else []

# expected line (prefix) -> what tritium must print instead: (pattern that must match, source text it must quote)
DEVIATIONS = {
    "InterpreterError: ValueError(\"arange's arguments must be of type tl.constexpr\")":
        ((r"^CompilationError: .*ch01_01_two_phase_and_constexpr\.py:\d+:\d+ .*arange's arguments must be of type "
          r"tl\.constexpr"), "offsets = tl.arange(0, BLOCK)"),
    "ran without raising, but silently wrong:":
        (r"^CompilationError: .*ch01_03_block_shaped_values\.py:25:\d+ .*condition of `if` is a block",
         "if mask:"),
    "caught exception, as expected: InterpreterError: ValueError(\"Expected dtype ['fp32', 'fp64'] but got fp16\")":
        ((r"^caught exception, as expected: CompilationError: .*ch16_03_wired_tritongelu\.py:\d+:\d+ .*"
          r"Expected dtype \['fp32', 'fp64'\] but got fp16"), "tl.math.erf(x * SQRT_2_INV)"),
}

NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+e[-+]?\d+")
ADDRESS = re.compile(r"0x[0-9a-f]+")


def _join_error_continuations(lines: list[str]) -> list[str]:
    """A rendered error spans lines (source, caret, hint); fold them into the line they belong to."""
    joined: list[str] = []
    for line in lines:
        if joined and line.startswith(("    ", "hint: ")) and "Error" in joined[-1]:
            joined[-1] += "\n" + line
        else:
            joined.append(line)
    return joined


def _numbers_agree(expected: str, actual: str, measured: bool) -> bool:
    want = [float(x) for x in NUMBER.findall(expected)]
    got = [float(x) for x in NUMBER.findall(actual)]
    if len(want) != len(got) or NUMBER.sub("#", expected) != NUMBER.sub("#", actual):
        return False
    for w, g in zip(want, got):
        if measured:  # same order of magnitude
            if (w == 0) != (g == 0) or (w != 0 and not 1 / 3 <= g / w <= 3):
                return False
        elif abs(w - g) > 1e-6 + 1e-3 * abs(w):
            return False
    return True


def _check_line(expected: str, actual: str) -> None:
    for prefix, (pattern, quoted) in DEVIATIONS.items():
        if expected.startswith(prefix):
            assert re.search(pattern, actual, re.DOTALL), f"expected an error like {pattern!r}, got:\n{actual}"
            assert quoted in actual and "^" in actual, f"the error must quote the line and point at it:\n{actual}"
            return
    expected, actual = ADDRESS.sub("0x?", expected), ADDRESS.sub("0x?", actual)
    if expected == actual:
        return
    measured = "diff" in expected or "ratio" in expected
    assert _numbers_agree(expected, actual, measured), f"line differs:\n expected: {expected}\n   actual: {actual}"


@pytest.mark.skipif(not PROGRAMS, reason="../shared/seed_programs is not present beside this checkout")
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_seed_program_output(program: Path, tmp_path):
    env = dict(os.environ, PYTHONHASHSEED="0")
    result = subprocess.run([sys.executable, "-m", "tritium", "run", str(program)], capture_output=True,
                            text=True, timeout=600, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    expected = (SEEDS / "expected" / f"{program.stem}.out").read_text().splitlines()
    actual = _join_error_continuations(result.stdout.splitlines())
    assert len(actual) == len(expected), f"{len(actual)} lines printed, {len(expected)} expected:\n{result.stdout}"
    for want, got in zip(expected, actual):
        _check_line(want, got)


UNMASKED_TAIL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def gelu_backward_kernel_no_mask(grad_out_ptr, x_ptr, grad_in_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)                # no mask
    grad_out = tl.load(grad_out_ptr + offsets)  # no mask
    SQRT_2_INV: tl.constexpr = 0.7071067811865476
    SQRT_2PI_INV: tl.constexpr = 0.3989422804014327
    cdf = 0.5 * (1.0 + tl.math.erf(x * SQRT_2_INV))
    pdf = SQRT_2PI_INV * tl.exp(-0.5 * x * x)
    d_gelu = cdf + x * pdf
    grad_in = grad_out * d_gelu
    tl.store(grad_in_ptr + offsets, grad_in)    # no mask -- writes past the buffer too


n, BLOCK = 10000, 1024
x = torch.randn(n)
grad_out = torch.randn(n)
grad_in = torch.zeros(n)
gelu_backward_kernel_no_mask[(triton.cdiv(n, BLOCK),)](grad_out, x, grad_in, n, BLOCK=BLOCK)
'''


def test_unmasked_tail_of_chapter_16_raises_out_of_bounds_instead_of_crashing(tmp_path):
    """Worked Example 16.2.2 segfaults Triton's interpreter; tritium must raise a clear error."""
    script = tmp_path / "unmasked_tail.py"
    script.write_text(UNMASKED_TAIL)
    result = subprocess.run([sys.executable, "-m", "tritium", "run", str(script)], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path)
    assert result.returncode == 1, "the process must end with a Python exception, not a crash"
    err = result.stderr
    assert "OutOfBoundsError" in err
    assert "unmasked_tail.py:11:" in err and "x = tl.load(x_ptr + offsets)" in err
    assert "program (9, 0, 0)" in err and "element offset 10000" in err and "10000 elements" in err
