#!/usr/bin/env bash
# Everything that must be proven on the lent GPU, in one call: the environment, the GPU tests,
# the gate over every registered substrate; the gate's summary table comes last.
# Usage (repository root, on the GPU machine): bash tests/gpu_session.sh
set -uo pipefail
out=${OUT:-/tmp/gpu-session}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 SUBSTRATE_CACHE_DIR=/tmp/nvrtc-cache

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
g++ --version | head -n 1   # the CPU backend's compiler, for the fidelity test
python3 -c "import sys, torch, cuda.bindings, tqdm; from harness import nvrtc; \
print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda.bindings', cuda.bindings.__version__, \
'nvrtc', nvrtc.compiler_version())"

python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tee "$out/pytest.log" | tail -n 25
echo "pytest exit: ${PIPESTATUS[0]}"

python3 gate.py --no-progress --json "$out/gate.json" 2>&1 | tee "$out/gate.log"
echo "gate exit: ${PIPESTATUS[0]}"
cp substrates/admissions.json "$out/admissions.json" 2>/dev/null
# A second, warm-cache run: how long the gate takes once every kernel is compiled.
python3 gate.py --no-progress --no-record 2>&1 | tail -n 1
python3 -m harness.bench --json "$out/bench.json" 2>&1 | tee "$out/bench.log"
tail -n 7 "$out/gate.log"
