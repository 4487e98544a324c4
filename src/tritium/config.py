"""Every TRITIUM_* setting, read in one place."""
from __future__ import annotations

import os


def dump_stages() -> set[str]:
    """TRITIUM_DUMP=ir[,..]: print these pipeline stages' output to stderr."""
    return {s.strip() for s in os.environ.get("TRITIUM_DUMP", "").split(",") if s.strip()}


def backend_name() -> str:
    """TRITIUM_BACKEND: which backend runs host-memory launches (only 'interpreter' today)."""
    return os.environ.get("TRITIUM_BACKEND", "interpreter").strip().lower() or "interpreter"


def batch_elements() -> int:
    """TRITIUM_BATCH_ELEMENTS: the interpreter runs as many programs at once as keep the largest
    block of one value under this many elements (default 2**18)."""
    return int(os.environ.get("TRITIUM_BATCH_ELEMENTS", str(1 << 18)))


def malloc_tuning() -> bool:
    """TRITIUM_MALLOC_TUNING=0: leave glibc's malloc thresholds alone. By default the interpreter
    raises them at its first launch, so the arrays each op frees are reused instead of being
    returned to the OS and faulted in again (see backends/interpreter/allocator.py)."""
    return os.environ.get("TRITIUM_MALLOC_TUNING", "1").strip().lower() not in ("0", "false", "no", "off")


def bench_quick() -> bool:
    """TRITIUM_BENCH_QUICK=1: ``perf_report`` sweeps run only their first two x values and
    ``do_bench`` skips its separate warm-up (benchmark scripts as quick smoke tests)."""
    return os.environ.get("TRITIUM_BENCH_QUICK", "").strip().lower() in ("1", "true", "yes", "on")


def _truthy(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes", "on")


def debug_mode() -> bool:
    """TRITIUM_DEBUG=1: the interpreter's debug mode, checks that cost more than a few percent.

    It reports, each as its own exception naming the kernel line and the programs involved:
    two programs storing to one address without atomics (``RaceError``), int32 overflow in
    add/sub/mul (``IntegerOverflowError``, what compiled Triton's ``TRITON_DEBUG=1`` overflow
    sanitizer reports), integer ``//`` and ``%`` by zero (``DivisionByZeroError``), float -> int
    conversion of NaN, inf or out-of-range values (``InvalidConversionError``), and a ``while``
    loop that spins on memory no running program can change (``DeadlockError``, reported after two
    identical iterations instead of after ``TRITIUM_SPIN_CHECK_AFTER``). Without it, these give what a
    GPU gives (``x // 0 == -1``, NaN -> 0, a race's last writer wins). ``@triton.jit(debug=True)``
    and ``kernel[grid](..., debug=True)`` turn it on for one kernel or one launch (``debug=False``
    turns it off); the launch's setting wins over the kernel's, and both over the environment.
    """
    return _truthy(os.environ.get("TRITIUM_DEBUG", ""))


def shuffle_seed() -> int | None:
    """TRITIUM_SHUFFLE=<seed>: the interpreter runs the batches of a launch (and, for kernels whose
    programs run one at a time, the programs) in a random order drawn from this seed, to expose
    kernels that depend on the order programs are launched in (a GPU promises none). Unset or
    empty: program order. The same seed gives the same order, so a failure can be replayed."""
    text = os.environ.get("TRITIUM_SHUFFLE", "").strip()
    if not text:
        return None
    try:
        return int(text, 0)
    except ValueError:
        raise ValueError(f"TRITIUM_SHUFFLE must be an integer seed, got {text!r}") from None


def spin_check_after() -> int:
    """TRITIUM_SPIN_CHECK_AFTER: after this many iterations of one ``while`` loop (default 1000),
    the interpreter starts checking whether an iteration repeats the previous one exactly (same
    carried values, same values read from memory); such a loop can never exit, and it raises
    ``DeadlockError``. Debug mode checks from the first iteration."""
    return max(1, int(os.environ.get("TRITIUM_SPIN_CHECK_AFTER", "1000")))


def cache_dir() -> str:
    """TRITIUM_CACHE_DIR: the folder tritium keeps its on-disk caches in (the autotuner's winning
    configs, under ``autotune/``). Default: ``~/.cache/tritium`` (``$XDG_CACHE_HOME/tritium`` when
    XDG_CACHE_HOME is set). A folder assigned to ``triton.knobs.cache.dir`` takes precedence."""
    from . import knobs

    if knobs.cache.is_set("dir"):
        return os.path.expanduser(str(knobs.cache.dir))
    text = os.environ.get("TRITIUM_CACHE_DIR", "").strip()
    if text:
        return os.path.expanduser(text)
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tritium")


def autotune_cache() -> bool:
    """TRITIUM_AUTOTUNE_CACHE=0: the autotuner keeps its results in memory only (default: it also
    stores each key's winning config on disk, under ``cache_dir()/autotune``, and a later process
    reuses it without timing the configs again)."""
    return os.environ.get("TRITIUM_AUTOTUNE_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def autotune_progress() -> bool:
    """TRITIUM_AUTOTUNE_PROGRESS=0: no progress line while the autotuner times configs (it is shown
    on stderr only when stderr is a terminal)."""
    return os.environ.get("TRITIUM_AUTOTUNE_PROGRESS", "1").strip().lower() not in ("0", "false", "no", "off")
