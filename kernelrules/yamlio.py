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


#: libyaml's loader where PyYAML was built with it: parsing a 1 MB file takes a second, not ten.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _where(mark: Any) -> tuple[int | None, int | None]:
    """A mark's 1-based (line, column); (None, None) for no mark."""
    return (mark.line + 1, mark.column + 1) if mark else (None, None)


def _constructor_error(problem: str, mark: Any) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(None, None, problem, mark)


@dataclass
class _Frame:
    """An open mapping or sequence: where it sits and, for a mapping, the key read but not yet placed."""

    container: Any
    path: DocPath
    key: Any = None
    key_mark: Any = None
    expecting_key: bool = True


#: Tags whose safe constructor is a plain function of a scalar node (the others, and unknown tags,
#: go through a fresh SafeConstructor, which also raises PyYAML's own errors for them).
_PLAIN_TAGS = frozenset(f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "timestamp"))


class _Builder:
    """Plain Python data and positions from a stream of parse events, in one pass.

    One pass over libyaml's events both enforces the bounds (no aliases, depth) and builds the
    data: composing PyYAML nodes and constructing from them parsed the text twice and took three
    times as long (a 0.9 MB flow list: 2.8 s against 1.0 s on one core). Plain scalars resolve to
    tags as PyYAML's safe loader does (same resolver, same constructors); tags on collections are
    ignored, as before."""

    def __init__(self, source: str, error: type[KernelrulesError]) -> None:
        self.source, self.error = source, error
        self.positions: dict[DocPath, Location] = {}
        self.resolver = yaml.resolver.Resolver()
        self.constructor = yaml.constructor.SafeConstructor()  # for its plain scalar constructors only
        self.stack: list[_Frame] = []
        self.documents = 0
        self.data: Any = None

    def build(self, text: str) -> Any:
        for event in yaml.parse(text, Loader=_LOADER):
            kind = type(event)
            if kind is yaml.ScalarEvent:
                self._value(self._scalar(event), event)
            elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                self._open({} if kind is yaml.MappingStartEvent else [], event)
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                self._close(self.stack.pop().container)
            elif kind is yaml.AliasEvent:
                raise self.error(f"YAML aliases (*{event.anchor}) are not accepted: write the value out",
                                 **self._at(event.start_mark))
            elif kind is yaml.DocumentStartEvent:
                self.documents += 1
                if self.documents > 1:
                    raise yaml.composer.ComposerError("expected a single document in the stream", None,
                                                      "but found another document", event.start_mark)
        return self.data

    def _at(self, mark: Any) -> dict[str, Any]:
        line, column = _where(mark)
        return {"path": self.source, "line": line, "column": column}

    def _path(self) -> DocPath | None:
        """Where the next node goes; None for a mapping key."""
        if not self.stack:
            return ()
        frame = self.stack[-1]
        if isinstance(frame.container, list):
            return frame.path + (len(frame.container),)
        return None if frame.expecting_key else frame.path + (frame.key,)

    def _open(self, container: Any, event: Any) -> None:
        path = self._path()
        if path is None:
            raise _constructor_error("a mapping key must be a scalar", event.start_mark)
        if len(self.stack) >= MAX_DEPTH:
            raise self.error(f"nesting deeper than {MAX_DEPTH} levels", **self._at(event.start_mark))
        self.positions[path] = _where(event.start_mark)
        self.stack.append(_Frame(container, path))

    def _close(self, container: Any) -> None:
        if not self.stack:
            self.data = container
            return
        self._place(container)

    def _value(self, value: Any, event: Any) -> None:
        if not self.stack:
            self.positions[()] = _where(event.start_mark)
            self.data = value
            return
        frame = self.stack[-1]
        if isinstance(frame.container, dict) and frame.expecting_key:
            if value in frame.container:
                raise _constructor_error(f"duplicate key {value!r}", event.start_mark)
            frame.key, frame.key_mark, frame.expecting_key = value, event.start_mark, False
            return
        self.positions[self._path()] = _where(event.start_mark)
        self._place(value)

    def _place(self, value: Any) -> None:
        """Put a finished value into the innermost open container."""
        frame = self.stack[-1]
        if isinstance(frame.container, list):
            frame.container.append(value)
            return
        at = frame.path + (frame.key,)
        frame.container[frame.key] = value
        # A key's own position is more useful than its value's for messages.
        self.positions[at + ("<value>",)] = self.positions[at]
        self.positions[at] = _where(frame.key_mark)
        frame.key, frame.key_mark, frame.expecting_key = None, None, True

    def _scalar(self, event: Any) -> Any:
        tag, value = event.tag, event.value
        if tag is None and event.implicit[0] and value.isdigit() and len(value) < 19 and value.isascii() \
                and (value[0] != "0" or value == "0"):
            return int(value)  # a plain decimal integer, the commonest scalar (YAML 1.1 reads 012 as octal)
        if tag is None or tag == "!":
            tag = self.resolver.resolve(yaml.ScalarNode, value, event.implicit)
        if tag == "tag:yaml.org,2002:str":
            return value
        if tag == "tag:yaml.org,2002:merge":
            raise self.error("YAML merge keys (<<) and aliases are not accepted: write the keys out",
                             **self._at(event.start_mark))
        node = yaml.ScalarNode(tag, value, event.start_mark, event.end_mark, event.style)
        try:
            if tag in _PLAIN_TAGS:  # a plain function of the node: no per-node bookkeeping
                return self.constructor.yaml_constructors[tag](self.constructor, node)
            return yaml.constructor.SafeConstructor().construct_object(node, deep=True)
        except ValueError as exc:  # an integer of thousands of digits, a float PyYAML cannot convert
            raise _constructor_error(f"cannot convert {value[:40]!r}: {str(exc)[:120]}",
                                     event.start_mark) from None


def load_text(text: str, source: str, error: type[KernelrulesError] = KernelrulesError) -> LocatedDocument:
    """Parse YAML text; raise :class:`KernelrulesError` with file and line on bad syntax or unbounded input
    (oversize text, aliases, nesting deeper than ``MAX_DEPTH``)."""
    if len(text) > MAX_BYTES:
        raise error(f"the file is {len(text)} characters; kernelrules reads YAML files up to {MAX_BYTES} bytes",
                    path=source)
    builder = _Builder(source, error)
    try:
        data = builder.build(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        col = mark.column + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise error(f"invalid YAML: {problem}", path=source, line=line, column=col) from None
    except yaml.YAMLError as exc:
        raise error(f"invalid YAML: {exc}", path=source) from None
    return LocatedDocument(data, source, text, builder.positions)


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
