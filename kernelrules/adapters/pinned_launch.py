"""Launching without benchmarks: pinned tables, the no-benchmark switch and CUDA-graph capture.

Every tuner :func:`kernelrules.autotune` makes is a :class:`PinnedAutotuner`: Triton's
``Autotuner`` whose ``run`` first asks a :class:`LaunchPolicy` for the config of a tuning
key it has not seen. The policy answers, in order:

1. the table's entry for the current architecture and the launch's key (``pinned=``):
   that config, and no benchmark at all;
2. for an unlisted key, ``on_missing``: ``"tune"`` (the default) lets Triton benchmark as
   usual, ``"static"`` launches the static pick (:mod:`kernelrules.adapters.static_pick`),
   ``"error"`` raises a :class:`~kernelrules.errors.KernelrulesError` naming the key;
3. ``"tune"`` becomes ``"static"`` when ``$KERNELRULES_NO_BENCHMARK`` is set (CI,
   production) and inside CUDA-graph capture (a warning, once per tuner).

The answer is put in Triton's own ``tuner.cache`` under Triton's key, so Triton's
``run`` launches it without benchmarking; later launches with that key are plain cache
hits. Nothing here times anything or draws a random number: every process and every
rank with the same table, arguments and architecture makes the same choice.
``tuner.kernelrules_choices`` records, per key, where its config came from.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import Any, Mapping

from triton.runtime.autotuner import Autotuner

from ..errors import KernelrulesError
from ..pinned import NO_BENCHMARK_ENV, PinnedTable, load_table, normalize_dtype, source_sha256

log = logging.getLogger("kernelrules")

POLICIES = ("tune", "static", "error")


def no_benchmark_forced() -> bool:
    """Whether ``$KERNELRULES_NO_BENCHMARK`` forbids benchmarking at run time (1, true, yes, on)."""
    return os.environ.get(NO_BENCHMARK_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def capturing() -> bool:
    """Whether the current CUDA stream is capturing a graph (False without torch or CUDA)."""
    import sys

    torch = sys.modules.get("torch")  # a process that never imported torch captures no graph
    try:
        return bool(torch is not None and torch.cuda.is_available() and torch.cuda.is_current_stream_capturing())
    except Exception:  # noqa: BLE001 - no CUDA build, no device
        return False


def triton_key(tuner: Any, args: tuple, kwargs: Mapping[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """Triton 3.x's tuning key (``Autotuner.run``) and the named arguments it is built from: the
    key arguments' values in ``key=`` order, then ``str(dtype)`` of every argument with a dtype."""
    named = {**dict(zip(tuner.arg_names, args)), **kwargs}
    named = {k: v for k, v in named.items() if k in tuner.arg_names}
    key = [named[k] for k in tuner.keys if k in named]
    key.extend(str(v.dtype) for v in named.values() if hasattr(v, "dtype"))
    return tuple(key), named


def _scalar(value: Any) -> Any:
    import numbers

    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return value


