"""Compile-time facts about a kernel's IR that every backend can use."""
from .effects import needs_program_order, spins_on_memory  # noqa: F401
from .axis_info import AxisInfo, AxisInfoMap, analyze_axis_info  # noqa: F401
from .masks import MaskBound, MaskInfo, classify_mask  # noqa: F401
