"""``triton.knobs``: the settings objects Triton scripts and test suites read, assign and scope.

Each group (``knobs.cache``, ``knobs.compilation``, ``knobs.autotuning``, ``knobs.runtime``,
``knobs.language``) has attributes that read an environment variable until a value is assigned
to them; ``group.scope()`` restores on exit whatever was assigned inside it, ``group.reset()``
forgets the assignments, ``group.copy()`` gives an independent copy.

What tritium acts on -- these knobs are the state ``tritium.config`` reads, so assigning one is
what the matching setting returns: ``cache.dir``, once assigned, is the folder of tritium's
on-disk caches in place of ``TRITIUM_CACHE_DIR`` (see ``config.cache_dir`` for the order);
``runtime.backend`` (``TRITIUM_BACKEND``) names the backend every launch runs on (unset: the one
serving the data's device); ``runtime.debug`` (``TRITIUM_DEBUG``, else Triton's ``TRITON_DEBUG``)
turns on debug mode; ``compilation.dump`` (``TRITIUM_DUMP``) lists the stages printed while
compiling; ``compilation.always_compile`` (``TRITON_ALWAYS_COMPILE``) ignores compiled kernels
stored on disk; ``runtime.launch_enter_hook`` / ``launch_exit_hook`` (chains of hooks, ``.add``/``.remove``, or a
function assigned) are called around every launch with its metadata, ``kernel_load_start_hook`` /
``kernel_load_end_hook`` around every compilation, ``jit_cache_hook`` / ``jit_post_compile_hook`` on
every kernel-cache miss; ``language.fp32_default`` (``TRITON_F32_DEFAULT``) is the precision of fp32
``tl.dot`` calls that name none, read when a kernel is compiled (a new value compiles the kernel
again); ``runtime.interpret`` is True (tritium runs kernels on the host without a GPU). The other knobs
(``build``, ``nvidia``, ``amd``, ``proton`` among them) are kept and returned, for code that reads
them, but change nothing here.

The machinery is Triton's: a knob is a descriptor (``env_str``, ``env_bool``, ``env_int``,
``env_opt_str``, ``env_opt_bool``, ``env_class``) naming its environment variable (``.key``);
``group.knobs`` is the dict of a group's values and ``group.knob_descriptors`` its descriptors;
assigning ``knobs.env`` (or ``del``, or ``reset()``) forgets an assignment; while ``propagate_env``
is True (the default) an assignment is also written to the environment variable, so that child
processes see it -- forgetting the assignment then leaves the variable set (as in Triton): only
``group.scope()`` puts the variables back as well.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any




_TRUE = frozenset({"1", "true", "yes", "on", "y"})


def _parse_bool(text: str) -> bool:
    return text.strip().lower() in _TRUE


class _Env:
    """``knobs.env``: assigned to a knob, makes it read its environment variable again."""

    def __repr__(self) -> str:
        return "triton.knobs.env"


env = _Env()
propagate_env = True  # assignments are written to the knob's environment variable too


def refresh_knobs() -> None:
    """Triton re-reads knobs computed once from the environment; every tritium knob reads the
    environment whenever it is not assigned, so there is nothing to refresh."""


_ENVIRON_KEYS: dict = {}


def environ_get(name: str, default=None):
    """``os.environ.get(name, default)`` without the mapping layer's encode and decode of every key
    (each launch reads several settings; that layer cost microseconds per read). Reads the same
    dictionary ``os.environ`` writes (``monkeypatch.setenv`` included)."""
    environ = os.environ
    data = getattr(environ, "_data", None)
    if data is None or not hasattr(environ, "encodekey"):
        return environ.get(name, default)
    key = _ENVIRON_KEYS.get(name)
    if key is None:
        key = _ENVIRON_KEYS[name] = environ.encodekey(name)
    raw = data.get(key)
    return default if raw is None else environ.decodevalue(raw)

_ENVIRON_KEY_TUPLES: dict = {}


def environ_values(names: tuple) -> tuple:
    """The raw values (None where unset) of the environment variables ``names``, in one call: a
    key that changes whenever one of them changes (``monkeypatch.setenv`` included)."""
    environ = os.environ
    if type(environ) is not os._Environ:  # replaced by a mapping of another kind
        return tuple(environ.get(name) for name in names)
    data = environ._data
    keys = _ENVIRON_KEY_TUPLES.get(names)
    if keys is None:
        keys = _ENVIRON_KEY_TUPLES[names] = tuple(environ.encodekey(name) for name in names)
    return tuple(map(data.get, keys))


class env_base:
    """A knob: reads the environment variable ``key`` (after the variables ``also``, tritium's
    names, when set) until a value is assigned; ``default`` (a value, or a function of the group)
    when none is set."""

    def __init__(self, key, default: Any = None, also: tuple = ()):
        self.key = key
        self.also = tuple(also)
        self.default = default
        self.variables = tuple(v for v in (*self.also, key) if v)  # read in this order

    def __set_name__(self, owner, name):
        self.name = name

    def from_env(self, text: str) -> Any:
        return text

    def to_env(self, value) -> str:
        return str(value)

    def get(self, group=None) -> Any:
        """The value the environment (or the default) gives."""
        for variable in self.variables:
            text = environ_get(variable)
            if text is not None:
                return self.from_env(text)
        return self.default(group) if callable(self.default) else self.default

    def __get__(self, group, owner=None):
        if group is None:
            return self
        if self.name in group.__dict__:
            return group.__dict__[self.name]
        return self.get(group)

    def __set__(self, group, value):
        if value is env:
            group.__dict__.pop(self.name, None)
            return
        group.__dict__[self.name] = value
        if propagate_env and self.key and value is not None:
            os.environ[self.key] = self.to_env(value)

    def __delete__(self, group):
        group.__dict__.pop(self.name, None)


class env_str(env_base):
    pass


class env_opt_str(env_base):
    def __init__(self, key, also: tuple = ()):
        super().__init__(key, None, also)


class env_bool(env_base):
    def __init__(self, key, default=False, also: tuple = ()):
        super().__init__(key, default, also)

    def from_env(self, text: str) -> bool:
        return _parse_bool(text)

    def to_env(self, value) -> str:
        return "1" if value else "0"


class env_opt_bool(env_bool):
    def __init__(self, key, also: tuple = ()):
        super().__init__(key, None, also)


class env_int(env_base):
    def __init__(self, key, default=0, also: tuple = ()):
        super().__init__(key, default, also)

    def from_env(self, text: str) -> int:
        return int(text)


class env_class(env_base):
    """A class named ``module:Name`` in the environment (a cache manager, say)."""

    def __init__(self, key, type_name: str = "class"):
        super().__init__(key, None)
        self.type_name = type_name

    def from_env(self, text: str):
        import importlib

        module, _, name = text.partition(":")
        return getattr(importlib.import_module(module), name)

    def to_env(self, value) -> str:
        return f"{value.__module__}:{value.__qualname__}"


class _hook(env_base):
    """A knob with no environment variable (a function code assigns)."""

    def __init__(self):
        super().__init__(None, None)


class HookChain:
    """Hooks of one kind, called in the order they were added (``reversed``: the opposite order, as
    Triton calls its exit hooks, so that nested hooks unwind). ``add`` ignores a hook already there."""

    def __init__(self, reversed: bool = False):
        self.calls: list = []
        self.reversed = reversed

    def add(self, func) -> None:
        if func not in self.calls:
            self.calls.append(func)

    def remove(self, func) -> None:
        if func in self.calls:
            self.calls.remove(func)

    def __call__(self, *args, **kwargs) -> None:
        for call in (self.calls[::-1] if self.reversed else list(self.calls)):
            call(*args, **kwargs)

    def __repr__(self) -> str:
        return f"HookChain({self.calls!r}, reversed={self.reversed})"


class _hook_chain(env_base):
    """A knob holding a ``HookChain`` (``knobs.runtime.launch_enter_hook.add(f)``), one per knob and
    shared by copies of the group, as in Triton. Assigning a function (or None) in its place is
    accepted, as Triton accepts it: that function is then the only hook until the assignment is
    forgotten (``reset()``, ``del``, the end of a ``scope()``)."""

    def __init__(self, reversed: bool = False):
        super().__init__(None, None)
        self.chain = HookChain(reversed)

    def get(self, group=None):
        return self.chain


def active_hook(group, name: str):
    """What ``group.<name>`` would call, or None when it would call nothing (an empty chain, None):
    the launch path asks this before building the hooks' metadata."""
    value = group.__dict__.get(name, _NOT_ASSIGNED)
    if value is _NOT_ASSIGNED:
        value = getattr(type(group), name).chain
    if value is None or (type(value) is HookChain and not value.calls):
        return None
    return value


