"""Argument types read from how a kernel uses its values (more dataflow evidence for signatures).

:mod:`kernelrules.specify.argflow` says which parameters are pointers and which buffers hold
indices. This module reads what the remaining uses demand, where a wrong guess could only
fail to compile:

* :meth:`UseTypes.integer_scalars`: a scalar whose value reaches, through arithmetic, the
  offset of a pointer (``x_ptr + row * n_cols``) or a ``range`` bound is an integer, even when
  it is also combined with a float literal (``1.0 / n_cols``) or named like a float
  (``H_scale``): a float offset or loop bound does not compile;
* :meth:`UseTypes.float_scalars`: a scalar whose value reaches ``tl.exp``, ``tl.log``,
  ``tl.sqrt``, ... (which take only fp32/fp64) is a float;
* :meth:`UseTypes.buffer_kinds`: what a pointer's loaded values must be, read from the uses of
  the values themselves (not of a cast of them): shifted, masked with an integer, floor-divided,
  ``tl.cdiv``-ed or the value of an ``atomic_xchg``/``atomic_cas`` lock is ``int``; an argument
  of ``tl.exp`` and the like is ``fp32``; a ``mask=`` or an operand of ``&``/``|`` with a
  comparison is ``bool``.

Only ``ast`` is read; nothing of the user's module runs.
"""

from __future__ import annotations

import ast

from ..discover.kernels import ParsedModule
from .argflow import pointer_flow, propagate

#: ``tl`` math functions that take only fp32/fp64 (``triton.language.math``'s ``_check_dtype``).
FLOAT_ONLY = frozenset({"exp", "exp2", "log", "log2", "cos", "sin", "sqrt", "sqrt_rn", "rsqrt", "erf",
                        "floor", "ceil", "div_rn"})
#: Calls through which a value keeps flowing as arithmetic (every positional argument).
_ARITH_CALLS = frozenset({"minimum", "maximum", "cdiv", "multiple_of", "max_contiguous", "max_constancy",
                          "broadcast_to", "reshape", "expand_dims", "abs"})
#: Calls whose result is made of their first argument's values (reductions, reshapes).
_VALUE_CALLS = frozenset({"sum", "max", "min", "cumsum", "reshape", "broadcast_to", "expand_dims", "abs",
                          "view", "trans", "permute", "ravel"})
_BITWISE = (ast.BitAnd, ast.BitOr, ast.BitXor)
_INTEGER_OPS = (ast.LShift, ast.RShift, ast.FloorDiv, ast.Mod)
#: Binary operators whose result is still an integer when the operands are.
_ARITH_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.LShift, ast.RShift, *_BITWISE)


def _callee(node: ast.AST) -> str:
    """The last name of a call's function (``tl.math.exp`` -> ``exp``), else ``""``."""
    if not isinstance(node, ast.Call):
        return ""
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _params(func: ast.FunctionDef) -> set[str]:
    return {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}


