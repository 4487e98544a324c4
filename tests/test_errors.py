"""Rejected programs and run-time faults: each error's type, its fields, and a message that
points at the kernel's file, the right line (found in the test by a marker comment in the
kernel's own source), the source line itself and a caret under the offending column.

The oracles here are the source text (via inspect) and the memory the tests own: a faulting
store must leave its output exactly as it was.
"""
from __future__ import annotations

import inspect
import re
import warnings
from pathlib import Path

import pytest
import torch

import tritium
import tritium as triton
import tritium.language as tl

NOT_CONSTEXPR_GLOBAL = 4
CONSTEXPR_GLOBAL = tl.constexpr(8)


def _marked_line(kernel, marker: str) -> tuple[str, int, str]:
    """(file, line number, source line) of the line of ``kernel`` that carries ``# <marker>``."""
    fn = kernel.fn if hasattr(kernel, "fn") else kernel
    lines, first = inspect.getsourcelines(fn)
    hits = [i for i, text in enumerate(lines) if re.search(rf"#\s*{re.escape(marker)}\b", text)]
    assert len(hits) == 1, f"marker {marker!r} must appear once in {fn.__name__}"
    return inspect.getsourcefile(fn), first + hits[0], lines[hits[0]].rstrip("\n")


def assert_points_at(error: Exception, kernel, marker: str, caret_at: str | None = None) -> None:
    """The message names file:line, quotes the source line, and puts a caret under ``caret_at``
    (a piece of that line; the caret must fall on its first character)."""
    file, line, source = _marked_line(kernel, marker)
    message = str(error)
    assert f"{file}:{line}:" in message, message
    rows = message.splitlines()
    quoted = [i for i, row in enumerate(rows) if row.strip() == source.strip()]
    assert quoted, f"source line {source.strip()!r} not quoted in:\n{message}"
    i = quoted[0]
    assert i + 1 < len(rows) and rows[i + 1].strip() == "^", f"no caret under the source line:\n{message}"
    caret_col = rows[i + 1].index("^")
    assert caret_col < len(rows[i]) and rows[i][caret_col] != " ", f"caret points at a blank:\n{message}"
    if caret_at is not None:
        # the quoted row is the source line shifted right by a constant prefix
        shift = len(rows[i]) - len(rows[i].lstrip()) - (len(source) - len(source.lstrip()))
        expected_col = source.index(caret_at) + shift
        assert caret_col == expected_col, f"caret at column {caret_col}, expected {expected_col}:\n{message}"


# ------------------------------------------------------------------------------------------------
# compile-time errors
# ------------------------------------------------------------------------------------------------
@triton.jit
def _if_on_block_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if mask:  # ERR
        x = x * 2.0
    tl.store(out_ptr + offs, x, mask=mask)


def test_if_on_a_block_condition():
    x = torch.arange(8, dtype=torch.float32)
    out = torch.zeros(8)
    with pytest.raises(triton.CompilationError) as info:
        _if_on_block_kernel[(2,)](x, out, 6, BLOCK=4)
    assert_points_at(info.value, _if_on_block_kernel, "ERR", caret_at="mask:")
    assert "tl.where" in str(info.value)
    assert out.tolist() == [0.0] * 8  # nothing ran


def test_kernel_defined_inside_a_function_points_at_the_right_column():
    # an indented definition: lines and columns must account for the indentation
    @triton.jit
    def nested_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        if x > 0:  # ERR
            x = x + 1.0
        tl.store(x_ptr + offs, x, mask=offs < n)

    with pytest.raises(triton.CompilationError) as info:
        nested_kernel[(1,)](torch.zeros(4), 4, BLOCK=4)
    assert_points_at(info.value, nested_kernel, "ERR", caret_at="x > 0")


@triton.jit
def _while_on_block_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    while x < 10.0:  # ERR
        x = x + 1.0
    tl.store(x_ptr + tl.arange(0, BLOCK), x)


def test_while_on_a_block_condition():
    with pytest.raises(triton.CompilationError) as info:
        _while_on_block_kernel[(1,)](torch.zeros(4), BLOCK=4)
    assert_points_at(info.value, _while_on_block_kernel, "ERR", caret_at="x < 10.0")


