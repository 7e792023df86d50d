#!/usr/bin/env bash
# One device call of the held re-timing (benchmarks/suite_retime.py): install what the GPU machine lacks,
# time until a deadline, pack the problems written into $OUT.
#
#   KR_COMMIT=<commit> bash benchmarks/suite_retime_device.sh SECONDS [PROBLEMS]      (on the GPU machine, repo root)
#
# The wheels of .suite-new/.whl (lark, jsonschema and its needs) travel with the call (carry). Afterwards,
# here: tar xzf DIR/held.tgz -C benchmarks/results/suite/held/runN (a new folder per run).
set -u
until=$(( $(date +%s) + ${1:-540} ))
site=$PWD/.suite-work/site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --no-build-isolation --upgrade --target "$site" .suite-new/.whl/*.whl . >/dev/null 2>&1 || exit 1
export PYTHONPATH=$site PYTHONUNBUFFERED=1 KR_COMMIT=${KR_COMMIT:-unknown}
python3 benchmarks/suite_retime.py --until "$until" --problems "${2:-}" 2>&1 | grep -v -i warning
mkdir -p "$OUT"
tar czf "$OUT/held.tgz" -C .suite-work/held $(cd .suite-work/held && ls *.jsonl 2>/dev/null)
ls -la .suite-work/held
