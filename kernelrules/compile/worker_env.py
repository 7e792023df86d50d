"""The environment a compile worker gets: what Triton's compiler and ptxas need, nothing else.

Compile workers feed the linted kernels to Triton's compiler and ``ptxas``, large programs
that were never hardened against crafted input. They need no credentials, so they do not
inherit them: the worker's environment is built from an allowlist of the variables a
cross-compile reads (the search path, the locale, Python's and Triton's own settings, the
CUDA toolkit's location, the compiler's), and everything else of ``kernelrules``'s
environment (tokens, passwords, cloud keys, database URLs) stays behind.
"""

from __future__ import annotations

import os
from typing import Mapping

#: Variables passed as they are.
KEPT = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TERM", "SHELL",
    "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH",
    "CC", "CXX", "VIRTUAL_ENV", "CONDA_PREFIX", "XDG_CACHE_HOME",
    "SYSTEMROOT", "WINDIR", "COMSPEC",  # a Windows process needs these to start at all
})
#: Prefixes of variables passed as they are (Python's, Triton's, the CUDA and ROCm toolkits', ours).
KEPT_PREFIXES = ("LC_", "PYTHON", "TRITON_", "KERNELRULES_", "CUDA_", "NVIDIA_", "ROCM_", "HIP_", "MLIR_", "LLVM_")
#: Words that mark a variable as a secret even under a kept prefix (``TRITON_API_TOKEN``, say).
SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "PRIVATE")


def worker_environment(environ: Mapping[str, str] | None = None, **overrides: str) -> dict[str, str]:
    """The allowlisted part of ``environ`` (default: this process's), with ``overrides`` set."""
    source = os.environ if environ is None else environ
    env = {name: value for name, value in source.items() if kept(name)}
    env.update(overrides)
    return env


def kept(name: str) -> bool:
    """Whether a compile worker inherits the variable ``name``."""
    upper = name.upper()
    if any(word in upper for word in SECRET_WORDS):
        return False
    return upper in KEPT or upper.startswith(KEPT_PREFIXES)
