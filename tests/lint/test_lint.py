"""``kernelrules lint`` end to end through the installed command (config stage: no compiles of configs)."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def copy_example(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copy(EXAMPLES / name, target)
    return target


def test_matmul_findings_name_configs_numbers_and_repairs(run_cli, tmp_path):
    copy_example(tmp_path, "matmul.py")
    result = run_cli("lint", "matmul.py", "--arch", "ada,hopper", "--stage", "config", "--cache-dir", "cache")
    assert result.returncode == 1, result.stderr
    out = result.stdout
    assert "MEM001 needs 147456 bytes of shared memory per block (predicted), more than the 101376 bytes" in out
    assert "nearest passing config: BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_SIZE_M=8, num_warps=8, num_stages=3" in out
    assert "MEM001 needs 327680 bytes" in out and "232448 bytes sm_90" in out
    assert "matmul.py:42 matmul_kernel (analyzed)" in out
    assert out.rstrip().endswith("1 kernel analyzed, 0 need a spec")


def test_an_error_that_rests_on_a_guessed_constexpr_is_a_warning(run_cli, tmp_path):
    # EVEN_K is given by nobody (no spec, no launch literal): kernelrules guesses it, so the
    # MEM001 that is an error in the plain example becomes a warning that says why.
    path = copy_example(tmp_path, "matmul.py")
    path.write_text(path.read_text().replace("GROUP_SIZE_M: tl.constexpr,\n):", "GROUP_SIZE_M: tl.constexpr, EVEN_K: tl.constexpr,\n):"))
    result = run_cli("lint", "matmul.py", "--arch", "ada", "--stage", "config", "--format", "json", "--cache-dir", "c")
    findings = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "MEM001"]
    assert findings and {f["severity"] for f in findings} == {"warning"}
    assert all(f["message"].endswith(": a warning until the real values confirm it)") and "EVEN_K=" in f["message"]
               for f in findings)
    assert result.returncode == 0, result.stdout
    spec = tmp_path / "spec.yaml"
    spec.write_text("kernels:\n  matmul_kernel:\n    signature:\n      EVEN_K: 1\n")
    given = run_cli("lint", "matmul.py", "--arch", "ada", "--stage", "config", "--format", "json", "--cache-dir", "c",
                    "--spec", "spec.yaml")
    assert given.returncode == 1, given.stdout + given.stderr
    assert {f["severity"] for f in json.loads(given.stdout)["findings"] if f["code"] == "MEM001"} == {"error"}


def test_examples_findings_and_json(run_cli, tmp_path):
    for name in ("softmax.py", "layernorm.py"):
        copy_example(tmp_path, name)
    result = run_cli("lint", ".", "--arch", "ada", "--stage", "config", "--format", "json", "--cache-dir", "cache")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["schema_version"] == 1
    codes = {(Path(f["path"]).name, f["code"]) for f in data["findings"]}
    assert ("softmax.py", "CFG002") in codes and ("layernorm.py", "CFG004") in codes
    assert {k["status"] for k in data["kernels"]} == {"analyzed"}


def test_suppression_and_unused_suppression(run_cli, tmp_path):
    path = copy_example(tmp_path, "softmax.py")
    text = path.read_text().replace('num_warps=6),', 'num_warps=6),  # kernelrules: ignore[CFG002]')
    text = text.replace('num_warps=16),', 'num_warps=16),  # kernelrules: ignore[MEM001]')
    path.write_text(text)
    result = run_cli("lint", "softmax.py", "--arch", "ada", "--stage", "config", "--cache-dir", "cache")
    assert "CFG002" not in result.stdout.split("softmax_kernel (analyzed)")[0].replace("LNT003", "")
    assert "LNT003 unused suppression for MEM001" in result.stdout and "1 suppressed" in result.stdout
    assert result.returncode == 0  # CFG002 is suppressed; the unused suppression is only a warning
    assert run_cli("lint", "softmax.py", "--arch", "ada", "--stage", "config", "--fail-on", "warning",
                   "--cache-dir", "cache").returncode == 1


def test_needs_spec_and_bad_files_never_crash(run_cli, tmp_path):
    (tmp_path / "broken.py").write_text("import triton\n\ndef f(:\n")
    (tmp_path / "opaque.py").write_text(textwrap.dedent("""\
        import triton
        import triton.language as tl

        @triton.jit
        def opaque(x_ptr, BLOCK: tl.constexpr, mystery):
            tl.store(x_ptr + tl.arange(0, BLOCK), mystery.load([0]))
        """))
    result = run_cli("lint", ".", "--arch", "ada", "--stage", "config", "--format", "json", "--cache-dir", "cache")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    data = json.loads(result.stdout)
    codes = {f["code"] for f in data["findings"]}
    assert "LNT004" in codes  # the syntax error
    (kernel,) = data["kernels"]
    assert kernel["status"] == "needs-spec" and "mystery" in kernel["message"]


def test_spec_command_and_sidecar(run_cli, tmp_path):
    copy_example(tmp_path, "softmax.py")
    result = run_cli("spec", "softmax.py")
    assert result.returncode == 0, result.stderr
    sidecar = tmp_path / "softmax.kernelrules.yaml"
    assert "softmax_kernel" in sidecar.read_text()
    assert run_cli("spec", "softmax.py").returncode == 2  # refuses to overwrite
    linted = run_cli("lint", "softmax.py", "--arch", "ada", "--stage", "config", "--format", "json", "--cache-dir", "c")
    provenance = json.loads(linted.stdout)["kernels"][0]["signature_provenance"]
    assert set(provenance.values()) == {"spec"}


def test_pyproject_settings_and_sarif(run_cli, tmp_path):
    copy_example(tmp_path, "softmax.py")
    (tmp_path / "pyproject.toml").write_text('[tool.kernelrules]\narch = ["ada"]\nstage = "config"\n')
    result = run_cli("lint", "softmax.py", "--format", "sarif", "--cache-dir", "cache")
    sarif = json.loads(result.stdout)
    assert sarif["version"] == "2.1.0"
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["CFG002"]
    (tmp_path / "pyproject.toml").write_text('[tool.kernelrules]\narch = ["ada"]\ncolour = "red"\n')
    bad = run_cli("lint", "softmax.py")
    assert bad.returncode == 2 and "colour" in bad.stderr and "pyproject.toml" in bad.stderr


def test_attention_with_sidecar_spec(run_cli, tmp_path):
    copy_example(tmp_path, "attention_fwd.py")
    shutil.copy(EXAMPLES / "attention_fwd.kernelrules.yaml", tmp_path / "attention_fwd.kernelrules.yaml")
    result = run_cli("lint", "attention_fwd.py", "--arch", "ada,hopper", "--stage", "config", "--format", "json",
                     "--cache-dir", "cache")
    data = json.loads(result.stdout)
    (kernel,) = data["kernels"]
    assert kernel["status"] == "analyzed" and set(kernel["signature_provenance"].values()) == {"spec"}
    by_config = {(r["config"]["BLOCK_M"], r["config"]["BLOCK_N"], r["arch"]): r for r in kernel["results"]}
    too_big = by_config[(128, 128, "sm_89")]
    assert [d["code"] for d in too_big["diagnostics"]] == ["MEM001"]
    assert too_big["repair"]["HEAD_DIM"] == 64  # a value fixed by the spec is never "repaired"
    assert by_config[(128, 128, "sm_90")]["verdict"] == "pass"
    assert [d["code"] for d in by_config[(64, 8, "sm_90")]["diagnostics"]] == ["DOT001"]


def test_fused_pointwise_block_size(run_cli, tmp_path):
    copy_example(tmp_path, "fused_pointwise.py")
    result = run_cli("lint", "fused_pointwise.py", "--arch", "hopper", "--stage", "config", "--cache-dir", "cache")
    assert result.returncode == 1
    assert "CFG001 block size XBLOCK is not a power of two" in result.stdout
    assert "nearest passing config: XBLOCK=512, num_warps=4" in result.stdout


def test_lint_reads_a_launch_trace(run_cli, tmp_path):
    from kernelrules.specify.trace import TracedLaunch, write_trace

    path = copy_example(tmp_path, "attention_fwd.py")  # no sidecar: HEAD_DIM comes from the trace
    args = {name: "*fp16" for name in ("q_ptr", "k_ptr", "v_ptr", "o_ptr")}
    for t in "qkvo":
        args.update({f"stride_{t}h": 262144, f"stride_{t}{'m' if t in 'qo' else 'n'}": 64, f"stride_{t}d": 1})
    args.update(seq_len=4096, scale="fp32")
    write_trace(tmp_path / "trace.jsonl", [TracedLaunch(kernel="attention_fwd_kernel", path=str(path), line=24,
                                                        args=args, constexprs={"HEAD_DIM": 64})])
    result = run_cli("lint", "attention_fwd.py", "--arch", "ada", "--stage", "config", "--trace", "trace.jsonl",
                     "--format", "json", "--cache-dir", "cache")
    (kernel,) = json.loads(result.stdout)["kernels"]
    assert kernel["status"] == "analyzed"
    assert kernel["signature_provenance"]["q_ptr"] == "trace" and kernel["signature_provenance"]["HEAD_DIM"] == "trace"
    assert any(d["code"] == "MEM001" for r in kernel["results"] for d in r["diagnostics"])
    assert run_cli("lint", "attention_fwd.py", "--arch", "ada", "--trace", "missing.jsonl").returncode == 2


def test_warm_lint_reuses_judgements_and_ignores_corrupt_entries(run_cli, tmp_path):
    copy_example(tmp_path, "softmax.py")
    args = ("lint", "softmax.py", "--arch", "ada", "--stage", "config", "--format", "json", "--cache-dir", "cache")
    cold = run_cli(*args)
    entries = list((tmp_path / "cache" / "lint").rglob("*.json"))
    # The judgement, the kernel's outcome under its resolved launch, and under its inputs (lint/launch_replay.py).
    kinds = sorted(e.name.split("-")[0] if "-" in e.name else "judgement" for e in entries)
    assert kinds == ["judgement", "launch", "outcome"]
    warm = run_cli(*args)
    assert warm.stdout == cold.stdout and warm.returncode == cold.returncode == 1
    for entry in entries:
        entry.write_text("{not json")
    again = run_cli(*args)
    assert again.stdout == cold.stdout  # recomputed, and rewritten
    assert all(json.loads(entry.read_text())["data"]["findings"] for entry in entries)
    # A well-formed entry whose content was changed (no finding replayed) fails its checksum: recomputed.
    for entry in entries:
        doc = json.loads(entry.read_text())
        doc["data"]["findings"] = []
        entry.write_text(json.dumps(doc))
    assert run_cli(*args).stdout == cold.stdout
    # The wrong shape (records not a list of objects), with a matching checksum: ignored too.
    from kernelrules.compile.diskstore import content_digest

    for entry in entries:
        doc = json.loads(entry.read_text())
        doc["data"]["records"] = [1, 2]
        doc["sha256"] = content_digest(doc["data"])
        entry.write_text(json.dumps(doc))
    assert run_cli(*args).stdout == cold.stdout


def test_warm_lint_replays_needs_spec_outcomes_without_compiling(run_cli, tmp_path):
    """A kernel that ended needs-spec after probe compiles is replayed from the outcome cache: the
    warm run gives the same report with the compile cache gone, and compiles nothing."""
    (tmp_path / "d.py").write_text(textwrap.dedent("""\
        import triton
        import triton.language as tl

        @triton.jit
        def needs_doubles(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            tl.static_assert(x.dtype == tl.float64, "doubles only")
            tl.store(out_ptr + offs, x, mask=offs < n)
        """))
    args = ("lint", "d.py", "--arch", "hopper", "--format", "json", "--cache-dir", "cache")
    cold = run_cli(*args)
    assert json.loads(cold.stdout)["kernels"][0]["status"] == "needs-spec"
    for entry in (tmp_path / "cache").iterdir():
        if entry.name != "lint":
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    warm = run_cli(*args)
    assert warm.stdout == cold.stdout and warm.returncode == cold.returncode
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["lint"]


RUNTIME_CONFIGS = '''\
import os
import triton
import triton.language as tl


def _configs():
    warps = [4, 8] if os.cpu_count() else [2]
    return [triton.Config({"BLOCK": 512}, num_warps=w) for w in warps] + [triton.Config({"BLOCK": 1000}, num_warps=4)]


@triton.autotune(configs=_configs(), key=["n"])
@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
'''


def test_import_mode_reads_runtime_configs(run_cli, tmp_path):
    (tmp_path / "dyn.py").write_text(RUNTIME_CONFIGS)
    args = ("lint", "dyn.py", "--arch", "ada", "--stage", "config", "--format", "json", "--cache-dir", "cache")
    static = json.loads(run_cli(*args).stdout)
    assert "LNT002" in {f["code"] for f in static["findings"]}  # without --import the module is not run
    imported = json.loads(run_cli(*args, "--import").stdout)
    (kernel,) = imported["kernels"]
    assert "--import" in kernel["message"]
    assert len(kernel["results"]) == 3
    assert {f["code"] for f in imported["findings"]} == {"CFG001"}  # BLOCK=1000 is not a power of two


HEURISTICS_AND_PRUNE = '''\
import triton
import triton.language as tl


def drop_big(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] <= named_args["n_elements"] // 8]


@triton.heuristics({"EVEN_N": lambda args: args["n_elements"] % args["BLOCK"] == 0,
                    "NUM_TILES": lambda args: triton.cdiv(args["n_elements"], args["BLOCK"])})
@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=4) for b in (128, 256, 384, 1024)],
                 key=["n_elements"], prune_configs_by={"early_config_prune": drop_big})
@triton.jit
def copy_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr, EVEN_N: tl.constexpr, NUM_TILES: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN_N:
        tl.store(y_ptr + offs, tl.load(x_ptr + offs))
    else:
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n_elements), mask=offs < n_elements)


def copy(x, y):
    copy_kernel[(1,)](x, y, 4096)
'''


def test_heuristics_are_evaluated_and_a_pure_early_prune_respected(run_cli, tmp_path):
    (tmp_path / "copy.py").write_text(HEURISTICS_AND_PRUNE)
    result = run_cli("lint", "copy.py", "--arch", "ada", "--stage", "config", "--format", "json", "--cache-dir", "c")
    (kernel,) = json.loads(result.stdout)["kernels"]
    assert "drop_big kept 3 of 4 configs" in kernel["message"]  # BLOCK=1024 > 4096 // 8
    configs = [r["config"] for r in kernel["results"]]
    assert [c["BLOCK"] for c in configs] == [128, 256, 384]
    assert [(c["EVEN_N"], c["NUM_TILES"]) for c in configs] == [(True, 32), (True, 16), (False, 11)]
    assert kernel["signature_provenance"]["EVEN_N"] == "heuristics"
    assert kernel["signature_provenance"]["n_elements"] == "call-site"
    assert [d["code"] for r in kernel["results"] for d in r["diagnostics"]] == ["CFG001"]  # BLOCK=384


BF16_ONLY = '''\
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4)], key=["n"])
@triton.jit
def bf16_only(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(x_ptr.dtype.element_ty == tl.bfloat16)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
'''


def test_guessed_fp16_that_does_not_compile_is_retried_as_bf16(run_cli, tmp_path):
    (tmp_path / "b.py").write_text(BF16_ONLY)
    result = run_cli("lint", "b.py", "--arch", "ada", "--format", "json", "--cache-dir", "c")
    (kernel,) = json.loads(result.stdout)["kernels"]
    assert kernel["signature_provenance"]["x_ptr"].startswith("naming (bf16")
    assert [r["facts"]["compile_status"] for r in kernel["results"]] == ["ok"]
    assert result.returncode == 0, result.stdout


def test_broken_spec_or_trace_is_exit_2_and_no_kernels_is_said(run_cli, tmp_path):
    copy_example(tmp_path, "softmax.py")
    (tmp_path / "bad.yaml").write_text("kernels: [1, 2\n")
    bad_spec = run_cli("lint", "softmax.py", "--arch", "ada", "--spec", "bad.yaml")
    assert bad_spec.returncode == 2 and "bad.yaml" in bad_spec.stderr and "Traceback" not in bad_spec.stderr
    (tmp_path / "bad.jsonl").write_text('{"schema_version": 1, "format": "kernelrules-trace"}\n{oops\n')
    bad_trace = run_cli("lint", "softmax.py", "--arch", "ada", "--trace", "bad.jsonl")
    assert bad_trace.returncode == 2 and "bad.jsonl" in bad_trace.stderr and "Traceback" not in bad_trace.stderr
    (tmp_path / "plain.py").write_text("x = 1\n")
    empty = run_cli("lint", "plain.py", "--arch", "ada")
    assert empty.returncode == 0 and "no @triton.jit kernels found" in empty.stderr
    assert run_cli("lint", "softmax.py", "--arch", "rtx9999").returncode == 2


def test_inductor_output_is_linted_from_its_triton_meta_without_running_it(run_cli, tmp_path):
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "specify" / "test_inductor.py"  # runs alone too
    spec = importlib.util.spec_from_file_location("inductor_cases", path)
    inductor_cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(inductor_cases)
    POINTWISE = inductor_cases.POINTWISE

    (tmp_path / "output_code_kernel.py").write_text(POINTWISE)  # raises if ever executed
    result = run_cli("lint", "output_code_kernel.py", "--arch", "hopper", "--stage", "config", "--format", "json",
                     "--cache-dir", "cache")
    assert "Traceback" not in result.stderr
    (kernel,) = json.loads(result.stdout)["kernels"]
    assert kernel["status"] == "analyzed"
    assert set(kernel["signature_provenance"].values()) == {"inductor"}
    assert "size hints" in kernel["message"]
    assert [r["config"]["XBLOCK"] for r in kernel["results"]] == [128, 256, 512, 1024]


CALL_FORM = '''\
import triton
import triton.language as tl
raise RuntimeError("lint must never run this module")


def _twice(x):
    return x * 2
_twice = triton.jit(_twice)


def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(y_ptr + offs, _twice(tl.load(x_ptr + offs)))
    else:
        tl.store(y_ptr + offs, _twice(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)
add_kernel = triton.jit(add_kernel)
add_kernel = triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(add_kernel)
'''


def test_jit_functions_made_by_calls_are_compiled_like_decorated_ones(run_cli, tmp_path):
    """``f = triton.jit(f)`` (unsloth's form): discovered, compiled at the compiled stage, and judged
    as the same kernel written with decorators is."""
    (tmp_path / "called.py").write_text(CALL_FORM)
    decorated = CALL_FORM.replace("def _twice", "@triton.jit\ndef _twice").replace(
        "def add_kernel", '@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})\n'
                          "@triton.jit\ndef add_kernel")
    (tmp_path / "decorated.py").write_text("\n".join(
        line for line in decorated.splitlines() if not line.startswith(("_twice =", "add_kernel ="))) + "\n")
    result = run_cli("lint", "called.py", "decorated.py", "--arch", "hopper", "--format", "json", "--cache-dir", "c")
    assert "Traceback" not in result.stderr and result.returncode == 0, result.stderr
    kernels = {Path(k["path"]).name: k for k in json.loads(result.stdout)["kernels"]}
    assert set(kernels) == {"called.py", "decorated.py"}  # `_twice` is a helper in both
    called, reference = kernels["called.py"], kernels["decorated.py"]
    assert (called["name"], called["line"], called["status"]) == ("add_kernel", 11, "analyzed")
    assert called["signature_provenance"]["EVEN"] == "heuristics"

    def judged(kernel):
        return [({**r["config"]}, r["arch"], r["verdict"],
                 {k: v for k, v in r["facts"].items() if k not in ("compile_seconds", "compile_message")})
                for r in kernel["results"]]

    assert judged(called) and all(r["facts"]["compile_status"] == "ok" for r in called["results"])
    assert judged(called) == judged(reference)


def test_progress_names_the_kernel_compiling(tmp_path, monkeypatch):
    """A package lint shows how many kernels are done and which kernel is compiling (issue 14)."""
    from kernelrules.lint.linter import KERNELS_LABEL, LintOptions, Linter

    monkeypatch.chdir(tmp_path)
    copy_example(tmp_path, "softmax.py")
    calls = []
    options = LintOptions(archs=("hopper",), cache_dir=str(tmp_path / "cache"), jobs=1)
    report = Linter(options, progress=lambda label, done, total: calls.append((label, done, total))).run(["softmax.py"])
    assert report.kernels
    counts = [(done, total) for label, done, total in calls if label == KERNELS_LABEL]
    assert counts[0] == (0, 1) and counts[-1] == (1, 1)
    compiling = [label for label, _, _ in calls if label != KERNELS_LABEL]
    assert compiling and all(label.startswith("softmax.py:softmax_kernel: ") for label in compiling)


def test_progress_names_the_kernel_whose_guesses_are_probed(tmp_path, monkeypatch):
    """The probe compile of guessed values is named before it starts (it may take the whole time limit)."""
    from kernelrules.lint.linter import LintOptions, Linter

    monkeypatch.chdir(tmp_path)
    (tmp_path / "guess.py").write_text(textwrap.dedent("""\
        import triton
        import triton.language as tl

        @triton.jit
        def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)
        """))
    calls = []
    options = LintOptions(archs=("hopper",), cache_dir=str(tmp_path / "cache"), jobs=1)
    Linter(options, progress=lambda label, done, total: calls.append((label, done, total))).run(["guess.py"])
    probe = "guess.py:copy_kernel: checking guessed values sm_90"
    assert calls.index((probe, 0, 1)) < calls.index((probe, 1, 1))
    assert calls.index((probe, 1, 1)) < calls.index(("guess.py:copy_kernel: compiling sm_90", 1, 1))


def test_the_api_reports_what_the_command_prints(run_cli, tmp_path, monkeypatch):
    """``Linter(options).run()`` applies the rule selection, per-file ignores and suppression comments
    itself, so its report is the one ``kernelrules lint`` prints (issue 15)."""
    from kernelrules.lint.linter import LintOptions, Linter
    from kernelrules.lint.reporters import render_json
    from kernelrules.lint.settings import load_settings

    for name in ("softmax.py", "layernorm.py", "fused_pointwise.py"):
        copy_example(tmp_path, name)
    softmax = tmp_path / "softmax.py"
    softmax.write_text(softmax.read_text().replace('num_warps=6),', 'num_warps=6),  # kernelrules: ignore[CFG002]'))
    (tmp_path / "pyproject.toml").write_text(
        '[tool.kernelrules]\narch = ["ada"]\nstage = "config"\nper-file-ignores = {"layernorm.py" = ["CFG004"]}\n')
    result = run_cli("lint", ".", "--select", "CFG,LNT", "--format", "json", "--cache-dir", "cli-cache")
    assert result.returncode == 1, result.stderr  # fused_pointwise's CFG001 error stays
    monkeypatch.chdir(tmp_path)
    settings = load_settings(["."]).merge_cli(select=["CFG", "LNT"], cache_dir=str(tmp_path / "api-cache"))
    report = Linter(LintOptions.from_settings(settings)).run(["."])
    assert render_json(report) + "\n" == result.stdout  # typer.echo ends the text with one more newline
    shown = {(f.path, f.code, f.suppressed) for f in report.findings}
    assert ("softmax.py", "CFG002", True) in shown and ("fused_pointwise.py", "CFG001", False) in shown
    assert not any(f.code == "CFG004" for f in report.findings)


STAGE_TWINS = '''\
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4, num_stages=s) for s in (1, 2, 3)]
                 + [triton.Config({"BLOCK": 512}, num_warps=4, num_stages=2)], key=["n"])
@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, 2.0 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4, num_stages=s) for s in (1, 2, 3)], key=["n"])
@triton.jit
def row_sum(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr, tl.sum(acc))
'''


def test_num_stages_twins_of_a_loop_free_kernel_are_flagged_and_a_loop_is_not(run_cli, tmp_path):
    """PIP002: on a kernel without a loop, the configs after the first of each num_stages group are the same
    binary; a kernel with a loop is left alone (num_stages can pipeline it)."""
    (tmp_path / "k.py").write_text(STAGE_TWINS)
    result = run_cli("lint", "k.py", "--arch", "hopper", "--format", "json", "--cache-dir", "c")
    kernels = {k["name"]: k for k in json.loads(result.stdout)["kernels"]}
    flagged = {name: [(r["config"]["BLOCK"], r["config"]["num_stages"]) for r in k["results"]
                      if any(d["code"] == "PIP002" for d in r["diagnostics"])] for name, k in kernels.items()}
    assert flagged == {"scale": [(256, 2), (256, 3)], "row_sum": []}, result.stdout
    messages = [d["message"] for r in kernels["scale"]["results"] for d in r["diagnostics"] if d["code"] == "PIP002"]
    assert "num_stages=3 changes nothing" in messages[1] and "as 2 config(s) before it" in messages[1]
    assert result.returncode == 0  # warnings only: under the default fail-on (error)
