"""What ``kernelrules tune`` needs to run a kernel: the ``problem`` section of a space file.

```yaml
problem:
  M: 4096                       # sizes: integers, usable in every expression below
  N: 4096
  K: 4096
  dtype: fp16                   # default dtype of the tensors
  inputs:                       # tensors the kernel reads: a shape (expressions of the sizes) ...
    a: [M, K]
    b: {shape: [K, N], dtype: fp16, init: randn}    # ... or shape, dtype and init
  outputs:
    c: [M, N]                   # poisoned (NaN) before every checked launch
  args:                         # kernel arguments that are not named like a tensor or a size
    a_ptr: a
    stride_am: a.stride(0)
  grid: "cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)"       # or a list of up to three expressions
  reference: "a @ b"            # per output, or one expression for the only output
  baseline: "torch.matmul(a, b)"                    # timed in the same run (default: the reference)
  flops: "2 * M * N * K"
  edge_sizes: [{M: 4095, N: 4095, K: 4095}]        # default: every size minus one
  seeds: [0, 1, 2]
  tolerance: {rtol: 0.01, atol: 0.01}              # default: by dtype
```

or ``harness: harness.py:Name`` (a Python class; see docs/tune.md). Every
expression is checked by :mod:`kernelrules.expr.safeexpr` when the file is loaded;
nothing here imports torch or the user's code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from ..expr import safeexpr

if TYPE_CHECKING:  # loaded by load_problem only: the benchmark worker unpickles a ProblemSpec without them
    from ..space import Space

#: Keys of the problem section that describe how to run the kernel (the rest are sizes or values).
TUNE_KEYS = ("inputs", "outputs", "args", "grid", "reference", "baseline", "flops", "bytes", "edge_sizes", "seeds",
             "tolerance", "harness")

#: Triton dtype names -> torch dtype names.
TORCH_DTYPES = {
    "fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64", "fp8e4nv": "float8_e4m3fn",
    "fp8e5": "float8_e5m2", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "i1": "bool",
}
DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4, "fp64": 8, "fp8e4nv": 1, "fp8e5": 1, "i8": 1, "i16": 2, "i32": 4,
               "i64": 8, "u8": 1, "i1": 1}
INITS = ("randn", "rand", "zeros", "ones", "randint", "arange")


@dataclass
class TensorSpec:
    """One tensor: shape expressions, dtype (Triton's name) and how to fill it."""

    name: str
    shape: list[str]
    dtype: str
    init: str = "randn"
    in_place: bool = False  # an output the kernel also reads (Inductor's in_out_ptr): filled, restored per check


@dataclass
class ProblemSpec:
    """The problem section, validated; picklable (it travels to the benchmark workers)."""

    space_path: str
    kernel_path: str
    kernel_name: str
    sizes: dict[str, int]
    values: dict[str, Any]
    kernel_args: list[str]
    inputs: dict[str, TensorSpec] = field(default_factory=dict)
    outputs: dict[str, TensorSpec] = field(default_factory=dict)
    args: dict[str, str] = field(default_factory=dict)
    grid: list[str] = field(default_factory=list)
    reference: dict[str, str] = field(default_factory=dict)
    reference_config: dict[str, Any] | None = None  # reference: {config: {...}}: the kernel itself at that config
    baseline: str | None = None
    flops: str | None = None
    bytes: str | None = None
    edge_sizes: list[dict[str, int]] = field(default_factory=list)
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    tolerance: dict[str, float] | None = None
    harness: tuple[str, str] | None = None

    # -- derived --------------------------------------------------------------------------

    def flop_count(self, sizes: Mapping[str, int] | None = None) -> float | None:
        """FLOPs of one launch at ``sizes`` (default: the problem's), if the file says."""
        if not self.flops:
            return None
        return float(safeexpr.evaluate(self.flops, {**self.values, **(sizes or self.sizes)}, torch_allowed=False))

    def shape(self, tensor: TensorSpec, sizes: Mapping[str, int] | None = None) -> tuple[int, ...]:
        env = {**self.values, **(sizes or self.sizes)}
        return tuple(int(safeexpr.evaluate(s, env, torch_allowed=False)) for s in tensor.shape)

    def byte_count(self, sizes: Mapping[str, int] | None = None) -> float | None:
        """Bytes a launch must move at least (inputs read once, outputs written once)."""
        env = {**self.values, **(sizes or self.sizes)}
        if self.bytes:
            return float(safeexpr.evaluate(self.bytes, env, torch_allowed=False))
        if self.harness and not self.inputs:
            return None
        total = 0
        for tensor in [*self.inputs.values(), *self.outputs.values()]:
            count = 1
            for extent in self.shape(tensor, sizes):
                count *= extent
            total += count * DTYPE_BYTES.get(tensor.dtype, 4)
        return float(total)

    def input_bytes(self) -> int:
        total = 0
        for tensor in self.inputs.values():
            count = 1
            for extent in self.shape(tensor):
                count *= extent
            total += count * DTYPE_BYTES.get(tensor.dtype, 4)
        return total

    def precision_dtype(self) -> str:
        """The least precise floating dtype among inputs and outputs (it sets the tolerance)."""
        order = ["fp8e4nv", "fp8e5", "bf16", "fp16", "fp32", "fp64"]
        found = [t.dtype for t in [*self.inputs.values(), *self.outputs.values()] if t.dtype in order]
        if not found:
            return str(self.values.get("dtype", "fp32"))
        return min(found, key=order.index)

    def describe_sizes(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.sizes.items())


def _tensor(name: str, raw: Any, default_dtype: str, where: Any, output: bool = False) -> TensorSpec:
    if isinstance(raw, list):
        raw = {"shape": raw}
    if not isinstance(raw, dict) or "shape" not in raw:
        raise where(f"tensor {name!r} needs a shape: [M, K] or {{shape: [M, K], dtype: fp16}}")
    known = {"shape", "dtype", "init", "in_place"} if output else {"shape", "dtype", "init"}
    unknown = set(raw) - known
    if unknown:
        raise where(f"tensor {name!r}: unknown keys {', '.join(sorted(unknown))} ({', '.join(sorted(known))})")
    if not isinstance(raw.get("in_place", False), bool):
        raise where(f"tensor {name!r}: in_place must be true or false")
    dtype = str(raw.get("dtype", default_dtype))
    if dtype not in TORCH_DTYPES:
        raise where(f"tensor {name!r}: unknown dtype {dtype!r} (one of {', '.join(TORCH_DTYPES)})")
    init = str(raw.get("init", "randn"))
    if init not in INITS:
        raise where(f"tensor {name!r}: unknown init {init!r} (one of {', '.join(INITS)})")
    if not isinstance(raw["shape"], list) or not raw["shape"]:
        raise where(f"tensor {name!r}: shape must be a non-empty list")
    return TensorSpec(name, [str(s) for s in raw["shape"]], dtype, init, bool(raw.get("in_place", False)))


def _todo_fields(value: Any, path: tuple = ()) -> list[tuple]:
    """Paths of the values still ``TODO`` (left by ``kernelrules space --from-inductor``)."""
    if isinstance(value, str):
        return [path] if value.strip().upper().startswith("TODO") else []
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _todo_fields(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _todo_fields(v, (*path, i))]
    return []


def load_problem(space: Space) -> ProblemSpec:
    """Validate the problem section of a loaded space for tuning; errors name the file, line and key."""
    from ..space import SpaceFileError
    from ..yamlio import load_file

    doc = load_file(space.path, error=SpaceFileError)

    def error_at(*path: Any):
        def make(message: str) -> SpaceFileError:
            line, col = doc.where(("problem", *path)) or (None, None)
            return SpaceFileError(message, path=str(space.path), line=line, column=col)
        return make

    raw = dict(space.problem)
    if not raw:
        raise error_at()("the space file has no problem section; tune needs one (see docs/tune.md)")
    todo = _todo_fields(raw)
    if todo:
        names = ", ".join("problem." + ".".join(str(p) for p in path if not isinstance(p, int)) for path in todo)
        raise error_at(*todo[0])(f"{names} {'is' if len(todo) == 1 else 'are'} still TODO: fill in what the "
                                 f"generator could not infer (see the comment on the line)")
    fixed_todo = [k for k, v in space.fixed.items() if _todo_fields(v)]
    if fixed_todo:
        raise SpaceFileError(f"fixed.{', fixed.'.join(fixed_todo)} still TODO: give the value", path=str(space.path))
    sizes = {k: v for k, v in raw.items() if k not in TUNE_KEYS and isinstance(v, int) and not isinstance(v, bool)}
    values = {k: v for k, v in raw.items() if k not in TUNE_KEYS and k not in sizes}
    default_dtype = str(raw.get("dtype", "fp32"))
    signature = dict(space.signature)
    spec = ProblemSpec(space_path=str(space.path), kernel_path=str(space.kernel_path), kernel_name=space.kernel_name,
                       sizes=sizes, values=values, kernel_args=list(signature))
    if "harness" in raw:
        text = str(raw["harness"])
        file_part, _, name = text.rpartition(":")
        if not file_part.endswith(".py") or not name.isidentifier():
            raise error_at("harness")("harness must be 'file.py:ClassName'")
        harness_path = (space.path.parent / file_part).resolve()
        if not harness_path.is_file():
            raise error_at("harness")(f"harness file {file_part!r} not found (relative to the space file)")
        spec.harness = (str(harness_path), name)
    for key in ("inputs", "outputs"):
        section = raw.get(key, {}) or {}
        if not isinstance(section, dict):
            raise error_at(key)(f"problem.{key} must be a mapping of tensor names")
        tensors = {n: _tensor(n, t, default_dtype, error_at(key, n), output=key == "outputs")
                   for n, t in section.items()}
        setattr(spec, key, tensors)
    if spec.harness is None and ("inputs" not in raw or "outputs" not in raw or "reference" not in raw):
        raise error_at()("the problem section needs inputs, outputs and reference (or a harness: file.py:Name)")
    overlap = set(spec.inputs) & set(spec.outputs) | (set(spec.inputs) | set(spec.outputs)) & set(sizes)
    if overlap:
        raise error_at()(f"{', '.join(sorted(overlap))} is named twice (tensors and sizes need distinct names)")
    _check_expressions(spec, raw, space, error_at)
    return spec


def _parse(source: Any, names: set[str], where: Any, *, torch_allowed: bool = False) -> str:
    """Check one expression: allowed constructs and known names; return its text."""
    try:
        parsed = safeexpr.parse(source, torch_allowed=torch_allowed)
    except safeexpr.ExpressionError as exc:
        raise where(exc.render()) from None
    unknown = sorted(parsed.names - names)
    if unknown:
        raise where(f"{', '.join(unknown)} not defined in {parsed.source!r} (known: {', '.join(sorted(names))})")
    return parsed.source


def _check_expressions(spec: ProblemSpec, raw: Mapping[str, Any], space: Space, error_at: Any) -> None:
    size_names = set(spec.sizes) | {k for k, v in spec.values.items() if isinstance(v, (int, float))}
    config_names = set(space.fixed) | set(space.space)
    tensors = set(spec.inputs) | set(spec.outputs)
    for group in (spec.inputs, spec.outputs):
        for tensor in group.values():
            for i, extent in enumerate(tensor.shape):
                _parse(extent, size_names, error_at("inputs" if group is spec.inputs else "outputs", tensor.name))
    args = raw.get("args", {}) or {}
    if not isinstance(args, dict):
        raise error_at("args")("problem.args must map kernel argument names to expressions")
    for name, source in args.items():
        if name not in spec.kernel_args:
            raise error_at("args", name)(f"{name!r} is not a runtime argument of {spec.kernel_name} "
                                         f"(its signature: {', '.join(spec.kernel_args)})")
        spec.args[name] = _parse(source, size_names | tensors | config_names, error_at("args", name))
    if spec.harness is None:
        missing = [a for a in spec.kernel_args if a not in spec.args and a not in tensors and a not in spec.sizes]
        if missing:
            raise error_at("args")(f"kernel argument(s) {', '.join(missing)} have no value: "
                                   f"add them under problem.args (e.g. {missing[0]}: a.stride(0))")
        grid = raw.get("grid")
        if grid is None:
            raise error_at()("the problem section needs a grid, e.g. \"cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)\"")
        grid = grid if isinstance(grid, list) else [grid]
        if not 1 <= len(grid) <= 3:
            raise error_at("grid")("the grid has one to three dimensions")
        spec.grid = [_parse(g, size_names | config_names, error_at("grid")) for g in grid]
        reference = raw["reference"]
        if isinstance(reference, dict) and set(reference) == {"config"} and "config" not in spec.outputs:
            spec.reference_config = _reference_config(reference["config"], space, error_at("reference", "config"))
            reference = {}
        elif isinstance(reference, str):
            if len(spec.outputs) != 1:
                raise error_at("reference")("with several outputs, give the reference per output: {c: a @ b, ...}")
            reference = {next(iter(spec.outputs)): reference}
        if not isinstance(reference, dict) or set(reference) - set(spec.outputs):
            raise error_at("reference")(f"reference must name outputs ({', '.join(spec.outputs)})")
        spec.reference = {k: _parse(v, set(spec.inputs) | size_names, error_at("reference"), torch_allowed=True)
                          for k, v in reference.items()}
    if raw.get("baseline") is not None:
        spec.baseline = _parse(raw["baseline"], set(spec.inputs) | set(spec.outputs) | size_names,
                               error_at("baseline"), torch_allowed=True)
    for key in ("flops", "bytes"):
        if raw.get(key) is not None:
            setattr(spec, key, _parse(raw[key], size_names, error_at(key)))
    edge = raw.get("edge_sizes")
    if edge is None:
        spec.edge_sizes = [{k: max(1, v - 1) for k, v in spec.sizes.items()}] if spec.sizes else []
    else:
        if not isinstance(edge, list) or not all(isinstance(e, dict) for e in edge):
            raise error_at("edge_sizes")("edge_sizes must be a list of {size: value} mappings")
        for i, entry in enumerate(edge):
            bad = [k for k, v in entry.items() if k not in spec.sizes or not isinstance(v, int) or v < 1]
            if bad:
                raise error_at("edge_sizes", i)(f"edge_sizes: {', '.join(bad)} must be sizes of the problem with "
                                                f"positive integer values")
        spec.edge_sizes = [{**spec.sizes, **e} for e in edge]
    seeds = raw.get("seeds", [0, 1, 2])
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        seeds = list(range(seeds))
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
        raise error_at("seeds")("seeds must be a non-empty list of integers (or a count)")
    spec.seeds = list(seeds)
    tolerance = raw.get("tolerance")
    if tolerance is not None:
        if not isinstance(tolerance, dict) or set(tolerance) - {"rtol", "atol"} or not all(
                isinstance(v, (int, float)) and v >= 0 for v in tolerance.values()):
            raise error_at("tolerance")("tolerance must be {rtol: number, atol: number}")
        spec.tolerance = {k: float(v) for k, v in tolerance.items()}


#: Launch options a reference config may give besides the kernel's constexprs.
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def _reference_config(raw: Any, space: Space, where: Any) -> dict[str, Any]:
    """``reference: {config: {XBLOCK: 128, num_warps: 4}}``: every searched constexpr, fixed values filled in."""
    if not isinstance(raw, dict) or not raw:
        raise where("reference.config must map the kernel's constexprs (and num_warps, num_stages) to values")
    names = set(space.space) | set(space.fixed) | set(LAUNCH_OPTIONS)
    unknown = sorted(set(raw) - names)
    if unknown:
        raise where(f"reference.config: {', '.join(unknown)} is not a key of the space "
                    f"(known: {', '.join(sorted(names))})")
    bad = [k for k, v in raw.items() if isinstance(v, bool) or not isinstance(v, (int, float, str))]
    if bad:
        raise where(f"reference.config: {', '.join(bad)} must be a number or a string")
    config = {**raw, **{k: v for k, v in space.fixed.items() if k not in raw}}
    missing = sorted(k for k in space.space if k not in config and k not in LAUNCH_OPTIONS)
    if missing:
        raise where(f"reference.config needs a value for {', '.join(missing)} (the reference runs the kernel "
                    f"at that config)")
    return config


def scalar_problem(problem: Mapping[str, Any]) -> dict[str, Any]:
    """The problem values rules may see as ``problem.*`` (numbers and strings, not the tune sections)."""
    return {k: v for k, v in problem.items() if k not in TUNE_KEYS and isinstance(v, (int, float, str, bool))}
