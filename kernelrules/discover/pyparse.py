"""One parse per source text: the syntax tree every reader of a file shares.

Discovery (:mod:`kernelrules.discover.kernels`), the reduced module
(:mod:`kernelrules.discover.kernelreduce`) and the package reader
(:mod:`kernelrules.discover.pkgsource`) each need a file's tree; parsing a 1 MB module
takes seconds, and a lint used to parse the same text once per reader (issue 18's
bound of 10 s per file). :func:`parse_source` keeps the last trees by the text's
SHA-256, so a text is parsed once however many readers ask and whatever path they
name it by (``x.py`` as given, or resolved). The trees are shared: no caller may
change one (none does: the reduced module and the rebuilt module make new nodes).

A text that does not parse raises as :func:`ast.parse` does and is not kept (the
caller turns the error into its own message, with its own path).
"""

from __future__ import annotations

import ast
import collections
import gc
import hashlib

#: At most this many trees are kept, and at most this many characters of their texts (a 1 MB text's tree is
#: a few hundred MB): enough for a package's files during one run, and for a large file read by every stage.
MAX_TREES = 256
MAX_CHARACTERS = 16 * 1024 * 1024

_TREES: "collections.OrderedDict[str, tuple[ast.Module, int]]" = collections.OrderedDict()
_stored_characters = 0


def text_digest(source: str) -> str:
    """SHA-256 (hex) of a source text (lone surrogates allowed, as a decoded file may hold them)."""
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


def parse_source(source: str, filename: str) -> ast.Module:
    """``ast.parse(source, filename)``, once per text; the tree is shared and must not be changed.

    Raises :class:`SyntaxError`, :class:`ValueError` (null bytes), :class:`RecursionError` or
    :class:`MemoryError` (nesting past the parser's limits) as :func:`ast.parse` does.
    """
    global _stored_characters
    key = text_digest(source)
    found = _TREES.get(key)
    if found is not None:
        _TREES.move_to_end(key)
        return found[0]
    enabled = gc.isenabled()
    gc.disable()  # a syntax tree holds no reference cycles: collections while it is built only cost time (half)
    try:
        tree = ast.parse(source, filename=filename)
    finally:
        if enabled:
            gc.enable()
    _TREES[key] = (tree, len(source))
    _stored_characters += len(source)
    while len(_TREES) > 1 and (len(_TREES) > MAX_TREES or _stored_characters > MAX_CHARACTERS):
        _, (_, size) = _TREES.popitem(last=False)
        _stored_characters -= size
    return tree


def clear() -> None:
    """Forget every kept tree (tests, and long-lived processes that read many files once)."""
    global _stored_characters
    _TREES.clear()
    _stored_characters = 0
