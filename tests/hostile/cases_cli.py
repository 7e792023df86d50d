"""Hostile command-line values and ``pyproject.toml`` settings, for every command.

Option values kernelrules checks itself (time limits, budgets, architectures, rule
selectors, ``KEY=VALUE`` configs) must be refused with one ``kernelrules: error:`` line;
what the argument parser rejects (``--timeout abc``, an unknown option or command, a
missing argument: :func:`_usage` has them for every command) is one
``kernelrules <command>: error:`` line, exit 2.
A ``[tool.kernelrules]`` table is an input like any other: bad TOML, bad bytes, unknown
keys, wrong types and non-finite numbers are one error line naming ``pyproject.toml``.
"""

from __future__ import annotations

from . import inputs
from .model import JUDGED, REFUSED, USAGE, Case

LINT = ("lint", "k.py", "--arch", "hopper", "--stage", "config", "-q")
PRUNE = ("prune", "s.yaml", "--arch", "hopper", "-q")
TUNE = ("tune", "t.yaml", "--arch", "hopper", "--interpret", "--stage", "config")
CHECK = ("check-config", "--arch", "hopper")

_FILES = {"k.py": inputs.KERNEL, "s.yaml": inputs.SPACE, "t.yaml": inputs.TUNE}


def _options() -> list[tuple[str, tuple[str, ...], str, str]]:
    """(name, argv, expectation, message)."""
    found = []
    for command, base in (("lint", LINT), ("prune", PRUNE), ("tune", TUNE)):
        for option in ("--timeout",) + (("--bench-timeout",) if command == "tune" else ()):
            for value in ("nan", "inf", "-inf", "-1", "0", "1e309"):
                found.append((f"{command}{option}={value}", (*base, option, value), REFUSED, "positive, finite"))
            found.append((f"{command}{option}=abc", (*base, option, "abc"), USAGE, "invalid value"))
        found += [
            (f"{command}/arch-unknown", (*base[:2], *base[4:], "--arch", "sm_999"), REFUSED, "sm_999"),
            (f"{command}/arch-empty", (*base[:2], *base[4:], "--arch", ""), REFUSED, ""),
            (f"{command}/arch-commas", (*base[:2], *base[4:], "--arch", ",,,"), REFUSED, ""),
            (f"{command}/arch-huge", (*base[:2], *base[4:], "--arch", "x" * 100000), REFUSED, "characters left out"),
        ]
    for value in ("nan", "-1", "0", "abc", "1e999h", "inf", "-5m", "10x"):
        found.append((f"tune/time-budget={value}", (*TUNE, "--time-budget", value), REFUSED, "duration"))
    for value in ("nan", "-1", "0", "inf", "1e309"):
        found.append((f"tune/stop-at-ms={value}", (*TUNE, "--stop-at-ms", value), REFUSED, "positive and finite"))
    found += [
        ("tune/stop-at-ms=abc", (*TUNE, "--stop-at-ms", "abc"), USAGE, "invalid value"),
        ("tune/trials=0", (*TUNE, "--trials", "0"), REFUSED, "--trials"),
        ("tune/trials=-5", (*TUNE, "--trials", "-5"), REFUSED, "--trials"),
        ("tune/sampler", (*TUNE, "--sampler", "bogus"), REFUSED, "unknown sampler"),
        ("tune/stage", (*TUNE, "--stage", "bogus"), REFUSED, "unknown stage"),
        ("tune/gpus-commas", (*TUNE, "--gpus", ",,"), REFUSED, "--gpus"),
        ("tune/key-without-export", (*TUNE, "--key", "n=1"), REFUSED, "--key is for --export"),
        ("tune/missing-space", ("tune", "nowhere.yaml", "--interpret"), REFUSED, "nowhere.yaml"),
        ("tune/trials=abc", (*TUNE, "--trials", "abc"), USAGE, "invalid value"),
        ("lint/select-unknown", (*LINT, "--select", "NOPE999"), REFUSED, "unknown rule selector 'NOPE999'"),
        ("lint/ignore-unknown", (*LINT, "--ignore", "XYZ,MEM"), REFUSED, "unknown rule selector 'XYZ'"),
        ("lint/select-huge", (*LINT, "--select", ",".join(["NOPE"] * 20000)), REFUSED, "NOPE"),
        ("lint/fail-on", (*LINT, "--fail-on", "bogus"), REFUSED, "bogus"),
        ("lint/stage", (*LINT, "--stage", "bogus"), REFUSED, "bogus"),
        ("lint/format", (*LINT, "--format", "xml"), USAGE, "invalid value"),
        ("lint/jobs=abc", (*LINT, "--jobs", "abc"), USAGE, "invalid value"),
        ("lint/no-arch", ("lint", "k.py", "--stage", "config"), REFUSED, "no target architecture"),
        ("lint/src-missing", (*LINT, "--src", "nowhere"), REFUSED, "--src is not a directory"),
        ("lint/src-a-file", (*LINT, "--src", "k.py"), REFUSED, "--src is not a directory"),
        ("lint/no-paths", ("lint",), USAGE, "missing argument"),
        ("lint/unknown-option", (*LINT, "--bogus"), USAGE, "no such option"),
        ("prune/jobs=abc", (*PRUNE, "--jobs", "abc"), USAGE, "invalid value"),
        ("prune/missing-space", ("prune", "nowhere.yaml", "--arch", "hopper"), REFUSED, "nowhere.yaml"),
        ("top/unknown-command", ("bogus",), USAGE, "no such command"),
        ("arch/show-unknown", ("arch", "show", "sm_999"), REFUSED, "sm_999"),
        ("arch/show-empty", ("arch", "show", ""), REFUSED, ""),
        ("arch/show-huge", ("arch", "show", "x" * 100000), REFUSED, "characters left out"),
        ("arch/missing-arch-file", ("arch", "list", "--arch-file", "nowhere.yaml"), REFUSED, "nowhere.yaml"),
        ("rules/show-unknown", ("rules", "show", "NOPE999"), REFUSED, "unknown rule 'NOPE999'"),
        ("rules/show-huge", ("rules", "show", "N" * 100000), REFUSED, "characters left out"),
        ("trace/no-command", ("trace", "-o", "t.jsonl"), REFUSED, "no command to trace"),
        ("trace/missing-program", ("trace", "-o", "t.jsonl", "--", "/nonexistent/program"), REFUSED,
         "/nonexistent/program"),
        ("space/missing-file", ("space", "--from-inductor", "nowhere.py"), REFUSED, "nowhere.py"),
        ("space/not-inductor", ("space", "--from-inductor", "k.py", "-o", "-"), REFUSED, "k.py"),
        ("space/no-such-kernel", ("space", "--from-inductor", "k.py:nope", "-o", "-"), REFUSED, "no Inductor kernel"),
        ("pin/show-missing", ("pin", "show", "nowhere.json"), REFUSED, "nowhere.json"),
        ("pin/merge-nothing", ("pin", "merge", "out.json"), USAGE, "missing argument"),
    ]
    return found


