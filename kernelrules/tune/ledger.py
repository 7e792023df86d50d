"""The study's side of a tune run's trials in flight: owned, told once, dropped or abandoned.

A trial is *in flight* from the moment this process owns it (its owner and config written to
the study, a heartbeat kept) until it is told. Several processes may share one study
(:mod:`kernelrules.tune.study`), so each step can find that another process got there first:

- **told**: the trial's record and its value (or FAIL) go to the study once; a trial another
  process finished meanwhile (its recovery judged this driver gone) is *lost* instead;
- **lost**: dropped without a verdict; that process failed it, released its claim and queued
  its config again, and a claim this process made after that release is released here, the
  config queued again, so a later trial judges it;
- **abandoned**: what is still in flight when a run stops early (out of time, an error) is
  failed, released and queued again for the next run.

:class:`kernelrules.tune.driver.Tuner` keeps the search; this class keeps the bookkeeping.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from .options import Candidate


class TrialLedger:
    """The trials in flight of one run over ``study``, with the study's ``claims`` and ``heartbeat``.

    ``on_told(record)`` is called after each record the study took (not for a lost trial).
    """

    def __init__(self, study: Any, claims: Any, heartbeat: Any, on_told: Callable[[dict], None]) -> None:
        self.study, self.claims, self.heartbeat = study, claims, heartbeat
        self.on_told = on_told
        self.inflight: dict[int, Candidate] = {}
        #: Trials of this run that another process failed as stale while they were in flight.
        self.lost: list[int] = []

    def own(self, candidate: Candidate, values: dict) -> bool:
        """Write the trial's owner (a first heartbeat) and config; False when another process failed it
        as stale meanwhile (then it is lost)."""
        from optuna.exceptions import UpdateFinishedTrialError

        from .recovery import write_owner

        trial = candidate.trial
        try:
            write_owner(self.study, trial)  # first: who owns it and a first heartbeat
            self.heartbeat.add(trial.number, trial._trial_id)
            self.inflight[trial.number] = candidate
            trial.set_user_attr("kr_config", values)
        except UpdateFinishedTrialError:
            self.lose(candidate)
            return False
        return True

    def tell(self, candidate: Candidate, record: dict, feasible: bool, value: float | None = None,
             state: Any = None) -> None:
        """Tell the study the trial's record and value (``record["ms"]``, inf when infeasible) or FAIL."""
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        trial = candidate.trial
        try:
            trial.set_user_attr("kr_record", record)
            trial.set_user_attr("kr_feasible", feasible)
            if state == TrialState.FAIL:
                self.study.tell(trial, state=TrialState.FAIL)
            else:
                if value is None:
                    value = record["ms"] if feasible else math.inf
                self.study.tell(trial, value)
        except UpdateFinishedTrialError:
            self.lose(candidate)
            return
        except ValueError:  # Optuna's "Cannot tell a FAIL trial": finished before this tell began
            if self._finished_elsewhere(trial):
                self.lose(candidate)
                return
            raise
        self.heartbeat.remove(trial.number)
        self.inflight.pop(trial.number, None)
        self.on_told(record)

    def duplicate(self, candidate: Candidate, owner: int) -> None:
        """Tell a trial whose config trial ``owner`` claimed first: that trial's value once it has one, else FAIL."""
        from optuna.trial import TrialState

        trials = {t.number: t for t in self.study.get_trials(deepcopy=False)}
        original = trials.get(owner)
        record = {"trial": candidate.trial.number, "status": "duplicate", "duplicate_of": owner,
                  "config": candidate.config.to_dict(), "config_text": str(candidate.config), "key": candidate.key}
        if original is not None and original.state == TrialState.COMPLETE:
            feasible = bool(original.user_attrs.get("kr_feasible"))
            self.tell(candidate, record, feasible, value=original.value)
        else:
            self.tell(candidate, record, False, state=TrialState.FAIL)

    def lose(self, candidate: Candidate) -> None:
        """Another process finished this trial (its recovery judged this driver gone): drop it, tell nothing.

        The trial was failed there, its claim released and its config queued again, so the
        config is judged by a later trial and this process's verdict is not recorded. A claim
        this process made after that release is released here, and the config queued again.
        """
        number = candidate.trial.number
        self.heartbeat.remove(number)
        self.inflight.pop(number, None)
        self.lost.append(number)
        try:
            if self.claims.release(number):
                self.study.enqueue_trial(dict(candidate.trial.params), user_attrs={"kr_retry_of": number})
        except Exception:  # noqa: BLE001 - the next run's recovery and the sampler still reach the config
            pass

    def abandon(self) -> None:
        """Trials still in flight when the run stops early: failed, released and queued again."""
        from optuna.trial import TrialState

        for number, candidate in list(self.inflight.items()):
            try:
                self.study.tell(candidate.trial, state=TrialState.FAIL)
                self.claims.release(number)
                self.study.enqueue_trial(dict(candidate.trial.params), user_attrs={"kr_retry_of": number})
            except Exception:  # noqa: BLE001 - the next run's recovery handles what is left
                pass
            self.inflight.pop(number, None)

    def _finished_elsewhere(self, trial: Any) -> bool:
        try:
            return self.study._storage.get_trial(trial._trial_id).state.is_finished()
        except Exception:  # noqa: BLE001
            return False
