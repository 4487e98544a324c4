"""``tritium demo`` runs every op of tritium.ops against torch and tells its two stories."""
from __future__ import annotations

import os
import re
import subprocess
import sys


def test_demo_output(monkeypatch):
    monkeypatch.delenv("TRITIUM_BACKEND", raising=False)  # as a user runs it: the backend is chosen, not named
    tritium = os.path.join(os.path.dirname(sys.executable), "tritium")
    result = subprocess.run([tritium, "demo"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert re.search(r"^backend: cpu -- .+", out, re.MULTILINE), "one line says which backend ran and why"
    rows = {}
    for line in out.splitlines():
        # fixed columns: op (18), size (20), then the error and two "tritium/torch" times
        match = re.match(r"^\s*(\d\.\de[-+]\d\d)\s+([\d.]+)/([\d.]+)\s+([\d.]+)/([\d.]+)\s*$", line[38:])
        if match:
            rows[line[:18].strip()] = [float(v) for v in match.groups()]
    expected = {"gelu", "gelu (tanh)", "bias + silu", "softmax", "log_softmax", "layer_norm", "rms_norm",
                "matmul+bias+gelu", "cross_entropy", "attention causal"}
    assert set(rows) == expected, out
    for name, (error, *times) in rows.items():
        assert error < 1e-5, f"{name}: relative error {error} vs torch"
        assert all(t > 0 for t in times), name
    assert "grad_output = 1: correct kernel matches torch: True, buggy kernel matches torch: True" in out
    assert "grad_output = 2: correct kernel matches torch: True, buggy kernel matches torch: False" in out
    assert re.search(r"out-of-bounds load in kernel 'unmasked_copy': program \(3, 0, 0\)", out)
    seconds = float(re.search(r"demo ran in ([\d.]+) s", out).group(1))
    assert seconds < 60