#: Every command, with arguments that satisfy its required parameters (the parser stops before anything runs).
COMMANDS = {
    "check-config": ("--arch", "hopper", "BLOCK_M=64"), "prune": ("s.yaml", "--arch", "hopper"),
    "lint": ("k.py", "--stage", "config"), "trace": ("-o", "t.jsonl", "--", "true"), "spec": ("k.py",),
    "tune": ("t.yaml", "--interpret"), "space": ("--from-inductor", "k.py"), "report": ("study.db",),
    "arch list": (), "arch show": ("hopper",), "rules list": (), "rules show": ("MEM001",),
    "pin merge": ("out.json", "a.json"), "pin show": ("p.json",),
}
#: A flag of each command that has one (given a value, a usage error).
_FLAGS = {"check-config": "--no-compile", "prune": "--compile", "lint": "--quiet", "spec": "--force",
          "tune": "--json", "space": "--force", "pin merge": "--force", "pin show": "--json"}
#: An option of each command that takes a value (given none, a usage error).
_VALUED = {"check-config": "--dtype", "prune": "--timeout", "lint": "--arch", "trace": "-o", "spec": "-o",
           "tune": "--seed", "space": "-o", "report": "--study-name", "arch list": "--arch-file",
           "arch show": "--format", "rules list": "--format"}