_NOT_ASSIGNED = object()


class LaunchMetadata(dict):
    """What launch hooks receive: the launch's ``name``, ``function``, ``stream``, ``grid`` and
    ``backend``. As Triton's ``LazyDict``, ``.get()`` without a key returns them as a dict with what
    the kernel's ``@jit(launch_metadata=f)`` function adds (``f(grid, kernel_metadata, args)``,
    called once, on first use); indexing it reads the same values."""

    def __init__(self, data, extra=None):
        super().__init__(data)
        self._extra = extra  # (function, its arguments), or None

    @classmethod
    def of(cls, kernel, grid, stream, values: dict) -> LaunchMetadata:
        """A compiled kernel's launch on ``grid`` with arguments ``values`` (parameter name -> value):
        the kernel's @jit ``launch_metadata`` function is called as Triton calls it,
        ``launch_metadata(grid, kernel.metadata, {parameter name: value})``."""
        metadata = cls({"name": kernel.name, "function": getattr(kernel, "function", None), "stream": stream,
                        "grid": tuple(grid), "backend": kernel.backend})
        extra = getattr(kernel.fn, "launch_metadata", None)
        if extra is not None:
            metadata.add(extra, (tuple(grid), kernel.metadata, dict(values)))
        return metadata

    def _resolve(self) -> None:
        if self._extra is not None:
            function, args = self._extra
            self._extra = None
            self.update(function(*args) or {})

    def add(self, function, args) -> None:
        self._resolve()
        self._extra = (function, args)

    def get(self, *key_and_default):
        self._resolve()
        if not key_and_default:
            return dict(self)
        return super().get(*key_and_default)

    def __getitem__(self, key):
        self._resolve()
        return super().__getitem__(key)


