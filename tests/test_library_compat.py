"""What libraries built on Triton read from the ``triton`` namespace around their kernels.

torch imports Triton's compiler modules as soon as ``import triton`` works (``torch.compile``,
``torch.compiler.disable``); libraries choose code paths by ``triton.__version__``, subclass the
autotuner and replace its hooks, and set ``TRITON_F32_DEFAULT``. Oracles: numpy/torch results
computed independently, call records, and the documented behaviour of Triton's API.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.runtime.autotuner import Autotuner


def test_torch_compile_and_dynamo_work_when_triton_is_tritium(tmp_path):
    # torch imports triton.backends.compiler, triton.compiler.compiler, triton.compiler.CompiledKernel
    # and inspects triton.language.core.view once `import triton` succeeds.
    script = textwrap.dedent("""
        from tritium import compat
        compat.install()
        import torch
        import torch._dynamo
        from torch._inductor.runtime import triton_compat
        from torch.utils._triton import has_triton
        assert triton_compat.HAS_TRITON
        # tritium compiles for the CPU: torch sees Triton, and keeps its C++ codegen for CPU tensors
        # unless torch._inductor.config.cpu_backend = "triton" (tests/test_torch_compile.py)
        assert has_triton()

        @torch.compiler.disable
        def eager(x):
            return x + 1

        compiled = torch.compile(lambda x: torch.sin(x) * 2)
        x = torch.linspace(-2, 2, 7)
        assert torch.equal(eager(x), x + 1)
        torch.testing.assert_close(compiled(x), torch.sin(x) * 2)
        # torch.library.wrap_triton reads JITFunction.params (num, name, is_constexpr) and launches
        import triton
        import triton.language as tl

        @triton.jit
        def scale(x_ptr, out_ptr, n, FACTOR: tl.constexpr, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * FACTOR, mask=offs < n)

        out = torch.empty(7)
        torch.library.wrap_triton(scale)[lambda meta: (triton.cdiv(7, meta["BLOCK"]),)](x, out, 7, FACTOR=3, BLOCK=4)
        assert torch.equal(out, x * 3)
        import triton.backends
        print("ok", sorted(triton.backends.backends))
    """)
    path = tmp_path / "uses_torch_compile.py"  # a file: kernels need their source
    path.write_text(script)
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok ['cpu', 'nvidia']")  # the GPU's is active only where there is one


@triton.jit(do_not_specialize=["n"])
def described(x_ptr, n, BLOCK: tl.constexpr, scale=2.0):
    pass


def test_kernel_params_describe_each_parameter_as_triton_does():
    params = described.params
    assert [p.num for p in params] == [0, 1, 2, 3]
    assert [p.name for p in params] == ["x_ptr", "n", "BLOCK", "scale"]
    assert [p.is_constexpr for p in params] == [False, False, True, False]
    assert [p.do_not_specialize for p in params] == [False, True, False, False]
    assert [p.has_default for p in params] == [False, False, False, True] and params[3].default == 2.0
    assert not any(p.is_const for p in params)


def test_compiler_modules_name_what_triton_has_there():
    from tritium.backends.compiler import GPUTarget
    from tritium.compiler.compiler import CompiledKernel, triton_key
    import tritium.compiler

    assert tritium.compiler.CompiledKernel is CompiledKernel
    assert GPUTarget("cpu", "x86_64", 32).backend == "cpu"
    assert isinstance(triton_key(), str) and triton_key()


def test_version_is_the_triton_release_followed():
    major, minor = (int(part) for part in triton.__version__.split(".")[:2])
    assert (major, minor) >= (3, 0)  # libraries take their Triton 3 paths (tl.extra.libdevice...)
    assert triton.__tritium_version__ != triton.__version__


def test_language_core_holds_the_builtins():
    assert tl.core.view is tl.view and tl.core.load is tl.load and tl.core.float32 is tl.float32
    assert tl.core.CONSTEXPR_0 == 0 and isinstance(tl.core.CONSTEXPR_0, tl.constexpr)
    assert tl.core.get_int_dtype(16, True) == tl.int16
    assert tl.core.get_int_dtype(64, False) == tl.uint64
    assert tl.core.get_int_dtype(1, True) == tl.int1
    with pytest.raises(ValueError):
        tl.core.get_int_dtype(12, True)
    with pytest.raises(AttributeError):
        tl.core.no_such_builtin  # noqa: B018


@triton.jit
def flip_sign_bits(x_ptr, out_ptr, FLAG: tl.constexpr = tl.core.CONSTEXPR_0):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    idtype = tl.core.get_int_dtype(bitwidth=x.dtype.primitive_bitwidth, signed=True)
    bits = x.to(idtype, bitcast=True)
    sign = (tl.full((16,), 1, idtype) << (x.dtype.primitive_bitwidth - 1)).to(idtype)
    if FLAG == 0:
        bits = bits ^ sign
    tl.store(out_ptr + offs, bits.to(x.dtype, bitcast=True))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_get_int_dtype_inside_a_kernel(dtype):
    x = torch.linspace(-3, 5, 16).to(dtype)
    out = torch.empty_like(x)
    flip_sign_bits[(1,)](x, out)
    assert torch.equal(out, -x)
    flip_sign_bits[(1,)](x, out, FLAG=1)
    assert torch.equal(out, x)


# the autotuner's hooks ---------------------------------------------------------------------------
@triton.jit
def scaled_add(x_ptr, acc_ptr, extra_ptr, n, HAS_EXTRA: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(acc_ptr + offs, tl.load(acc_ptr + offs, mask=mask) + x, mask=mask)
    if HAS_EXTRA:
        tl.store(extra_ptr + offs, tl.load(extra_ptr + offs, mask=mask) * 2, mask=mask)


CONFIGS = [triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32}, ir_override=None)]


def _launch(kernel, x, acc, extra):
    n = x.numel()
    kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, acc, extra, n, HAS_EXTRA=extra is not None)


def test_reset_and_restore_skip_arguments_that_are_none():
    tuned = triton.autotune(CONFIGS, key=["n"], reset_to_zero=["acc_ptr"], restore_value=["extra_ptr"],
                            cache_results=False, do_bench=lambda fn, quantiles: [fn() or 1.0] * 3)(scaled_add)
    x = torch.arange(40, dtype=torch.float32)
    acc = torch.full((40,), 5.0)
    _launch(tuned, x, acc, None)  # an optional pointer gated by a constexpr flag
    assert torch.equal(acc, x)  # zeroed before each timed launch and before the real one
    acc2, extra = torch.full((40,), 7.0), torch.ones(40)
    tuned2 = triton.autotune(CONFIGS, key=["n"], reset_to_zero=["acc_ptr"], restore_value=["extra_ptr"],
                             cache_results=False, do_bench=lambda fn, quantiles: [fn() or 1.0] * 3)(scaled_add)
    _launch(tuned2, x, acc2, extra)
    assert torch.equal(acc2, x)
    assert torch.equal(extra, torch.full((40,), 2.0))  # restored after each timed launch, doubled once


def test_user_hooks_replace_the_default_ones_and_see_reset_only():
    calls = []

    def pre(nargs, reset_only=False):
        calls.append(("pre", reset_only, nargs["BLOCK"]))

    def post(nargs, exception):
        calls.append(("post", exception))

    tuned = triton.autotune(CONFIGS, key=["n"], reset_to_zero=["acc_ptr"], pre_hook=pre, post_hook=post,
                            cache_results=False, do_bench=lambda fn, quantiles: [fn() or 1.0] * 3)(scaled_add)
    assert tuned.user_defined_pre_hook and tuned.user_defined_post_hook
    x = torch.arange(20, dtype=torch.float32)
    acc = torch.full((20,), 1.0)
    _launch(tuned, x, acc, None)
    # as in Triton, a user's pre_hook replaces the default one: acc is not zeroed
    assert torch.equal(acc, 1.0 + 3 * x)  # two timed launches and the real one
    assert calls == [("pre", False, 16), ("post", None), ("pre", False, 32), ("post", None),
                     ("pre", True, tuned.best_config.kwargs["BLOCK"])]


class _LoggingAutotuner(Autotuner):
    """A library's subclass: it replaces the hooks after the base class set them up."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        assert not self.user_defined_pre_hook and not self.user_defined_post_hook
        self.log = []
        default_pre, default_post = self.pre_hook, self.post_hook

        def pre(nargs, reset_only=False):
            self.log.append("pre-reset" if reset_only else "pre")
            default_pre(nargs, reset_only)

        def post(nargs, exception):
            self.log.append("post")
            default_post(nargs, exception)

        self.pre_hook, self.post_hook = pre, post

    def run(self, *args, **kwargs):
        self.log.append("run")
        return super().run(*args, **kwargs)


