"""Smoke test of every GPU path of ``kernelrules tune``: one command, about 2-3 minutes, PASS/FAIL per check.

Run on the GPU machine from the repository root (kernelrules importable, with optuna;
torch and triton there already):

    python3 benchmarks/h200_tune_smoke.py --out OUT_DIR [--arch h200] [--checks env,a,b,c,d,e,f]

Each check runs in its own process with a time limit, prints one ``PASS``/``FAIL``/``SKIP``
line with the evidence, and writes ``OUT/<check>.json``; ``OUT/smoke.json`` has them all.
The exit code is the number of failed checks.

* ``env``: the GPU, torch/triton versions, ``torch.AcceleratorError``, the L2 size, and
  ``triton.testing.do_bench(..., return_mode="all")`` giving run times in ms;
* ``a``:   ``kernelrules tune examples/matmul.tune.yaml --arch ARCH --trials 12 --json`` (the CLI)
  completes, names a winner, records timings (do_bench, with spreads) and measures the
  baseline (torch.matmul) in the final interleaved rounds; no crash or launch_error;
* ``b``:   the deliberately wrong matmul (tests/fixtures/tune/wrong_matmul.yaml) on the GPU:
  its three wrong configs fail the correctness gates (one only on the edge shape), the
  correct one wins;
* ``c``:   an illegal address (tests/fixtures/tune/faulty.py, FAULT=2): the config is
  ``illegal_address``, its worker is replaced, and the correct configs queued right after
  it are timed (not ``crash``);
* ``d``:   a hang (FAULT=1) is killed at ``--bench-timeout`` (10 s) as ``timeout``; the
  next config is timed;
* ``e``:   resume: a CLI run (tests/fixtures/tune/matmul_small.yaml, 16 trials) is killed
  (SIGKILL to its process group) after 4 trials, then resumed to 16: every record from
  before the kill is still there, interrupted trials are queued again, nothing is
  running, 16 distinct configs judged, a winner;
* ``f``:   ``kernelrules report`` on the study of ``a`` writes HTML (plots if matplotlib
  imports; else tables only, and the check says the plots were skipped).

``--interpret`` runs the same checks on a CPU under ``TRITON_INTERPRET=1`` (``a`` then
tunes matmul_small: the 4096^3 matmul is far too slow to interpret), to check the script.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "tune"
MATMUL = REPO / "examples" / "matmul.tune.yaml"
SMALL = FIXTURES / "matmul_small.yaml"
CHECKS = ("env", "a", "b", "c", "d", "e", "f")
TITLES = {"env": "GPU, torch, triton, do_bench", "a": "tune the matmul (CLI --json)",
          "b": "wrong kernel rejected by the gates", "c": "illegal address kills only its worker",
          "d": "hang killed at --bench-timeout", "e": "resume after a kill", "f": "kernelrules report"}
LIMITS = {"env": 90, "a": 200, "b": 100, "c": 120, "d": 120, "e": 200, "f": 90}
TIMED = ("better", "slower")
STUDIES = {"a": ("a",), "b": ("b.db",), "c": ("c.db",), "d": ("d.db",), "e": ("e",)}


# --------------------------------------------------------------------------- helpers


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "kernelrules", *args]


#: the working directory of every command: not the repository root, where ``python -m kernelrules`` would
#: import the checkout's kernelrules/ (no arch_profiles/ or rules/ inside: they are mapped in only when
#: installed) ahead of the installed wheel
WORKDIR = [Path.cwd()]


def _env() -> dict:
    env = dict(os.environ)
    # the kernelrules the script sees (an installed wheel, or this checkout) is the one the CLI runs
    import kernelrules

    root = str(Path(kernelrules.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def _run(cmd: list[str], timeout: float, log: Path) -> tuple[int | None, str, str]:
    """Run a command in its own session; kill its process group at the time limit. (rc or None, out, err)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(WORKDIR[0]),
                            env=_env(), start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        rc = None
    log.write_text(f"$ {' '.join(cmd)}\n--- rc {rc}\n--- stdout\n{out}\n--- stderr\n{err}\n")
    return rc, out, err


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the session this script started for it: its workers and compilers
    except (ProcessLookupError, PermissionError):
        proc.kill()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        pass


