"""The Optuna study is the experiment log: parameters, samplers, storage, claims and resume.

* **Parameters.** Each searched key with more than one value is one Optuna
  parameter. Numeric lists are *ordinal*: the parameter is the position in the
  sorted list (an ``IntDistribution``), so TPE, GP and Sobol sampling see the order
  (``BLOCK_M`` 16 < 32 < 64); other lists are categorical. The config itself is
  the trial's user attribute ``kr_config``, its record ``kr_record``.
* **Storage.** SQLite by default (WAL journal, a generous busy time-out), any
  SQLAlchemy URL otherwise (``postgresql://...``). Every trial is written when it is
  asked and when it is told, so a killed run loses at most the trials in flight,
  and those are recovered (below).
* **Claims.** A table ``kernelrules_claims`` in the same database holds one row per
  (study, config): inserting it is atomic on SQLite and PostgreSQL alike, so of two
  workers that draw the same config only one times it; the other records a
  ``duplicate`` of the owner's trial. Nothing is timed twice.
* **One owner per trial.** Trial state changes are compare-and-set
  (:class:`AtomicRDBStorage`): of two processes taking the same queued trial one gets
  it, and a trial is finished by exactly one process; a driver whose trial another
  process finished (failed as stale) drops it instead of telling it.
* **Resume.** A RUNNING trial whose driver is gone (its pid is dead on this machine, or
  its heartbeat is older than the grace period) is failed, its claim released and its
  config enqueued again, so the next run times it: no trial is lost.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..config import KernelConfig
from ..errors import KernelrulesError
from ..space import Space

try:
    import optuna
    from optuna.samplers import BaseSampler
except ImportError:  # pragma: no cover - the [tune] extra is missing
    raise KernelrulesError("kernelrules tune needs optuna", hint="pip install 'kernelrules[tune]'") from None

import warnings as _warnings

optuna.logging.set_verbosity(optuna.logging.WARNING)
_warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)

HEARTBEAT_SECONDS = 10.0
GRACE_SECONDS = 120.0


def config_key(config: KernelConfig | Mapping[str, Any]) -> str:
    """A stable text key of a config (the claim and dedup key)."""
    values = config.to_dict() if isinstance(config, KernelConfig) else dict(config)
    return json.dumps(values, sort_keys=True, separators=(",", ":"))


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


class ParamCodec:
    """Configs of a space <-> Optuna parameters (ordinal positions for numeric lists)."""

    def __init__(self, space: Space) -> None:
        from optuna.distributions import CategoricalDistribution, IntDistribution

        self.space = space
        self.fixed = {**space.fixed, **{k: v[0] for k, v in space.space.items() if len(v) == 1}}
        self.values: dict[str, list[Any]] = {}
        self.distributions: dict[str, Any] = {}
        for key, values in space.space.items():
            if len(values) < 2:
                continue
            unique = list(dict.fromkeys(values))
            if _numeric(unique):
                self.values[key] = sorted(unique)
                self.distributions[key] = IntDistribution(0, len(unique) - 1)
            else:
                self.values[key] = unique
                self.distributions[key] = CategoricalDistribution(unique)

    def decode(self, params: Mapping[str, Any]) -> dict[str, Any]:
        values = dict(self.fixed)
        for key in self.space.space:
            if key in self.values:
                raw = params[key]
                values[key] = self.values[key][raw] if key in self.values and _numeric(self.values[key]) else raw
        ordered = {k: values[k] for k in [*self.space.fixed, *self.space.space] if k in values}
        return ordered

    def encode(self, config: Mapping[str, Any]) -> dict[str, Any]:
        params = {}
        for key, values in self.values.items():
            params[key] = values.index(config[key]) if _numeric(values) else config[key]
        return params

    def grid(self) -> dict[str, list[Any]]:
        return {k: (list(range(len(v))) if _numeric(v) else list(v)) for k, v in self.values.items()}


# --------------------------------------------------------------------------- storage


def storage_url(storage: str | None, space_path: Path, study_dir: Path | None = None) -> str:
    """The storage URL: as given, a path to an SQLite file, or the default next to the space file."""
    if storage:
        if "://" in storage:
            return storage
        return f"sqlite:///{Path(storage).resolve()}"
    folder = Path(study_dir) if study_dir else space_path.parent
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(folder / (space_path.stem.replace('.space', '') + '.tune.db')).resolve()}"


def display_url(url: str) -> str:
    """The storage URL with any password masked, for output and error messages."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - not a URL SQLAlchemy parses: show it without its credentials part
        scheme, sep, rest = url.partition("://")
        return f"{scheme}{sep}***@{rest.split('@', 1)[1]}" if "@" in rest else url


