"""What a kernel's own body says its constexprs must be, and guesses that agree (issue 14).

A guessed constexpr the kernel itself rules out can only fail to compile: ``16`` for an
``N`` the kernel asserts is a multiple of ``BLOCK_N=128``, ``16`` for an ``ACTIVATION``
it compares with ``"gelu"`` and ``"silu"`` before a ``raise``. :func:`read_constraints`
reads, from the kernel's syntax tree and those of the ``@triton.jit`` helpers it calls (in
its module or, through a :data:`HelperFinder`, imported from its package; parameters bound
to the caller's arguments):

- ``tl.static_assert(cond)``: ``cond`` must hold;
- a ``raise`` (Triton cannot compile one): the ``if`` tests that lead to it must not all hold;
- ``tl.arange(start, end)``: ``end > start`` and ``end - start`` a power of two (so must a
  gluon ``BlockedLayout``'s sizes be);
- the shapes it builds (:mod:`kernelrules.specify.constexpr_shapes`): reshapes, broadcasts, dots;

each under the ``if`` tests that enclose it (a constexpr test that is false skips it, as
Triton compiles only the branch taken; an early ``return`` guards what follows). Locals
assigned once (``D_TAIL: tl.constexpr = D_QK - D_V``), parameter defaults and module
constants are followed. It also notes the values each name is compared with and the names
used as dtypes or tuples. :func:`kernelrules.specify.constexpr_solve.solve` then searches values of the guessed names that
break no constraint. Nothing runs the user's code: a small evaluator walks the tree and
anything it does not know (a runtime value, an unknown call) leaves a constraint unjudged,
never violated.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .constexpr_eval import Scope, Unknown, evaluate
from .constexpr_shapes import shape_conditions

#: Helper nesting followed from the kernel (the kernel is depth 0).
MAX_DEPTH = 3
#: Constraints read from one kernel and its helpers, at most.
MAX_CONSTRAINTS = 400
#: The smallest inner dimension ``tl.dot`` takes.
MIN_DOT_K = 16
#: ``tl.arange`` ranges larger than this are refused by Triton (its maximum tensor numel).
MAX_ARANGE = 1 << 20


#: Calls that take a dtype at a position (``x.to(D)``, ``tl.zeros(shape, D)``, ``tl.full(shape, v, D)``).
_DTYPE_POSITION = {"to": 0, "cast": 1, "zeros": 1, "full": 2, "empty": 1}
#: Attributes only a ``tl.dtype`` has.
_DTYPE_ATTRIBUTES = frozenset({"primitive_bitwidth", "is_fp8", "is_fp16", "is_bf16", "is_fp32", "is_floating",
                               "is_int", "is_int_signed", "is_int_unsigned", "fp_mantissa_width", "scalar",
                               "is_fp8e4nv", "is_fp8e5", "to_ir", "element_ty"})


#: Gluon layouts whose per-dimension sizes must be powers of two, and where those lists are.
_LAYOUTS = {"BlockedLayout": ("size_per_thread", "threads_per_warp", "warps_per_cta")}


def _layout_sizes(node: ast.Call) -> list[ast.expr]:
    """The elements of a layout's size lists (``size_per_thread=[1, BD // 32]``): each a power of two."""
    names = _LAYOUTS[_callee(node)]
    lists = [k.value for k in node.keywords if k.arg in names] + list(node.args[:len(names)])
    return [e for lst in lists if isinstance(lst, (ast.List, ast.Tuple)) for e in lst.elts]


@dataclass(frozen=True, eq=False)
class Constraint:
    """One condition: ``kind`` ``assert`` (``exprs[0]`` must hold), ``raise`` (never reached) or
    ``arange`` (``exprs`` are start and end), read in ``scope``, under ``guards``: the enclosing
    ``if`` tests ``(test, branch taken, scope of the test)``, a caller's first."""

    kind: str
    exprs: tuple[ast.expr, ...]
    guards: tuple[tuple[ast.expr, bool, Scope], ...]
    scope: Scope
    line: int


