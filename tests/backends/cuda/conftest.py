"""The CUDA backend's tests compile for a GPU target and launch on CUDA tensors: the backend is the
one serving that target or memory, as in a user's script, so TRITIUM_BACKEND (the interpreter, for
the rest of the suite: tests/conftest.py) is unset for them."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _backend_chosen_by_the_target(monkeypatch):
    monkeypatch.delenv("TRITIUM_BACKEND", raising=False)
