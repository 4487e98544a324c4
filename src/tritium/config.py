"""Every TRITIUM_* setting, read in one place.

Settings that ``triton.knobs`` also exposes live in the knobs (one state): assigning the knob
changes what the function here returns, and the function reads the knob, which reads the
environment variable until it is assigned. That holds for the cache folder (``knobs.cache.dir``),
the backend (``knobs.runtime.backend``), debug mode (``knobs.runtime.debug``) and the dumped
stages (``knobs.compilation.dump``).
"""
from __future__ import annotations

import contextlib
import os
import threading
from typing import Any, NamedTuple, Optional

from . import knobs


def dump_stages() -> set[str]:
    """TRITIUM_DUMP=ir[,ttir,..] (``knobs.compilation.dump``): print these stages' output to stderr:
    ``ir`` is the IR after the passes, other names a backend's stages (``tritium ir --stage``)."""
    value = knobs.compilation.dump or ""
    parts = value.split(",") if isinstance(value, str) else list(value)
    return {str(s).strip() for s in parts if str(s).strip()}


def backend_name() -> str:
    """TRITIUM_BACKEND (``knobs.runtime.backend``): the backend that runs every launch, by name (see
    ``tritium.backends.registry``); "" (unset) picks the first available backend serving the
    device the arguments' memory is on (host memory: the interpreter, then the cpu compiler)."""
    return str(knobs.runtime.backend or "").strip().lower()


def validate_backend() -> str:
    """TRITIUM_VALIDATE=interpreter: after each launch on another backend, run it again on the
    interpreter over copies of the arguments and compare the outputs (runtime/validate.py).
    "" (unset): no validation."""
    text = knobs.environ_get("TRITIUM_VALIDATE", "").strip().lower()
    if text in ("", "0", "off", "no", "false"):
        return ""
    if text != "interpreter":
        raise ValueError(f"TRITIUM_VALIDATE={text!r}: the launches can be validated against 'interpreter' only")
    return text


def batch_elements() -> int:
    """TRITIUM_BATCH_ELEMENTS: the interpreter runs as many programs at once as keep the largest
    block of one value under this many elements (default 2**18)."""
    return int(knobs.environ_get("TRITIUM_BATCH_ELEMENTS", str(1 << 18)))


def num_threads() -> int:
    """TRITIUM_NUM_THREADS: worker threads the compiled CPU backend splits a grid over (0 or unset:
    as many as the CPUs this process may run on)."""
    text = knobs.environ_get("TRITIUM_NUM_THREADS", "").strip()
    if text:
        try:
            value = int(text)
        except ValueError:
            from .errors import SettingError

            raise SettingError(f"TRITIUM_NUM_THREADS={text!r}: give a number of threads (0: one per CPU)") from None
        if value > 0:
            return value
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def bounds_checks() -> bool:
    """TRITIUM_BOUNDS_CHECKS=0: the compiled CPU backend compiles kernels without their bounds
    checks (a stray access is then undefined, as on a GPU). Part of the backend's target, so checked
    and unchecked objects are cached apart; set it before the first launch."""
    return knobs.environ_get("TRITIUM_BOUNDS_CHECKS", "1").strip().lower() not in ("0", "false", "no", "off")


def quick_compile() -> bool:
    """TRITIUM_QUICK_COMPILE=0: the compiled CPU backend optimizes a kernel fully before its first
    launch. By default it first compiles it with few optimizations (scalar code, a few milliseconds
    of LLVM), launches that, and swaps in the fully optimized code when a background compilation
    has made it (between chunks of programs, even during a launch); see docs/cpu-backend.md."""
    return knobs.environ_get("TRITIUM_QUICK_COMPILE", "1").strip().lower() not in ("0", "false", "no", "off")


def interpreter_first() -> bool:
    """TRITIUM_INTERPRETER_FIRST=0: the compiled CPU backend, when it is the default, compiles a
    kernel before its first launch. By default a kernel compiled for the first time runs its first
    launch on the interpreter when that launch has little work (a test suite's usual launch), and is
    compiled at its next one; see docs/cpu-backend.md, "Tiers"."""
    return knobs.environ_get("TRITIUM_INTERPRETER_FIRST", "1").strip().lower() not in ("0", "false", "no", "off")


_timed = threading.local()


