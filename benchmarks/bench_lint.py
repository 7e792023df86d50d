"""Speed of ``kernelrules lint`` (issue 4 targets), through the installed command, CPU only.

1. The 16-config example matmul for three architectures (sm_80, sm_89, sm_90), cold
   (empty cache; target < 20 s on 2 cores) and warm (the same cache; target < 1 s).
2. ``--stage config`` on a directory of 200 kernels (renamed copies of the examples, so
   no two share a cache entry; target < 30 s).

The baseline printed next to each figure is the command's own start-up
(``kernelrules --version``) measured in the same run.

    python benchmarks/bench_lint.py
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXE = str(Path(sys.executable).with_name("kernelrules"))


def timed(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run([EXE, *args], cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        startup = timed(["--version"], tmp)
        shutil.copy(REPO / "examples" / "matmul.py", tmp / "matmul.py")
        lint = ["lint", "matmul.py", "--arch", "sm_80,sm_89,sm_90", "--cache-dir", str(tmp / "cache")]
        cold = timed(lint, tmp)
        warm = timed(lint, tmp)
        print(f"start-up (kernelrules --version): {startup:.2f} s")
        print(f"matmul, 16 configs x 3 architectures, compiled stage: cold {cold:.1f} s (target < 20 s: "
              f"{'met' if cold < 20 else 'MISSED'}), warm {warm:.2f} s (target < 1 s: {'met' if warm < 1 else 'MISSED'})")
        corpus = tmp / "corpus"
        corpus.mkdir()
        sources = {name: (REPO / "examples" / name).read_text()
                   for name in ("softmax.py", "layernorm.py", "fused_pointwise.py", "matmul.py")}
        kernels = {"softmax.py": "softmax_kernel", "layernorm.py": "layernorm_kernel",
                   "fused_pointwise.py": "fused_bias_gelu_residual", "matmul.py": "matmul_kernel"}
        for i in range(200):
            name = list(sources)[i % len(sources)]
            text = re.sub(rf"\b{kernels[name]}\b", f"{kernels[name]}_{i}", sources[name])
            (corpus / f"k{i:03d}_{name}").write_text(text)
        start = time.perf_counter()
        result = subprocess.run([EXE, "lint", "corpus", "--arch", "sm_89", "--stage", "config", "-q",
                                 "--cache-dir", str(tmp / "cache2")], cwd=tmp, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        print(f"--stage config on 200 kernels (50 with tl.dot): {elapsed:.1f} s (target < 30 s: "
              f"{'met' if elapsed < 30 else 'MISSED'}); {result.stdout.strip()}")


if __name__ == "__main__":
    main()