class NvidiaTool:
    """A CUDA tool's path, as ``knobs.nvidia.ptxas`` and its kin give it."""

    def __init__(self, path: str):
        self.path = path

    def __repr__(self) -> str:
        return f"NvidiaTool({self.path!r})"


class env_nvidia_tool(env_base):
    """``TRITON_<NAME>_PATH``, else the tool the CUDA backend would run (on the PATH or from the
    nvidia-cuda-nvcc package), else None."""

    def __init__(self, binary: str):
        super().__init__(f"TRITON_{binary.upper()}_PATH", lambda group: _find_nvidia_tool(binary))
        self.binary = binary

    def from_env(self, text: str) -> NvidiaTool:
        return NvidiaTool(text)

    def __get__(self, group, owner=None):
        value = super().__get__(group, owner)
        return NvidiaTool(value) if isinstance(value, str) else value

    def to_env(self, value) -> str:
        return value.path if isinstance(value, NvidiaTool) else str(value)


def _find_nvidia_tool(binary: str):
    from .backends.cuda.nvptx import tool_path

    found = tool_path(binary)
    return None if found is None else NvidiaTool(found)


class base_knobs:
    """A group of knobs."""

    @property
    def knob_descriptors(self) -> dict:
        """Knob name -> its descriptor, this group's and its bases'."""
        found = {}
        for klass in reversed(type(self).__mro__):
            found.update({name: value for name, value in vars(klass).items() if isinstance(value, env_base)})
        return found

    @property
    def knobs(self) -> dict:
        """Knob name -> its value now."""
        return {name: getattr(self, name) for name in self.knob_descriptors}

    def is_set(self, name: str) -> bool:
        """Whether ``name`` was assigned (rather than read from the environment or its default)."""
        return name in self.__dict__

    def copy(self):
        other = type(self)()
        other.__dict__.update(self.__dict__)
        return other

    def reset(self):
        self.__dict__.clear()
        return self

    @contextlib.contextmanager
    def scope(self):
        """Restores on exit the assignments and the knobs' environment variables as they were."""
        saved = dict(self.__dict__)
        keys = {d.key for d in self.knob_descriptors.values() if d.key}
        environment = {key: os.environ.get(key) for key in keys}
        try:
            yield
        finally:
            self.__dict__.clear()
            self.__dict__.update(saved)
            for key, value in environment.items():
                if value is None:
                    os.environ.pop(key, None)
                elif os.environ.get(key) != value:
                    os.environ[key] = value


class build_knobs(base_knobs):
    cc = env_opt_str("CC")
    cudacrt_path = env_opt_str("TRITON_CUDACRT_PATH")
    cudart_path = env_opt_str("TRITON_CUDART_PATH")

    @property
    def backend_dirs(self) -> set:
        return {path for path in (self.cudacrt_path, self.cudart_path) if path is not None}


class cache_knobs(base_knobs):
    home_dir = env_str("TRITON_HOME", lambda group: os.path.expanduser("~/"))
    dir = env_str("TRITON_CACHE_DIR", lambda group: os.path.join(group.home_dir, ".triton", "cache"))
    dump_dir = env_str("TRITON_DUMP_DIR", lambda group: os.path.join(group.home_dir, ".triton", "dump"))
    override_dir = env_str("TRITON_OVERRIDE_DIR", lambda group: os.path.join(group.home_dir, ".triton", "override"))
    manager_class = env_class("TRITON_CACHE_MANAGER", "CacheManager")
    remote_manager_class = env_class("TRITON_REMOTE_CACHE_BACKEND", "RemoteCacheBackend")


