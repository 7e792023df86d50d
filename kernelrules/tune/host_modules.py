"""Triton's host modules, kept from one ``kernelrules tune`` run to the next.

Before a benchmark worker can launch a kernel, Triton builds two small C extensions with the
machine's C compiler: its CUDA helper module (``cuda_utils``) once per process, and a launcher
(``__triton_launcher``) for each kernel signature it launches, edge shapes with other
specializations included. It caches them in ``TRITON_CACHE_DIR``, which for ``tune`` is the
study's own Triton cache (``triton-cache/`` beside the study, shared with the gate's compile
workers), empty in every new study: so every run compiled them again, on the way to its first
timing (0.30 s for the helper and 0.23 s a launcher with gcc on a 2-core CPU, medians of 3,
``benchmarks/host_module_build_time.py``).

They depend only on their C source and the platform, which is Triton's own cache key
(``triton.runtime.build.compile_module_from_src``: ``<key>/<name><EXT_SUFFIX>``), so the same
files serve every study: the worker copies those it finds in a store under the kernelrules
cache directory into the study's Triton cache before it imports Triton
(:func:`copy_host_modules`), and copies back the ones it built. Kernel binaries are not
copied: they stay with their study. Triton's default cache (``~/.triton/cache``) shares the
same files across all of a user's processes; this store does the same for ``tune``'s studies.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Iterator

#: Names of the modules Triton's backends compile from C (NVIDIA's helper and launchers; AMD's helper).
HOST_MODULE_PREFIXES = ("cuda_utils", "__triton_launcher", "hip_utils")
#: Folder of the store under the kernelrules cache directory.
STORE_NAME = "triton-host-modules"


def store_for(cache_dir: str | os.PathLike | None) -> Path:
    """Where ``tune`` keeps host modules: under ``cache_dir`` (``--cache-dir``), else the default kernelrules cache."""
    from ..compile.cache import default_cache_dir

    return (Path(cache_dir) if cache_dir else default_cache_dir()) / STORE_NAME


def host_module_files(cache_dir: Path) -> Iterator[tuple[str, str]]:
    """(key folder, file name) of every host module in a Triton cache directory."""
    try:
        folders = list(os.scandir(cache_dir))
    except OSError:
        return
    for folder in folders:
        if not folder.is_dir(follow_symlinks=False):
            continue
        try:
            names = [entry.name for entry in os.scandir(folder.path) if entry.is_file(follow_symlinks=False)]
        except OSError:
            continue
        for name in names:
            if name.startswith(HOST_MODULE_PREFIXES) and name.endswith((".so", ".pyd")):
                yield folder.name, name


def copy_host_modules(source: Path, target: Path) -> int:
    """Copy the host modules of Triton cache ``source`` that ``target`` lacks; how many were copied.

    Each file is written under a temporary name and renamed into place, so a process reading
    ``target`` meanwhile (another GPU's worker, Triton itself) sees a whole file or none. A file
    that cannot be copied is skipped: Triton then builds it, as it would have."""
    copied = 0
    for key, name in host_module_files(source):
        dest = target / key / name
        if dest.exists():
            continue
        temporary = dest.with_name(f".{name}.{os.getpid()}.tmp")
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / key / name, temporary)
            os.replace(temporary, dest)
            copied += 1
        except OSError:
            temporary.unlink(missing_ok=True)
    return copied


def share_host_modules(settings: Any, *, into_study: bool) -> int:
    """A benchmark worker's copy (``settings``: its :class:`~kernelrules.tune.worker.WorkerSettings`): Triton's host
    modules from the store into the study's Triton cache, or back; how many files. Nothing without both folders
    (interpreted runs) or when the copy fails."""
    if settings.interpret or not settings.triton_cache_dir or not settings.host_module_store:
        return 0
    store, study = Path(settings.host_module_store), Path(settings.triton_cache_dir)
    try:
        return copy_host_modules(store, study) if into_study else copy_host_modules(study, store)
    except Exception:  # noqa: BLE001 - a cache only: Triton builds what it does not find
        return 0


__all__ = ["HOST_MODULE_PREFIXES", "STORE_NAME", "copy_host_modules", "host_module_files", "share_host_modules",
           "store_for"]
