#!/usr/bin/env bash
# One device call of the suite sweep: install what the GPU machine lacks, sweep until a
# deadline (restarting after a launch that kills the process), pack the results into $OUT.
#
#   bash benchmarks/suite_device.sh SECONDS [FAMILIES]      (on the GPU machine, repo root)
#
# The wheels of .whl (lark, jsonschema and its needs; see docs/suite.md) travel with the
# call (carry: [".whl"]). Afterwards, here: python benchmarks/suite_merge.py DIR/suite-work.tgz
set -u
seconds=${1:-540}
families=${2:-}
until=$(( $(date +%s) + seconds ))
site=$PWD/.suite-work/site  # the wheels and kernelrules, inside the ignored work folder (kept while the machine is warm)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --no-build-isolation --upgrade --target "$site" .whl/*.whl . || exit 1
export PYTHONPATH=$site PYTHONUNBUFFERED=1
for attempt in 1 2 3 4 5 6; do
  python3 benchmarks/suite_sweep.py --until "$until" --families "$families" && break
  echo "sweep exited with $? (attempt $attempt); resuming"
  [ "$(date +%s)" -ge "$until" ] && break
done
mkdir -p "$OUT"
tar czf "$OUT/suite-work.tgz" .suite-work/*.jsonl
ls -la "$OUT"