@triton.jit
def _arange_runtime_bound_kernel(x_ptr, out_ptr, n, BLOCK):
    offs = tl.arange(0, BLOCK)  # ERR
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def test_arange_bound_not_constexpr():
    x = torch.arange(4, dtype=torch.float32)
    with pytest.raises(triton.CompilationError) as info:
        _arange_runtime_bound_kernel[(1,)](x, torch.zeros(4), 4, 4)
    assert "arange's arguments must be of type tl.constexpr" in str(info.value)
    assert_points_at(info.value, _arange_runtime_bound_kernel, "ERR", caret_at="tl.arange")


@triton.jit
def _arange_not_pow2_kernel(out_ptr):
    offs = tl.arange(0, 10)  # ERR
    tl.store(out_ptr + offs, offs)


def test_arange_length_not_a_power_of_two():
    with pytest.raises(triton.CompilationError, match="power of two") as info:
        _arange_not_pow2_kernel[(1,)](torch.zeros(16, dtype=torch.int32))
    assert "10" in str(info.value)
    assert_points_at(info.value, _arange_not_pow2_kernel, "ERR", caret_at="tl.arange")


@triton.jit
def _zeros_not_pow2_kernel(out_ptr):
    acc = tl.zeros((3,), dtype=tl.float32)  # ERR
    tl.store(out_ptr, tl.sum(acc, axis=0))


def test_zeros_shape_not_a_power_of_two():
    with pytest.raises(triton.CompilationError, match="power of two") as info:
        _zeros_not_pow2_kernel[(1,)](torch.zeros(1))
    assert "3" in str(info.value)
    assert_points_at(info.value, _zeros_not_pow2_kernel, "ERR", caret_at="tl.zeros")


@triton.jit
def _with_kernel(x_ptr):
    with open("file"):  # ERR
        tl.store(x_ptr, 1.0)


@triton.jit
def _try_kernel(x_ptr):
    try:  # ERR
        tl.store(x_ptr, 1.0)
    except Exception:  # noqa: BLE001, S110 - the construct the compiler rejects
        pass


@triton.jit
def _lambda_kernel(x_ptr):
    f = lambda v: v + 1  # ERR  # noqa: E731
    tl.store(x_ptr, f(1.0))


@pytest.mark.parametrize("kernel,args,caret_at", [
    (_with_kernel, (), "with"),
    (_try_kernel, (), "try"),
    (_lambda_kernel, (), "lambda"),
], ids=["with", "try", "lambda"])  # break and continue are supported: tests/execution/test_break_continue.py
def test_unsupported_constructs(kernel, args, caret_at):
    x = torch.zeros(4)
    with pytest.raises(triton.CompilationError) as info:
        kernel[(1,)](x, *args)
    assert_points_at(info.value, kernel, "ERR", caret_at=caret_at)
    assert x.tolist() == [0.0] * 4


@triton.jit
def _undefined_name_kernel(x_ptr):
    tl.store(x_ptr, no_such_name)  # ERR  # noqa: F821


def test_undefined_name():
    with pytest.raises(triton.CompilationError) as info:
        _undefined_name_kernel[(1,)](torch.zeros(1))
    assert "no_such_name" in str(info.value) and "not defined" in str(info.value)
    assert_points_at(info.value, _undefined_name_kernel, "ERR", caret_at="no_such_name")


@triton.jit
def _global_number_kernel(x_ptr):
    tl.store(x_ptr + tl.arange(0, 4), NOT_CONSTEXPR_GLOBAL * 1.0)  # ERR


@triton.jit
def _constexpr_global_kernel(x_ptr):
    tl.store(x_ptr + tl.arange(0, CONSTEXPR_GLOBAL), CONSTEXPR_GLOBAL * 1.0)


def test_non_constexpr_global_number_is_rejected():
    x = torch.zeros(8)
    with pytest.raises(triton.CompilationError) as info:
        _global_number_kernel[(1,)](x)
    assert "NOT_CONSTEXPR_GLOBAL" in str(info.value) and "constexpr" in str(info.value)
    assert_points_at(info.value, _global_number_kernel, "ERR", caret_at="NOT_CONSTEXPR_GLOBAL")
    # the same use of a tl.constexpr global compiles and runs
    _constexpr_global_kernel[(1,)](x)
    assert x.tolist() == [8.0] * 8


@triton.jit
def _carried_dtype_change_kernel(x_ptr, n):
    acc = tl.zeros((4,), dtype=tl.int32)
    for i in range(n):  # ERR
        acc = acc + 0.5
    tl.store(x_ptr + tl.arange(0, 4), acc)


