"""Optuna samplers for ``kernelrules tune``: Sobol points first, then TPE or GP, with feasibility constraints.

``auto`` (the default) is scrambled Sobol (QMC) points for the first trials, then
multivariate TPE; ``gp`` the same with Optuna's GP sampler; ``tpe``, ``qmc``,
``random`` and ``grid`` as Optuna has them. A trial that was rejected, failed or gave a
wrong result is infeasible (Optuna's ``constraints_func``), so TPE and GP steer away from
it rather than learn from a made-up time.
"""

from __future__ import annotations

import random as _random
import warnings as _warnings
from typing import Any, Callable, Mapping

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


def make_sampler(name: str, codec: ParamCodec, *, seed: int | None, n_startup: int, dedup: bool = True) -> Any:
    """An Optuna sampler by name; ``auto`` is Sobol points, then multivariate TPE with constraints.

    With ``dedup`` (the default) it is wrapped in :class:`DedupSampler`: no proposal repeats a
    config the study holds or leaves the space's constraints.
    """
    with _warnings.catch_warnings():  # QMC, multivariate TPE and constraints are "experimental" in Optuna 4
        _warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = _make_sampler(name, codec, seed=seed, n_startup=n_startup)
    return DedupSampler(sampler, codec, seed=seed) if dedup else sampler


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


# --------------------------------------------------------------------------- deduplication


