"""runtime/cache.py: atomic, checksummed files that are rebuilt when damaged, and where they live.

Oracles: the bytes written and read back, files damaged by hand, and the documented order of the
settings that name the folder.
"""
from __future__ import annotations

import json
import os

import pytest

from tritium import config, knobs
from tritium.runtime import cache


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_json_records_round_trip_with_a_checksum(folder):
    files = cache.DiskCache("things")
    path = files.store_json("a.json", {"answer": 42, "nested": {"x": [1.5, None]}})
    assert path == str(folder / "things" / "a.json")
    on_disk = json.loads((folder / "things" / "a.json").read_text())
    assert on_disk["answer"] == 42 and len(on_disk["checksum"]) == 64
    assert files.load_json("a.json") == {"answer": 42, "nested": {"x": [1.5, None]}}
    assert files.load_json("missing.json") is None


@pytest.mark.parametrize("damage", ["truncated", "a changed value", "not json", "a list", "binary", "empty",
                                    "no checksum"])
def test_a_damaged_json_record_reads_as_missing(folder, damage):
    files = cache.DiskCache("things")
    files.store_json("a.json", {"answer": 42})
    target = folder / "things" / "a.json"
    good = target.read_text()
    record = json.loads(good)
    text = {"truncated": good[:-5], "a changed value": good.replace("42", "43"), "not json": "{oops",
            "a list": "[1]", "empty": "", "no checksum": json.dumps({"answer": 42})}.get(damage)
    if damage == "binary":
        target.write_bytes(b"\xff\xfe\x00")
    else:
        target.write_text(text)
    assert files.load_json("a.json") is None
    files.store_json("a.json", {"answer": 42})  # rebuilt
    assert files.load_json("a.json") == {"answer": 42} and json.loads(target.read_text()) == record


def test_bytes_round_trip_and_damage_is_detected(folder):
    files = cache.DiskCache("blobs")
    payload = bytes(range(256)) + b"\n\n"
    files.store_bytes("k.bin", payload)
    assert files.load_bytes("k.bin") == payload
    target = folder / "blobs" / "k.bin"
    good = target.read_bytes()
    flipped = bytearray(good)
    flipped[-3] ^= 1
    for damaged in (good[:-1], bytes(flipped), b"tritium-cache 2" + good[15:], b"", payload):
        target.write_bytes(damaged)
        assert files.load_bytes("k.bin") is None, damaged[:20]
    files.store_bytes("k.bin", payload)
    assert files.load_bytes("k.bin") == payload


def test_writes_leave_no_temporary_files_and_replace_atomically(folder, monkeypatch):
    renames = []
    real_replace = os.replace

    def recording_replace(source, target):
        renames.append((os.path.dirname(source), os.path.basename(source), target))
        return real_replace(source, target)

    monkeypatch.setattr(cache.os, "replace", recording_replace)
    files = cache.DiskCache("things")
    files.store_json("a.json", {"v": 1})
    files.store_bytes("b.bin", b"x")
    assert [(d, name.startswith(".tmp-"), t) for d, name, t in renames] == [
        (files.folder, True, files.path("a.json")), (files.folder, True, files.path("b.bin"))]
    assert sorted(os.listdir(files.folder)) == ["a.json", "b.bin"]


def test_stage_outputs_keep_text_and_bytes(folder):
    key = cache.kernel_key("func @k() {}", "cpu", "1", ("options",), ("target",))
    assert key != cache.kernel_key("func @k() {}", "cpu", "2", ("options",), ("target",)), "the version is in the key"
    assert key != cache.kernel_key("func @j() {}", "cpu", "1", ("options",), ("target",))
    cache.store_stages(key, {"llir": "define void @k()", "obj": b"\x7fELF\x00"})
    assert cache.load_stages(key, ("llir", "obj")) == {"llir": "define void @k()", "obj": b"\x7fELF\x00"}
    assert cache.load_stages(key, ("llir", "ptx")) is None, "a stage that is not there: compile again"


def test_an_unwritable_kernel_cache_warns_once_and_returns_none(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(blocker))
    monkeypatch.setattr(cache, "_warned_about", set())
    with pytest.warns(RuntimeWarning, match="could not save a compiled kernel"):
        assert cache.store_stages("k", {"obj": b""}) is None


def test_the_cache_folder_setting_precedence(tmp_path, monkeypatch):
    for variable in ("TRITIUM_CACHE_DIR", "TRITON_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config.cache_dir() == str(tmp_path / ".cache" / "tritium")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert config.cache_dir() == str(tmp_path / "xdg" / "tritium")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    assert config.cache_dir() == str(tmp_path / "triton")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "tritium"))
    assert config.cache_dir() == str(tmp_path / "tritium")
    with knobs.cache.scope():
        knobs.cache.dir = str(tmp_path / "knob")
        assert config.cache_dir() == str(tmp_path / "knob")
        assert cache.DiskCache("autotune").folder == str(tmp_path / "knob" / "autotune")
    assert config.cache_dir() == str(tmp_path / "tritium")
