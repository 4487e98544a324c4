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
stored on disk; ``runtime.launch_enter_hook`` / ``launch_exit_hook``, when assigned, are called around every
launch with its metadata; ``language.fp32_default`` (``TRITON_F32_DEFAULT``) is the precision of fp32
``tl.dot`` calls that name none, read when a kernel is compiled (a new value compiles the kernel
again); ``runtime.interpret`` is True, since every kernel runs on the interpreter today. The
other knobs are kept and returned, for code that reads them, but change nothing here.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Callable


def _parse_bool(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes", "on", "y")



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


class _knob:
    """An attribute that reads the environment variable ``env`` (parsed by ``parse``; a tuple names
    several, the first one set wins) until a value is assigned to it; ``default`` (a value, or a
    function of the group) when no variable is set."""

    def __init__(self, env, default: Any = None, parse: Callable[[str], Any] = str):
        self.env = (env,) if isinstance(env, str) else tuple(env or ())
        self.default = default
        self.parse = parse

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, group, owner=None):
        if group is None:
            return self
        if self.name in group.__dict__:
            return group.__dict__[self.name]
        for variable in self.env:
            text = environ_get(variable)
            if text is not None:
                return self.parse(text)
        return self.default(group) if callable(self.default) else self.default

    def __set__(self, group, value):
        group.__dict__[self.name] = value

    def __delete__(self, group):
        group.__dict__.pop(self.name, None)


def _str(env, default=None):
    return _knob(env, default, str)


def _bool(env, default=False):
    return _knob(env, default, _parse_bool)


def _int(env, default=0):
    return _knob(env, default, int)


class base_knobs:
    """A group of knobs."""

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
        saved = dict(self.__dict__)
        try:
            yield
        finally:
            self.__dict__.clear()
            self.__dict__.update(saved)


class cache_knobs(base_knobs):
    home_dir = _str("TRITON_HOME", lambda group: os.path.expanduser("~/"))
    dir = _str("TRITON_CACHE_DIR", lambda group: os.path.join(group.home_dir, ".triton", "cache"))
    dump_dir = _str("TRITON_DUMP_DIR", lambda group: os.path.join(group.home_dir, ".triton", "dump"))
    override_dir = _str("TRITON_OVERRIDE_DIR", lambda group: os.path.join(group.home_dir, ".triton", "override"))


class compilation_knobs(base_knobs):
    override = _bool("TRITON_KERNEL_OVERRIDE")
    dump_ir = _bool("TRITON_KERNEL_DUMP")
    always_compile = _bool("TRITON_ALWAYS_COMPILE")
    dump = _str("TRITIUM_DUMP", "")  # tritium's: comma-separated stage names (config.dump_stages)
    disable_line_info = _bool("TRITON_DISABLE_LINE_INFO")
    front_end_debugging = _bool("TRITON_FRONT_END_DEBUGGING")
    allow_non_constexpr_globals = _bool("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS")
    listener = _knob(None)


class autotuning_knobs(base_knobs):
    cache = _bool("TRITON_CACHE_AUTOTUNING")
    print = _bool("TRITON_PRINT_AUTOTUNING")
    listener = _knob(None)


class runtime_knobs(base_knobs):
    interpret = _knob(None, True)
    debug = _bool(("TRITIUM_DEBUG", "TRITON_DEBUG"))
    backend = _str("TRITIUM_BACKEND", "")  # tritium's: a backend name (config.backend_name)
    override_arch = _str("TRITON_OVERRIDE_ARCH")
    # called with the launch's metadata ({"name", "function", "stream", "grid", "backend"}) before and after
    # every launch, as Triton calls them (profilers such as proton assign them)
    launch_enter_hook = _knob(None)
    launch_exit_hook = _knob(None)


class language_knobs(base_knobs):
    default_fp_fusion = _bool("TRITON_DEFAULT_FP_FUSION", True)
    # the input_precision of fp32 tl.dot calls that give none ("tf32", "tf32x3" or "ieee");
    # unset, "tf32", as on NVIDIA GPUs
    fp32_default = _str("TRITON_F32_DEFAULT")


cache = cache_knobs()
compilation = compilation_knobs()
autotuning = autotuning_knobs()
runtime = runtime_knobs()
language = language_knobs()
