"""Autotune side effects (``LNT006 autotune-side-effect``): arguments that timing runs corrupt.

While it times configs, Triton's autotuner launches the kernel many times on the same
arguments (``Autotuner._bench``: every config, each ``do_bench``'d; only with more than
one config), and protects only the arguments named in ``reset_to_zero=[...]`` (zeroed
before every run, the real launch included) and ``restore_value=[...]`` (copied before
and restored after every run). A kernel that reads an argument and writes it back in
place, or adds into it with ``tl.atomic_add``, sees on each run after the first what the
runs before it left: the launch that triggered tuning silently returns wrong results.

:func:`side_effects` reads a kernel's ``def`` (it never runs it) and returns the
arguments that are

* *in place*: loaded at an address before the kernel stored through that argument (on
  some path) and stored at the same address (the same expression once locals are
  substituted: ``p = x_ptr + offs; tl.load(p)`` and ``tl.store(x_ptr + offs, ...)`` are one
  address). Not: a buffer written and then read back (scratch space), one read in one
  region and written in another, or an idempotent write-back (``tl.where(m, v, x)``,
  ``tl.maximum(x, v)``: masked fill, ReLU, clamp);
* *accumulated*: the pointer of a ``tl.atomic_*`` whose effect depends on what is
  already there: ``atomic_add``, ``atomic_xor``, ``atomic_cas`` (a lock or counter: state
  kept from run to run), and any atomic whose returned old value is used.
  ``atomic_max``/``min``/``and``/``or``/``xchg`` with the result discarded are idempotent
  (a second run on the same inputs leaves the same value) and count as plain stores;
  ``atomic_cas(p, v, v)`` changes nothing and is a load.

Pointers are followed statement by statement through arithmetic and locals
(``x_ptr += row * stride``), ``tl.make_block_ptr(base=...)``, ``tl.make_tensor_descriptor``,
``tl.advance`` and the other pass-throughs of :meth:`kernelrules.specify.argflow.PointerFlow.roots`,
tensor-descriptor methods, and calls of jit helpers of the same module or package, whose
effects on their parameters map back to the caller's arguments. Masks do not matter;
``if FLAG:`` branches count, except a branch no config reaches (``if SPLIT_K > 1:`` when
every config sets ``SPLIT_K=1``) and a load and a store under contradicting conditions.
Where it cannot tell it stays silent: a store dominates the loads after it, a loop body
runs at least once, an expression it cannot follow is an address of its own.

Why over 400 lines: one analysis (LNT006): the dataflow from the arguments to stores, atomics and
reads that autotune's repeated timing runs corrupt.
"""

from __future__ import annotations

import ast
import copy
import functools
from dataclasses import dataclass
from typing import Any, Mapping

from ..specify.argflow import PointerFlow
from ..discover.autotune_eval import ConfigEvaluator, Unsupported
from ..discover.kernels import ParsedModule, cached_module, is_constexpr_annotation
from ..discover.pyast import dotted_name

#: Atomics whose effect a second run with the same inputs repeats exactly (when their result is unused).
_IDEMPOTENT = frozenset({"atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xchg"})
#: Idempotent write-backs ``f(x)``: the function and the positions ``x`` may take.
_IDEMPOTENT_WRITES = {"where": (1, 2), "maximum": (0, 1), "minimum": (0, 1), "clamp": (0,)}
#: Canonical expressions longer than this become an unknown of their own (no match, so no finding).
_MAX_TEXT = 3000
_UNKNOWN = object()
_ERRORS = (Unsupported, ArithmeticError, TypeError, ValueError, KeyError, RecursionError)


@dataclass(frozen=True)
class Site:
    """Where an access happens: a line of the kernel, possibly a call of the helper that does it."""

    line: int
    helper: str | None = None

    def __str__(self) -> str:
        return f"line {self.line}" + (f", in {self.helper}()" if self.helper else "")


@dataclass(frozen=True)
class Access:
    """A load, store or atomic through ``root`` at ``key`` (canonical text) under ``guard``; ``value``: what a
    store writes (canonical text)."""

    root: str
    key: str
    guard: frozenset
    site: Site
    op: str = ""
    value: str | None = None