def _init_race(exc: BaseException) -> bool:
    """An error of two processes creating the same schema at once (the loser retries and finds it made)."""
    import sqlalchemy as sa

    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, sa.exc.IntegrityError):
            return True
        if isinstance(exc, (sa.exc.OperationalError, sa.exc.ProgrammingError, sqlite3.Error)):
            text = str(exc).lower()
            if "already exists" in text or "duplicate" in text or "unique constraint" in text:
                return True
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return False


def _retrying_init(make: Callable[[], Any], attempts: int = 12) -> Any:
    """``make()``, again after a short random pause while another process is creating the same tables.

    SQLAlchemy's ``create_all`` (Optuna's schema, the claims table) checks which tables exist and then
    creates the others: two drivers starting together on a new database both see a table missing and
    the second ``CREATE TABLE`` fails. The tables exist by then, so another attempt succeeds.
    """
    import random

    for attempt in range(attempts):
        try:
            return make()
        except Exception as exc:  # noqa: BLE001 - only a schema race is retried
            if attempt == attempts - 1 or not _init_race(exc):
                raise
        time.sleep(random.uniform(0.02, 0.1) * (attempt + 1))
    raise AssertionError("unreachable")


class AtomicRDBStorage(optuna.storages.RDBStorage):
    """Optuna's RDB storage with trial state changes made compare-and-set in one UPDATE.

    Optuna reads a trial's state, checks it and writes the new one. On PostgreSQL and MySQL
    the read takes a row lock (``SELECT ... FOR UPDATE``); SQLite has no row locks and no
    transaction around the read, so two processes can both see a queued (WAITING) trial and
    both take it as theirs (an enqueued config judged by two drivers at once, the second
    ``tell`` failing with ``UpdateFinishedTrialError``), or a late ``tell`` can overwrite a
    trial another process finished. Here the transition is one ``UPDATE ... WHERE state IN
    (...)``: a queued trial is taken by exactly one process (the others get False, as from
    Optuna when it is already RUNNING) and a trial is finished exactly once (every later
    attempt raises ``UpdateFinishedTrialError``, its values rolled back).
    """

    def set_trial_state_values(self, trial_id: int, state: Any, values: Sequence[float] | None = None) -> bool:
        import datetime

        import sqlalchemy as sa
        from optuna.trial import TrialState

        try:  # Optuna's own pieces (3.6 to 4.x); without them, Optuna's check-then-set
            from optuna.storages._rdb import models
            from optuna.storages._rdb.storage import _create_scoped_session
            model = models.TrialModel
            model.find_or_raise_by_id, self._set_trial_value_without_commit  # noqa: B018
        except (ImportError, AttributeError):  # pragma: no cover - a future Optuna
            return super().set_trial_state_values(trial_id, state, values)
        if state == TrialState.RUNNING:
            expected = [TrialState.WAITING]
        else:
            expected = [s for s in TrialState if not s.is_finished()]
        changes: dict[str, Any] = {"state": state}
        now = datetime.datetime.now()
        if state == TrialState.RUNNING:
            changes["datetime_start"] = now
        if state.is_finished():
            changes["datetime_complete"] = now
        try:
            with _create_scoped_session(self.scoped_session) as session:
                trial = model.find_or_raise_by_id(trial_id, session, for_update=True)
                self.check_trial_is_updatable(trial_id, trial.state)
                if values is not None:
                    for objective, value in enumerate(values):
                        self._set_trial_value_without_commit(session, trial, objective, value)
                updated = session.execute(
                    sa.update(model).where(model.trial_id == trial_id, model.state.in_(expected)).values(**changes)
                    .execution_options(synchronize_session=False)).rowcount
                if updated != 1:
                    current = session.execute(sa.select(model.state).where(model.trial_id == trial_id)).scalar()
                    if current is None:
                        raise KeyError(f"no trial with id {trial_id}")
                    self.check_trial_is_updatable(trial_id, current)  # finished by another process: raises
                    if state != TrialState.RUNNING:
                        raise optuna.exceptions.UpdateFinishedTrialError(
                            f"Trial#{trial.number} changed state concurrently and can not be updated.")
                    raise _AlreadyRunning  # another process took the queued trial (rolls back, returns False)
        except _AlreadyRunning:
            return False
        except sa.exc.IntegrityError:
            return False
        return True


