"""IR-to-IR passes. Each takes a Function and changes it in place; ``manager.PIPELINE`` lists them
in the order they run."""
from .canonicalize import canonicalize
from .constant_fold import fold_constants
from .cse import eliminate_common_subexpressions
from .dce import eliminate_dead_code
from .licm import hoist_loop_invariants
from .manager import PASS_NAMES, PIPELINE, Pass, run_passes

__all__ = ["PASS_NAMES", "PIPELINE", "Pass", "canonicalize", "eliminate_common_subexpressions",
           "eliminate_dead_code", "fold_constants", "hoist_loop_invariants", "run_passes"]
