"""Launch signatures for discovered kernels, each argument with where its type came from.

A launch signature types every non-constexpr parameter the way a space file's
``signature`` does (see ``docs/prune.md``): a pointer ``"*fp16"``, an integer value
(``4096``: specialised as at launch) or a scalar type (``"fp32"``, ``"i32"``).
:func:`infer_signature` fills it from these sources, strongest first, and records the
source of each argument in :attr:`InferredSignature.provenance`:

``spec``
    an explicit mapping: ``--spec FILE`` or the sidecar ``<module>.kernelrules.yaml``;
``call-site``
    a literal argument at a ``kernel[grid](...)`` launch in the same file;
``comment``
    a pointer type in the parameter's trailing comment (``k,  # *f32 [B, T, H, D]``);
``dataflow``
    the kernel body (:mod:`kernelrules.specify.argflow`): a parameter at the root of pointer
    arithmetic reaching ``tl.load``/``tl.store``/``tl.atomic_*``/``tl.make_block_ptr`` is a
    pointer, a pointer whose loaded values are offsets or loop bounds holds integers, a
    parameter compared or combined with float literals is ``fp32``;
``naming``
    the parameter's name: a pointer's dtype (``*fp16`` unless the name says ``fp32``,
    ``bf16``, ``fp8``, ``idx``, ...), ``eps``/``scale``/``alpha``/... are ``fp32``, a
    ``stride`` is an integer whatever else its name says;
``default``
    an integer with no better evidence gets 4096 (divisible by 16, as aligned launches are).

Why over 400 lines: one table of signature sources, strongest first, each a short function; they
share the provenance model defined here.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .argflow import address_pointers, float_params, index_pointers, pointer_flow, used_names
from .argnotes import comment_types, descriptor_params
from .descriptors import descriptor_types
from .usetypes import use_types
from ..compile.descriptor import is_descriptor
from ..atomicio import write_text_atomic
from ..discover.kernels import DiscoveredKernel, ParsedModule, cached_module
from ..discover.pyast import MarkedLines, iter_nodes
from ..errors import SignatureSpecError
from ..yamlio import LocatedDocument, load_file

#: The integer every size, stride and count defaults to (tt.divisibility=16 at launch).
DEFAULT_INT = 4096

#: Provenance labels, strongest first.
PROVENANCE = ("spec", "call-site", "comment", "dataflow", "naming", "default")

#: Scalar and pointer types a spec may name (the space file's schema), as regex alternatives.
DTYPE_PATTERN = "fp8e4nv|fp8e5|fp8e4b15|fp8e4b8|fp8e5b16|fp16|bf16|fp32|fp64|i1|i8|i16|i32|i64|u8|u16|u32|u64"
_TYPE_TEXT = re.compile(rf"\*?(?:{DTYPE_PATTERN})\Z")

#: Name tokens that mark a float scalar.
_FLOAT_TOKENS = frozenset({"eps", "epsilon", "scale", "alpha", "beta", "gamma", "rate", "temperature",
                           "softcap", "momentum", "lr", "sm_scale", "theta"})
#: Name tokens that mark an integer pointer, and which integer.
_INT_POINTER_TOKENS = {"int": "*i32", "int32": "*i32", "i32": "*i32", "idx": "*i32", "index": "*i32",
                       "indices": "*i32", "offsets": "*i32", "ids": "*i32", "int64": "*i64", "i64": "*i64",
                       "labels": "*i64", "label": "*i64", "targets": "*i64", "target": "*i64",
                       "seqlens": "*i32", "lens": "*i32", "lengths": "*i32", "counts": "*i32", "indptr": "*i32"}
_FLOAT_POINTER_TOKENS = {"fp32": "*fp32", "f32": "*fp32", "float32": "*fp32", "fp8": "*fp8e4nv",
                         "bf16": "*bf16", "bfloat16": "*bf16", "fp16": "*fp16", "f16": "*fp16", "half": "*fp16"}
@dataclass
class InferredSignature:
    """A launch signature for one kernel, with the source of every argument."""

    kernel: str
    spec: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    #: Missing arguments the body uses as tensor descriptors (``desc.load([m, k])``) whose block shape
    #: the source does not give.
    descriptors: list[str] = field(default_factory=list)
    #: Descriptor arguments typed from the source: name -> where the block shape was read
    #: (:mod:`kernelrules.specify.descriptors`); their element type is a guess.
    descriptor_sources: dict[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Whether every non-constexpr parameter got a type or value."""
        return not self.missing

    def set(self, name: str, value: Any, source: str) -> None:
        """Record ``value`` for ``name`` unless a stronger source already did."""
        current = self.provenance.get(name)
        if current is None or PROVENANCE.index(source) < PROVENANCE.index(current.split(" ")[0]):
            self.spec[name] = value
            self.provenance[name] = source


