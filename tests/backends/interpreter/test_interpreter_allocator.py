"""The interpreter raises glibc's malloc thresholds at its first launch, so that arrays freed
between ops are reused rather than unmapped and faulted in again (backends/malloc_tuning.py says
why).

Oracle: glibc's own accounting (mallinfo2: bytes held in mmapped blocks) around a 16 MB
allocation, in a fresh process: with the thresholds raised it comes from the heap; with
TRITIUM_MALLOC_TUNING=0 it is mapped fresh, as glibc does by default.
"""
import ctypes
import ctypes.util
import os
import subprocess
import sys

import pytest

PROBE = r"""
import ctypes, ctypes.util
import numpy as np
import tritium as triton
import tritium.language as tl

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.mallinfo2.restype = MallInfo2

@triton.jit
def copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))

x = np.arange(16, dtype=np.float32)
y = np.zeros_like(x)
copy[(1,)](x, y, BLOCK=16)
assert (y == x).all()
before = libc.mallinfo2().hblkhd
block = np.ones(4 << 20, dtype=np.float32)  # 16 MB
print(libc.mallinfo2().hblkhd - before)
"""


def _glibc_has_mallinfo2() -> bool:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        libc.gnu_get_libc_version  # noqa: B018
        libc.mallinfo2  # noqa: B018
        return True
    except (OSError, AttributeError):
        return False


def _mapped_growth(tuning: str, folder) -> int:
    env = dict(os.environ, TRITIUM_MALLOC_TUNING=tuning)
    env.pop("MALLOC_MMAP_THRESHOLD_", None)
    env.pop("MALLOC_TRIM_THRESHOLD_", None)
    script = folder / "probe.py"  # a file: kernels need their source
    script.write_text(PROBE)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(not _glibc_has_mallinfo2(), reason="malloc tuning applies to glibc only (mallinfo2: glibc >= 2.33)")
def test_large_arrays_come_from_the_heap_after_the_first_launch(tmp_path):
    assert _mapped_growth("1", tmp_path) == 0  # from the heap: reused once freed
    assert _mapped_growth("0", tmp_path) >= 16 << 20  # glibc's default: a fresh mapping
