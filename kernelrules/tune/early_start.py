"""The start of a ``kernelrules tune`` run before its loop: the probe compiles, the perf model's first guesses
and seeds, and, with warm benchmark workers, the guesses timed while the space is judged.

:class:`EarlyStart` is a part of :class:`kernelrules.tune.driver.Tuner` (its base class), kept here so the driver
holds the loop: the methods read and set the tuner's state (its gate, study, workers, notes and start-up marks).
The order of a run's start (``Tuner.run``): the benchmark workers spawn first; the probes are sent; the first
guesses compile ahead while the study opens; with warm workers the guesses are judged and timed
(:meth:`EarlyStart._time_first_guesses`) while the space is judged in a thread
(:meth:`EarlyStart._judge_while_timing`); then the perf model's seeds are queued (:meth:`EarlyStart._seed`).
"""

from __future__ import annotations

import collections
import queue
import threading
import time
from typing import Any, Sequence

from ..config import KernelConfig
from . import records as rec
from .gate import Judgement
from .options import Candidate, perf_model_seeds, predicted_to_spill
from .startup import EARLY_GUESSES, guess_budget

#: How often the judging's thread looks whether an early guess's compiles are over (:meth:`_judge_compiled_guesses`).
GUESS_POLL_SECONDS = 0.05
#: How long after the probes' compiles the judging's thread still waits for an early guess's: a guess compiling as
#: long as they did is judged first, one that takes seconds more (a flash_attn tile over the shared memory) after.
GUESS_GRACE_SECONDS = 0.5


