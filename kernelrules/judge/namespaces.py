"""The names rule expressions may use, per namespace, with what each means.

Rule files are checked against these at load so a typo such as
``facts.shard_bytes`` is an error naming the rule file, line and column, not a
rule that silently never fires. ``config`` and ``problem`` are open: any key a
kernel's config or problem defines may be named.
"""

from __future__ import annotations

from . import facts_catalogue

#: Facts a compile (or a prediction) provides, declared in :mod:`kernelrules.judge.facts_catalogue`. A rule
#: that names a fact that is not known yet is deferred: it cannot judge at the config stage.
FACTS = facts_catalogue.FACTS

#: Kernel-level facts known without compiling (from the launch signature).
KERNEL: dict[str, str] = {
    "name": "the kernel's function name",
    "dtypes": "element dtypes of the kernel's pointer arguments, Triton spelling (fp16, bf16, fp8e4nv, ...)",
    "fp8_dtypes": "the fp8 dtypes among kernel.dtypes",
}

#: Namespace roots and the fields each allows (None: any field).
ROOTS_OPEN = ("config", "problem")
