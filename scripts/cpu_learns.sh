#!/usr/bin/env bash
# Does the CPU preset learn? Train configs/tiny_learn.toml from a fresh run folder, then score
# its final adapter against the base model on held-out seeds of the six easy games (the eval
# command's `test` split, seeds >= 2**31, which training never draws) and print the paired
# delta of the mean episode return with its 95% interval, overall and per game.
# Not part of CI: about 22-25 minutes of training plus ~10 minutes of evaluation on 2 cores
# (measured: 1508 s training, 499 s + 124 s evaluation; delta +0.393 [+0.332, +0.452]).
#
#   scripts/cpu_learns.sh                     # fresh folder under runs/
#   RUN_DIR=runs/mine EPISODES=48 scripts/cpu_learns.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SPADE=${SPADE:-spade-async}
if ! command -v "$SPADE" >/dev/null 2>&1; then
    SPADE=".venv/bin/spade-async"   # after `make setup`
fi
RUN_DIR=${RUN_DIR:-runs/cpu_learns-$(date +%Y%m%d-%H%M%S)}
EPISODES=${EPISODES:-48}            # per game: 6 x 48 = 288 paired episodes
CONFIG=${CONFIG:-configs/tiny_learn.toml}

if [ -e "$RUN_DIR/run.sqlite" ]; then
    echo "$RUN_DIR already holds a run; choose a fresh RUN_DIR" >&2
    exit 2
fi

echo "== training $CONFIG into $RUN_DIR ($(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg))"
start=$(date +%s)
"$SPADE" run "$CONFIG" --headless --set "run.run_dir=\"$RUN_DIR\""
echo "== training took $(( $(date +%s) - start )) s"

echo "== held-out evaluation: base vs the final adapter, games:easy, $EPISODES episodes per game, test split"
"$SPADE" eval "$RUN_DIR" --step last --suite games:easy --episodes "$EPISODES" --split test
