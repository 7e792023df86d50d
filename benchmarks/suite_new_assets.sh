#!/usr/bin/env bash
# What the live device runs carry, made once per checkout: the wheels of kernelrules' dependencies that the GPU
# machine lacks, and the archives of older commits to compare with or to pin.
#
#   bash benchmarks/suite_new_assets.sh [--ab COMMIT]... [--pin COMMIT]...
#
# Writes .suite-new/.whl/ (the wheels, for Python 3.12 on x86-64 Linux), .suite-new/ab/<COMMIT>.tgz (what
# suite_live_ab.sh takes as OLD_TGZ) and .suite-new/pin/<COMMIT>.tgz (the whole tree, for runs pinned to a commit,
# e.g. the live TPE series), and adds .suite-new/ and .whl/ to .git/info/exclude. A device call then carries
# [".suite-new"]. Existing files are kept; an archive is written to a temporary name and moved into place.
set -euo pipefail
cd "$(dirname "$0")/.."
ab=(); pin=()
while [ $# -gt 0 ]; do
  case $1 in
    --ab) ab+=("$2"); shift 2 ;;
    --pin) pin+=("$2"); shift 2 ;;
    *) echo "usage: bash benchmarks/suite_new_assets.sh [--ab COMMIT]... [--pin COMMIT]..." >&2; exit 2 ;;
  esac
done
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")" .suite-new/ab .suite-new/pin
for line in /.whl/ /.suite-new/; do
  grep -qxF "$line" "$exclude" 2>/dev/null || echo "$line" >> "$exclude"
done
if ! ls .suite-new/.whl/optuna-*.whl >/dev/null 2>&1; then
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_24_x86_64 -d .suite-new/.whl lark==1.2.2 jsonschema==4.23.0 \
    jsonschema-specifications==2024.10.1 referencing==0.35.1 rpds-py==0.22.3 optuna==4.6.0 alembic==1.14.0 \
    sqlalchemy==2.0.36 colorlog==6.9.0 Mako==1.3.8 greenlet==3.1.1
fi
archive() {  # archive OUT COMMIT [PATHS...]
  local out=$1; shift
  [ -f "$out" ] && return 0
  git archive --format=tar.gz -o "$out.part" "$@" && mv "$out.part" "$out"
}
for commit in ${ab[@]+"${ab[@]}"}; do
  archive ".suite-new/ab/$commit.tgz" "$commit" kernelrules rules arch_profiles analyzers benchmarks/h200_tune.py \
    benchmarks/suite pyproject.toml README.md examples
done
for commit in ${pin[@]+"${pin[@]}"}; do
  archive ".suite-new/pin/$commit.tgz" "$commit"
done
ls -la .suite-new .suite-new/ab .suite-new/pin | grep -v '^total'
