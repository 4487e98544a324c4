"""What a backend is: the ``Backend`` protocol, its ``Options`` record, ``GPUTarget``, and
``BaseBackend``, the compiler-backend object code written for Triton asks for.

A backend turns the tile IR (``compiler.ir.ops.Function``) into an ``Executable`` and launches
it. It says which devices' memory it serves, parses launch options into a frozen, hashable
``Options`` record (part of every cache key), and lists its stages: each stage's output is kept in
``executable.asm[stage]`` (printable with ``tritium ir --stage NAME``). Backends import the
compiler's IR and nothing of the runtime; the runtime finds them through ``registry``.
"""
from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, NamedTuple, Optional, Protocol, Sequence, Union

from ..compiler.ir.ops import Function
from ..errors import LaunchError, LaunchOptionError


@dataclass(frozen=True)
class GPUTarget:
    """What code is generated for: ``backend`` (the device kind: 'cpu' or 'cuda'), ``arch`` and
    ``warp_size``.

    Triton calls it GPUTarget whatever the device; scripts compare ``target.backend`` with
    "cuda" or "hip", and both are false on tritium's CPU driver.
    """

    backend: str
    arch: Union[int, str]
    warp_size: int


@dataclass(frozen=True)
class Options:
    """The launch options Triton accepts, as one frozen, hashable record; a backend may subclass it.

    Different options compile separately (the record is part of every cache key), so a backend
    must keep here only what changes its code: the interpreter records ``num_warps`` and the like
    (they are reported in ``kernel.metadata``) but applies ``debug`` per launch, so its record
    always holds ``debug=None``. The last three fields are HIP's, which autotune configs written
    for AMD GPUs carry.
    """

    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: Optional[int] = None
    enable_fp_fusion: bool = True
    debug: Optional[bool] = None
    sanitize_overflow: bool = True
    launch_cooperative_grid: bool = False
    extern_libs: tuple = ()  # (name, path) pairs, sorted: a dict is not hashable
    instrumentation_mode: str = ""
    waves_per_eu: int = 0
    matrix_instr_nonkdim: int = 0
    kpack: int = 1

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))


def source_digest(folder) -> str:
    """A digest of the Python sources that decide what a backend generates: its folder, the
    backends' shared modules (``backends/*.py``: the error records' layout, for one), ``backends/llvm/``,
    the analyses and the IR (``compiler/analysis``, ``compiler/ir``: an analysis may change the code
    generated for the same IR text) and ``numerics/``, so compiled kernels cached on disk never
    outlive a change to them."""
    import hashlib
    import pathlib

    here = pathlib.Path(folder).resolve()
    package = here.parent.parent
    trees = (here, here.parent / "llvm", package / "compiler" / "analysis", package / "compiler" / "ir",
             package / "numerics")  # with their subfolders (backends/llvm/math/)
    files = sorted(here.parent.glob("*.py")) + [path for tree in trees for path in sorted(tree.rglob("*.py"))]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def largest_block(fn: Function) -> int:
    """The element count of the largest block value in ``fn`` (1 when it has none): how much work
    one program does, which decides how many programs a backend runs at a time."""
    from ..compiler.ir import types as T

    largest = 1
    for op in fn.walk():
        for r in op.results:
            if isinstance(r.type, T.block_type):
                largest = max(largest, r.type.numel)
    return largest