@dataclass(frozen=True)
class SideEffect:
    """An argument repeated runs see each other through: ``kind`` ``in-place`` or ``atomic`` (``op``)."""

    argument: str
    kind: str
    store: Site
    load: Site | None = None
    op: str = ""
    #: The constexpr conditions the accesses are under (``ACCUMULATE``, ``not USE_TMA``).
    when: tuple[str, ...] = ()


def _when(guard: frozenset) -> tuple[str, ...]:
    return tuple(sorted(t if p else (f"not ({t})" if " " in t else f"not {t}")
                        for t, p in guard if not t.startswith("_cond_")))


def _params(func: ast.FunctionDef) -> list[ast.arg]:
    return [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]


_NAMES: dict[int, tuple[ast.AST, frozenset]] = {}


def _names(node: ast.AST) -> frozenset:
    """The names ``node`` reads (cached by node: the walker asks again on every loop pass and config)."""
    cached = _NAMES.get(id(node))
    if cached is None or cached[0] is not node:
        if len(_NAMES) > 100_000:
            _NAMES.clear()
        cached = _NAMES[id(node)] = (node, frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name)))
    return cached[1]


class _Unparser(getattr(ast, "_Unparser", object)):  # ast.unparse, writing a name as the text it stands for
    def __init__(self, mapping: Mapping[str, str]) -> None:
        super().__init__()
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> None:
        self.write(f"({self.mapping[node.id]})" if node.id in self.mapping else node.id)


def _unparse(node: ast.AST, mapping: Mapping[str, str]) -> str:
    """``ast.unparse`` of ``node`` with the names of ``mapping`` written as ``(text)``."""
    if not mapping:
        return ast.unparse(node)
    if hasattr(ast, "_Unparser"):
        return _Unparser(mapping).visit(node)
    tree = copy.deepcopy(node)  # pragma: no cover (a Python without ast._Unparser)
    for name in ast.walk(tree):
        if isinstance(name, ast.Name) and name.id in mapping:
            name.id = f"({mapping[name.id]})"
    return ast.unparse(tree)