def _is_int_constant(node: ast.expr) -> bool:
    """``15``, ``-1``, ``~3``, ``(1 << 4) - 1``: an integer literal expression."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Invert)):
        return _is_int_constant(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITH_OPS):
        return _is_int_constant(node.left) and _is_int_constant(node.right)
    return False


class UseTypes:
    """The types one kernel's uses demand of its scalar parameters and of its buffers' elements."""

    def __init__(self, module: ParsedModule, kernel: str, pointers: set[str]) -> None:
        self.module, self.func = module, module.jit_functions[kernel]
        self._kinds: dict[str, str] | None = None
        self._helper_found: dict[str, set[str]] | None = None
        self.flow = pointer_flow(module, kernel)
        params = _params(self.func)
        self.pointers = pointers & params
        self.scalars = params - self.pointers
        self.roots = self.flow.local_roots(self.func, params)
        self.arith: dict[str, set[str]] = {p: {p} for p in self.scalars}
        propagate(self.func, self.arith, self._arith)
        self.raw: dict[str, set[str]] = {}
        propagate(self.func, self.raw, self._raw)
        self._value_flow: dict[str, set[str]] = {}
        propagate(self.func, self._value_flow, self._values)
        self.boolean: set[str] = set()
        self._boolean_names()
        self.int_names = self._int_names()

    # ------------------------------------------------------------------ flows

    def _arith(self, node: ast.expr) -> set[str]:
        """Scalar parameters whose values reach ``node`` through integer-preserving arithmetic."""
        if isinstance(node, ast.Name):
            return set(self.arith.get(node.id, ()))
        if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITH_OPS):
            return self._arith(node.left) | self._arith(node.right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
            return self._arith(node.operand)
        if isinstance(node, ast.Subscript):
            return self._arith(node.value)
        if isinstance(node, ast.IfExp):
            return self._arith(node.body) | self._arith(node.orelse)
        name = _callee(node)
        if name == "where" and len(node.args) == 3:
            return self._arith(node.args[1]) | self._arith(node.args[2])
        if name in _ARITH_CALLS:
            return set().union(*(self._arith(a) for a in node.args)) if node.args else set()
        return set()

    def _raw(self, node: ast.expr) -> set[str]:
        """Pointer parameters whose loaded values reach ``node`` uncast (a ``.to(...)`` ends the flow)."""
        if isinstance(node, ast.Name):
            return set(self.raw.get(node.id, ()))
        if isinstance(node, ast.BinOp):
            return self._raw(node.left) | self._raw(node.right)
        if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
            return self._raw(node.operand)
        if isinstance(node, ast.Subscript):
            return self._raw(node.value)
        if isinstance(node, ast.IfExp):
            return self._raw(node.body) | self._raw(node.orelse)
        name = _callee(node)
        if (name == "load" or name.startswith("atomic_")) and isinstance(node.func, ast.Attribute):
            # (an atomic returns the value it replaced: loaded from its pointer too)
            pointer = next((kw.value for kw in node.keywords if kw.arg == "pointer"), node.args[0] if node.args else None)
            return self.flow.roots(pointer, self.roots) & self.pointers if pointer is not None else set()
        if name == "where" and len(node.args) == 3:
            return self._raw(node.args[1]) | self._raw(node.args[2])
        if name in ("minimum", "maximum"):
            return set().union(*(self._raw(a) for a in node.args)) if node.args else set()
        if name in _VALUE_CALLS and node.args:
            return self._raw(node.args[0])
        return set()

    def _boolean_names(self) -> None:
        """Grow :attr:`boolean`: locals assigned a comparison, a ``not`` or a ``&``/``|`` of booleans."""
        changed = True
        while changed:
            changed = False
            for node in ast.walk(self.func):
                if isinstance(node, ast.Assign) and self._is_boolean(node.value):
                    for target in node.targets:
                        if isinstance(target, ast.Name) and target.id not in self.boolean:
                            self.boolean.add(target.id)
                            changed = True

    def _int_names(self) -> set[str]:
        """Names assigned only integer expressions of literals and constexpr parameters (``MASK = (1 << BITS) - 1``)."""
        constexprs = {a.arg for a in [*self.func.args.posonlyargs, *self.func.args.args, *self.func.args.kwonlyargs]
                      if a.annotation is not None and "constexpr" in ast.dump(a.annotation)}
        values: dict[str, list[ast.expr]] = {}
        for node in ast.walk(self.func):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        values.setdefault(target.id, []).append(node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                values.setdefault(node.target.id, []).append(node.value)

        def integer(expr: ast.expr) -> bool:
            if isinstance(expr, ast.Name):
                return expr.id in constexprs
            if isinstance(expr, ast.BinOp) and isinstance(expr.op, _ARITH_OPS):
                return integer(expr.left) and integer(expr.right)
            return _is_int_constant(expr)
        return {name for name, exprs in values.items() if all(integer(e) for e in exprs)}

    def _is_boolean(self, node: ast.expr) -> bool:
        if isinstance(node, (ast.Compare, ast.BoolOp)) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            return True
        if isinstance(node, ast.Constant):
            return isinstance(node.value, bool)
        if isinstance(node, ast.Name):
            return node.id in self.boolean
        if isinstance(node, ast.BinOp) and isinstance(node.op, _BITWISE):
            return self._is_boolean(node.left) and self._is_boolean(node.right)
        if isinstance(node, ast.Subscript):
            return self._is_boolean(node.value)
        return False

    # ------------------------------------------------------------------ evidence

    def _offsets(self) -> list[ast.expr]:
        """Expressions added to (or subtracted from) a pointer, and ``range`` bounds."""
        found: list[ast.expr] = []
        for node in ast.walk(self.func):
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
                if self.flow.roots(node.left, self.roots) & self.pointers:
                    found.append(node.right)
                elif isinstance(node.op, ast.Add) and self.flow.roots(node.right, self.roots) & self.pointers:
                    found.append(node.left)
            elif isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
                if isinstance(node.target, ast.Name) and self.roots.get(node.target.id, set()) & self.pointers:
                    found.append(node.value)
            elif isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and _callee(node.iter) == "range":
                found += node.iter.args
        return found

    def integer_scalars(self) -> set[str]:
        """Scalars whose values reach a pointer's offset or a loop bound through arithmetic (here or in
        a jit helper of the module they are passed to), or that are operands of ``%``, ``//``, shifts,
        bit operations or ``tl.cdiv``."""
        found: set[str] = set(self._helpers()["int_scalar"])
        for offset in self._offsets():
            found |= self._arith(offset)
        for node in ast.walk(self.func):
            if isinstance(node, ast.BinOp) and isinstance(node.op, (*_INTEGER_OPS, *_BITWISE)):
                found |= self._direct(node.left) | self._direct(node.right)
            elif _callee(node) == "cdiv":
                found |= set().union(*(self._direct(a) for a in node.args)) if node.args else set()
        return found & self.scalars

    def _direct(self, node: ast.expr) -> set[str]:
        """The scalar parameter ``node`` names, or a local holds unchanged (``n = N``)."""
        return self._arith(node) if isinstance(node, ast.Name) and node.id in self.scalars else set()

    def float_scalars(self) -> set[str]:
        """Scalars whose values reach an fp32/fp64-only ``tl`` math function through ``+``, ``-``, ``*``
        (not through ``%``, ``//``, shifts or bit operations: those make integer indices of them)."""
        found: set[str] = set(self._helpers()["float_scalar"])
        for node in ast.walk(self.func):
            if _callee(node) in FLOAT_ONLY:
                for arg in node.args:
                    found |= self._values(arg)
        return (found - self.integer_scalars()) & self.scalars

    def _values(self, node: ast.expr) -> set[str]:
        """Scalar parameters ``node`` is computed from by ``+``, ``-``, ``*`` (through locals)."""
        if isinstance(node, ast.Name):
            if node.id in self.scalars:
                return {node.id}
            values = self._value_flow.get(node.id)
            return set(values) if values is not None else set()
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            return self._values(node.left) | self._values(node.right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return self._values(node.operand)
        if isinstance(node, ast.Subscript):
            return self._values(node.value)
        return set()

    def buffer_kinds(self) -> dict[str, str]:
        """Pointer -> ``int``, ``fp32`` or ``bool``: what its loaded values must be to compile (here or in
        a jit helper of the module it is passed to).

        Integer evidence wins over boolean (``x & 1`` compiles on either); a buffer with both
        integer and float evidence is left alone (the uses disagree: nothing is sure)."""
        if self._kinds is not None:
            return self._kinds
        helpers = self._helpers()
        ints = self._integer_uses() | helpers["int"]
        floats = self._float_uses() | helpers["fp32"]
        bools = self._boolean_uses() | helpers["bool"]
        kinds = {p: "bool" for p in bools}
        kinds.update({p: "fp32" for p in floats})
        kinds.update({p: "int" for p in ints})
        kinds = {p: k for p, k in kinds.items() if not (p in ints and p in floats)}
        for pointer, exact in self._branch_types().items():
            if kinds.get(pointer, _KIND_OF.get(exact)) == _KIND_OF.get(exact):
                kinds[pointer] = exact
        self._kinds = {p: k for p, k in kinds.items() if p in self.pointers}
        return self._kinds

    def _branch_types(self) -> dict[str, str]:
        """``if c: v = tl.load(a).to(tl.int64) else: v = tl.load(b)``: both branches must give ``v`` one type
        (Triton rejects a mismatch), so ``b`` holds ``int64``: pointer -> exact type (``*i64``)."""
        found: dict[str, str] = {}
        for node in ast.walk(self.func):
            if not isinstance(node, ast.If) or not node.orelse:
                continue
            body, orelse = _last_assigned(node.body), _last_assigned(node.orelse)
            for name in body.keys() & orelse.keys():
                for typed, raw in ((body[name], orelse[name]), (orelse[name], body[name])):
                    dtype = _cast_type(typed)
                    if dtype is not None:
                        for pointer in self._raw(raw):
                            found[pointer] = dtype
        return found

    def _helpers(self) -> dict[str, set[str]]:
        """What the jit helpers this function calls demand of the arguments it passes them: buffer kinds
        (``int``, ``fp32``, ``bool``) of its pointers, ``int_scalar`` and ``float_scalar`` of its scalars."""
        if self._helper_found is not None:
            return self._helper_found
        found: dict[str, set[str]] = {k: set() for k in ("int", "fp32", "bool", "int_scalar", "float_scalar")}
        self._helper_found = found  # (a recursive helper sees no evidence of itself)
        for node in ast.walk(self.func):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            helper = _uses_of(self.module, node.func.id)
            if helper is None or helper is self:
                continue
            kinds, ints, floats = helper.buffer_kinds(), helper.integer_scalars(), helper.float_scalars()
            names = [a.arg for a in [*helper.func.args.posonlyargs, *helper.func.args.args]]
            pairs = [*zip(names, node.args), *((kw.arg, kw.value) for kw in node.keywords if kw.arg)]
            for param, arg in pairs:
                if isinstance(arg, ast.Starred):
                    break
                if param in kinds:
                    found[kinds[param]] |= self.flow.roots(arg, self.roots) & self.pointers
                if param in ints:
                    found["int_scalar"] |= self._arith(arg)
                if param in floats:
                    found["float_scalar"] |= self._arith(arg)
        return found

    def _integer_uses(self) -> set[str]:
        found: set[str] = set()
        for node in ast.walk(self.func):
            if isinstance(node, ast.BinOp) and isinstance(node.op, _INTEGER_OPS):
                if not isinstance(node.right, ast.Constant) or type(node.right.value) is int:
                    found |= self._raw(node.left)
                if isinstance(node.op, (ast.LShift, ast.RShift)):
                    found |= self._raw(node.right)
            elif isinstance(node, ast.BinOp) and isinstance(node.op, _BITWISE):
                for side, other in ((node.left, node.right), (node.right, node.left)):
                    if _is_int_constant(other) or (isinstance(other, ast.Name) and other.id in self.int_names):
                        found |= self._raw(side)
            elif _callee(node) == "cdiv" and node.args:
                found |= self._raw(node.args[0])
            elif _callee(node) in ("atomic_xchg", "atomic_cas"):
                found |= self._lock(node)
        return found

    def _lock(self, call: ast.Call) -> set[str]:
        """The pointer of ``atomic_xchg(p, 1)`` / ``atomic_cas(p, 0, 1)`` when every value is an int literal."""
        values = [*call.args[1:], *(kw.value for kw in call.keywords if kw.arg in ("val", "cmp"))]
        pointer = next((kw.value for kw in call.keywords if kw.arg == "pointer"), call.args[0] if call.args else None)
        if pointer is None or not values or not all(_is_int_constant(v) for v in values):
            return set()
        return self.flow.roots(pointer, self.roots) & self.pointers

    def _float_uses(self) -> set[str]:
        found: set[str] = set()
        for node in ast.walk(self.func):
            if _callee(node) in FLOAT_ONLY:
                for arg in node.args:  # (div_rn(x, y): both)
                    found |= self._raw(arg)
        return found

    def _boolean_uses(self) -> set[str]:
        found: set[str] = set()
        for node in ast.walk(self.func):
            if isinstance(node, ast.BinOp) and isinstance(node.op, _BITWISE):
                for side, other in ((node.left, node.right), (node.right, node.left)):
                    if self._is_boolean(other):
                        found |= self._raw(side)
            elif _callee(node) in ("load", "store") or _callee(node).startswith("atomic_"):
                for kw in node.keywords:
                    if kw.arg == "mask":
                        found |= self._raw(kw.value)
        return found


#: ``tl`` dtypes a cast may name, as signature pointer types, and the kind each is.
_TL_TYPES = {"int64": "*i64", "int32": "*i32", "int16": "*i16", "int8": "*i8", "uint8": "*u8", "int1": "*i1",
             "float32": "*fp32", "float16": "*fp16", "bfloat16": "*bf16"}
_KIND_OF = {"*i64": "int", "*i32": "int", "*i16": "int", "*i8": "int", "*u8": "int", "*i1": "bool",
            "*fp32": "fp32", "*fp16": "float", "*bf16": "float"}


def _cast_type(node: ast.expr) -> str | None:
    """The pointer type of the dtype ``node`` casts to (``x.to(tl.int64)``, ``tl.cast(x, tl.int64)``)."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    target = node.args[0] if node.func.attr == "to" and node.args else (
        node.args[1] if node.func.attr == "cast" and len(node.args) >= 2 else None)
    return _TL_TYPES.get(target.attr) if isinstance(target, ast.Attribute) else None


def _last_assigned(body: list[ast.stmt]) -> dict[str, ast.expr]:
    """Each name a branch's own statements assign (not nested blocks'), with its last value."""
    found: dict[str, ast.expr] = {}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            found[stmt.targets[0].id] = stmt.value
    return found


#: The last modules' helpers' use types, by module object and name (a kernel's helpers are read once).
_USES: dict[tuple[int, str], tuple[ParsedModule, UseTypes]] = {}


def _uses_of(module: ParsedModule, name: str) -> UseTypes | None:
    """:class:`UseTypes` of the jit function ``name`` of ``module`` with its own pointer parameters."""
    if name not in module.jit_functions:
        return None
    cached = _USES.get((id(module), name))
    if cached is None or cached[0] is not module:
        if len(_USES) >= 1024:
            _USES.clear()
        pointers = pointer_flow(module, name).pointers.get(name, set())
        cached = _USES[(id(module), name)] = (module, UseTypes(module, name, pointers))
    return cached[1]


def use_types(module: ParsedModule, kernel: str, pointers: set[str]) -> UseTypes | None:
    """:class:`UseTypes` of ``kernel`` (None when it is no jit function of ``module``)."""
    return UseTypes(module, kernel, pointers) if kernel in module.jit_functions else None
