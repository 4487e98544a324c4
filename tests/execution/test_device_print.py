"""device_print prints what compiled Triton prints: ``pid (x, y, z) idx (i) prefix value``.

The oracle is the line format Triton's own test suite expects of a GPU (test_subprocess.py):
index columns padded to the width of the largest index, ``idx ()`` for scalars, ``(operand n)``
for several values, floats as C's %f, hex zero-padded to the type's width.
"""
import torch

import cuda_accuracy
import tritium as triton
import tritium.language as tl


@triton.jit
def print_block(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.device_print("x: ", x)


@triton.jit
def print_scalar_and_two_operands(BLOCK: tl.constexpr):
    tl.device_print("x: ", tl.program_id(0) + 42)
    print("", tl.arange(0, BLOCK), tl.full((BLOCK,), 1, tl.int32))


@triton.jit
def print_hex_and_no_arg(X, BLOCK: tl.constexpr):
    tl.device_print("x: ", tl.load(X + tl.arange(0, BLOCK)), hex=True)
    tl.device_print("no arg")


@triton.jit
def print_2d(BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)[:, None]
    cols = tl.arange(0, BLOCK_N)[None, :]
    tl.device_print("", rows * BLOCK_N + cols)


def _lines(capfd):
    """The printed lines; on a GPU, whose threads print in no fixed order, sorted (and the expected
    lines are compared sorted too: see _ordered)."""
    lines = [line for line in capfd.readouterr().out.splitlines() if line]
    return sorted(lines) if cuda_accuracy.on_cuda() else lines


def _ordered(lines):
    return sorted(lines) if cuda_accuracy.on_cuda() else lines


def test_block_of_floats(capfd):
    print_block[(1,)](torch.arange(128.0), BLOCK=128)
    assert _lines(capfd) == _ordered([f"pid (0, 0, 0) idx ({i:3}) x: {i}.000000" for i in range(128)])


def test_scalar_and_several_operands(capfd):
    print_scalar_and_two_operands[(1,)](BLOCK=16)
    assert _lines(capfd) == _ordered(["pid (0, 0, 0) idx () x: 42"] + [
        f"pid (0, 0, 0) idx ({i:2}): (operand {n}) {i if n == 0 else 1}" for i in range(16) for n in range(2)])


def test_hex_widths_follow_the_type_and_a_bare_prefix_prints_alone(capfd):
    print_hex_and_no_arg[(1,)](torch.arange(-2, 2, dtype=torch.int16), BLOCK=4)
    assert _lines(capfd) == _ordered(["pid (0, 0, 0) idx (0) x: 0xfffe", "pid (0, 0, 0) idx (1) x: 0xffff",
                                      "pid (0, 0, 0) idx (2) x: 0x0000", "pid (0, 0, 0) idx (3) x: 0x0001",
                                      "pid (0, 0, 0) no arg"])


def test_two_dimensional_index_columns(capfd):
    print_2d[(1, 2)](BLOCK_M=4, BLOCK_N=32)
    expected = [f"pid (0, {p}, 0) idx ({x}, {y:2}): {x * 32 + y}" for p in range(2) for x in range(4) for y in range(32)]
    assert _lines(capfd) == _ordered(expected)
