"""Where a warm CUDA launch spends its time: run on a machine with a GPU, Triton and torch.

`PYTHONPATH=src python benchmarks/gpu/launch_overhead.py` times, per launch of a one-store kernel
(host time over many launches, one synchronization at the end):
- tritium's whole launch (`kernel[grid](x)`), and Triton's;
- cuLaunchKernel through cuda-bindings with the (values, ctypes types) argument tuples the backend
  uses today;
- cuLaunchKernel with a packed argument block built once (a ctypes array of pointers to each
  argument's storage), the values written in place per launch;
- the stream and device queries the launcher makes;
and prints a profile of tritium's launches by function.
Each variant's result is checked (the kernel writes 1.0), so a wrong packing shows as a failure.
"""
from __future__ import annotations

import ctypes
import time

import torch
import triton
import triton.language as tl

import tritium
import tritium.language as ttl

N = 5000


@tritium.jit
def store_one(x_ptr):
    ttl.store(x_ptr, 1.0)


@triton.jit
def store_one_triton(x_ptr):
    tl.store(x_ptr, 1.0)


@tritium.jit
def row_kernel(x_ptr, w_ptr, out_ptr, stride, n, eps, BLOCK: ttl.constexpr):
    ttl.store(out_ptr + ttl.arange(0, BLOCK), ttl.load(x_ptr + ttl.arange(0, BLOCK)) * eps)


@triton.jit
def row_kernel_triton(x_ptr, w_ptr, out_ptr, stride, n, eps, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + tl.arange(0, BLOCK)) * eps)


def per_launch(fn, n=N) -> float:
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def main():
    from tritium.backends.cuda import driver

    x = torch.zeros(4, device="cuda")
    compiled = store_one[(1,)](x)
    kernel = compiled.executable._kernel(driver.current_device_ordinal())
    cu = driver._driver()
    stream = driver.current_stream()
    rows = [("tritium kernel[grid](x)", per_launch(lambda: store_one[(1,)](x))),
            ("triton kernel[grid](x)", per_launch(lambda: store_one_triton[(1,)](x)))]
    # a row kernel's launch: three tensors, three scalars, a constexpr and num_warps
    w, out = torch.zeros(64, device="cuda"), torch.zeros(64, device="cuda")
    rows.append(("tritium row kernel, 6 args + num_warps", per_launch(
        lambda: row_kernel[(1,)](x, w, out, 64, 64, 1e-5, BLOCK=4, num_warps=8))))
    rows.append(("triton row kernel, 6 args + num_warps", per_launch(
        lambda: row_kernel_triton[(1,)](x, w, out, 64, 64, 1e-5, BLOCK=4, num_warps=8))))
    # tritium's launch in pieces: the argument binder (the fast path's key) and the direct launcher
    bind = store_one._binder  # made at the first launch (runtime/binder.py): (key, values, ...)
    fast = bind(x)
    _, direct = store_one._fast[fast[0]]
    rows.append(("tritium binder (key of a launch)", per_launch(lambda: bind(x))))
    rows.append(("tritium direct launcher", per_launch(lambda: direct((1, 1, 1), fast[1]))))

    values, types = (x.data_ptr(),), (ctypes.c_void_p,)
    rows.append(("cuLaunchKernel, (values, types) tuples", per_launch(
        lambda: cu.cuLaunchKernel(kernel.function, 1, 1, 1, 32 * 4, 1, 1, 0, stream, (values, types), 0))))

    storage = ctypes.c_uint64(x.data_ptr())
    block = (ctypes.c_void_p * 1)(ctypes.addressof(storage))
    address = ctypes.addressof(block)
    x.zero_()
    rows.append(("cuLaunchKernel, packed block", per_launch(
        lambda: cu.cuLaunchKernel(kernel.function, 1, 1, 1, 32 * 4, 1, 1, 0, stream, address, 0))))
    torch.cuda.synchronize()
    packed_ok = x[0].item() == 1.0

    rows.append(("driver.current_stream()", per_launch(driver.current_stream)))
    rows.append(("driver.current_device_ordinal()", per_launch(driver.current_device_ordinal)))
    rows.append(("Device.make_current()", per_launch(kernel.device.make_current)))
    for name, us in rows:
        print(f"{name:42} {us:8.2f} us")
    print("packed block wrote the result:", packed_ok)

    # where tritium's launch spends its host time, by function
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    for _ in range(2000):
        store_one[(1,)](x)
    profile.disable()
    torch.cuda.synchronize()
    pstats.Stats(profile).sort_stats("tottime").print_stats(16)


if __name__ == "__main__":
    main()
