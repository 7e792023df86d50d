#!/usr/bin/env bash
# Live `kernelrules tune` runs on suite problems, to set against the replay (docs/suite.md).
#
#   [METHOD=tpe-raw] bash benchmarks/suite_live_tune.sh SECONDS FAMILY/SHAPE=TARGET_MS ...   (GPU machine, after suite_device.sh)
#
# Each run: benchmarks/h200_tune.py --methods $METHOD (default kernelrules; tpe-raw is TPE on the raw space,
# the baseline) with a time budget, its target the sweep's best time; after the budget (outside it) the
# sweep's best config is timed alone in the same way (``timed_config``); the run's JSON (with KR_COMMIT and the
# date) goes to $OUT/live-<family>__<shape>.json (kernelrules) or $OUT/<method>-<family>__<shape>.json.
set -u
seconds=$1; shift
export PYTHONPATH=$PWD/.suite-work/site PYTHONUNBUFFERED=1  # installed there by suite_device.sh
method=${METHOD:-kernelrules}
prefix=live; extra=()
# a baseline's runs are compared by their time to 2% only: no pick timed beside the reference, one final round
[ "$method" = kernelrules ] || { prefix=$method; extra=(--no-pair --top-k 1 --rounds 1); }
# WARM=1: h200_tune.py --warm: the run finds the benchmark worker and the compile workers started (a one-trial
# warm-up run first), as the later problems of `kernelrules tune A B ...` do; its JSON says "warm": true
[ -n "${WARM:-}" ] && extra+=(--warm)
# STOP=0.02: h200_tune.py --stop-within 0.02: the sweep's best config is timed before the run too, and the run stops
# once its best-so-far is within 2% of that time (measured against the same reference, so nothing of the time to 2%
# is lost); the device time after it is saved for the next problem. With WARM=1 only (h200_tune.py refuses it
# otherwise): timed before a cold run, the reference would warm the run's process
[ -n "${STOP:-}" ] && extra+=(--stop-within "$STOP")
for item in "$@"; do
  problem=${item%%=*}; target=${item#*=}
  name=${problem/\//__}
  live=.suite-work/$prefix/$name
  best=$(python3 benchmarks/suite_live_targets.py --best-config "$name")
  # a fresh folder: an earlier call's study there (a warm machine) made h200_tune.py stop with "was made for another
  # kernel" or resume it, and its old run JSON was then stamped as this run's (pairs-ad2a2a2-cold, not committed)
  rm -rf "$live"
  python3 benchmarks/h200_tune.py --out "$live" --space "benchmarks/suite/$problem.tune.yaml" \
    --methods "$method" --time-budget "$seconds" --target-ms "$target" --time-config "$best" "${extra[@]}" 2>&1 | tail -8
  rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then echo "== $method $item FAILED (h200_tune.py exit $rc): no JSON kept"; continue; fi
  python3 benchmarks/suite_stamp_run.py "$live/run-$method-0.json" "$OUT/$prefix-$name.json"
done
