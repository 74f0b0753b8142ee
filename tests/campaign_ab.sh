#!/usr/bin/env bash
# The campaign at an earlier tree against this one, on the GPU machine, in turns, each cold (tests/gpu_session.sh
# CAMPAIGN=check: value suites, the address check on, the default workers): a same-call baseline for a change to the
# campaign's speed. One run a side is not enough: the twenty-fifth session's pair differed by 16% with the cause
# never found (MEASUREMENTS.md).
#
# Usage (repository root): git archive --format=tar.gz --prefix=prev/ COMMIT > scratch/prev.tar.gz  (here, untracked:
# it travels with the working tree), then on the device:
#   bash tests/campaign_ab.sh scratch/prev.tar.gz UNCHECKED_REPORT [ROUNDS]
# UNCHECKED_REPORT: an unchecked campaign's report (--address-check off) that every run's statuses are compared with;
# ROUNDS of (earlier, this), default 3. Each run's logs are packed into $OUT/campaign-ab.tar.gz.
set -uo pipefail
tarball=$1 against=$(realpath "$2") rounds=${3:-3}
work=/tmp/campaign-ab results=${OUT:-/tmp/campaign-ab-out}
rm -rf "$work" && mkdir -p "$work" "$results" && tar xzf "$tarball" -C "$work"
for round in $(seq 1 "$rounds"); do
  for side in earlier this; do
    dir=$PWD; [ $side = earlier ] && dir=$work/prev
    logs=$work/$side-$round
    rm -rf /tmp/gpu-session && mkdir -p "$logs"
    (cd "$dir" && OUT="$logs" GATE=0 TESTS=none BENCH=0 CAMPAIGN=check CHECK_AGAINST="$against" \
        CHECK_WORKERS=default bash tests/gpu_session.sh > "$logs/session.log" 2>&1)
    cp /tmp/gpu-session/campaign-checked-default.log "$logs/" 2>/dev/null
    echo "$side $round: $(grep -hE '^checked-default:|mutants have the same status' "$logs/session.log" | tr '\n' ' ')·" \
         "$(grep -hE '^compile pool:|^worker time' "$logs/campaign-checked-default.log" 2>/dev/null | tr '\n' ' ')"
    tar czf "$results/campaign-ab.tar.gz" -C "$work" --exclude=prev .
  done
done
