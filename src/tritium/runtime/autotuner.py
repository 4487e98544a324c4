"""``triton.Config``, ``@triton.autotune`` and ``@triton.heuristics``.

Both decorators wrap a ``@jit`` kernel (or each other) and keep its launch syntax,
``kernel[grid](*args, **kwargs)``; each adds meta-parameters to the launch before passing it on:

* ``@autotune(configs, key)`` times every config the first time it meets a value of the ``key``
  arguments (and of the tensor arguments' dtypes), keeps the fastest in ``.cache`` (in memory,
  for this process) and on disk (for later processes; ``autotune_cache.py``), and
  launches with it; ``.best_config`` is the config of the last launch.
* ``@heuristics({"NAME": lambda args: ...})`` computes meta-parameters from the arguments.

A grid function sees the chosen meta-parameters (``meta["BLOCK_SIZE"]``, ``meta["num_warps"]``).
"""
from __future__ import annotations

import inspect
import os
import sys
import time
from typing import Callable, Optional

from .. import config as settings
from ..errors import CompileTimeAssertionFailure, LaunchError, OutOfResources, PTXASError
from .autotune_cache import DiskCache, _backend_name, _base_jit, device_name, source_hash  # noqa: F401
from .jit import KernelInterface

# Failures that rule a config out while tuning rather than stop the program.
_CONFIG_FAILURES = (OutOfResources, CompileTimeAssertionFailure, PTXASError)


class AutotuneConflictError(LaunchError, ValueError):
    """A launch passed a meta-parameter that the autotuner's configs set."""


class _Wrapper(KernelInterface):
    """Shared by Autotuner and Heuristics: the wrapped kernel and its parameter names."""

    def __init__(self, fn, arg_names):
        self.fn = fn
        self.arg_names = list(arg_names) if arg_names is not None else list(_base_jit(fn).arg_names)
        base = _base_jit(fn)
        self.__name__ = getattr(base, "__name__", type(self).__name__)
        self.__doc__ = getattr(base, "__doc__", None)

    def _check_names(self, names, what: str) -> None:
        unknown = [n for n in names if n not in self.arg_names]
        if unknown:
            raise LaunchError(f"{what} names {unknown}, which are not parameters of {self.__name__} "
                              f"({', '.join(self.arg_names)})")

    def _defaults(self) -> dict:
        base = _base_jit(self.fn)
        signature = getattr(base, "signature", None)
        if signature is None:
            return {}
        return {p.name: p.default for p in signature.parameters.values() if p.default is not inspect.Parameter.empty}

    def __getattr__(self, name):
        # Attributes of the underlying kernel (src, signature, params...) read through.
        if name.startswith("__") or name == "fn":
            raise AttributeError(name)
        return getattr(self.fn, name)

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)  # the JITFunction explains how to launch


class Config:
    """One point of an autotuning space: meta-parameter values (``kwargs``) and launch options.

    ``num_warps``, ``num_stages``, ``num_ctas`` and ``maxnreg`` shape GPU code; tritium accepts and
    reports them (``meta["num_warps"]``). ``pre_hook(args)`` runs before each launch with this
    config, with every argument by name (meta-parameters included).
    """

    def __init__(self, kwargs: dict, num_warps: int = 4, num_stages: int = 3, num_ctas: int = 1,
                 maxnreg: Optional[int] = None, pre_hook: Optional[Callable] = None, ir_override: Optional[str] = None):
        if not isinstance(kwargs, dict):
            raise TypeError(f"triton.Config takes a dict of meta-parameters first, got {type(kwargs).__name__}")
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook
        self.ir_override = ir_override  # a GPU IR file to compile instead of the kernel: kept, not used

    def all_kwargs(self) -> dict:
        """The meta-parameters and the launch options that are set, as launch keyword arguments."""
        options = {"num_warps": self.num_warps, "num_stages": self.num_stages, "num_ctas": self.num_ctas,
                   "maxnreg": self.maxnreg}
        return {**self.kwargs, **{k: v for k, v in options.items() if v is not None}}

    def _identity(self):
        return (tuple(sorted((k, repr(v)) for k, v in self.kwargs.items())), self.num_warps, self.num_stages,
                self.num_ctas, self.maxnreg, self.pre_hook, self.ir_override)

    def __eq__(self, other) -> bool:
        return isinstance(other, Config) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __str__(self) -> str:
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_ctas: {self.num_ctas}", f"num_stages: {self.num_stages}",
                  f"maxnreg: {self.maxnreg}"]
        if self.ir_override is not None:  # part of the identity that disk-cached results are keyed by
            parts.append(f"ir_override: {self.ir_override}")
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"Config({self})"


def _hashable(value):
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


