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
  config enqueued again, so the next run times it: no trial is lost
  (:mod:`kernelrules.tune.recovery`). The samplers are in :mod:`kernelrules.tune.samplers`.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..config import KernelConfig
from ..errors import KernelrulesError
from ..space import Space
from . import sqlite_file
from .records import config_key  # noqa: F401 - the claim key, here with the claims (records: no Optuna import)

try:
    import optuna
except ImportError:  # pragma: no cover - the [tune] extra is missing
    raise KernelrulesError("kernelrules tune needs optuna", hint="pip install 'kernelrules[tune]'") from None

import warnings as _warnings

optuna.logging.set_verbosity(optuna.logging.WARNING)
_warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)



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
    """The storage URL: as given, a path to an SQLite file, or the default next to the space file (or in
    ``study_dir``): ``<name>.tune.db`` for a space ``<name>.tune.yaml``, ``<name>.space.yaml`` or ``<name>.yaml``."""
    if storage:
        if "://" in storage:
            return storage
        return f"sqlite:///{Path(storage).resolve()}"
    folder = Path(study_dir) if study_dir else space_path.parent
    folder.mkdir(parents=True, exist_ok=True)
    name = space_path.stem.removesuffix(".tune").removesuffix(".space")
    return f"sqlite:///{(folder / (name + '.tune.db')).resolve()}"


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


def open_storage(url: str) -> Any:
    """An Optuna RDB storage (:class:`AtomicRDBStorage`); SQLite files get WAL, a busy time-out and commits
    without a disk sync each (:mod:`kernelrules.tune.sqlite_file`)."""
    path = url[len("sqlite:///"):] if url.startswith("sqlite:///") else None
    on_file = bool(path) and path != ":memory:"
    kwargs: dict[str, Any] = {}
    if on_file:
        kwargs = {"creator": sqlite_file.connector(path, timeout=120)}
    elif path is not None:
        kwargs = {"connect_args": {"timeout": 120}}
    try:
        if on_file:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            sqlite_file.wal_mode(path)  # inside the try: a damaged file ("file is not a database") is a usage error too
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

    def claim(self, key: str, trial_number: int, limit: int | None = None) -> int | None:
        """Claim ``key`` for a trial; returns the owner's trial number (ours when the claim is won).

        With ``limit`` (``--trials``, a study total) the claim is refused, None, when the study
        already holds ``limit`` claims: the count and the insert are one statement (SQLite runs
        writers one at a time; on PostgreSQL the table is locked against other writers for the
        transaction), so concurrent processes never claim more than the total between them.
        """
        sa = self.sa
        t = self.table
        for _attempt in range(3):
            try:
                with self.engine.begin() as connection:
                    row = dict(study=self.study_name, config_key=key, trial_number=trial_number, worker=worker_id(),
                               claimed_at=time.time())
                    if limit is None:
                        connection.execute(t.insert().values(**row))
                        return trial_number
                    if connection.dialect.name == "postgresql":
                        connection.execute(sa.text("LOCK TABLE kernelrules_claims IN SHARE ROW EXCLUSIVE MODE"))
                    held = sa.select(sa.func.count()).select_from(t).where(t.c.study == self.study_name)
                    source = sa.select(*[sa.literal(v, type_=c.type) for c, v in
                                         ((t.c[name], value) for name, value in row.items())]).where(
                        held.scalar_subquery() < limit)
                    connection.execute(t.insert().from_select(list(row), source))
                    # Who holds the key now, read in the same transaction: the rowcount of an INSERT ... SELECT
                    # is not reliable across drivers (psycopg reports -1), and trusting it claimed past the total.
                    owner = connection.execute(sa.select(t.c.trial_number).where(
                        (t.c.study == self.study_name) & (t.c.config_key == key))).first()
                return None if owner is None else int(owner[0])  # None: refused, the total is reached
            except sa.exc.IntegrityError:
                owner = self.owner(key)
                if owner is not None:
                    return owner
        raise RuntimeError(f"cannot claim {key}")

    def once(self, tag: str) -> bool:
        """True for the first process to ask with ``tag`` in this study (e.g. to enqueue the seeds once).

        A row of a companion namespace (``<study>#once``), so :meth:`count` does not see it.
        """
        try:
            with self.engine.begin() as connection:
                connection.execute(self.table.insert().values(study=f"{self.study_name}#once"[:255], config_key=tag,
                                                              trial_number=-1, worker=worker_id(),
                                                              claimed_at=time.time()))
            return True
        except self.sa.exc.IntegrityError:
            return False

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


def load_records(study: Any) -> list[dict[str, Any]]:
    """Every trial's record, in trial order (interrupted trials included)."""
    from optuna.trial import TrialState

    out = []
    for trial in study.get_trials(deepcopy=False):
        record = trial.user_attrs.get("kr_record")
        if trial.state == TrialState.FAIL and record is not None and record.get("status") not in ("duplicate",
                                                                                                  "over_budget"):
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