@dataclass(frozen=True)
class CallSite:
    """One ``kernel[grid](...)`` launch and the literal arguments it passes, by parameter name."""

    path: Path
    line: int
    column: int
    literals: Mapping[str, Any]


# --------------------------------------------------------------------------- spec files


def sidecar_path(module_path: str | os.PathLike[str]) -> Path:
    """The sidecar spec of a module: ``<dir>/<stem>.kernelrules.yaml``."""
    path = Path(module_path)
    return path.with_name(f"{path.stem}.kernelrules.yaml")


def _spec_error(doc: LocatedDocument, where: tuple, message: str) -> SignatureSpecError:
    line, column = doc.where(where) or (None, None)
    return SignatureSpecError(message, path=doc.source, line=line, column=column,
                              hint="expected kernels: {NAME: {signature: {ARG: \"*fp16\" | 4096 | \"i32\"}}}")


def _check_value(doc: LocatedDocument, where: tuple, value: Any) -> None:
    """Reject a signature value that is not a type string or a number/boolean."""
    if isinstance(value, (bool, int, float)):
        return
    if isinstance(value, str) and (_TYPE_TEXT.match(value) or is_descriptor(value)):
        return
    if value == "TODO":
        raise _spec_error(doc, where, f"'{where[-1]}' is still TODO")
    raise _spec_error(doc, where, f"'{where[-1]}' has value {value!r}, not a pointer type, scalar type, number "
                                  f"or tensor-descriptor type (tensordesc<fp16[BLOCK_M, 64]>)")


