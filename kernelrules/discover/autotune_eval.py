"""Evaluate a ``@triton.autotune(configs=...)`` expression without running the module.

Config lists are usually built by plain Python: a literal list of ``triton.Config``
calls, a comprehension over literal tuples or ``range(...)``, or a module-level
helper function that returns such a list (built by a comprehension or by a loop that
appends). :class:`ConfigEvaluator` is a small interpreter over the syntax tree for
exactly that subset, with a step limit. It never calls ``eval``/``exec`` and never
calls anything from the user's module except the helper functions it interprets
itself. Anything outside the subset raises :class:`Unsupported` with a message that
says what was met and what to do instead.

Supported: literals, lists/tuples/dicts/sets, module-level constants (also
``tl.constexpr(<literal>)``), arithmetic, comparisons, boolean operators, ``x if c
else y``, subscripts and slices, comprehensions (nested, with ``if``, tuple targets),
``range``/``len``/``min``/``max``/``abs``/``list``/``tuple``/``dict``/``zip``/
``enumerate``/``sorted``/``reversed``/``int``/``bool``/``str``, ``itertools.product``,
calls of module-level functions (assignments, ``for``, ``if``, ``return``,
``list.append``/``extend``, ``+=``), and ``triton.Config`` / ``Config`` with the
kwargs dict positional or as ``kwargs=``; a config's ``kwargs``, ``num_warps``,
``num_stages``, ... can be read back (filters like ``keep(conf)``).

Why over 400 lines: an interpreter: one visitor method per Python node type it accepts, with its
bounds checks; splitting a visitor scatters the language it accepts.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..bounds import MAX_SEQUENCE, TooLarge, check_binop
from ..config import KernelConfig
from .pyast import dotted_name
from ..expr.pyops import BINARY, COMPARE, UNARY, cdiv, compare_chain, conditional, make_slice, next_power_of_2, subset

#: Interpreter steps (nodes evaluated) before giving up; real config lists need a few thousand.
DEFAULT_STEP_LIMIT = 200_000

#: Largest list or range the interpreter builds.


def _check_before(op: ast.operator, left: Any, right: Any, node: ast.AST) -> None:
    """Refuse, before computing it, a result over the bounds of :mod:`kernelrules.bounds`."""
    try:
        check_binop(op, left, right)
    except TooLarge as exc:
        raise Unsupported(str(exc), node) from None

_BINOPS = subset(BINARY, (ast.MatMult,))
_UNARY = UNARY
_COMPARE = COMPARE
_BUILTINS: dict[str, Callable[..., Any]] = {
    "len": len, "min": min, "max": max, "abs": abs, "list": list, "tuple": tuple, "dict": dict,
    "zip": lambda *a: list(zip(*a)), "enumerate": lambda *a: list(enumerate(*a)),
    "sorted": sorted, "reversed": lambda a: list(reversed(a)), "int": int, "bool": bool, "str": str,
    "set": set, "sum": sum, "any": any, "all": all,
}


#: Pure integer helpers of Triton that heuristics and config lists use.
_TRITON_HELPERS: dict[str, Callable[..., Any]] = {
    "triton.cdiv": lambda a, b: cdiv(int(a), int(b)),
    "triton.next_power_of_2": next_power_of_2,
    "math.ceil": lambda x: -(-x // 1) if isinstance(x, int) else int(-(-x // 1)),
    "math.log2": lambda x: __import__("math").log2(x),
}
#: ``triton.Config`` keyword arguments that are launch options, not constexprs.
_CONFIG_OPTION_KWARGS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
#: ``triton.Config`` keyword arguments that do not change the compiled kernel.
_CONFIG_IGNORED_KWARGS = ("pre_hook", "ir_override")


#: ``os.environ.get(name, default)`` and ``os.getenv``: evaluated as if the variable were unset.
_ENVIRONMENT_GETTERS = ("os.environ.get", "os.getenv")
#: Methods of str values the interpreter applies (pure, no side effects).
_STR_METHODS = frozenset({"lower", "upper", "strip", "lstrip", "rstrip", "startswith", "endswith",
                          "split", "replace", "isdigit", "format", "join"})
_MISSING = object()


def _relocate(value: Any, node: ast.AST) -> Any:
    """Configs evaluated in another module, re-pointed at ``node`` (where this file uses them)."""
    if isinstance(value, ConfigSite):
        return ConfigSite(value.config, getattr(node, "lineno", value.line), getattr(node, "col_offset", value.column),
                          value.pre_hook)
    if isinstance(value, list):
        return [_relocate(v, node) for v in value]
    if isinstance(value, tuple):
        return tuple(_relocate(v, node) for v in value)
    return value


class Unsupported(Exception):
    """The expression uses something outside the supported subset."""

    def __init__(self, message: str, node: ast.AST | None = None) -> None:
        self.line = getattr(node, "lineno", None)
        self.column = getattr(node, "col_offset", None)
        where = f" (line {self.line})" if self.line else ""
        super().__init__(message + where)


@dataclass(frozen=True)
class ConfigSite:
    """One evaluated config and the ``triton.Config(...)`` call that produced it."""

    config: KernelConfig
    line: int
    column: int
    #: The ``triton.Config`` has a ``pre_hook`` (not ``None``): the user's code runs before each of its launches.
    pre_hook: bool = False


@dataclass
class ModuleScope:
    """What the evaluator may read from the module: constants, functions and triton names.

    ``resolve`` maps a dotted name as written (``tt.Config``, ``Config``) to its
    canonical dotted name (``triton.Config``) using the file's imports.
    """

    constants: Mapping[str, ast.expr]
    functions: Mapping[str, ast.FunctionDef]
    resolve: Callable[[str], str]
    #: Every top-level assignment of a name, in source order (``configs = [...]`` then
    #: ``configs = [Config(...) for ... in configs]``): a constant that reads its own name
    #: reads the assignment before.
    history: Mapping[str, Sequence[ast.expr]] = field(default_factory=dict)
    #: ``name -> (scope, name there)`` for a name imported from another module of the same
    #: package (``from .kernels import configs``), or None.
    imported: Callable[[str], "tuple[ModuleScope, str] | None"] | None = None


class _Return(Exception):
    """Carries a function's return value out of nested statements."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _is_triton_name(canonical: str, last: str) -> bool:
    """Whether a canonical dotted name is ``triton...<last>``."""
    return canonical.rsplit(".", 1)[-1] == last and canonical.split(".", 1)[0] == "triton"


