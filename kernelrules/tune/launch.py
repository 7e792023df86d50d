"""Run a kernel for tuning (inside a benchmark worker): build inputs, launch, compute references.

This module imports torch and the user's kernel module: tuning runs the kernel, so
it must. It is imported only in the benchmark workers (and in tests).

A problem is either declared in the space file (:class:`DeclaredRunner`: tensors,
arguments, grid and reference as checked expressions) or a user's harness class
(:class:`HarnessRunner`, ``harness: file.py:Name``) with this interface::

    class Name:
        outputs = ["c"]                               # names of the output tensors
        def __init__(self, sizes: dict, device: str): ...
        def make(self, seed: int) -> dict:            # every tensor (inputs and outputs) by name
        def launch(self, kernel, tensors: dict, config: dict) -> None:
            # config: the constexprs plus num_warps / num_stages (kernel[grid](..., **config))
        def reference(self, tensors: dict) -> dict:   # expected outputs, ideally in float64
        def baseline(self, tensors: dict) -> None:    # optional: timed as the reference implementation
        def reference_lowp(self, tensors) -> dict:    # optional: the reference in the problem's precision
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

from ..expr import safeexpr
from .correctness import poison
from .problem import TORCH_DTYPES, ProblemSpec

_LOADED: dict[str, Any] = {}


def forget_loaded() -> None:
    """Load every kernel module afresh from now on: a benchmark worker given another problem (``load``) starts with
    new ``@triton.jit`` functions, whose in-memory caches hold no binary an earlier problem compiled (each problem's
    compiles are its own; its Triton cache on disk is its own too)."""
    _LOADED.clear()


def load_module(path: str) -> Any:
    """Import a Python file by path (its folder goes on sys.path for its own imports)."""
    path = str(Path(path).resolve())
    if path in _LOADED:
        return _LOADED[path]
    folder = str(Path(path).parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = f"_kernelrules_tune_{abs(hash(path)):x}_{Path(path).stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    _LOADED[path] = module
    return module


def load_inductor_kernel(path: str, name: str) -> Any | None:
    """An Inductor kernel (``@triton_heuristics.*`` on its def), loaded without Inductor's launcher.

    The ``@triton_heuristics.<kind>(...)`` decorators become identity functions written
    at their place (so the function's first line, which Triton reads its source from, is
    unchanged) and their metadata is never evaluated; of the module, only the imports
    the jit functions read (``triton``, ``tl``, ``triton_helpers``, ``libdevice``,
    ``tl_math``, ...) and the functions are kept: not ``set_driver_to_gpu()`` nor any
    other statement. A kernel embedded in an ``output_code.py``
    (``async_compile.triton('name', '''...''')``) is compiled with its lines in that
    file. None when ``name`` is not an Inductor kernel of ``path``.
    """
    import ast

    from ..specify.inductor import embedded_sources, read_inductor_file, heuristics_decorator, kernel_functions

    path = str(Path(path).resolve())
    key = f"{path}::inductor"
    functions = list(kernel_functions(Path(path), read_inductor_file(Path(path))))
    found = [(f, off) for f, off in functions if f.name == name and heuristics_decorator(f) is not None]
    if not found:
        return None
    if key in _LOADED and hasattr(_LOADED[key], name):
        return getattr(_LOADED[key], name)
    func, offset = found[0]
    source = read_inductor_file(Path(path))
    tree = ast.parse(source, filename=path)
    if offset:  # the kernel's own module is the embedded source
        for text, first_line in embedded_sources(tree):
            if first_line - 1 == offset:
                tree = ast.parse(text)
                ast.increment_lineno(tree, offset)
                break
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    read = {n.id for d in defs for n in ast.walk(d) if isinstance(n, ast.Name)}
    body: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound = {(a.asname or a.name).split(".")[0] for a in node.names}
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if bound & read or any(m.split(".")[0] in ("triton", "math") for m in modules):
                body.append(node)
        elif isinstance(node, ast.FunctionDef):
            decorators = []
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and heuristics_decorator(
                        ast.FunctionDef(name="", args=node.args, body=[], decorator_list=[decorator])) is not None:
                    identity = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[ast.arg(arg="f")], kwonlyargs=[],
                                                             kw_defaults=[], defaults=[]),
                                          body=ast.Name(id="f", ctx=ast.Load()))
                    decorator = ast.copy_location(identity, decorator)
                decorators.append(decorator)
            node.decorator_list = decorators
            body.append(node)
    module_ast = ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))
    import types

    module_name = f"_kernelrules_inductor_{abs(hash(path)):x}_{Path(path).stem}"
    module = types.ModuleType(module_name)
    module.__file__ = path
    sys.modules[module_name] = module
    exec(compile(module_ast, path, "exec"), module.__dict__)  # noqa: S102 - imports and the jit defs only
    _LOADED[key] = module
    return getattr(module, name)


def load_kernel(path: str, name: str) -> Any:
    """The kernel object, with any @triton.autotune wrapper removed (tune picks the config)."""
    inductor = load_inductor_kernel(path, name)
    obj = inductor if inductor is not None else getattr(load_module(path), name)
    from triton.runtime.autotuner import Autotuner

    while isinstance(obj, Autotuner):
        obj = obj.fn
    return obj


def launch_options(config: Mapping[str, Any]) -> dict[str, Any]:
    """A flat config as keyword arguments of a launch (constexprs and launch options)."""
    return {k: v for k, v in config.items() if v is not None}


class DeclaredRunner:
    """A problem declared in the space file."""

    def __init__(self, spec: ProblemSpec, device: str) -> None:
        import torch

        self.torch, self.spec, self.device = torch, spec, device
        self.kernel = load_kernel(spec.kernel_path, spec.kernel_name)
        self.outputs = list(spec.outputs)
        self._reference = {k: safeexpr.parse(v) for k, v in spec.reference.items()}
        self._args = {k: safeexpr.parse(v) for k, v in spec.args.items()}
        self._grid = [safeexpr.parse(g, torch_allowed=False) for g in spec.grid]
        self._baseline = safeexpr.parse(spec.baseline) if spec.baseline else None
        self._pristine: dict[int, Any] = {}  # in-place outputs as made: restored before every checked launch

    def make(self, sizes: Mapping[str, int], seed: int) -> dict[str, Any]:
        torch = self.torch
        generator = torch.Generator(device=self.device).manual_seed(seed)
        tensors = {}
        for name, tensor in self.spec.inputs.items():
            shape = self.spec.shape(tensor, sizes)
            dtype = getattr(torch, TORCH_DTYPES[tensor.dtype])
            tensors[name] = _fill(torch, tensor.init, shape, dtype, self.device, generator)
        for name, tensor in self.spec.outputs.items():
            shape = self.spec.shape(tensor, sizes)
            dtype = getattr(torch, TORCH_DTYPES[tensor.dtype])
            if tensor.in_place:
                tensors[name] = _fill(torch, tensor.init, shape, dtype, self.device, generator)
                self._pristine[id(tensors[name])] = tensors[name].clone()
            else:
                tensors[name] = torch.empty(shape, dtype=dtype, device=self.device)
        return tensors

    def restore(self, tensor: Any) -> bool:
        """Put an in-place output back as it was made; False for a plain output (poison it)."""
        pristine = self._pristine.get(id(tensor))
        if pristine is None:
            return False
        tensor.copy_(pristine)
        return True

    def _env(self, tensors: Mapping[str, Any], sizes: Mapping[str, int], config: Mapping[str, Any]) -> dict:
        return {**self.spec.values, **config, **sizes, **tensors}

    def launch(self, config: Mapping[str, Any], tensors: Mapping[str, Any], sizes: Mapping[str, int],
               warmup: bool = False) -> Any:
        """Launch (or, with ``warmup``, only compile) the kernel; returns what Triton returns."""
        if not warmup:
            return self.prepare(config, tensors, sizes)()
        args, grid = self._bind(config, tensors, sizes)
        return self.kernel.warmup(**args, grid=grid, **launch_options(config))

    def prepare(self, config: Mapping[str, Any], tensors: Mapping[str, Any], sizes: Mapping[str, int]
                ) -> Callable[[], Any]:
        """A launch with its arguments and grid evaluated once (what the timing loop calls)."""
        args, grid = self._bind(config, tensors, sizes)
        kernel, options = self.kernel[grid], launch_options(config)
        return lambda: kernel(**args, **options)

    def _bind(self, config: Mapping[str, Any], tensors: Mapping[str, Any], sizes: Mapping[str, int]
              ) -> tuple[dict[str, Any], tuple[int, ...]]:
        env = self._env(tensors, sizes, config)
        args = {}
        for name in self.spec.kernel_args:
            if name in self._args:
                args[name] = self._args[name].evaluate(env)
            elif name in tensors:
                args[name] = tensors[name]
            else:
                args[name] = sizes[name]
        return args, tuple(int(g.evaluate(env)) for g in self._grid)

    def reference(self, tensors: Mapping[str, Any], sizes: Mapping[str, int], precise: bool = True) -> dict[str, Any]:
        torch = self.torch
        if self.spec.reference_config is not None:
            return self._reference_launch(tensors, sizes) if precise else {}
        inputs = {n: tensors[n] for n in self.spec.inputs}
        if precise:
            inputs = {n: t.double() if t.dtype.is_floating_point else t for n, t in inputs.items()}
        env = {**self.spec.values, **sizes, **inputs}
        out = {}
        for name, expr in self._reference.items():
            value = expr.evaluate(env)
            if not isinstance(value, torch.Tensor):
                value = torch.as_tensor(value, device=self.device)
            out[name] = value.double() if precise and value.dtype.is_floating_point else value
        return out

    def _reference_launch(self, tensors: Mapping[str, Any], sizes: Mapping[str, int]) -> dict[str, Any]:
        """``reference: {config: ...}``: the kernel at the reference config, on copies, outputs poisoned first.

        There is no float64 reference then: the outputs are the kernel's own, in its
        precision, and a config is compared with them under the dtype's tolerances.
        """
        copies = {k: v.clone() if hasattr(v, "clone") else v for k, v in tensors.items()}
        for name in self.outputs:
            pristine = self._pristine.get(id(tensors[name]))
            if pristine is not None:
                copies[name].copy_(pristine)
            else:
                poison(copies[name])
        self.prepare(self.spec.reference_config or {}, copies, sizes)()
        if self.device != "cpu":
            self.torch.cuda.synchronize()
        return {name: copies[name].double() if copies[name].dtype.is_floating_point else copies[name]
                for name in self.outputs}

    def baseline(self, tensors: Mapping[str, Any], sizes: Mapping[str, int]) -> Callable[[], Any]:
        if self.spec.reference_config is not None and not self._baseline:
            return self.prepare(self.spec.reference_config, tensors, sizes)
        expr = self._baseline or next(iter(self._reference.values()))
        env = {**self.spec.values, **sizes, **tensors}
        return lambda: expr.evaluate(env)


class HarnessRunner:
    """A problem run by the user's harness class."""

    def __init__(self, spec: ProblemSpec, device: str) -> None:
        import torch

        self.torch, self.spec, self.device = torch, spec, device
        self.kernel = load_kernel(spec.kernel_path, spec.kernel_name)
        path, name = spec.harness  # type: ignore[misc]
        self.cls = getattr(load_module(path), name)
        self._instances: dict[tuple, Any] = {}
        self.outputs = list(getattr(self.cls, "outputs", []) or [])
        if not self.outputs:
            raise ValueError(f"harness {name} has no 'outputs' list")

    def harness_for(self, sizes: Mapping[str, int]) -> Any:
        """The harness instance for ``sizes`` (one per distinct sizes)."""
        key = tuple(sorted(sizes.items()))
        if key not in self._instances:
            self._instances[key] = self.cls(dict(sizes), self.device)
        return self._instances[key]

    def make(self, sizes: Mapping[str, int], seed: int) -> dict[str, Any]:
        return dict(self.harness_for(sizes).make(seed))

    def launch(self, config: Mapping[str, Any], tensors: Mapping[str, Any], sizes: Mapping[str, int],
               warmup: bool = False) -> Any:
        return self.harness_for(sizes).launch(self.kernel, tensors, launch_options(config))

    def prepare(self, config: Mapping[str, Any], tensors: Mapping[str, Any], sizes: Mapping[str, int]
                ) -> Callable[[], Any]:
        harness, options = self.harness_for(sizes), launch_options(config)
        return lambda: harness.launch(self.kernel, tensors, options)

    def reference(self, tensors: Mapping[str, Any], sizes: Mapping[str, int], precise: bool = True) -> dict[str, Any]:
        harness = self.harness_for(sizes)
        if not precise:
            method = getattr(harness, "reference_lowp", None)
            if method is None:
                return {}
            return _as_outputs(method(tensors), self.outputs)
        result = _as_outputs(harness.reference(tensors), self.outputs)
        return {k: v.double() if v.dtype.is_floating_point else v for k, v in result.items()}

    def baseline(self, tensors: Mapping[str, Any], sizes: Mapping[str, int]) -> Callable[[], Any]:
        harness = self.harness_for(sizes)
        method = getattr(harness, "baseline", None)
        if method is None:
            return lambda: harness.reference(tensors)
        return lambda: method(tensors)


