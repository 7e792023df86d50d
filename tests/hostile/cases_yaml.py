"""Hostile YAML for every command that reads YAML: the same bad files for each input kind.

Every kind (an ``--arch-file`` profile for two commands, a space file for ``prune`` and
``check-config --space``, a tune file, a ``--spec`` file) gets the same generated variants:
alias bombs, deep nesting, oversize and huge scalars, wrong top-level types, bad encodings,
tabs, duplicate keys, unsafe tags, a directory, a FIFO, symlink loops, a missing file; plus
the kind's own schema mutations (an unknown key, a wrong value type, a missing required
key). A valid file made large or written with a BOM or CRLF must still be judged.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import inputs
from .model import DIRECTORY, FIFO, JUDGED, REFUSED, Case, symlink


@dataclass(frozen=True)
class YamlKind:
    """One place a YAML file is read: the file's name, the command, the valid base and its mutations."""

    name: str
    filename: str
    argv: tuple[str, ...]
    base: str
    extra: tuple[tuple[str, str], ...] = ()
    judged_when_valid: bool = True
    unknown_key: tuple[str, str] = ("", "")      # (line appended, message)
    wrong_type: tuple[str, str, str] = ("", "", "")  # (old, new, message)
    missing_key: tuple[str, str] = ("", "")      # (line removed, message)


def _kinds() -> list[YamlKind]:
    space_extra = (("k.py", inputs.KERNEL),)
    profile = dict(base=inputs.PROFILE, unknown_key=("colour: red\n", "colour"),
                   wrong_type=('compute_capability: "8.7"', "compute_capability: [8, 7]", "compute_capability"),
                   missing_key=("family: orin\n", "family"))
    space = dict(base=inputs.SPACE, extra=space_extra, unknown_key=("bogus_key: 1\n", "bogus_key"),
                 wrong_type=("BLOCK: [64, 128, 256]", "BLOCK: {a: 1}", "space.BLOCK"),
                 missing_key=("kernel: k.py:k\n", "kernel"))
    return [
        YamlKind("arch-file", "p.yaml", ("arch", "show", "orin", "--arch-file", "p.yaml"), **profile),
        YamlKind("check-arch-file", "p.yaml",
                 ("check-config", "--arch", "orin", "--arch-file", "p.yaml", "BLOCK=64", "num_warps=4"), **profile),
        YamlKind("prune-space", "s.yaml", ("prune", "s.yaml", "--arch", "hopper", "-q"), **space),
        YamlKind("check-space", "s.yaml", ("check-config", "--arch", "hopper", "--space", "s.yaml", "--no-compile",
                                           "BLOCK=64", "num_warps=2"), **space),
        YamlKind("tune-space", "t.yaml", ("tune", "t.yaml", "--arch", "hopper", "--interpret", "--trials", "1",
                                          "--stage", "config", "--study-dir", "studies"),
                 judged_when_valid=False, **{**space, "base": inputs.TUNE}),
        YamlKind("lint-spec", "spec.yaml", ("lint", "k.py", "--arch", "hopper", "--stage", "config", "-q",
                                            "--spec", "spec.yaml"),
                 base=inputs.SPEC, extra=space_extra, unknown_key=("other: 1\n", "'kernels'"),
                 wrong_type=("n: 4096", "n: [4096]", "'n'"), missing_key=("kernels:\n", "kernels")),
    ]