def test_loop_carried_variable_changing_dtype():
    with pytest.raises(triton.CompilationError) as info:
        _carried_dtype_change_kernel[(1,)](torch.zeros(4), 3)
    message = str(info.value)
    assert "acc" in message and "int32" in message and "fp32" in message
    assert_points_at(info.value, _carried_dtype_change_kernel, "ERR")


@triton.jit
def _one_branch_name_kernel(out_ptr):
    pid = tl.program_id(0)
    if pid == 0:
        only_then = pid + 1
    tl.store(out_ptr, only_then)  # ERR


def test_name_defined_in_one_runtime_branch_is_not_visible_after():
    with pytest.raises(triton.CompilationError, match="only_then") as info:
        _one_branch_name_kernel[(2,)](torch.zeros(1, dtype=torch.int32))
    assert_points_at(info.value, _one_branch_name_kernel, "ERR", caret_at="only_then")


@triton.jit
def _bad_helper(x):
    return tl.arange(0, x)  # ERR


@triton.jit
def _calls_bad_helper_kernel(out_ptr, n):
    tl.store(out_ptr + tl.arange(0, 4), tl.sum(_bad_helper(n), axis=0))


def test_error_inside_a_jit_helper_points_at_the_helper():
    with pytest.raises(triton.CompilationError) as info:
        _calls_bad_helper_kernel[(1,)](torch.zeros(4, dtype=torch.int32), 4)
    assert "arange's arguments must be of type tl.constexpr" in str(info.value)
    assert_points_at(info.value, _bad_helper, "ERR", caret_at="tl.arange")


@triton.jit
def _static_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 64, "BLOCK too small")  # ERR
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


def test_static_assert_false_is_a_compilation_error():
    x = torch.zeros(64)
    with pytest.raises(triton.CompilationError) as info:
        _static_assert_kernel[(1,)](x, BLOCK=32)
    assert "BLOCK too small" in str(info.value)
    assert_points_at(info.value, _static_assert_kernel, "ERR", caret_at="tl.static_assert")
    assert x.tolist() == [0.0] * 64
    _static_assert_kernel[(1,)](x, BLOCK=64)  # true: compiles and runs
    assert x.tolist() == [1.0] * 64


def test_compilation_errors_are_tritium_errors():
    assert issubclass(triton.CompilationError, tritium.TritonError)
    assert tritium.CompilationError is triton.CompilationError


def test_a_kernel_mistake_is_caught_as_an_interpreter_error_too():
    """Triton's interpreter reports a kernel's mistakes as InterpreterError, compiled Triton as
    CompilationError; tritium's error is both, and still points at the line."""
    from tritium.runtime.errors import InterpreterError

    assert issubclass(triton.CompilationError, InterpreterError)
    x, out = torch.zeros(64), torch.zeros(64)
    with pytest.raises(InterpreterError) as info:
        _if_on_block_kernel[(1,)](x, out, 64, BLOCK=64)
    assert isinstance(info.value, triton.CompilationError)
    assert_points_at(info.value, _if_on_block_kernel, "ERR", caret_at="mask:")


# ------------------------------------------------------------------------------------------------
# out-of-bounds accesses
# ------------------------------------------------------------------------------------------------
@triton.jit
def _unmasked_load_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)  # ERR
    tl.store(out_ptr + offs, x, mask=offs < n)


@triton.jit
def _unmasked_store_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x + 1.0)  # ERR


@pytest.mark.parametrize("kernel,name,access", [(_unmasked_load_kernel, "x_ptr", "load"),
                                                (_unmasked_store_kernel, "out_ptr", "store")],
                         ids=["load", "store"])
def test_unmasked_tail_is_out_of_bounds(kernel, name, access, on_the_interpreter):
    n, block = 10000, 1024  # 10 programs; the last covers 9216..10239
    x = torch.randn(n)
    out = torch.full((n,), -3.0)
    with pytest.raises(tritium.OutOfBoundsError) as info:
        kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)
    err = info.value
    assert isinstance(err, IndexError)
    assert err.program_id == (9, 0, 0)
    assert err.offset == 10000  # the first lane past the end
    assert err.extent == 10000
    assert err.tensor == name
    assert err.access == access
    message = str(err)
    assert kernel.__name__ in message and name in message
    assert_points_at(err, kernel, "ERR", caret_at=f"tl.{access}" if access == "load" else "tl.store")
    # the whole grid runs as one batch here, and the faulting access stops it before any store lands
    assert torch.equal(out, torch.full((n,), -3.0))


