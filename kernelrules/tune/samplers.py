"""Optuna samplers for ``kernelrules tune``: Sobol points first, then TPE or GP, with feasibility constraints.

``auto`` (the default) is scrambled Sobol (QMC) points for the first trials, then
multivariate TPE; ``gp`` the same with Optuna's GP sampler; ``tpe``, ``qmc``,
``random`` and ``grid`` as Optuna has them. A trial that was rejected, failed or gave a
wrong result is infeasible (Optuna's ``constraints_func``), so TPE and GP steer away from
it rather than learn from a made-up time.
"""

from __future__ import annotations

import warnings as _warnings
from typing import Any

from ..errors import KernelrulesError
from .study import ParamCodec, optuna

BaseSampler = optuna.samplers.BaseSampler


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
