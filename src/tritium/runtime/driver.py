"""``triton.runtime.driver``: the device kernels launch on, and what scripts may ask about it.

Triton scripts ask the active driver for the torch device to allocate on
(``driver.active.get_active_torch_device()``), for the target (``get_current_target()``: backend,
arch, warp size) and for device properties they use in occupancy arithmetic
(``driver.active.utils.get_device_properties(device)``). On a machine with an NVIDIA GPU that the
CUDA backend can use (torch with CUDA, cuda-bindings), the active driver is the GPU's
(``CUDADriver``: the current CUDA device, its properties as the CUDA driver reports them), unless
``TRITIUM_BACKEND`` names a host backend. Elsewhere it is the host CPU:

============================  ===================================================================
property                      value on the CPU driver
============================  ===================================================================
``multiprocessor_count``      usable CPU cores (the CPU backend spreads programs over them)
``max_shared_mem``            bytes of L2 cache per core (sysfs; 1 MiB when unknown): the fast
                              memory a program's blocks live in
``max_num_regs``              65536, the register file of one NVIDIA SM, so occupancy formulas
                              written for GPUs give a few programs per core
``warpSize``                  32: tritium keeps Triton's programming model (``num_warps * 32``
                              threads per program), whatever the hardware
``max_threads_per_sm``        2048
``sm_clock_rate``             the CPU's maximum clock in kHz (sysfs; 2 GHz when unknown)
``mem_clock_rate``            1.6 GHz in kHz, and ``mem_bus_width`` 128 bits: dual-channel DDR4
                              -3200, a nominal 51 GB/s
``arch``, ``name``            the machine (``platform.machine()``) and the CPU model
============================  ===================================================================

A compiled kernel reports ``n_regs`` 32 and ``n_spills`` 0 (nominal) and ``metadata.shared``,
the bytes a GPU would stage in shared memory for its reductions, scans, transposes and dots (see
``compiler.compiled_kernel.CompiledKernel``).
"""
from __future__ import annotations

import functools
import os
import platform
from typing import Any

from .. import backends as _backends
from ..backends.base import BaseBackend, GPUTarget

WARP_SIZE = 32
MAX_NUM_REGS = 65536


def _read_sysfs(path: str):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _parse_size(text) -> int | None:
    if not text:
        return None
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    scale = units.get(text[-1].upper(), 1)
    digits = text[:-1] if text[-1].upper() in units else text
    try:
        return int(digits) * scale
    except ValueError:
        return None


def _core_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cpu_name() -> str:
    """The host CPU's model name, as /proc/cpuinfo gives it."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


@functools.lru_cache(maxsize=None)
def cpu_properties() -> dict:
    """The host CPU described with the keys Triton's CUDA and HIP drivers use."""
    l2 = None
    for index in range(8):
        base = f"/sys/devices/system/cpu/cpu0/cache/index{index}"
        if _read_sysfs(f"{base}/level") == "2" and _read_sysfs(f"{base}/type") in ("Unified", "Data"):
            l2 = _parse_size(_read_sysfs(f"{base}/size"))
            break
    max_khz = _read_sysfs("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    return {
        "max_shared_mem": l2 or (1 << 20),
        "max_num_regs": MAX_NUM_REGS,
        "multiprocessor_count": _core_count(),
        "warpSize": WARP_SIZE,
        "max_threads_per_sm": 2048,
        "sm_clock_rate": int(max_khz) if max_khz and max_khz.isdigit() else 2_000_000,
        "mem_clock_rate": 1_600_000,
        "mem_bus_width": 128,
        "arch": platform.machine() or "cpu",
        "name": cpu_name(),
    }


class CPUUtils:
    """``driver.active.utils``."""

    def get_device_properties(self, device: Any = None) -> dict:
        """Properties of ``device`` (an index, None, or a torch device; the host has one device)."""
        index = getattr(device, "index", device)
        if index not in (None, 0):
            raise ValueError(f"the CPU driver has a single device (0), not {index!r}")
        return dict(cpu_properties())


def _add_torch_cpu_stream_api(torch) -> None:
    """``torch.cpu`` lacks ``set_stream``, which scripts call as
    ``getattr(torch, DEVICE.type).set_stream(stream)``: add a stand-in that does nothing."""
    cpu = torch.cpu
    if not hasattr(cpu, "set_stream"):
        def set_stream(stream) -> None:
            """Accepted and ignored (tritium's stand-in): CPU work runs synchronously, in order."""

        cpu.set_stream = set_stream