# The progress line --------------------------------------------------------------------------------
class _Progress:
    """One line on stderr, rewritten after each config is timed: configs tried / total and the best
    so far. Shown only when stderr is a terminal and TRITIUM_AUTOTUNE_PROGRESS is not 0."""

    def __init__(self, name: str, key_text: str, total: int):
        self.enabled = settings.autotune_progress() and _is_terminal(sys.stderr)
        self.name = name
        self.key_text = key_text
        self.total = total
        self.width = 0

    def update(self, done: int, best: Optional[Config], best_time: float) -> None:
        if not self.enabled:
            return
        text = f"autotuning {self.name}({self.key_text}): {done}/{self.total} configs"
        if best is not None and best_time != float("inf"):
            text += f", best {best_time:.3f} ms with {', '.join(f'{k}={v}' for k, v in best.kwargs.items())}"
        columns = _terminal_columns()
        text = text[:columns - 1]
        sys.stderr.write("\r" + text + " " * max(0, self.width - len(text)))
        sys.stderr.flush()
        self.width = len(text)

    def close(self) -> None:
        if self.enabled and self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _terminal_columns() -> int:
    try:
        columns = os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):
        columns = 0
    return max(20, columns) if columns > 0 else 120  # a terminal that reports no size: assume a wide one


class Autotuner(_Wrapper):
    """A kernel launched with the fastest of ``configs``, chosen once per value of ``key``."""

    def __init__(self, fn, arg_names, configs, key, reset_to_zero=None, restore_value=None, pre_hook=None,
                 post_hook=None, prune_configs_by: Optional[dict] = None, warmup=None, rep=None,
                 use_cuda_graph=False, do_bench=None, cache_results=None):
        super().__init__(fn, arg_names)
        self.configs = list(configs) if configs else [Config({})]
        for config in self.configs:
            if not isinstance(config, Config):
                raise TypeError(f"autotune configs must be triton.Config objects, got {type(config).__name__}")
        self.keys = [key] if isinstance(key, str) else list(key)
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        self._check_names(self.keys, "the autotune key")
        self._check_names(self.reset_to_zero, "reset_to_zero")
        self._check_names(self.restore_value, "restore_value")
        self._set_hooks(pre_hook, post_hook)
        prune_configs_by = prune_configs_by or {}
        unknown = set(prune_configs_by) - {"perf_model", "top_k", "early_config_prune"}
        if unknown:
            raise LaunchError(f"prune_configs_by takes perf_model, top_k and early_config_prune, not {sorted(unknown)}")
        self.perf_model = prune_configs_by.get("perf_model")
        self.configs_top_k = prune_configs_by.get("top_k", 1.0)
        self.early_config_prune = prune_configs_by.get("early_config_prune")
        self.num_warmups = 25 if warmup is None else warmup
        self.num_reps = 100 if rep is None else rep
        self.use_cuda_graph = use_cuda_graph
        # None: follow TRITIUM_AUTOTUNE_CACHE (on by default); True/False: this kernel's choice.
        self.cache_results = cache_results
        self.disk_cache = DiskCache(self)
        self.user_do_bench = do_bench
        self.cache: dict[tuple, Config] = {}
        self._tuned_on: dict[tuple, str] = {}  # key -> the backend its cached answer was tuned on
        self.best_config: Optional[Config] = None
        self.configs_timings: Optional[dict] = None
        self.bench_time: float = 0.0
        self.nargs: Optional[dict] = None
        self.base_fn = _base_jit(fn).fn

    def _set_hooks(self, pre_hook, post_hook) -> None:
        """``self.pre_hook(nargs, reset_only=False)`` runs before each timed launch and, with
        ``reset_only=True``, once before the real launch that follows tuning; ``self.post_hook(nargs,
        exception)`` after each timed launch. As in Triton, a user's hook replaces the default one,
        which zeroes the ``reset_to_zero`` arguments and saves (then restores) the ``restore_value``
        ones, skipping arguments that are None. Subclasses may replace both attributes."""
        self.user_defined_pre_hook = pre_hook is not None
        self.user_defined_post_hook = post_hook is not None
        self.restore_copies: dict = {}
        if pre_hook is not None:
            self.pre_hook = pre_hook
        else:
            def default_pre_hook(nargs, reset_only=False):
                for name in self.reset_to_zero:
                    if nargs.get(name) is not None:
                        nargs[name].zero_()
                if not reset_only:
                    self.restore_copies = {name: nargs[name].clone() for name in self.restore_value
                                           if nargs.get(name) is not None}

            self.pre_hook = default_pre_hook
        if post_hook is not None:
            self.post_hook = post_hook
        else:
            def default_post_hook(nargs, exception):
                for name, saved in self.restore_copies.items():
                    nargs[name].copy_(saved)
                self.restore_copies = {}

            self.post_hook = default_post_hook

    # the key, pruning and timing -------------------------------------------------------------
    def _key(self, all_args: dict) -> tuple:
        """The tuning question as Triton keys ``.cache``: the key arguments' values and the tensors'
        dtypes (the backend the answer holds for is kept beside it: ``_tuned_on``)."""
        key = [_hashable(all_args[name]) for name in self.keys if name in all_args]
        key += [str(value.dtype) for value in all_args.values() if hasattr(value, "dtype")]
        return tuple(key)

    def prune_configs(self, kwargs: dict, nargs: Optional[dict] = None) -> list:
        """The configs worth timing: ``early_config_prune(configs, nargs, **kwargs)`` first, then
        the ``top_k`` best by ``perf_model(**args, **config.all_kwargs())`` (an int, or a
        fraction of the configs early pruning left when a float <= 1)."""
        nargs = self.nargs if nargs is None else nargs
        nargs = nargs or {}
        configs = list(self.configs)
        if self.early_config_prune is not None:
            configs = list(self.early_config_prune(configs, nargs, **kwargs))
            if not configs:
                raise LaunchError("Autotuner error: No valid autotuner configs after pruning. `early_config_prune` "
                                  "should return at least one config.")
        if self.perf_model is not None:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(configs) * top_k))  # a fraction of those left after early pruning
            elif not isinstance(top_k, int):
                raise TypeError(f"prune_configs_by['top_k'] must be an int or a float <= 1.0, got {top_k!r}")
            if len(configs) > top_k:
                estimates = {c: self.perf_model(**nargs, **kwargs, **c.all_kwargs()) for c in configs}
                configs = sorted(configs, key=lambda c: estimates[c])[:top_k]
        return configs

    def _bench(self, args, kwargs, grid, config: Config):
        """Median, 20th and 80th percentile times (ms) of one config; inf when it cannot run."""
        launch_kwargs = {**kwargs, **config.all_kwargs()}
        full_nargs = {**dict(zip(self.arg_names, args)), **launch_kwargs}

        def kernel_call():
            if config.pre_hook is not None:
                config.pre_hook(full_nargs)
            self.pre_hook(full_nargs)
            try:
                self.fn.run(*args, grid=grid, **launch_kwargs)
            except BaseException as e:
                try:
                    self.post_hook(full_nargs, exception=e)
                finally:
                    raise
            self.post_hook(full_nargs, exception=None)

        try:
            with settings.timed_launches():
                if self.user_do_bench is not None:
                    result = self.user_do_bench(kernel_call, quantiles=(0.5, 0.2, 0.8))
                else:
                    from ..testing import do_bench

                    result = do_bench(kernel_call, warmup=self.num_warmups, rep=self.num_reps,
                                      quantiles=(0.5, 0.2, 0.8))
        except _CONFIG_FAILURES:
            return [float("inf")] * 3
        return list(result) if isinstance(result, (list, tuple)) else [float(result)]

    # launching ------------------------------------------------------------------------------------
    def run(self, *args, grid=None, **kwargs):
        tuned = {name for config in self.configs for name in config.kwargs}
        conflicts = tuned & set(kwargs)
        if conflicts:
            raise AutotuneConflictError(f"conflicting meta-parameters: {sorted(conflicts)} are given at the launch "
                                        f"of {self.__name__} and set by its autotune configs; don't pass them")
        self.nargs = dict(zip(self.arg_names, args))
        all_args = {**self._defaults(), **self.nargs, **kwargs}
        key = self._key(all_args)
        backend = _backend_name(all_args)
        # tuned again on another backend: the best config on one says nothing of another's
        if key not in self.cache or self._tuned_on.get(key) != backend:
            configs = self.prune_configs(kwargs, self.nargs)
            if len(configs) > 1:
                self.cache[key] = self._tune(key, configs, args, kwargs, grid, all_args)
            else:
                self.cache[key] = configs[0]
            self._tuned_on[key] = backend
        config = self.best_config = self.cache[key]
        launch_kwargs = {**kwargs, **config.all_kwargs()}
        if config.pre_hook is not None:
            config.pre_hook({**self.nargs, **launch_kwargs})
        return self.fn.run(*args, grid=grid, **launch_kwargs)

    def _uses_disk_cache(self) -> bool:
        return settings.autotune_cache() if self.cache_results is None else bool(self.cache_results)

    def _tune(self, key: tuple, configs: list, args, kwargs, grid, all_args: dict) -> Config:
        """The fastest of ``configs`` for ``key``: from the disk cache when it holds the answer,
        else by timing each config (and then saved there)."""
        identity = (self.disk_cache.identity(key, configs, _backend_name(all_args)) if self._uses_disk_cache()
                    else None)
        if identity is not None:
            stored = self.disk_cache.load(identity, configs)
            if stored is not None:
                self.configs_timings = None
                self.bench_time = 0.0
                return stored
        started = time.perf_counter()
        key_text = ", ".join(f"{name}={repr(all_args[name])[:24]}" for name in self.keys if name in all_args)
        progress = _Progress(self.__name__, key_text, len(configs))
        timings: dict = {}
        best, best_time = None, float("inf")
        try:
            progress.update(0, None, best_time)
            for done, config in enumerate(configs, start=1):
                timings[config] = self._bench(args, kwargs, grid, config)
                if best is None or timings[config] < timings[best]:
                    best, best_time = config, timings[config][0]
                progress.update(done, best, best_time)
        finally:
            progress.close()
        self.bench_time = time.perf_counter() - started
        self.configs_timings = timings
        best = min(timings, key=timings.get)
        # the real launch starts from zeros, as the timed ones did
        self.pre_hook({**all_args, **best.all_kwargs()}, reset_only=True)
        if identity is not None and timings[best][0] != float("inf"):
            self.disk_cache.store(identity, best, timings, self.bench_time)
        return best

    def warmup(self, *args, **kwargs):
        """Compiles the kernel for every (pruned) config without launching; returns the kernels."""
        self.nargs = dict(zip(self.arg_names, args))
        kernels = []
        for config in self.prune_configs(kwargs, self.nargs):
            kernels.append(self.fn.warmup(*args, **kwargs, **config.all_kwargs()))
        self.nargs = None
        return kernels

    def __repr__(self) -> str:
        return f"Autotuner({self.fn!r}, {len(self.configs)} configs, key={self.keys})"


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, pre_hook=None,
             post_hook=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None, cache_results=None):
    """Decorates a kernel to be launched with the fastest of ``configs`` for each value of ``key``.

    ``key``: argument names; a new combination of their values (or of the tensors' dtypes) times
    the configs again. ``reset_to_zero``/``restore_value``: tensor arguments set to zero before
    each timed launch (and before the real one) / restored after each timed launch, for kernels
    that accumulate into or update them. ``warmup``/``rep``: the do_bench budget per config, in ms
    (default 25 and 100); ``do_bench``: a function used instead of ``triton.testing.do_bench``.

    Each key's winner is also saved on disk, under ``$TRITIUM_CACHE_DIR/autotune`` (default
    ``~/.cache/tritium/autotune``), and later processes launch with it without timing anything.
    ``cache_results=False`` (or ``TRITIUM_AUTOTUNE_CACHE=0`` for every kernel) keeps results in
    memory only; ``cache_results=True`` saves them even when the variable says 0. While timing, a
    progress line (configs tried / total, best so far) is shown on stderr when it is a terminal,
    unless ``TRITIUM_AUTOTUNE_PROGRESS=0``.
    """

    def decorator(fn):
        return Autotuner(fn, None, configs, key, reset_to_zero, restore_value, pre_hook=pre_hook,
                         post_hook=post_hook, prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         use_cuda_graph=use_cuda_graph, do_bench=do_bench, cache_results=cache_results)

    return decorator


