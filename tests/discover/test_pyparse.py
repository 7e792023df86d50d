"""One parse per source text, and the walks that replace ast.walk on large modules."""

from __future__ import annotations

import ast
import textwrap

import pytest

from kernelrules.discover import pyparse
from kernelrules.discover.pkgfiles import all_statements, handler_bindings
from kernelrules.discover.pyast import iter_nodes

SOURCE = textwrap.dedent('''
    import os
    try:
        import foo
    except ImportError:
        foo = None
        class Fallback:
            try:
                pass
            except OSError:
                INNER = 1
    def f(a, b=[x for x in range(3)]):
        try:
            y = {1: (lambda q: q)(2)}
        except* ValueError:
            z = 2
        match a:
            case [1, *rest]:
                try:
                    pass
                except:
                    W = 3
        while a:
            for i in b:
                with open(i) as h:
                    q = not h
            else:
                r = -a
    ''')


def test_a_text_is_parsed_once_and_its_tree_shared():
    pyparse.clear()
    first = pyparse.parse_source(SOURCE, "a.py")
    assert pyparse.parse_source(SOURCE, "elsewhere/b.py") is first  # by text, whatever the path
    assert pyparse.parse_source(SOURCE + "\n", "a.py") is not first
    assert ast.dump(first) == ast.dump(ast.parse(SOURCE))


def test_a_text_that_does_not_parse_raises_each_time(monkeypatch):
    with pytest.raises(SyntaxError):
        pyparse.parse_source("def broken(:\n", "bad.py")
    with pytest.raises(SyntaxError) as caught:
        pyparse.parse_source("def broken(:\n", "other.py")
    assert caught.value.filename == "other.py"


def test_the_kept_trees_are_bounded(monkeypatch):
    pyparse.clear()
    monkeypatch.setattr(pyparse, "MAX_TREES", 3)
    trees = [pyparse.parse_source(f"X = {i}\n", "x.py") for i in range(5)]
    assert pyparse.parse_source("X = 4\n", "x.py") is trees[4]
    assert pyparse.parse_source("X = 0\n", "x.py") is not trees[0]  # forgotten, parsed again
    monkeypatch.setattr(pyparse, "MAX_CHARACTERS", 10)
    pyparse.parse_source("LONGER_THAN_TEN = 1\n", "x.py")
    assert len(pyparse._TREES) == 1


def test_iter_nodes_is_ast_walk_without_contexts_and_operators():
    tree = ast.parse(SOURCE)
    leaves = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
    expected = [node for node in ast.walk(tree) if not isinstance(node, leaves)]
    found = list(iter_nodes(tree))
    assert len(found) == len(expected) and all(a is b for a, b in zip(found, expected))


def test_all_statements_are_the_statements_ast_walk_finds():
    tree = ast.parse(SOURCE)
    expected = {id(node) for node in ast.walk(tree) if isinstance(node, ast.stmt)}
    found = [id(node) for node in all_statements(tree.body)]
    assert len(found) == len(expected) and set(found) == expected
    # as when each handler was found with ast.walk: `except*` (TryStar) is not read, as before
    assert handler_bindings(tree.body) == {"foo", "Fallback", "INNER", "W"}


def test_parsing_pauses_the_cyclic_collector_and_restores_it():
    import gc

    pyparse.clear()
    assert gc.isenabled()
    pyparse.parse_source("X = 1\n", "x.py")
    with pytest.raises(SyntaxError):
        pyparse.parse_source("X = (\n", "x.py")
    assert gc.isenabled()
    gc.disable()
    try:
        pyparse.parse_source("Y = 2\n", "y.py")
        assert not gc.isenabled()  # a caller's pause is left as it was
    finally:
        gc.enable()
