"""YAML loading that remembers where every key and value came from.

Schema and expression errors must name the file, line and key. PyYAML's
``compose`` gives nodes with marks; we build plain Python data from them and
keep a side table of ``path-in-document -> (line, column)`` (1-based).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import KernelrulesError

Location = tuple[int, int]
DocPath = tuple[Any, ...]

#: Bounds on any YAML input (a 342-byte alias bomb once grew past 1.7 GB): kernelrules'
#: files are small, so larger or deeper ones are refused with a one-line error.
MAX_BYTES = 1 << 20
MAX_DEPTH = 64


@dataclass
class LocatedDocument:
    """Parsed YAML data plus the source position of every node."""

    data: Any
    source: str
    text: str = ""
    positions: dict[DocPath, Location] = field(default_factory=dict)

    def where(self, path: DocPath) -> Location | None:
        """Position of the node at ``path``, or of its nearest located ancestor."""
        path = tuple(path)
        while True:
            if path in self.positions:
                return self.positions[path]
            if not path:
                return None
            path = path[:-1]


def _construct(node: yaml.Node, path: DocPath, positions: dict[DocPath, Location]) -> Any:
    positions[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _construct(key_node, path + ("<key>",), {})
            if isinstance(key, (list, dict)):
                raise yaml.constructor.ConstructorError(
                    None, None, "a mapping key must be a scalar", key_node.start_mark
                )
            if key in result:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            result[key] = _construct(value_node, path + (key,), positions)
            # A key's own position is more useful than its value's for messages.
            positions[path + (key,)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            positions[path + (key, "<value>")] = (
                value_node.start_mark.line + 1,
                value_node.start_mark.column + 1,
            )
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_construct(item, path + (i,), positions) for i, item in enumerate(node.value)]
    return _scalar(node)


#: libyaml's loader where PyYAML was built with it: parsing a 1 MB file takes a second, not ten.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _scalar(node: yaml.ScalarNode) -> Any:
    constructor = yaml.constructor.SafeConstructor()  # cheap; a SafeLoader("") per scalar was not
    try:
        return constructor.construct_object(node, deep=True)
    except ValueError as exc:  # an integer of thousands of digits, a float PyYAML cannot convert
        raise yaml.constructor.ConstructorError(None, None, f"cannot convert {node.value[:40]!r}: {str(exc)[:120]}",
                                                node.start_mark) from None


def check_bounds(text: str, source: str, error: type[KernelrulesError] = KernelrulesError) -> None:
    """Refuse what could make parsing unbounded: oversize text, aliases, deep nesting (one pass over the events)."""
    if len(text) > MAX_BYTES:
        raise error(f"the file is {len(text)} characters; kernelrules reads YAML files up to {MAX_BYTES} bytes",
                    path=source)
    depth = 0
    for event in yaml.parse(text, Loader=_LOADER):
        mark = event.start_mark
        where = {"path": source, "line": mark.line + 1 if mark else None, "column": mark.column + 1 if mark else None}
        if isinstance(event, yaml.AliasEvent):
            raise error(f"YAML aliases (*{event.anchor}) are not accepted: write the value out", **where)
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise error(f"nesting deeper than {MAX_DEPTH} levels", **where)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def load_text(text: str, source: str, error: type[KernelrulesError] = KernelrulesError) -> LocatedDocument:
    """Parse YAML text; raise :class:`KernelrulesError` with file and line on bad syntax or unbounded input."""
    try:
        check_bounds(text, source, error)
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        col = mark.column + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise error(f"invalid YAML: {problem}", path=source, line=line, column=col) from None
    except yaml.YAMLError as exc:
        raise error(f"invalid YAML: {exc}", path=source) from None
    positions: dict[DocPath, Location] = {}
    if node is None:
        return LocatedDocument(None, source, text, positions)
    try:
        data = _construct(node, (), positions)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        raise error(
            f"invalid YAML: {exc.problem}",
            path=source,
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
        ) from None
    return LocatedDocument(data, source, text, positions)


def load_file(
    path: str | Path, display: str | None = None, error: type[KernelrulesError] = KernelrulesError
) -> LocatedDocument:
    """Read and parse a YAML file from disk."""
    from .inputfile import read_input_text

    shown = display or str(path)
    return load_text(read_input_text(path, MAX_BYTES, shown=shown, error=error), shown, error)


def schema_error(doc: LocatedDocument, error: Any, what: str) -> KernelrulesError:
    """Turn a ``jsonschema.ValidationError`` into a one-line error with file, line and key."""
    doc_path = tuple(error.absolute_path)
    line, col = doc.where(doc_path) or (None, None)
    key = ".".join(str(p) for p in doc_path) or "<top level>"
    message = error.message
    if len(message) > 200:
        message = message[:197] + "..."
    return KernelrulesError(f"invalid {what} at '{key}': {message}", path=doc.source, line=line, column=col)
