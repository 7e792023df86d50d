"""Resume: who owns a RUNNING trial, whether that process is gone, and putting its config back in the queue.

Each driver writes its identity on the trials it asks (``kr_owner``: host, pid, the pid's
start time, boot id and PID namespace) and a heartbeat every few seconds (:class:`Heartbeat`).
A RUNNING trial whose owner is gone (a dead or reused pid on this machine, or a heartbeat
older than the grace period elsewhere) is failed, its claim released and its config
enqueued again (:func:`recover`), so a killed run loses no trial.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any

from .study import Claims, worker_id

HEARTBEAT_SECONDS = 10.0
GRACE_SECONDS = 120.0


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


def write_owner(study: Any, trial: Any) -> None:
    """Record this driver process as ``trial``'s owner (``kr_owner``, :func:`owner_info`): called as Optuna starts
    the trial, before its sampler works, so that a process killed meanwhile leaves a trial :func:`is_stale` can
    judge by its pid (without an owner it waits out the grace period); and again when the ledger takes the asked
    trial (``TrialLedger.own``: a first heartbeat, and the write that finds a trial failed as stale meanwhile)."""
    study._storage.set_trial_user_attr(trial._trial_id, "kr_owner", owner_info())


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
    if beat is None:  # no owner written yet (write_owner runs as Optuna starts the trial: a few ms of the ask)
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
        params = _config_params(trial)
        if params:
            study.enqueue_trial(params, user_attrs={"kr_retry_of": trial.number})
        recovered.append(trial.number)
    return recovered


def _config_params(trial: Any) -> dict[str, Any]:
    """The config a stale trial was to judge, as the study's parameters: the ones it was given, else those it was
    enqueued with (a queued seed or retry that its process took from the queue and was killed before it set them:
    without this, that config left the queue for good)."""
    return dict(trial.params) or dict(trial.system_attrs.get("fixed_params") or {})


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
