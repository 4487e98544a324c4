"""The backend seam's promises on the CPU backend: launch options the generated code ignores compile
once, and a kernel found in the disk cache launches without generating its module again (its error
records still name the kernel's lines)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.backends import registry


@triton.jit
def _twice(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n) * 2.0, mask=i < n)


def test_the_cpu_code_depends_on_no_launch_option():
    backend = registry.get("cpu")
    assert backend.code_key(backend.parse_options({"num_warps": 8, "num_stages": 5})) == \
        backend.code_key(backend.parse_options({}))
    cuda = registry.get("cuda")
    assert cuda.code_key(cuda.parse_options({"num_warps": 8})) != cuda.code_key(cuda.parse_options({}))


def test_an_autotune_over_num_warps_compiles_one_module_on_the_cpu(monkeypatch):
    from tritium.backends.cpu import CPUBackend

    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    compiled = []
    original = CPUBackend.compile
    monkeypatch.setattr(CPUBackend, "compile", lambda self, *a: compiled.append(1) or original(self, *a))
    configs = [triton.Config({"BLOCK": 64}, num_warps=w) for w in (1, 2, 4, 8)]
    tuned = triton.autotune(configs, key=["n"])(triton.jit(_twice.fn))
    x = np.arange(1000, dtype=np.float32)
    y = np.zeros_like(x)
    tuned[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](x, y, 1000)
    assert np.array_equal(y, 2 * x)
    assert len(tuned.cache) == 1, "the autotuner timed the configs"
    assert len(compiled) == 1, f"{len(compiled)} modules compiled for four num_warps values"
    warps = sorted(k.options.num_warps for k in tuned.fn.cache.values())
    assert warps == [1, 2, 4, 8], "each config keeps its own options record"


_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import tritium as triton
    import tritium.language as tl
    from tritium.backends import registry

    @triton.jit
    def unmasked(x_ptr, y_ptr, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + i, tl.load(x_ptr + i) + 1.0)

    if sys.argv[1] == "second":
        from tritium.backends.cpu import codegen

        def refuse(self):
            raise AssertionError("the module was generated again")
        codegen.Codegen.build = refuse
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    unmasked[(4,)](x, y, BLOCK=16)
    assert np.array_equal(y, x + 1)
    try:
        unmasked[(5,)](x, y, BLOCK=16)
    except triton.OutOfBoundsError as error:
        print(str(error).splitlines()[0])
        print(str(error).splitlines()[1])
    if sys.argv[1] == "first":
        assert registry.get("cpu").wait_for_optimized_code(timeout=120)
""")


def test_a_disk_cached_kernel_launches_without_generating_its_module(tmp_path):
    script = tmp_path / "cached.py"
    script.write_text(_SCRIPT)
    env = {**__import__("os").environ, "TRITIUM_CACHE_DIR": str(tmp_path / "cache"), "TRITIUM_BACKEND": "cpu"}
    outputs = []
    for which in ("first", "second"):
        done = subprocess.run([sys.executable, str(script), which], env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1], "the same error from the cached object"
    assert "cached.py:11:25 (in unmasked)" in outputs[1] and "out-of-bounds load" in outputs[1]
    assert "program (4, 0, 0)" in outputs[1]


if __name__ == "__main__":
    pytest.main([__file__])


def test_registers_and_spills_are_the_loaded_kernels_read_on_first_use(monkeypatch):
    """A GPU kernel reports what the driver says of the loaded function (a stand-in here: no GPU), not
    a constant; host code reports the nominal 32 and 0."""
    from types import SimpleNamespace

    from tritium.backends.base import Executable
    from tritium.compiler.compiled_kernel import CompiledKernel

    loads = []

    class Loaded(Executable):
        def __init__(self):
            self.asm = {}

        def load(self):
            loads.append(1)
            return SimpleNamespace(handle=1234, n_regs=168, n_spills=3)

    kernel = CompiledKernel("k", (), None, Loaded(), "gpu")
    assert (kernel.n_regs, kernel.n_spills, kernel.function) == (168, 3, 1234) and loads == [1]
    assert kernel.n_regs == 168 and loads == [1], "loaded once"
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    x = np.zeros(4, np.float32)
    host = _twice.warmup(x, x, 4, BLOCK=4, grid=(1,))
    assert (host.n_regs, host.n_spills) == (32, 0)
