"""Gate Optuna trials with kernelrules: a config the rules reject is never run.

    from kernelrules.adapters.optuna_helper import RulesGate

    gate = RulesGate(matmul_kernel, "ada", args=(a, b, c, M, N, K, *strides), fixed={"GROUP_SIZE_M": 8})

    def objective(trial):
        params = gate.sample(trial, {"BLOCK_M": [64, 128, 256], "BLOCK_N": [64, 128, 256],
                                     "BLOCK_K": [32, 64], "num_warps": [4, 8], "num_stages": [2, 3, 4, 5]})
        return benchmark(params)          # only configs that pass get here

    study.optimize(objective, n_trials=100)

A rejected trial gets the user attribute ``"kernelrules"`` (``{"verdict": "reject", "arch",
"codes", "message", "repair"}``, plain JSON) and raises ``optuna.TrialPruned`` before
the objective spends any time on it. With ``repair=True`` it is not pruned: the gate
returns the nearest passing config instead (``"verdict": "repaired"``, with the config
under ``"evaluated"``), so the trial measures a neighbour of what the sampler proposed and
the sampler learns that value for its proposal. Configs without a passing neighbour
are pruned either way.

Optuna is an optional dependency (``pip install kernelrules[optuna]``); this module
imports it only when a trial is gated. The judge (its compile workers and the resource
model it learns once) lives as long as the gate; ``close()`` or a ``with`` block ends it.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Mapping, Sequence

from .kernel_prune import KernelJudge, check_parameters
from .prune_api import Rejection, build_result, launch_inputs

#: The user attribute a gated trial carries.
USER_ATTR = "kernelrules"

#: At most this many points of a ``sample`` space are read to choose the resource model's probes.
PRIME_POINTS = 4096


class RulesGate:
    """Prune (or repair) Optuna trials whose kernel config kernelrules rejects on ``arch``.

    ``kernel`` is the Triton kernel (a ``JITFunction`` or the Autotuner/Heuristics around
    it); the launch is given as ``signature`` (``{"a_ptr": "*fp16", "M": 4096, ...}``) or
    example ``args`` as for :func:`kernelrules.prune`; ``fixed`` holds constexprs every
    trial shares (not tuned, never repaired). Safe to share between the threads of
    ``study.optimize(n_jobs=...)``.
    """

    def __init__(self, kernel: Any, arch: Any = None, *, signature: Mapping[str, Any] | None = None,
                 args: Any = None, fixed: Mapping[str, Any] | None = None, problem: Mapping[str, Any] | None = None,
                 compile: bool = False, repair: bool = False) -> None:
        runtime, constexprs, heuristic_args = launch_inputs(kernel, signature, args)
        self.repair = repair
        self.problem = dict(problem or {})
        self._judge = KernelJudge(kernel, arch, runtime, {**constexprs, **(fixed or {})},
                                  heuristic_args=heuristic_args, compile=compile)
        self._memo: dict[tuple, Rejection | None] = {}
        self._lock = threading.Lock()
        self._checked = self._primed = False

    @property
    def arch(self) -> str:
        """The architecture the gate judges for (``sm_89``)."""
        return self._judge.arch.name

    def check(self, params: Mapping[str, Any]) -> Rejection | None:
        """None when ``params`` pass; else the :class:`~kernelrules.adapters.prune_api.Rejection`
        (codes, messages, and the nearest passing config as a dict, or None).

        Raises a :class:`~kernelrules.errors.KernelrulesError` when the params name
        parameters the kernel does not have or the launch does not fit the kernel.
        """
        params = dict(params)
        with self._lock:
            config = self._judge.prepare(params)
            key = config.key()
            if key not in self._memo:
                check_parameters(self._judge.fn, [config])
                if not self._checked:  # the launch against the kernel: once
                    self._judge.check([config])
                    self._checked = True
                (record,) = self._judge.judge([config], self.problem)
                result = build_result(self.arch, [params], [record], self._judge.added_names)
                self._memo[key] = result.rejected[0] if result.rejected else None
            return self._memo[key]

    def __call__(self, trial: Any, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The params to evaluate (``trial.params`` unless given): themselves when they pass, the
        repair with ``repair=True``; otherwise record why on the trial and raise ``TrialPruned``."""
        params = dict(trial.params if params is None else params)
        rejection = self.check(params)
        if rejection is None:
            return params
        info = {"verdict": "reject", "arch": self.arch, "codes": rejection.codes, "message": rejection.message,
                "repair": rejection.repair}
        if self.repair and rejection.repair is not None:
            trial.set_user_attr(USER_ATTR, {**info, "verdict": "repaired", "evaluated": rejection.repair})
            return dict(rejection.repair)
        trial.set_user_attr(USER_ATTR, info)
        import optuna

        raise optuna.TrialPruned(f"kernelrules rejects it on {self.arch}: {', '.join(rejection.codes)}")

    def sample(self, trial: Any, space: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
        """Suggest every parameter of ``space`` (name -> choices) as a categorical, then gate them."""
        self._prime(space)
        params = {name: trial.suggest_categorical(name, list(choices)) for name, choices in space.items()}
        return self(trial, params)

    def _prime(self, space: Mapping[str, Sequence[Any]]) -> None:
        """Learn the resource model from the space, once: probes among its cheapest points."""
        names = list(space)
        points = itertools.islice(itertools.product(*(space[n] for n in names)), PRIME_POINTS)
        with self._lock:
            if self._primed:
                return
            self._primed = True
            self._judge.learn([self._judge.prepare(dict(zip(names, values))) for values in points])

    def close(self) -> None:
        """Stop the compile workers."""
        self._judge.close()

    def __enter__(self) -> "RulesGate":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = ["RulesGate", "USER_ATTR"]
