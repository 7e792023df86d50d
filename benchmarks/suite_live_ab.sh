#!/usr/bin/env bash
# A/B of live `kernelrules tune` runs on one GPU machine: an older commit against the working tree.
#
#   bash benchmarks/suite_live_ab.sh UNTIL_SECONDS BUDGET_SECONDS OLD_TGZ VARIANTS FAMILY/SHAPE=TARGET_MS ...
#
# OLD_TGZ is `git archive --format=tar.gz OLD kernelrules rules arch_profiles analyzers benchmarks/h200_tune.py
# benchmarks/suite pyproject.toml README.md` (carried with the wheels of .suite-new/.whl). VARIANTS is a
# comma-separated list of old, head and head-do_bench (the working tree with `--timer do_bench`); for each
# problem every variant runs once, in that order, each with its own code's benchmarks/h200_tune.py, while
# BUDGET + 30 s are left of UNTIL_SECONDS, after one warm-up of the machine (torch on the GPU). Every run's JSON goes into $OUT/suite-ab.tgz as
# ab-<variant>-<family>__<shape>.json with the commit it ran. The dependencies (wheels) are shared.
set -u
until=$(( $(date +%s) + $1 )); budget=$2; old_tgz=$3; variants=$4; shift 4
work=$PWD/.suite-work
deps=$work/site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --no-build-isolation --upgrade --target "$deps" .suite-new/.whl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --no-build-isolation --upgrade --target "$work/site-head" . || exit 1
rm -rf "$work/old" && mkdir -p "$work/old" && tar xzf "$old_tgz" -C "$work/old" || exit 1
(cd "$work/old" && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --no-build-isolation --upgrade --target "$work/site-old" .) || exit 1
# warm the machine once (torch on the GPU, Triton's import) so that no variant's run is the machine's first
PYTHONPATH=$work/site-head:$deps python3 -c "import torch, triton; torch.zeros(1, device='cuda'); torch.cuda.synchronize()" || exit 1
packed=$work/ab-out
rm -rf "$packed" && mkdir -p "$packed"
export PYTHONUNBUFFERED=1
for item in "$@"; do
  problem=${item%%=*}; target=${item#*=}
  name=${problem/\//__}
  best=$(PYTHONPATH=$work/site-head:$deps python3 benchmarks/suite_live_targets.py --best-config "$name")
  for variant in ${variants//,/ }; do
    left=$(( until - $(date +%s) ))
    if [ "$left" -lt $(( budget + 30 )) ]; then echo "stopped before $variant $item: ${left} s left"; break 2; fi
    case $variant in
      old) tree=$work/old; site=$work/site-old; extra=() ;;
      head) tree=$PWD; site=$work/site-head; extra=() ;;
      head-do_bench) tree=$PWD; site=$work/site-head; extra=(--timer do_bench) ;;
      *) echo "unknown variant $variant"; exit 2 ;;
    esac
    live=$work/ab/$variant/$name
    rm -rf "$live"
    (cd "$tree" && PYTHONPATH=$site:$deps python3 benchmarks/h200_tune.py --out "$live" \
      --space "benchmarks/suite/$problem.tune.yaml" --methods kernelrules --time-budget "$budget" \
      --target-ms "$target" --time-config "$best" "${extra[@]}" 2>&1 | tail -4)
    python3 benchmarks/suite_stamp_run.py "$live/run-kernelrules-0.json" "$packed/ab-$variant-$name.json" --variant "$variant"
  done
done
mkdir -p "$OUT"
tar czf "$OUT/suite-ab.tgz" -C "$packed" .
ls -la "$packed"
