"""Can llvmlite's NVPTX target carry Hopper's wgmma? One warpgroup computes C = A @ B.

    python benchmarks/gpu/wgmma_probe.py [--k 16] [--n 128] [--wait intrinsic|asm] [--keep DIR] [--run]

A is 64 x K fp16 (row-major), B is K x N fp16 (row-major), C is 64 x N fp32. One kernel of 128
threads (one warpgroup), built with llvmlite alone (docs/tensor-cores.md designs the real thing):

1. ``cp.async`` copies 16-byte units of A and B into 128-byte swizzled shared tiles (unit ``c`` of
   row ``r`` at unit ``c ^ (r % 8)``): A K-major in rows of 128 bytes (as a 64-wide K tile lays
   them out), B N-major in column blocks of 64 elements;
2. ``cp.async.wait_group 0``, ``fence.proxy.async.shared::cta`` (the generic proxy's writes made
   visible to wgmma's async proxy), a barrier;
3. per 16-wide K step one ``wgmma.mma_async.sync.aligned.m64n{N}k16.f32.f16.f16`` (inline asm) on
   shared-memory descriptors built in the kernel, between the ``wgmma.fence`` and ``commit_group``
   intrinsics;
4. ``wait_group 0``: the intrinsic, then an empty asm taking every accumulator as a tied operand
   (``--wait intrinsic``), or one asm holding the wait and the tied operands (``--wait asm``), so no
   read of an accumulator can come before the wait;
5. each thread stores its N/2 accumulators where the m64nNk16 fragment puts them.

Here: PTX for sm_90a, ``ptxas -arch=sm_90a -v`` (registers, spills, warnings) and, when cuobjdump
and nvdisasm are found (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm), SASS counts. With
``--run`` (a GPU, cuda-bindings): a launch on random fp16 inputs, compared with a float64 numpy
product. The last line printed is the summary.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

ARCH = "sm_90a"
M, THREADS = 64, 128
I8, I32, I64, F32, VOID = ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.FloatType(), ir.VoidType()
GLOBAL, SHARED = ir.PointerType(addrspace=1), ir.PointerType(addrspace=3)


def tool(name: str):
    """``name`` from the nvidia wheels on sys.path, CUDA_HOME or PATH."""
    for entry in sys.path:
        for sub in ("cu13", "cu12", "cuda_nvcc", "cuda_cuobjdump"):
            candidate = os.path.join(entry, "nvidia", sub, "bin", name)
            if os.access(candidate, os.X_OK):
                return candidate
    home = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
    candidate = os.path.join(home, "bin", name)
    return candidate if os.access(candidate, os.X_OK) else shutil.which(name)


def descriptor(b, address, leading: int, stride: int):
    """The 64-bit wgmma shared-memory descriptor of a 128-byte swizzled tile starting at ``address``
    (i32, shared window): start >> 4 in bits 0-13, leading byte offset >> 4 in 16-29, stride byte
    offset >> 4 in 32-45, base offset 0 (tiles 1024-byte aligned), swizzle mode 1 (128 B) in 62-63."""
    start = b.zext(b.and_(b.lshr(address, ir.Constant(I32, 4)), ir.Constant(I32, 0x3FFF)), I64)
    fixed = (leading >> 4) << 16 | (stride >> 4) << 32 | 1 << 62
    return b.or_(start, ir.Constant(I64, fixed))


def build(k: int, n: int, wait: str) -> tuple[str, int]:
    """The kernel's LLVM IR text and its dynamic shared-memory size."""
    acc_regs = n // 2
    b_offset = M * 128  # A: 64 rows of 128 bytes
    smem_bytes = b_offset + (n // 64) * k * 128  # B: n/64 column blocks of k rows of 128 bytes
    module = ir.Module("wgmma_probe")
    module.triple = "nvptx64-nvidia-cuda"
    kernel = ir.Function(module, ir.FunctionType(VOID, [GLOBAL] * 4), "wgmma_probe")
    kernel.calling_convention = "ptx_kernel"
    module.add_named_metadata("nvvm.annotations", [kernel, "reqntidx", ir.Constant(I32, THREADS)])
    smem = ir.GlobalVariable(module, ir.ArrayType(I8, 0), "smem", addrspace=3)
    smem.linkage, smem.align = "external", 1024
    smem.type = SHARED  # opaque pointer, as LLVM 22 prints it

    def intrinsic(name, ret, args):
        fn = module.globals.get(name) or ir.Function(module, ir.FunctionType(ret, [a.type for a in args]), name)
        return b.call(fn, args)

    b = ir.IRBuilder(kernel.append_basic_block("entry"))
    a_ptr, b_ptr, c_ptr, info_ptr = kernel.args
    tid = intrinsic("llvm.nvvm.read.ptx.sreg.tid.x", I32, [])
    c32 = lambda v: ir.Constant(I32, v)
    base = b.ptrtoint(smem, I32)

    def copy(global_base, element_offset, shared_offset):  # one 16-byte cp.async (.cg: L2 only)
        src = b.gep(global_base, [b.mul(element_offset, c32(2))], source_etype=I8)
        dst = b.gep(smem, [shared_offset], source_etype=I8)
        intrinsic("llvm.nvvm.cp.async.cg.shared.global.16", VOID, [dst, src])

    # A: 64 rows x k/8 units; unit u of row r -> byte r * 128 + (u ^ r % 8) * 16
    units = k // 8
    for first in range(0, M * units, THREADS):
        unit = b.add(tid, c32(first))
        row, col = b.udiv(unit, c32(units)), b.urem(unit, c32(units))
        swizzled = b.xor(col, b.and_(row, c32(7)))
        copy(a_ptr, b.add(b.mul(row, c32(k)), b.mul(col, c32(8))),
             b.add(b.mul(row, c32(128)), b.mul(swizzled, c32(16))))
    # B: k rows x n/8 units; unit u of row r -> column block u / 8 (k * 128 bytes each), row r of it
    units = n // 8
    for first in range(0, k * units, THREADS):
        unit = b.add(tid, c32(first))
        row, col = b.udiv(unit, c32(units)), b.urem(unit, c32(units))
        block, within = b.udiv(col, c32(8)), b.urem(col, c32(8))
        swizzled = b.xor(within, b.and_(row, c32(7)))
        at = b.add(b.add(b.mul(block, c32(k * 128)), b.mul(row, c32(128))), b.mul(swizzled, c32(16)))
        copy(b_ptr, b.add(b.mul(row, c32(n)), b.mul(col, c32(8))), b.add(at, c32(b_offset)))
    intrinsic("llvm.nvvm.cp.async.commit.group", VOID, [])
    intrinsic("llvm.nvvm.cp.async.wait.group", VOID, [c32(0)])
    intrinsic("llvm.nvvm.fence.proxy.async.shared_cta", VOID, [])
    intrinsic("llvm.nvvm.barrier.cta.sync.aligned.all", VOID, [c32(0)])

    # wgmma: A K-major (leading offset unused, stride 8 rows = 1024 B); B N-major (leading offset:
    # the next 64-column block, k * 128 B; stride: the next 8 rows of K, 1024 B); trans-b = 1
    outs = ", ".join(f"${i}" for i in range(acc_regs))
    text = (f"{{ .reg .pred p; setp.ne.b32 p, ${2 * acc_regs + 2}, 0; "
            f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {{{outs}}}, ${2 * acc_regs}, "
            f"${2 * acc_regs + 1}, p, 1, 1, 0, 1; }}")
    tied = ",".join(str(i) for i in range(acc_regs))
    constraints = ",".join(["=f"] * acc_regs) + "," + tied + ",l,l,r"
    result = ir.LiteralStructType([F32] * acc_regs)
    mma_type = ir.FunctionType(result, [F32] * acc_regs + [I64, I64, I32])
    acc = [ir.Constant(F32, 0.0)] * acc_regs
    intrinsic("llvm.nvvm.wgmma.fence.sync.aligned", VOID, [])
    for step in range(k // 16):
        desc_a = descriptor(b, b.add(base, c32(step * 32)), 16, 1024)
        desc_b = descriptor(b, b.add(base, c32(b_offset + step * 16 * 128)), k * 128, 1024)
        call = b.asm(mma_type, text, constraints, acc + [desc_a, desc_b, c32(int(step > 0))], side_effect=True)
        acc = [b.extract_value(call, i) for i in range(acc_regs)]
    intrinsic("llvm.nvvm.wgmma.commit_group.sync.aligned", VOID, [])
    tie_type = ir.FunctionType(result, [F32] * acc_regs)
    tie_constraints = ",".join(["=f"] * acc_regs) + "," + tied
    if wait == "asm":
        call = b.asm(tie_type, "wgmma.wait_group.sync.aligned 0;", tie_constraints, acc, side_effect=True)
    else:
        intrinsic("llvm.nvvm.wgmma.wait_group.sync.aligned", VOID, [ir.Constant(I64, 0)])
        call = b.asm(tie_type, "// wgmma accumulators after the wait", tie_constraints, acc, side_effect=True)
    acc = [b.extract_value(call, i) for i in range(acc_regs)]

    # D fragment: warp w, lane 4g + t holds, per 8 columns j, (16w + g, 8j + 2t + {0, 1}) and row + 8
    warp, lane = b.lshr(tid, c32(5)), b.and_(tid, c32(31))
    row = b.add(b.mul(warp, c32(16)), b.lshr(lane, c32(2)))
    col = b.mul(b.and_(lane, c32(3)), c32(2))
    pair_type = ir.VectorType(F32, 2)
    for j in range(n // 8):
        for half in range(2):
            index = b.add(b.mul(b.add(row, c32(8 * half)), c32(n)), b.add(col, c32(8 * j)))
            pair = ir.Constant(pair_type, None)
            for e in range(2):
                pair = b.insert_element(pair, acc[4 * j + 2 * half + e], c32(e))
            b.store(pair, b.gep(c_ptr, [b.mul(index, c32(4))], source_etype=I8), align=8)
    first = b.icmp_unsigned("==", tid, c32(0))
    with b.if_then(first):
        b.store(base, b.gep(info_ptr, [c32(0)], source_etype=I8), align=4)
    b.ret_void()
    return str(module), smem_bytes


def to_ptx(llir: str) -> str:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.set_option("", "--nvptx-short-ptr")  # 32-bit shared addresses, as tritium's code generator
    machine = llvm.Target.from_triple("nvptx64-nvidia-cuda").create_target_machine(cpu=ARCH, features="+ptx80",
                                                                                   opt=3)
    module = llvm.parse_assembly(llir)
    module.data_layout = str(machine.target_data)
    module.verify()
    builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(speed_level=3))
    builder.getModulePassManager().run(module, builder)
    return machine.emit_assembly(module)


def assemble(folder: str) -> tuple[bytes, dict]:
    ptxas = tool("ptxas")
    if ptxas is None:
        sys.exit("ptxas not found: pip install nvidia-cuda-nvcc (or set CUDA_HOME)")
    source, target = os.path.join(folder, "wgmma_probe.ptx"), os.path.join(folder, "wgmma_probe.cubin")
    done = subprocess.run([ptxas, f"-arch={ARCH}", "-O3", "-v", source, "-o", target], capture_output=True,
                          text=True, check=False)
    if done.returncode:
        sys.exit(f"ptxas refused the PTX:\n{done.stderr}")
    said = done.stderr
    facts = {"registers": int(re.search(r"Used (\d+) registers", said).group(1)),
             "spill_stores": int(re.search(r"(\d+) bytes spill stores", said).group(1)),
             "spill_loads": int(re.search(r"(\d+) bytes spill loads", said).group(1)),
             "warnings": [line.strip() for line in said.splitlines() if "arning" in line], "log": said}
    with open(target, "rb") as f:
        return f.read(), facts


def sass_counts(folder: str) -> dict | None:
    cuobjdump, nvdisasm = tool("cuobjdump"), tool("nvdisasm")  # cuobjdump -sass runs nvdisasm
    if cuobjdump is None or nvdisasm is None:
        return None
    env = dict(os.environ, PATH=os.path.dirname(nvdisasm) + os.pathsep + os.environ.get("PATH", ""))
    sass = subprocess.run([cuobjdump, "-sass", os.path.join(folder, "wgmma_probe.cubin")], capture_output=True,
                          text=True, check=True, env=env).stdout
    with open(os.path.join(folder, "wgmma_probe.sass"), "w") as f:
        f.write(sass)
    names = re.findall(r"^\s+/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)", sass, re.MULTILINE)
    counts = {}
    for name in names:
        key = name.split(".")[0]
        counts[key] = counts.get(key, 0) + 1
    counts["HGMMA shapes"] = sorted({nm for nm in names if nm.startswith("HGMMA")})
    return counts


def run(cubin: bytes, k: int, n: int, smem_bytes: int) -> tuple[float, float, int]:
    """(max abs error, relative norm error, shared window address of the tiles) on the GPU."""
    from cuda.bindings import driver

    def check(result):
        status, *values = result if isinstance(result, tuple) else (result,)
        if status != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"CUDA driver: {status}")
        return values[0] if len(values) == 1 else values

    check(driver.cuInit(0))
    context = check(driver.cuDevicePrimaryCtxRetain(check(driver.cuDeviceGet(0))))
    check(driver.cuCtxSetCurrent(context))
    function = check(driver.cuModuleGetFunction(check(driver.cuModuleLoadData(cubin)), b"wgmma_probe"))
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((M, n), np.float32)
    info = np.zeros(4, np.uint32)
    buffers = [int(check(driver.cuMemAlloc(x.nbytes))) for x in (a, b, c, info)]
    for address, x in zip(buffers, (a, b, c, info)):
        check(driver.cuMemcpyHtoD(address, x.ctypes.data, x.nbytes))
    values = [ctypes.c_uint64(address) for address in buffers]
    params = (ctypes.c_void_p * 4)(*[ctypes.addressof(v) for v in values])
    check(driver.cuLaunchKernel(function, 1, 1, 1, THREADS, 1, 1, smem_bytes, 0, ctypes.addressof(params), 0))
    check(driver.cuCtxSynchronize())
    for address, x in ((buffers[2], c), (buffers[3], info)):
        check(driver.cuMemcpyDtoH(x.ctypes.data, address, x.nbytes))
    for address in buffers:
        check(driver.cuMemFree(address))
    reference = a.astype(np.float64) @ b.astype(np.float64)
    error = c.astype(np.float64) - reference
    return float(np.abs(error).max()), float(np.linalg.norm(error) / np.linalg.norm(reference)), int(info[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=16, choices=(16, 32, 64))
    parser.add_argument("--n", type=int, default=128, choices=(64, 128, 256))
    parser.add_argument("--wait", default="intrinsic", choices=("intrinsic", "asm"))
    parser.add_argument("--keep", help="write the LLVM IR, PTX, cubin and SASS into this folder")
    parser.add_argument("--run", action="store_true", help="launch it on the GPU and check the product")
    args = parser.parse_args()
    folder = args.keep or tempfile.mkdtemp(prefix="wgmma_probe_")
    os.makedirs(folder, exist_ok=True)
    llir, smem_bytes = build(args.k, args.n, args.wait)
    ptx = to_ptx(llir)
    for name, text in (("wgmma_probe.ll", llir), ("wgmma_probe.ptx", ptx)):
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)
    externs = re.findall(r"\.extern \.func[^\n]*", ptx)
    in_flight = ptx[ptx.rindex("wgmma.mma_async"):ptx.index("wgmma.wait_group")]  # accumulators not ready
    between = len(re.findall(r"^\s*mov\.", in_flight, re.MULTILINE))
    print(f"PTX: {ptx.count('wgmma.mma_async')} wgmma.mma_async, {ptx.count('cp.async.cg')} cp.async, "
          f"{ptx.count('fence.proxy.async')} fence.proxy.async, {len(externs)} unresolved externs, "
          f"{between} moves between the last wgmma and the wait")
    cubin, facts = assemble(folder)
    print(f"ptxas {ARCH}: {facts['registers']} registers, {facts['spill_stores']} bytes spill stores, "
          f"{facts['spill_loads']} bytes spill loads, shared {smem_bytes} bytes (dynamic)")
    print("".join(f"ptxas: {warning}\n" for warning in facts["warnings"]), end="")
    counts = sass_counts(folder)
    if counts is None:
        print("SASS: cuobjdump or nvdisasm not found (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    else:
        shown = ", ".join(f"{name} {counts.get(name, 0)}" for name in
                          ("HGMMA", "LDGSTS", "LDGDEPBAR", "DEPBAR", "WARPGROUP", "BAR", "FENCE", "STG"))
        print(f"SASS: {shown}; {' '.join(counts['HGMMA shapes'])}")
    ok = not externs and not between and facts["spill_stores"] == 0 and not facts["warnings"] and \
        (counts is None or counts.get("HGMMA", 0) > 0)
    summary = (f"wgmma probe m64n{args.n}k16 x{args.k // 16} ({args.wait} wait): {facts['registers']} registers, "
               f"{facts['spill_stores']} spill bytes, HGMMA {counts.get('HGMMA', 0) if counts else '?'}")
    if args.run:
        max_error, relative, address = run(cubin, args.k, args.n, smem_bytes)
        good = relative < 1e-5
        ok = ok and good
        summary += (f", GPU max abs error {max_error:.3g}, relative {relative:.3g} "
                    f"({'correct' if good else 'WRONG'}), shared base {address:#x} "
                    f"({'1024-aligned' if address % 1024 == 0 else 'NOT 1024-aligned'})")
    print(f"files in {folder}")
    print(("OK: " if ok else "FAILED: ") + summary)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
