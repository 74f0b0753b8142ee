#!/usr/bin/env bash
# This tree's campaign engine against an earlier tree's, on the earlier tree's substrates, on the GPU machine, cold
# caches: whether a faster engine decides what the earlier one decided (statuses and killers, report_diff), apart
# from what changed in the substrates since. The earlier tree's candidate files are gated by this tree into a folder
# of their own (--no-sanitize: the earlier gate's checks), this tree's campaign runs on that folder checked and
# unchecked, and the earlier tree's own campaign runs in its tree.
#
# Usage (repository root): git archive --format=tar.gz --prefix=prev/ COMMIT > scratch/earlier.tar.gz (here, with
# scratch/ in .git/info/exclude, carried), then on the device: bash tests/engine_ab.sh scratch/earlier.tar.gz
# Writes $OUT/engine-ab.tar.gz (the logs and the four reports); prints a line per run and per comparison.
set -u
tarball=$1
export PYTHONUNBUFFERED=1 PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-/tmp/pycache}
unset PYTHONDONTWRITEBYTECODE  # the device sets it: every process would compile torch's modules again
out=/tmp/engine-ab; rm -rf $out /tmp/engine-ab-tree; mkdir -p $out /tmp/engine-ab-tree
trap 'tar czf ${OUT:-/tmp}/engine-ab.tar.gz -C $out .' EXIT
tar xzf "$tarball" -C /tmp/engine-ab-tree
earlier=/tmp/engine-ab-tree/prev subs=/tmp/engine-ab-substrates
rm -rf $subs; mkdir -p $subs; cp $earlier/substrates/candidate_*.py $subs/
python3 gate.py --no-progress --no-sanitize $subs/candidate_*.py > $out/gate.log 2>&1
echo "this tree's gate of the earlier substrates exit $?: $(tail -n 1 $out/gate.log)"
campaign() {  # NAME DIR ARGS...: a campaign run in DIR, cold
  local name=$1 dir=$2; shift 2
  rm -rf /tmp/engine-ab-cache-$name /tmp/engine-ab-jit-$name /tmp/engine-ab-store-$name.jsonl
  (cd "$dir" && CUDA_CACHE_PATH=/tmp/engine-ab-jit-$name timeout "${LIMIT:-240}" python3 -m harness.campaign --backend cuda \
     --no-progress --store /tmp/engine-ab-store-$name.jsonl --cache-dir /tmp/engine-ab-cache-$name --json $out/$name.json \
     "$@" > $out/$name.log 2>&1)
  echo "$name exit $?: $(tail -n 1 $out/$name.log)"
}
campaign this-checked "$PWD" --substrates-dir $subs --oracles values
campaign this-unchecked "$PWD" --substrates-dir $subs --oracles values --address-check off
campaign earlier "$earlier" --workers 12
for pair in "earlier this-unchecked" "earlier this-checked" "this-unchecked this-checked"; do
  set -- $pair
  echo "$1 against $2: $(python3 -m harness.report_diff $out/$1.json $out/$2.json | tail -n 1)"
done
