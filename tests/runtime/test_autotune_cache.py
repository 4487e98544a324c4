"""The autotuner's persistent cache and progress line (runtime/autotuner.py).

A tuned kernel counts its own launches with ``tl.atomic_add``: a process that finds the winner on
disk launches exactly once; one that has to tune launches every config several times.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium import config
from tritium.runtime import autotuner

SCRIPT = textwrap.dedent('''
    import sys
    import torch
    import tritium as triton
    import tritium.language as tl

    @triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (32, 64, 128)], key=["n"], warmup=1, rep=2)
    @triton.jit
    def scale_kernel(x_ptr, out_ptr, launches_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3.0, mask=mask)
        if tl.program_id(0) == 0:
            tl.atomic_add(launches_ptr, 1)

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    x = torch.arange(n, dtype=torch.float32)
    out = torch.empty_like(x)
    launches = torch.zeros(1, dtype=torch.int32)
    scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, launches, n)
    assert torch.equal(out, x * 3.0)
    print(int(launches[0]), scale_kernel.best_config.kwargs["BLOCK"])
''')


def _run(tmp_path: Path, cache: Path, *args: str) -> tuple[int, int]:
    script = tmp_path / "tuned.py"
    script.write_text(SCRIPT)
    # stderr is a pipe, not a terminal: no progress line even when asked for one
    environment = dict(os.environ, TRITIUM_CACHE_DIR=str(cache), TRITIUM_AUTOTUNE_PROGRESS="1")
    result = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=120,
                            env=environment)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    launches, block = result.stdout.split()
    return int(launches), int(block)


def _cache_files(cache: Path) -> list[Path]:
    folder = cache / "autotune"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def test_a_second_process_reuses_the_tuned_config_and_a_corrupted_file_is_recovered_from(tmp_path):
    cache = tmp_path / "cache"
    launches, block = _run(tmp_path, cache)
    assert launches > 3, "the first process times each of the 3 configs"
    (saved,) = _cache_files(cache)
    record = json.loads(saved.read_text())
    assert record["config"]["kwargs"] == {"BLOCK": block}
    assert record["identity"]["kernel"] == "scale_kernel" and record["identity"]["key"][0] == 1000
    backend = os.environ.get("TRITIUM_BACKEND") or "cpu"  # the one the child process launches on
    assert record["identity"]["backend"] == backend and record["identity"]["device"].startswith("cpu:")
    assert len(record["timings_ms"]) == 3
    assert _run(tmp_path, cache) == (1, block), "the second process launches once, with the saved config"

    saved.write_text(saved.read_text()[:40])  # a torn write, as a crash in mid-write would leave it
    launches, block = _run(tmp_path, cache)
    assert launches > 3, "a damaged entry is never trusted: the configs are timed again"
    (rewritten,) = _cache_files(cache)
    assert json.loads(rewritten.read_text())["identity"] == record["identity"]
    assert _run(tmp_path, cache) == (1, block)


def _counting_kernel(**autotune_options):
    """A fresh autotuned kernel -- as a new process would build it -- whose configs are timed by a
    fake do_bench that records each timing (the first config timed wins)."""
    timed = []

    def bench(kernel_call, quantiles):
        kernel_call()
        timed.append(1)
        return [float(len(timed))] * len(quantiles)

    @triton.jit
    def double_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 2.0, mask=offsets < n)

    tuned = triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=["n"],
                            do_bench=bench, restore_value=["x_ptr"], **autotune_options)(double_kernel)
    return tuned, timed


def _launch(tuned, x):
    tuned[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, x.numel())


@pytest.mark.parametrize("damage", ["not json", "truncated", "not a dict", "wrong identity", "unknown config",
                                    "binary", "empty"])
def test_a_damaged_cache_file_is_ignored_and_rewritten(damage):
    first, _ = _counting_kernel()
    _launch(first, torch.ones(40))
    (saved,) = Path(autotuner.DiskCache.folder()).glob("*.json")
    good = saved.read_text()
    record = json.loads(good)
    damaged = {
        "not json": "this is not json {",
        "truncated": good[: len(good) // 2],
        "not a dict": "[1, 2, 3]",
        "wrong identity": json.dumps({**record, "identity": {**record["identity"], "key": [999]}}),
        "unknown config": json.dumps({**record, "config": {**record["config"], "kwargs": {"BLOCK": 4096}}}),
        "empty": "",
    }
    if damage == "binary":
        saved.write_bytes(b"\xff\xfe\x00garbage")
    else:
        saved.write_text(damaged[damage])
    again, timed_again = _counting_kernel()
    x = torch.ones(40)
    _launch(again, x)
    assert len(timed_again) == 2, "a damaged entry is never trusted: the configs are timed again"
    assert torch.equal(x, torch.full((40,), 2.0))
    assert json.loads(saved.read_text())["identity"] == record["identity"], "and the file is rewritten"
    third, timed_third = _counting_kernel()
    _launch(third, torch.ones(40))
    assert timed_third == []


def test_cache_folder_defaults_and_override(monkeypatch, tmp_path):
    monkeypatch.delenv("TRITIUM_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config.cache_dir() == str(tmp_path / ".cache" / "tritium")
    assert autotuner.DiskCache.folder() == str(tmp_path / ".cache" / "tritium" / "autotune")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert autotuner.DiskCache.folder() == str(tmp_path / "elsewhere" / "autotune")


def test_in_process_the_disk_answers_a_new_autotuner(tmp_path):
    first, timed_first = _counting_kernel()
    _launch(first, torch.ones(40))
    assert len(timed_first) == 2
    second, timed_second = _counting_kernel()  # same source, configs and key: a new process would see this
    x = torch.ones(40)
    _launch(second, x)
    assert timed_second == [] and second.best_config == first.best_config
    assert torch.equal(x, torch.full((40,), 2.0))
    _launch(second, torch.ones(40, dtype=torch.float64))  # a new dtype is a new key
    assert len(timed_second) == 2


def test_the_source_hash_covers_called_jit_functions_and_constexpr_globals():
    tuned, _ = _counting_kernel()
    assert autotuner.source_hash(tuned) == autotuner.source_hash(_counting_kernel()[0])
    from tritium.ops import activations
    from tritium.ops.matmul import matmul_kernel

    before = autotuner.source_hash(matmul_kernel)
    original = activations.apply.src
    try:
        activations.apply.src = original + "\n# edited"
        assert autotuner.source_hash(matmul_kernel) != before, "a helper's source is part of the key"
    finally:
        activations.apply.src = original
    assert autotuner.source_hash(matmul_kernel) == before


def test_cache_can_be_turned_off(monkeypatch):
    folder = Path(autotuner.DiskCache.folder())
    tuned, _ = _counting_kernel(cache_results=False)
    _launch(tuned, torch.ones(24))
    assert not folder.exists() or not list(folder.iterdir())
    monkeypatch.setenv("TRITIUM_AUTOTUNE_CACHE", "0")
    tuned, _ = _counting_kernel()
    _launch(tuned, torch.ones(24))
    assert not folder.exists() or not list(folder.iterdir())
    tuned, _ = _counting_kernel(cache_results=True)  # the kernel's own choice wins
    _launch(tuned, torch.ones(24))
    assert len(list(folder.glob("*.json"))) == 1


def test_writes_are_atomic_renames_in_the_same_folder(monkeypatch):
    renames = []
    real_replace = os.replace

    def recording_replace(source, target):
        renames.append((os.path.dirname(source), os.path.dirname(target), os.path.basename(source)))
        return real_replace(source, target)

    monkeypatch.setattr(autotuner.os, "replace", recording_replace)
    tuned, _ = _counting_kernel()
    _launch(tuned, torch.ones(24))
    renames = [r for r in renames if r[1] == autotuner.DiskCache.folder()]  # compiled kernels are cached too
    ((source_dir, target_dir, temporary),) = renames
    assert source_dir == target_dir == autotuner.DiskCache.folder() and temporary.startswith(".tmp-")
    assert [p.name for p in Path(target_dir).iterdir() if p.name.startswith(".tmp-")] == []


def test_an_unwritable_cache_warns_and_the_launch_still_works(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(blocker))
    tuned, timed = _counting_kernel()
    x = torch.ones(24)
    with pytest.warns(RuntimeWarning, match="could not save the autotuning result"):
        _launch(tuned, x)
    assert torch.equal(x, torch.full((24,), 2.0)) and len(timed) == 2


# the progress line ------------------------------------------------------------------------------------
def _stderr_through_a_terminal(tmp_path, **env) -> str:
    pty = pytest.importorskip("pty")
    script = tmp_path / "tuned.py"
    script.write_text(SCRIPT)
    master, slave = pty.openpty()
    environment = dict(os.environ, TRITIUM_CACHE_DIR=str(tmp_path / "cache"), **env)
    try:
        result = subprocess.run([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=slave, timeout=120,
                                env=environment)
    finally:
        os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert result.returncode == 0
    return b"".join(chunks).decode()


def test_progress_line_on_a_terminal(tmp_path):
    shown = _stderr_through_a_terminal(tmp_path, TRITIUM_AUTOTUNE_PROGRESS="1")
    updates = [part for part in shown.split("\r") if part.strip()]
    assert updates[0] == "autotuning scale_kernel(n=1000): 0/3 configs"
    assert updates[-1].startswith("autotuning scale_kernel(n=1000): 3/3 configs, best ")
    assert "ms with BLOCK=" in updates[-1] and "\n" not in shown, "one line, rewritten in place"
    assert shown.endswith("\r"), "the line is cleared when tuning ends"


class _FakeTerminal:
    def __init__(self, terminal: bool):
        self.terminal = terminal
        self.written = []

    def isatty(self):
        return self.terminal

    def write(self, text):
        self.written.append(text)

    def flush(self):
        pass

    def fileno(self):
        raise OSError("no file")


@pytest.mark.parametrize("terminal, setting, shown", [(True, "1", True), (True, "0", False), (False, "1", False)])
def test_progress_line_only_on_a_terminal_and_when_enabled(monkeypatch, terminal, setting, shown):
    stream = _FakeTerminal(terminal)
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setenv("TRITIUM_AUTOTUNE_PROGRESS", setting)
    tuned, timed = _counting_kernel()
    _launch(tuned, torch.ones(24))
    assert len(timed) == 2
    text = "".join(stream.written)
    if shown:
        assert "\rautotuning double_kernel(n=24): 2/2 configs, best 1.000 ms with BLOCK=16" in text
    else:
        assert text == ""


@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (32, 64)], key=["n"], warmup=1, rep=1,
                 cache_results=False)
@triton.jit
def _counted_scale(x_ptr, out_ptr, launches_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3.0, mask=mask)
    if tl.program_id(0) == 0:
        tl.atomic_add(launches_ptr, 1)


def test_a_config_tuned_on_one_backend_is_tuned_again_on_another(monkeypatch):
    """The in-process answer is per backend: the best config on the interpreter says nothing of the
    CPU backend's (oracle: the kernel's own launch count, one per timed call)."""
    x = torch.arange(100, dtype=torch.float32)
    out = torch.empty_like(x)

    def launches_of_one_call() -> int:
        launches = torch.zeros(1, dtype=torch.int32)
        _counted_scale[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, out, launches, 100)
        assert torch.equal(out, x * 3.0)
        return int(launches[0])

    monkeypatch.setenv("TRITIUM_BACKEND", "interpreter")
    assert launches_of_one_call() > 2  # tuned: both configs timed
    assert launches_of_one_call() == 1  # the answer kept
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    assert launches_of_one_call() > 2  # another backend: tuned again
    assert launches_of_one_call() == 1
