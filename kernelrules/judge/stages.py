"""The stages of one architecture's judging, and what they share (:class:`ArchJudging`).

:meth:`kernelrules.judge.pipeline.ConfigJudge.add_stages` puts them in its table, in this order:
``predict`` learns the resource model (or, for a lint of a few configs, puts that off),
``config`` judges every config on predicted facts, ``compile`` cross-compiles the survivors,
``compiled`` judges them again on their compiled facts, ``repairs`` compiles each suggested
repair once. Each stage reads and extends the :class:`ArchJudging` in place, and calls back
into the judge (its engine, its compile pool, its resource model learning).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..compile.compilejob import CompileResult
from ..config import KernelConfig
from ..predict.resource_model import ResourceModel
from .engine import Verdict
from .facts import compiled_facts
#: Facts copied into the JSON record (the rest stays available in Python), declared in the fact catalogue.
from .facts_catalogue import REPORTED_FACTS

#: The :class:`kernelrules.judge.pipeline.ConfigJudge` a stage calls back into (not imported: it imports this).
Judge = Any


@dataclass
class PruneRecord:
    """The judgement of one config on one architecture."""

    verdict: Verdict
    facts: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The record format of ``kernelrules prune --format json``."""
        v = self.verdict
        return {"config": v.config.to_dict(), "arch": v.arch, "verdict": v.verdict, "stage": v.stage,
                "diagnostics": [d.to_json() for d in v.diagnostics],
                "facts": {k: self.facts[k] for k in REPORTED_FACTS if k in self.facts},
                "repair": None if v.repair is None else v.repair.to_dict()}


@dataclass
class ArchJudging:
    """What the stages of one architecture's judging share: the inputs, the model and the records so far."""

    configs: list[KernelConfig]
    arch: Any
    problem: Mapping[str, Any]
    kernel: dict[str, Any]
    probe: bool
    model: ResourceModel | None
    records: list[PruneRecord] = field(default_factory=list)
    #: The compile stage's survivors, each with its compile result and (AMD) its VGPR need.
    compiled: list[tuple[PruneRecord, CompileResult, Any]] = field(default_factory=list)
    #: Whether the configs are compiled in this judging (the compile and compiled stages run).
    compiling: bool = False
    #: Whether a few configs are compiled before any probe (``judge_arch(defer_probes=True)``).
    defer_probes: bool = False
    #: The model's learning, put off until a rejection needs predictions (:func:`predict_stage`).
    deferred: Callable[[], ResourceModel | None] | None = None

    def predict(self, config: KernelConfig) -> dict[str, Any]:
        """The resource model's predicted facts of ``config`` (none without a model)."""
        return self.model.predict(config) if self.model is not None else {}

    def learn_deferred(self) -> None:
        """Learn the model now if its probes were put off: a rejection's repair search needs predictions."""
        if self.deferred is not None:
            learn, self.deferred = self.deferred, None
            self.model = learn()


#: One named stage: it reads and extends the architecture's judging in place.
Stage = Callable[[Judge, ArchJudging], None]


#: With ``defer_probes``, a kernel with at most this many configs that pass the plain rules is compiled
#: before any probe: the probes (two to four compiles) would cost about as much as the compiles they could
#: spare. In a cold lint of fla-core (482 kernels) they were 759 of 2,800 compiles and 586 of 1,600 worker
#: seconds, 296 s of them for its 166 single-config kernels with a dot, and spared 4 compiles in all.
COMPILE_FIRST_CONFIGS = 4


def predict_stage(judge: Judge, judging: ArchJudging) -> None:
    """Learn the resource model from probe compiles, unless one was given or probing is off; with
    ``defer_probes``, put the learning off for a few configs that are compiled anyway."""
    if judging.model is not None or not judging.probe:
        return
    candidates = judge.plain_survivors(judging.configs, judging.arch)
    if not candidates:
        return
    learn = lambda: judge.learn_model(candidates, judging.arch)  # noqa: E731
    if judging.compiling and judging.defer_probes and len(candidates) <= COMPILE_FIRST_CONFIGS:
        judging.deferred = learn
        return
    judging.model = learn()


def config_stage(judge: Judge, judging: ArchJudging) -> None:
    """Judge every config on the predicted facts (predicted once each); find a repair for each rejected one.
    Without the deferred model's predictions, a rejection learns the model and judges every config again."""
    engine, arch, kernel = judge.engine, judging.arch, judging.kernel
    predicted: dict[int, dict[str, Any]] = {}  # by id: the configs stay in judging.configs meanwhile
    facts_of = lambda c: predicted.get(id(c)) or predicted.setdefault(id(c), judging.predict(c))  # noqa: E731
    verdicts = engine.judge_many(judging.configs, arch, kernel=kernel, facts_fn=facts_of)
    if judging.deferred is not None and any(v.rejected for v in verdicts):
        judging.learn_deferred()
        predicted.clear()
        verdicts = engine.judge_many(judging.configs, arch, kernel=kernel, facts_fn=facts_of)
    for verdict in verdicts:
        facts = facts_of(verdict.config)
        if verdict.rejected:
            found = engine.repair(verdict.config, arch, kernel=kernel, facts=facts, problem=judging.problem,
                                  facts_fn=judging.predict, frozen=judge.target.fixed)
            if found is not None:
                verdict.repair, verdict.repair_steps = found
        judging.records.append(PruneRecord(verdict, facts))