def _is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def check_options(options: Options) -> None:
    """Refuses values no backend could honour, with what to pass instead."""
    for name in ("num_warps", "num_stages", "num_ctas"):
        value = getattr(options, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            error = LaunchOptionError if name == "num_warps" else LaunchError
            raise error(f"launch option {name} must be a non-negative integer, got {value!r}")
    if not _is_power_of_two(options.num_warps):
        raise LaunchOptionError(f"num_warps must be a power of 2 (1, 2, 4, 8, 16, 32), got {options.num_warps}")
    if options.maxnreg is not None and (not isinstance(options.maxnreg, int) or options.maxnreg <= 0):
        raise LaunchError(f"maxnreg must be a positive integer or None, got {options.maxnreg!r}")


def byte_range(shape, strides, itemsize: int) -> tuple[int, int]:
    """(low, high): the bytes an array of ``shape`` with ``strides`` (in bytes) spans, from its first
    element's address; (0, 0) when it has no element."""
    if 0 in shape:
        return 0, 0
    low = sum(min(0, (n - 1) * st) for n, st in zip(shape, strides))
    high = sum(max(0, (n - 1) * st) for n, st in zip(shape, strides)) + itemsize
    return low, high


class Buffer(Protocol):
    """What a backend is given for a pointer argument: the memory facts of one tensor.

    ``address`` is the byte address the kernel's pointer holds; ``[address + low, address + high)``
    are the bytes the tensor may touch; ``keepalive`` owns them for the launch."""

    dtype: Any  # compiler.ir.types.dtype of the elements
    address: int
    low: int
    high: int
    device: str
    keepalive: Any


class KernelArgument(NamedTuple):
    """One run-time argument of a launch, in ``fn.arg_names`` order: its IR type and its value
    (a ``Buffer`` for pointers, a Python or numpy scalar otherwise)."""

    name: str
    type: Any
    value: Any


class Stages(dict):
    """An executable's stage outputs by name (``Executable.asm``); those in ``later`` (name -> a
    function making it) are made when first read (a disassembly, or the layouts of a kernel loaded
    from the disk cache, which no launch needs)."""

    def __init__(self, stages, later=None):
        super().__init__(stages)
        self._later = dict(later or {})
        for name in self._later:
            super().__setitem__(name, None)

    def __getitem__(self, name):
        value = super().__getitem__(name)
        if value is None and name in self._later:
            value = self._later.pop(name)()
            super().__setitem__(name, value)
        return value

    def get(self, name, default=None):
        return self[name] if name in self else default  # noqa: SIM401  (dict.get would skip __getitem__)

    def items(self):
        return [(name, self[name]) for name in self]

    def values(self):
        return [self[name] for name in self]


class Executable:
    """A compiled kernel a backend can launch; each backend's executable derives from this class.
    ``asm`` holds each stage's output by stage name. The members with a body here are optional: a
    backend overrides those it offers, and the runtime asks for every one of them (never probing)."""

    asm: dict
    # Bytes of shared memory a launch of it takes (a GPU backend's own figure; None: none is used).
    shared_bytes: Optional[int] = None

    def launch(self, grid: tuple[int, int, int], args: Sequence[KernelArgument], stream: Any = None, *,
               debug: bool = False) -> None:
        """Runs every program of ``grid`` (three positive dimensions) on ``args``. ``debug``: the
        launch's debug mode (the runtime resolves launch, ``@jit`` and environment settings)."""
        raise NotImplementedError

    def direct_launcher(self, arg_names: list) -> Optional[Any]:
        """A function ``launch(grid3, values)`` that launches on the argument values in ``arg_names``
        order without building ``KernelArgument`` records (the warm launch path), or None when this
        executable has none: the runtime then calls ``launch``."""
        return None

    def load(self) -> Optional[Any]:
        """Loads the code onto the current device; the loaded kernel (``handle``, ``n_regs``,
        ``n_spills``), or None for code that runs on the host (nothing to load)."""
        return None

    def when_optimized(self, callback) -> None:
        """Calls ``callback()`` once this executable's code is final (the runtime stores its cached
        stages then): at once, unless the backend compiles in tiers and replaces quick code later."""
        callback()


class Backend(abc.ABC):
    """A backend. Subclasses set the class attributes and implement ``compile``.

    ``name``: what ``TRITIUM_BACKEND`` and the registry call it. ``version``: part of the disk
    cache key; change it whenever the code it generates changes. ``devices``: the kinds of memory
    it launches on (a tensor's ``device``, e.g. "cpu"). ``stages``: the names of the outputs
    ``compile`` keeps in ``executable.asm``, in order. ``cached_stages``: those that suffice to
    rebuild the executable with ``load`` without compiling again; the runtime stores them on disk
    (empty: nothing worth caching). ``options_class``: the record ``parse_options`` builds.
    """

    name: ClassVar[str]
    version: ClassVar[str]
    devices: ClassVar[frozenset[str]]
    stages: ClassVar[tuple[str, ...]]
    cached_stages: ClassVar[tuple[str, ...]] = ()
    options_class: ClassVar[type] = Options
    # Passes of the compiler's pipeline (compiler/passes/manager.py) this backend does without: a
    # GPU backend with a tile-copy unit skips "lower_tile_access" and lowers tile_load itself.
    skipped_passes: ClassVar[tuple[str, ...]] = ()
    # Kinds of memory it launches on by copying the tensors to its device and back (the CUDA backend
    # runs kernels on host tensors this way in the test suite); ``devices`` are those it serves.
    staged_devices: ClassVar[frozenset[str]] = frozenset()
    # The fields of ``Options`` that change the code ``compile`` generates (None: all of them). The
    # others are left out of every cache key, so that an autotune over ``num_warps`` on a backend
    # that has no warps compiles one kernel.
    code_options: ClassVar[Optional[tuple[str, ...]]] = None
    # True where the math functions (exp ... erf, libdevice) give the interpreter's bits: the
    # interpreter evaluates them with this backend's code (backends/interpreter/math_functions.py).
    math_as_interpreter: ClassVar[bool] = False

    def code_key(self, options: Options) -> tuple:
        """What of ``options`` the generated code depends on (``code_options``), for cache keys."""
        names = options.names() if self.code_options is None else self.code_options
        return tuple((name, getattr(options, name)) for name in names)

    def wait_for_optimized_code(self, timeout: Optional[float] = None) -> bool:
        """Blocks until every kernel this backend launched with quick code runs its optimized code
        (a backend that compiles in tiers: the CPU backend); False when ``timeout`` seconds passed
        first. The runtime stores an executable's cached stages when it has them: executables of
        such a backend have ``when_optimized(callback)``, which calls back once they do."""
        return True

    def lowered_opcodes(self) -> frozenset[str]:
        """The IR opcodes this backend executes or lowers (its table of handlers)."""
        raise NotImplementedError(f"the {self.name} backend does not list the opcodes it lowers")

    @property
    def unsupported_opcodes(self) -> Mapping[str, str]:
        """IR opcodes this backend never runs, each with the reason: those the compiler's passes it
        does not skip rewrite away (checked against the IR spec by tests/compiler/test_ir_spec.py,
        together with ``lowered_opcodes``)."""
        from ..compiler.ir.spec import TARGET_PASS, opcodes_with
        from ..compiler.passes.manager import removed_opcodes

        unsupported = removed_opcodes(self.skipped_passes)
        why = "made only by the CUDA backend's own passes (its software pipeliner), never in the IR others receive"
        unsupported.update((opcode, why) for opcode in opcodes_with(TARGET_PASS) - self.lowered_opcodes())
        return unsupported

    def unavailable_reason(self) -> Optional[str]:
        """Why this backend cannot run here (a missing library or device), or None when it can."""
        return None

    def compile_unavailable_reason(self) -> Optional[str]:
        """Why this backend cannot compile here (it may compile where it cannot launch: no GPU)."""
        return self.unavailable_reason()

    def is_available(self) -> bool:
        return self.unavailable_reason() is None

    def parse_options(self, options: Mapping[str, Any]) -> Options:
        """The options record for a launch's options (name -> value; absent names take their
        defaults). A name the record does not have is refused, as a misspelt keyword is."""
        known = set(self.options_class.names())
        unknown = sorted(set(options) - known)
        if unknown:
            raise LaunchError(f"the {self.name} backend has no launch option {', '.join(map(repr, unknown))}; "
                              f"it takes {', '.join(sorted(known))}")
        values = dict(options)
        if "enable_fp_fusion" not in values:  # Triton's default: TRITON_DEFAULT_FP_FUSION, on unless 0
            from .. import knobs

            values["enable_fp_fusion"] = bool(knobs.language.default_fp_fusion)
        if isinstance(values.get("extern_libs"), Mapping):
            values["extern_libs"] = tuple(sorted(values["extern_libs"].items()))
        elif values.get("extern_libs") is None:
            values.pop("extern_libs", None)
        for name in ("num_warps", "num_stages", "num_ctas"):  # None means "the default", as in Triton
            if name in values and values[name] is None:
                values.pop(name)
        parsed = self.options_class(**values)
        check_options(parsed)
        return parsed

    def declines(self, fn: Function) -> bool:
        """True when this backend, chosen as the default for the memory (``TRITIUM_BACKEND`` names
        none), leaves ``fn`` to the interpreter: a kernel it runs correctly but less safely."""
        return False

    def default_target(self) -> GPUTarget:
        """The target ``compile`` gets when the caller names none."""
        import platform

        return GPUTarget(sorted(self.devices)[0], platform.machine() or "unknown", 32)

    @abc.abstractmethod
    def compile(self, fn: Function, options: Options, target: GPUTarget) -> Executable:
        """The executable of ``fn`` (already verified and optimized) for ``options`` and ``target``."""

    def load(self, fn: Function, asm: Mapping[str, Union[str, bytes]], options: Options,
             target: GPUTarget) -> Executable:
        """Rebuilds an executable from the ``cached_stages`` outputs a previous ``compile`` kept.
        Only backends with cached stages need it."""
        raise NotImplementedError(f"the {self.name} backend caches nothing on disk")

    def copy_to_host(self, host_address: int, device_address: int, nbytes: int) -> None:
        """Copies ``nbytes`` of this backend's device memory to host memory (``TRITIUM_VALIDATE``
        compares a device launch's results this way). Backends of host memory have nothing to copy."""
        raise NotImplementedError(f"the {self.name} backend has no device memory to copy from")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.version} serving {sorted(self.devices)}>"


