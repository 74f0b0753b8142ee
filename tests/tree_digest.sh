#!/usr/bin/env bash
# A digest of the code a tree holds (the Python, the CPU shim's headers, the scripts), so that what a call on
# the lent GPU ran can be matched to a commit: the device's copy of the tree carries a .git that may be stale,
# and its `git log` may name an older commit than the files it ran.
#
# Usage: bash tests/tree_digest.sh           this working tree's digest (tests/gpu_session.sh prints it)
#        bash tests/tree_digest.sh COMMIT    a commit's
set -euo pipefail
cd "$(dirname "$0")/.."
digest() {
  (cd "$1" && find gate.py harness substrates problems examples tests -type f \
     \( -name '*.py' -o -name '*.h' -o -name '*.sh' \) -not -path '*/__pycache__/*' -print0 \
     | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-12)
}
if [ $# -eq 0 ]; then
  digest .
else
  tree=$(mktemp -d)
  trap 'rm -rf "$tree"' EXIT
  git archive "$1" | tar -x -C "$tree"
  digest "$tree"
fi