def table_key(keys: Any, named: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A launch as a table looks it up: key values by name, tensor dtypes by name (``float16``)."""
    values = {k: _scalar(named[k]) for k in keys if k in named}
    dtypes = {k: normalize_dtype(v.dtype) for k, v in named.items() if hasattr(v, "dtype")}
    return values, dtypes


class LaunchPolicy:
    """What a :class:`PinnedAutotuner` launches for a key it has not seen (see the module docstring)."""

    def __init__(self, table: PinnedTable | None, on_missing: str = "tune", arch: str | None = None,
                 context: Any = None) -> None:
        if on_missing not in POLICIES:
            raise ValueError(f"on_missing must be one of {', '.join(POLICIES)}, not {on_missing!r}")
        if on_missing == "error" and table is None:
            raise ValueError("on_missing='error' needs a pinned table (pinned=FILE.json)")
        self.table, self.on_missing, self.arch, self.context = table, on_missing, arch, context
        self._arch_name: str | None = None
        self._model: Any = None
        self._source_hash: str | None = None
        self._warned: set[str] = set()

    def arch_name(self) -> str:
        if self._arch_name is None:
            from .kernel_prune import resolve_arch

            self._arch_name = resolve_arch(self.arch).name
        return self._arch_name

    def choose(self, tuner: Any, args: tuple, kwargs: Mapping[str, Any]) -> tuple[Any, str] | None:
        """``(config, source)`` for a new key, or None to let Triton benchmark."""
        _key, named = triton_key(tuner, args, kwargs)
        if self.table is not None:
            values, dtypes = table_key(tuner.keys, named)
            entry = self.table.lookup(self.arch_name(), values, dtypes)
            if entry is not None:
                self._check_stale(tuner, entry)
                return self._config(tuner, entry.config), "pinned"
            if self.on_missing == "error":
                shown = ", ".join(f"{k}={v}" for k, v in {**values, **dtypes}.items())
                listed = sum(1 for e in self.table.entries if e.arch == self.arch_name())
                count = f"{listed} entry" if listed == 1 else f"{listed} entries"
                raise KernelrulesError(f"no pinned config for {self.table.kernel_name} on {self.arch_name()} with "
                                       f"{shown} ({count} for {self.arch_name()})", path=str(self.table.path),
                                       hint="tune it and export it (kernelrules tune --export), or use "
                                            "on_missing='static' or 'tune'")
        if self.on_missing == "static" or no_benchmark_forced():
            return self.static(tuner, named, kwargs), "static"
        if capturing():
            self._warn_once("capture", f"kernelrules: {tuner.base_fn.__name__}: a new tuning key inside CUDA-graph "
                                       f"capture; launching the static pick instead of benchmarking")
            return self.static(tuner, named, kwargs), "static"
        return None

    def static(self, tuner: Any, named: Mapping[str, Any], kwargs: Mapping[str, Any]) -> Any:
        """The static pick with the tuner's own prune and perf model (kernelrules' model when it has none)."""
        from .static_pick import rank

        model = tuner.perf_model
        if model is None:
            if self._model is None:
                from .triton_perf import triton_perf_model

                self._model = triton_perf_model(tuner, arch=self.arch, context=self.context)
            model = self._model
        extra = {k: v for k, v in kwargs.items() if k not in named}
        return rank(tuner.configs, named, extra, prune=tuner.early_config_prune, model=model)[0][0]

    def _config(self, tuner: Any, values: Mapping[str, Any]) -> Any:
        """The entry's config as a ``triton.Config``: the tuner's own object when it has an equal one
        (its ``pre_hook`` kept)."""
        from ..config import KernelConfig

        made = KernelConfig.from_dict(values).to_triton()
        wanted = KernelConfig.from_triton(made).key()
        for config in tuner.configs:
            if KernelConfig.from_triton(config).key() == wanted:
                return config
        return made

    def _check_stale(self, tuner: Any, entry: Any) -> None:
        if not entry.source_sha256 or "stale" in self._warned:
            return
        if self._source_hash is None:
            import inspect

            fn = tuner.base_fn
            try:
                self._source_hash = source_sha256(inspect.getsourcefile(fn), fn.__name__, fn.__code__.co_firstlineno)
            except (KernelrulesError, TypeError):
                self._source_hash = ""
        if self._source_hash and entry.source_sha256 != self._source_hash:
            self._warn_once("stale", f"kernelrules: {self.table.path}: the entry for {entry.describe()} was tuned for "
                                     f"another version of {tuner.base_fn.__name__}'s source (stale); it is launched "
                                     f"anyway: re-tune it, or check it with 'kernelrules lint --pinned'")

    def _warn_once(self, what: str, message: str) -> None:
        if what not in self._warned:
            self._warned.add(what)
            warnings.warn(message, stacklevel=4)


class PinnedAutotuner(Autotuner):
    """Triton's Autotuner whose new keys go through a :class:`LaunchPolicy` first."""

    kernelrules_policy: LaunchPolicy

    def run(self, *args: Any, **kwargs: Any) -> Any:
        if len(self.configs) > 1:
            key, _named = triton_key(self, args, kwargs)
            if key not in self.cache:
                chosen = self.kernelrules_policy.choose(self, args, kwargs)
                if chosen is not None:
                    config, source = chosen
                    self.cache[key] = config
                    self.kernelrules_choices[key] = {"source": source, "config": config}
                    log.info("kernelrules: %s: %s config %s for key %s", self.base_fn.__name__, source, config, key)
                else:
                    self.kernelrules_choices[key] = {"source": "tuned", "config": None}
        result = super().run(*args, **kwargs)
        if len(self.configs) > 1 and self.kernelrules_choices.get(key, {}).get("config") is None:
            self.kernelrules_choices[key]["config"] = self.cache.get(key)
        return result


def make_pinned(tuner: Autotuner, pinned: Any, on_missing: str, arch: str | None, context: Any, key: Any) -> None:
    """Turn a tuner made by ``triton.autotune`` into a :class:`PinnedAutotuner` with its policy."""
    table = None
    if pinned is not None:
        table = pinned if isinstance(pinned, PinnedTable) else load_table(Path(pinned))
        name = tuner.base_fn.__name__
        if table.kernel_name != name:
            raise KernelrulesError(f"the table pins kernel {table.kernel_name!r}, not {name!r}",
                                   path=str(table.path), hint="pass the table made for this kernel")
        if "key" in table.kernel and list(table.kernel["key"]) != list(key):
            warnings.warn(f"kernelrules: {table.path}: made for key={table.kernel['key']}, the autotuner has "
                          f"key={list(key)}; entries whose key names differ never match", stacklevel=3)
    tuner.kernelrules_policy = LaunchPolicy(table, on_missing, arch, context)
    tuner.kernelrules_choices = {}
    tuner.__class__ = PinnedAutotuner
