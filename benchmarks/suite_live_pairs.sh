#!/usr/bin/env bash
# A like-for-like live series: per problem, `kernelrules tune` and TPE on the raw space back to back on one GPU machine.
#
#   KR_COMMIT=<commit> [WARM=1] [STOP=0.02] bash benchmarks/suite_live_pairs.sh UNTIL_SECONDS KR_BUDGET TPE_BUDGET FAMILY/SHAPE=TARGET_MS ...
#
# WARM=1 makes every run a warm one (benchmarks/suite_live_tune.sh: the workers started by a one-trial warm-up run of
# the same space, in the same process), both sides alike. STOP=0.02 stops each run once it is within 2% of the sweep's
# best config as timed just before it (suite_live_tune.sh), both sides alike: more problems fit in a call (with
# WARM=1 only: a reference timed before a cold run would warm it).
#
# The two series of docs/suite.md's TPE comparison ran in different device calls, on different machines of the same
# kind; the same code's start-up differed by 2.2 s between two such machines (benchmarks/results/suite/
# ab-95a1e40-0b09095). Here both sides of each problem run in the same call, so the ratio compares like with like.
# Carry [".suite-new"] (its wheels, .suite-new/.whl). Installs the dependencies and the working tree into
# .suite-work/site, warms the machine once (torch on the GPU, Triton's import) so no run is the machine's first, then,
# while KR_BUDGET + TPE_BUDGET + 60 s are left of UNTIL_SECONDS, runs benchmarks/suite_live_tune.sh for each
# problem with METHOD=kernelrules and METHOD=tpe-raw, the first of the two alternating from one problem to the next.
# The items left to run of a series: python benchmarks/suite_live_targets.py --missing-from <its folders>.
# Every run's JSON goes into $OUT/suite-pairs.tgz (live-<problem>.json, tpe-raw-<problem>.json), rewritten after each
# problem, so a call cut short by its limit still returns the problems it finished. Afterwards, here:
#   mkdir -p benchmarks/results/suite/pairs-<commit> && tar xzf suite-pairs.tgz -C benchmarks/results/suite/pairs-<commit>
#   python benchmarks/suite_live_vs_tpe.py benchmarks/results/suite/pairs-<commit> benchmarks/results/suite/pairs-<commit> --table
set -u
until=$(( $(date +%s) + $1 )); kr_budget=$2; tpe_budget=$3; shift 3
# NEED=S: start another problem only while S seconds are left of UNTIL_SECONDS (default: both budgets + 60 s, a
# problem's worst case). With STOP=0.02 the H100 calls of pairs-2cb2fca-warm-h100 ran 7, 7 and 5 problems in
# 411-437 s (55-85 s a problem on average), so a smaller NEED fits more problems in a call; one cut short by the
# call's limit is lost, the finished ones are kept.
need=${NEED:-$(( kr_budget + tpe_budget + 60 ))}
site=$PWD/.suite-work/site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --no-build-isolation --upgrade --target "$site" \
  .suite-new/.whl/*.whl . || exit 1
ln -sfn "$PWD/.suite-new/.whl" .whl
PYTHONPATH=$site python3 -c "import torch, triton; torch.zeros(1, device='cuda'); torch.cuda.synchronize()" || exit 1
packed=$PWD/.suite-work/pairs-out
rm -rf "$packed" && mkdir -p "$packed" "$OUT"
# $OUT/suite-pairs.tgz holds every run finished so far, replaced whole (never half-written): the device tool returns
# what is under $OUT even when the call runs past its limit
pack() { tar czf "$OUT/suite-pairs.tgz.part" -C "$packed" . && mv -f "$OUT/suite-pairs.tgz.part" "$OUT/suite-pairs.tgz"; }
index=0
for item in "$@"; do
  left=$(( until - $(date +%s) ))
  if [ "$left" -lt "$need" ]; then echo "stopped before $item: ${left} s left"; break; fi
  if [ $(( index % 2 )) -eq 0 ]; then order="kernelrules tpe-raw"; else order="tpe-raw kernelrules"; fi
  for method in $order; do
    budget=$kr_budget; [ "$method" = tpe-raw ] && budget=$tpe_budget
    echo "== $method $item"
    METHOD=$method OUT=$packed bash benchmarks/suite_live_tune.sh "$budget" "$item"
  done
  index=$(( index + 1 ))
  pack  # after every problem: a call cut short by its limit keeps the problems it finished
done
pack
ls -la "$packed"
