"""``kernelrules tune --storage postgresql+psycopg://...`` against a real PostgreSQL server.

A module fixture runs ``initdb`` and ``pg_ctl`` (PostgreSQL's own binaries, from ``PATH``
or ``/usr/lib/postgresql/*/bin``) as an unprivileged user (``nobody`` when the tests run
as root: PostgreSQL refuses root), with the data directory and the unix socket in a fresh
temporary directory, TCP on a free 127.0.0.1 port with password (SCRAM) authentication,
and fsync off. It makes a role ``tuner`` and, per test, a database owned by it: the
set-up docs/tune.md gives for many machines. Without the binaries, the driver (psycopg 3,
the ``postgres`` extra) or a server that starts, the tests skip; under ``CI=true`` with
the binaries present a server that does not start fails them instead.
"""

from __future__ import annotations

import glob
import itertools
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from collections import Counter
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna")
pytest.importorskip("torch")

from conftest import kernelrules_command  # noqa: E402
from tune_checks import TIMED, assert_two_workers_settled  # noqa: E402

from kernelrules.tune.records import final_records  # noqa: E402
from kernelrules.tune.study import Claims, load_records, open_storage  # noqa: E402

SMALL = Path(__file__).parent.parent / "fixtures" / "tune" / "matmul_small.yaml"
ROLE, PASSWORD = "tuner", "kr-test-pw"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Server:
    """A throwaway PostgreSQL cluster in a temporary directory."""

    def __init__(self, initdb: str, pg_ctl: str) -> None:
        self.initdb, self.pg_ctl = initdb, pg_ctl
        self.prefix: list[str] = []
        self.dir = Path(tempfile.mkdtemp(prefix="krpg-"))  # short: a socket path has at most 107 bytes
        self.data, self.log = self.dir / "data", self.dir / "server.log"
        self.port = 0
        self.started = False
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root: run it as nobody
            user = pwd.getpwnam("nobody")
            os.chown(self.dir, user.pw_uid, user.pw_gid)
            self.dir.chmod(0o700)
            if shutil.which("runuser"):
                self.prefix = ["runuser", "-u", "nobody", "--"]
            else:
                self.prefix = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]

    def _run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"
        return subprocess.run([*self.prefix, *args], cwd=self.dir, env=env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def start(self) -> None:
        done = self._run(self.initdb, "-D", str(self.data), "-U", "postgres", "--auth-local=trust",
                         "--auth-host=scram-sha-256", "--no-sync", "--no-instructions", "-E", "UTF8",
                         "--locale=C")
        if done.returncode:
            raise RuntimeError(f"initdb failed ({done.returncode}): {(done.stderr or done.stdout)[-800:]}")
        for _attempt in range(3):  # a free port can be taken between the probe and the start
            self.port = _free_port()
            options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.dir} "
                       "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=16MB "
                       "-c max_connections=60")
            done = self._run(self.pg_ctl, "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                             "-o", options, "start", timeout=90)
            if done.returncode == 0:
                self.started = True
                return
        log = self.log.read_text(errors="replace")[-800:] if self.log.exists() else ""
        raise RuntimeError(f"pg_ctl start failed ({done.returncode}): {(done.stderr or done.stdout)[-400:]} {log}")

    def admin(self, *statements: str) -> None:
        import psycopg

        with psycopg.connect(host=str(self.dir), port=self.port, user="postgres", dbname="postgres",
                             autocommit=True, connect_timeout=10) as connection:
            for statement in statements:
                connection.execute(statement)

    def stop(self) -> None:
        if self.started:
            self._run(self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def pg_server():
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if not (initdb and pg_ctl):
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not found on PATH or in /usr/lib/postgresql")
    server = None
    try:
        pytest.importorskip("psycopg", reason="the PostgreSQL driver psycopg 3 is missing (pip install -e '.[postgres]')")
        server = _Server(initdb, pg_ctl)
        server.start()
        server.admin(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'")
    except BaseException as exc:  # noqa: BLE001 - any failure to start skips, or fails under CI
        if server is not None:
            server.stop()
        reason = f"cannot start a local PostgreSQL server: {type(exc).__name__}: {exc}"
        if isinstance(exc, pytest.skip.Exception):
            reason = str(exc)
        if IN_CI:
            pytest.fail(f"CI=true and the PostgreSQL binaries exist, yet: {reason}")
        pytest.skip(reason)
    yield server
    server.stop()


_databases = itertools.count()


@pytest.fixture
def pg_url(pg_server):
    """A fresh database owned by the role ``tuner``; its SQLAlchemy URL (TCP, password)."""
    name = f"kr_{os.getpid()}_{next(_databases)}"
    pg_server.admin(f"CREATE DATABASE {name} OWNER {ROLE}")
    return f"postgresql+psycopg://{ROLE}:{PASSWORD}@127.0.0.1:{pg_server.port}/{name}"


def _command(tmp_path: Path, url: str, *extra: str, space: str | None = None) -> list[str]:
    return [*kernelrules_command(), "tune", space or str(SMALL), "--arch", "ampere", "--interpret", "--json", "--stage",
            "config", "--storage", url, "--study-name", "s", "--cache-dir", str(tmp_path / "cache"), "--top-k", "1",
            "--rounds", "1", *extra]


def _env() -> dict:
    return dict(os.environ, NO_COLOR="1", COLUMNS="200", TERM="dumb", PYTHONUNBUFFERED="1")


def _study(url: str):
    return optuna.load_study(study_name="s", storage=open_storage(url))


def test_a_run_completes_and_report_reads_it_back(tmp_path, pg_url):
    # the password from PGPASSWORD (libpq), not in the URL that the summary prints
    url = pg_url.replace(f":{PASSWORD}@", "@")
    env = dict(_env(), PGPASSWORD=PASSWORD)
    done = subprocess.run(_command(tmp_path, url, "--trials", "4", "--sampler", "random", "--seed", "3"),
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["funnel"]["sampled"] == 4
    assert summary["storage"] == url
    records = load_records(_study(pg_url))
    assert len(final_records(records)) == 4
    assert {r["trial"] for r in lines[:-1]} <= {r["trial"] for r in records}

    report = subprocess.run([*kernelrules_command(), "report", url, "-o", str(tmp_path / "r.html")],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "r.html").read_text()
    winner = summary["final"]["winner"]["config_text"]
    assert winner in html
    assert PASSWORD not in html


def test_workers_opening_a_fresh_database_at_once_all_get_the_schema(pg_url):
    # PostgreSQL: a check-first CREATE TYPE/TABLE of two sessions races (a unique violation on
    # pg_type); every worker of a fleet started together must still open the study
    barrier, errors = threading.Barrier(4), []

    def open_one() -> None:
        try:
            barrier.wait(timeout=30)
            storage = open_storage(pg_url)
            Claims(storage, "s")
            storage.engine.dispose()
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert Claims(open_storage(pg_url), "s").count() == 0


def test_claims_stop_at_the_study_total(pg_url):
    # the same contract as on SQLite (test_tune_dedup.py); psycopg reports the rowcount of an
    # INSERT ... SELECT as -1, which once let a claim past the total through
    claims = Claims(open_storage(pg_url), "total")
    assert claims.claim("a", 0, limit=2) == 0 and claims.claim("b", 1, limit=2) == 1
    assert claims.claim("c", 2, limit=2) is None and claims.count() == 2
    assert claims.claim("a", 3, limit=2) == 0  # a duplicate, not a refusal
    assert claims.claim("c", 4, limit=3) == 4 and claims.claim("d", 5) == 5  # no limit: as before


def test_two_concurrent_workers_never_time_the_same_config_twice(tmp_path, pg_url):
    # the same sampler seed: both processes propose the same configs in the same order
    command = _command(tmp_path, pg_url, "--trials", "16", "--sampler", "random", "--seed", "7")
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
                              cwd=tmp_path) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err
    records = load_records(_study(pg_url))
    assert_two_workers_settled(records, outputs, trials=16)


@pytest.mark.slow  # the same resume on SQLite runs in CI (tests/tune/test_tune_storage.py)
def test_a_killed_run_resumes_with_no_trial_lost(tmp_path, pg_url):
    command = _command(tmp_path, pg_url, "--trials", "10", "--sampler", "grid")
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=_env(),
                            cwd=tmp_path)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(json.loads(line))
            if sum(r.get("status") in TIMED for r in seen) >= 3:
                break
        proc.send_signal(signal.SIGKILL)  # no clean-up: the server keeps what was committed
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    before = {t.number: t for t in _study(pg_url).get_trials()}
    running = [n for n, t in before.items() if t.state.name == "RUNNING"]
    assert running, "the kill left no trial in flight"
    assert {r["trial"] for r in seen} <= {n for n, t in before.items() if t.state.name == "COMPLETE"}

    resumed = subprocess.run(command, capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout.splitlines()[-1])
    assert any("resumed" in note for note in summary["notes"])
    trials = _study(pg_url).get_trials()
    assert not [t for t in trials if t.state.name in ("RUNNING", "WAITING")]
    records = load_records(_study(pg_url))
    by_number = {r["trial"]: r for r in records}
    for number in running:  # every trial in flight at the kill: failed, and its config judged again once
        assert by_number[number]["status"] == "interrupted"
        retries = [t for t in trials if t.user_attrs.get("kr_retry_of") == number]
        assert len(retries) == 1 and retries[0].state.name == "COMPLETE"
        assert retries[0].params == before[number].params
    for number, trial in before.items():
        if trial.state.name == "COMPLETE":
            assert by_number[number]["status"] == trial.user_attrs["kr_record"]["status"]
    assert len(final_records(records)) == 10 and summary["funnel"]["sampled"] == 10
    timed_keys = Counter(r["key"] for r in records if r["status"] in TIMED)
    assert timed_keys and max(timed_keys.values()) == 1
    f = summary["funnel"]
    assert f["space"] == f["rejected"] + f["learned"] + f["failed"] + f["timed"] + f["not_sampled"]


def test_no_output_shows_the_password_in_the_url(tmp_path, pg_url):
    """Issue 18: a storage URL with a password is masked in every message: a study that does not exist,
    a study made for another space, and a tune run's own output."""
    run = lambda *args: subprocess.run([*kernelrules_command(), *args], capture_output=True, text=True,  # noqa: E731
                                       env=_env(), cwd=tmp_path, timeout=300)
    first = subprocess.run(_command(tmp_path, pg_url, "--trials", "2", "--sampler", "random", "--seed", "1"),
                           capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    missing = run("report", pg_url, "--study-name", "nosuch")
    assert missing.returncode == 2 and "no study 'nosuch'" in missing.stderr and ":***@" in missing.stderr
    other = tmp_path / "other.tune.yaml"  # the same kernel, another space
    kernel = (SMALL.parent / "../../../examples/matmul.py").resolve()
    other.write_text(SMALL.read_text().replace("../../../examples/matmul.py", str(kernel))
                     .replace("num_stages: [1, 2]", "num_stages: [1, 2, 3]"))
    again = subprocess.run(_command(tmp_path, pg_url, "--trials", "1", space=str(other)), capture_output=True,
                           text=True, env=_env(), cwd=tmp_path, timeout=300)
    assert again.returncode == 2 and "was made for another" in again.stderr
    for done in (first, missing, again):
        assert PASSWORD not in done.stdout + done.stderr