class _AlreadyRunning(Exception):
    pass


def _wal(path: str, patience: float = 60.0) -> None:
    """Put an SQLite file in WAL mode (concurrent readers and one writer), once.

    Switching needs the file to itself, and SQLite answers "database is locked" at once,
    without its busy time-out, while another process opens or switches the same new file:
    a driver started together with another retries until the file is in WAL mode.
    """
    import random

    deadline = time.monotonic() + patience
    while True:
        connection = sqlite3.connect(path, timeout=patience)
        try:
            if str(connection.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
                return
            connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc).lower() or time.monotonic() > deadline:
                raise
        finally:
            connection.close()
        time.sleep(random.uniform(0.01, 0.05))


def open_storage(url: str) -> Any:
    """An Optuna RDB storage (:class:`AtomicRDBStorage`); SQLite files get WAL and a busy time-out."""
    kwargs: dict[str, Any] = {}
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            _wal(path)
        kwargs = {"connect_args": {"timeout": 120}}
    try:
        return _retrying_init(lambda: AtomicRDBStorage(url, engine_kwargs=kwargs))
    except Exception as exc:  # noqa: BLE001 - a bad URL or an unreachable server is a usage error
        message = str(exc).replace(url, display_url(url))
        raise KernelrulesError(f"cannot open the study storage {display_url(url)!r}: {type(exc).__name__}: {message}"[:400],
                               hint="SQLite: a file path; PostgreSQL: postgresql+psycopg://user@host/db with the "
                                    "password in PGPASSWORD (pip install 'kernelrules[postgres]')") from None


class Claims:
    """One row per (study, config) in the study's database: who times it."""

    def __init__(self, storage: Any, study_name: str) -> None:
        import sqlalchemy as sa

        self.sa = sa
        self.study_name = study_name
        self.engine = storage.engine
        metadata = sa.MetaData()
        self.table = sa.Table(
            "kernelrules_claims", metadata,
            sa.Column("study", sa.String(255), primary_key=True),
            sa.Column("config_key", sa.String(1000), primary_key=True),
            sa.Column("trial_number", sa.Integer, nullable=False),
            sa.Column("worker", sa.String(255)),
            sa.Column("claimed_at", sa.Float),
        )
        _retrying_init(lambda: metadata.create_all(self.engine, checkfirst=True))

    def claim(self, key: str, trial_number: int) -> int:
        """Claim ``key`` for a trial; returns the owner's trial number (ours when the claim is won)."""
        sa = self.sa
        for _attempt in range(3):
            try:
                with self.engine.begin() as connection:
                    connection.execute(self.table.insert().values(study=self.study_name, config_key=key,
                                                                  trial_number=trial_number, worker=worker_id(),
                                                                  claimed_at=time.time()))
                return trial_number
            except sa.exc.IntegrityError:
                owner = self.owner(key)
                if owner is not None:
                    return owner
        raise RuntimeError(f"cannot claim {key}")

    def owner(self, key: str) -> int | None:
        t = self.table
        with self.engine.connect() as connection:
            row = connection.execute(self.sa.select(t.c.trial_number).where(
                (t.c.study == self.study_name) & (t.c.config_key == key))).first()
        return None if row is None else int(row[0])

    def release(self, trial_number: int) -> int:
        """Drop the claims of a trial; how many there were."""
        t = self.table
        with self.engine.begin() as connection:
            return int(connection.execute(t.delete().where(
                (t.c.study == self.study_name) & (t.c.trial_number == trial_number))).rowcount or 0)

    def count(self) -> int:
        t = self.table
        with self.engine.connect() as connection:
            return int(connection.execute(self.sa.select(self.sa.func.count()).select_from(t).where(
                t.c.study == self.study_name)).scalar() or 0)


