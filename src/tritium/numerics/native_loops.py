"""Small loops compiled once with llvmlite for the host CPU, callable through ctypes.

The interpreter's numpy passes cover most ops; a few elementwise maps are far cheaper as compiled
loops (libm calls, a vectorized erf, fp16 widening through the CPU's conversion instructions).
Each module is compiled at most once per process; a platform without a JIT gets None and the
caller keeps its numpy path.
"""
from __future__ import annotations

import ctypes
import threading
from concurrent.futures import ThreadPoolExecutor

_lock = threading.Lock()
_helper = ThreadPoolExecutor(max_workers=1)  # the second thread of ``over_two_threads``
_SPLIT = 1 << 16  # ranges at least this long are split over two threads
_engines: list = []  # the JIT engines stay alive for the life of the process: their code is called later
_MAP = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)  # (in, out, n)


def _host_machine(opt: int):
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=opt)


def compile_maps(source: str, names: list[str], symbols: dict[str, int] | None = None) -> dict | None:
    """Compiles LLVM IR ``source`` whose functions ``names`` are ``void (ptr in, ptr out, i64 n)``
    loops, optimized and vectorized for this CPU. ``symbols``: external functions the code calls,
    by name and address. Returns {name: ctypes function}, or None where no JIT is available."""
    try:
        import llvmlite.binding as llvm

        with _lock:
            machine = _host_machine(opt=3)
            for name, address in (symbols or {}).items():
                llvm.add_symbol(name, address)
            module = llvm.parse_assembly(source)
            module.verify()
            options = llvm.create_pipeline_tuning_options(speed_level=3)
            options.loop_vectorization = True
            options.slp_vectorization = True
            builder = llvm.create_pass_builder(machine, options)
            builder.getModulePassManager().run(module, builder)
            engine = llvm.create_mcjit_compiler(module, machine)
            engine.finalize_object()
            _engines.append(engine)
            return {name: _MAP(engine.get_function_address(name)) for name in names}
    except Exception:  # noqa: BLE001 - no JIT on this platform: the callers fall back to numpy
        return None


class CompiledMaps:
    """``compile_maps`` done on first use, from a function that builds the IR."""

    def __init__(self, build_source, names: list[str]):
        self._build, self._names = build_source, names
        self._loops = None
        self._done = False
        self._lock = threading.Lock()

    def get(self, name: str):
        """The compiled loop ``name``, or None where no JIT is available."""
        if not self._done:
            with self._lock:
                if not self._done:
                    self._loops = compile_maps(self._build(), self._names)
                    self._done = True
        return None if self._loops is None else self._loops[name]


def map_loop(name: str, in_type: str, out_type: str, body: str, result: str, declarations: str = "") -> str:
    """The IR of ``void name(ptr in, ptr out, i64 n)``: for each i, ``%x`` = in[i], then ``body``
    (IR lines computing ``result`` from %x), then out[i] = result."""
    return f"""{declarations}
define void @{name}(ptr noalias %in, ptr noalias %out, i64 %n) {{
entry:
  %nonempty = icmp sgt i64 %n, 0
  br i1 %nonempty, label %loop, label %done
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %src = getelementptr {in_type}, ptr %in, i64 %i
  %x = load {in_type}, ptr %src
{body}
  %dst = getelementptr {out_type}, ptr %out, i64 %i
  store {out_type} {result}, ptr %dst
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}}
"""


def over_two_threads(run, n: int) -> None:
    """``run(start, stop)`` over ``[0, n)``: at once below ``_SPLIT``, else in two halves on two
    threads (``run`` calls a compiled loop through ctypes, which releases the GIL)."""
    if n < _SPLIT:
        if n:
            run(0, n)
        return
    half = n // 2
    first = _helper.submit(run, 0, half)
    run(half, n)
    first.result()