def test_out_of_bounds_store_writes_nothing_even_in_bounds_lanes():
    n, block = 1000, 1024  # one program: 1000 valid lanes, 24 past the end
    x = torch.randn(n)
    out = torch.full((n,), 42.0)
    with pytest.raises(tritium.OutOfBoundsError) as info:
        _unmasked_store_kernel[(1,)](x, out, n, BLOCK=block)
    assert info.value.program_id == (0, 0, 0) and info.value.offset == 1000 and info.value.extent == 1000
    assert torch.equal(out, torch.full((n,), 42.0))


@triton.jit
def _negative_offset_kernel(x_ptr, out_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK) - shift
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + offs))  # ERR


def test_negative_offset_is_out_of_bounds():
    x = torch.randn(16)
    out = torch.zeros(16)
    with pytest.raises(tritium.OutOfBoundsError) as info:
        _negative_offset_kernel[(1,)](x, out, 3, BLOCK=16)
    assert info.value.offset == -3 and info.value.tensor == "x_ptr" and info.value.extent == 16
    assert_points_at(info.value, _negative_offset_kernel, "ERR")


def test_masked_tail_is_fine_and_correct():
    n, block = 10000, 1024
    x = torch.randn(n)
    out = torch.zeros(n)
    _unmasked_store_kernel_masked[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)
    torch.testing.assert_close(out, x + 1.0, rtol=0, atol=0)


@triton.jit
def _unmasked_store_kernel_masked(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + 1.0, mask=mask)


# ------------------------------------------------------------------------------------------------
# device_assert, static_assert, hints, static_print
# ------------------------------------------------------------------------------------------------
@triton.jit
def _device_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_assert(x >= 0, "x must be non-negative")  # ERR


def test_device_assert_failure_names_the_program():
    x = torch.ones(64)
    x[37] = -1.0  # program 2 (of 16-element blocks), lane 5
    with pytest.raises(tritium.DeviceAssertionError) as info:
        _device_assert_kernel[(4,)](x, BLOCK=16)
    err = info.value
    assert isinstance(err, AssertionError)
    assert err.program_id == (2, 0, 0)
    assert "(2, 0, 0)" in str(err)
    assert "x must be non-negative" in str(err)
    assert_points_at(err, _device_assert_kernel, "ERR", caret_at="tl.device_assert")
    # and holds when every value is fine
    _device_assert_kernel[(4,)](torch.ones(64), BLOCK=16)


@triton.jit
def _device_assert_in_branch_kernel(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK))
    if pid != 2:
        tl.device_assert(x >= 0, "checked outside program 2")


def test_device_assert_only_checks_programs_that_reach_it():
    x = torch.ones(64)
    x[37] = -1.0  # in program 2, which skips the assert
    _device_assert_in_branch_kernel[(4,)](x, BLOCK=16)
    x[5] = -1.0  # in program 0, which checks
    with pytest.raises(tritium.DeviceAssertionError) as info:
        _device_assert_in_branch_kernel[(4,)](x, BLOCK=16)
    assert info.value.program_id == (0, 0, 0)


@triton.jit
def _multiple_of_kernel(x_ptr, out_ptr, start):
    s = tl.multiple_of(start, 16)
    offs = s + tl.arange(0, 16)
    tl.store(out_ptr + offs, tl.load(x_ptr + tl.arange(0, 16)))  # ERR


def test_a_false_hint_a_store_relies_on_is_an_error_in_debug_mode_at_the_store():
    x = torch.arange(16, dtype=torch.float32)
    out = torch.zeros(128)
    _multiple_of_kernel[(1,)](x, out, 48, debug=True)
    assert out[48:64].tolist() == list(range(16))
    with pytest.raises(tritium.HintViolationError) as info:
        _multiple_of_kernel[(1,)](x, out, 50, debug=True)
    assert isinstance(info.value, ValueError)
    assert f"tl.multiple_of([16]) at {Path(__file__).name}:" in str(info.value)
    assert_points_at(info.value, _multiple_of_kernel, "ERR", caret_at="tl.store")


@triton.jit
def _multiple_of_block_kernel(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    offs = tl.multiple_of(tl.arange(0, BLOCK) * stride, 8)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + offs))


