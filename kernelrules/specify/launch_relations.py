"""Constexpr values a launcher derives from the kernel's other arguments: ``BK = next_power_of_2(K)``.

A constexpr nobody gave is guessed by its name (:mod:`kernelrules.specify.constexpr_guess`): a block
size 128, any other integer 16. Launchers often compute a block size from another argument they
pass to the same launch::

    B, T, H, K = k.shape
    BK = min(256, max(16, triton.next_power_of_2(K)))
    kernel[grid](q, k, ..., K=K, BK=BK)

Guessing ``K=16`` and ``BK=128`` separately gives a kernel no launch would ever build (a 128-wide
tile over a 16-wide head: compiles of many seconds, findings on a shape that never runs).
:func:`derived_values` walks the launcher's statements up to the launch, in order, with the values
of the launch's other arguments (the config's, the call's literals, the guesses) bound to the
names the launch passes them from, and evaluates the argument there. It reads, never runs, the
source (:func:`kernelrules.specify.constexpr_eval.evaluate`: literals, arithmetic, ``min``/``max``,
``triton.next_power_of_2``, ``triton.cdiv``, module constants). The walk:

- ``x = e`` and ``a, b = e1, e2`` bind what evaluates, and forget what does not;
- an ``if`` whose test evaluates takes its branch; one whose test does not walks both and keeps
  the names both branches leave equal (``BV = min(128, ...)`` / ``min(64, ...)`` agree on small ``V``);
  the branch holding the launch is the one taken;
- a loop, ``with`` or ``try`` body forgets the names it binds (its values depend on the run).

The first launch in the kernel's file that yields a value wins, as for literals.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Iterable, Iterator, Mapping

from .constexpr_eval import Scope, Unknown, evaluate
from ..discover.pyast import MarkedLines

#: Types a derived value may have to be used (a block size, a flag, a dtype written ``"tl.float16"``).
_VALUE_TYPES = (bool, int, str)
#: Types a launcher local may hold while walking.
_LOCAL_TYPES = (bool, int, float, str, tuple)
#: Errors an evaluation may end in: the value is unknown.
_UNKNOWN = (Unknown, RecursionError, TypeError, ValueError, ArithmeticError)


class _Locals(dict):
    """The launcher's known locals; remembers which names an evaluation read."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        super().__init__(values)
        self.read: set[str] = set()

    def __getitem__(self, name: str) -> Any:
        self.read.add(name)
        return super().__getitem__(name)