def _json_lines(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def _tail(text: str, lines: int = 6) -> str:
    return " | ".join(line for line in text.strip().splitlines()[-lines:])


class Check:
    def __init__(self, name: str) -> None:
        self.name, self.problems, self.facts = name, [], {}

    def expect(self, ok: bool, problem: str) -> bool:
        if not ok:
            self.problems.append(problem)
        return ok

    def result(self) -> dict:
        return {"check": self.name, "ok": not self.problems, "problems": self.problems, "facts": self.facts}


def _api_tune(args, space: Path, storage: Path, order: list[dict] | None = None, **options):
    """Tune through the Python API; ``order``: configs queued first, in this order (a seeder)."""
    from kernelrules.tune.driver import TuneOptions, Tuner

    if order is not None:
        def seeder(passing, arch, problem, count, model=None):
            return [c for want in order for c in passing
                    if all(c.to_dict().get(k) == v for k, v in want.items())]

        options.update(seeder=seeder, model_seeds=len(order), sampler="tpe")
    options.setdefault("cache_dir", str(Path(args.out) / "compile-cache"))
    return Tuner(space, TuneOptions(arch=args.arch, interpret=args.interpret, storage=str(storage),
                                    gpus=None if args.interpret else [args.gpu], **options)).run()


def _faulty_space(args) -> Path:
    """faulty.py over BLOCK x FAULT, written into OUT with the kernel's absolute path."""
    path = Path(args.out) / "faulty.tune.yaml"
    text = (FIXTURES / "faulty.yaml").read_text()
    text = text.replace("kernel: faulty.py:faulty_kernel", f"kernel: {FIXTURES / 'faulty.py'}:faulty_kernel")
    text = text.replace("BLOCK: [16]", "BLOCK: [16, 32]")
    path.write_text(text)
    return path


def _statuses(records: list[dict], key: str) -> list[tuple]:
    return [(r["trial"], r["config"].get(key), r["config"].get("BLOCK"), r["status"], (r.get("error") or "")[:160])
            for r in records if r.get("status") != "duplicate"]


# --------------------------------------------------------------------------- the checks


def check_env(args, check: Check) -> None:
    import torch
    import triton

    f = check.facts
    f.update(torch=torch.__version__, triton=triton.__version__, python=sys.version.split()[0],
             cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
             accelerator_error=hasattr(torch, "AcceleratorError"))
    try:
        import matplotlib  # noqa: F401

        f["matplotlib"] = True
    except ImportError:
        f["matplotlib"] = False
    if args.interpret:
        f["device"] = "cpu (--interpret)"
        return
    if not check.expect(torch.cuda.is_available(), "torch.cuda.is_available() is False"):
        return
    props = torch.cuda.get_device_properties(0)
    f.update(device=torch.cuda.get_device_name(0), capability=list(torch.cuda.get_device_capability(0)),
             sm_count=props.multi_processor_count, l2_bytes=getattr(props, "L2_cache_size", None),
             memory_gib=round(props.total_memory / 2**30, 1), device_count=torch.cuda.device_count())
    from kernelrules.arch import load_arch
    from kernelrules.tune.target import sku_for_device

    flat = load_arch(args.arch).flat()
    f["profile"] = {k: flat.get(k) for k in ("sm_count", "l2_bytes", "dram_bandwidth_gbps", "fp16_tensor_tflops_dense")}
    f["sku_from_name"] = sku_for_device(f["device"], flat.get("skus") or [])
    check.expect(flat.get("sm_count") in (None, props.multi_processor_count),
                 f"--arch {args.arch} says {flat.get('sm_count')} SMs, the GPU has {props.multi_processor_count}")
    from triton.testing import do_bench

    x = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    times = do_bench(lambda: x @ x, warmup=10, rep=50, return_mode="all")
    check.expect(isinstance(times, list) and len(times) >= 5 and all(isinstance(t, float) for t in times),
                 f"do_bench(return_mode='all') gave {type(times).__name__} {str(times)[:80]}")
    if times:
        median = sorted(times)[len(times) // 2]
        f["do_bench_4096_fp16_ms"] = round(median, 4)
        f["do_bench_runs"] = len(times)
        f["do_bench_tflops"] = round(2 * 4096**3 / (median * 1e-3) / 1e12, 1)
        check.expect(0.01 < median < 50, f"4096^3 fp16 matmul timed at {median} ms: not milliseconds?")
    # what an illegal address raises in this torch (checked in a throwaway process: it ruins the context)
    probe = ("import torch, triton, triton.language as tl\n"
             "@triton.jit\ndef k(p):\n    tl.store(p + 0x7FFF00000000 + tl.arange(0, 16), 1.0)\n"
             "y = torch.empty(16, device='cuda')\n"
             "try:\n    k[(1,)](y); torch.cuda.synchronize(); print('NO ERROR')\n"
             "except BaseException as e:\n"
             "    from kernelrules.tune.feedback import classify_exception, summary\n"
             "    print(type(e).__module__, type(e).__name__, isinstance(e, RuntimeError), '|',\n"
             "          classify_exception(e, 'check'), '|', summary(str(e)))\n")
    script = Path(args.out) / "env_illegal_probe.py"  # a file: @triton.jit reads its function's source
    script.write_text(probe)
    rc, out, err = _run([sys.executable, str(script)], 60, Path(args.out) / "env-illegal-probe.log")
    f["illegal_probe"] = out.strip() or _tail(err)
    check.expect("illegal_address" in out, f"an illegal store is not classified illegal_address: {f['illegal_probe']}")


def check_a(args, check: Check) -> None:
    folder = Path(args.out) / "a"
    folder.mkdir(exist_ok=True)
    space = SMALL if args.interpret else MATMUL
    cmd = _cli("tune", str(space), "--arch", args.arch, "--trials", "12" if not args.interpret else "6", "--json",
               "--storage", str(folder / "matmul.db"), "--top-k", "3", "--rounds", "3", "--time-budget",
               "100", "--cache-dir", str(Path(args.out) / "compile-cache"))
    cmd += ["--interpret", "--stage", "config"] if args.interpret else ["--gpus", args.gpu]
    started = time.time()
    rc, out, err = _run(cmd, LIMITS["a"] - 10, folder / "cli.log")
    lines = _json_lines(out)
    trials = [line for line in lines if line.get("type") == "trial"]
    summary = next((line for line in lines if line.get("type") == "summary"), None)
    f = check.facts
    f.update(rc=rc, wall_s=round(time.time() - started, 1), trials=len(trials),
             statuses=dict(collections.Counter(t["status"] for t in trials)))
    if not check.expect(rc == 0 and summary is not None, f"exit code {rc}, no summary: {_tail(err)}"):
        return
    final = summary.get("final") or {}
    winner = summary.get("winner") or {}
    f.update(winner=winner.get("triton_config"), winner_ms=winner.get("ms"), baseline_ms=final.get("baseline_ms"),
             device=final.get("device"), funnel=summary.get("funnel"), notes=summary.get("notes"),
             gaps=summary.get("gaps"))
    check.expect(bool(winner.get("triton_config")), "no winner named")
    check.expect(bool(final.get("baseline_ms")) and final["baseline_ms"] > 0, "the baseline was not measured")
    top = final.get("top") or []
    check.expect(bool(top) and all(len(t.get("rounds_ms") or []) >= 1 for t in top),
                 "the final interleaved rounds have no times")
    timed = [t for t in trials if t["status"] in TIMED]
    check.expect(bool(timed), "no trial was timed")
    for t in timed:
        timing = t.get("timing") or {}
        if not check.expect(isinstance(t.get("spread"), (int, float)) and timing.get("runs", 0) >= 1
                            and (args.interpret or timing.get("method") == "do_bench"),
                            f"trial {t['trial']}: timing without a spread or runs: {timing}"):
            break
    bad = [t for t in trials if t["status"] in ("crash", "launch_error")]
    check.expect(not bad, f"{len(bad)} trial(s) crash/launch_error (a tool bug?): "
                          f"{[(t['trial'], t['status'], (t.get('error') or '')[:200]) for t in bad[:3]]}")
    if winner.get("ms") and summary.get("flops"):
        f["winner_tflops"] = round(summary["flops"] / (winner["ms"] * 1e-3) / 1e12, 1)
    if winner.get("ms") and final.get("baseline_ms"):
        f["winner_vs_baseline_speed"] = round(final["baseline_ms"] / winner["ms"], 3)
    if not args.interpret:
        check.expect(summary.get("timings_meaningful") is True, "timings_meaningful is not True")


def check_b(args, check: Check) -> None:
    result = _api_tune(args, FIXTURES / "wrong_matmul.yaml", Path(args.out) / "b.db", stage="none", sampler="grid",
                       top_k=2, rounds=2, bench_timeout=60)
    by_tile = {(r["config"]["BLOCK_M"], r["config"]["BLOCK_N"]): r for r in result.records
               if r.get("status") != "duplicate"}
    check.facts["statuses"] = {f"{m}x{n}": r["status"] for (m, n), r in sorted(by_tile.items())}
    check.facts["errors"] = {f"{m}x{n}": (r.get("error") or "")[:200] for (m, n), r in sorted(by_tile.items())}
    if not check.expect(set(by_tile) == {(16, 16), (16, 32), (32, 16), (32, 32)},
                        f"configs judged: {sorted(by_tile)}"):
        return
    for tile in ((16, 32), (32, 32)):
        r = by_tile[tile]
        check.expect(r["status"] == "wrong_result" and "outside tolerance" in (r.get("error") or ""),
                     f"{tile} (half the K loop) is {r['status']}: {r.get('error')}")
    edge = by_tile[(16, 16)]
    check.expect(edge["status"] == "wrong_result" and "NaN/Inf" in (edge.get("error") or ""),
                 f"(16, 16) (last row tile never stored) is {edge['status']}: {edge.get('error')}")
    check.expect(by_tile[(32, 16)]["status"] in TIMED, f"the correct (32, 16) is {by_tile[(32, 16)]['status']}: "
                                                       f"{by_tile[(32, 16)].get('error')}")
    winner = (result.summary.get("winner") or {}).get("config") or {}
    check.expect((winner.get("BLOCK_M"), winner.get("BLOCK_N")) == (32, 16), f"the winner is {winner}")


def check_c(args, check: Check) -> None:
    order = [{"BLOCK": 16, "FAULT": 2}, {"BLOCK": 16, "FAULT": 0}, {"BLOCK": 32, "FAULT": 0}]
    started = time.time()
    result = _api_tune(args, _faulty_space(args), Path(args.out) / "c.db", order=order, trials=3, stage="none",
                       top_k=2, rounds=2, bench_timeout=60)
    seq = _statuses(result.records, "FAULT")
    check.facts.update(sequence=seq, wall_s=round(time.time() - started, 1), funnel=result.summary["funnel"])
    check.expect([(s[1], s[2]) for s in seq] == [(o["FAULT"], o["BLOCK"]) for o in order],
                 f"the queued order was not kept: {[(s[1], s[2]) for s in seq]}")
    for _trial, fault, block, status, error in seq:
        if fault == 2:
            check.expect(status == "illegal_address", f"FAULT=2 BLOCK={block} is {status}: {error}")
        else:
            check.expect(status in TIMED, f"FAULT=0 BLOCK={block} (queued after an illegal address) is {status}: "
                                          f"{error}")
    illegal = [s for s in seq if s[3] == "illegal_address"]
    if illegal and not args.interpret:
        check.expect("illegal memory access" in illegal[0][4] or "illegal address" in illegal[0][4],
                     f"the error does not say what happened: {illegal[0][4]}")
    check.expect(bool(result.summary.get("winner")), "no winner named")


def check_d(args, check: Check) -> None:
    order = [{"BLOCK": 16, "FAULT": 1}, {"BLOCK": 32, "FAULT": 0}]
    started = time.time()
    result = _api_tune(args, _faulty_space(args), Path(args.out) / "d.db", order=order, trials=2, stage="none",
                       top_k=1, rounds=1, bench_timeout=10)
    seq = _statuses(result.records, "FAULT")
    check.facts.update(sequence=seq, wall_s=round(time.time() - started, 1))
    hang = [s for s in seq if s[1] == 1]
    good = [s for s in seq if s[1] == 0]
    if check.expect(len(hang) == 1, f"the hanging config was not judged: {seq}"):
        check.expect(hang[0][3] == "timeout" and "no answer within 10 s" in hang[0][4],
                     f"the hang is {hang[0][3]}: {hang[0][4]}")
        record = next(r for r in result.records if r["trial"] == hang[0][0])
        check.facts["hang_elapsed_s"] = record.get("elapsed_s")
    check.expect(len(good) == 1 and good[0][3] in TIMED, f"the config after the hang: {good}")


def check_e(args, check: Check) -> None:
    import optuna
    from optuna.trial import TrialState

    from kernelrules.tune.study import load_records

    folder = Path(args.out) / "e"
    folder.mkdir(exist_ok=True)
    db = folder / "resume.db"
    cmd = _cli("tune", str(SMALL), "--arch", args.arch, "--trials", "16", "--json", "--stage", "config",
               "--storage", str(db), "--top-k", "2", "--rounds", "2", "--cache-dir",
               str(Path(args.out) / "compile-cache"))
    cmd += ["--interpret"] if args.interpret else ["--gpus", args.gpu]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(WORKDIR[0]),
                            env=_env(), start_new_session=True)
    before: list[dict] = []
    err_lines: list[str] = []
    threading.Thread(target=lambda: err_lines.extend(proc.stderr), daemon=True).start()
    done = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            if line.startswith("{"):
                record = json.loads(line)
                if record.get("type") == "trial":
                    before.append(record)
                    if len(before) >= 4:
                        break
        done.set()

    threading.Thread(target=read, daemon=True).start()
    done.wait(90)
    killed_while_running = proc.poll() is None
    _kill_group(proc)
    check.facts.update(records_before_kill=len(before), killed_while_running=killed_while_running)
    if not check.expect(len(before) >= 4 and killed_while_running,
                        f"the first run gave {len(before)} trial records before the kill "
                        f"(still running: {killed_while_running}): {_tail(''.join(err_lines))}"):
        return
    storage = f"sqlite:///{db}"
    names = optuna.study.get_all_study_names(storage)
    study = optuna.load_study(study_name=names[0], storage=storage)
    running = [t.number for t in study.get_trials(deepcopy=False) if t.state == TrialState.RUNNING]
    check.facts["running_after_kill"] = running
    rc, out, err = _run(cmd, LIMITS["e"] - 100, folder / "resume.log")
    lines = _json_lines(out)
    summary = next((line for line in lines if line.get("type") == "summary"), None)
    if not check.expect(rc == 0 and summary is not None, f"the resumed run: exit code {rc}: {_tail(err)}"):
        return
    study = optuna.load_study(study_name=names[0], storage=storage)
    records = {r["trial"]: r for r in load_records(study)}
    lost = [b["trial"] for b in before if records.get(b["trial"], {}).get("status") != b["status"]]
    still = [t.number for t in study.get_trials(deepcopy=False) if t.state == TrialState.RUNNING]
    funnel = summary["funnel"]
    check.facts.update(resumed_trials=len([line for line in lines if line.get("type") == "trial"]), funnel=funnel,
                       notes=summary.get("notes"))
    check.expect(not lost, f"records from before the kill changed or vanished: trials {lost}")
    check.expect(not still, f"trials still RUNNING after the resume: {still}")
    check.expect(funnel["sampled"] == 16, f"{funnel['sampled']} distinct configs judged, not 16")
    if running:
        check.expect(any("resumed:" in n for n in summary.get("notes") or []),
                     f"trials {running} were in flight at the kill but the resume did not queue them again")
    check.expect(bool(summary.get("winner")), "no winner after the resume")


def check_f(args, check: Check) -> None:
    db = Path(args.out) / "a" / "matmul.db"
    if not check.expect(db.is_file(), f"no study from check a ({db})"):
        return
    html = Path(args.out) / "report.html"
    rc, out, err = _run(_cli("report", str(db), "-o", str(html)), LIMITS["f"] - 10, Path(args.out) / "f.log")
    if not check.expect(rc == 0 and html.is_file(), f"exit code {rc}: {_tail(err or out)}"):
        return
    text = html.read_text()
    try:
        import matplotlib  # noqa: F401

        plots = True
    except ImportError:
        plots = False
    check.facts.update(html=html.name, bytes=len(text), matplotlib=plots, images=text.count("<img"))
    if plots:
        check.expect(text.count("<img") >= 1, "matplotlib imports but the report has no plot")
    else:
        check.facts["skipped"] = "plots skipped: matplotlib does not import (tables only)"
        check.expect("matplotlib is not installed" in text, "without matplotlib the report does not say so")


FUNCTIONS = {"env": check_env, "a": check_a, "b": check_b, "c": check_c, "d": check_d, "e": check_e, "f": check_f}


# --------------------------------------------------------------------------- driver


def child(args) -> None:
    """Run one check in this process and write OUT/<check>.json."""
    check = Check(args.child)
    for stale in STUDIES.get(args.child, ()):  # a study left by an earlier run would resume and add nothing
        path = Path(args.out) / stale
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
    try:
        FUNCTIONS[args.child](args, check)
    except BaseException as exc:  # noqa: BLE001
        check.problems.append(f"{type(exc).__name__}: {exc}")
        check.facts["traceback"] = traceback.format_exc()[-3000:]
    (Path(args.out) / f"{args.child}.json").write_text(json.dumps(check.result(), indent=2, default=str))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--arch", default=None, help="default: h200 (ampere under --interpret)")
    parser.add_argument("--gpu", default="0")
    parser.add_argument("--checks", default=",".join(CHECKS))
    parser.add_argument("--interpret", action="store_true")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.arch = args.arch or ("ampere" if args.interpret else "h200")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    args.out = str(out)
    WORKDIR[0] = out
    os.chdir(out)  # the benchmark workers the API starts inherit it (see WORKDIR)
    if args.child:
        child(args)
        return
    started = time.time()
    results = []
    print(f"kernelrules tune GPU smoke: arch {args.arch}{' (--interpret)' if args.interpret else ''}, out {out}",
          flush=True)
    for name in [c.strip() for c in args.checks.split(",") if c.strip()]:
        if name not in FUNCTIONS:
            sys.exit(f"unknown check {name!r} (one of {', '.join(CHECKS)})")
        t0 = time.time()
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--out", str(out), "--arch", args.arch,
               "--gpu", args.gpu] + (["--interpret"] if args.interpret else [])
        (out / f"{name}.json").unlink(missing_ok=True)
        rc, _o, err = _run(cmd, LIMITS[name], out / f"{name}.log")
        path = out / f"{name}.json"
        if path.is_file():
            result = json.loads(path.read_text())
        else:
            why = f"timed out after {LIMITS[name]} s" if rc is None else f"exit code {rc}: {_tail(err)}"
            result = {"check": name, "ok": False, "problems": [f"the check process died: {why}"], "facts": {}}
        result["seconds"] = round(time.time() - t0, 1)
        results.append(result)
        facts = result["facts"]
        skipped = facts.get("skipped")
        word = "PASS" if result["ok"] else "FAIL"
        brief = {k: facts[k] for k in ("device", "winner", "winner_ms", "winner_tflops", "baseline_ms",
                                       "winner_vs_baseline_speed", "statuses", "sequence", "hang_elapsed_s",
                                       "records_before_kill", "running_after_kill", "funnel", "images",
                                       "do_bench_4096_fp16_ms", "do_bench_tflops", "l2_bytes", "illegal_probe",
                                       "torch", "triton") if k in facts}
        print(f"{word} {name:3} {TITLES[name]} ({result['seconds']:.0f} s)"
              + (f" [{skipped}]" if skipped else ""), flush=True)
        for problem in result["problems"]:
            print(f"       problem: {problem}", flush=True)
        print(f"       {json.dumps(brief, default=str)[:900]}", flush=True)
    failed = [r["check"] for r in results if not r["ok"]]
    summary = {"ok": not failed, "failed": failed, "seconds": round(time.time() - started, 1), "arch": args.arch,
               "interpret": args.interpret, "results": results}
    (out / "smoke.json").write_text(json.dumps(summary, indent=2, default=str))
    print(f"{'PASS' if not failed else 'FAIL'} all: {len(results) - len(failed)}/{len(results)} checks passed "
          f"in {summary['seconds']:.0f} s; details in {out}/smoke.json and {out}/<check>.log", flush=True)
    sys.exit(len(failed))


if __name__ == "__main__":
    main()
