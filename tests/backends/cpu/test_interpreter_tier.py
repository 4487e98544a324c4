"""Tier 0 of the CPU backend (backends/cpu/interpreter_tier.py): where the CPU backend is the
default, a kernel compiled for the first time runs its first small launch on the interpreter and is
compiled at its next launch. The tiers must not be told apart: the same bits, the same errors; and
the tier must step aside where it would be seen (a named backend, a dot, big work, the switch off).
"""
from __future__ import annotations

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.backends.cpu import interpreter_tier, launcher
from tritium.errors import OutOfBoundsError


@pytest.fixture(autouse=True)
def cpu_by_default(monkeypatch):
    monkeypatch.delenv("TRITIUM_BACKEND", raising=False)  # the CPU backend as the default
    monkeypatch.delenv("TRITIUM_INTERPRETER_FIRST", raising=False)


def _fresh(kernel):
    """The kernel with nothing compiled in this process (the suite's disk cache is per test)."""
    kernel.cache.clear()
    kernel._by_code.clear()
    return kernel


@triton.jit
def _gelu(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476)) + tl.exp(x) / (1.0 + tl.sum(x * x, axis=0))
    tl.store(out_ptr + offs, y, mask=mask)


def _executable(kernel):
    (compiled,) = kernel.cache.values()
    return compiled.executable


def test_the_first_small_launch_runs_on_the_interpreter_and_the_next_on_compiled_code_with_the_same_bits():
    kernel = _fresh(_gelu)
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    first, second = np.zeros_like(x), np.zeros_like(x)
    kernel[(4,)](x, first, 1000, BLOCK=256)
    executable = _executable(kernel)
    assert isinstance(executable, interpreter_tier.StartsOnInterpreter) and executable._compiled is None
    kernel[(4,)](x, second, 1000, BLOCK=256)
    assert isinstance(executable._compiled, launcher.Executable)
    assert first.tobytes() == second.tobytes()  # the interpreter's math is the CPU backend's
    reference = 0.5 * x * (1 + np.vectorize(__import__("math").erf)(x.astype(np.float64) / 2 ** 0.5))
    assert np.abs(first[:256] - (reference[:256] + np.exp(x[:256]) / (1 + (x[:256] ** 2).sum()))).max() < 1e-5


def test_a_stage_read_compiles_and_the_code_is_stored_once_compiled():
    kernel = _fresh(_gelu)
    x = np.ones(10, np.float32)
    kernel[(1,)](x, np.zeros_like(x), 10, BLOCK=16)
    executable = _executable(kernel)
    assert executable._compiled is None
    assert "define" in executable.asm["llir"] and executable._compiled is not None


@triton.jit
def _matmul(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    a = tl.load(a_ptr + i[:, None] * N + i[None, :])
    b = tl.load(b_ptr + i[:, None] * N + i[None, :])
    tl.store(c_ptr + i[:, None] * N + i[None, :], tl.dot(a, b))


@pytest.mark.parametrize("setting", ["dot", "named", "off", "big"])
def test_the_tier_steps_aside_where_the_bits_or_the_choice_would_differ(setting, monkeypatch):
    if setting == "named":
        monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    if setting == "off":
        monkeypatch.setenv("TRITIUM_INTERPRETER_FIRST", "0")
    if setting == "dot":  # the two sum a dot's products in different orders
        kernel = _fresh(_matmul)
        a = np.random.default_rng(1).standard_normal((16, 16)).astype(np.float32)
        c = np.zeros_like(a)
        kernel[(1,)](a, a, c, N=16)
        np.testing.assert_allclose(c, a.astype(np.float64) @ a, rtol=1e-2, atol=1e-2)  # tf32 inputs
    else:
        kernel = _fresh(_gelu)
        n = (1 << 20) if setting == "big" else 100
        x = np.zeros(n, np.float32)
        kernel[(triton.cdiv(n, 1024),)](x, np.zeros_like(x), n, BLOCK=1024)
    executable = _executable(kernel)
    compiled = executable if isinstance(executable, launcher.Executable) else executable._compiled
    assert isinstance(compiled, launcher.Executable)


@triton.jit
def _overrun(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def test_a_first_launch_reports_the_error_the_compiled_code_reports(monkeypatch):
    x, out = np.ones(8, np.float32), np.zeros(16, np.float32)
    kernel = _fresh(_overrun)
    with pytest.raises(OutOfBoundsError) as on_tier_0:
        kernel[(1,)](x, out, BLOCK=16)
    assert _executable(kernel)._compiled is None
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    with pytest.raises(OutOfBoundsError) as compiled:
        _fresh(_overrun)[(1,)](x, out, BLOCK=16)
    assert str(on_tier_0.value) == str(compiled.value)
    assert out.tolist() == [0.0] * 16  # nothing written either way


@triton.jit
def _histogram(x_ptr, out_ptr, N: tl.constexpr, BINS: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(tl.load(x_ptr + tl.arange(0, N)), BINS))


def test_a_kernel_the_backend_cannot_compile_stays_on_the_interpreter_with_the_note(monkeypatch):
    from tritium.backends.cpu import codegen

    def refuse(self, op):
        raise codegen.UnsupportedOp("the histogram op")

    monkeypatch.setitem(codegen.Codegen.rules, "histogram", refuse)
    kernel = _fresh(_histogram)
    x = (np.arange(64) % 8).astype(np.int32)
    out = np.zeros(8, np.int32)
    kernel[(1,)](x, out, N=64, BINS=8)  # tier 0: nothing compiled yet
    assert out.tolist() == [8] * 8
    out[:] = 0
    with pytest.warns(RuntimeWarning, match=r"cannot compile the histogram op .*\n(.*\n)*note: kernel "
                                            r"'_histogram' runs on the interpreter instead"):
        kernel[(1,)](x, out, N=64, BINS=8)
    assert out.tolist() == [8] * 8


def test_a_timed_kernel_is_compiled_at_its_first_launch():
    """``do_bench`` (and the autotuner) time the code that keeps running: no interpreter tier there."""
    kernel = _fresh(_gelu)
    x = np.ones(100, np.float32)
    triton.testing.do_bench(lambda: kernel[(1,)](x, np.zeros_like(x), 100, BLOCK=128), warmup=1, rep=1)
    executable = _executable(kernel)
    assert isinstance(executable._compiled, launcher.Executable) and executable.launches >= 2
    assert executable._interpreted is None  # never ran there
