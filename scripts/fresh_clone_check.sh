#!/usr/bin/env bash
# A fresh-clone rehearsal that means something: clone the current commit into a temporary
# folder, run CI's own script (.ci/run: make test, then make test-vllm-cpu) there, then run the
# suite a second time with the tests in a shuffled order (pytest-randomly, seed printed), so a
# test that passes only after (or before) another fails here before it lands.
#
#   bash scripts/fresh_clone_check.sh                 # everything (about twice CI's time)
#   SEED=1234 bash scripts/fresh_clone_check.sh       # repeat a shuffled order
#   SKIP_CI=1 PYTEST_ARGS="tests/tui tests/unit" bash scripts/fresh_clone_check.sh
#                                                     # only a shuffled pass over some folders
#
# Uncommitted changes are not in the clone: commit first (the script says which commit it checks).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
commit="$(git -C "$here" rev-parse HEAD)"
if [[ -n "$(git -C "$here" status --porcelain --untracked-files=no)" ]]; then
  echo "note: uncommitted changes in $here are not checked (only commit $commit is)" >&2
fi
work="$(mktemp -d -t spade-fresh-XXXXXX)"
trap 'rm -rf "$work"' EXIT
echo "fresh clone of $commit in $work"
git clone --quiet "$here" "$work/clone"
git -C "$work/clone" checkout --quiet "$commit"
cd "$work/clone"
if [[ -z "${SKIP_CI:-}" ]]; then
  echo "== .ci/run (CI's script) =="
  bash .ci/run
else
  make setup-dev   # pytest and pytest-randomly are in the dev extra
fi
seed="${SEED:-$RANDOM$RANDOM}"
echo "== the suite again in a shuffled order: --randomly-seed=$seed =="
# pyproject's addopts keep the default run in file order (-p no:randomly); this pass replaces them.
.venv/bin/pytest -o addopts="-ra --strict-markers" -p randomly --randomly-seed="$seed" ${PYTEST_ARGS:-}
echo "fresh-clone check of $commit passed (shuffled with seed $seed)"
