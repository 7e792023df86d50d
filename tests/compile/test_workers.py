"""The supervised-worker base under the compile pool and the benchmark workers: spawn, deadline, kill, death, log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kernelrules.compile.workers import Death, SupervisedProcess, WorkerLog, package_root

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc")

#: A worker module for these tests: ``python -m fake_worker MODE [FILE]``.
FAKE_WORKER = textwrap.dedent("""\
    import os, signal, subprocess, sys, time

    mode = sys.argv[1]
    if mode == "report":  # what the worker sees, on stdout; a line on stderr too
        print(os.getpgrp(), os.getsid(0), os.environ.get("PYTHONPATH"), os.environ.get("PYTHONUNBUFFERED"),
              os.environ.get("ONLY_HERE"), sys.path[0] == os.getcwd())
        print("to stderr", file=sys.stderr)
    elif mode == "child":  # a child in the worker's group (as ptxas is), whose pid goes to FILE, then hang
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open(sys.argv[2], "w").write(str(child.pid))
        if sys.argv[3:] == ["leave"]:
            os._exit(0)  # the worker ends, its child stays
        time.sleep(600)
    elif mode == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif mode == "exit":
        sys.exit(3)
    """)


@pytest.fixture
def fake_worker(tmp_path, monkeypatch):
    """The name of the fake worker module, importable by the workers these tests start."""
    (tmp_path / "fake_worker.py").write_text(FAKE_WORKER)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return "fake_worker"


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(predicate, seconds: float = 30.0) -> bool:
    """Poll ``predicate`` until it holds or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)
    return predicate()


def start(module: str, *args: str, **kwargs) -> SupervisedProcess:
    return SupervisedProcess.start(module, args, env={"PATH": os.environ.get("PATH", ""), "ONLY_HERE": "yes"},
                                   log=WorkerLog(), startup_timeout=60, **kwargs)


def test_a_worker_runs_in_its_own_session_with_the_package_first_on_its_path(fake_worker, tmp_path):
    worker = start(fake_worker, "report", stdout=subprocess.PIPE, cwd=str(tmp_path))
    out = worker.proc.stdout.read().decode().split()
    assert worker.death(wait=30) == Death(0)
    pgid, sid, python_path, unbuffered, only_here, cwd_first = out
    assert int(pgid) == int(sid) == worker.pid  # a new session: its own process group
    assert python_path.split(os.pathsep) == [package_root(), str(tmp_path)] and unbuffered == "1"
    assert only_here == "yes" and cwd_first == "False"  # the given environment; not the cwd first on sys.path (-P)
    assert Path(package_root(), "kernelrules", "compile", "workers.py").is_file()
    assert worker.log_tail(1000) == "to stderr\n" and worker.log_tail(4) == "err\n"
    worker.close()


def test_killing_a_worker_kills_its_group_even_after_the_worker_itself_exited(fake_worker, tmp_path):
    for leave in (False, True):
        pid_file = tmp_path / f"child-{leave}.pid"
        worker = start(fake_worker, "child", str(pid_file), *(["leave"] if leave else []))
        assert wait_for(lambda: pid_file.exists() and pid_file.read_text())
        child = int(pid_file.read_text())
        assert alive(child)
        if leave:
            assert worker.death(wait=30) == Death(0)
        worker.kill()
        assert wait_for(lambda: not alive(child), 10), "the worker's child survived the kill"
        assert not worker.alive()
        worker.kill()  # a second kill only reaps: nothing left to signal
        worker.close()


def test_deaths_are_classified(fake_worker):
    crashed = start(fake_worker, "segfault")
    death = crashed.death(wait=30)
    assert (death.signal, death.signal_name, death.memory_fault) == (signal.SIGSEGV, "SIGSEGV", True)
    exited = start(fake_worker, "exit").death(wait=30)
    assert (exited.returncode, exited.signal, exited.signal_name, exited.memory_fault) == (3, None, "", False)
    assert Death(-signal.SIGKILL).signal_name == "SIGKILL" and not Death(-signal.SIGKILL).memory_fault
    assert Death(None).signal is None
    hung = start(fake_worker, "child", "/dev/null")
    assert hung.death(wait=0.05) == Death(None)  # still running
    hung.close()
    assert hung.death() == Death(-signal.SIGKILL)


def test_deadlines_for_a_request_and_for_start_up(fake_worker):
    worker = start(fake_worker, "child", "/dev/null")
    assert not worker.startup_expired() and worker.startup_expired(worker.started + 60)
    worker.ready = True
    assert not worker.startup_expired(worker.started + 60)  # a ready worker has no start-up deadline
    deadline = worker.arm(0.5, now=100.0)
    assert deadline == worker.deadline == 100.5
    assert not worker.past_deadline(100.4) and worker.past_deadline(100.5)
    worker.arm(60)
    assert not worker.past_deadline()
    worker.close()


WATCHED = textwrap.dedent("""\
    import os, subprocess, sys, time
    from kernelrules.compile.workers import watch_parent

    flag = sys.argv[2]
    if sys.argv[1] == "middle":  # start the watched worker, wait until it watches, then die
        subprocess.Popen([sys.executable, __file__, "watched", flag])
        deadline = time.monotonic() + 30
        while not os.path.exists(flag + ".watching") and time.monotonic() < deadline:
            time.sleep(0.02)
        os._exit(0)

    def gone():
        open(flag, "w").write("parent gone")
        os._exit(0)

    watch_parent(gone, period=0.05)
    open(flag + ".watching", "w").close()
    time.sleep(30)
    """)


def test_a_worker_notices_that_its_parent_is_gone(tmp_path):
    script, flag = tmp_path / "watched.py", tmp_path / "gone.txt"
    script.write_text(WATCHED)
    env = {**os.environ, "PYTHONPATH": package_root()}
    subprocess.run([sys.executable, str(script), "middle", str(flag)], env=env, check=True, timeout=60)
    assert wait_for(lambda: flag.exists() and flag.read_text() == "parent gone", 30)