def load_spec_file(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """Read ``kernels: {name: {signature: {...}}}``; errors name the file and line."""
    doc = load_file(path, error=SignatureSpecError)
    data = doc.data
    if not isinstance(data, dict) or set(data) - {"kernels"} or not isinstance(data.get("kernels"), dict):
        raise _spec_error(doc, (), "a spec file is a mapping with one key, 'kernels', holding a mapping")
    result: dict[str, dict[str, Any]] = {}
    for name, entry in data["kernels"].items():
        if not isinstance(entry, dict) or set(entry) - {"signature"} or not isinstance(entry.get("signature"), dict):
            raise _spec_error(doc, ("kernels", name), f"kernel {name!r} needs a 'signature' mapping and nothing else")
        for arg, value in entry["signature"].items():
            _check_value(doc, ("kernels", name, "signature", arg), value)
        result[str(name)] = dict(entry["signature"])
    return result


def spec_for(kernel: DiscoveredKernel, spec_file: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """The kernel's signature from ``spec_file``, else from its sidecar if present, else None."""
    path = Path(spec_file) if spec_file is not None else sidecar_path(kernel.path)
    if spec_file is None and not path.is_file():
        return None
    return load_spec_file(path).get(kernel.name)


# --------------------------------------------------------------------------- call sites


def _literal(node: ast.expr) -> Any:
    """The value of a literal int/float/bool argument (``-1`` too), else a sentinel."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return _NOT_LITERAL
    return value if isinstance(value, (bool, int, float)) else _NOT_LITERAL


_NOT_LITERAL = object()


def _launched_name(call: ast.Call) -> str | None:
    """``kernel`` for a call ``kernel[grid](...)``."""
    func = call.func
    if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name):
        return func.value.id
    return None


def find_call_sites(kernel: DiscoveredKernel, paths: Iterable[str | os.PathLike[str]] | None = None) -> list[CallSite]:
    """Launches of ``kernel`` in ``paths`` (default: its own file), with their literal arguments."""
    sites: list[CallSite] = []
    for path in [Path(p) for p in paths] if paths is not None else [kernel.path]:
        module = cached_module(path)
        if not isinstance(module, ParsedModule):
            continue
        for node in _launches(module).get(kernel.name, ()):
            sites.append(CallSite(path, node.lineno, node.col_offset, _call_literals(kernel, node)))
    return sorted(sites, key=lambda s: (str(s.path), s.line, s.column))


#: The last modules' launches by kernel name (one walk of a module, however many kernels ask).
_LAUNCHES: dict[int, tuple[ParsedModule, dict[str, list[ast.Call]]]] = {}


def _launches(module: ParsedModule) -> dict[str, list[ast.Call]]:
    """Every ``name[grid](...)`` (or other launch form) call of ``module``, by the launched name."""
    cached = _LAUNCHES.get(id(module))
    if cached is None or cached[0] is not module:
        found: dict[str, list[ast.Call]] = {}
        for statement in _with_subscripts(module):
            for node in iter_nodes(statement):
                if isinstance(node, ast.Call):
                    name = _launched_name(node)
                    if name is not None:
                        found.setdefault(name, []).append(node)
        if len(_LAUNCHES) >= 64:
            _LAUNCHES.clear()
        cached = _LAUNCHES[id(module)] = (module, found)
    return cached[1]


def _with_subscripts(module: ParsedModule) -> list[ast.stmt]:
    """The module's top-level statements whose text holds a ``[``: a launch ``kernel[grid](...)`` is written
    with one, so the others (most of a large module of plain helpers) need no walk."""
    marked = MarkedLines(module.source, r"\[")
    return [s for s in module.tree.body if marked.holds(s)]


def _call_literals(kernel: DiscoveredKernel, call: ast.Call) -> dict[str, Any]:
    """Parameter name -> literal value for the literal arguments of one launch."""
    literals: dict[str, Any] = {}
    if any(isinstance(a, ast.Starred) for a in call.args):
        return literals
    for param, arg in zip(kernel.params, call.args):
        literals[param.name] = _literal(arg)
    for kw in call.keywords:
        if kw.arg is not None and kernel.param(kw.arg) is not None:
            literals[kw.arg] = _literal(kw.value)
    return {k: v for k, v in literals.items() if v is not _NOT_LITERAL}


def _call_site_value(value: Any) -> Any:
    """What a literal launch argument becomes in a signature (floats are typed, not valued)."""
    return "fp32" if isinstance(value, float) else value


# --------------------------------------------------------------------------- naming


def _tokens(name: str) -> list[str]:
    """Lower-case words of a name: ``xIdx_ptr`` -> ``[x, idx, ptr]``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [t for t in re.split(r"[_\W]+", spaced.lower()) if t]


def pointer_dtype_from_name(name: str) -> str:
    """The pointer type a name suggests; ``*fp16`` when it suggests none."""
    for token in _tokens(name):
        if token in _FLOAT_POINTER_TOKENS:
            return _FLOAT_POINTER_TOKENS[token]
        if token in _INT_POINTER_TOKENS:
            return _INT_POINTER_TOKENS[token]
    return "*fp16"


def looks_like_stride(name: str) -> bool:
    """Whether a name says stride (``stride_xm``, ``X_row_stride``, ``Mean_ptr_row_stride``): an integer,
    whatever else the name holds (``ptr``, ``scale``, ``beta``)."""
    return any(t.startswith("stride") for t in _tokens(name))


def looks_like_pointer(name: str) -> bool:
    """Whether a name says pointer (``x_ptr``, ``XPtr``, ``out_pointer``)."""
    return any(t in ("ptr", "ptrs", "pointer") for t in _tokens(name))


def looks_like_float(name: str) -> bool:
    """Whether a scalar's name says float (``eps``, ``sm_scale``, ``dropout_rate``)."""
    tokens = _tokens(name)
    return name.lower() in _FLOAT_TOKENS or any(t in _FLOAT_TOKENS for t in tokens)


def looks_like_int(name: str) -> bool:
    """Whether a scalar's name says size, stride or count (``M``, ``stride_am``, ``n_elements``)."""
    if re.fullmatch(r"[A-Z]{1,2}", name):
        return True
    tokens = _tokens(name)
    return any(t.startswith("stride") or t in ("n", "numel", "elements", "size", "len", "length", "rows", "cols",
                                               "dim", "num", "count", "seq", "batch", "heads", "offset", "seed")
               for t in tokens)


# --------------------------------------------------------------------------- inference


def infer_signature(
    kernel: DiscoveredKernel,
    *,
    spec: Mapping[str, Any] | None = None,
    call_sites: Sequence[CallSite] | None = None,
    use_sidecar: bool = True,
) -> InferredSignature:
    """Type every non-constexpr parameter of ``kernel``, strongest source first.

    ``spec`` is this kernel's signature mapping; when None and ``use_sidecar`` is set,
    the sidecar ``<module>.kernelrules.yaml`` is read if it exists. ``call_sites``
    defaults to the launches in the kernel's own file.
    """
    result = InferredSignature(kernel.name)
    runtime = [p.name for p in kernel.runtime_params]
    if spec is None and use_sidecar:
        spec = spec_for(kernel)
    _apply_spec(kernel, result, spec or {})
    sites = call_sites if call_sites is not None else find_call_sites(kernel)
    _apply_call_sites(result, runtime, sites)
    _apply_body(kernel, result, runtime)
    result.spec = {name: result.spec[name] for name in runtime if name in result.spec}
    result.provenance = {name: result.provenance[name] for name in result.spec}
    result.missing = [name for name in runtime if name not in result.spec]
    return result


def _apply_spec(kernel: DiscoveredKernel, result: InferredSignature, spec: Mapping[str, Any]) -> None:
    """Take every argument the spec gives; a name that is no parameter is an error."""
    for name, value in spec.items():
        if kernel.param(name) is None:
            raise SignatureSpecError(f"spec names {name!r}, which is not a parameter of {kernel.name}",
                                     path=str(kernel.path), line=kernel.line)
        result.set(name, value, "spec")


def _apply_call_sites(result: InferredSignature, runtime: list[str], sites: Sequence[CallSite]) -> None:
    """The first literal any launch passes for a parameter."""
    for site in sites:
        for name in runtime:
            if name in site.literals:
                result.set(name, _call_site_value(site.literals[name]), "call-site")


@dataclass(frozen=True)
class _BodyEvidence:
    """What a kernel's body says of its parameters: the same for every launch, so read once."""

    has_body: bool
    pointers: frozenset[str]
    integers: frozenset[str]
    floats: frozenset[str]
    used: frozenset[str]
    descriptors: tuple[str, ...]
    descriptor_types: tuple[tuple[str, str, str], ...]  # (param, tensordesc type, where its block shape was read)
    flow_types: tuple[tuple[str, str], ...]  # (param, type) from loaded values used as integers
    comment_types: tuple[tuple[str, str], ...]  # (param, type) from the parameter's comment
    buffer_kinds: tuple[tuple[str, str], ...]


#: (id of the parsed module, kernel name, runtime parameters) -> (the module, its evidence). The module is
#: kept with its evidence so an id is never reused while its entry lives.
_EVIDENCE: dict[tuple, tuple[Any, _BodyEvidence]] = {}
_EVIDENCE_LIMIT = 256


def _body_evidence(kernel: DiscoveredKernel, runtime: list[str]) -> _BodyEvidence:
    """The body's evidence for ``kernel``, read once per parsed module (a pinned table of thousands
    of launches, or a tune study, asks for the same kernel again and again)."""
    module = cached_module(kernel.path)
    key = (id(module), kernel.name, tuple(runtime))
    found = _EVIDENCE.get(key)
    if found is not None and found[0] is module:
        return found[1]
    evidence = _read_body(module, kernel.name, runtime)
    if len(_EVIDENCE) >= _EVIDENCE_LIMIT:
        _EVIDENCE.clear()
    _EVIDENCE[key] = (module, evidence)
    return evidence


def _read_body(module: Any, name: str, runtime: list[str]) -> _BodyEvidence:
    func = module.jit_functions.get(name) if isinstance(module, ParsedModule) else None
    if func is None:
        return _BodyEvidence(False, frozenset(), frozenset(), frozenset(), frozenset(), (), (), (), (), ())
    pointers = pointer_flow(module, name).pointers.get(name, set())
    uses = use_types(module, name, pointers)
    integers = uses.integer_scalars()
    floats = (float_params(func, set(runtime)) | uses.float_scalars()) - integers
    flowing = pointers & set(runtime)
    addresses = address_pointers(module, name, flowing)
    flow_types = []
    for param in index_pointers(module, name, flowing) | addresses:
        wide = param in addresses or any(t in ("int64", "i64", "labels", "label", "targets", "target")
                                         for t in _tokens(param))
        flow_types.append((param, "*i64" if wide else "*i32"))
    comments = [(param, text) for param, text in comment_types(module.source.splitlines(), func).items()
                if param in flowing or looks_like_pointer(param)]
    descriptors = sorted(descriptor_params(func) & set(runtime))
    typed = descriptor_types(module, name, descriptors, lambda param: pointer_dtype_from_name(param)[1:])
    return _BodyEvidence(True, frozenset(pointers), frozenset(integers), frozenset(floats), frozenset(used_names(func)),
                         tuple(descriptors), tuple((k, v.text, v.source) for k, v in sorted(typed.items())),
                         tuple(flow_types), tuple(comments), tuple(uses.buffer_kinds().items()))


def _apply_body(kernel: DiscoveredKernel, result: InferredSignature, runtime: list[str]) -> None:
    """Dataflow and naming evidence from the kernel's body, then integer defaults."""
    body = _body_evidence(kernel, runtime)
    pointers, integers, floats, used = body.pointers, body.integers, body.floats, body.used
    _apply_descriptors(result, body)
    for name in runtime:
        if name in body.descriptors:
            continue  # a host TensorDescriptor: typed above when the source gives its block shape
        if name in pointers:
            result.set(name, pointer_dtype_from_name(name), "naming")
        elif looks_like_stride(name):
            result.set(name, DEFAULT_INT, "default")
        elif looks_like_pointer(name):
            result.set(name, pointer_dtype_from_name(name), "naming")
        elif name in floats:
            result.set(name, "fp32", "dataflow")
        elif looks_like_float(name) and not looks_like_int(name) and name not in integers:  # scale_cols: a count
            # (``integers``: an offset or loop bound, where a float does not compile, is an int whatever its name)
            result.set(name, "fp32", "naming")
        elif name in used or looks_like_int(name) or body.has_body:
            # Read as an integer, or never read at all (``q += off`` with no load, a parameter kept for
            # API compatibility): no value can change how an unread argument compiles.
            result.set(name, DEFAULT_INT, "default")
    for param, text in body.flow_types:
        result.set(param, text, "dataflow")  # pointers whose loaded values are used as integers hold integers
    for param, text in body.comment_types:
        result.set(param, text, "comment")  # a type comment is the author's
    if body.has_body:
        _apply_buffer_kinds(result, dict(body.buffer_kinds), set(runtime))
    _guess_unit_strides(result, runtime)


def _apply_descriptors(result: InferredSignature, body: _BodyEvidence) -> None:
    """Type the descriptor arguments whose block shape the source gives (the element type is a guess, so
    the provenance is ``naming``); the others stay in :attr:`InferredSignature.descriptors`."""
    for param, text, source in body.descriptor_types:
        if param not in result.provenance:
            result.set(param, text, "naming")
            result.provenance[param] = f"naming (block shape from {source}; element type guessed)"
            result.descriptor_sources[param] = source
    result.descriptors = [name for name in body.descriptors if name not in result.spec]


#: Pointer type for each kind of element :meth:`~kernelrules.specify.usetypes.UseTypes.buffer_kinds` reads.
_KIND_TYPES = {"int": "*i32", "fp32": "*fp32", "bool": "*i1"}


def _apply_buffer_kinds(result: InferredSignature, kinds: Mapping[str, str], runtime: set[str]) -> None:
    """Retype a pointer guessed from its name when its loaded values' uses demand another element type
    (an integer the name names, ``*i64`` for ``ids_int64``, is kept)."""
    for param, kind in kinds.items():
        if param not in runtime:
            continue
        named = pointer_dtype_from_name(param)
        text = kind if kind.startswith("*") else named if kind == "int" and named[1:2] in ("i", "u") else _KIND_TYPES[kind]
        result.set(param, text, "dataflow")


def _guess_unit_strides(result: InferredSignature, runtime: list[str]) -> None:
    """Give the last stride of each tensor's group of strides the value 1 (row-major, contiguous).

    ``stride_am, stride_ak`` or ``stride_xm, stride_xn``: a tensor's strides are passed
    together, outermost first, and the innermost one is 1 for contiguous tensors. The
    value matters: at launch Triton turns a stride of 1 into a constexpr, which is what
    lets loads vectorise and be software-pipelined. Only defaulted values are changed.
    """
    groups: dict[str, list[str]] = {}
    for name in runtime:
        lowered = name.lower()
        if lowered.startswith("stride_") and len(lowered) > len("stride_") + 1:
            groups.setdefault(lowered[:-1], []).append(name)
    for names in groups.values():
        last = names[-1]
        if len(names) >= 2 and result.provenance.get(last) == "default":
            result.set(last, 1, "naming")


# --------------------------------------------------------------------------- skeleton


_PROVENANCE_NOTES = {
    "spec": "from the spec",
    "call-site": "literal at a launch in this file",
    "comment": "from the parameter's comment in the source",
    "dataflow": "from how the kernel uses it",
    "naming": "guessed from the name; check the dtype",
    "default": "default integer (divisible by 16); give the real value if it matters",
}


def _yaml_value(value: Any) -> str:
    """A signature value as YAML text (type strings quoted: ``*`` starts an alias in YAML)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


def spec_skeleton(kernels: Sequence[DiscoveredKernel], signatures: Mapping[str, InferredSignature] | None = None) -> str:
    """The YAML text of a spec file for ``kernels``, each field commented with its provenance."""
    lines = ["# Launch signatures for kernelrules (docs/discovery.md). Check every guessed field;",
             "# replace each TODO with a pointer type (\"*fp16\"), a scalar type (\"i32\"), a value or, for a",
             "# tensor descriptor, \"tensordesc<fp16[BLOCK_M, BLOCK_K]>\" (element type and block shape).",
             "kernels:"]
    for kernel in kernels:
        sig = (signatures or {}).get(kernel.name) or infer_signature(kernel)
        lines += [f"  {kernel.name}:  # {kernel.path.name}:{kernel.line}", "    signature:"]
        if not kernel.runtime_params:
            lines[-1] += " {}"
        for param in kernel.runtime_params:
            if param.name in sig.spec:
                text = f"      {param.name}: {_yaml_value(sig.spec[param.name])}"
                how = sig.provenance[param.name]
                note = f"{how}: {_PROVENANCE_NOTES[how.split(' ')[0]]}"
            else:
                text, note = f"      {param.name}: TODO", "missing: nothing says what this is"
            lines.append(f"{text:<40} # {note}")
    return "\n".join(lines) + "\n"


def write_spec_skeleton(kernels: Sequence[DiscoveredKernel], path: str | os.PathLike[str],
                        signatures: Mapping[str, InferredSignature] | None = None) -> str:
    """Write :func:`spec_skeleton` to ``path`` and return the text."""
    text = spec_skeleton(kernels, signatures)
    write_text_atomic(path, text)
    return text