class Heuristics(_Wrapper):
    """A kernel whose meta-parameters ``values`` (name -> function of the arguments) are computed
    at each launch."""

    def __init__(self, fn, arg_names, values: dict):
        super().__init__(fn, arg_names)
        if not isinstance(values, dict):
            raise TypeError("triton.heuristics takes a dict: meta-parameter name -> function(args) -> value")
        self.values = dict(values)
        self._default_values = self._defaults()

    def _with_heuristics(self, args, kwargs) -> dict:
        # plain dict and loop code: torch.compile traces through it (as through Triton's)
        kwargs = dict(kwargs)
        named = dict(self._default_values)
        named.update(zip(self.arg_names, args))
        for key, value in kwargs.items():
            if key != "grid":
                named[key] = value
        for name, compute in self.values.items():
            value = compute(named)
            kwargs[name] = value
            named[name] = value
        return kwargs

    def run(self, *args, **kwargs):
        return self.fn.run(*args, **self._with_heuristics(args, kwargs))

    def warmup(self, *args, **kwargs):
        return self.fn.warmup(*args, **self._with_heuristics(args, kwargs))

    def __repr__(self) -> str:
        return f"Heuristics({self.fn!r}, {sorted(self.values)})"


def heuristics(values: dict):
    """Decorates a kernel whose meta-parameters ``values`` are computed from its arguments:
    ``@triton.heuristics({"EVEN_N": lambda args: args["N"] % args["BLOCK"] == 0})``."""

    def decorator(fn):
        return Heuristics(fn, None, values)

    return decorator
