#!/usr/bin/env bash
# The gate at an earlier tree against this one, on the GPU machine, in turns, warm compile cache: a same-call
# baseline for a change to the gate's speed.
#
# Usage (repository root): git archive --format=tar.gz --prefix=prev/ COMMIT > scratch/prev.tar.gz  (here, untracked:
# it travels with the working tree), then on the device: bash tests/gate_ab.sh scratch/prev.tar.gz [ROUNDS] [J:P...]
#   ROUNDS  rounds of (earlier, this) gates, default 2; J:P: this tree's gate once more with --jobs J and
#   --sanitize-processes P, for each pair given.
# Run after a gate has warmed the compile cache (tests/gpu_session.sh GATE=1): both trees compile the same sources.
set -uo pipefail
tarball=$1 rounds=${2:-2}
shift $(( $# < 2 ? $# : 2 ))
export PYTHONUNBUFFERED=1 SUBSTRATE_CACHE_DIR=${SUBSTRATE_CACHE_DIR:-/tmp/nvrtc-cache}
export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-/tmp/pycache}
unset PYTHONDONTWRITEBYTECODE
work=/tmp/gate-ab
rm -rf "$work" && mkdir -p "$work" && tar xzf "$tarball" -C "$work"
line() {  # what a gate's log says of its time
  echo "$(grep -E '^sanitizers:' "$1" | grep -oE '(memcheck|racecheck) [0-9.]+ s \(start [0-9.]+ s(, ahead)?, loading [0-9.]+ s, cases [0-9.]+ s' | tr '\n' ';') $(grep -E '^timeline:' "$1") · $(tail -n 1 "$1")"
}
for round in $(seq 1 "$rounds"); do
  for side in earlier this; do
    dir=$PWD; [ $side = earlier ] && dir=$work/prev
    (cd "$dir" && python3 gate.py --no-progress --no-record > "$work/$side-$round.log" 2>&1)
    echo "$side $round: $(line "$work/$side-$round.log")"
  done
done
for run in "$@"; do
  jobs=${run%%:*} processes=${run##*:}
  log=$work/this-$jobs-$processes.log
  python3 gate.py --no-progress --no-record --jobs "$jobs" --sanitize-processes "$processes" > "$log" 2>&1
  echo "this --jobs $jobs --sanitize-processes $processes: $(line "$log")"
done