# --------------------------------------------------------------------------- samplers


def feasible(trial: Any) -> list[float]:
    """Optuna constraints: <= 0 is feasible (timed and correct), 1 otherwise."""
    return [0.0 if trial.user_attrs.get("kr_feasible") else 1.0]


class PhasedSampler(BaseSampler):
    """Sobol (QMC) points for the first ``n_first`` trials, then another sampler (TPE or GP)."""

    def __init__(self, first: Any, then: Any, n_first: int) -> None:
        self.first, self.then, self.n_first = first, then, n_first
        self._phase: dict[int, Any] = {}

    def _pick(self, study: Any, trial: Any) -> Any:
        if trial.number not in self._phase:
            from optuna.trial import TrialState

            done = len(study._get_trials(deepcopy=False, states=(TrialState.COMPLETE,), use_cache=True))
            self._phase[trial.number] = self.first if done < self.n_first else self.then
        return self._phase[trial.number]

    def infer_relative_search_space(self, study: Any, trial: Any) -> dict:
        return self._pick(study, trial).infer_relative_search_space(study, trial)

    def sample_relative(self, study: Any, trial: Any, search_space: dict) -> dict:
        return self._pick(study, trial).sample_relative(study, trial, search_space)

    def sample_independent(self, study: Any, trial: Any, name: str, distribution: Any) -> Any:
        return self._pick(study, trial).sample_independent(study, trial, name, distribution)

    def before_trial(self, study: Any, trial: Any) -> None:
        self._pick(study, trial).before_trial(study, trial)

    def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
        self.then.after_trial(study, trial, state, values)  # stores the constraints for TPE/GP
        self._phase.pop(trial.number, None)

    def reseed_rng(self) -> None:
        self.first.reseed_rng()
        self.then.reseed_rng()


class _Grid(optuna.samplers.GridSampler):
    """Optuna's grid sampler without its ``study.stop()`` (ask-and-tell: the driver stops when the space is done)."""

    def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
        return None


SAMPLERS = ("auto", "tpe", "gp", "qmc", "random", "grid")


def make_sampler(name: str, codec: ParamCodec, *, seed: int | None, n_startup: int) -> Any:
    """An Optuna sampler by name; ``auto`` is Sobol points, then multivariate TPE with constraints."""
    with _warnings.catch_warnings():  # QMC, multivariate TPE and constraints are "experimental" in Optuna 4
        _warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return _make_sampler(name, codec, seed=seed, n_startup=n_startup)


