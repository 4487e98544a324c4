"""Shared test setup: every test gets its own empty tritium cache folder.

The autotuner keeps its winners on disk (runtime/autotuner.py); a test that counts how often
configs are timed must not find the answer a previous run (or another test) left there, and the
suite must not write into the user's ~/.cache.
"""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_tritium_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path_factory.mktemp("tritium-cache")))
    monkeypatch.setenv("TRITIUM_AUTOTUNE_PROGRESS", "0")


# Property tests draw the same examples on every run, so CI is reproducible; explore more locally
# with HYPOTHESIS_PROFILE=explore.
from hypothesis import settings  # noqa: E402

settings.register_profile("reproducible", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", deadline=None)
settings.load_profile(__import__("os").environ.get("HYPOTHESIS_PROFILE", "reproducible"))