def test_a_false_alignment_hint_on_lanes_no_vector_access_groups_is_harmless():
    x = torch.arange(256, dtype=torch.float32)
    out = torch.zeros(16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _multiple_of_block_kernel[(1,)](x, out, 4, BLOCK=16, debug=True)
    assert out.tolist() == [4.0 * i for i in range(16)]


def _static_print_fn(x_ptr, y_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    y = tl.load(y_ptr + tl.arange(0, BLOCK))
    tl.static_print("dtypes", x.dtype, y.dtype, (x + y).dtype, BLOCK)
    tl.store(x_ptr + tl.arange(0, BLOCK), x + y)


def test_static_print_prints_once_per_compilation(capsys):
    kernel = triton.jit(_static_print_fn)
    x32, x16 = torch.zeros(8), torch.zeros(8, dtype=torch.float16)
    kernel[(1,)](x32, x16, BLOCK=8)
    assert capsys.readouterr().out == "dtypes fp32 fp16 fp32 8\n"
    kernel[(1,)](x32, x16, BLOCK=8)  # cached: nothing printed
    kernel[(4,)](x32, x16, BLOCK=8)
    assert capsys.readouterr().out == ""
    kernel[(1,)](x16, x16, BLOCK=8)  # new key: printed again
    assert capsys.readouterr().out == "dtypes fp16 fp16 fp16 8\n"
    kernel[(1,)](x32, x32, BLOCK=4)
    assert capsys.readouterr().out == "dtypes fp32 fp32 fp32 4\n"
    assert len(kernel.cache) == 3


def test_static_print_in_a_loop_body_prints_once(capsys):
    kernel = triton.jit(_static_print_loop_fn)
    kernel[(1,)](torch.zeros(4), 5)
    out = capsys.readouterr().out
    assert out.count("in loop") == 1, out
    assert "fp32" in out


def _static_print_loop_fn(x_ptr, n):
    acc = 0  # becomes fp32 in the body: the body is compiled twice, printed once
    for i in range(n):
        acc += tl.load(x_ptr + i % 4)
        tl.static_print("in loop", acc.dtype)
    tl.store(x_ptr, acc)



# how errors read ---------------------------------------------------------------------------------------
@triton.jit
def _mismatched_shapes(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.store(x_ptr + tl.arange(0, 4), x + tl.arange(0, 8))  # ERR


def test_a_typing_error_is_printed_once_and_keeps_its_cause_for_code_that_reads_it(tmp_path):
    import subprocess
    import sys
    with pytest.raises(tritium.CompilationError) as info:
        _mismatched_shapes[(1,)](torch.zeros(8))
    assert isinstance(info.value.__cause__, ValueError)  # as Triton keeps it (its tests read it)
    assert str(info.value.__cause__) in str(info.value)
    script = tmp_path / "shapes.py"
    script.write_text("import torch\nimport tritium as triton\nimport tritium.language as tl\n\n"
                      "@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr + tl.arange(0, 4))\n"
                      "    tl.store(x_ptr + tl.arange(0, 4), x + tl.arange(0, 8))\n\n"
                      "k[(1,)](torch.zeros(8))\n")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert result.stderr.count("incompatible shapes [4] and [8]") == 1, result.stderr
    assert "direct cause" not in result.stderr


@triton.jit
def _appends_to_a_list(x_ptr):
    xs = []
    xs.append(tl.load(x_ptr))  # ERR
    tl.store(x_ptr, xs[0])


def test_list_methods_in_a_kernel_say_lists_are_not_supported():
    with pytest.raises(tritium.CompilationError) as info:
        _appends_to_a_list[(1,)](torch.zeros(2))
    message = str(info.value)
    assert "lists are not supported in kernels" in message and "tl.static_range" in message
    assert_points_at(info.value, _appends_to_a_list, "ERR", caret_at="xs.append")


def test_tritium_run_tracebacks_start_at_the_users_code(tmp_path):
    import subprocess
    import sys
    (tmp_path / "fails.py").write_text("def f():\n    raise ValueError('boom')\n\nf()\n")
    cli = [sys.executable, "-m", "tritium"]
    for args in (["run", "fails.py"], ["run", "-m", "fails"]):
        result = subprocess.run(cli + args, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert result.returncode == 1
        frames = [line for line in result.stderr.splitlines() if line.lstrip().startswith("File ")]
        assert frames and all("fails.py" in line for line in frames), result.stderr
        assert result.stderr.rstrip().endswith("ValueError: boom")