class compilation_knobs(base_knobs):
    override = env_bool("TRITON_KERNEL_OVERRIDE")
    dump_ir = env_bool("TRITON_KERNEL_DUMP")
    store_binary_only = env_bool("TRITON_STORE_BINARY_ONLY")
    always_compile = env_bool("TRITON_ALWAYS_COMPILE")
    dump = env_str("TRITIUM_DUMP", "")  # tritium's: comma-separated stage names (config.dump_stages)
    use_ir_loc = env_opt_str("USE_IR_LOC")
    enable_asan = env_bool("TRITON_ENABLE_ASAN")
    disable_line_info = env_bool("TRITON_DISABLE_LINE_INFO")
    front_end_debugging = env_bool("TRITON_FRONT_END_DEBUGGING")
    allow_non_constexpr_globals = env_bool("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS")
    listener = _hook()


class autotuning_knobs(base_knobs):
    cache = env_bool("TRITON_CACHE_AUTOTUNING")
    print = env_bool("TRITON_PRINT_AUTOTUNING")
    listener = _hook()


class runtime_knobs(base_knobs):
    interpret = env_bool(None, True)  # tritium runs kernels on the host, whatever TRITON_INTERPRET says
    debug = env_bool("TRITON_DEBUG", also=("TRITIUM_DEBUG",))
    backend = env_str("TRITIUM_BACKEND", "")  # tritium's: a backend name (config.backend_name)
    override_arch = env_opt_str("TRITON_OVERRIDE_ARCH")
    # called with the launch's metadata (a LaunchMetadata) before and after every launch, as Triton calls
    # them: hooks are added to the chains (profilers such as proton add theirs), or a function assigned
    launch_enter_hook = _hook_chain()
    launch_exit_hook = _hook_chain(reversed=True)
    # called with (module, function, name, metadata_group, hash) when a kernel is compiled or loaded
    # from the disk cache, before (module and function None) and after
    kernel_load_start_hook = _hook_chain()
    kernel_load_end_hook = _hook_chain(reversed=True)
    # called with key=, repr=, fn=, compile=, is_manual_warmup=, already_compiled= on a kernel-cache
    # miss, before compiling (a true result skips the compilation and the launch) and after
    jit_cache_hook = _hook()
    jit_post_compile_hook = _hook()


class language_knobs(base_knobs):
    default_fp_fusion = env_bool("TRITON_DEFAULT_FP_FUSION", True)
    # the input_precision of fp32 tl.dot calls that give none ("tf32", "tf32x3" or "ieee");
    # unset, "tf32", as on NVIDIA GPUs
    fp32_default = env_opt_str("TRITON_F32_DEFAULT")


class nvidia_knobs(base_knobs):
    ptxas = env_nvidia_tool("ptxas")
    cuobjdump = env_nvidia_tool("cuobjdump")
    nvdisasm = env_nvidia_tool("nvdisasm")
    dump_nvptx = env_bool("NVPTX_ENABLE_DUMP")
    disable_ptxas_opt = env_bool("DISABLE_PTXAS_OPT")
    ptxas_options = env_opt_str("PTXAS_OPTIONS")
    mock_ptx_version = env_opt_str("TRITON_MOCK_PTX_VERSION")
    libdevice_path = env_opt_str("TRITON_LIBDEVICE_PATH")
    libcuda_path = env_opt_str("TRITON_LIBCUDA_PATH")


class amd_knobs(base_knobs):
    use_buffer_ops = env_bool("AMDGCN_USE_BUFFER_OPS", True)
    dump_amdgcn = env_bool("AMDGCN_ENABLE_DUMP")
    libhip_path = env_opt_str("TRITON_LIBHIP_PATH")
    global_prefetch = env_int("TRITON_HIP_GLOBAL_PREFETCH")
    local_prefetch = env_int("TRITON_HIP_LOCAL_PREFETCH")
    use_block_pingpong = env_opt_bool("TRITON_HIP_USE_BLOCK_PINGPONG")
    use_in_thread_transpose = env_opt_bool("TRITON_HIP_USE_IN_THREAD_TRANSPOSE")


class proton_knobs(base_knobs):
    cupti_lib_dir = env_opt_str("TRITON_CUPTI_LIB_PATH")
    enable_nvtx = env_bool("TRITON_ENABLE_NVTX", True)


_ENTER_CHAIN = runtime_knobs.launch_enter_hook.chain
_EXIT_CHAIN = runtime_knobs.launch_exit_hook.chain


def launch_hooked(group) -> bool:
    """Whether a launch would call a launch hook of ``group`` (``knobs.runtime``): the launch fast
    path's test, a few dictionary reads when nothing is assigned."""
    if not group.__dict__:
        return bool(_ENTER_CHAIN.calls or _EXIT_CHAIN.calls)
    return active_hook(group, "launch_enter_hook") is not None or active_hook(group, "launch_exit_hook") is not None


build = build_knobs()
cache = cache_knobs()
compilation = compilation_knobs()
autotuning = autotuning_knobs()
runtime = runtime_knobs()
language = language_knobs()
nvidia = nvidia_knobs()
amd = amd_knobs()
proton = proton_knobs()
