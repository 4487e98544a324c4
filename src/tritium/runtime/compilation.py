"""Building a launchable kernel: the compiler's IR, the backend's executable (from the disk cache
when the backend keeps stages there), and ``tritium.compile``, which does it without a launch."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from .. import config, knobs
from ..errors import NotLoweredError, TritonError, internal_error, note_interpreter_fallback
from ..backends import registry
from ..backends.base import Backend, BaseBackend, GPUTarget, Options
from ..compiler import CompiledKernel, compile_ir
from ..compiler.compiled_kernel import kernel_hash
from ..compiler import compiler as _triton_compiler_module
from ..compiler.passes.manager import skipped_without_fusion
from ..compiler.source import ASTSource
from . import cache
from .launch import launch_direct, launch_protocol, parse_options


def _executable(backend: Backend, fn, options: Options, target: GPUTarget):
    """``backend.compile``, or for a backend with cached stages, their stored outputs when a
    previous compilation of the same IR, backend version, code-changing options and target left them
    on disk."""
    if not backend.cached_stages:
        return backend.compile(fn, options, target)
    key = cache.kernel_key(str(fn), backend.name, backend.version, backend.code_key(options), target)
    if not knobs.compilation.always_compile:
        stored = cache.load_stages(key, backend.cached_stages)
        if stored is not None:
            return backend.load(fn, stored, options, target)
    executable = backend.compile(fn, options, target)
    root = config.cache_dir()  # where the stages go, even when they are stored later

    def store() -> None:
        cache.store_stages(key, {stage: executable.asm[stage] for stage in backend.cached_stages}, root)

    executable.when_optimized(store)  # code that is replaced later is stored then
    return executable


def _dump_stages(name: str, asm: Mapping) -> None:
    """``TRITIUM_DUMP=<stage>``: a backend stage's output on stderr (``ir`` is the compiler's)."""
    for stage in sorted(config.dump_stages() & set(asm)):
        output = asm[stage]
        text = output if isinstance(output, str) else f"<{len(output)} bytes>"
        print(f"// {stage} of {name}\n{text}", file=sys.stderr)


def _chosen_by_default(backend: Backend) -> bool:
    """True when ``backend`` runs host memory and was chosen as the first serving it, not named by
    TRITIUM_BACKEND: the interpreter may then take a kernel over from it."""
    return not config.backend_name() and backend.name != "interpreter" and "cpu" in backend.devices


def _on_the_interpreter(kernel_fn, specs, attrs, options: Options, key, target):
    interpreter = registry.get("interpreter")
    return build(kernel_fn, specs, attrs, interpreter, interpreter.parse_options(options.as_dict()), key, target)


def build(kernel_fn, specs: dict, attrs: dict, backend: Backend, options: Options, key: tuple,
          target: Optional[GPUTarget] = None) -> CompiledKernel:
    """The compiled kernel of ``kernel_fn`` (a JITCallable) for ``specs`` and ``attrs`` (see
    ``compiler.compile_ir``) on ``backend``; launchable with ``kernel[grid](...)``."""
    try:
        skipped = backend.skipped_passes + skipped_without_fusion(getattr(options, "enable_fp_fusion", True))
        compiled_ir = compile_ir(kernel_fn, specs, attrs, skipped, backend.stages,
                                 num_warps=getattr(options, "num_warps", 4) or 4)
    except TritonError:
        raise
    except Exception as error:  # not the kernel's mistake: the compiler's
        raise internal_error(error, kernel=kernel_fn.__name__, loc=None, opcode="",
                             where="the compiler") from error
    if _chosen_by_default(backend) and backend.declines(compiled_ir.function):
        return _on_the_interpreter(kernel_fn, specs, attrs, options, key, target)
    for text in compiled_ir.static_output:
        sys.stdout.write(text)
    name = _kernel_name(kernel_fn, specs)
    start = knobs.active_hook(knobs.runtime, "kernel_load_start_hook")
    if start is not None:  # Triton's (module, function, name, metadata_group, hash); tritium keeps no files
        start(None, None, name, {}, kernel_hash(name, key, backend.name, options))
    try:
        executable = _executable(backend, compiled_ir.function, options, target or backend.default_target())
    except NotLoweredError as error:
        if not _chosen_by_default(backend):
            raise  # asked for by name, or for memory the interpreter cannot reach: its refusal stands
        note_interpreter_fallback(kernel_fn.__name__, backend.name, error)
        return _on_the_interpreter(kernel_fn, specs, attrs, options, key, target)
    target = target if target is not None else backend.default_target()
    kernel = CompiledKernel(name, key, compiled_ir.function, executable, backend.name, options, target,
                            fn=kernel_fn, specs=dict(specs), launcher=launch_direct,
                            protocol_launcher=launch_protocol)
    _dump_stages(kernel.name, executable.asm)
    end = knobs.active_hook(knobs.runtime, "kernel_load_end_hook")
    if end is not None:
        end(None, kernel.function, kernel.name, {}, kernel.hash)
    return kernel


@dataclass(frozen=True)
class Specialization:
    """What ``@jit(repr=f)`` hands ``f``, as Triton does: ``signature`` (parameter name -> Triton's type
    string: "i32", "u64", "fp32", "*fp16", or "constexpr") and ``constants`` (name -> value, for the
    constexpr parameters and the integers specialized because they equal 1)."""

    signature: dict
    constants: dict


def _type_text(spec) -> str:
    from ..compiler.ir import types as T

    if isinstance(spec, T.pointer_type):
        return "*" + _type_text(spec.element_ty)
    return {"int1": "i1"}.get(spec.name, spec.ir_name.replace("ui", "u") if hasattr(spec, "ir_name") else str(spec))


def _kernel_name(kernel_fn, specs: dict) -> str:
    """The compiled kernel's name: the function's, or what ``@jit(repr=f)`` makes of the specialization."""
    make = getattr(kernel_fn, "repr", None)
    if make is None:
        return kernel_fn.__name__
    from ..language.core import constexpr

    signature, constants = {}, {}
    for name, spec in specs.items():
        if isinstance(spec, constexpr):
            signature[name] = "constexpr"
            constants[name] = spec.value
        else:
            try:
                signature[name] = _type_text(spec)
            except AttributeError:
                signature[name] = str(spec)
    return str(make(Specialization(signature, constants)))


def _backend_for_target(target: Any) -> Backend:
    requested = config.backend_name() or None
    if target is None:
        return registry.for_device("cpu", requested)
    device = target.backend if isinstance(target, GPUTarget) else str(target)
    return registry.for_compiling(device, requested)


def compile(src: ASTSource, target: Optional[GPUTarget] = None, options: Optional[Mapping[str, Any]] = None
            ) -> CompiledKernel:
    """Compiles ``src`` (a ``tritium.compiler.ASTSource``) for ``target`` (a ``GPUTarget``, or a device
    name; None: the host CPU) with launch ``options`` (num_warps, ...), launching nothing. The result
    launches with ``compiled[grid](*args)``; ``compiled.asm[stage]`` holds each stage's output."""
    if not isinstance(src, ASTSource):
        raise TypeError(f"tritium.compile takes a tritium.compiler.ASTSource, got {type(src).__name__}")
    backend = _backend_for_target(target)
    parsed = parse_options(backend, dict(options or {}))
    specs, attrs = src.arg_specs()
    target = target if isinstance(target, GPUTarget) else None
    kernel = build(src.fn, specs, attrs, backend, parsed, ("compile", src.hash()), target)
    kernel.source = src
    return kernel


def make_backend(target: GPUTarget) -> BaseBackend:
    """``triton.compiler.compiler.make_backend``: the compiler backend object for ``target``."""
    if not BaseBackend.supports_target(target):
        raise RuntimeError(f"no tritium backend compiles for {target}")
    return BaseBackend(target)


_triton_compiler_module.make_backend.factory = make_backend