class EarlyStart:
    """The run's start-up steps of :class:`~kernelrules.tune.driver.Tuner` (see the module's docstring)."""

    def _compiled_first(self, config: KernelConfig) -> bool:
        """Whether the loop sends ``config``, asked now, straight to the compiled-stage gate."""
        judgement = self.gate.at_config_stage(config)
        return judgement.passed and not predicted_to_spill(judgement)

    def _send_probes(self) -> None:
        """The resource model's first probe compiles, sent before the study opens (:meth:`Gate.start_probes`); a
        kernel they cannot be made for is left to the judging, which meets the same problem and reports it."""
        self.probes_sent = 0  # this run's, read by the first guesses' budget
        try:
            self.probes_sent = self.gate.start_probes(self.configs)
        except Exception:  # noqa: BLE001 - an optimisation only: the judging reports what is wrong
            pass

    def _compile_first_guesses(self) -> list[KernelConfig]:
        """The first seeds of a new study, guessed from the configs' values, compile while the probes run and the
        study opens (:func:`~kernelrules.tune.startup.guess_budget`; nothing on a machine with few compile
        workers); the guesses whose compiles (their edge shapes too) all fit in the compiles ahead, best first.
        Called before the study opens, so a resumed study's guesses compile too, unused: the compile workers the
        probes leave, for the seconds the probes take."""
        o = self.options
        count, limit = guess_budget(len(self.configs), self.gate.compile_workers(), o.model_seeds,
                                    probes=getattr(self, "probes_sent", 0))
        if o.stage != "compiled" or o.sampler == "grid" or not count:
            return []
        try:
            guesses = (o.seeder or perf_model_seeds)(self.gate.plain_survivors(self.configs), self.arch,
                                                     dict(self.space.problem), count)
        except Exception:  # noqa: BLE001 - a kernel the judging is about to report on: no guesses
            return []
        if not guesses:
            return []
        return list(guesses)[:max(1, self.gate.compile_ahead(guesses, limit))]

    def _time_first_guesses(self, workers: list, guesses: Sequence[KernelConfig],
                            warming: Any) -> collections.deque[Candidate]:
        """With warm benchmark workers (a later problem of :func:`tune_many`), the first guess goes to a worker as
        soon as its own compiles are judged, before the whole space is: the judging waits for the probe compiles
        (0.4-0.8 s of an H200 run's 1.3-1.9 s to its first timing, with empty caches; 6.2 s for rope/large), the
        guesses do not need them (their compiled facts are the truth). The guesses compiled ahead are judged in the
        model's order: one the gate rejects (flash_attn/large's first, over the shared memory once compiled, in an
        H200 run) is told as such; the first that passes is sent at once, and up to :data:`EARLY_GUESSES` - 1 more
        are asked and returned unjudged: :meth:`_judge_while_timing` judges them in its thread and sends those that
        pass (judged here, each a blocking compile, they held the first guess's result unread: flash_attn/large on
        an H100, its second guess timed at 2.0 s and read at 8.0 s behind two such compiles). The guesses
        become the study's first seeds. A harness problem's edge shapes, read by the worker from its harness, are
        taken from the kept worker before the guesses compile. Not for a fresh worker (seconds from ready: nothing
        to gain), nor a study that has trials (its guesses compiled unused) or that another process seeds (guesses
        exist only at the compiled stage). ``warming``, the sampler's import thread, is joined before the first
        ask. Sets ``first_guess_sent``; returns the guesses asked after it, not judged yet."""
        early: collections.deque[Candidate] = collections.deque()
        self.seeding, self.first_guess_keys, self.first_guess_sent = None, set(), False  # this run's, decided here
        if not (guesses and self.warm_workers) or self.study.trials:  # guesses are for a new study
            return early
        if not self.claims.once("perf_model_seeds"):  # another process starting on the same new study seeds it
            self.seeding = "elsewhere"
            return early
        self.seeding = "here"
        if warming is not None:  # the ask must not run beside the sampler's import (run() joins it again: a no-op)
            warming.join()
        for guess in guesses:
            if len(early) + self.first_guess_sent >= EARLY_GUESSES:
                break
            self.first_guess_keys.add(rec.config_key(guess))
            self.study.enqueue_trial(self.codec.encode(guess.to_dict()), user_attrs={"kr_seeded": "perf_model"})
            candidate, _new = self._ask()
            if candidate is not None and self.first_guess_sent:
                early.append(candidate)  # judged in the judging's thread, while this one reads the results
                continue
            if candidate is None or not self._after_compile(candidate, self.gate.judge_now(candidate.config)):
                continue
            self._await_workers(workers[:1])
            self._send(workers[0], candidate)
            self.startup["first_guess_sent_s"] = candidate.sent_s  # the same instant as its record's sent_s
            self.first_guess_sent = True
        return early

    def _judge_while_timing(self, workers: list, early: collections.deque[Candidate]) -> dict[tuple, Judgement]:
        """Judge the early guesses asked after the first (``early``) and the space (:meth:`Gate.prejudge`, the probe
        compiles and the resource model) in a thread, while this one reads the benchmark workers' results and
        sends them the guesses that passed. Read only at the loop's first wait, a first guess's result sat in its
        pipe, the GPU idle, for as long as the judging took (rope/large on the H200: timed by 0.85 s, read at
        7.28 s; benchmarks/results/suite/pairs-a639a79-warm). The judging's thread uses the gate and its compile
        pool alone; this one uses the workers and the study (it records each guess's verdict). ``early`` holds,
        afterwards, the guesses that passed and were not sent; :attr:`guesses_to_compile`, those whose compiles
        were not over when the space's judging could start (:meth:`_judge_compiled_guesses`), judged since at the
        config stage, the ones that passed: the loop's compile stream takes them first."""
        outcome: dict[str, Any] = {}
        unjudged, verdicts = list(early), queue.SimpleQueue()
        early.clear()

        def judge() -> None:
            try:
                outcome["later"] = self._judge_compiled_guesses(unjudged, verdicts)
                outcome["judged"] = self.gate.prejudge(self.configs)
            except BaseException as exc:  # noqa: BLE001 - raised again in the run's thread
                outcome["error"] = exc

        def take_verdicts() -> None:
            while True:
                try:
                    candidate, judgement = verdicts.get_nowait()
                except queue.Empty:
                    return
                if self._after_compile(candidate, judgement):
                    early.append(candidate)

        thread = threading.Thread(target=judge, name="kernelrules-judge", daemon=True)
        thread.start()
        while thread.is_alive():
            take_verdicts()
            for worker in workers:
                if early and not worker.busy and worker.info and worker.process is not None and worker.process.ready:
                    self._send(worker, early.popleft())
            busy = [w for w in workers if w.busy]
            if busy:
                self._wait(busy, None, timeout=0.05)
            else:
                thread.join(0.05)
        thread.join()
        if "error" in outcome:
            raise outcome["error"]
        take_verdicts()
        self.guesses_to_compile = self._judged_at_config_stage(outcome["later"])
        return outcome["judged"]

    def _judge_compiled_guesses(self, unjudged: Sequence[Candidate], verdicts: queue.SimpleQueue) -> list[Candidate]:
        """In the judging's thread: compile ``unjudged`` ahead (those not compiling yet), and put the compiled-stage
        verdict of each whose compiles (its edge shapes' too) are over by :data:`GUESS_GRACE_SECONDS` after the
        probes' into ``verdicts``, as each ends; the others, not waited for, are returned. Judged one after the
        other, each a blocking compile, two flash_attn guesses over the shared memory (256x128 tiles, 3 s apiece)
        held the space's judging, and so the perf model's seeds, until 8.2 s in the H200 warm series at c972bf3
        (benchmarks/results/suite/pairs-c972bf3-warm); after the judging, the config stage rejects such guesses
        without a compile. A pool that cannot answer without waiting (no cache) judges them all, one after the
        other."""
        pending = list(unjudged)
        if not self.gate.answers_without_waiting():
            for candidate in pending:
                verdicts.put((candidate, self.gate.judge_now(candidate.config)))
            return []
        self.gate.compile_ahead([c.config for c in pending], limit=len(pending) * (1 + len(self.gate.edge_targets)))
        deadline = None
        while pending:
            for candidate in list(pending):
                judgement = self.gate.judge_if_compiled(candidate.config)
                if judgement is not None:
                    pending.remove(candidate)
                    verdicts.put((candidate, judgement))
            if deadline is None and pending and self.gate.probes_over():
                deadline = time.monotonic() + GUESS_GRACE_SECONDS
            if not pending or (deadline is not None and time.monotonic() >= deadline):
                return pending
            time.sleep(GUESS_POLL_SECONDS)
        return pending

    def _judged_at_config_stage(self, candidates: Sequence[Candidate]) -> list[Candidate]:
        """Early guesses not judged at the compiled stage before the space was: each judged at the config stage
        now (the resource model's predictions), a rejection recorded; the ones that passed, in order."""
        passed = []
        for candidate in candidates:
            judgement = candidate.judgement = self.gate.at_config_stage(candidate.config)
            if judgement.passed:
                passed.append(candidate)
            else:
                self._reject_at_config_stage(candidate, judgement)
        return passed

    def _seed(self) -> list[KernelConfig]:
        """Queue the perf model's best guesses first in a new study; the configs queued, in order (after the first
        guess, when it was asked already: :meth:`_time_first_guesses`)."""
        o = self.options
        if self.seeding == "elsewhere":
            return []
        if self.seeding is None:
            if self.study.trials or o.model_seeds <= 0 or o.sampler == "grid":
                return []
            if not self.claims.once("perf_model_seeds"):  # another process starting on the same new study seeds it
                return []
        passing = [c for c in self.configs if o.stage == "none" or self.gate.at_config_stage(c).passed]
        model = getattr(self.gate, "model", None)
        if o.seeder is None:  # the config stage's facts: its predictions, not made again
            judged = None if o.stage == "none" else (lambda c: self.gate.at_config_stage(c).facts)
            seeds = perf_model_seeds(passing, self.arch, dict(self.space.problem), o.model_seeds, model=model,
                                     facts=judged)
        else:
            try:
                seeds = o.seeder(passing, self.arch, dict(self.space.problem), o.model_seeds, model=model)
            except TypeError:
                seeds = o.seeder(passing, self.arch, dict(self.space.problem), o.model_seeds)
        taken = self.first_guess_keys  # asked already (sent, or judged and told)
        key = rec.config_key
        seeds = list({key(c): c for c in seeds if key(c) in self.space_keys and key(c) not in taken}.values())
        for config in seeds:
            self.study.enqueue_trial(self.codec.encode(config.to_dict()), user_attrs={"kr_seeded": "perf_model"})
        if self.first_guess_sent:
            self.notes.append(f"the perf model's first guess was timed before the space was judged (warm workers), "
                              f"{len(seeds)} more configs from the perf model queued after its first guesses")
        elif seeds:
            self.notes.append(f"{len(seeds)} configs from the perf model queued first")
        return seeds

    # -- a harness problem's edge shapes ---------------------------------------------------

    def _learn_harness_edges(self, workers: list, stream: Any, wanted: Sequence[KernelConfig]) -> None:
        """Compile each candidate at the edge shapes a harness problem's worker read from its harness
        (:mod:`kernelrules.tune.harness_edges`), the first candidates, already compiling, included."""
        if stream is not None and self._take_harness_edges(workers):
            for config in wanted:
                stream.side(self.gate.edge_jobs(config), config)

    def _take_harness_edges(self, workers: list) -> bool:
        """Hand the gate the edge-shape signatures a ready worker read from the problem's harness; whether the gate
        took them (it takes them once)."""
        signatures = (workers[0].info or {}).get("edge_signatures") if workers else None
        if not (signatures and self.gate.add_edge_signatures(signatures)):
            return False
        self.notes.append(f"the harness's {len(signatures)} edge-shape signature(s) are compiled beside each "
                          f"candidate")
        return True


__all__ = ["EarlyStart"]