def compile_stage(judge: Judge, judging: ArchJudging) -> None:
    """Compile every config the config stage passed (and, on AMD, find its VGPR need)."""
    arch = judging.arch
    survivors = [r for r in judging.records if not r.verdict.rejected]
    configs = [r.verdict.config for r in survivors]
    results = judge.compile_many(configs, arch, f"compiling {arch.name}")
    judging.compiled = list(zip(survivors, results, judge.vgpr_need(configs, results, arch)))


def compiled_stage(judge: Judge, judging: ArchJudging) -> None:
    """Judge each compiled survivor again on its compiled facts (with its stage twins before it)."""
    from ..compile.stage_twins import binds_num_stages

    twins = stage_twins_before([(r.verdict.config, res.ok) for r, res, _ in judging.compiled])
    if binds_num_stages(str(judge.target.path), judge.target.name):  # num_stages reaches the kernel itself
        twins = [0] * len(twins)
    for (record, result, need), before in zip(judging.compiled, twins):
        config = record.verdict.config
        deferred = judging.deferred is not None
        extra = {"stage_twins_before": before} if result.ok else {}
        verdict, facts = _judge_compiled(judge, judging, config, result, need, record.facts, repair=not deferred,
                                         extra=extra)
        if verdict.rejected and deferred:
            # The repair search needs the model's predictions (and the dot's dimensions) after all.
            judging.learn_deferred()
            verdict, facts = _judge_compiled(judge, judging, config, result, need, judging.predict(config),
                                             extra=extra)
        verdict.stage = "compiled"
        record.verdict, record.facts = verdict, facts


def stage_twins_before(configs: list[tuple[KernelConfig, bool]]) -> list[int]:
    """For each (config, compiled ok) of a list, how many compiled configs before it differ from it only in
    ``num_stages``: on a kernel without a loop they are the same binary (:mod:`kernelrules.compile.stage_twins`)."""
    from ..predict.ranking import twin_key

    seen: dict[tuple, int] = {}
    out = []
    for config, ok in configs:
        key = twin_key(config)
        out.append(seen.get(key, 0))
        if ok:
            seen[key] = seen.get(key, 0) + 1
    return out


def _judge_compiled(judge: Judge, judging: ArchJudging, config: KernelConfig, result: CompileResult,
                    need: Any, predicted: Mapping[str, Any], repair: bool = True,
                    extra: Mapping[str, Any] | None = None) -> tuple[Verdict, dict[str, Any]]:
    """One compiled config's verdict (a rejected one with its repair, unless ``repair`` is false) and facts
    (with ``extra``: facts from the list the config was judged in)."""
    arch = judging.arch
    facts = compiled_facts(result, arch, num_warps=config.num_warps or 4, timeout=judge.timeout, predicted=predicted)
    facts.update(extra or {})
    if need is not None and result.ok:
        facts["vgpr_need"] = need
    verdict = judge.engine.check(config, arch, kernel=judging.kernel, facts=facts, problem=judging.problem,
                                 repair=repair, facts_fn=judging.predict, stage="compiled")
    return verdict, facts


def repairs_stage(judge: Judge, judging: ArchJudging) -> None:
    """Compile each suggested repair once; drop the suggestion if the compiled facts reject it."""
    arch = judging.arch
    records = [r for r in judging.records if r.verdict.repair is not None]
    repairs = {r.verdict.repair.key(): r.verdict.repair for r in records}
    configs = list(repairs.values())
    ok = {}
    for config, result in zip(configs, judge.compile_many(configs, arch, f"checking repairs {arch.name}")):
        ok[config.key()] = passes_compiled(judge, config, arch, result, judging.problem)
    for record in records:
        if not ok.get(record.verdict.repair.key(), False):
            record.verdict.repair, record.verdict.repair_steps = None, ()


def passes_compiled(judge: Judge, config: KernelConfig, arch: Any, result: CompileResult,
                    problem: Mapping[str, Any] | None = None) -> bool:
    """Whether the rules pass ``config`` on the facts of its compile ``result`` (a failed compile never passes)."""
    facts = compiled_facts(result, arch, num_warps=config.num_warps or 4, timeout=judge.timeout)
    kernel, problem = dict(judge.target.kernel_info), dict(problem or {})
    return not judge.engine.judge(config, arch, kernel=kernel, facts=facts, problem=problem).rejected
