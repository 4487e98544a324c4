"""The CUDA driver API through ``cuda-bindings``: the context, modules, functions and launches.

One context per process: the primary context of the current device (the one torch uses), made
current on the calling thread before each use. Every call's status is checked; a failure is a
``LaunchError`` naming the call and the driver's words for the error.
"""
from __future__ import annotations

import ctypes
import functools
import sys
from typing import Optional

from ...errors import LaunchError, OutOfResources

_DRIVER = None


def _driver():
    global _DRIVER
    if _DRIVER is None:
        from cuda.bindings import driver

        _DRIVER = driver
    return _DRIVER


_LAUNCH = None  # libcuda's cuLaunchKernel through ctypes (False: not reachable that way)


def _raw_launch():
    """``cuLaunchKernel`` of the driver library cuda-bindings loaded, called through ctypes: the
    launch on the hot path costs a ctypes call instead of cuda-bindings' argument conversion. None
    where the library cannot be opened that way (the bindings' call is used then)."""
    global _LAUNCH
    if _LAUNCH is None:
        try:
            function = ctypes.CDLL("libcuda.so.1").cuLaunchKernel
        except (OSError, AttributeError):
            _LAUNCH = False
        else:
            # no argtypes: the caller passes pointers as c_void_p (or ctypes arrays) and the grid and
            # sizes as ints below 2**31, which ctypes converts without them at half the cost
            function.restype = ctypes.c_int
            _LAUNCH = function
    return _LAUNCH or None


def unavailable_reason() -> Optional[str]:
    """Why CUDA cannot be used here, or None."""
    try:
        driver = _driver()
    except ImportError:
        return "cuda-bindings is not installed (pip install 'tritium[cuda]')"
    try:
        status, = driver.cuInit(0)
    except Exception as error:  # noqa: BLE001 - the library itself is missing: no NVIDIA driver
        return f"the NVIDIA driver library could not be loaded ({type(error).__name__}: {str(error)[:120]})"
    if status != driver.CUresult.CUDA_SUCCESS:
        return f"cuInit failed: {_name(status)}"
    status, count = driver.cuDeviceGetCount()
    if status != driver.CUresult.CUDA_SUCCESS or count == 0:
        return "no CUDA device is visible"
    return None


def _name(status) -> str:
    driver = _driver()
    try:
        _, text = driver.cuGetErrorString(status)
        words = text.decode() if isinstance(text, bytes) else str(text)
    except Exception:  # noqa: BLE001 - describing an error must not raise another
        words = ""
    return f"{getattr(status, 'name', status)}" + (f" ({words})" if words else "")


def check(result, what: str):
    """The values of a cuda-bindings call's result tuple, or a LaunchError naming ``what``."""
    driver = _driver()
    status, *values = result if isinstance(result, tuple) else (result,)
    if status != driver.CUresult.CUDA_SUCCESS:
        raise LaunchError(f"the CUDA driver failed in {what}: {_name(status)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


class Device:
    """The current CUDA device and its primary context."""

    def __init__(self, ordinal: int = 0):
        driver = _driver()
        check(driver.cuInit(0), "cuInit")
        self.ordinal = ordinal
        self.device = check(driver.cuDeviceGet(ordinal), "cuDeviceGet")
        self.context = check(driver.cuDevicePrimaryCtxRetain(self.device), "cuDevicePrimaryCtxRetain")
        attribute = driver.CUdevice_attribute
        self.capability = (
            check(driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.device),
                  "cuDeviceGetAttribute"),
            check(driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.device),
                  "cuDeviceGetAttribute"))
        self.max_shared = check(driver.cuDeviceGetAttribute(
            attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, self.device), "cuDeviceGetAttribute")
        self.name = check(driver.cuDeviceGetName(64, self.device), "cuDeviceGetName")
        if isinstance(self.name, bytes):
            self.name = self.name.split(b"\0")[0].decode()

    def attribute(self, name: str) -> int:
        """``cuDeviceGetAttribute`` of ``CU_DEVICE_ATTRIBUTE_<name>``."""
        driver = _driver()
        return int(check(driver.cuDeviceGetAttribute(getattr(driver.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + name),
                                                     self.device), "cuDeviceGetAttribute"))

    def properties(self) -> dict:
        """The device described with the keys of Triton's ``get_device_properties``."""
        return {
            "max_shared_mem": self.max_shared,
            "max_num_regs": self.attribute("MAX_REGISTERS_PER_BLOCK"),
            "multiprocessor_count": self.attribute("MULTIPROCESSOR_COUNT"),
            "warpSize": self.attribute("WARP_SIZE"),
            "max_threads_per_sm": self.attribute("MAX_THREADS_PER_MULTIPROCESSOR"),
            "sm_clock_rate": self.attribute("CLOCK_RATE"),
            "mem_clock_rate": self.attribute("MEMORY_CLOCK_RATE"),
            "mem_bus_width": self.attribute("GLOBAL_MEMORY_BUS_WIDTH"),
            "arch": self.arch,
            "name": self.name,
        }

    @property
    def arch(self) -> str:
        major, minor = self.capability
        return f"sm_{major}{minor}" + ("a" if major == 9 else "")

    def make_current(self) -> None:
        check(_driver().cuCtxSetCurrent(self.context), "cuCtxSetCurrent")


