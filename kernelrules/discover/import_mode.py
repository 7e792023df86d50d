"""``kernelrules lint --import``: read autotune configs that exist only at run time.

Linting never runs the user's module unless asked. With ``--import`` the module of a
kernel whose configs cannot be read statically is imported (once per file, under a
private name, with its directory on ``sys.path``), and the ``triton.autotune`` object's
``configs`` are read. When torch cannot be imported, a permissive stand-in module is
installed for the import, so that ``torch.cuda.get_device_capability()`` and friends do
not stop it; configs computed from such values are then only as good as the stand-in,
and the report says the configs came from an import.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import types
import warnings
from pathlib import Path
from typing import Any, Iterator

from .autotune_eval import ConfigSite
from ..config import KernelConfig
from ..errors import KernelrulesError


class ImportModeError(KernelrulesError):
    """The module could not be imported, or its kernel has no readable configs."""


class _StandIn:
    """Answers every attribute, call, index and iteration with something harmless."""

    def __getattr__(self, name: str) -> "_StandIn":
        if name.startswith("__"):
            raise AttributeError(name)
        return _StandIn()

    def __call__(self, *args: Any, **kwargs: Any) -> "_StandIn":
        return _StandIn()

    def __getitem__(self, key: Any) -> "_StandIn":
        return _StandIn()

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __bool__(self) -> bool:
        return False

    def __int__(self) -> int:
        return 0

    def __index__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return False

    def __lt__(self, other: object) -> bool:
        return False

    __gt__ = __le__ = __ge__ = __lt__
    __hash__ = object.__hash__


def _stand_in_module(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__getattr__ = lambda attr: _StandIn()  # type: ignore[attr-defined]
    module.__path__ = []  # lets "import torch.nn" find the stand-in too
    return module


@contextlib.contextmanager
def _torch_or_stand_in(capability: tuple[int, int] = (8, 9)) -> Iterator[bool]:
    """Yield True when the real torch is importable; else install stand-ins for the import.

    The stand-in ``torch.cuda`` reports the lint target's compute capability, so a
    module that picks its configs by GPU generation picks the target's.
    """
    try:
        import torch  # noqa: F401

        yield True
        return
    except ImportError:
        pass
    names = ["torch", "torch.nn", "torch.nn.functional", "torch.cuda", "torch.library"]
    missing = object()
    saved = {n: sys.modules.get(n, missing) for n in names}
    for n in names:
        sys.modules[n] = _stand_in_module(n)
    cuda = sys.modules["torch.cuda"]
    cuda.get_device_capability = lambda *args, **kwargs: capability  # type: ignore[attr-defined]
    cuda.is_available = lambda: True  # type: ignore[attr-defined]
    cuda.device_count = lambda: 1  # type: ignore[attr-defined]
    sys.modules["torch"].cuda = cuda  # type: ignore[attr-defined]
    try:
        yield False
    finally:
        for n, module in saved.items():
            if module is missing:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = module


_MODULES: dict[str, Any] = {}


def import_module(path: str | Path, capability: tuple[int, int] = (8, 9)) -> tuple[Any, bool]:
    """Import a file once per run under a private name; returns (module, real torch used)."""
    path = Path(path).resolve()
    key = str(path)
    if key in _MODULES:
        return _MODULES[key]
    name = f"_kernelrules_import_{len(_MODULES)}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportModeError("cannot import this file", path=key)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        with _torch_or_stand_in(capability) as real_torch, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sys.modules[name] = module
            spec.loader.exec_module(module)
    except Exception as exc:  # the user's module failed: say so, with its own message
        sys.modules.pop(name, None)
        raise ImportModeError(f"importing the module failed: {type(exc).__name__}: {exc}", path=key) from None
    finally:
        sys.path.remove(str(path.parent))
    _MODULES[key] = (module, real_torch)
    return _MODULES[key]


def imported_configs(kernel: Any, arch: Any = None) -> tuple[list[ConfigSite], str]:
    """The kernel's autotune configs read from the imported module, at the decorator's line.

    ``arch`` (the first lint target) sets the compute capability a torch stand-in reports.
    """
    capability = divmod(arch.sm, 10) if arch is not None else (8, 9)
    module, real_torch = import_module(kernel.path, capability)
    obj = getattr(module, kernel.name, None)
    while obj is not None and not hasattr(obj, "configs") and hasattr(obj, "fn"):
        obj = obj.fn  # a Heuristics wrapper around the Autotuner
    if obj is None or not hasattr(obj, "configs"):
        raise ImportModeError(f"{kernel.name} has no autotune configs after import", path=str(kernel.path))
    line = kernel.autotune.line if kernel.autotune is not None else kernel.line
    sites = [ConfigSite(KernelConfig.from_triton(c), line, 0) for c in obj.configs]
    note = "configs read by importing the module (--import)" + ("" if real_torch else " with a torch stand-in")
    return sites, note
