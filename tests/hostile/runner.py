"""Run many hostile cases in-process in a few long-lived child processes, each case bounded.

Starting ``kernelrules`` costs a second or two of imports, so a child imports
:func:`kernelrules.cli.main` once and runs its share of the cases one after another: a fresh
directory per case, ``sys.argv`` patched, stdout and stderr captured, ``SystemExit`` caught.
For each case it reports the exit code, the output, the wall time, the growth of its peak
resident memory (``/proc/self/clear_refs`` resets the peak before every case) and the files
the case left behind, as one JSON line.

The parent (:func:`run_cases`) watches the children: a case that runs past
:data:`KILL_SECONDS`, or a child whose memory passes :data:`KILL_RSS_BYTES`, is killed and
reported as such, and a new child carries on with the cases that remain. A hang or a memory
blow-up is therefore a failed case, never a stuck or swapping CI job.

Child mode: ``python runner.py ROOT NAMES_FILE``.
"""

from __future__ import annotations

import io
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
#: A case still running after this long is killed (the asserted bound is model.CASE_SECONDS).
KILL_SECONDS = 30.0
#: A child whose resident memory passes this is killed (the asserted per-case bound is 1 GB).
KILL_RSS_BYTES = 3 << 30


def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset this process's peak RSS (VmHWM) so that the next reading is this case's own peak."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def _listing(directory: Path) -> set[str]:
    found = set()
    for root, dirs, files in os.walk(directory):  # symlinks are listed, never followed
        for name in dirs + files:
            found.add(os.path.relpath(os.path.join(root, name), directory))
    return found


def run_case(case, directory: Path, main) -> dict:
    """Run one case in ``directory`` (created here) and return what happened."""
    import resource

    directory.mkdir(parents=True)
    case.materialize(directory)
    before = _listing(directory)
    out, err = io.StringIO(), io.StringIO()
    home = os.getcwd()
    os.chdir(directory)
    sys.argv = ["kernelrules", *case.argv]
    sys.stdin = io.StringIO("")
    exact = _reset_peak()
    rss_before = _status_kb("VmRSS") or 0
    maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    code, escaped = None, None
    try:
        with redirect_stdout(out), redirect_stderr(err):
            main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if isinstance(exc.code, str):
            err.write(exc.code + "\n")
    except BaseException as exc:  # noqa: BLE001 - reported as the case's failure
        escaped = f"{type(exc).__name__}: {exc}"[:500]
    finally:
        os.chdir(home)
    seconds = time.perf_counter() - start
    if exact:
        growth_kb = (_status_kb("VmHWM") or 0) - rss_before
    else:
        growth_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - maxrss_before
    return {"name": case.name, "code": code, "escaped": escaped, "stdout": out.getvalue()[-(4 << 20):],
            "stderr": err.getvalue()[-(1 << 20):], "seconds": seconds, "memory_bytes": max(growth_kb, 0) * 1024,
            "new_files": sorted(_listing(directory) - before)}


def _child(root: Path, names_file: Path) -> None:
    sys.path.insert(0, str(TESTS))
    results = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # stray writes to fd 1 (a subprocess, a C library) must not garble the results
    from hostile.cases import all_cases
    from kernelrules.cli import main

    cases = {case.name: case for case in all_cases()}
    for index, name in enumerate(json.loads(names_file.read_text())):
        results.write(json.dumps({"start": name}) + "\n")
        results.write(json.dumps(run_case(cases[name], root / f"{index:04d}", main)) + "\n")


def child_environment(cache: Path) -> dict[str, str]:
    """The environment of a runner child (and of the end-to-end runs): no debugging, no consent,
    no colour, a cache of its own."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("KERNELRULES_DEBUG", "KERNELRULES_ALLOW_CODE", "FORCE_COLOR", "CI")}
    env.update(NO_COLOR="1", COLUMNS="200", TERM="dumb", XDG_CACHE_HOME=str(cache),
               PYTHONPATH=os.pathsep.join(filter(None, [str(TESTS.parent), os.environ.get("PYTHONPATH", "")])))
    return env


class _Child:
    """One child process and the cases it has not finished."""

    def __init__(self, names: list[str], workdir: Path, serial: int) -> None:
        self.pending = list(names)
        root = workdir / f"child{serial}"
        root.mkdir()
        names_file = workdir / f"names{serial}.json"
        names_file.write_text(json.dumps(self.pending))
        self.stderr = open(workdir / f"child{serial}.stderr", "wb")
        self.proc = subprocess.Popen([sys.executable, __file__, str(root), str(names_file)],
                                     stdout=subprocess.PIPE, stderr=self.stderr, cwd=root,
                                     env=child_environment(workdir / "cache"), start_new_session=True)
        self.buffer = b""
        self.current: str | None = None
        self.since = time.monotonic()

    def rss_bytes(self) -> int:
        try:
            with open(f"/proc/{self.proc.pid}/status") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.stderr.close()


def run_cases(names: list[str], children: int = 2) -> dict[str, dict]:
    """Run the named cases in ``children`` child processes; return each case's result by name."""
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="kernelrules-hostile-") as tmp:
        workdir = Path(tmp)
        (workdir / "cache").mkdir()
        serial = 0
        live: list[_Child] = []
        for share in (names[i::children] for i in range(children)):
            if share:
                live.append(_Child(share, workdir, serial))
                serial += 1
        selector = selectors.DefaultSelector()
        for child in live:
            selector.register(child.proc.stdout, selectors.EVENT_READ, child)
        while live:
            for key, _ in selector.select(timeout=0.1):
                child = key.data
                chunk = os.read(child.proc.stdout.fileno(), 1 << 16)
                if not chunk:  # the child ended: whatever it had not finished crashed it
                    selector.unregister(child.proc.stdout)
                    child.kill()
                    live.remove(child)
                    if child.current is not None:
                        results[child.current] = {"name": child.current, "killed": "the child process died"}
                        child.pending.remove(child.current)
                    if child.pending:
                        live.append(_restart(child, workdir, serial, selector))
                        serial += 1
                    continue
                child.buffer += chunk
                *lines, child.buffer = child.buffer.split(b"\n")
                for line in lines:
                    record = json.loads(line)
                    if "start" in record:
                        child.current, child.since = record["start"], time.monotonic()
                    else:
                        results[record["name"]] = record
                        child.pending.remove(record["name"])
                        child.current = None
            for child in list(live):
                why = None
                if child.current is not None and time.monotonic() - child.since > KILL_SECONDS:
                    why = f"killed after {KILL_SECONDS:.0f} s"
                elif child.rss_bytes() > KILL_RSS_BYTES:
                    why = f"killed above {KILL_RSS_BYTES >> 30} GB resident"
                if why:
                    selector.unregister(child.proc.stdout)
                    child.kill()
                    live.remove(child)
                    name = child.current
                    if name is not None:
                        results[name] = {"name": name, "killed": why}
                        child.pending.remove(name)
                    if child.pending:
                        live.append(_restart(child, workdir, serial, selector))
                        serial += 1
    return results


def _restart(child: _Child, workdir: Path, serial: int, selector) -> _Child:
    fresh = _Child(child.pending, workdir, serial)
    selector.register(fresh.proc.stdout, selectors.EVENT_READ, fresh)
    return fresh


if __name__ == "__main__":
    _child(Path(sys.argv[1]), Path(sys.argv[2]))