def _locals(func: ast.FunctionDef) -> frozenset:
    """Parameters and names the function assigns (they hide module constants of the same name)."""
    cached = _NAMES.get(id(func.body))
    if cached is None or cached[0] is not func.body:
        stored = {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        cached = _NAMES[id(func.body)] = (func.body, frozenset(stored | {a.arg for a in _params(func)}))
    return cached[1]


@functools.lru_cache(maxsize=8192)
def _parse(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


@functools.lru_cache(maxsize=8192)
def _norm(text: str) -> str:
    """A canonical text as ``ast.unparse`` writes it (redundant parentheses dropped), to compare two."""
    return ast.unparse(_parse(text))


def _map(text: str, mapping: Mapping[str, str]) -> str:
    """A helper's canonical text in its caller's terms (its parameters replaced by the arguments)."""
    return _unparse(_parse(text), mapping) if _names(_parse(text)) & set(mapping) else text


def _compatible(a: frozenset, b: frozenset) -> bool:
    """Whether two guards can hold together (no condition both true and false)."""
    return not any((text, not positive) in b for text, positive in a)


class _State:
    """Per path: each name's pointer roots and canonical text, and the stores made so far as
    ``(root, guard)`` facts ("if guard held, root was stored")."""

    def __init__(self, roots: dict, canon: dict, facts: set) -> None:
        self.roots, self.canon, self.facts = roots, canon, facts

    def copy(self) -> "_State":
        return _State({k: set(v) for k, v in self.roots.items()}, dict(self.canon), set(self.facts))

    def join(self, other: "_State", line: int) -> None:
        for name, roots in other.roots.items():
            self.roots.setdefault(name, set()).update(roots)
        for name, text in other.canon.items():  # different on the two paths: an unknown of its own
            self.canon[name] = text if self.canon.get(name, text) == text else f"{name}__at{line}"


class _Walker:
    """One function's loads, stores and atomics through its parameters, in statement order."""

    def __init__(self, module: ParsedModule, func: ast.FunctionDef, configs: list[dict], memo: dict) -> None:
        self.module, self.func, self.configs, self.memo = module, func, configs, memo
        self.flow, self.scope = PointerFlow(module, solve=False), module.scope()
        self.params = [a.arg for a in _params(func)]
        self.constexprs = {a.arg for a in _params(func) if is_constexpr_annotation(a.annotation, module.imports)}
        self.locals = _locals(func)
        self.ctx: frozenset = frozenset()
        self.decided: dict[int, bool | None] = {}
        self.loads: list[Access] = []
        self.stores: list[Access] = []
        self.atomics: list[Access] = []

    def run(self) -> "_Walker":
        state = _State({p: {p} for p in self.params}, {p: p for p in self.params}, set())
        self._block(self.func.body, state)
        self.exit_facts = state.facts
        return self

    def _text(self, node: ast.expr, st: _State) -> str:
        return _unparse(node, {n: st.canon[n] for n in _names(node) if n in st.canon})

    def _roots(self, node: ast.expr, st: _State) -> set[str]:
        return self.flow.roots(node, st.roots, bases=True)

    # ------------------------------------------------------------------ statements

    def _block(self, body: list[ast.stmt], st: _State) -> None:
        for stmt in body:
            self._stmt(stmt, st)

    def _stmt(self, stmt: ast.stmt, st: _State) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return
        if isinstance(stmt, ast.If):
            self._scan(stmt.test, st)
            decided = self._decide(stmt.test)
            if decided is not None:  # the same in every config: only that branch runs
                return self._block(stmt.body if decided else stmt.orelse, st)
            text, positive = self._literal(stmt.test)
            ctx, other = self.ctx, st.copy()
            self.ctx = ctx | {(text, positive)}
            self._block(stmt.body, st)
            self.ctx = ctx | {(text, not positive)}
            self._block(stmt.orelse, other)
            self.ctx = ctx
            taken = {r for r, g in st.facts if g <= ctx | {(text, positive)}}
            skipped = {r for r, g in other.facts if g <= ctx | {(text, not positive)}}
            st.facts |= other.facts | {(r, ctx) for r in taken & skipped}
            st.join(other, stmt.lineno)
        elif isinstance(stmt, (ast.For, ast.While)):
            self._scan(stmt.iter if isinstance(stmt, ast.For) else stmt.test, st)
            if isinstance(stmt, ast.For):
                self._bind(stmt.target, None, st, stmt.lineno)
            for _ in range(4):  # until names stop changing (loop-carried pointers); the body runs at least once
                before = st.copy()
                self._block(stmt.body, st)
                st.join(before, stmt.lineno)
                if st.roots == before.roots and st.canon == before.canon:
                    break
            self._block(stmt.orelse, st)
        elif isinstance(stmt, ast.Expr):
            self._scan(stmt.value, st, discarded=True)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            if stmt.value is not None:
                self._scan(stmt.value, st)
                for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                    self._bind(target, stmt.value, st, stmt.lineno)
        elif isinstance(stmt, ast.AugAssign):
            self._scan(stmt.value, st)
            if isinstance(stmt.target, ast.Name):
                self._bind(stmt.target, ast.BinOp(left=ast.Name(stmt.target.id), op=stmt.op, right=stmt.value),
                           st, stmt.lineno)
        else:  # with, assert, return, raise, try
            for item in getattr(stmt, "items", None) or []:
                self._scan(item.context_expr, st)
            for name in ("test", "msg", "value", "exc"):
                if isinstance(getattr(stmt, name, None), ast.expr):
                    self._scan(getattr(stmt, name), st)
            for name in ("body", "orelse", "finalbody"):
                if isinstance(getattr(stmt, name, None), list):
                    self._block(getattr(stmt, name), st)

    def _bind(self, target: ast.expr, value: ast.expr | None, st: _State, line: int) -> None:
        if isinstance(target, ast.Name):
            st.roots[target.id] = self._roots(value, st) if value is not None else set()
            text = self._text(value, st) if value is not None else target.id
            st.canon[target.id] = text if len(text) <= _MAX_TEXT else f"{target.id}__at{line}"
        elif isinstance(target, (ast.Tuple, ast.List)):
            same_shape = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
            for i, t in enumerate(target.elts):
                self._bind(t, value.elts[i] if same_shape else None, st, line)
                if not same_shape and isinstance(t, ast.Name):
                    st.canon[t.id] = f"{t.id}__at{line}"

    def _value(self, node: ast.expr, config: dict) -> Any:
        """``node``'s value from a config's constexprs and module constants, or ``_UNKNOWN``."""
        if _names(node) & (self.locals - set(config)):
            return _UNKNOWN  # a local or parameter the config does not set (never a module constant's value)
        try:
            return ConfigEvaluator(self.scope, step_limit=200).eval(node, dict(config))
        except _ERRORS:
            return _UNKNOWN

    def _decide(self, test: ast.expr) -> bool | None:
        """The test's value when every config gives it the same one."""
        if id(test) not in self.decided:
            values = {self._value(test, config) for config in self.configs or [{}]}
            self.decided[id(test)] = bool(values.pop()) if len(values) == 1 and _UNKNOWN not in values else None
        return self.decided[id(test)]

    def _literal(self, test: ast.expr) -> tuple[str, bool]:
        """A condition on constexpr parameters only as ``(text, polarity)``; anything else a unique name."""
        positive = True
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, positive = test.operand, not positive
        if _names(test) and _names(test) <= self.constexprs:
            return ast.unparse(test), positive
        return f"_cond_{id(self)}_{test.lineno}_{test.col_offset}", positive

    # ------------------------------------------------------------------ expressions

    def _scan(self, node: ast.expr | None, st: _State, discarded: bool = False) -> None:
        """Accesses in ``node``, in evaluation order (a call's arguments before the call)."""
        if node is None or isinstance(node, ast.Lambda):
            return
        if isinstance(node, ast.Call):
            for child in [node.func, *node.args, *(kw.value for kw in node.keywords)]:
                self._scan(child, st)
            self._call(node, st, discarded)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self._scan(child, st)
            elif isinstance(child, ast.comprehension):
                self._scan(child.iter, st)

    def _call(self, node: ast.Call, st: _State, discarded: bool) -> None:
        site, func = Site(node.lineno), node.func
        if isinstance(func, ast.Name):
            found = self._helper(func.id)
            if found is not None:
                self._call_helper(node, *found, st)
            return
        if not isinstance(func, ast.Attribute):
            return
        attr, roots = func.attr, self._roots(func.value, st)
        if roots:  # a descriptor's (or block pointer's) own method: desc.load([m, k])
            key = f"({self._text(func.value, st)})[{self._text(node.args[0], st) if node.args else ''}]"
        else:
            dotted = dotted_name(func.value) or ""
            pointer = next((kw.value for kw in node.keywords if kw.arg == "pointer"),
                           node.args[0] if node.args else None)
            if pointer is None or not (dotted == "tl" or self.module.imports.resolve(dotted).startswith("triton")):
                return
            roots, key = self._roots(pointer, st), self._text(pointer, st)
        value = next((kw.value for kw in node.keywords if kw.arg in ("value", "val")),
                     node.args[1] if len(node.args) > 1 else None)
        value = self._text(value, st) if value is not None else None
        same = len(node.args) == 3 and ast.unparse(node.args[1]) == ast.unparse(node.args[2])
        if attr in ("load", "gather") or (attr == "atomic_cas" and same):
            self._load(roots, key, self.ctx, site, st)
        elif attr in ("store", "scatter") or (attr in _IDEMPOTENT and discarded):
            self._store(roots, key, self.ctx, site, st, must=attr in ("store", "scatter"), value=value)
        elif attr.startswith("atomic_"):
            self.atomics.extend(Access(r, key, self.ctx, site, attr, value) for r in roots)

    def _load(self, roots: set[str], key: str, guard: frozenset, site: Site, st: _State) -> None:
        for root in roots:
            if not any(r == root and g <= guard for r, g in st.facts):  # no store before it: reads what was there
                self.loads.append(Access(root, key, guard, site))

    def _store(self, roots: set[str], key: str, guard: frozenset, site: Site, st: _State, must: bool,
               value: str | None = None) -> None:
        for root in roots:
            self.stores.append(Access(root, key, guard, site, value=value))
            if must:
                st.facts.add((root, guard))

    # ------------------------------------------------------------------ helpers

    def _helper(self, name: str) -> tuple[ParsedModule, ast.FunctionDef] | None:
        """The jit function ``name`` calls: of this module, or imported from the same package."""
        if name in self.module.jit_functions:
            return self.module, self.module.jit_functions[name]
        source = self.module.import_sources.get(name)
        other = cached_module(source[0]) if source is not None else None
        if isinstance(other, ParsedModule) and source[1] in other.jit_functions:
            return other, other.jit_functions[source[1]]
        return None

    def _call_helper(self, node: ast.Call, module: ParsedModule, helper: ast.FunctionDef, st: _State) -> None:
        names = [a.arg for a in _params(helper)]
        bound = {n: a for n, a in zip(names, node.args) if not isinstance(a, ast.Starred)}
        bound.update({kw.arg: kw.value for kw in node.keywords if kw.arg in names})
        configs: list[dict] = []
        for config in self.configs:  # the helper's constexprs, where a config decides them
            values = {n: v for n, v in ((n, self._value(a, config)) for n, a in bound.items()) if v is not _UNKNOWN}
            if values not in configs:
                configs.append(values)
        key = (id(helper), repr(configs))
        if key not in self.memo:
            self.memo[key] = None  # recursion: a helper calling itself adds nothing
            self.memo[key] = _Walker(module, helper, configs, self.memo).run()
        inner = self.memo[key]
        if inner is None:
            return
        mapping = {n: self._text(a, st) for n, a in bound.items()}
        roots = {n: self._roots(a, st) for n, a in bound.items()}
        site = Site(node.lineno, getattr(node.func, "id", helper.name))

        def guard(g: frozenset) -> frozenset:
            return self.ctx | {(_norm(_map(t, mapping)), p) for t, p in g}

        def value(a: Access) -> str | None:
            return _map(a.value, mapping) if a.value is not None else None

        for a in inner.loads:
            self._load(roots.get(a.root, set()), _map(a.key, mapping), guard(a.guard), site, st)
        for a in inner.atomics:
            self.atomics.extend(Access(r, _map(a.key, mapping), guard(a.guard), site, a.op, value(a))
                                for r in roots.get(a.root, ()))
        for a in inner.stores:
            self._store(roots.get(a.root, set()), _map(a.key, mapping), guard(a.guard), site, st, False, value(a))
        st.facts |= {(r, guard(g)) for p, g in inner.exit_facts for r in roots.get(p, ())}


def _reads(node: Any, root: str, flow: PointerFlow, key: str | None = None) -> list[ast.Call]:
    """Loads through ``root`` (at ``key`` when given) in a canonical expression, except as ``.dtype``/``.shape``."""
    if not isinstance(node, ast.AST) or isinstance(node, ast.Attribute) and node.attr in ("dtype", "shape"):
        return []
    found = [c for child in ast.iter_child_nodes(node) for c in _reads(child, root, flow, key)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "load" and node.args \
            and root in flow.roots(node.args[0], {root: {root}}, bases=True) \
            and (key is None or ast.unparse(node.args[0]) == key):
        found.append(node)
    return found


def _strip_casts(node: Any) -> Any:
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to":
        node = node.func.value
    return node


def _idempotent(store: Access, key: str, walker: _Walker) -> bool:
    """Whether a store writes back ``f(x)`` of the value ``x`` loaded at its own address with ``f`` idempotent
    (:data:`_IDEMPOTENT_WRITES`) and nothing else reads that load: a second run computes what the first wrote."""
    value = _strip_casts(_parse(store.value)) if store.value else None
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
        return False
    flow, args = walker.flow, value.args
    for i in _IDEMPOTENT_WRITES.get(value.func.attr, ()):
        x = _strip_casts(args[i]) if i < len(args) else None
        rest = [a for j, a in enumerate(args) if j != i]
        if _reads(x, store.root, flow, key) == [x] and not any(_reads(a, store.root, flow) for a in rest):
            others = [a for a in [*walker.stores, *walker.atomics]  # (a loop's second pass records the store again)
                      if not (a.site == store.site and a.root == store.root and _norm(a.key) == key)]
            return not any(_reads(_parse(t), store.root, flow) for a in others for t in (a.key, a.value) if t)
    return False


def side_effects(module: ParsedModule, func: ast.FunctionDef,
                 configs: list[Mapping[str, Any]] = ()) -> list[SideEffect]:
    """The runtime arguments of ``func`` it updates in place or with a non-idempotent atomic; ``configs``
    (each config's constexprs) decide the branches they all agree on."""
    walker = _Walker(module, func, [dict(c) for c in configs], {}).run()
    found = []
    for arg in _params(func):
        if is_constexpr_annotation(arg.annotation, module.imports):
            continue
        name = arg.arg
        atomic = next((a for a in walker.atomics if a.root == name), None)
        if atomic is not None:
            found.append(SideEffect(name, "atomic", atomic.site, op=atomic.op, when=_when(atomic.guard)))
            continue
        stores = [s for s in walker.stores if s.root == name]
        for load in (a for a in walker.loads if a.root == name and stores):
            store = next((s for s in stores if _norm(s.key) == _norm(load.key) and _compatible(s.guard, load.guard)
                          and not _idempotent(s, _norm(s.key), walker)), None)
            if store is not None:
                found.append(SideEffect(name, "in-place", store.site, load.site, when=_when(load.guard | store.guard)))
                break
    return found


@dataclass(frozen=True)
class AutotuneSideEffect:
    """One ``LNT006`` finding: the argument, the message and the fix."""

    argument: str
    message: str
    fix: str


def _fix(keyword: str, present: list[str], name: str) -> str:
    shown = ", ".join(f'"{n}"' for n in [*present, name])
    return f'add "{name}" to {keyword}: {keyword}=[{shown}]' if present else f"add {keyword}=[{shown}]"


def _describe(effect: SideEffect, autotune: Any) -> AutotuneSideEffect:
    name, op = f"`{effect.argument}`", f"tl.{effect.op}"
    when = f" when {' and '.join(effect.when)}" if effect.when else ""
    if effect.kind == "in-place":
        fix = _fix("restore_value", autotune.restore_value, effect.argument)
        why = (f"{name} is loaded ({effect.load}) and stored at the same address ({effect.store}){when}, in place: "
               f"each of the autotuner's timing runs reads what the run before it wrote")
        return AutotuneSideEffect(effect.argument, f"{why}; {fix}", fix)
    if effect.op == "atomic_add":
        why = (f"{name} is accumulated with {op} ({effect.store}){when}: each timing run adds to what the runs "
               f"before it left")
    elif effect.op in _IDEMPOTENT:
        why = (f"{name} is updated with {op} ({effect.store}){when} and the old value it returns is used: each "
               f"timing run sees what the runs before it left")
    else:
        why = (f"{name} is updated with {op} ({effect.store}){when}, a lock, counter or flag whose state each "
               f"timing run leaves to the next")
    fix = (f"{_fix('reset_to_zero', autotune.reset_to_zero, effect.argument)} (zeroed before every run, the real "
           f"one too; {_fix('restore_value', autotune.restore_value, effect.argument)} instead if the kernel must "
           f"keep what the caller put there)")
    return AutotuneSideEffect(effect.argument, f"{why}; {fix}", fix)


def autotune_side_effects(module: ParsedModule, kernel: Any) -> list[AutotuneSideEffect]:
    """``LNT006`` for a discovered kernel: the side effects its ``@triton.autotune`` leaves unprotected.

    Nothing when the kernel is not autotuned, has one config (the autotuner launches it
    without timing), when ``reset_to_zero``/``restore_value`` cannot be read, or when the
    autotuner or a config has a ``pre_hook``/``post_hook`` (the user's own reset); an
    argument named in ``reset_to_zero`` or ``restore_value`` is covered.
    """
    autotune = getattr(kernel, "autotune", None)
    func = module.jit_functions.get(kernel.name)
    if autotune is None or func is None or (autotune.configs_error is None and len(autotune.configs) <= 1):
        return []
    if autotune.pre_hook or autotune.post_hook or autotune.side_effect_lists_error \
            or any(site.pre_hook for site in autotune.configs):
        return []
    covered = {*autotune.reset_to_zero, *autotune.restore_value}
    configs = [site.config.constexprs for site in autotune.configs] if autotune.configs_error is None else []
    return [_describe(e, autotune) for e in side_effects(module, func, configs) if e.argument not in covered]