class DedupSampler(BaseSampler):
    """Never proposes a config the study already holds, nor one outside the space's constraints.

    Wraps any sampler (Sobol/QMC, TPE, GP, random, grid). Every searched parameter is sampled
    here as one relative proposal: the inner sampler's (its relative parameters, the rest from its
    ``sample_independent``); when that config is already in the study or is not one of the space's
    configs (its ``constraints``), it is replaced by the nearest config not yet tried, by the
    ordinal encoding of :class:`ParamCodec` (position / (count - 1) per numeric key, 0 or 1 per
    categorical one, summed), ties broken by an RNG seeded from ``seed`` and the trial number.
    The trial's parameters are then the config actually evaluated, so Optuna (TPE, GP) learns from
    what was timed; the replaced proposal is kept in the trial's system attribute ``kr_replaced``.

    *Tried* is every config of a trial of the study in any state (a queued trial's fixed parameters
    included), except a failed trial of ``kernelrules tune`` (user attribute ``kr_owner``): that is
    a duplicate whose config another trial owns, an interrupted one whose config was queued
    again, or one refused by the ``--trials`` total; a config whose requeue was lost is thus
    proposed again rather than never. With :attr:`reserve` (the driver's claims) the chosen config
    is claimed before it is returned, so processes sharing a study do not draw the same config
    either: one that another process claimed since the study was read is skipped. When nothing is left (:meth:`exhausted`) the driver stops asking; asked
    anyway, the sampler returns the inner proposal (a duplicate the claims catch).
    """

    def __init__(self, inner: Any, codec: ParamCodec, *, seed: int | None = None) -> None:
        import numpy as np

        self.inner, self.codec, self.seed = inner, codec, seed
        self.names = list(codec.distributions)
        self._ordinal = [n for n in self.names if _ordinal(codec, n)]
        self._categorical = [n for n in self.names if not _ordinal(codec, n)]
        self.points: list[tuple] = []
        index: dict[tuple, int] = {}
        for config in codec.space.configs():
            point = self._point(codec.encode(config.to_dict()))
            if point not in index:
                index[point] = len(self.points)
                self.points.append(point)
        self.index = index
        ordinal = [self.names.index(n) for n in self._ordinal]
        categorical = [self.names.index(n) for n in self._categorical]
        scale = np.array([max(1, len(codec.values[n]) - 1) for n in self._ordinal], dtype=float)
        self._scale = scale
        self._ord = np.array([[p[i] for i in ordinal] for p in self.points], dtype=float).reshape(
            len(self.points), len(ordinal)) / scale
        self._cat = [np.array([p[i] for p in self.points], dtype=object) for i in categorical]
        self._rng = _random.Random(seed)
        #: ``reserve(params, trial_number)``: claims the config for the trial before it is returned (the
        #: driver's claims), the owner's trial number or None when the --trials total is reached; a config
        #: another process took meanwhile is skipped for the next nearest. None: no reservation.
        self.reserve: Callable[[dict, int], int | None] | None = None
        #: ``on_start(study, trial)``: called first when Optuna starts a trial (:meth:`before_trial`), before any
        #: sampling: the driver writes the trial's owner there, so a process killed while its sampler works (a
        #: TPE fit over the study) leaves no RUNNING trial that a resumed run cannot tell is its. None: nothing.
        self.on_start: Callable[[Any, Any], None] | None = None

    def _point(self, params: Mapping[str, Any]) -> tuple:
        return tuple(params[n] for n in self.names)

    # -- what the study holds ---------------------------------------------------------

    def tried(self, study: Any, exclude: int | None = None) -> tuple[set[int], int]:
        """Indices (into :attr:`points`) of the space configs the study holds; and how many trials wait."""
        from optuna.trial import TrialState

        taken: set[int] = set()
        waiting = 0
        for trial in study._storage.get_all_trials(study._study_id, deepcopy=False):
            if trial._trial_id == exclude:
                continue
            if trial.state == TrialState.WAITING:
                waiting += 1
                params = trial.system_attrs.get("fixed_params") or {}
            elif trial.state == TrialState.FAIL and "kr_owner" in trial.user_attrs:
                continue
            else:
                params = trial.params
            if all(n in params for n in self.names):
                found = self.index.get(self._point(params))
                if found is not None:
                    taken.add(found)
        return taken, waiting

    def exhausted(self, study: Any) -> bool:
        """Every config of the space is in the study and no trial waits to be asked."""
        taken, waiting = self.tried(study)
        return waiting == 0 and len(taken) >= len(self.points)

    # -- Optuna's sampler interface -----------------------------------------------------

    def infer_relative_search_space(self, study: Any, trial: Any) -> dict:
        return dict(self.codec.distributions)

    def sample_relative(self, study: Any, trial: Any, search_space: dict) -> dict:
        if not self.names or any(n not in search_space for n in self.names):
            return {}
        fixed = trial.system_attrs.get("fixed_params") or {}
        if all(n in fixed for n in self.names):
            return {}  # an enqueued config: Optuna takes its fixed parameters
        trial = study._storage.get_trial(trial._trial_id)  # with what before_trial wrote (the grid's point)
        proposal = self._inner_proposal(study, trial)
        proposal.update({n: fixed[n] for n in self.names if n in fixed})
        point = self._point(proposal)
        found = self.index.get(point)
        taken, _waiting = self.tried(study, exclude=trial._trial_id)
        choice = found if found is not None and found not in taken else None
        for _attempt in range(16):
            if choice is None:
                choice = self._nearest(point, taken, fixed, trial.number)
            if choice is None:
                return proposal  # nothing left: a duplicate, which the driver's claims catch
            params = dict(zip(self.names, self.points[choice]))
            owner = self.reserve(params, trial.number) if self.reserve is not None else trial.number
            if owner is None or owner == trial.number:  # ours (or the --trials total is reached: the driver says so)
                break
            taken.add(choice)  # another process took it since the study was read
            choice = None
        if choice != found:
            study._storage.set_trial_system_attr(trial._trial_id, "kr_replaced", {
                "reason": "outside_space" if found is None else "duplicate", "proposed": proposal})
        return params

    def _inner_proposal(self, study: Any, trial: Any) -> dict:
        space = self.inner.infer_relative_search_space(study, trial)
        space = {n: d for n, d in space.items() if n in self.codec.distributions}
        proposal = dict(self.inner.sample_relative(study, trial, space)) if space else {}
        for name in self.names:
            if name not in proposal:
                proposal[name] = self.inner.sample_independent(study, trial, name, self.codec.distributions[name])
        return {n: int(proposal[n]) if n in self._ordinal else proposal[n] for n in self.names}

    def _nearest(self, point: tuple, taken: set[int], fixed: Mapping[str, Any], number: int) -> int | None:
        import numpy as np

        free = np.ones(len(self.points), dtype=bool)
        if taken:
            free[list(taken)] = False
        for name, value in fixed.items():
            if name in self.names:
                i = self.names.index(name)
                free &= np.array([p[i] == value for p in self.points], dtype=bool)
        if not free.any():
            return None
        distance = np.zeros(len(self.points))
        if self._ordinal:
            here = np.array([point[self.names.index(n)] for n in self._ordinal], dtype=float) / self._scale
            distance += np.abs(self._ord - here).sum(axis=1)
        for name, column in zip(self._categorical, self._cat):
            distance += column != point[self.names.index(name)]
        distance[~free] = np.inf
        best = np.flatnonzero(distance <= distance.min() + 1e-9)
        rng = _random.Random(f"{self.seed}:{number}") if self.seed is not None else self._rng
        return int(best[rng.randrange(len(best))])

    def sample_independent(self, study: Any, trial: Any, name: str, distribution: Any) -> Any:
        return self.inner.sample_independent(study, trial, name, distribution)

    def before_trial(self, study: Any, trial: Any) -> None:
        if self.on_start is not None:
            self.on_start(study, trial)
        self.inner.before_trial(study, trial)

    def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
        self.inner.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.inner.reseed_rng()
        self._rng.seed()


def _ordinal(codec: ParamCodec, name: str) -> bool:
    from optuna.distributions import IntDistribution

    return isinstance(codec.distributions[name], IntDistribution)