#: Commands whose arguments take no more values (an extra one is a usage error).
_FIXED_ARGUMENTS = ("prune", "spec", "report", "arch show", "rules show", "pin show", "space", "arch list",
                    "rules list")  # not tune: it takes several space files, and names the one that is missing
#: Values the parser refuses: a bad choice, a number that is not one.
_BAD_VALUES = [
    ("check-config", "--format", "xml"), ("prune", "--format", "xml"), ("arch list", "--format", "xml"),
    ("arch show", "--format", "xml"), ("rules list", "--format", "xml"), ("tune", "--seed", "abc"),
    ("tune", "--top-k", "1.5"), ("tune", "--rounds", "x"), ("tune", "-j", "many"), ("prune", "--timeout", "soon"),
]


def _usage() -> list[tuple[str, tuple[str, ...], str, str]]:
    """Usage errors of every command and group: each one line naming the command, exit 2."""
    found = [("top/unknown-option", ("--bogus",), USAGE, "kernelrules: error: no such option: --bogus"),
             ("top/version-value", ("--version=1",), USAGE, "kernelrules: error: option '--version' does not take")]
    for group in ("arch", "rules", "pin"):
        found += [(f"{group}/unknown-command", (group, "bogus"), USAGE, f"kernelrules {group}: error: no such command"),
                  (f"{group}/unknown-option", (group, "--bogus"), USAGE, f"kernelrules {group}: error: no such option")]
    for command, base in COMMANDS.items():
        path, name = tuple(command.split()), command.replace(" ", "-")
        where = f"kernelrules {command}: error: "
        if command != "trace":  # trace passes unknown options to the command it runs
            found.append((f"usage/{name}/unknown-option", (*path, *base, "--no-such-option"), USAGE,
                          where + "no such option: --no-such-option"))
        if base and command not in ("trace", "arch list", "rules list"):
            found.append((f"usage/{name}/missing", path, USAGE, where + "missing "))
        if command in _FLAGS:
            found.append((f"usage/{name}/flag-value", (*path, *base, f"{_FLAGS[command]}=1"), USAGE,
                          where + f"option '{_FLAGS[command]}' does not take a value"))
        if command in _VALUED:
            before = base if "--" not in base else ()  # after "--" it is the traced command's
            found.append((f"usage/{name}/no-value", (*path, *before, _VALUED[command]), USAGE,
                          where + f"option '{_VALUED[command]}' requires an argument"))
        if command in _FIXED_ARGUMENTS:
            found.append((f"usage/{name}/extra-argument", (*path, *base, "extra"), USAGE,
                          where + "got unexpected extra argument"))
    found.append(("usage/tune/extra-space", ("tune", *COMMANDS["tune"], "extra"), USAGE,
                  "kernelrules: error: extra: no such space file"))
    for command, option, value in _BAD_VALUES:
        found.append((f"usage/{command.replace(' ', '-')}/{option.lstrip('-')}={value}",
                      (*command.split(), *COMMANDS[command], option, value), USAGE,
                      f"kernelrules {command}: error: invalid value for "))
    return found