class _Walk:
    """Straight-line values of a launcher's locals up to one launch; each local remembers the seeds its
    value rests on. ``seeds``: names the launch passes with a known value; those in ``soft`` (guesses)
    give way to a value the launcher computes for them, the others (given values) are never rebound."""

    def __init__(self, seeds: Mapping[str, Any], soft: Iterable[str], constants: Mapping[str, ast.expr]) -> None:
        self.initial = dict(seeds)
        self.values = _Locals(seeds)
        self.rests_on: dict[str, frozenset[str]] = {name: frozenset({name}) for name in seeds}
        self.soft = frozenset(soft) & frozenset(seeds)
        self.seeds = frozenset(seeds) - self.soft
        self.scope = Scope(frozenset(), constants=constants)

    def unknown(self, name: str) -> None:
        """``name``'s value is not known now: a guess keeps its seed, any other local is forgotten."""
        if name in self.soft:
            self.values[name], self.rests_on[name] = self.initial[name], frozenset({name})
        else:
            self.values.pop(name, None)
            self.rests_on.pop(name, None)

    def evaluate(self, node: ast.expr) -> tuple[Any, frozenset[str]]:
        """The value of ``node`` with the locals known now, and the seeds it rests on; raises Unknown."""
        self.values.read = set()
        value = evaluate(node, self.scope, self.values)
        return value, frozenset().union(*(self.rests_on.get(n, ()) for n in self.values.read))

    def bind(self, name: str, node: ast.expr | None) -> None:
        """``name = node`` (None: a value the walk cannot know)."""
        if name in self.seeds:
            return
        try:
            if node is None:
                raise Unknown(name)
            value, rests = self.evaluate(node)
            if not isinstance(value, _LOCAL_TYPES):
                raise Unknown(name)
        except _UNKNOWN:
            self.unknown(name)
            return
        self.values[name], self.rests_on[name] = value, rests

    def forget(self, nodes: Iterable[ast.AST]) -> None:
        """Forget every name bound anywhere in ``nodes`` (a loop body, a ``with``)."""
        for node in nodes:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                    self.bind(sub.id, None)

    def statements(self, body: list[ast.stmt], call: ast.Call) -> bool:
        """Walk ``body`` in order up to the statement holding ``call``; True once it is reached."""
        for statement in body:
            holds = statement.lineno <= call.lineno <= (statement.end_lineno or statement.lineno)
            if holds and not isinstance(statement, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
                return True
            if self.statement(statement, call if holds else None):
                return True
        return False

    def statement(self, node: ast.stmt, call: ast.Call | None) -> bool:
        """One statement; ``call``: the launch, when it sits inside this statement."""
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self.assign(target, node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            self.bind(node.target.id, ast.BinOp(ast.Name(node.target.id, ast.Load()), node.op, node.value))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            self.bind(node.target.id, node.value)
        elif isinstance(node, ast.If):
            return self.branch(node, call)
        elif isinstance(node, (ast.For, ast.While, ast.With, ast.Try)):
            self.forget([node])
            if call is not None:  # the launch is in this body: walk to it (its loop variables stay unknown)
                bodies = [node.body] + ([h.body for h in node.handlers] if isinstance(node, ast.Try) else [])
                return any(self.statements(body, call) for body in bodies if _holds(body, call))
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.forget(n for n in ast.iter_child_nodes(node) if isinstance(n, ast.expr))  # walrus and friends
        return False

    def assign(self, target: ast.expr, value: ast.expr) -> None:
        """``target = value``: a name, or a tuple of names from a tuple of the same length."""
        if isinstance(target, ast.Name):
            self.bind(target.id, value)
        elif (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
              and len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in target.elts)):
            results = []
            for element in value.elts:  # every right-hand side before any binding: ``a, b = b, a``
                try:
                    results.append(self.evaluate(element))
                except _UNKNOWN:
                    results.append(None)
            for element, result in zip(target.elts, results):
                if isinstance(element, ast.Name) and element.id not in self.seeds:
                    if result is None or not isinstance(result[0], _LOCAL_TYPES):
                        self.bind(element.id, None)
                    else:
                        self.values[element.id], self.rests_on[element.id] = result
                else:
                    self.forget([element])
        else:
            self.forget([target])

    def branch(self, node: ast.If, call: ast.Call | None) -> bool:
        """An ``if``: the branch its test or the launch decides, else both, keeping what they agree on."""
        if call is not None:
            taken = node.body if _holds(node.body, call) else node.orelse
            return self.statements(taken, call)
        try:
            test, _ = self.evaluate(node.test)
            return self.statements(node.body if test else node.orelse, _NOWHERE)
        except _UNKNOWN:
            pass
        before = (dict(self.values), dict(self.rests_on))
        self.statements(node.body, _NOWHERE)
        after_body = (dict(self.values), dict(self.rests_on))
        self.values, self.rests_on = _Locals(before[0]), dict(before[1])
        self.statements(node.orelse, _NOWHERE)
        for name in set(self.values) | set(after_body[0]):
            if name in self.seeds:
                continue
            if name in self.values and name in after_body[0] and repr(self.values[name]) == repr(after_body[0][name]):
                self.rests_on[name] = self.rests_on[name] | after_body[1][name]
            else:
                self.unknown(name)
        return False


#: A launch no statement holds: walk a whole body.
_NOWHERE = ast.Call(func=ast.Name("_", ast.Load()), args=[], keywords=[], lineno=-1, end_lineno=-1)


def _holds(body: list[ast.stmt], call: ast.Call) -> bool:
    """Whether one of ``body``'s statements holds ``call``."""
    return any(s.lineno <= call.lineno <= (s.end_lineno or s.lineno) for s in body)


def derived_values(kernel: Any, module: Any, known: Mapping[str, Any],
                   wanted: Iterable[str]) -> dict[str, tuple[Any, set[str]]]:
    """For each parameter in ``wanted`` that a launch in ``module`` passes as an expression its launcher
    derives from values in ``known`` (parameter name -> value), the value and the parameters it rests on.

    ``kernel`` is the discovered kernel (its name and parameters), ``module`` its parsed module.
    Parameters whose argument cannot be evaluated are left out.
    """
    wanted = set(wanted)
    found: dict[str, tuple[Any, set[str]]] = {}
    for call, function in _launches(module, kernel.name):
        arguments = _arguments(kernel, call)
        todo = [name for name in arguments if name in wanted and name not in found]
        if not todo:
            continue
        # the launch's arguments passed by name, with their known values, seed the walk (guesses give way);
        # a guess never stands for a module constant the launcher passes (``HEAD_DIM=INDEX_HEAD_DIM``)
        passed = {param: expr.id for param, expr in arguments.items() if param in known and isinstance(expr, ast.Name)}
        constant = set(module.constants) - _bound_in(module, function)
        passed = {param: local for param, local in passed.items() if param not in wanted or local not in constant}
        walk = _Walk({local: known[param] for param, local in passed.items()},
                     {local for param, local in passed.items() if param in wanted}, module.constants)
        if function is not None:
            walk.statements(function.body, call)
        for name in todo:
            own = passed.get(name)
            try:
                value, rests = walk.evaluate(arguments[name])
            except _UNKNOWN:
                continue
            if own in rests or not isinstance(value, _VALUE_TYPES):
                continue  # (the guess itself, not a value the launcher computes)
            found[name] = (value, {param for param, local in passed.items() if local in rests})
    return found


def _bound_names(function: ast.FunctionDef | None) -> set[str]:
    """The names ``function`` binds itself (its parameters and assignments), which hide module constants;
    none at module level, where a constant is the module's own name."""
    if function is None:
        return set()
    args = function.args
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    names.update(node.id for node in _own_nodes(function.body)
                 if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)))
    return names


