"""@triton.aggregate: classes whose instances kernels build, pass around and carry through loops.

Oracle: the same computation in torch (fp32 sums of at most 4 values: exact to rounding, compared
within 1e-6 relative)."""
from __future__ import annotations

import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError


@triton.aggregate
class Running:
    total: tl.tensor
    count: tl.tensor
    scale: tl.constexpr

    @triton.jit
    def add(self, x):
        return Running(self.total + x, self.count + 1, self.scale)

    @triton.jit
    def mean(self):
        return self.total * self.scale / self.count

    def __getitem__(self, i, _semantic=None):
        return self.total if i == 0 else self.count


@triton.aggregate
class Offsets:
    r: tl.tensor

    def __init__(self, n: tl.constexpr, _semantic=None):
        self.r = tl.arange(0, n, _semantic=_semantic)


@triton.jit
def _scaled_mean(x_ptr, out_ptr, first_ptr, N: tl.constexpr, STEPS: tl.constexpr):
    offsets = Offsets(N)
    acc = Running(tl.zeros((N,), tl.float32), 0, 2.0)
    for s in range(STEPS):
        acc = acc.add(tl.load(x_ptr + s * N + offsets.r))
    tl.store(out_ptr + offsets.r, acc.mean())
    tl.store(first_ptr + offsets.r, acc[0])


def test_an_aggregate_built_passed_and_carried_through_a_loop(backend):
    x = torch.randn(4, 16)
    out, total = torch.empty(16), torch.empty(16)
    _scaled_mean[(1,)](x, out, total, N=16, STEPS=4)
    torch.testing.assert_close(out, x.sum(0) * 2 / 4, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(total, x.sum(0), rtol=1e-6, atol=1e-6)


def test_the_automatic_init_wraps_python_values():
    @triton.aggregate
    class State:
        x: tl.constexpr
        shape: tl.tuple
        y: tl.constexpr = 7

    state = State(3, (4, 5))
    assert isinstance(state.x, tl.constexpr) and state.x.value == 3 and state.y.value == 7
    assert isinstance(state.shape, tl.tuple) and [v.value for v in state.shape] == [4, 5]
    with pytest.raises(TypeError, match="missing the field 'x'"):
        State()
    with pytest.raises(AttributeError, match="does not change once built"):
        state.x = tl.constexpr(1)


@triton.jit
def _assigns_a_field(out_ptr):
    acc = Running(tl.zeros((4,), tl.float32), 0, 1.0)
    acc.scale = 3.0
    tl.store(out_ptr + tl.arange(0, 4), acc.total)


def test_assigning_a_field_in_a_kernel_is_a_compile_error(backend):
    with pytest.raises(CompilationError) as e:
        _assigns_a_field[(1,)](torch.empty(4))
    assert "acc.scale = 3.0" in str(e.value) and "do not change once built" in str(e.value)


def test_inheritance_defaults_methods_and_replace():
    @triton.aggregate
    class Base:
        x: tl.constexpr = tl.constexpr(100)

        @triton.constexpr_function
        def doubled(self):
            return self.x * 2

    @triton.aggregate
    class Child(Base):
        y: tl.constexpr

    child = Child(y=7)
    assert (child.x.value, child.y.value, child.doubled()) == (100, 7, 200)
    changed = tl.aggregate_replace(child, x=1)
    assert (changed.x.value, changed.y.value, child.x.value) == (1, 7, 100)
    with pytest.raises(TypeError, match="has no field 'z'"):
        tl.aggregate_replace(child, z=1)
    with pytest.raises(TypeError, match="expects an aggregate instance"):
        tl.aggregate_replace(42, x=1)

    class Plain:
        pass

    with pytest.raises(TypeError, match="can only inherit from other aggregates"):
        @triton.aggregate
        class Wrong(Plain):
            x: tl.constexpr


@triton.jit
def _replaced_in_a_kernel(out_ptr):
    acc = Running(tl.zeros((4,), tl.float32) + 1.0, 0, 1.0)
    acc = tl.aggregate_replace(acc, total=acc.total * 3.0)
    tl.store(out_ptr + tl.arange(0, 4), acc.total)


def test_aggregate_replace_in_a_kernel(backend):
    out = torch.empty(4)
    _replaced_in_a_kernel[(1,)](out)
    assert out.tolist() == [3.0] * 4


def test_jit_refuses_var_keyword_parameters():
    def kernel(**kwargs):
        pass

    with pytest.raises(TypeError, match=r"JIT functions do not support \*\*kwargs"):
        triton.jit(kernel)


def test_a_derived_init_calls_super():
    @triton.aggregate
    class Base:
        x: tl.constexpr

        def __init__(self, x):
            self.x = tl.constexpr(x * 2)

    @triton.aggregate
    class Child(Base):
        y: tl.constexpr

        def __init__(self, x, y):
            super().__init__(x)
            self.y = tl.constexpr(y)

    child = Child(1, 5)
    assert (child.x.value, child.y.value) == (2, 5) and isinstance(child, Base)
    with pytest.raises(AttributeError, match="immutable aggregate"):
        child.y = tl.constexpr(0)


@triton.jit
def _chosen_in_an_if(x_ptr, out_ptr, flag):
    acc = Running(tl.load(x_ptr + tl.arange(0, 4)), 1, 1.0)
    if flag > 0:
        acc = acc.add(acc.total)
    tl.store(out_ptr + tl.arange(0, 4), acc.mean())


def test_an_aggregate_through_a_run_time_if(backend):
    x = torch.arange(4, dtype=torch.float32) + 1
    out = torch.empty(4)
    _chosen_in_an_if[(1,)](x, out, 3)
    torch.testing.assert_close(out, x)  # (x + x) / 2
    _chosen_in_an_if[(1,)](x, out, 0)
    torch.testing.assert_close(out, x)  # x / 1


@triton.aggregate
class _Combiner:
    unused: tl.constexpr

    @triton.jit
    def combine(self, a, b):
        return a + b


@triton.jit
def _passes_a_bound_method(x_ptr, out_ptr):
    c = _Combiner(1)
    tl.store(out_ptr, tl.reduce(tl.load(x_ptr + tl.arange(0, 4)), 0, c.combine))


def test_a_bound_method_as_a_function_value_is_a_clear_error(backend):
    with pytest.raises(CompilationError, match="can only be called here"):
        _passes_a_bound_method[(1,)](torch.ones(4), torch.empty(1))