def _as_outputs(value: Any, names: list[str]) -> dict[str, Any]:
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, (tuple, list)):
        return dict(zip(names, value))
    return {names[0]: value}


def _fill(torch: Any, init: str, shape: tuple, dtype: Any, device: str, generator: Any) -> Any:
    if init == "zeros":
        return torch.zeros(shape, dtype=dtype, device=device)
    if init == "ones":
        return torch.ones(shape, dtype=dtype, device=device)
    if init == "arange":
        count = 1
        for extent in shape:
            count *= extent
        return torch.arange(count, device=device).reshape(shape).to(dtype)
    if init == "randint" or not (dtype.is_floating_point):
        low, high = (0, 2) if dtype == torch.bool else (-4, 5)
        return torch.randint(low, high, shape, generator=generator, device=device).to(dtype)
    if init == "rand":
        return torch.rand(shape, generator=generator, device=device, dtype=torch.float32).to(dtype)
    return torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dtype)


def make_runner(spec: ProblemSpec, device: str) -> Any:
    """The runner of a problem: the user's harness when the space names one."""
    return HarnessRunner(spec, device) if spec.harness else DeclaredRunner(spec, device)


def poison_outputs(runner: Any, tensors: Mapping[str, Any]) -> None:
    """Poison every output before a checked launch; an in-place output is restored to its inputs instead."""
    restore = getattr(runner, "restore", None)
    for name in runner.outputs:
        if restore is None or not restore(tensors[name]):
            poison(tensors[name])


def launch_facts(compiled: Any) -> dict[str, Any]:
    """Registers, spills and shared memory of the kernel the launch used (GPU only)."""
    if compiled is None:
        return {}
    facts = {}
    for key, attr in (("registers", "n_regs"), ("spills", "n_spills")):
        value = getattr(compiled, attr, None)
        if isinstance(value, int):
            facts[key] = value
    shared = getattr(getattr(compiled, "metadata", None), "shared", None)
    if isinstance(shared, int):
        facts["shared_bytes"] = shared
    return facts