def _assignments() -> list[tuple[str, tuple[str, ...], str, str]]:
    """``check-config KEY=VALUE ...``: malformed or hostile assignments."""
    refused = [
        ("no-equals", ["BLOCK"], "BLOCK"), ("empty-key", ["=64"], "=64"), ("empty-value", ["BLOCK_M="], "BLOCK_M"),
        ("true-block", ["BLOCK_M=true"], "got True"), ("warps-string", ["num_warps=four"], "num_warps"),
        ("duplicate-key", ["BLOCK_M=64", "BLOCK_M=128"], "BLOCK_M"), ("maxnreg-text", ["maxnreg=lots"], "maxnreg"),
        ("non-ascii-key", ["\u0392LOCK_M=64"], "invalid config key"),  # a Greek capital beta
    ]
    # Values that parse but no Triton config can have: judged and rejected by a rule (exit 1), not refused.
    rejected = [("nan-block", ["BLOCK_M=nan"], "CFG001"), ("inf-block", ["BLOCK_M=inf"], "CFG001"),
                ("float-block", ["BLOCK_M=64.5"], "CFG001"), ("huge-literal", ["BLOCK_M=" + "9" * 5000], "CFG001"),
                ("warps-zero", ["num_warps=0"], "CFG002"), ("warps-negative", ["num_warps=-4"], "CFG002"),
                ("odd-warps", ["num_warps=3"], "CFG002")]
    judged = [("negative-block", ["BLOCK_M=-64"]), ("zero-block", ["BLOCK_M=0"]), ("huge-block", ["BLOCK_M=" + "9" * 40]),
              ("huge-warps", ["num_warps=1099511627776"]), ("stages-negative", ["num_stages=-1"]),
              ("huge-key", ["K" * 100000 + "=1"]), ("expression-value", ["BLOCK_M=2**10**10"])]
    found = [(f"check-config/{n}", (*CHECK, *a), REFUSED, m) for n, a, m in refused]
    found += [(f"check-config/{n}", (*CHECK, *a), JUDGED, m) for n, a, m in rejected]
    found += [(f"check-config/{n}", (*CHECK, *a), JUDGED, "") for n, a in judged]
    found += [
        ("check-config/dtype-unknown", (*CHECK, "--dtype", "fp99", "BLOCK_M=64"), REFUSED, "fp99"),
        ("check-config/arch-unknown", ("check-config", "--arch", "sm_999", "BLOCK_M=64"), REFUSED, "sm_999"),
        ("check-config/kernel-missing", (*CHECK, "--kernel", "nowhere.py", "--no-compile", "BLOCK=64"), REFUSED,
         "nowhere.py"),
        ("check-config/space-missing", (*CHECK, "--space", "nowhere.yaml", "--no-compile", "BLOCK=64"), REFUSED,
         "nowhere.yaml"),
        ("check-config/no-assignments", CHECK, USAGE, "missing argument"),
    ]
    return found


def _pyprojects() -> list[tuple[str, object, str]]:
    """(name, pyproject.toml content, message) for ``lint`` run beside it."""
    table = "[tool.kernelrules]\n"
    return [
        ("invalid-toml", table + "arch = [\n", "invalid TOML"),
        ("invalid-utf8", table.encode() + b'arch = "\xff"\n', "pyproject.toml"),
        ("huge-int", table + "jobs = " + "9" * 5000 + "\n", "pyproject.toml"),
        ("deep-nesting", table + "src = " + "[" * 5000 + "]" * 5000 + "\n", "pyproject.toml"),
        ("unknown-key", table + "colour = 'red'\n", "unknown key 'colour'"),
        ("timeout-nan", table + "compile-timeout = nan\n", "compile-timeout"),
        ("timeout-inf", table + "compile-timeout = inf\n", "compile-timeout"),
        ("timeout-negative", table + "compile-timeout = -1\n", "compile-timeout"),
        ("arch-a-number", table + "arch = 90\n", "arch"),
        ("arch-unknown", table + "arch = ['sm_999']\n", "sm_999"),
        ("select-unknown", table + "select = ['NOPE']\n", "NOPE"),
        ("per-file-ignores-list", table + "per-file-ignores = ['x']\n", "per-file-ignores"),
        ("stage-bogus", table + "stage = 'bogus'\n", "bogus"),
        ("table-a-string", '[tool]\nkernelrules = "x"\n', "must be a table"),
        ("jobs-negative", table + "jobs = -3\n", "jobs"),
    ]


def cli_cases() -> list[Case]:
    found = [Case(name=f"cli/{name}", argv=argv, files=_FILES, expect=expect, message=message, group="cli")
             for name, argv, expect, message in _options() + _usage() + _assignments()]
    for name, content, message in _pyprojects():
        found.append(Case(name=f"toml/{name}", argv=("lint", "k.py", "--stage", "config", "-q"),
                          files={"k.py": inputs.KERNEL, "pyproject.toml": content}, message=message,
                          group="cli:toml"))
    return found
