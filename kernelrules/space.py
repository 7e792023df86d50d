"""Search-space files: a kernel, its launch signature, fixed values and a space to search.

```yaml
kernel: matmul.py:matmul_kernel          # relative to this file
signature: {a_ptr: "*fp16", b_ptr: "*fp16", c_ptr: "*fp16", M: 4096, N: 4096, K: 4096,
            stride_am: 4096, stride_ak: 1, stride_bk: 4096, stride_bn: 1, stride_cm: 4096, stride_cn: 1}
fixed: {GROUP_SIZE_M: 8}
space: {BLOCK_M: [64, 128], BLOCK_N: [64, 128], BLOCK_K: [32, 64], num_warps: [4, 8], num_stages: [3, 4]}
constraints: ["config.BLOCK_M * config.BLOCK_N <= 128 * 256"]
problem: {M: 4096, N: 4096, K: 4096}
```

The space is the cartesian product of the ``space`` lists, each point merged with
``fixed``; ``constraints`` (expressions in the rule language over ``config.*`` and
``problem.*``) drop points before any rule judges them.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterator, Mapping

import jsonschema

from . import expr as exprlang
from .config import KernelConfig, pointer_dtypes
from .errors import KernelrulesError
from .yamlio import LocatedDocument, load_file

#: Largest space expanded in memory; bigger spaces are an input error (use constraints).
MAX_POINTS = 5_000_000


class SpaceFileError(KernelrulesError):
    """A space file that cannot be used: schema, kernel reference or constraint error."""


@dataclass(frozen=True)
class Constraint:
    """One parsed constraint expression."""

    source: str
    evaluate: Any


@dataclass
class Space:
    """A loaded space file."""

    path: Path
    kernel_path: Path
    kernel_name: str
    signature: dict[str, Any]
    fixed: dict[str, Any]
    space: dict[str, list[Any]]
    constraints: list[Constraint] = field(default_factory=list)
    problem: dict[str, Any] = field(default_factory=dict)

    def size(self) -> int:
        """Number of points in the cartesian product (before constraints)."""
        total = 1
        for values in self.space.values():
            total *= len(values)
        return total

    def kernel_info(self) -> dict[str, Any]:
        """What rules see as ``kernel.*``: the name and the pointer dtypes of the signature."""
        return {"name": self.kernel_name, "dtypes": pointer_dtypes(self.signature)}

    def configs(self) -> Iterator[KernelConfig]:
        """Every point of the space that satisfies the constraints, as a KernelConfig."""
        keys = list(self.space)
        problem = dict(self.problem)
        for values in itertools.product(*(self.space[k] for k in keys)):
            point = {**self.fixed, **dict(zip(keys, values))}
            config = KernelConfig.from_dict(point)
            if self._allowed(config, problem):
                yield config

    def require_configs(self) -> None:
        """Refuse a space whose constraints exclude every point: judging nothing and exiting 0 would
        read as "every config passes"."""
        if self.constraints and next(self.configs(), None) is None:
            shown = "; ".join(c.source if len(c.source) <= 80 else c.source[:80] + "..." for c in self.constraints)
            raise SpaceFileError(f"the constraints exclude all {self.size()} configs of the space ({shown})",
                                 path=str(self.path), hint="relax the constraints or widen the space")

    def _allowed(self, config: KernelConfig, problem: Mapping[str, Any]) -> bool:
        if not self.constraints:
            return True
        env = {"config": config.namespace("nvidia"), "problem": problem}
        for constraint in self.constraints:
            try:
                if not constraint.evaluate(env):
                    return False
            except exprlang.ExprError as exc:
                raise SpaceFileError(f"constraint {constraint.source!r} failed on {config}: {exc.message}",
                                     path=str(self.path)) from None
        return True


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    text = resources.files("kernelrules.schemas").joinpath("space.schema.json").read_text(encoding="utf-8")
    return jsonschema.Draft202012Validator(json.loads(text))


def _schema_check(doc: LocatedDocument) -> None:
    if not isinstance(doc.data, dict):
        raise SpaceFileError("a space file must be a YAML mapping", path=doc.source, line=1)
    error = jsonschema.exceptions.best_match(_validator().iter_errors(doc.data))
    if error is not None:
        path = tuple(error.absolute_path)
        line, col = doc.where(path) or (None, None)
        key = ".".join(str(p) for p in path) or "<top level>"
        message = error.message if len(error.message) <= 160 else error.message[:157] + "..."
        raise SpaceFileError(f"invalid space file at '{key}': {message}", path=doc.source, line=line, column=col)


def _constraints(doc: LocatedDocument) -> list[Constraint]:
    out = []
    for i, text in enumerate(doc.data.get("constraints", [])):
        try:
            node = exprlang.parse(text)
            problems = exprlang.check(node, {"config": None, "problem": None})
        except exprlang.ExprError as exc:
            problems = [exc]
        if problems:
            line, col = doc.where(("constraints", i)) or (None, None)
            raise SpaceFileError(f"in constraint {text!r}: {problems[0].message}", path=doc.source, line=line, column=col)
        out.append(Constraint(text, exprlang.compile_expr(node)))
    return out


def load_space(path: str | Path) -> Space:
    """Load and validate a space file; errors name the file, line and key."""
    path = Path(path)
    doc = load_file(path, error=SpaceFileError)
    _schema_check(doc)
    data = doc.data
    file_part, _, name = data["kernel"].rpartition(":")
    kernel_path = (path.parent / file_part).resolve()
    if not kernel_path.is_file():
        line, col = doc.where(("kernel",)) or (None, None)
        raise SpaceFileError(f"kernel file {file_part!r} not found (relative to the space file)",
                             path=str(path), line=line, column=col)
    overlap = set(data.get("fixed", {})) & set(data["space"])
    if overlap:
        raise SpaceFileError(f"{', '.join(sorted(overlap))} is both fixed and searched", path=str(path))
    space = Space(
        path=path,
        kernel_path=kernel_path,
        kernel_name=name,
        signature=dict(data["signature"]),
        fixed=dict(data.get("fixed", {})),
        space={k: list(v) for k, v in data["space"].items()},
        constraints=_constraints(doc),
        problem=dict(data.get("problem", {})),
    )
    if space.size() > MAX_POINTS:
        raise SpaceFileError(f"the space has {space.size():,} points; at most {MAX_POINTS:,} are supported",
                             path=str(path), hint="narrow it or add constraints")
    for key in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        for value in space.space.get(key, []) + ([space.fixed[key]] if key in space.fixed else []):
            if isinstance(value, bool) or not isinstance(value, int):
                line, col = doc.where(("space", key)) or doc.where(("fixed", key)) or (None, None)
                raise SpaceFileError(f"{key} values must be integers, got {value!r}", path=str(path), line=line, column=col)
    return space