def alias_bomb() -> str:
    """Nine levels of nine-fold aliases: 9**9 scalars if expanded (324 bytes)."""
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for i in range(8):
        prev, name = chr(97 + i), chr(98 + i)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _variants(kind: YamlKind) -> list[tuple[str, object, str, str]]:
    """(variant name, file content, expectation, message) for one kind; the message defaults to the file name."""
    f = kind.filename
    deep_block = "".join(" " * i + f"k{i}:\n" for i in range(100)) + " " * 100 + "v: 1\n"
    many_keys = "".join(f"key{i}: {i}\n" for i in range(60000))  # ~0.7 MB, under the 1 MB bound
    long_list = "items: [" + ", ".join("1" for _ in range(300000)) + "]\n"  # 0.9 MB flow list
    refused = [
        ("alias-bomb", alias_bomb(), "aliases"),
        ("one-alias", kind.base + "extra: &x {a: 1}\nmore: *x\n", "aliases"),
        ("merge-key", kind.base + "extra: &x {a: 1}\nmore: {<<: *x}\n", "aliases"),
        ("deep-flow", "a: " + "[" * 1000 + "]" * 1000 + "\n", "nesting"),  # libyaml's own limit may answer first
        ("deep-flow-100", "a: " + "[" * 100 + "]" * 100 + "\n", "nesting deeper than 64"),
        ("deep-flow-unclosed", "a: " + "{b: " * 5000 + "\n", f),
        ("deep-block", deep_block, "nesting deeper than 64"),
        ("oversize-comment", kind.base + "#" * (1 << 20) + "\n", "up to"),
        ("oversize-scalar", "a: '" + "x" * (3 << 20) + "'\n", "up to"),
        ("huge-int", kind.base + "bogus_int: " + "9" * 5000 + "\n", f),
        ("many-keys", many_keys, f),
        ("long-list", long_list, f),
        ("empty", "", f),
        ("whitespace", "   \n\n\t\n", f),
        ("comments-only", "# nothing here\n# at all\n", f),
        ("null-document", "~\n", f),
        ("top-list", "- 1\n- 2\n", f),
        ("top-scalar", "42\n", f),
        ("top-string", "just some text\n", f),
        ("invalid-utf8", kind.base.encode() + b"bad: \xff\xfe\xfa\n", f),
        ("utf16", kind.base.encode("utf-16"), f),
        ("latin1", kind.base.encode() + "name: caf\xe9\n".encode("latin-1"), f),
        ("nul-byte", kind.base.encode() + b"nul: a\x00b\n", "invalid YAML"),
        ("tab-indent", kind.base.replace("\n  ", "\n\t", 1), "invalid YAML"),
        ("duplicate-key", kind.base + kind.base.splitlines()[0] + "\n", "duplicate key"),
        ("complex-key", kind.base + "? [a, b]\n: 1\n", "scalar"),
        ("python-tag", "!!python/object/apply:os.system [echo hi]\n", f),
        ("python-tag-scalar", kind.base + "evil: !!python/name:os.system ''\n", "invalid YAML"),
        ("multi-document", kind.base + "---\n" + kind.base, "invalid YAML"),
        ("unclosed-quote", kind.base + 'broken: "no end\n', "invalid YAML"),
        ("binary-garbage", bytes((i * 151 + 7) % 256 for i in range(4096)), f),
        ("timestamp-top", "2001-12-14t21:59:43.10-05:00\n", f),
        ("nan-inf", kind.base + "nan_value: .nan\ninf_value: -.inf\n", f),
        ("unknown-key", kind.base + kind.unknown_key[0], kind.unknown_key[1]),
        ("wrong-type", kind.base.replace(kind.wrong_type[0], kind.wrong_type[1]), kind.wrong_type[2]),
        ("missing-key", kind.base.replace(kind.missing_key[0], ""), kind.missing_key[1]),
        ("directory", DIRECTORY, f),
        ("fifo", FIFO, f),
        ("symlink-loop", symlink(f), f),
        ("dangling-symlink", symlink("nowhere.yaml"), f),
        ("missing", None, f),
    ]
    cases = [(name, content, REFUSED, message) for name, content, message in refused]
    if kind.judged_when_valid:
        cases += [
            ("valid", kind.base, JUDGED, ""),
            ("bom", "\ufeff" + kind.base, JUDGED, ""),
            ("crlf", kind.base.replace("\n", "\r\n"), JUDGED, ""),
            ("large-comment", kind.base + ("# " + "y" * 98 + "\n") * 9000, JUDGED, ""),  # 0.9 MB
        ]
    return cases


def yaml_cases() -> list[Case]:
    found = []
    for kind in _kinds():
        for variant, content, expect, message in _variants(kind):
            files = dict(kind.extra)
            if content is not None:
                files[kind.filename] = content
            found.append(Case(name=f"yaml/{kind.name}/{variant}", argv=kind.argv, files=files, expect=expect,
                              message=message, exits=(0,), group=f"yaml:{kind.name}",
                              writes=("studies",) if kind.name == "tune-space" else ()))
    return found
