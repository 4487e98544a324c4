"""A pytest plugin that makes ``import triton`` resolve to tritium in every pytest process.

``tritium run -m pytest`` names it in ``PYTEST_PLUGINS``, which pytest-xdist's worker processes
inherit, so tests written for Triton run on tritium also with ``-n``.
"""
from . import compat

compat.install()