def test_a_subclass_can_replace_the_hooks():
    tuned = _LoggingAutotuner(scaled_add, scaled_add.arg_names, CONFIGS, ["n"], ["acc_ptr"], ["extra_ptr"],
                              do_bench=lambda fn, quantiles: [fn() or 1.0] * 3, cache_results=False)
    x = torch.arange(24, dtype=torch.float32)
    acc, extra = torch.full((24,), 3.0), torch.full((24,), 5.0)
    _launch(tuned, x, acc, extra)
    assert tuned.log == ["run", "pre", "post", "pre", "post", "pre-reset"]
    assert torch.equal(acc, x) and torch.equal(extra, torch.full((24,), 10.0))
    assert tuned.base_fn is scaled_add.fn


# TRITON_F32_DEFAULT -------------------------------------------------------------------------------
@triton.jit
def fp32_matmul(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b))


def _tf32(x: np.ndarray) -> np.ndarray:
    return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def test_triton_f32_default_sets_the_precision_of_dots_that_name_none(monkeypatch):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal((16, 16)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    truncated = _tf32(a).astype(np.float64) @ _tf32(b).astype(np.float64)
    c = torch.empty(16, 16)
    monkeypatch.delenv("TRITON_F32_DEFAULT", raising=False)
    fp32_matmul[(1,)](torch.from_numpy(a), torch.from_numpy(b), c, N=16)
    assert np.abs(c.numpy() - truncated).max() < 1e-5  # tf32, as on an NVIDIA GPU
    assert np.abs(c.numpy() - exact).max() > 1e-4
    compiled = len(fp32_matmul.cache)
    monkeypatch.setenv("TRITON_F32_DEFAULT", "ieee")
    fp32_matmul[(1,)](torch.from_numpy(a), torch.from_numpy(b), c, N=16)
    assert np.abs(c.numpy() - exact).max() < 1e-5
    assert len(fp32_matmul.cache) == compiled + 1  # a new value compiles the kernel again
    triton.knobs.language.fp32_default = "tf32"  # an assigned knob wins over the variable
    try:
        fp32_matmul[(1,)](torch.from_numpy(a), torch.from_numpy(b), c, N=16)
        assert np.abs(c.numpy() - truncated).max() < 1e-5
    finally:
        del triton.knobs.language.fp32_default
    monkeypatch.setenv("TRITON_F32_DEFAULT", "fp16")
    with pytest.raises(triton.CompilationError, match="TRITON_F32_DEFAULT"):
        fp32_matmul[(1,)](torch.from_numpy(a), torch.from_numpy(b), c, N=16)


# a helper's tl.constexpr annotation ---------------------------------------------------------------
@triton.jit
def _shifted(x, offs: tl.constexpr, WIDTH: tl.constexpr):
    return x + offs + tl.arange(0, WIDTH)  # offs: a block here; WIDTH: a constant


@triton.jit
def helper_with_constexpr_annotations(out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # a run-time block
    tl.store(out_ptr + offs, _shifted(tl.zeros((BLOCK,), tl.int32), offs, BLOCK))
    tl.store(out_ptr + 4 * BLOCK + tl.arange(0, BLOCK), _shifted(tl.zeros((BLOCK,), tl.int32), 100, BLOCK))


def test_a_helper_parameter_annotated_constexpr_takes_a_tensor():
    # as in Triton, where the value passed decides (Triton's fused-attention tutorial relies on it)
    out = torch.zeros(40, dtype=torch.int32)
    helper_with_constexpr_annotations[(4,)](out, BLOCK=8)
    assert out[:32].tolist() == [2 * (i % 8) + (i // 8) * 8 for i in range(32)]
    assert out[32:].tolist() == [100 + i for i in range(8)]


@triton.jit
def dot_with_trans_b(q_ptr, k_ptr, out_ptr):
    r = tl.arange(0, 16)
    q = tl.load(q_ptr + r[:, None] * 16 + r[None, :])
    k = tl.load(k_ptr + r[:, None] * 16 + r[None, :])
    tl.store(out_ptr + r[:, None] * 16 + r[None, :], tl.dot(q, k, trans_b=True))


def test_dot_keywords_of_triton_2_0_are_refused_with_the_replacement():
    x = torch.zeros(16, 16)
    with pytest.raises(triton.CompilationError) as info:
        dot_with_trans_b[(1,)](x, x, x)
    assert "unexpected keyword argument 'trans_b'" in str(info.value)
    assert "tl.trans(k)" in info.value.hint
