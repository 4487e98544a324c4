"""Every test here runs once on each backend that launches kernels on host memory: the interpreter,
the compiled CPU backend, and the CUDA backend where there is a GPU (the ``backend`` fixture of
tests/conftest.py; TRITIUM_TEST_BACKENDS=name,... narrows the list). The tests check what a kernel
computes against oracles of their own, so the same oracle holds every backend to it. A test that
takes ``backend`` itself (to allow for a GPU's documented accuracy, say) is parametrized once, the
same way; one marked ``not_on_backend("cuda", reason=...)`` is skipped there.

Kernels defined at module level compile once per backend and worker process, and are shared by the
tests and parametrizations that launch them with the same specialization.
"""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _on_every_backend(backend: str) -> str:
    return backend