class ConfigEvaluator:
    """Interprets the whitelisted subset of Python that builds autotune config lists."""

    def __init__(self, scope: ModuleScope, step_limit: int = DEFAULT_STEP_LIMIT) -> None:
        self.scope = scope
        self.step_limit = step_limit
        self.steps = 0
        self._resolving: set[str] = set()
        self._constant_cache: dict[str, Any] = {}
        self._constant_depth: dict[str, int] = {}
        self._foreign: dict[int, "ConfigEvaluator"] = {}

    # -- entry points ---------------------------------------------------------

    def configs(self, node: ast.expr) -> list[ConfigSite]:
        """Evaluate ``node`` to a list of configs, or raise :class:`Unsupported`."""
        value = self.eval(node, {})
        if isinstance(value, ConfigSite):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise Unsupported(f"configs evaluated to {type(value).__name__}, not a list", node)
        bad = [v for v in value if not isinstance(v, ConfigSite)]
        if bad:
            raise Unsupported(f"configs list holds a {type(bad[0]).__name__}, not triton.Config", node)
        return list(value)

    def eval(self, node: ast.expr, env: dict[str, Any]) -> Any:
        """Evaluate one expression in a local environment."""
        self._step(node)
        handler = getattr(self, f"_eval_{type(node).__name__}", None)
        if handler is None:
            raise Unsupported(f"unsupported expression {type(node).__name__}: {ast.unparse(node)[:60]}", node)
        return handler(node, env)

    # -- bookkeeping ----------------------------------------------------------

    def _step(self, node: ast.AST) -> None:
        self.steps += 1
        if self.steps > self.step_limit:
            raise Unsupported(f"gave up after {self.step_limit} evaluation steps", node)

    @staticmethod
    def _check_size(value: Any, node: ast.AST) -> Any:
        if isinstance(value, (list, tuple, range, str)) and len(value) > MAX_SEQUENCE:
            raise Unsupported(f"sequence longer than {MAX_SEQUENCE}", node)
        return value

    # -- expressions ----------------------------------------------------------

    def _eval_Constant(self, node: ast.Constant, env: dict) -> Any:
        return node.value

    def _eval_Name(self, node: ast.Name, env: dict) -> Any:
        if node.id in env:
            return env[node.id]
        return self._module_constant(node.id, node)

    def _module_constant(self, name: str, node: ast.AST) -> Any:
        """The value of a module-level constant, evaluated once.

        A constant whose value reads its own name (``configs = [f(c) for c in configs]``)
        reads the assignment before it; a name imported from another module of the same
        package is evaluated there (configs it holds point at ``node``, where it is used).
        """
        if name in self._constant_cache:
            return self._constant_cache[name]
        if name in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[name]
        history = list(self.scope.history.get(name) or ())
        if not history and name in self.scope.constants:
            history = [self.scope.constants[name]]
        depth = self._constant_depth.get(name, 0)
        if depth >= len(history):
            foreign = self._foreign_value(name, node) if depth == 0 else _MISSING
            if foreign is not _MISSING:
                self._constant_cache[name] = foreign
                return foreign
            kind = "a function" if name in self.scope.functions else "not a module-level constant"
            raise Unsupported(f"name {name!r} is {kind}", node)
        self._constant_depth[name] = depth + 1
        try:
            value = self.eval(history[-1 - depth], {})
        finally:
            self._constant_depth[name] = depth
        if depth == 0:
            self._constant_cache[name] = value
        return value

    def _foreign_evaluator(self, name: str) -> "tuple[ConfigEvaluator, str] | None":
        """An evaluator over the module ``name`` is imported from (same package), sharing the step budget."""
        found = self.scope.imported(name) if self.scope.imported is not None else None
        if found is None:
            return None
        scope, there = found
        key = id(scope)
        if key not in self._foreign:
            self._foreign[key] = ConfigEvaluator(scope, self.step_limit)
        evaluator = self._foreign[key]
        evaluator.steps = self.steps
        return evaluator, there

    def _foreign_value(self, name: str, node: ast.AST) -> Any:
        """The value of an imported module-level constant, or ``_MISSING``."""
        found = self._foreign_evaluator(name)
        if found is None:
            return _MISSING
        evaluator, there = found
        if there not in evaluator.scope.constants and there not in evaluator.scope.history:
            if evaluator.scope.imported is None or evaluator.scope.imported(there) is None:
                return _MISSING
        try:
            value = evaluator._module_constant(there, node)
        finally:
            self.steps = evaluator.steps
        return _relocate(value, node)

    def _eval_List(self, node: ast.List, env: dict) -> list:
        out: list = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                out.extend(self.eval(elt.value, env))
            else:
                out.append(self.eval(elt, env))
        return self._check_size(out, node)

    def _eval_Tuple(self, node: ast.Tuple, env: dict) -> tuple:
        return tuple(self._eval_List(node, env))  # type: ignore[arg-type]

    def _eval_Set(self, node: ast.Set, env: dict) -> set:
        return set(self._eval_List(node, env))  # type: ignore[arg-type]

    def _eval_Dict(self, node: ast.Dict, env: dict) -> dict:
        out: dict = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                out.update(self.eval(value, env))
            else:
                out[self.eval(key, env)] = self.eval(value, env)
        return out

    def _eval_BinOp(self, node: ast.BinOp, env: dict) -> Any:
        op = _BINOPS.get(type(node.op))
        left, right = self.eval(node.left, env), self.eval(node.right, env)
        if op is None:
            raise Unsupported(f"unsupported operator {type(node.op).__name__}", node)
        if isinstance(node.op, ast.Pow) and isinstance(right, int) and right > 64:
            raise Unsupported("exponent too large", node)
        _check_before(node.op, left, right, node)  # refuse a huge result before computing it
        try:
            return self._check_size(op(left, right), node)
        except Exception as exc:  # noqa: BLE001 - any arithmetic failure is "cannot evaluate"
            raise Unsupported(f"{ast.unparse(node)[:60]} fails: {exc}", node) from None

    def _eval_UnaryOp(self, node: ast.UnaryOp, env: dict) -> Any:
        return _UNARY[type(node.op)](self.eval(node.operand, env))

    def _eval_BoolOp(self, node: ast.BoolOp, env: dict) -> Any:
        result: Any = None
        for value_node in node.values:
            result = self.eval(value_node, env)
            if isinstance(node.op, ast.And) and not result:
                return result
            if isinstance(node.op, ast.Or) and result:
                return result
        return result

    def _eval_Compare(self, node: ast.Compare, env: dict) -> bool:
        return compare_chain(node, lambda child: self.eval(child, env), _COMPARE)

    def _eval_IfExp(self, node: ast.IfExp, env: dict) -> Any:
        return conditional(node, lambda child: self.eval(child, env))

    def _eval_Subscript(self, node: ast.Subscript, env: dict) -> Any:
        value = self.eval(node.value, env)
        index = self.eval(node.slice, env)
        try:
            return value[index]
        except Exception as exc:  # noqa: BLE001
            raise Unsupported(f"{ast.unparse(node)[:60]} fails: {exc!r}", node) from None

    def _eval_Slice(self, node: ast.Slice, env: dict) -> slice:
        return make_slice(node, lambda child: self.eval(child, env))

    def _eval_JoinedStr(self, node: ast.JoinedStr, env: dict) -> str:
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                parts.append(format(self.eval(value.value, env)))
            else:
                parts.append(str(self.eval(value, env)))
        return "".join(parts)

    def _eval_Attribute(self, node: ast.Attribute, env: dict) -> Any:
        base = self.eval(node.value, env)
        if isinstance(base, ConfigSite):
            return self._config_attribute(base, node)
        raise Unsupported(f"attribute access {ast.unparse(node)[:60]}", node)

    @staticmethod
    def _config_attribute(site: ConfigSite, node: ast.Attribute) -> Any:
        """``conf.kwargs`` / ``conf.num_warps`` / ... of an evaluated config."""
        config = site.config
        if node.attr == "kwargs":
            return {**config.constexprs, **config.backend_options}
        if node.attr in _CONFIG_OPTION_KWARGS:
            return getattr(config, node.attr)
        raise Unsupported(f"triton.Config has no attribute {node.attr!r} kernelrules can read", node)

    # -- comprehensions -------------------------------------------------------

    def _eval_ListComp(self, node: ast.ListComp, env: dict) -> list:
        out: list = []
        self._comprehension(node.generators, 0, dict(env), lambda scope: out.append(self.eval(node.elt, scope)))
        return self._check_size(out, node)

    _eval_GeneratorExp = _eval_ListComp

    def _eval_SetComp(self, node: ast.SetComp, env: dict) -> set:
        return set(self._eval_ListComp(node, env))  # type: ignore[arg-type]

    def _eval_DictComp(self, node: ast.DictComp, env: dict) -> dict:
        out: dict = {}

        def add(scope: dict) -> None:
            out[self.eval(node.key, scope)] = self.eval(node.value, scope)

        self._comprehension(node.generators, 0, dict(env), add)
        return out

    def _comprehension(self, generators: list[ast.comprehension], index: int, env: dict, emit: Callable) -> None:
        """Run generator ``index`` and the ones nested in it, calling ``emit`` per element."""
        if index == len(generators):
            emit(env)
            return
        gen = generators[index]
        if gen.is_async:
            raise Unsupported("async comprehension", gen.iter)
        for item in self._iterable(gen.iter, env):
            self._step(gen.iter)
            self._bind(gen.target, item, env)
            if all(self.eval(cond, env) for cond in gen.ifs):
                self._comprehension(generators, index + 1, env, emit)

    def _iterable(self, node: ast.expr, env: dict) -> list:
        value = self.eval(node, env)
        if isinstance(value, (list, tuple, range, dict, set, str)):
            return list(value)
        raise Unsupported(f"cannot iterate over {type(value).__name__}", node)

    def _bind(self, target: ast.expr, value: Any, env: dict) -> None:
        """Assign ``value`` to a name or (nested) tuple/list target."""
        if isinstance(target, ast.Name):
            env[target.id] = value
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            items = list(value)
            if len(items) != len(target.elts):
                raise Unsupported(f"cannot unpack {len(items)} values into {len(target.elts)} names", target)
            for sub, item in zip(target.elts, items):
                self._bind(sub, item, env)
            return
        raise Unsupported(f"unsupported assignment target {ast.unparse(target)}", target)

    # -- calls ----------------------------------------------------------------

    def _eval_Call(self, node: ast.Call, env: dict) -> Any:
        dotted = dotted_name(node.func)
        if dotted is None and isinstance(node.func, ast.Attribute):
            return self._value_method(node, self.eval(node.func.value, env), node.func.attr, env)
        if dotted is None:
            raise Unsupported(f"call of {ast.unparse(node.func)[:60]}", node)
        if "." in dotted and dotted.split(".", 1)[0] in env:
            return self._method_call(node, dotted, env)
        canonical = self.scope.resolve(dotted)
        if _is_triton_name(canonical, "Config"):
            return self._triton_config(node, env)
        if _is_triton_name(canonical, "constexpr") and len(node.args) == 1:
            return self.eval(node.args[0], env)
        if dotted in self.scope.functions and dotted not in env:
            return self._call_function(self.scope.functions[dotted], node, env)
        if canonical in _ENVIRONMENT_GETTERS:
            # The environment is read as unset: the call's default (its second argument).
            args, kwargs = self._arguments(node, env)
            return args[1] if len(args) > 1 else kwargs.get("default")
        if "." not in dotted and dotted not in env and dotted not in _BUILTINS:
            found = self._foreign_evaluator(dotted)
            if found is not None and found[1] in found[0].scope.functions:
                evaluator, there = found
                args, kwargs = self._arguments(node, env)
                evaluator.steps = self.steps
                try:
                    value = evaluator.call(evaluator.scope.functions[there], args, kwargs, node)
                finally:
                    self.steps = evaluator.steps
                return _relocate(value, node)
        args, kwargs = self._arguments(node, env)
        if canonical == "range":
            return self._check_size(range(*args), node)
        if canonical == "itertools.product":
            return self._check_size(list(itertools.product(*args, **kwargs)), node)
        if canonical in _TRITON_HELPERS:
            try:
                return _TRITON_HELPERS[canonical](*args, **kwargs)
            except Exception as exc:  # noqa: BLE001
                raise Unsupported(f"{ast.unparse(node)[:60]} fails: {exc!r}", node) from None
        if dotted in _BUILTINS and dotted == canonical:
            try:
                return _BUILTINS[dotted](*args, **kwargs)
            except Exception as exc:  # noqa: BLE001
                raise Unsupported(f"{ast.unparse(node)[:60]} fails: {exc!r}", node) from None
        raise Unsupported(f"configs come from a call to {dotted}(), which kernelrules does not evaluate", node)

    def _arguments(self, node: ast.Call, env: dict) -> tuple[list, dict]:
        args: list = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                args.extend(self.eval(arg.value, env))
            else:
                args.append(self.eval(arg, env))
        kwargs: dict = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self.eval(kw.value, env))
            else:
                kwargs[kw.arg] = self.eval(kw.value, env)
        return args, kwargs

    def _triton_config(self, node: ast.Call, env: dict) -> ConfigSite:
        """Evaluate ``triton.Config(kwargs, num_warps=..., ...)`` into a :class:`ConfigSite`."""
        values: dict[str, Any] = {}
        positional = [self.eval(a, env) for a in node.args]
        names = ("kwargs", *_CONFIG_OPTION_KWARGS)
        if len(positional) > len(names):
            raise Unsupported("triton.Config with too many positional arguments", node)
        given = dict(zip(names, positional))
        pre_hook = False
        for kw in node.keywords:
            if kw.arg is None:
                raise Unsupported("triton.Config(**...) is not supported", node)
            if kw.arg in _CONFIG_IGNORED_KWARGS:
                pre_hook = pre_hook or (kw.arg == "pre_hook" and not (isinstance(kw.value, ast.Constant)
                                                                      and kw.value.value is None))
                continue
            given[kw.arg] = self.eval(kw.value, env)
        kwargs = given.pop("kwargs", {}) or {}
        if not isinstance(kwargs, dict):
            raise Unsupported("triton.Config kwargs is not a dict", node)
        values.update(kwargs)
        for name, value in given.items():
            if name not in _CONFIG_OPTION_KWARGS:
                raise Unsupported(f"triton.Config got an unknown keyword {name!r}", node)
            if value is not None:
                values[name] = value
        return ConfigSite(KernelConfig.from_dict(values), node.lineno, node.col_offset, pre_hook)

    def _value_method(self, node: ast.Call, target: Any, method: str, env: dict) -> Any:
        """A whitelisted method of a computed str value (``os.environ.get(...).lower()``)."""
        args, kwargs = self._arguments(node, env)
        if isinstance(target, str) and method in _STR_METHODS:
            return getattr(target, method)(*args, **kwargs)
        if isinstance(target, dict) and method in ("get", "items", "keys", "values"):
            result = getattr(target, method)(*args)
            return list(result) if method != "get" else result
        raise Unsupported(f"method call .{method}() on a {type(target).__name__} is not supported", node)

    def _method_call(self, node: ast.Call, dotted: str, env: dict) -> Any:
        """``local.append(x)`` / ``local.extend(xs)`` on a list local to a helper function."""
        owner, _, method = dotted.partition(".")
        target = env[owner]
        args, kwargs = self._arguments(node, env)
        if isinstance(target, list) and method in ("append", "extend") and not kwargs and len(args) == 1:
            getattr(target, method)(args[0])
            self._check_size(target, node)
            return None
        if isinstance(target, dict) and method in ("get", "items", "keys", "values"):
            result = getattr(target, method)(*args)
            return list(result) if method != "get" else result
        if isinstance(target, str) and method in _STR_METHODS:
            return getattr(target, method)(*args, **kwargs)
        raise Unsupported(f"method call {dotted}() is not supported", node)

    def _call_function(self, func: ast.FunctionDef, node: ast.Call, env: dict) -> Any:
        """Interpret a module-level function's body with the call's arguments bound."""
        args, kwargs = self._arguments(node, env)
        return self.call(func, args, kwargs, node)

    def call(self, func: ast.FunctionDef, args: list, kwargs: dict, node: ast.AST) -> Any:
        """Interpret ``func``'s body with evaluated arguments bound (lint runs a kernel's
        ``early_config_prune`` on its configs this way); ``node`` locates errors."""
        if func.name in self._resolving:
            raise Unsupported(f"recursive call of {func.name}()", node)
        local = self._bind_parameters(func, args, kwargs, node)
        self._resolving.add(func.name)
        try:
            self._run_block(func.body, local)
        except _Return as ret:
            return ret.value
        finally:
            self._resolving.discard(func.name)
        return None

    def _bind_parameters(self, func: ast.FunctionDef, args: list, kwargs: dict, node: ast.AST) -> dict:
        spec = func.args
        if spec.posonlyargs or (spec.vararg and len(args) > len(spec.args)):
            raise Unsupported(f"{func.name}() takes positional-only parameters or extra *args", node)
        params = [*spec.args, *spec.kwonlyargs]
        defaults: dict[str, ast.expr] = dict(zip([a.arg for a in spec.args[len(spec.args) - len(spec.defaults):]], spec.defaults))
        defaults.update({a.arg: d for a, d in zip(spec.kwonlyargs, spec.kw_defaults) if d is not None})
        if len(args) > len(spec.args):
            raise Unsupported(f"too many arguments for {func.name}()", node)
        local = {a.arg: v for a, v in zip(spec.args, args)}
        extra = {k: v for k, v in kwargs.items() if k not in {p.arg for p in params}}
        if extra and not spec.kwarg:
            raise Unsupported(f"{func.name}() got unexpected keyword arguments {sorted(extra)}", node)
        local.update({k: v for k, v in kwargs.items() if k not in extra})
        if spec.vararg:  # an unused *args binds to ()
            local[spec.vararg.arg] = ()
        if spec.kwarg:  # and **kwargs to the extra keywords (none, for early_config_prune)
            local[spec.kwarg.arg] = extra
        for param in params:
            if param.arg not in local:
                if param.arg not in defaults:
                    raise Unsupported(f"{func.name}() is missing argument {param.arg!r}", node)
                local[param.arg] = self.eval(defaults[param.arg], {})
        return local

    # -- statements -----------------------------------------------------------

    def _run_block(self, body: list[ast.stmt], env: dict) -> None:
        for stmt in body:
            self._step(stmt)
            handler = getattr(self, f"_exec_{type(stmt).__name__}", None)
            if handler is None:
                raise Unsupported(f"unsupported statement {type(stmt).__name__} in a config helper", stmt)
            handler(stmt, env)

    def _exec_Expr(self, stmt: ast.Expr, env: dict) -> None:
        if isinstance(stmt.value, ast.Constant):  # docstring
            return
        self.eval(stmt.value, env)

    def _exec_Pass(self, stmt: ast.Pass, env: dict) -> None:
        return

    def _exec_Return(self, stmt: ast.Return, env: dict) -> None:
        raise _Return(self.eval(stmt.value, env) if stmt.value is not None else None)

    def _exec_Assign(self, stmt: ast.Assign, env: dict) -> None:
        value = self.eval(stmt.value, env)
        for target in stmt.targets:
            self._bind(target, value, env)

    def _exec_AnnAssign(self, stmt: ast.AnnAssign, env: dict) -> None:
        if stmt.value is not None:
            self._bind(stmt.target, self.eval(stmt.value, env), env)

    def _exec_AugAssign(self, stmt: ast.AugAssign, env: dict) -> None:
        if not isinstance(stmt.target, ast.Name):
            raise Unsupported("augmented assignment to a non-name", stmt)
        op = _BINOPS.get(type(stmt.op))
        if op is None:
            raise Unsupported(f"unsupported operator {type(stmt.op).__name__}", stmt)
        current = self._eval_Name(ast.Name(id=stmt.target.id, ctx=ast.Load()), env)
        value = self.eval(stmt.value, env)
        if isinstance(current, list) and isinstance(stmt.op, ast.Add):
            current.extend(value)
        else:
            env[stmt.target.id] = op(current, value)
        self._check_size(env.get(stmt.target.id), stmt)

    def _exec_If(self, stmt: ast.If, env: dict) -> None:
        self._run_block(stmt.body if self.eval(stmt.test, env) else stmt.orelse, env)

    def _exec_For(self, stmt: ast.For, env: dict) -> None:
        for item in self._iterable(stmt.iter, env):
            self._bind(stmt.target, item, env)
            self._run_block(stmt.body, env)
        self._run_block(stmt.orelse, env)
