#!/usr/bin/env bash
# One device call of live `kernelrules tune` runs on suite problems, packed into one file.
#
#   [METHOD=tpe-raw] bash benchmarks/suite_live_device.sh UNTIL_SECONDS BUDGET_SECONDS FAMILY/SHAPE=TARGET_MS ...
#
# Installs kernelrules and the wheels of .whl (carry: [".whl"]; docs/suite.md lists them), then
# runs benchmarks/suite_live_tune.sh for each problem while at least BUDGET + 20 s are left of
# UNTIL_SECONDS, and packs every run's JSON into $OUT/suite-live.tgz (the device tool returns at
# most 8 files). Afterwards, here: tar xzf suite-live.tgz -C benchmarks/results/suite/live-COMMIT (the series'
# folder; suite_report.py's LIVE_SERIES names the one docs/suite.md reads)
set -u
until=$(( $(date +%s) + $1 )); budget=$2; shift 2
site=$PWD/.suite-work/site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --no-build-isolation --upgrade --target "$site" .whl/*.whl . || exit 1
packed=$PWD/.suite-work/live-out
mkdir -p "$packed"
for item in "$@"; do
  left=$(( until - $(date +%s) ))
  if [ "$left" -lt $(( budget + 20 )) ]; then echo "stopped before $item: ${left} s left"; break; fi
  OUT=$packed bash benchmarks/suite_live_tune.sh "$budget" "$item"
done
mkdir -p "$OUT"
tar czf "$OUT/suite-live.tgz" -C "$packed" .
ls -la "$packed"
