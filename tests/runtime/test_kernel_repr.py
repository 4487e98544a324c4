"""``@triton.jit(repr=f)``: the compiled kernel is named by ``f(specialization)``, whose
``signature`` gives each parameter's type as Triton writes it and ``constants`` the compile-time
values (constexprs, and integers specialized because they equal 1), as Triton's
``test_value_specialization`` reads them."""
from __future__ import annotations

import pytest
import torch

import tritium as triton
import tritium.language as tl


def _name(specialization):
    kind = specialization.signature["value"]
    ones = "_".join(k for k, v in specialization.constants.items() if isinstance(k, str) and v == 1)
    return f"kernel_{kind}_{ones}_{specialization.signature['x']}_{specialization.signature['BLOCK']}"


@triton.jit(repr=_name)
def _named(value, is_one, x, BLOCK: tl.constexpr):
    pass


@pytest.mark.parametrize("value, kind", [(-1, "i32"), (0, "i32"), (-2 ** 31, "i32"), (2 ** 31 - 1, "i32"),
                                         (2 ** 31, "i64"), (2 ** 32 - 1, "i64"), (2 ** 63 - 1, "i64"),
                                         (-2 ** 63, "i64"), (2 ** 63, "u64"), (2 ** 64 - 1, "u64"), (0.5, "fp32")])
def test_the_repr_function_names_the_compiled_kernel_from_its_specialization(value, kind):
    compiled = _named.warmup(value, 1, torch.zeros(4, dtype=torch.float16), BLOCK=4, grid=(1,))
    assert compiled.name == f"kernel_{kind}_is_one_*fp16_constexpr"


def test_without_repr_the_kernel_keeps_its_function_name():
    @triton.jit
    def plain(x):
        pass

    assert plain.warmup(torch.zeros(1), grid=(1,)).name == "plain"