def _make_sampler(name: str, codec: ParamCodec, *, seed: int | None, n_startup: int) -> Any:
    samplers = optuna.samplers
    if name not in SAMPLERS:
        raise KernelrulesError(f"unknown sampler {name!r}", hint=f"one of {', '.join(SAMPLERS)}")

    def qmc() -> Any:
        return samplers.QMCSampler(qmc_type="sobol", scramble=True, seed=seed, warn_independent_sampling=False)

    if name == "random":
        return samplers.RandomSampler(seed=seed)
    if name == "grid":
        return _Grid(codec.grid(), seed=seed)
    if name == "qmc":
        return qmc()
    if name == "tpe":
        return samplers.TPESampler(seed=seed, multivariate=True, constraints_func=feasible,
                                   n_startup_trials=n_startup, warn_independent_sampling=False)
    if name == "gp":
        return PhasedSampler(qmc(), samplers.GPSampler(seed=seed, constraints_func=feasible), n_startup)
    tpe = samplers.TPESampler(seed=seed, multivariate=True, constraints_func=feasible, n_startup_trials=0,
                              warn_independent_sampling=False)
    return PhasedSampler(qmc(), tpe, n_startup)


# --------------------------------------------------------------------------- resume


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def _machine() -> str | None:
    """This kernel's boot and this process's PID namespace: where a pid means the same process.

    Two machines can share a host name (a default image name, containers with the host's
    name), and containers on one machine can have their own PID namespaces; a pid is only
    checked where the boot id and the namespace match. None where ``/proc`` cannot tell.
    """
    boot = _read("/proc/sys/kernel/random/boot_id")
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = None
    return f"{boot}/{namespace}" if boot and namespace else None


def _proc_stat(pid: int) -> tuple[str, int | None] | None:
    """A process's state letter and start time (clock ticks after boot) from ``/proc/PID/stat``; None if absent."""
    stat = _read(f"/proc/{pid}/stat")
    if not stat:
        return None
    fields = stat.rpartition(")")[2].split()  # after the command name, which may hold spaces and parentheses
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return (fields[0] if fields else "?"), None


def _start_ticks(pid: int) -> int | None:
    """A process's start time: with the pid, it names one process (a pid can be reused, the pair cannot)."""
    stat = _proc_stat(pid)
    return None if stat is None else stat[1]


_MACHINE = _machine()
_OWN_START = _start_ticks(os.getpid())


def owner_info() -> dict[str, Any]:
    """What identifies this driver process as a trial's owner (the ``kr_owner`` user attribute)."""
    return {"worker": worker_id(), "host": socket.gethostname(), "pid": os.getpid(), "machine": _MACHINE,
            "start": _OWN_START, "at": time.time()}


def _pid_alive(pid: int, start: int | None = None) -> bool:
    """Whether process ``pid`` on this machine runs (a zombie does not; another process with a reused pid does not)."""
    stat = _proc_stat(pid)
    if stat is not None:
        state, started = stat
        if state in ("Z", "X", "x"):  # exited, not yet reaped by its parent
            return False
        return start is None or started is None or started == start
    try:  # no /proc, or one that hides other users' processes: the kernel answers
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner(trial: Any) -> dict[str, Any]:
    info = trial.user_attrs.get("kr_owner")
    if isinstance(info, dict):
        return info
    host, _, pid = str(trial.user_attrs.get("kr_worker", "")).rpartition(":")  # older studies: "host:pid"
    return {"host": host, "pid": int(pid) if pid.isdigit() else None}


