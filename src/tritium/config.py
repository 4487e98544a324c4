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