@dataclass
class KernelFacts:
    """The constraints of one kernel, and the literals each of its names is compared with."""

    constraints: list[Constraint] = field(default_factory=list)
    #: root name -> the values it is compared with: literals and module constants
    #: (``ACT == "gelu"``, ``MODE in ("a", "b")``, ``SCALE is not None``, ``CAST == _MODE_LLAMA``)
    literals: dict[str, list[Any]] = field(default_factory=dict)
    #: integer literals the constraints mention (``K_WIDTH == 4``: 4)
    integers: set[int] = field(default_factory=set)
    #: root names used as a ``tl.dtype`` (``x.to(D)``, ``dtype=D``, ``D.primitive_bitwidth``)
    dtypes: set[str] = field(default_factory=set)
    #: root name -> the length its uses need of a tuple (``len(T)``: 1, ``T[3]``: 4)
    tuples: dict[str, int] = field(default_factory=dict)


def _guards_hold(constraint: Constraint, values: Mapping[str, Any]) -> bool:
    """Whether every enclosing test takes the constraint's branch (raises Unknown when one cannot be told)."""
    return all(bool(evaluate(test, scope, values)) == branch for test, branch, scope in constraint.guards)


def broken(constraint: Constraint, values: Mapping[str, Any]) -> bool:
    """Whether ``values`` break ``constraint``; one that cannot be evaluated is not broken."""
    try:
        if not _guards_hold(constraint, values):
            return False
        if constraint.kind == "raise":
            return True
        if constraint.kind == "assert":
            return not evaluate(constraint.exprs[0], constraint.scope, values)
        start, end = (evaluate(e, constraint.scope, values) for e in constraint.exprs)
        if constraint.kind == "reshape":
            return _product(start) != _product(end)
        if constraint.kind == "broadcast":
            return isinstance(start, int) and isinstance(end, int) and start != end and 1 not in (start, end)
        if constraint.kind == "dot":  # Triton's tl.dot wants K >= 16
            return isinstance(start, int) and isinstance(end, int) and (start != end or start < MIN_DOT_K)
    except (Unknown, TypeError, ValueError, ArithmeticError, RecursionError):
        return False
    if not (isinstance(start, int) and isinstance(end, int)):
        return False
    size = end - start
    return size <= 0 or size > MAX_ARANGE or size & (size - 1) != 0


# --------------------------------------------------------------------------- reading the tree


def _assigned_once(func: ast.FunctionDef) -> dict[str, ast.expr]:
    """Locals ``func`` assigns exactly once with a plain ``NAME = expr`` / ``NAME: T = expr``."""
    counts: dict[str, int] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
    found: dict[str, ast.expr] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        else:
            continue
        if counts.get(target) == 1:
            found[target] = value
    return found


def _defaults(func: ast.FunctionDef) -> dict[str, ast.expr]:
    """Each parameter with a default, and the default's expression."""
    args = func.args
    positional = args.posonlyargs + args.args
    found = {a.arg: d for a, d in zip(positional[len(positional) - len(args.defaults):], args.defaults)}
    found.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    return found


def _params(func: ast.FunctionDef) -> list[str]:
    return [a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs]


def _constexpr_params(func: ast.FunctionDef) -> list[str]:
    """Parameters annotated ``tl.constexpr`` (scalars whatever the caller passes)."""
    return [a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs
            if a.annotation is not None and "constexpr" in ast.dump(a.annotation)]


