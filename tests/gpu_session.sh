#!/usr/bin/env bash
# Everything that must be proven on the lent GPU, in one call: the environment, the tests, the
# gate over every registered substrate, repeated gates of the nondeterministic (atomic)
# substrates, and the benchmark; the gate's summary table comes last.
#
# Usage (repository root, on the GPU machine): bash tests/gpu_session.sh
#   TESTS=gpu      run only the tests marked gpu (the rest run in CI); default: all tests
#   REPEATS=N      gate the atomic backward substrates N more times (default 0)
#   BENCH=0        skip the benchmark
#   KB_ROOT=DIR    also gate examples/kernelbench/ against the KernelBench checkout at DIR
set -uo pipefail
out=${OUT:-/tmp/gpu-session}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 SUBSTRATE_CACHE_DIR=/tmp/nvrtc-cache

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
g++ --version | head -n 1   # the CPU backend's compiler, for the fidelity test
python3 -c "import sys, torch, cuda.bindings, tqdm; from harness import nvrtc; \
print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda.bindings', cuda.bindings.__version__, \
'nvrtc', nvrtc.compiler_version())"

python3 gate.py --no-progress --jobs 4 --json "$out/gate.json" 2>&1 | tee "$out/gate.log"
echo "gate exit: ${PIPESTATUS[0]}"
cp substrates/admissions.json "$out/admissions.json" 2>/dev/null

python3 gate.py --no-progress --jobs 4 --json "$out/examples.json" examples/substrates/candidate_*.py 2>&1 \
  | tee "$out/examples.log"
echo "examples gate exit: ${PIPESTATUS[0]}"
cp examples/substrates/admissions.json "$out/examples-admissions.json" 2>/dev/null

if [ -n "${KB_ROOT:-}" ]; then
  python3 gate.py --no-progress --timeout 300 --kb-root "$KB_ROOT" --json "$out/kernelbench.json" \
    examples/kernelbench/candidate_*.py 2>&1 | tee "$out/kernelbench.log"
  echo "kernelbench gate exit: ${PIPESTATUS[0]}"
  cp examples/kernelbench/admissions.json "$out/kernelbench-admissions.json" 2>/dev/null
fi

marker=()
[ "${TESTS:-all}" = gpu ] && marker=(-m gpu)
python3 -m pytest -q -p no:cacheprovider "${marker[@]}" tests 2>&1 | tee "$out/pytest.log" | tail -n 25
echo "pytest exit: ${PIPESTATUS[0]}"


atomic=$(python3 gate.py --list | awk '/^pad_backward_(reflect|replicate)_/ {print $1}')
for i in $(seq 1 "${REPEATS:-0}"); do
  echo "repeat $i: $(python3 gate.py --no-progress --no-record --jobs 8 $atomic 2>&1 | tail -n 1)"
done | tee "$out/repeats.log"

[ "${BENCH:-1}" = 0 ] || python3 -m harness.bench --json "$out/bench.json" 2>&1 | tee "$out/bench.log"
tail -n 8 "$out/examples.log"
tail -n 32 "$out/gate.log"
