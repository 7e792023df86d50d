"""Jit functions made by *calling* ``triton.jit`` at module level, read with :mod:`ast`.

Most kernels are written ``@triton.jit`` on the ``def``, but some packages (unsloth,
torchao) build them with assignments::

    def _forward(x_ptr, ..., BLOCK: tl.constexpr):
        ...
    _forward = triton.jit(_forward)                        # or triton.jit(do_not_specialize=[...])(_forward)
    _forward = triton.heuristics({...})(_forward)          # a later re-wrap of the jitted name
    kernel = triton.autotune(configs=..., key=...)(triton.jit(_impl))
    autotuned = triton.autotune(configs=..., key=...)(decorated_jit_kernel)

The object a launch uses (``NAME[grid](...)``) is the one the module binds to ``NAME``;
its JITFunction is made from the plain ``def`` exactly as if the jit decorator (and the
heuristics / autotune wrappers, outermost first) had been written on that ``def``.

:func:`find_jit_calls` walks the module-level statements in order and returns, per bound
name, a :class:`JitCall`: the ``def``, the decorators it stands for, and
:meth:`JitCall.as_function`, a ``def`` named ``NAME`` carrying those decorators, which
discovery (:mod:`kernelrules.discover.kernels`) and the source loader
(:mod:`kernelrules.discover.kernelsource`) index like any decorated jit function. It also returns
one :class:`Binding` per statement involved, so that the loader can rebuild the module as
an import would (the ``def`` left undecorated, ``NAME = triton.jit(FUNC, **options)``
where the JITFunction is made, wrappers dropped as stripped decorators are).

Only plain (undecorated) ``def`` s of the same module are accepted as ``FUNC``; a name
rebound later by anything else stops being a jit function, as at run time.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from typing import Callable, Iterable

from .pyast import assignment_target

#: What a callee is: ``"jit"``, ``"autotune"``, ``"heuristics"`` or None.
Classifier = Callable[[ast.expr], "str | None"]

WRAPPERS = ("autotune", "heuristics")


@dataclass
class JitCall:
    """A module-level name bound to a jit function made or wrapped by calls."""

    name: str
    #: The ``def`` the JITFunction is made from (a decorated jit ``def`` for a wrapped one).
    func: ast.FunctionDef
    #: The decorators the calls stand for, outermost first (wrappers, then the jit decorator).
    decorators: list[ast.expr]
    #: The last statement that bound ``name``.
    statement: ast.stmt

    def as_function(self) -> ast.FunctionDef:
        """A copy of the ``def`` named ``name`` with :attr:`decorators` written on it (same lines)."""
        new = ast.FunctionDef(name=self.name, args=self.func.args, body=self.func.body,
                              decorator_list=list(self.decorators), returns=self.func.returns,
                              type_comment=self.func.type_comment)
        if sys.version_info >= (3, 12):  # PEP 695 type parameters
            new.type_params = getattr(self.func, "type_params", [])
        return ast.copy_location(new, self.func)


@dataclass
class Binding:
    """One statement of a call form, and what a module rebuilt for compiling binds there."""

    statement: ast.stmt
    name: str
    #: The jit decorator when this statement makes the JITFunction (``triton.jit`` or
    #: ``triton.jit(**options)``), with ``func`` the ``def`` it is made from.
    jit: ast.expr | None = None
    func: ast.FunctionDef | None = None
    #: The jit function this statement wraps under another name (``NAME = wrapper(OTHER)``).
    alias_of: str | None = None


    def rebuilt(self, keep: Callable[[ast.keyword], bool]) -> list[ast.stmt]:
        """What a module rebuilt for compiling runs here: ``NAME = jit(FUNC, **kept options)`` where the
        file makes the JITFunction, ``NAME = OTHER`` where it wraps ``OTHER`` under a new name, nothing
        where it re-wraps ``NAME`` itself (wrappers are dropped, as stripped decorators are)."""
        node = self.statement
        if self.jit is not None and self.func is not None:
            callee = self.jit.func if isinstance(self.jit, ast.Call) else self.jit
            keywords = [kw for kw in self.jit.keywords if keep(kw)] if isinstance(self.jit, ast.Call) else []
            func = ast.Name(id=self.func.name, ctx=ast.Load())
            value: ast.expr = ast.Call(func=callee, args=[func], keywords=keywords)
        elif self.alias_of is not None:
            value = ast.Name(id=self.alias_of, ctx=ast.Load())
        else:
            return []
        target = ast.Name(id=self.name, ctx=ast.Store())
        return [ast.copy_location(ast.Assign(targets=[target], value=ast.copy_location(value, node)), node)]


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def classify_by_last_name(jit_names: Iterable[str], imported: set[str]) -> Classifier:
    """A classifier by last dotted name (as the source loader reads decorators); a jit callee must
    also start at an ``imported`` name, since the rebuilt module calls it."""
    jit_names = frozenset(jit_names)

    def classify(node: ast.expr) -> str | None:
        dotted = _dotted(node)
        if dotted is None:
            return None
        last = dotted.rsplit(".", 1)[-1]
        if last in jit_names:
            return "jit" if dotted.split(".", 1)[0] in imported else None
        return last if last in WRAPPERS else None

    return classify


def _single_name(call: ast.Call) -> str | None:
    """The name of a call's only argument (``f`` of ``g(f)``), or None."""
    if len(call.args) == 1 and isinstance(call.args[0], ast.Name):
        return call.args[0].id
    return None