def is_stale(trial: Any, *, grace: float = GRACE_SECONDS, now: float | None = None,
             own: frozenset[int] = frozenset()) -> bool:
    """A RUNNING trial whose driver is gone: a dead pid on this machine, or a heartbeat older than ``grace``.

    The pid is checked only when the owner ran on this machine: the same host name and, where
    both recorded one, the same boot id and PID namespace (:func:`_machine`); a pid whose
    process started at another time than the owner's is a reused pid, so the owner is gone.
    Any other owner (another host, another container) is judged by its heartbeat, written
    every ``HEARTBEAT_SECONDS`` by the owner's driver (host clocks must roughly agree).
    ``own`` holds the numbers of this process's trials in flight (a trial with this
    process's pid but not among them is from an earlier process that had the same pid).
    """
    now = time.time() if now is None else now
    owner = _owner(trial)
    pid = owner.get("pid")
    machine = owner.get("machine")
    local = owner.get("host") == socket.gethostname() and (machine is None or _MACHINE is None or machine == _MACHINE)
    if local and isinstance(pid, int) and pid > 0:
        start = owner.get("start")
        if pid == os.getpid() and (start is None or _OWN_START is None or start == _OWN_START):
            return trial.number not in own
        return not _pid_alive(pid, start if isinstance(start, int) else None)
    beats = [float(b) for b in (trial.user_attrs.get("kr_heartbeat"), owner.get("at")) if b is not None]
    beat = max(beats) if beats else None
    if beat is None:  # not yet told its owner (it writes that first, right after asking)
        start = trial.datetime_start.timestamp() if trial.datetime_start else now
        return now - start > grace
    return now - beat > grace


def recover(study: Any, claims: Claims | None, *, grace: float = GRACE_SECONDS,
            own: frozenset[int] = frozenset()) -> list[int]:
    """Fail stale RUNNING trials, release their claims and queue their configs again; their numbers."""
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    storage = study._storage
    recovered = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if not is_stale(trial, grace=grace, own=own):
            continue
        fresh = storage.get_trial(trial._trial_id)  # its owner may have told it or beaten since the listing
        if fresh.state != TrialState.RUNNING or not is_stale(fresh, grace=grace, own=own):
            continue
        try:  # compare-and-set (AtomicRDBStorage): of a live owner's tell and this, exactly one wins
            if not storage.set_trial_state_values(trial._trial_id, state=TrialState.FAIL):
                continue
        except UpdateFinishedTrialError:
            continue
        if claims is not None:
            claims.release(trial.number)
        if trial.params:
            study.enqueue_trial(dict(trial.params), user_attrs={"kr_retry_of": trial.number})
        recovered.append(trial.number)
    return recovered


class Heartbeat:
    """Records ``kr_heartbeat`` on the in-flight trials every few seconds (a thread)."""

    def __init__(self, study: Any, interval: float = HEARTBEAT_SECONDS) -> None:
        self.study, self.interval = study, interval
        self.trials: dict[int, int] = {}  # number -> trial id
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="kernelrules-heartbeat")

    def start(self) -> "Heartbeat":
        self._thread.start()
        return self

    def add(self, number: int, trial_id: int) -> None:
        with self._lock:
            self.trials[number] = trial_id

    def remove(self, number: int) -> None:
        with self._lock:
            self.trials.pop(number, None)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                ids = list(self.trials.values())
            for trial_id in ids:
                try:
                    self.study._storage.set_trial_user_attr(trial_id, "kr_heartbeat", time.time())
                except Exception:  # noqa: BLE001 - finished meanwhile, or a transient database error
                    pass

    def stop(self) -> None:
        self._stop.set()


def load_records(study: Any) -> list[dict[str, Any]]:
    """Every trial's record, in trial order (interrupted trials included)."""
    from optuna.trial import TrialState

    out = []
    for trial in study.get_trials(deepcopy=False):
        record = trial.user_attrs.get("kr_record")
        if trial.state == TrialState.FAIL and record is not None and record.get("status") != "duplicate":
            record = None  # its record was written but another process failed the trial first: it was not told
        if record is None:
            if trial.state == TrialState.FAIL:
                record = {"trial": trial.number, "status": "interrupted", "config": trial.user_attrs.get("kr_config"),
                          "error": "its process was killed; the config was queued again"}
            elif trial.state in (TrialState.RUNNING, TrialState.WAITING):
                record = {"trial": trial.number, "status": "running" if trial.state == TrialState.RUNNING
                          else "waiting", "config": trial.user_attrs.get("kr_config")}
            else:
                continue
        out.append(dict(record, trial=trial.number))
    return out


Seeder = Callable[[Sequence[KernelConfig], Any, Mapping[str, Any], int], list[KernelConfig]]
