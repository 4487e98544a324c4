"""Shared test setup: every test gets its own empty tritium cache folder; tests that take the
``backend`` fixture (every test under tests/execution/) run on every backend serving host memory;
the others run their kernels on the interpreter.

The autotuner keeps its winners on disk (runtime/autotuner.py); a test that counts how often
configs are timed must not find the answer a previous run (or another test) left there, and the
suite must not write into the user's ~/.cache.
"""
from __future__ import annotations

import os

import pytest


# The backend a test's kernels run on unless it says otherwise: the interpreter, or the one
# TRITIUM_BACKEND named when pytest started.
_DEFAULT_BACKEND = os.environ.get("TRITIUM_BACKEND") or "interpreter"


@pytest.fixture(autouse=True)
def _interpreter_by_default(monkeypatch):
    """Every test starts with TRITIUM_BACKEND naming the default backend (the interpreter), whatever
    an earlier test in the same process left in the environment: tests of the interpreter's own
    machinery need it, and the tests outside tests/execution/ are written against it. The
    ``backend`` fixture and tests that set TRITIUM_BACKEND themselves override it."""
    monkeypatch.setenv("TRITIUM_BACKEND", _DEFAULT_BACKEND)


@pytest.fixture(autouse=True)
def _isolated_tritium_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path_factory.mktemp("tritium-cache")))
    monkeypatch.setenv("TRITIUM_AUTOTUNE_PROGRESS", "0")


@pytest.fixture(autouse=True)
def _checked_compile_time_analysis(monkeypatch):
    """Every kernel the suite runs has the compiler's axis-info and mask claims checked against the
    values the interpreter computes (TRITIUM_CHECK_ANALYSIS=0 turns that off)."""
    if "TRITIUM_CHECK_ANALYSIS" not in os.environ:
        monkeypatch.setenv("TRITIUM_CHECK_ANALYSIS", "1")


def _host_memory_backends() -> list[str]:
    """The backends that run kernels on host memory here: those serving it, and those staging it
    through their device when they can launch (the CUDA backend on a machine with a GPU).
    TRITIUM_TEST_BACKENDS (comma-separated names) narrows the list."""
    from tritium.backends import registry

    names = [backend.name for backend in registry.available("cpu")]
    for name in registry.names():
        backend = registry.get(name)
        if "cpu" in getattr(backend, "staged_devices", ()) and backend.is_available() and name not in names:
            names.append(name)
    wanted = [n for n in os.environ.get("TRITIUM_TEST_BACKENDS", "").split(",") if n]
    return [n for n in names if n in wanted] if wanted else names


@pytest.fixture(params=_host_memory_backends())
def backend(request, monkeypatch, _interpreter_by_default) -> str:
    """Runs the test once on every available backend that launches on host memory (the interpreter,
    the compiled CPU backend, and the CUDA backend where there is a GPU), with TRITIUM_BACKEND naming
    it. On the CUDA backend the tensors the test builds on the host are copied to the GPU and back. A
    test marked ``not_on_backend(name, reason=...)`` is skipped on that backend."""
    marker = request.node.get_closest_marker("not_on_backend")
    if marker is not None and request.param in marker.args:
        pytest.skip(f"not on the {request.param} backend: {marker.kwargs.get('reason', '')}")
    monkeypatch.setenv("TRITIUM_BACKEND", request.param)
    return request.param


@pytest.fixture
def fresh_cpu_optimizer_queue():
    """For a test that waits for the CPU backend's optimized code (``wait_for_optimized_code``,
    ``triton.testing.do_bench``): the full compilations earlier tests in this process left deferred
    are dropped first (their kernels, launched once on a few lanes, keep the quick code, which gives
    the same bits), so that the wait covers this test's kernels, not every kernel the process ran."""
    import sys

    tiers = sys.modules.get("tritium.backends.cpu.tiers")
    if tiers is not None:
        with tiers._condition:
            tiers._deferred.clear()


@pytest.fixture
def on_the_interpreter(monkeypatch):
    """For tests of the interpreter itself (its run-time check of the compiler's analyses, what it
    keeps on disk): their kernels run on it whatever the default backend is."""
    monkeypatch.setenv("TRITIUM_BACKEND", "interpreter")


@pytest.fixture(autouse=True)
def _each_operation_rounded(monkeypatch):
    """The suite's oracles (numpy, torch, fractions) round each operation, so ``x * y + z`` is not
    contracted into one fma (TRITON_DEFAULT_FP_FUSION=0, unless set); contraction, on by default as in
    Triton, is tested on its own (tests/execution/test_fp_contraction.py asks for it, and the tests of
    the default remove the variable)."""
    if "TRITON_DEFAULT_FP_FUSION" not in os.environ:
        monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")


@pytest.fixture(autouse=True)
def _checked_ir(monkeypatch):
    """Every kernel the suite compiles is verified after each pass and round-tripped through its
    printed text (compiler/passes/manager.py)."""
    monkeypatch.setenv("TRITIUM_CHECK_IR", "1")


# Property tests draw the same examples on every run, so CI is reproducible; explore more locally
# with HYPOTHESIS_PROFILE=explore.
from hypothesis import settings  # noqa: E402

settings.register_profile("reproducible", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "reproducible"))