def unwrap(value: ast.expr, classify: Classifier) -> tuple[list[ast.Call], ast.expr | None, str] | None:
    """``(wrappers outermost first, jit decorator or None, wrapped name)`` of a call form, or None.

    ``triton.jit(f, do_not_specialize=...)`` gives the decorator ``triton.jit(do_not_specialize=...)``
    (a new node where the call is); ``triton.jit(**opts)(f)`` gives ``triton.jit(**opts)``.
    """
    wrappers: list[ast.Call] = []
    node = value
    while isinstance(node, ast.Call):
        inner = node.func
        if not isinstance(inner, ast.Call):
            if classify(inner) != "jit":
                return None
            name = _single_name(node)  # triton.jit(f[, **options])
            if name is None or any(kw.arg is None for kw in node.keywords):
                return None
            decorator: ast.expr = inner
            if node.keywords:
                decorator = ast.copy_location(ast.Call(func=inner, args=[], keywords=node.keywords), node)
            return wrappers, decorator, name
        if node.keywords or len(node.args) != 1:
            return None
        kind = classify(inner.func)
        if kind == "jit" and not inner.args:  # triton.jit(**options)(f)
            name = _single_name(node)
            return (wrappers, inner, name) if name is not None else None
        if kind not in WRAPPERS:
            return None
        wrappers.append(inner)
        node = node.args[0]
    if isinstance(node, ast.Name) and wrappers:  # wrapper(...)(already_jitted)
        return wrappers, None, node.id
    return None


def _import_names(node: ast.stmt) -> list[str]:
    """Names an import statement binds."""
    if not isinstance(node, (ast.Import, ast.ImportFrom)):
        return []
    return [a.asname or a.name.split(".", 1)[0] for a in node.names if a.name != "*"]


def find_jit_calls(statements: Iterable[ast.stmt], classify: Classifier,
                   is_jit_def: Callable[[ast.FunctionDef], bool]) -> tuple[dict[str, JitCall], list[Binding]]:
    """The names module-level ``statements`` bind to jit functions made or wrapped by calls.

    ``classify`` says what a callee is (under the module's import aliases); ``is_jit_def``
    whether a ``def`` is a decorated jit function (which ``wrapper(...)(name)`` may wrap).
    """
    plain: dict[str, ast.FunctionDef] = {}
    jitted: dict[str, tuple[ast.FunctionDef, list[ast.expr]]] = {}
    calls: dict[str, JitCall] = {}
    bindings: list[Binding] = []
    for node in statements:
        bound: list[str] = _import_names(node)
        made: tuple[str, ast.FunctionDef, list[ast.expr], Binding] | None = None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = [node.name]
        target = assignment_target(node)
        if target is not None:
            name, value = target
            bound = [name]
            parsed = unwrap(value, classify)
            if parsed is not None:
                wrappers, jit, base = parsed
                if jit is not None and base in plain:
                    binding = Binding(node, name, jit=jit, func=plain[base])
                    made = (name, plain[base], [*wrappers, jit], binding)
                elif jit is None and base in jitted:
                    func, inner = jitted[base]
                    binding = Binding(node, name, alias_of=None if base == name else base)
                    made = (name, func, [*wrappers, *inner], binding)
        for name in bound:
            plain.pop(name, None)
            jitted.pop(name, None)
            calls.pop(name, None)
        if isinstance(node, ast.FunctionDef):
            if is_jit_def(node):
                jitted[node.name] = (node, list(node.decorator_list))
            elif not node.decorator_list:
                plain[node.name] = node
        if made is not None:
            name, func, decorators, binding = made
            jitted[name] = (func, decorators)
            calls[name] = JitCall(name, func, decorators, node)
            bindings.append(binding)
    return calls, bindings
