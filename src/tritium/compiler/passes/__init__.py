"""IR-to-IR passes. Each takes a Function and changes it in place."""
from .constant_fold import fold_constants
from .dce import eliminate_dead_code

__all__ = ["fold_constants", "eliminate_dead_code"]
