"""Every public name of Triton 3.9's triton.language, triton.language.extra.libdevice, triton.knobs,
triton.testing and triton.tools.tensor_descriptor, listed in tests/data/triton_public_names.txt, is
in tritium's module of the same path, or its line says why not; a line that says a name is missing
while tritium has it is stale, and fails too."""
from __future__ import annotations

import importlib
import pathlib

import pytest

LIST = pathlib.Path(__file__).resolve().parent / "data" / "triton_public_names.txt"
MODULES = ("triton.language", "triton.language.extra.libdevice", "triton.knobs", "triton.testing",
           "triton.tools.tensor_descriptor")


def _entries() -> list[tuple[str, str, str]]:
    """(module, name, why it is missing or '') for each line of the list."""
    entries = []
    for line in LIST.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        listed, _, why = line.partition(" -- ")
        module, name = listed.split()
        entries.append((module, name, why.strip()))
    return entries


def _tritium_module(module: str):
    return importlib.import_module("tritium" + module[len("triton"):])


def test_the_list_covers_each_module_once_per_name():
    entries = _entries()
    assert {module for module, _, _ in entries} == set(MODULES)
    pairs = [(module, name) for module, name, _ in entries]
    assert len(pairs) == len(set(pairs))
    assert len([p for p in pairs if p[0] == "triton.language"]) > 100  # the list is Triton's, not a sample


@pytest.mark.parametrize("module", MODULES)
def test_every_name_is_there_or_its_absence_is_explained(module):
    found = _tritium_module(module)
    unexplained, stale = [], []
    for listed, name, why in _entries():
        if listed != module:
            continue
        present = hasattr(found, name)
        if not present and not why:
            unexplained.append(name)
        if present and why:
            stale.append(name)
    assert not unexplained, (f"{module} lacks {unexplained}: implement them, or say why on their lines of "
                             f"{LIST.name}")
    assert not stale, f"{module} has {stale} now: remove the reason from their lines of {LIST.name}"


def test_the_names_added_for_triton_3_9_are_there():
    import tritium.language as tl

    for name in ("atomic_load", "atomic_store", "atomic_poll", "map_elementwise", "expect_zero", "const", "fdiv",
                 "TRITON_MAX_TENSOR_NUMEL", "to_tensor", "add", "sub", "mul", "load_tensor_descriptor",
                 "store_tensor_descriptor"):
        assert ("triton.language", name, "") in _entries(), name
        assert hasattr(tl, name), name