@functools.cache
def device(ordinal: int = 0) -> Device:
    return Device(ordinal)


def torch_place_functions(torch) -> tuple:
    """(current device ordinal, raw current stream of an ordinal): torch's own functions for them,
    which Triton's launcher calls too (no Stream object built), or equivalents where torch lacks them."""
    get_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
    get_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if get_stream is None:
        def get_stream(ordinal):
            return torch.cuda.current_stream(ordinal).cuda_stream
    return get_device, get_stream


def current_place() -> tuple[int, int, bool]:
    """(torch's current device, its current stream, True) once torch has started CUDA, else (0, the
    default stream, False)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return 0, 0, False
    get_device, get_stream = torch_place_functions(torch)
    ordinal = get_device()
    return ordinal, get_stream(ordinal), True


def current_device_ordinal() -> int:
    """torch's current device once torch has started CUDA, else 0."""
    return current_place()[0]


def current_stream() -> int:
    """torch's current stream on the current device when torch has started CUDA, else the default."""
    return current_place()[1]


class Kernel:
    """A loaded kernel: its module and function handle on one device."""

    def __init__(self, dev: Device, image: bytes, name: str, shared_bytes: int):
        driver = _driver()
        dev.make_current()
        self.device = dev
        self.module = check(driver.cuModuleLoadData(image), "cuModuleLoadData")
        self.function = check(driver.cuModuleGetFunction(self.module, name.encode()), "cuModuleGetFunction")
        self.shared_bytes = shared_bytes
        if shared_bytes > 48 * 1024:
            if shared_bytes > dev.max_shared:  # as Triton: its autotuner skips a config that raises it
                raise OutOfResources(shared_bytes, dev.max_shared, "shared memory")
            check(driver.cuFuncSetAttribute(
                self.function, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared_bytes), "cuFuncSetAttribute")

        self.handle = int(self.function)
        self._handle = ctypes.c_void_p(self.handle)
        attribute = driver.CUfunction_attribute
        # what Triton's compiled kernels report: registers per thread, and spills as 4-byte words of
        # local memory per thread
        self.n_regs = int(check(driver.cuFuncGetAttribute(attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, self.function),
                                "cuFuncGetAttribute"))
        self.n_spills = int(check(driver.cuFuncGetAttribute(attribute.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                                                            self.function), "cuFuncGetAttribute")) // 4
        self._raw = _raw_launch()

    def launch_packed(self, grid, threads: int, stream: int, parameters) -> int:
        """Launches with ``parameters``, a ctypes array of pointers to each parameter's value
        (cuLaunchKernel's kernelParams); returns the driver's status (0: launched)."""
        gx, gy, gz = grid
        raw = self._raw
        if raw is None:
            status, = _driver().cuLaunchKernel(self.function, gx, gy, gz, threads, 1, 1, self.shared_bytes, stream,
                                               ctypes.addressof(parameters), 0)
            return int(status)
        return raw(self._handle, gx, gy, gz, threads, 1, 1, self.shared_bytes,
                   ctypes.c_void_p(stream) if stream else None, parameters, None)


def raise_status(status: int, what: str) -> None:
    """A LaunchError for a driver status returned as an integer."""
    try:
        result = _driver().CUresult(status)
    except ValueError:  # a code this cuda-bindings does not name
        raise LaunchError(f"{what} failed: CUDA driver error {status}") from None
    check((result,), what)


# device memory for launches over host memory ------------------------------------------------------
def allocate(nbytes: int) -> int:
    return int(check(_driver().cuMemAlloc(max(nbytes, 1)), "cuMemAlloc"))


def free(address: int) -> None:
    check(_driver().cuMemFree(address), "cuMemFree")


def copy_to_device(device_address: int, host_address: int, nbytes: int) -> None:
    if nbytes:
        check(_driver().cuMemcpyHtoD(device_address, host_address, nbytes), "cuMemcpyHtoD")


def copy_to_host(host_address: int, device_address: int, nbytes: int) -> None:
    if nbytes:
        check(_driver().cuMemcpyDtoH(host_address, device_address, nbytes), "cuMemcpyDtoH")


def zero(device_address: int, nbytes: int, stream: int) -> None:
    check(_driver().cuMemsetD8Async(device_address, 0, nbytes, stream), "cuMemsetD8Async")


def synchronize() -> None:
    check(_driver().cuCtxSynchronize(), "cuCtxSynchronize")