class CPUDriver:
    """The host: kernels run on the CPU, on torch CPU tensors or numpy arrays."""

    backend = "cpu"

    def __init__(self):
        self.utils = CPUUtils()

    @staticmethod
    def is_active() -> bool:
        return True

    def get_current_target(self) -> GPUTarget:
        return GPUTarget("cpu", platform.machine() or "cpu", WARP_SIZE)

    def get_active_torch_device(self):
        import torch

        _add_torch_cpu_stream_api(torch)
        return torch.device("cpu")

    def get_device_interface(self):
        """The torch module for this device, as ``torch.cuda`` is for CUDA: ``torch.cpu``."""
        import torch

        _add_torch_cpu_stream_api(torch)
        return torch.cpu

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device) -> None:
        index = getattr(device, "index", device)
        if index not in (None, 0):
            raise ValueError(f"the CPU driver has a single device (0), not {index!r}")

    def get_current_stream(self, device=None) -> int:
        return 0

    def get_benchmarker(self):
        from ..testing import do_bench

        return do_bench

    def get_empty_cache_for_benchmark(self):
        """A buffer whose clearing evicts caches between timed runs; nothing on the CPU driver,
        where timing a warm cache is what a CPU user sees."""
        return None

    def clear_cache(self, cache) -> None:
        if cache is not None and hasattr(cache, "zero_"):
            cache.zero_()

    def __repr__(self) -> str:
        return "CPUDriver()"


class CUDAUtils:
    """``driver.active.utils`` of the CUDA driver."""

    def get_device_properties(self, device: Any = None) -> dict:
        """Properties of CUDA device ``device`` (an index, a torch device, or None: the current one),
        with the keys of Triton's CUDA driver."""
        import torch

        index = getattr(device, "index", device)
        return _backends.registry.get("cuda").device_properties(torch.cuda.current_device() if index is None
                                                                 else int(index))


class CUDADriver:
    """An NVIDIA GPU, through the CUDA backend: scripts allocate torch CUDA tensors on the device it
    names, and kernels launched on them run there."""

    backend = "cuda"

    def __init__(self):
        self.utils = CUDAUtils()

    @staticmethod
    def is_active() -> bool:
        return cuda_usable()

    def get_current_target(self) -> GPUTarget:
        return _backends.registry.get("cuda").default_target()  # the current device's

    def get_active_torch_device(self):
        import torch

        return torch.device("cuda", torch.cuda.current_device())

    def get_device_interface(self):
        import torch

        return torch.cuda

    def get_current_device(self) -> int:
        import torch

        return torch.cuda.current_device()

    def set_current_device(self, device) -> None:
        import torch

        torch.cuda.set_device(device)

    def get_current_stream(self, device=None) -> int:
        import torch

        return torch.cuda.current_stream(device).cuda_stream

    def get_benchmarker(self):
        from ..testing import do_bench

        return do_bench

    def get_empty_cache_for_benchmark(self):
        """256 MB of device memory, more than an H100/H200's L2 cache: zeroing it between timed runs
        evicts what the previous run left there, as Triton's driver does."""
        import torch

        return torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")

    def clear_cache(self, cache) -> None:
        cache.zero_()

    def __repr__(self) -> str:
        return "CUDADriver()"


@functools.lru_cache(maxsize=None)
def cuda_usable() -> bool:
    """A CUDA GPU that the CUDA backend can run on: torch with CUDA, cuda-bindings, a device."""
    try:
        import torch
    except ImportError:
        return False
    if not torch.cuda.is_available():
        return False
    return _backends.registry.get("cuda").unavailable_reason() is None


class DriverConfig:
    """``triton.runtime.driver``: ``.active`` is the driver launches go to, ``.default`` the one
    tritium picks; ``set_active``/``reset_active`` swap it (tests use this). The active driver is
    the CUDA one on a machine with a GPU the CUDA backend can use, unless ``TRITIUM_BACKEND`` names a
    host backend (``cpu``, ``interpreter``); else the host CPU's."""

    def __init__(self):
        self.default = CPUDriver()
        self._active = None
        self._cuda = None

    @property
    def active(self):
        if self._active is not None:
            return self._active
        from .. import config

        if config.backend_name() in ("", "cuda") and cuda_usable():
            if self._cuda is None:
                self._cuda = CUDADriver()
            return self._cuda
        return self.default

    def set_active(self, driver) -> None:
        self._active = driver

    def reset_active(self) -> None:
        self._active = None


driver = DriverConfig()

# The module answers like ``driver`` too: ``triton.runtime.driver`` is the DriverConfig above
# (``runtime/__init__`` binds it), but an ``import triton.runtime.driver`` made through tritium's
# import alias can rebind that name to this module, and scripts must not notice.
default = driver.default


# triton.backends.backends, as Triton's plugins register themselves: the host, and NVIDIA GPUs (whose
# driver is active where the CUDA backend can run: torch's Inductor looks for such a GPU backend)
_backends.backends["cpu"] = _backends.TritonBackend(compiler=BaseBackend, driver=CPUDriver)
_backends.backends["nvidia"] = _backends.TritonBackend(compiler=BaseBackend, driver=CUDADriver)


def set_active(new_driver) -> None:
    driver.set_active(new_driver)


def reset_active() -> None:
    driver.reset_active()


def __getattr__(name):
    if name == "active":
        return driver.active
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