#: The last modules' launch index: id(module) -> (module, launched name -> [(call, function)],
#: id(function) -> the names it binds), the last two filled as the module's launches are read.
_INDEX: dict[int, tuple[Any, dict[str, list[tuple[ast.Call, ast.FunctionDef | None]]], dict[int, set[str]]]] = {}
#: A line that may hold a launch: ``kernel[grid](``.
_LAUNCH_TEXT = re.compile(r"\]\s*\(")


def _indexed(module: Any) -> tuple[Any, dict[str, list[tuple[ast.Call, ast.FunctionDef | None]]], dict[int, set[str]]]:
    """The module's entry in :data:`_INDEX`, made on first use."""
    cached = _INDEX.get(id(module))
    if cached is None or cached[0] is not module:
        if len(_INDEX) >= 64:
            _INDEX.clear()
        cached = _INDEX[id(module)] = (module, _index(module), {})
    return cached


def _launches(module: Any, name: str) -> list[tuple[ast.Call, ast.FunctionDef | None]]:
    """Each launch of kernel ``name`` in the module, in source order, with the function it sits in:
    ``name[grid](...)``, or through a local alias (``k = name.fn if varlen else name; k[grid](...)``)."""
    return _indexed(module)[1].get(name, [])


def _bound_in(module: Any, function: ast.FunctionDef | None) -> set[str]:
    """:func:`_bound_names` of a launching function, read once per module (every kernel it launches asks)."""
    bound = _indexed(module)[2]
    if id(function) not in bound:
        bound[id(function)] = _bound_names(function)
    return bound[id(function)]


def _index(module: Any) -> dict[str, list[tuple[ast.Call, ast.FunctionDef | None]]]:
    """Every launch of the module by the kernel it launches (aliases resolved within their function).
    Only functions whose text holds ``](`` are walked, and never a jit function (kernels launch nothing)."""
    marked = MarkedLines(module.source, _LAUNCH_TEXT)
    jit = {id(f) for f in getattr(module, "jit_functions", {}).values()}
    found: dict[str, list[tuple[ast.Call, ast.FunctionDef | None]]] = {}
    for function, body in _bodies(module.tree.body, None):
        statements = [s for s in body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        if id(function) in jit or not any(marked.holds(s) for s in statements):
            continue
        nodes = list(_own_nodes(statements))
        aliases: dict[str, set[str]] = {}
        for node in nodes:
            if isinstance(node, ast.Assign):
                for kernel in _kernels_of(node.value):
                    aliases.setdefault(kernel, set()).update(t.id for t in node.targets if isinstance(t, ast.Name))
        calls: dict[str, list[ast.Call]] = {}
        for node in nodes:
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
                    and isinstance(node.func.value, ast.Name)):
                calls.setdefault(node.func.value.id, []).append(node)
        for kernel in set(calls) | set(aliases):
            for launched in {kernel} | aliases.get(kernel, set()):
                found.setdefault(kernel, []).extend((call, function) for call in calls.get(launched, ()))
    for launches in found.values():
        launches.sort(key=lambda item: (item[0].lineno, item[0].col_offset))
    return found


def _bodies(body: list[ast.stmt], function: ast.FunctionDef | None) -> Iterator[tuple[ast.FunctionDef | None, list[ast.stmt]]]:
    """``(function, its statements)`` for the module body (function None) and every function in it, nested
    ones included, found through statements only (no walk of expressions)."""
    yield function, body
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _bodies(node.body, node)
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            stack.extend(s for s in getattr(node, field, None) or () if isinstance(s, (ast.stmt, ast.excepthandler)))


def _kernels_of(node: ast.expr) -> set[str]:
    """The kernel names an alias expression stands for: ``k``, ``k.fn``, ``a if c else b`` of such."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute) and node.attr == "fn":
        return _kernels_of(node.value)
    if isinstance(node, ast.IfExp):
        return _kernels_of(node.body) | _kernels_of(node.orelse)
    return set()


def _own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of ``body``, not descending into nested functions, classes or lambdas."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed([child for child in ast.iter_child_nodes(node)
                               if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                                         ast.Lambda))]))


def _arguments(kernel: Any, call: ast.Call) -> dict[str, ast.expr]:
    """Parameter name -> argument expression of one launch (none past a ``*args``)."""
    arguments: dict[str, ast.expr] = {}
    for param, arg in zip(kernel.params, call.args):
        if isinstance(arg, ast.Starred):
            break
        arguments[param.name] = arg
    for keyword in call.keywords:
        if keyword.arg is not None:
            arguments[keyword.arg] = keyword.value
    return arguments
