"""``tritium run -m pytest -n 2``: pytest-xdist's worker processes see tritium as ``triton`` too."""
import subprocess
import sys
from pathlib import Path

TEST_WRITTEN_FOR_TRITON = '''
import torch
import triton
import triton.language as tl


@triton.jit
def iota(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.arange(0, BLOCK))


def test_runs_on_tritium():
    assert triton.__name__ == "tritium"
    x = torch.zeros(8, dtype=torch.int32)
    iota[(1,)](x, BLOCK=8)
    assert x.tolist() == list(range(8))


def test_second_worker_too():
    test_runs_on_tritium()
'''


def test_pytest_workers_import_triton_as_tritium(tmp_path: Path):
    (tmp_path / "test_triton_style.py").write_text(TEST_WRITTEN_FOR_TRITON)
    tritium = Path(sys.executable).with_name("tritium")
    command = [str(tritium)] if tritium.exists() else [sys.executable, "-m", "tritium"]
    result = subprocess.run(command + ["run", "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider",
                                       "test_triton_style.py"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
