"""The runtime: @jit functions, specialization, compilation caches, launches, the autotuner, and
the driver (``triton.runtime.driver.active``)."""
from . import errors  # noqa: F401
from .autotuner import Autotuner, Config, Heuristics, KernelInterface, autotune, heuristics
from .driver import driver
from .errors import InterpreterError, OutOfResources
from .jit import JITFunction

# As in Triton, ``triton.runtime.jit`` is the module (``triton.runtime.jit.JITFunction``); the
# decorator is ``triton.jit``.
__all__ = ["Autotuner", "Config", "Heuristics", "InterpreterError", "JITFunction", "KernelInterface",
           "OutOfResources", "autotune", "driver", "errors", "heuristics"]
