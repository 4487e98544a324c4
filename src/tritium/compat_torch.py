"""What torch.compile needs of tritium besides ``import triton`` (``compat.install`` calls ``prepare``).

- Inductor compiles Triton kernels in a pool of fresh Python processes, where ``triton`` would be
  whatever is installed (or nothing): unless ``TORCHINDUCTOR_COMPILE_THREADS`` says otherwise, it is
  told to compile in this process.
- torch works out which tensors a user kernel reads and writes (what it must copy, what it may fuse)
  by building Triton's MLIR from the kernel and walking it. tritium answers from its own IR instead
  (``JITFunction.pointer_accesses``): when ``torch._higher_order_ops.triton_kernel_wrap`` is
  imported, its ``identify_accessed_tensors`` is wrapped so that tritium kernels take that path;
  anything else (and a kernel tritium cannot analyse) goes to torch's own function, whose fallback
  assumes every tensor is written. That fallback logs a warning with a traceback at every compile,
  which is dropped.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys

KERNEL_WRAP = "torch._higher_order_ops.triton_kernel_wrap"


def prepare() -> None:
    _compile_inductor_kernels_in_process()
    _quiet_torch_fallback()
    if KERNEL_WRAP in sys.modules:
        _answer_from_tritium_ir(sys.modules[KERNEL_WRAP])
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(KERNEL_WRAP, _answer_from_tritium_ir))


def _compile_inductor_kernels_in_process() -> None:
    if "TORCHINDUCTOR_COMPILE_THREADS" in os.environ:
        return
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"  # read when torch._inductor.config is imported
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        config.compile_threads = 1


class _DropFallbackWarning:
    @staticmethod
    def filter(record) -> bool:
        return not str(record.msg).startswith("Encountered an exception in identify_accessed_tensors")


def _quiet_torch_fallback() -> None:
    import logging

    logger = logging.getLogger("torch._dynamo")  # the logger triton_kernel_wrap uses
    if not any(isinstance(f, _DropFallbackWarning) for f in logger.filters):
        logger.addFilter(_DropFallbackWarning())


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``then(module)`` once the module ``name`` has been imported (and only then: the finder
    steps aside after the first import)."""

    def __init__(self, name: str, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        inner, then = spec.loader, self.then

        class _Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return inner.create_module(spec)

            def exec_module(self, module):
                inner.exec_module(module)
                try:
                    then(module)
                except Exception as error:  # noqa: BLE001 - a torch this code does not know: leave it as it is
                    import warnings

                    warnings.warn(f"tritium could not give torch its analysis of user kernels ({error}); torch's "
                                  "own applies", RuntimeWarning, stacklevel=2)

        spec.loader = _Loader()
        return spec


def _answer_from_tritium_ir(module) -> None:
    """Wraps the analysis this torch has: ``identify_accessed_tensors`` (reads and writes, torch 2.12
    on) or ``identify_mutated_tensors`` (the written tensors' names, earlier)."""
    if hasattr(module, "identify_accessed_tensors"):
        _wrap(module, "identify_accessed_tensors", lambda found: _tensor_accesses(module, found))
    elif hasattr(module, "identify_mutated_tensors"):
        _wrap(module, "identify_mutated_tensors", lambda found: list(found[1]))


def _wrap(module, name: str, answer) -> None:
    torch_own = getattr(module, name)
    if getattr(torch_own, "__wrapped_by_tritium__", False):
        return

    def from_tritium_ir(kernel, kwargs, *rest, **more):
        found = _accesses(kernel, kwargs, rest[0] if rest else more.get("tma_descriptor_metadata"))
        return torch_own(kernel, kwargs, *rest, **more) if found is None else answer(found)

    from_tritium_ir.__wrapped_by_tritium__ = True
    from_tritium_ir.__name__ = name
    from_tritium_ir.__doc__ = torch_own.__doc__
    setattr(module, name, from_tritium_ir)


def _tensor_accesses(module, found):
    from torch._inductor.dependencies import ReadWrites, StarDep
    from torch.utils._ordered_set import OrderedSet

    reads, writes = (OrderedSet(StarDep(name) for name in names) for names in found)
    # epilogue fusion would rewrite the kernel's source: not offered
    return module.TensorAccesses(ReadWrites(reads=reads, writes=writes, index_exprs=OrderedSet()),
                                 can_fuse_epilogue=False)


_MOST_VARIANTS = 64  # autotune configs analysed before leaving the answer to torch


def _accesses(kernel, kwargs, tma_descriptor_metadata):
    """(tensor parameters read, tensor parameters written) of a tritium kernel for these arguments,
    or None where torch's own analysis should answer (not a tritium kernel, tensor descriptors made
    on the host, a kernel whose arguments tritium cannot bind or compile, too many configs). An
    autotuned kernel's answer covers every config; heuristics are computed as a launch does."""
    import torch

    from .runtime.autotuner import Autotuner, Heuristics
    from .runtime.jit import JITFunction

    if tma_descriptor_metadata:
        return None
    tensors, values = set(), {}
    for name, value in kwargs.items():
        dtype = _tensor_dtype(value)
        if dtype is not None:
            tensors.add(name)
            with torch._C._DisableTorchDispatch():  # a real tensor of its dtype, even under fake tensors
                value = torch.empty(2, dtype=dtype)
        elif _is_symbolic(value):
            value = 2  # a size only known at run time: any integer that is not 1 specializes alike
        values[name] = value
    variants = [values]
    try:
        while not isinstance(kernel, JITFunction):
            if isinstance(kernel, Autotuner):
                variants = [{**v, **config.kwargs} for v in variants for config in kernel.configs or [None]
                            if config is not None] or variants
            elif isinstance(kernel, Heuristics):
                for v in variants:
                    for name, compute in kernel.values.items():
                        v[name] = compute(dict(v))
            elif not hasattr(kernel, "fn"):
                return None
            kernel = kernel.fn
        if len(variants) > _MOST_VARIANTS:
            return None
        reads, writes = set(), set()
        for v in variants:
            found = kernel.pointer_accesses(**{k: x for k, x in v.items() if k in kernel.arg_names})
            reads.update(found[0])
            writes.update(found[1])
    except Exception:  # noqa: BLE001 - a kernel this analysis cannot compile: torch's own analysis applies
        return None
    order = [name for name in kernel.arg_names if name in tensors]
    return [n for n in order if n in reads], [n for n in order if n in writes]


def _tensor_dtype(value):
    import torch

    if isinstance(value, torch.Tensor):
        return value.dtype
    get_dtype = getattr(value, "get_dtype", None)  # Inductor's TensorBox
    if get_dtype is not None and type(value).__module__.startswith("torch._inductor"):
        try:
            return get_dtype()
        except Exception:  # noqa: BLE001 - an Inductor node without a dtype yet
            return None
    return None


def _is_symbolic(value) -> bool:
    import torch

    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return True
    return type(value).__module__.startswith("sympy")