def _bind(func: ast.FunctionDef, call: ast.Call) -> dict[str, ast.expr] | None:
    """The helper's parameters bound to the call's argument expressions (None for ``*args``/``**kw``)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    names = _params(func)
    if len(call.args) > len(func.args.posonlyargs + func.args.args):
        return None
    bound = dict(zip(names, call.args))
    bound.update({k.arg: k.value for k in call.keywords if k.arg in names})
    return bound


def _callee(node: ast.Call) -> str:
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")


#: ``find(name, where)``: the jit helper ``name`` called in module ``where`` (None: the kernel's module) as
#: ``(function, that module's constants, that module)``, or None when it is not a jit function there.
HelperFinder = Callable[[str, Any], "tuple[ast.FunctionDef, Mapping[str, ast.expr], Any] | None"]


def helpers_of(functions: Mapping[str, ast.FunctionDef], constants: Mapping[str, ast.expr]) -> HelperFinder:
    """A :data:`HelperFinder` over the jit functions of one module."""
    return lambda name, where: (functions[name], constants, None) if name in functions else None


class _Reader:
    """Walks a kernel and its helpers once, collecting :class:`KernelFacts`."""

    def __init__(self, find: HelperFinder, kernel: ast.FunctionDef) -> None:
        self.find = find
        self.kernel = kernel
        self.facts = KernelFacts()

    def function(self, func: ast.FunctionDef, scope: Scope, guards: tuple, depth: int) -> None:
        self.block(func.body, scope, guards, depth)
        scalars = frozenset(_params(func)) if depth == 0 else frozenset(_constexpr_params(func))
        for kind, exprs, where, line in shape_conditions(func, scope, guards, scalars):
            if len(self.facts.constraints) < MAX_CONSTRAINTS:
                self.add(kind, exprs, where, scope, line)

    def block(self, body: Sequence[ast.stmt], scope: Scope, guards: tuple, depth: int) -> None:
        for stmt in body:
            if len(self.facts.constraints) >= MAX_CONSTRAINTS:
                return
            if isinstance(stmt, ast.If):
                self.expressions([stmt.test], scope, guards, depth)
                self.block(stmt.body, scope, guards + ((stmt.test, True, scope),), depth)
                self.block(stmt.orelse, scope, guards + ((stmt.test, False, scope),), depth)
                if stmt.body and isinstance(stmt.body[-1], ast.Return) and not stmt.orelse:
                    guards = guards + ((stmt.test, False, scope),)  # an early return: what follows runs when false
            elif isinstance(stmt, ast.Raise):
                self.add("raise", (), guards, scope, stmt.lineno)
            elif isinstance(stmt, (ast.For, ast.While, ast.With)):
                heads = [stmt.iter] if isinstance(stmt, ast.For) else [stmt.test] if isinstance(stmt, ast.While) \
                    else [item.context_expr for item in stmt.items]
                self.expressions(heads, scope, guards, depth)
                self.block(stmt.body, scope, guards, depth)
                self.block(getattr(stmt, "orelse", []), scope, guards, depth)
            elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.expressions([stmt], scope, guards, depth)

    def expressions(self, nodes: Sequence[ast.AST], scope: Scope, guards: tuple, depth: int) -> None:
        for root in nodes:
            for node in ast.walk(root):
                if isinstance(node, ast.Compare):
                    self.compared(node, scope)
                self.used(node, scope)
                if not isinstance(node, ast.Call):
                    continue
                callee = _callee(node)
                if callee == "static_assert" and node.args:
                    self.add("assert", (node.args[0],), guards, scope, node.lineno)
                elif callee == "arange" and len(node.args) == 2:
                    self.add("arange", tuple(node.args), guards, scope, node.lineno)
                elif callee in _LAYOUTS:
                    for sizes in _layout_sizes(node):
                        self.add("arange", (ast.Constant(0), sizes), guards, scope, node.lineno)
                elif depth < MAX_DEPTH and isinstance(node.func, ast.Name):
                    found = self.find(callee, scope.where)
                    if found is not None and found[0] is not self.kernel:
                        self.helper(found, node, scope, guards, depth)

    def helper(self, found: tuple, call: ast.Call, scope: Scope, guards: tuple, depth: int) -> None:
        func, constants, where = found
        bound = _bind(func, call)
        if bound is None:
            return
        derived = {**_defaults(func), **_assigned_once(func)}
        inner = Scope(frozenset(_params(func)), bound, {k: v for k, v in derived.items() if k not in bound},
                      constants, scope, where)
        self.function(func, inner, guards, depth + 1)  # the caller's tests, in the caller's scope, still apply

    def add(self, kind: str, exprs: tuple, guards: tuple, scope: Scope, line: int) -> None:
        self.facts.constraints.append(Constraint(kind, exprs, guards, scope, line))
        for expr in exprs:
            for node in ast.walk(expr):
                if isinstance(node, ast.Constant) and type(node.value) is int and 0 < node.value <= MAX_ARANGE:
                    self.facts.integers.add(node.value)

    def used(self, node: ast.AST, scope: Scope) -> None:
        """Note a name used as a dtype or as a tuple."""
        dtype_args: list[ast.expr] = []
        if isinstance(node, ast.Call):
            callee = _callee(node)
            dtype_args = [k.value for k in node.keywords if k.arg in ("dtype", "dst_ty", "out_dtype")]
            position = _DTYPE_POSITION.get(callee)
            if position is not None and len(node.args) > position:
                dtype_args.append(node.args[position])
            if callee == "len" and len(node.args) == 1 and isinstance(node.args[0], ast.Name):
                self.tuple_of(node.args[0].id, 1, scope)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in _DTYPE_ATTRIBUTES:
            dtype_args.append(node.value)
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            index = node.slice
            if isinstance(index, ast.Constant) and type(index.value) is int and 0 <= index.value < 64:
                self.tuple_of(node.value.id, index.value + 1, scope)
            elif not isinstance(index, (ast.Slice, ast.Tuple)):
                self.tuple_of(node.value.id, 1, scope)
        for arg in dtype_args:
            name = root_name(arg.id, scope) if isinstance(arg, ast.Name) else None
            if name is not None:
                self.facts.dtypes.add(name)

    def tuple_of(self, name: str, length: int, scope: Scope) -> None:
        root = root_name(name, scope)
        if root is not None:
            self.facts.tuples[root] = max(self.facts.tuples.get(root, 0), length)

    def compared(self, node: ast.Compare, scope: Scope) -> None:
        """Note the values a name is compared with (``==``, ``!=``, ``in``, ``is``): literals, constants."""
        operands = [node.left, *node.comparators]
        names = [root_name(o.id, scope) for o in operands if isinstance(o, ast.Name)]
        if not any(names):
            return
        literals: list[Any] = []
        for operand in operands:
            for element in operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [operand]:
                literals += _literal(element, scope)
        for name in names:
            if name is not None:
                known = self.facts.literals.setdefault(name, [])
                known.extend(v for v in literals if not any(v is k or (type(v) is type(k) and v == k) for k in known))


def _literal(node: ast.expr, scope: Scope) -> list[Any]:
    """``[value]`` of a literal or a module constant (``_MODE_LLAMA = tl.constexpr(1)``), else ``[]``."""
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (str, int))):
        return [node.value]
    if isinstance(node, ast.Name) and node.id in scope.constants and node.id not in scope.params:
        try:
            value = evaluate(node, Scope(frozenset(), constants=scope.constants), {})
        except (Unknown, TypeError, ValueError, ArithmeticError, RecursionError):
            return []
        return [value] if value is None or isinstance(value, (str, int)) else []
    return []


def root_name(name: str, scope: Scope) -> str | None:
    """The kernel parameter ``name`` stands for in a helper (None when it is not a plain name there)."""
    while scope.outer is not None:
        bound = scope.bindings.get(name)
        if not isinstance(bound, ast.Name):
            return None
        name, scope = bound.id, scope.outer
    return name if name in scope.params else None


def read_constraints(func: ast.FunctionDef, helpers: Mapping[str, ast.FunctionDef] | HelperFinder | None = None,
                     constants: Mapping[str, ast.expr] | None = None) -> KernelFacts:
    """The constraints ``func`` (a ``@triton.jit`` kernel) and the helpers it calls put on its constexprs.

    ``helpers``: the module's jit functions by name, or a :data:`HelperFinder` that also follows
    imports; ``constants``: the module's constants (name → expression)."""
    constants = dict(constants or {})
    find = helpers if callable(helpers) else helpers_of(dict(helpers or {}), constants)
    reader = _Reader(find, func)
    derived = {**_defaults(func), **_assigned_once(func)}
    scope = Scope(frozenset(_params(func)), {}, derived, constants)
    try:
        reader.function(func, scope, (), 0)
    except RecursionError:
        pass
    return reader.facts


def _product(dims: Any) -> int:
    """The number of elements of a shape whose dimensions are all known integers (else raises Unknown)."""
    total = 1
    for dim in dims:
        if type(dim) is not int:
            raise Unknown("dimension")
        total *= dim
    return total


def violations(facts: KernelFacts, values: Mapping[str, Any]) -> list[Constraint]:
    """The constraints of ``facts`` that the kernel's constexpr ``values`` break."""
    return [c for c in facts.constraints if broken(c, values)]
