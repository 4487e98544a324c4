"""The README's example runs as written, and its unmasked variant raises the error the README shows."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _first_python_block() -> str:
    return re.search(r"```python\n(.*?)```", README.read_text(), re.DOTALL).group(1)


def test_readme_example_runs(tmp_path):
    script = tmp_path / "add.py"
    script.write_text(_first_python_block())
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


def test_readme_unmasked_variant_reports_what_the_readme_shows(tmp_path):
    source = _first_python_block().replace("x = tl.load(x_ptr + offsets, mask=mask)", "x = tl.load(x_ptr + offsets)")
    script = tmp_path / "add.py"
    script.write_text(source)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    shown = re.search(r"```\n(OutOfBoundsError: .*?)```", README.read_text(), re.DOTALL).group(1)
    first_line = " ".join(shown.split())
    printed = " ".join(result.stderr.split())
    expected = first_line.split("hint:")[0].replace("OutOfBoundsError: ", "")
    assert expected.strip() in printed.replace(str(tmp_path) + "/", ""), printed
