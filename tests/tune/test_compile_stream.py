"""tune's compile stream (kernelrules.tune.compile_stream) and what it is built on (kernelrules.compile.feed)."""

from __future__ import annotations

import select
import time

import pytest

from kernelrules.compile.feed import JobFeed, Signal
from kernelrules.config import KernelConfig
from kernelrules.tune.compile_stream import CompileStream


def readable(signal: Signal) -> bool:
    return bool(select.select([signal], [], [], 0)[0])


def test_a_signal_wakes_a_select_until_it_is_cleared():
    signal = Signal()
    assert not readable(signal)
    signal.set()
    signal.set()
    assert readable(signal)
    signal.clear()
    assert not readable(signal)
    signal.close()


def test_a_feed_hands_over_jobs_in_order_and_ends_when_closed():
    feed = JobFeed()
    feed.put("a")
    feed.put("b")
    assert feed.open and readable(feed.signal)
    assert feed.take() == ["a", "b"] and not readable(feed.signal)
    feed.put("c")
    feed.close()
    assert feed.open, "a job put before the close is still to be taken"
    feed.put("d")  # after the close: ignored
    assert feed.take() == ["c"] and not feed.open and not feed.abandoned
    feed.close(abandon=True)
    assert feed.abandoned


# --------------------------------------------------------------------------- tune's compile stream


def fake_pool(feed: JobFeed):
    """A stand-in for ``pool.run(feed)``: answers each job with its own BLOCK, as it is taken."""
    while feed.open and not feed.abandoned:
        select.select([feed.signal], [], [], 0.2)
        for job in feed.take():
            yield job, job["BLOCK"]


def test_the_stream_compiles_a_config_once_and_hands_out_each_verdict_once():
    jobs = []

    def job(config):
        jobs.append(config.constexprs["BLOCK"])
        return dict(config.constexprs)

    stream = CompileStream(lambda config, result: ("verdict", result), job, fake_pool)
    a, b = KernelConfig(constexprs={"BLOCK": 64}), KernelConfig(constexprs={"BLOCK": 128})
    stream.want(a)
    stream.want(a)  # compiling already: nothing new
    stream.want(b)
    found: dict = {}
    deadline = time.monotonic() + 30
    while len(found) < 2 and time.monotonic() < deadline:
        stream.wait(1.0)
        found.update(stream.pop([a, b]))
    assert jobs == [64, 128]
    assert found == {a.key(): ("verdict", 64), b.key(): ("verdict", 128)}
    assert stream.pop([a, b]) == {}  # handed out once
    stream.want(a)  # wanted again after its verdict was taken: compiled again (the pool's cache answers it)
    deadline = time.monotonic() + 30
    while not stream.pop([a]):
        assert time.monotonic() < deadline
        stream.wait(1.0)
    assert jobs == [64, 128, 64]
    stream.close()


def test_an_error_in_the_compile_thread_is_raised_by_the_next_pop():
    def judge(config, result):
        raise RuntimeError("the rules engine broke")

    stream = CompileStream(judge, lambda config: dict(config.constexprs), fake_pool)
    config = KernelConfig(constexprs={"BLOCK": 64})
    stream.want(config)
    stream.wait(30)
    with pytest.raises(RuntimeError, match="the rules engine broke"):
        stream.pop([config])
    stream.close()


def test_side_jobs_are_compiled_after_their_config_and_give_no_verdict():
    taken = []

    def recording_pool(feed):
        for job, result in fake_pool(feed):
            taken.append(job["BLOCK"])
            yield job, result

    stream = CompileStream(lambda config, result: ("verdict", result), lambda config: dict(config.constexprs),
                           recording_pool, side_jobs=lambda config: [{"BLOCK": config.constexprs["BLOCK"] + 1}])
    config = KernelConfig(constexprs={"BLOCK": 64})
    stream.want(config)
    found: dict = {}
    deadline = time.monotonic() + 30
    while len(taken) < 2 and time.monotonic() < deadline:
        stream.wait(1.0)
        found.update(stream.pop([config]))
    found.update(stream.pop([config]))
    assert taken == [64, 65] and found == {config.key(): ("verdict", 64)}
    stream.close()


