"""docs/getting-started.md runs as written.

Every ```python block runs as its own script, in order, in one temporary folder; a block whose
first line is ``# file: NAME`` is written to NAME instead (later commands use it). In a ```console
block, each ``$ tritium ...`` line is run, and the lines after it (up to the next ``$``) must
appear in its output; a ``...`` line stands for anything.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
GETTING_STARTED = DOCS / "getting-started.md"


def _blocks(path: Path) -> list[tuple[str, str]]:
    return re.findall(r"```(python|console)\n(.*?)```", path.read_text(), re.DOTALL)


def _commands(block: str) -> list[tuple[str, list[str]]]:
    commands = []
    for line in block.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands and line.strip() and line.strip() != "...":
            commands[-1][1].append(line)
    return commands


def _environment() -> dict:
    environment = dict(os.environ)
    environment["PATH"] = os.path.dirname(sys.executable) + os.pathsep + environment.get("PATH", "")
    return environment


def test_getting_started_blocks_run(tmp_path):
    blocks = _blocks(GETTING_STARTED)
    assert sum(kind == "python" for kind, _ in blocks) >= 5 and any(kind == "console" for kind, _ in blocks)
    for number, (kind, text) in enumerate(blocks):
        if kind == "python":
            first = text.splitlines()[0]
            if first.startswith("# file: "):
                (tmp_path / first[len("# file: "):].strip()).write_text(text)
                continue
            script = tmp_path / f"block_{number}.py"
            script.write_text(text)
            result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                                    cwd=tmp_path, env=_environment())
            assert result.returncode == 0, f"python block {number} failed:\n{text}\n{result.stderr}"
            continue
        for command, expected in _commands(text):
            assert command.startswith("tritium "), f"only tritium commands are run: {command}"
            result = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                                    env=_environment())
            assert result.returncode == 0, f"{command} failed:\n{result.stderr}"
            printed = " ".join(result.stdout.split())
            for line in expected:
                assert " ".join(line.split()) in printed, f"{command}: expected {line!r} in:\n{result.stdout}"


def test_the_error_shown_in_getting_started_is_the_one_raised(tmp_path):
    text = GETTING_STARTED.read_text()
    (_, source) = next((k, b) for k, b in _blocks(GETTING_STARTED) if "add_unmasked" in b)
    shown = re.search(r"prints\n\n```\n(.*?)```", text, re.DOTALL).group(1)
    script = tmp_path / "unmasked.py"
    script.write_text(source)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    printed = " ".join(result.stdout.split())
    message = " ".join(shown.split()).replace("...: ", "")
    assert message in printed, printed


def test_the_torch_compile_example_runs(tmp_path):
    """docs/torch-compile.md's example: a transformer block through torch.compile on tritium,
    forward and backward, asserted against eager inside the block."""
    blocks = [text for kind, text in _blocks(DOCS / "torch-compile.md") if kind == "python"]
    example = next(text for text in blocks if "class Block" in text)
    script = tmp_path / "transformer_block.py"
    script.write_text(example)
    env = _environment()
    env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path / "inductor-cache")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                            cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "forward and backward match eager" in result.stdout


@pytest.mark.parametrize("name", ["getting-started.md", "language.md", "errors.md", "interpreter.md", "backends.md",
                                  "ir.md", "cpu-backend.md", "torch-compile.md"])
def test_docs_link_to_files_that_exist(name):
    text = (DOCS / name).read_text()
    for target in re.findall(r"\]\(([^)#:]+\.md)\)", text):
        assert (DOCS / target).exists(), f"{name} links to {target}, which does not exist"
