"""The backend seam: the registry, choosing a backend from the data's device, options in the cache
key, stages, the disk cache of compiled stages, and TRITIUM_VALIDATE.

Oracles: numpy results computed here, the registry's own list, call counts of test-only backends
(tests/helpers_backends.py) and the files on disk.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import helpers_backends
import tritium as triton
import tritium.language as tl
from tritium import config, knobs
from tritium.backends import registry
from tritium.backends.base import Backend, Options
from tritium.errors import LaunchError, ValidationError
from tritium.runtime import validate


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3 + 1, mask=mask)


@pytest.fixture(autouse=True)
def _backend_chosen_by_the_memory(monkeypatch):
    """These tests are about the choice of backend: TRITIUM_BACKEND is unset unless a test sets it."""
    monkeypatch.delenv("TRITIUM_BACKEND", raising=False)


@pytest.fixture
def registered():
    """Registers test-only backends by "module:Class" path, as a real one is; back to the built-in
    list afterwards."""

    def add(name: str, first: bool = False):
        class_name = {"copy": "CopyBackend", "wrong": "WrongBackend", "caching": "CachingBackend",
                      "unavailable": "UnavailableBackend", "device": "DeviceBackend",
                      "direct": "DirectBackend"}[name]
        registry.register(name, f"helpers_backends:{class_name}", first=first)
        return registry.get(name)

    yield add
    registry.reset()


def _launch(kernel, n=50):
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)
    compiled = kernel[(triton.cdiv(n, 16),)](x, out, n, BLOCK=16)
    np.testing.assert_array_equal(out, x * 3 + 1)
    return compiled


# the registry ------------------------------------------------------------------------------------------
def test_the_compiled_cpu_backend_is_the_first_registered_backend_for_host_memory(monkeypatch):
    monkeypatch.delenv("TRITIUM_BACKEND", raising=False)
    assert registry.names() == ["cpu", "interpreter", "cuda"]
    backend = registry.get("interpreter")
    assert isinstance(backend, Backend) and backend.is_available()
    assert backend.devices == {"cpu"} and backend.stages == ("ttir",) and backend.cached_stages == ()
    assert [b.name for b in registry.available("cpu")] == ["cpu", "interpreter"]
    if not registry.get("cuda").is_available():
        assert registry.available("cuda") == []
    compiled = _launch(triton.jit(scale_kernel.fn))
    assert compiled.backend == "cpu"
    assert compiled.asm["layouts"] == str(compiled.ir), "the IR carries the placement stage's encodings"
    plain = re.sub(r", #cpu\.\w+>", ">", str(compiled.ir))
    assert compiled.asm["ttir"].split() == plain.split(), "the tile IR before the placement stage"
    monkeypatch.setenv("TRITIUM_BACKEND", "interpreter")
    assert _launch(triton.jit(scale_kernel.fn)).backend == "interpreter"


def test_an_unknown_backend_name_lists_the_registered_ones(monkeypatch):
    monkeypatch.setenv("TRITIUM_BACKEND", "llvm")
    with pytest.raises(LaunchError, match=r"there is no backend 'llvm'; the backends are cpu \(serves cpu\); interpreter \(serves cpu\)"):
        _launch(triton.jit(scale_kernel.fn))
    monkeypatch.setenv("TRITIUM_BACKEND", "Interpreter")  # names are case-insensitive
    _launch(triton.jit(scale_kernel.fn))


def test_an_unavailable_backend_says_why(monkeypatch, registered):
    registered("unavailable", first=True)
    _launch(triton.jit(scale_kernel.fn))  # skipped when choosing by device: it cannot run here
    monkeypatch.setenv("TRITIUM_BACKEND", "unavailable")
    with pytest.raises(LaunchError, match="not available here: it needs a library that is not installed"):
        _launch(triton.jit(scale_kernel.fn))


class _CudaArray:
    """Device memory as CuPy or Numba present it."""

    def __init__(self, n):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f4", "data": (0x7F0000000000, False),
                                         "version": 3, "strides": None}


@pytest.mark.skipif(registry.get("cuda").is_available(), reason="a GPU is here: the CUDA backend takes CUDA memory")
def test_cuda_memory_without_a_gpu_says_what_is_missing():
    with pytest.raises(LaunchError) as info:
        scale_kernel[(1,)](_CudaArray(8), _CudaArray(8), 8, BLOCK=8)
    message = str(info.value)
    assert "on device 'cuda', which the cuda backend runs on, but it is not available here" in message
    assert registry.get("cuda").unavailable_reason() in message and "pass CPU tensors" in message
    with pytest.raises(LaunchError, match="different devices"):
        scale_kernel[(1,)](_CudaArray(8), torch.zeros(8), 8, BLOCK=8)


def test_a_second_backend_is_one_registry_entry(monkeypatch, registered):
    backend = registered("copy")
    helpers_backends.CopyBackend.compiled = 0
    kernel = triton.jit(scale_kernel.fn)
    monkeypatch.delenv("TRITIUM_BACKEND", raising=False)
    assert _launch(kernel).backend == "cpu", "the compiled CPU backend stays first for host memory"
    monkeypatch.setenv("TRITIUM_BACKEND", "copy")
    compiled = _launch(kernel)
    assert compiled.backend == "copy" and helpers_backends.CopyBackend.compiled == 1
    assert compiled.asm["summary"].startswith("scale_kernel: ") and compiled.asm["summary"].endswith("for cpu")
    assert len(kernel.cache) == 2, "one compiled kernel per backend"
    monkeypatch.delenv("TRITIUM_BACKEND")
    registry.register("copy", backend, first=True)  # preferred for the device now
    assert _launch(triton.jit(scale_kernel.fn)).backend == "copy"


def test_a_knob_chooses_the_backend_as_the_variable_does(monkeypatch, registered):
    registered("copy")
    with knobs.runtime.scope():
        knobs.runtime.backend = "copy"
        assert config.backend_name() == "copy"
        assert _launch(triton.jit(scale_kernel.fn)).backend == "copy"
    assert config.backend_name() == ""
    monkeypatch.setenv("TRITIUM_BACKEND", "copy")
    assert knobs.runtime.backend == "copy" and config.backend_name() == "copy"


# options ----------------------------------------------------------------------------------------------
def test_launch_options_compile_separately_and_defaults_match_absent_options(monkeypatch):
    monkeypatch.delenv("TRITON_DEFAULT_FP_FUSION", raising=False)  # Triton's default: the record's
    kernel = triton.jit(scale_kernel.fn)
    x, out = np.arange(32, dtype=np.float32), np.zeros(32, dtype=np.float32)
    first = kernel[(2,)](x, out, 32, BLOCK=16)
    assert kernel[(2,)](x, out, 32, BLOCK=16, num_warps=4, num_stages=3) is first  # the defaults: same kernel
    eight = kernel[(2,)](x, out, 32, BLOCK=16, num_warps=8)
    assert eight is not first and len(kernel.cache) == 2
    assert eight.options.num_warps == 8 and eight.metadata.num_warps == 8 and first.metadata.num_warps == 4
    kernel[(2,)](x, out, 32, BLOCK=16, num_stages=1)
    kernel[(2,)](x, out, 32, BLOCK=16, enable_fp_fusion=False)
    assert len(kernel.cache) == 4
    assert {key[2] for key in kernel.cache} == {Options(), Options(num_warps=8), Options(num_stages=1),
                                                Options(enable_fp_fusion=False)}
    np.testing.assert_array_equal(out, x * 3 + 1)


def test_options_records_are_parsed_and_checked(monkeypatch):
    monkeypatch.delenv("TRITON_DEFAULT_FP_FUSION", raising=False)  # Triton's default: the record's
    backend = registry.get("interpreter")
    options = backend.parse_options({"num_warps": 2, "extern_libs": {"libdevice": "/x.bc"}, "debug": True})
    assert options == Options(num_warps=2, extern_libs=(("libdevice", "/x.bc"),))  # debug is per launch here
    hash(options)
    with pytest.raises(LaunchError, match="no launch option 'num_warp'"):
        backend.parse_options({"num_warp": 4})
    with pytest.raises(LaunchError, match="num_warps must be a power of 2"):
        backend.parse_options({"num_warps": 3})
    with pytest.raises(LaunchError, match="num_stages must be a non-negative integer"):
        backend.parse_options({"num_stages": -1})


def test_dump_prints_a_backend_stage(monkeypatch, capsys):
    monkeypatch.setenv("TRITIUM_DUMP", "ttir")
    compiled = _launch(triton.jit(scale_kernel.fn))
    assert capsys.readouterr().err == f"// ttir of scale_kernel\n{compiled.asm['ttir']}\n"
    with knobs.compilation.scope():
        knobs.compilation.dump = ""  # the knob is the setting: assigned, it wins over the variable
        assert config.dump_stages() == set()
        _launch(triton.jit(scale_kernel.fn))
        assert capsys.readouterr().err == ""


# the disk cache of compiled stages -------------------------------------------------------------------
def _kernel_files() -> list[Path]:
    folder = Path(config.cache_dir()) / "kernels"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def test_cached_stages_are_stored_loaded_and_rebuilt_when_damaged(monkeypatch, registered):
    registered("caching", first=True)
    counts = helpers_backends.CachingBackend
    counts.compiled = counts.loaded = 0
    assert _launch(triton.jit(scale_kernel.fn)).backend == "caching"
    assert (counts.compiled, counts.loaded) == (1, 0)
    (saved,) = _kernel_files()
    record = json.loads(saved.read_text())
    assert set(record["stages"]) == {"blob"}, "only the cached stages are stored"
    _launch(triton.jit(scale_kernel.fn))  # a new kernel object, as in a new process: read from disk
    assert (counts.compiled, counts.loaded) == (1, 1)
    good = saved.read_text()
    for damaged in (good[: len(good) // 2], good.replace('"base64": "', '"base64": "AAAA'), "", "[]"):
        saved.write_text(damaged)
        _launch(triton.jit(scale_kernel.fn))
        assert counts.loaded == 1, "a damaged entry is never trusted"
        assert json.loads(saved.read_text())["checksum"] == record["checksum"], "and it is rewritten"
    compiled_before = counts.compiled
    with knobs.compilation.scope():
        knobs.compilation.always_compile = True
        _launch(triton.jit(scale_kernel.fn))
    assert counts.compiled == compiled_before + 1 and counts.loaded == 1
    _launch(triton.jit(scale_kernel.fn), n=40)  # the same code for another n: the same entry
    assert counts.loaded == 2 and len(_kernel_files()) == 1
    triton.jit(scale_kernel.fn)[(1,)](np.zeros(8, np.float16), np.zeros(8, np.float16), 8, BLOCK=8)
    assert len(_kernel_files()) == 2, "other IR, another entry"


def test_the_interpreter_writes_nothing_to_the_kernel_cache(on_the_interpreter):
    _launch(triton.jit(scale_kernel.fn))
    assert _kernel_files() == []


# TRITIUM_VALIDATE --------------------------------------------------------------------------------------
def test_validation_catches_a_backend_that_writes_a_wrong_value(monkeypatch, registered):
    registered("wrong")
    monkeypatch.setenv("TRITIUM_BACKEND", "wrong")
    x, out = np.arange(20, dtype=np.float32), np.zeros(20, dtype=np.float32)
    scale_kernel[(2,)](x, out, 20, BLOCK=16)  # no validation asked: the wrong value goes unnoticed
    assert out[0] == 2.0
    monkeypatch.setenv("TRITIUM_VALIDATE", "interpreter")
    with pytest.raises(ValidationError) as info:
        scale_kernel[(2,)](x, out, 20, BLOCK=16)
    message = str(info.value)
    assert "scale_kernel: the wrong backend and the interpreter disagree on argument 'out_ptr' (fp32)" in message
    assert "element 0 of its span (byte 0) is 2.0 on wrong but 1.0 on the interpreter" in message
    assert "(8388608 ulp apart; the bound is 0 ulp); 1 of 20 elements differ" in message


def test_validation_passes_a_correct_backend_and_leaves_the_arguments_as_it_wrote_them(monkeypatch, registered):
    registered("copy")
    monkeypatch.setenv("TRITIUM_BACKEND", "copy")
    monkeypatch.setenv("TRITIUM_VALIDATE", "interpreter")
    # a strided view, whose span holds elements the view skips: the kernel reads the span's first 20
    x = torch.arange(40, dtype=torch.float32)[::2]
    out = torch.zeros(20)
    compiled = scale_kernel[(2,)](x, out, 20, BLOCK=16)
    assert compiled.backend == "copy" and compiled.executable in validate._references  # the reference ran
    assert torch.equal(out, torch.arange(20, dtype=torch.float32) * 3 + 1)
    in_place = torch.arange(20, dtype=torch.float32)  # one tensor passed twice shares one copy
    scale_kernel[(2,)](in_place, in_place, 20, BLOCK=16)
    assert torch.equal(in_place, torch.arange(20, dtype=torch.float32) * 3 + 1)
    monkeypatch.setenv("TRITIUM_VALIDATE", "cuda")
    with pytest.raises(ValueError, match="against 'interpreter' only"):
        scale_kernel[(2,)](x, out, 20, BLOCK=16)


def test_validation_copies_device_memory_to_the_host_and_back(monkeypatch, registered):
    """A backend on device memory (a GPU's) is validated through its copy_to_host: the arguments are
    copied for the interpreter's launch and read back for the comparison."""
    monkeypatch.delenv("TRITIUM_BACKEND", raising=False)  # the device's backend, chosen by the memory
    registry.unregister("cuda")
    registered("device", first=True)
    x = helpers_backends._DeviceView(np.arange(20, dtype=np.float32))
    out = helpers_backends._DeviceView(np.zeros(20, dtype=np.float32))
    monkeypatch.setenv("TRITIUM_VALIDATE", "interpreter")
    helpers_backends.DeviceBackend.copies = 0
    compiled = scale_kernel[(2,)](x, out, 20, BLOCK=16)
    assert compiled.backend == "device" and helpers_backends.DeviceBackend.copies == 4  # 2 before, 2 after
    assert np.array_equal(out.array, np.arange(20, dtype=np.float32) * 3 + 1)
    monkeypatch.setattr(helpers_backends.DeviceBackend, "corrupt", True)
    with pytest.raises(ValidationError, match="the device backend and the interpreter disagree on argument 'out_ptr'"):
        triton.jit(scale_kernel.fn)[(2,)](x, helpers_backends._DeviceView(np.zeros(20, dtype=np.float32)), 20,
                                          BLOCK=16)


def test_validation_is_a_no_op_on_the_interpreter(monkeypatch, on_the_interpreter):
    monkeypatch.setenv("TRITIUM_VALIDATE", "interpreter")
    monkeypatch.setattr(validate, "launch_and_compare", lambda *a: pytest.fail("validated against itself"))
    _launch(triton.jit(scale_kernel.fn))


def test_compare_is_exact_for_integers_and_bounded_in_ulp_for_math():
    ints = np.array([1, 2, 3], dtype=np.int32)
    validate.compare("k", "p", tl.int32, ints.view(np.uint8), ints.copy().view(np.uint8), 0)
    with pytest.raises(ValidationError, match=r"element 2 of its span \(byte 8\) is 4 on the backend but 3"):
        validate.compare("k", "p", tl.int32, np.array([1, 2, 4], np.int32).view(np.uint8), ints.view(np.uint8), 4)
    expected = np.array([1.0, np.nan, -0.0, 3.0], dtype=np.float32)
    close = expected.copy()
    close[3] = np.nextafter(np.nextafter(np.float32(3.0), np.float32(4)), np.float32(4))  # 2 ulp up
    other_nan = np.array([1.0, np.float32(np.nan) * -1, -0.0, 3.0], dtype=np.float32)
    validate.compare("k", "p", tl.float32, other_nan.view(np.uint8), expected.view(np.uint8), 0)
    validate.compare("k", "p", tl.float32, close.view(np.uint8), expected.view(np.uint8), 2)
    with pytest.raises(ValidationError, match=r"2 ulp apart; the bound is 1 ulp"):
        validate.compare("k", "p", tl.float32, close.view(np.uint8), expected.view(np.uint8), 1)
    signed_zero = expected.copy()
    signed_zero[2] = 0.0
    validate.compare("k", "p", tl.float32, signed_zero.view(np.uint8), expected.view(np.uint8), 1)  # -0 and +0
    with pytest.raises(ValidationError, match="1 ulp apart"):
        validate.compare("k", "p", tl.float32, signed_zero.view(np.uint8), expected.view(np.uint8), 0)
    halves = np.array([1.0, 2.0], dtype=np.float16)
    with pytest.raises(ValidationError, match=r"\(fp16\).*1 ulp apart"):
        validate.compare("k", "p", tl.float16, np.array([1.0, np.float16(2.002)], np.float16).view(np.uint8),
                         halves.view(np.uint8), 0)


def test_the_ulp_bound_applies_only_to_kernels_with_math():
    @triton.jit
    def with_exp(x_ptr, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        tl.store(x_ptr + offsets, tl.exp(tl.load(x_ptr + offsets)))

    assert validate.ulp_bound(scale_kernel.warmup(np.zeros(4, np.float32), np.zeros(4, np.float32), 4,
                                                  BLOCK=4).ir) == 0
    assert validate.ulp_bound(with_exp.warmup(np.zeros(4, np.float32), BLOCK=4).ir) == validate.MATH_ULP_BOUND
    # the CPU backend's math is the interpreter's: exact there
    assert validate.ulp_bound(with_exp.warmup(np.zeros(4, np.float32), BLOCK=4).ir, math_as_interpreter=True) == 0


@triton.jit
def divide_kernel(a_ptr, b_ptr, out_ptr):
    tl.store(out_ptr, tl.load(a_ptr) // tl.load(b_ptr))


def test_debug_mode_is_one_setting_read_through_its_knob(monkeypatch):
    from tritium.errors import DivisionByZeroError

    monkeypatch.delenv("TRITIUM_DEBUG", raising=False)
    monkeypatch.delenv("TRITON_DEBUG", raising=False)
    assert not config.debug_mode() and not knobs.runtime.debug
    monkeypatch.setenv("TRITON_DEBUG", "1")  # Triton's variable
    assert knobs.runtime.debug and config.debug_mode()
    monkeypatch.setenv("TRITIUM_DEBUG", "0")  # tritium's comes first
    assert not knobs.runtime.debug and not config.debug_mode()
    a, b, out = np.ones(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    divide_kernel[(1,)](a, b, out)
    assert out[0] == -1  # what a GPU gives
    with knobs.runtime.scope():
        knobs.runtime.debug = True
        assert config.debug_mode()
        with pytest.raises(DivisionByZeroError):
            divide_kernel[(1,)](a, b, out)
    assert not config.debug_mode()


def test_settings_read_the_environment_as_it_is_now(monkeypatch):
    """knobs.environ_get reads os.environ's own dictionary: it sees every change, made through
    monkeypatch or by assigning and deleting os.environ entries."""
    import os

    monkeypatch.delenv("TRITIUM_VALIDATE", raising=False)
    assert knobs.environ_get("TRITIUM_VALIDATE") is None and config.validate_backend() == ""
    monkeypatch.setenv("TRITIUM_VALIDATE", "interpreter")
    assert knobs.environ_get("TRITIUM_VALIDATE") == "interpreter" == config.validate_backend()
    os.environ["TRITIUM_VALIDATE"] = "é-ünicode"
    assert knobs.environ_get("TRITIUM_VALIDATE") == os.environ.get("TRITIUM_VALIDATE") == "é-ünicode"
    del os.environ["TRITIUM_VALIDATE"]
    assert knobs.environ_get("TRITIUM_VALIDATE", "unset") == "unset"


def test_the_fast_path_launches_through_a_direct_launcher_unless_a_launch_needs_more(monkeypatch, registered):
    """A backend's direct launcher (plain values, none of the generic checks) takes repeated plain
    launches; debug mode, validation, launch hooks and empty grids go the full way."""
    registered("direct")
    monkeypatch.setenv("TRITIUM_BACKEND", "direct")
    x = torch.arange(40, dtype=torch.float32)

    def run(n=40):
        out = torch.zeros(40)
        compiled = scale_kernel[(triton.cdiv(n, 16),)](x, out, n, BLOCK=16)
        if n:
            assert torch.equal(out[:n], x[:n] * 3 + 1)
        return compiled.executable

    executable = run()  # compiles: the full path
    assert executable.direct_launches == 0
    run()
    run()
    assert executable.direct_launches == 2
    monkeypatch.setenv("TRITIUM_DEBUG", "1")
    run()
    monkeypatch.delenv("TRITIUM_DEBUG")
    monkeypatch.setenv("TRITIUM_VALIDATE", "interpreter")
    run()
    monkeypatch.delenv("TRITIUM_VALIDATE")
    seen = []
    triton.knobs.runtime.launch_enter_hook = seen.append
    try:
        run()
    finally:
        del triton.knobs.runtime.launch_enter_hook  # the assignment forgotten: the (empty) chain again
    assert len(seen) == 1 and executable.direct_launches == 2
    with pytest.warns(RuntimeWarning, match="zero dimension"):
        run(0)
    run()
    assert executable.direct_launches == 3


def test_the_cuda_options_take_triton_s_launch_pdl_and_the_host_backends_refuse_it():
    """torch's Inductor passes launch_pdl=True to triton.compile on Hopper GPUs: the CUDA backend
    keeps it in its options record (launches are stream-ordered anyway); host backends have no such
    option and say which they take."""
    options = registry.get("cuda").parse_options({"launch_pdl": True, "num_warps": 8})
    assert options.launch_pdl is True and options.num_warps == 8
    assert registry.get("cuda").parse_options({}).launch_pdl is False
    with pytest.raises(LaunchError, match="has no launch option 'launch_pdl'"):
        registry.get("cpu").parse_options({"launch_pdl": True})


def test_the_disk_cache_version_follows_every_source_that_shapes_generated_code(tmp_path):
    """A backend's cache version (base.source_digest) changes with its own sources, the backends'
    shared modules, the LLVM lowering, the analyses, the IR and the numerics: any of them can change
    the code generated for the same IR text. (The frontend changes the IR text, which the key holds.)"""
    from tritium.backends.base import source_digest

    shaping = ("backends/cpu", "backends", "backends/llvm", "compiler/analysis", "compiler/ir", "numerics")
    for folder in shaping + ("compiler",):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "part.py").write_text("x = 1\n")
    backend = tmp_path / "backends" / "cpu"
    before = source_digest(backend)
    for folder in shaping:
        (tmp_path / folder / "part.py").write_text("x = 2\n")
        assert source_digest(backend) != before, folder
        (tmp_path / folder / "part.py").write_text("x = 1\n")
    (tmp_path / "compiler" / "part.py").write_text("x = 2\n")
    assert source_digest(backend) == before