# Triton's view of a compiler backend ------------------------------------------------------------
class BaseBackend:
    """The compiler backend for ``target`` (a ``GPUTarget``): ``hash()``, ``parse_options(opts)``
    (the serving backend's options record: ``num_warps``, ``num_stages``, ``extern_libs``...),
    ``binary_ext`` (the name of the stage that is the compiled binary), ``pack_metadata``,
    ``get_codegen_implementation`` / ``get_module_map`` (none: tritium's language has no
    target-specific modules) and ``get_arg_specialization`` (Triton's 16-byte rule)."""

    def __init__(self, target: GPUTarget):
        self.target = target

    @staticmethod
    def supports_target(target: GPUTarget) -> bool:
        from . import registry

        try:
            registry.for_device(target.backend)
        except Exception:
            return False
        return True

    def _backend(self):
        from .. import config
        from . import registry

        return registry.for_device(self.target.backend, config.backend_name() or None)

    @property
    def name(self) -> str:
        return self._backend().name

    @property
    def binary_ext(self) -> str:
        return self._backend().stages[-1]

    def hash(self) -> str:
        from ..compiler.compiler import triton_key

        backend = self._backend()
        return f"{triton_key()}-{backend.name}-{backend.version}-{self.target.backend}-{self.target.arch}"

    def parse_options(self, options: dict) -> Any:
        backend = self._backend()
        known = {k: v for k, v in dict(options).items() if k in type(backend.parse_options({})).names()}
        return backend.parse_options(known)

    def pack_metadata(self, metadata) -> tuple:
        return (getattr(metadata, "num_warps", 4), getattr(metadata, "num_ctas", 1), getattr(metadata, "shared", 0))

    def get_codegen_implementation(self, options=None) -> dict:
        return {}

    def get_module_map(self) -> dict:
        return {}

    def load_dialects(self, context) -> None:
        """Triton registers its MLIR dialects here; tritium has none."""

    def get_arg_specialization(self, arg, ty: str, **kwargs):
        """Triton's rule: an integer or pointer divisible by 16 is specialized as such."""
        value = arg.data_ptr() if hasattr(arg, "data_ptr") else arg
        if isinstance(value, int) and not isinstance(value, bool) and value % 16 == 0:
            return "D"
        return None

    def __repr__(self) -> str:
        return f"BaseBackend({self.target})"