@contextlib.contextmanager
def timed_launches():
    """Launches made inside (on this thread) are being timed (``triton.testing.do_bench``, the
    autotuner): a backend runs them as it will keep running them, never on a slower first tier
    (the CPU backend's interpreter tier compiles them at once)."""
    depth = getattr(_timed, "depth", 0)
    _timed.depth = depth + 1
    try:
        yield
    finally:
        _timed.depth = depth


def launches_timed() -> bool:
    """Whether this thread is inside ``timed_launches``."""
    return getattr(_timed, "depth", 0) > 0


def share_openmp() -> bool:
    """TRITIUM_SHARE_OPENMP=0: the compiled CPU backend runs a launch's programs on worker threads of
    its own even when torch is imported with its GNU OpenMP runtime. By default it then runs them on
    that runtime's threads, the ones torch's own ops run on (as Inductor's generated C++ does): two
    pools of busy threads on the same cores slow each other down (torch's OpenMP threads poll for
    milliseconds after each op). Read when the first launch with torch imported chooses the threads."""
    return knobs.environ_get("TRITIUM_SHARE_OPENMP", "1").strip().lower() not in ("0", "false", "no", "off")


def malloc_tuning() -> bool:
    """TRITIUM_MALLOC_TUNING=0: leave glibc's malloc thresholds alone. By default the interpreter
    and the CPU backend raise them at their first launch, so the arrays each op frees are reused
    instead of being returned to the OS and faulted in again (see backends/malloc_tuning.py)."""
    return knobs.environ_get("TRITIUM_MALLOC_TUNING", "1").strip().lower() not in ("0", "false", "no", "off")


def reference_mode() -> bool:
    """TRITIUM_REFERENCE=1: the interpreter's deliberately simple reference mode, against which its
    fast paths are tested (``tests/fuzz``, ``benchmarks/fuzz.py``): one program at a time, every
    block an ordinary array (no symbolic affine values, so no strided windows, lattice views or row
    gathers) and every loop run over the whole batch (no compaction). Same results, much slower."""
    return knobs.environ_get("TRITIUM_REFERENCE", "").strip().lower() in ("1", "true", "yes", "on")