class Verdict:
    def __init__(self, passed: bool) -> None:
        self.passed = passed


def held_side_pool(release):
    """A pool that answers a config's own job at once and its side jobs (BLOCK + 1) only once ``release`` is set."""
    import threading

    assert isinstance(release, threading.Event)

    def run(feed: JobFeed):
        waiting = []
        while feed.open and not feed.abandoned:
            select.select([feed.signal], [], [], 0.05)
            for job in feed.take():
                if job.get("side"):
                    waiting.append(job)
                else:
                    yield job, job["BLOCK"]
            if release.is_set():
                while waiting:
                    job = waiting.pop(0)
                    yield job, job["BLOCK"]

    return run


def pop_within(stream, config, seconds: float) -> dict:
    found: dict = {}
    deadline = time.monotonic() + seconds
    while not found and time.monotonic() < deadline:
        stream.wait(0.05)
        found = stream.pop([config])
    return found


@pytest.mark.parametrize("passed", [True, False])
def test_a_passing_verdict_waits_for_its_side_jobs_and_a_failing_one_does_not(passed):
    """The benchmark worker must find a config's edge-shape binaries in the Triton cache when it checks the config:
    a verdict that lets the config be launched is handed out only after those compiles are answered."""
    import threading

    release = threading.Event()
    side = lambda config: [{"BLOCK": config.constexprs["BLOCK"] + 1, "side": True},  # noqa: E731
                           {"BLOCK": config.constexprs["BLOCK"] + 2, "side": True}]
    stream = CompileStream(lambda config, result: Verdict(passed), lambda config: dict(config.constexprs),
                           held_side_pool(release), side_jobs=side)
    config = KernelConfig(constexprs={"BLOCK": 64})
    stream.want(config)
    if passed:
        assert pop_within(stream, config, 0.5) == {}, "handed out while its edge shapes were still compiling"
        release.set()
        found = pop_within(stream, config, 30)
    else:
        found = pop_within(stream, config, 30)  # rejected: never launched, so nothing to wait for
        release.set()
    assert list(found) == [config.key()] and found[config.key()].passed is passed
    assert stream.pop([config]) == {}
    stream.close()


def test_side_jobs_answered_before_their_config_hold_nothing_back():
    """Edge-shape binaries already cached are answered first: the verdict then goes out when the config's own compile
    ends."""
    def sides_first(feed: JobFeed):
        while feed.open and not feed.abandoned:
            select.select([feed.signal], [], [], 0.05)
            taken = feed.take()
            for job in sorted(taken, key=lambda job: not job.get("side")):
                yield job, job["BLOCK"]

    stream = CompileStream(lambda config, result: Verdict(True), lambda config: dict(config.constexprs), sides_first,
                           side_jobs=lambda config: [{"BLOCK": 1, "side": True}])
    config = KernelConfig(constexprs={"BLOCK": 64})
    stream.want(config)
    assert list(pop_within(stream, config, 30)) == [config.key()]
    stream.close()


def test_side_jobs_learned_later_hold_back_a_verdict_not_yet_handed_out():
    """A harness problem's edge shapes are learned when its worker is ready, after the first seeds were wanted (and
    maybe judged): their verdicts then wait for those compiles too; a config whose verdict was taken is not held."""
    import threading

    release = threading.Event()
    stream = CompileStream(lambda config, result: Verdict(True), lambda config: dict(config.constexprs),
                           held_side_pool(release))
    judged, taken = KernelConfig(constexprs={"BLOCK": 64}), KernelConfig(constexprs={"BLOCK": 32})
    stream.want(taken)
    assert list(pop_within(stream, taken, 30)) == [taken.key()]
    stream.want(judged)
    deadline = time.monotonic() + 30
    while judged.key() not in stream._done and time.monotonic() < deadline:  # judged, not popped
        time.sleep(0.01)
    stream.side([{"BLOCK": 65, "side": True}], judged)
    stream.side([{"BLOCK": 33, "side": True}], taken)  # handed out already: nothing to hold
    assert pop_within(stream, judged, 0.5) == {}
    release.set()
    assert list(pop_within(stream, judged, 30)) == [judged.key()]
    stream.close()