def bench_quick() -> bool:
    """TRITIUM_BENCH_QUICK=1: ``perf_report`` sweeps run only their first two x values and
    ``do_bench`` skips its separate warm-up (benchmark scripts as quick smoke tests)."""
    return knobs.environ_get("TRITIUM_BENCH_QUICK", "").strip().lower() in ("1", "true", "yes", "on")


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
    turns it off); the launch's setting wins over the kernel's, and both over
    ``knobs.runtime.debug``, which reads TRITIUM_DEBUG, then Triton's TRITON_DEBUG, until assigned.
    """
    return bool(knobs.runtime.debug)


def shuffle_seed() -> int | None:
    """TRITIUM_SHUFFLE=<seed>: the interpreter runs the batches of a launch (and, for kernels whose
    programs run one at a time, the programs) in a random order drawn from this seed, to expose
    kernels that depend on the order programs are launched in (a GPU promises none). Unset or
    empty: program order. The same seed gives the same order, so a failure can be replayed."""
    text = knobs.environ_get("TRITIUM_SHUFFLE", "").strip()
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
    return max(1, int(knobs.environ_get("TRITIUM_SPIN_CHECK_AFTER", "1000")))


def cache_dir() -> str:
    """The folder tritium keeps its on-disk caches in (the autotuner's winning configs under
    ``autotune/``, compiled backends' stages under ``kernels/``; see runtime/cache.py). In order of
    precedence: a folder assigned to ``triton.knobs.cache.dir``; TRITIUM_CACHE_DIR; Triton's
    TRITON_CACHE_DIR; ``~/.cache/tritium`` (``$XDG_CACHE_HOME/tritium`` when XDG_CACHE_HOME is set)."""
    if knobs.cache.is_set("dir"):
        return os.path.expanduser(str(knobs.cache.dir))
    for variable in ("TRITIUM_CACHE_DIR", "TRITON_CACHE_DIR"):
        text = knobs.environ_get(variable, "").strip()
        if text:
            return os.path.expanduser(text)
    base = knobs.environ_get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tritium")


def autotune_cache() -> bool:
    """TRITIUM_AUTOTUNE_CACHE=0: the autotuner keeps its results in memory only (default: it also
    stores each key's winning config on disk, under ``cache_dir()/autotune``, and a later process
    reuses it without timing the configs again)."""
    return knobs.environ_get("TRITIUM_AUTOTUNE_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def autotune_progress() -> bool:
    """TRITIUM_AUTOTUNE_PROGRESS=0: no progress line while the autotuner times configs (it is shown
    on stderr only when stderr is a terminal)."""
    return knobs.environ_get("TRITIUM_AUTOTUNE_PROGRESS", "1").strip().lower() not in ("0", "false", "no", "off")


def strict() -> bool:
    """TRITIUM_STRICT=1: refuse what compiled Triton refuses (``break``/``continue``, ``return``
    inside loops, a loop-carried variable whose type changes, a ``tl.dot`` with a K below compiled
    Triton's minimum), so kernels written against tritium
    also compile under Triton. Off by default: these are tritium's extensions (docs/language.md)."""
    return knobs.environ_get("TRITIUM_STRICT", "").strip().lower() in ("1", "true", "yes", "on")


def check_ir() -> bool:
    """TRITIUM_CHECK_IR=1: verify the IR after every compiler pass, and check that the final IR
    prints, parses back and prints to the same text (the test suite sets it)."""
    return knobs.environ_get("TRITIUM_CHECK_IR", "").strip().lower() in ("1", "true", "yes", "on")


def check_analysis() -> str:
    """TRITIUM_CHECK_ANALYSIS=1: before every load, store and atomic, the interpreter checks what
    the compiler's analysis claims about its pointer, its mask and the integers they are computed
    from (contiguity, divisibility, constancy, non-negativity; box masks) against the values it
    computed, sampling a few executions and programs (the test suite sets it); ``all`` checks every
    execution in every program. Returns "" (off), "sampled" or "all"."""
    text = knobs.environ_get("TRITIUM_CHECK_ANALYSIS", "").strip().lower()
    if text in ("", "0", "false", "no", "off"):
        return ""
    return "all" if text == "all" else "sampled"


class LaunchSettings(NamedTuple):
    """The settings every launch reads (each as the function of the same name returns it)."""

    backend: str
    strict: bool
    fp32_default: Any
    debug: bool
    validate: str
    shuffle_seed: Optional[int]
    # TRITIUM_NUM_THREADS as set (None: unset), parsed by the CPU backend (config.num_threads): held
    # here so that a change of it changes the launch fast path's key, and the CPU backend's direct
    # launchers, which read the thread count when made, are made again
    num_threads_text: Optional[str] = None
    # Triton's TRITON_DEFAULT_FP_FUSION / knobs.language.default_fp_fusion: the enable_fp_fusion a
    # launch that names none compiles with (a change of it must change the fast path's key)
    default_fp_fusion: bool = True


# every environment variable those functions read, and the knobs that override some of them
_LAUNCH_ENVIRON = ("TRITIUM_BACKEND", "TRITIUM_STRICT", "TRITON_F32_DEFAULT", "TRITIUM_DEBUG", "TRITON_DEBUG",
                   "TRITIUM_VALIDATE", "TRITIUM_SHUFFLE", "TRITIUM_NUM_THREADS", "TRITON_DEFAULT_FP_FUSION")
_UNSET = object()
_launch_settings: dict = {}


def launch_settings() -> LaunchSettings:
    """``LaunchSettings`` for the environment and knobs as they are now, parsed once per distinct
    state of them: a launch reads them in one step instead of one variable at a time."""
    assigned_runtime, assigned_language = knobs.runtime.__dict__, knobs.language.__dict__  # (the groups may be replaced)
    key = (knobs.environ_values(_LAUNCH_ENVIRON), assigned_runtime.get("backend", _UNSET),
           assigned_runtime.get("debug", _UNSET), assigned_language.get("fp32_default", _UNSET),
           assigned_language.get("default_fp_fusion", _UNSET))
    try:
        found = _launch_settings.get(key)
    except TypeError:  # an unhashable knob value: parsed every time
        key, found = None, None
    if found is None:
        found = LaunchSettings(backend_name(), strict(), knobs.language.fp32_default, debug_mode(),
                               validate_backend(), shuffle_seed(), knobs.environ_get("TRITIUM_NUM_THREADS"),
                               bool(knobs.language.default_fp_fusion))
        if key is not None:
            if len(_launch_settings) >= 64:
                _launch_settings.clear()
            _launch_settings[key] = found
    return found
