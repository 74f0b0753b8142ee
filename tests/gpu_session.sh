#!/usr/bin/env bash
# Everything that must be proven on the lent GPU, in one call: the environment, the tests, the
# gate over every registered substrate, repeated gates of the nondeterministic (atomic)
# substrates, and the benchmark; the gate's summary table comes last.
#
# Usage (repository root, on the GPU machine): bash tests/gpu_session.sh
#   TESTS=gpu      run only the tests marked gpu (the rest run in CI); default: all tests
#   REPEATS=N      gate the atomic backward substrates N more times (default 0)
#   BENCH=0        skip the benchmark
#   KB_ROOT=DIR    the KernelBench checkout for KB_GATE and KB_BENCH
#   KB_GATE=1      also gate examples/kernelbench/ against it (at the problems' real sizes: minutes)
#   GATE=0         skip the gates (the admission records in the tree are used as they are)
#   TESTS=none     skip the tests
#   TEST_FILES="F ..."  the test files (or folders) to run (default: tests)
#   PYCACHE=0      leave Python's bytecode as the device has it: not written (PYTHONDONTWRITEBYTECODE=1) and not
#                  shipped with its packages, so every process compiles torch's modules again; by default it is
#                  written once under /tmp/pycache, as a pip install on a user's machine has it
#   PYTEST_WORKERS=N  the tests on N pytest-xdist processes, a file to a worker (the device has xdist; the
#                  GPU tests take about 600 s on one, more than a call holds beside the gates)
#   GATE_SPEED=1   the gate over the 28, warm cache, --no-record, at each of GATE_SPEED_RUNS ("JOBS:PROCESSES"
#                  pairs: --jobs and --sanitize-processes, and a third field, OMP_NUM_THREADS, if given; default
#                  "4:1 16:1 16:2 16:4"), GATE_SPEED_ROUNDS times each (default 2)
#   CAMPAIGN=gpus  a campaign over every admitted substrate on every GPU, then the same on the first GPU
#                  alone, each with a cold compile cache, GPU utilisation sampled, statuses compared
#   WORKERS_PER_GPU=N  campaign workers per GPU (default 4)
#   NAIVE=1        the naive mode (a process and a compile per mutant) against the campaign, on the
#                  guard_deletion mutants of every admitted substrate, same workers, cold caches;
#                  NAIVE=whole: the same on every mutant of three whole substrates (the CPU set); NAIVE=sample:
#                  the naive mode alone on NAIVE_SAMPLE (default 100) mutants drawn over every substrate (--sample);
#                  NAIVE=names: the naive mode alone on the substrates NAIVE_NAMES (a share of the 28 a call's limit
#                  holds: the rest in the next call, as campaign naive-NAIVE_PART)
#   EXAMPLES=1     a campaign over examples/substrates on every GPU
#   SCALING=1      campaigns over four substrates on the first GPU with 1, 2 and 4 workers, and with 4
#                  workers and --batch-size 1
#   CAMPAIGN=one   only the campaign over every admitted substrate on every GPU
#   CAMPAIGN=check the campaign over every admitted substrate, value suites only, with --address-check off (a fault
#                  ends its worker), then on (faults foreseen) at each of CHECK_WORKERS (default "4"; "12:16": 12 workers
#                  and --compilers 16; "12:16:2": and OMP_NUM_THREADS=2; "default": no --workers), statuses compared
#   CHECK_ROUNDS=N  with CAMPAIGN=check: the checked campaigns N times over, in turn (names end -round-R)
#   CHECK_AGAINST=FILE  with CAMPAIGN=check: no unchecked campaign; each checked one compared with FILE (an unchecked
#                  report of an earlier run in this call, e.g. another tree's)
#   SCALING_WORKERS="1 2 4"  the worker counts SCALING tries
#   KB_BENCH="FILES"  with KB_ROOT: python -m harness.benchmarks.gate on these examples/kernelbench candidates at
#                  the problems' real sizes; the baselines (KernelBench-style checks) and the gates run as two
#                  chains at once, in opposite orders (one call's time limit holds no more); admissions recorded
#   KB_SEQUENTIAL=1  with KB_BENCH: per candidate the baseline, then the gate, nothing beside them
#   KB_CHAINS=N    with KB_SEQUENTIAL: N chains at once, chain c on GPU c mod the GPUs (and, with a GPU each, a Nth
#                  of the cores)
#   KB_REPEAT=N    with KB_SEQUENTIAL: N rounds of baseline and gate per candidate, their medians printed
#   RESUME_FROM=DIR  a campaign starts from DIR/campaign-NAME/results.jsonl where there is one (an earlier
#                  call's session.tar.gz unpacked into a carried folder): a campaign cut off by a call's limit
#                  goes on in the next call with nothing redone
#   CLUSTER=1      the campaign over every admitted substrate on a local Dask cluster (--scheduler local), then
#                  the same on this host's workers, value suites only, statuses compared; the device has no dask: carry .whl (the
#                  wheels of dask[distributed] and its needs the device lacks), installed into /tmp/site; then
#                  the gate on that cluster, its verdicts compared with GATE=1's; CLUSTER_LIMIT=S ends the cluster's
#                  campaign after S seconds (default 420), its store kept; CLUSTER_PARTS="cluster here gate" (the
#                  default) picks which of the three run: the campaigns in two calls, RESUME_FROM holding the first's
#   WARM=1         the campaign over every admitted substrate, value suites only, with --spare-workers warm (each
#                  slot's spare builds its substrate's trials ahead of a fault), statuses compared with CLUSTER's
#                  "here" run of this call where there is one; WARM_WORKERS="4 8" runs it with each count of
#                  workers per GPU in turn (default WORKERS_PER_GPU)
#   STARTUP=1      CUDA contexts made by 1, 2, 4, 8 and 16 processes at once, by torch and by the driver API
#   COMPILE_PROBE=1  tests/compile_probe.py, before everything else: a batch's compile steps timed, in a plain
#                  process and after torch has made a CUDA context
#   CONTEXT_FAULT=1  tests/context_fault_probe.py, before everything else: does a fault in a second context of a
#                  process spare the first, and can the process go on in a context made afresh?
#   CONTEXT_OVERLAP=1  tests/context_overlap_probe.py, before everything else: does making the backend in a thread
#                  leave the main thread free to draw on the CPU (1 and 8 processes at once)?
#   SPARES=1       campaigns over four substrates on the first GPU, 4 workers, without and with a worker
#                  started ahead per slot (--spare-workers never / always), twice each, statuses compared
#   BROKEN_BATCH=1 issue 45's batch of mostly broken candidates (tests/broken_batch.py: 40 one-substrate files, 38 with
#                  a bug the mutation operators make, 2 as they are): the gate over it with its sanitizers and with
#                  --no-sanitize, in turn, BROKEN_BATCH_ROUNDS times each (default 2), warm caches; the ratio of the
#                  medians printed last, and the verdicts of the two compared
#   MANY=1         issue 45's many files (tests/many_files.py: 100 one-substrate files, the corpus at stand-in sizes then
#                  the family): gated at once, then one at a time until MANY_BUDGET seconds (default 300), the rest
#                  counted at the mean; the ratio and the verdicts compared printed last
#   MATRIX=1       the full kill matrix (--matrix) over every admitted substrate, value suites only: first alone
#                  (campaign matrix-values: its time is the issue's 60 s figure), then again with each of
#                  MATRIX_CHECKERS (default "kernelbench kernelbench-v0 t0") as a --checker (campaign matrix); the
#                  per-suite table, the minimal sets and the checkers' lines printed last
#   COMPARE_SPEED=1  tests/compare_speed.py on the device (compare_close over a 256 MiB output), before the rest
#   ORACLES="NAME:ARGS;..."  issue 45's default campaign (every oracle) over the 28, cold, once per entry with ARGS
#                  added ("base;li5:--large-index-processes 5"), each entry's oracle lines and the large index's parts
#                  summed over its substrates printed, and its statuses and killers compared with the first's
#                  (harness.report_diff); an entry NAME@TARBALL runs the tree in TARBALL instead of this one (made here
#                  with `git archive --format=tar.gz --prefix=tree/ COMMIT > scratch/COMMIT.tar.gz`, named in the
#                  call's carry: a same-call baseline, "before@scratch/COMMIT.tar.gz;after")
#   SESSION_LIMIT=S  after S seconds the running step is interrupted as Ctrl-C interrupts it (a campaign keeps its
#                  store), the rest skipped and the work folder packed (tests/session_limit.sh): set it a minute
#                  under the call's limit, since a call the device kills at its limit brings nothing back
#   FLOOR=1        the matrix over the eight accumulating substrates (pad_backward_reflect_*, _replicate_*), value
#                  suites, one worker, --kernel-times (campaign floor): their kernels' device time with no other
#                  context beside them, the floor of the matrix's wall on one GPU (issue 43); RESUME_FROM goes on
#   MATRIX_KB=1    the same (with the checkers) over examples/kernelbench/candidate_*.py at the sizes of
#                  tests/kernelbench_standin (copies in $out/kb-standin, as CI shrinks them; no KB_ROOT), gated first
#                  so that their admissions are recorded (campaign matrix-kb)
set -uo pipefail
# The device tool brings back at most 8 files from $OUT: everything is written to a work folder,
# and after each step the folder is packed into $OUT/session.tar.gz, so a run cut off by its time
# limit still brings back all it had done.
out=/tmp/gpu-session
results=${OUT:-/tmp/gpu-session-out}
mkdir -p "$out" "$results"
# Under a lock: KB_CHAINS packs from several chains at once.
pack() { (flock 9; tar czf "$results/session.tar.gz" -C "$out" . 2>/dev/null) 9>/tmp/gpu-session-pack.lock; }
. tests/session_limit.sh
trap 'session_end; pack; session_exit' EXIT
trap 'pack; exit 143' TERM
session_limit "${SESSION_LIMIT:-0}"
export PYTHONUNBUFFERED=1 SUBSTRATE_CACHE_DIR=/tmp/nvrtc-cache
if [ "${PYCACHE:-1}" = 1 ]; then  # measured: `import torch` 4.6 s, torch._dynamo 1.8 s more, compiled each time
  unset PYTHONDONTWRITEBYTECODE
  export PYTHONPYCACHEPREFIX=/tmp/pycache
fi

# Wheels carried in .whl (dask[distributed] and the needs the device lacks: the device has no dask) are installed
# for every step, so tests/test_cluster.py is collected rather than skipped, and CLUSTER=1 can run.
if ! python3 -c "import distributed" 2>/dev/null && [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi

# The code this call runs, as `bash tests/tree_digest.sh COMMIT` gives a commit's (the device's git log may be stale).
echo "tree digest: $(bash tests/tree_digest.sh)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)  # the KernelBench chains and the campaigns
g++ --version | head -n 1   # the CPU backend's compiler, for the fidelity test
python3 -c "import sys, torch, cuda.bindings, tqdm; from harness.compiler import nvrtc; \
print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda.bindings', cuda.bindings.__version__, \
'nvrtc', nvrtc.compiler_version())"
# What the fork server's start costs here (the gate's "discovery" is mostly that start): its imports, in turn;
# twice, the first writing the bytecode the second reads (where PYCACHE allows it).
for round in 1 2; do python3 - <<'PY'
import importlib, sys, time
from harness.processes import FORK_SERVER_PRELOAD
started, parts = time.perf_counter(), []
for module in FORK_SERVER_PRELOAD:
    began = time.perf_counter()
    importlib.import_module(module)
    parts.append(f"{module} {time.perf_counter() - began:.2f}")
print(f"fork server imports: {time.perf_counter() - started:.2f} s (" + ", ".join(parts[:3]) + ", the rest "
      f"{time.perf_counter() - started - sum(float(p.split()[-1]) for p in parts[:3]):.2f}; bytecode "
      f"{'written to ' + str(sys.pycache_prefix) if not sys.flags.dont_write_bytecode else 'not written'})")
PY
done

# First, being seconds long: a call cut off by its limit still has it.
if [ "${COMPILE_PROBE:-0}" = 1 ]; then
  python3 tests/compile_probe.py 2>&1 | tee "$out/compile-probe.log"
  pack
fi
if [ "${CONTEXT_FAULT:-0}" = 1 ]; then
  python3 tests/context_fault_probe.py 2>&1 | tee "$out/context-fault.log"
  pack
fi
if [ "${COMPARE_SPEED:-0}" = 1 ]; then
  python3 tests/compare_speed.py head --device cuda 2>&1 | tee "$out/compare-speed.log"
fi
if [ "${CONTEXT_OVERLAP:-0}" = 1 ]; then
  python3 tests/context_overlap_probe.py 2>&1 | tee "$out/context-overlap.log"
  pack
fi

if [ "${GATE:-1}" != 0 ]; then
# With the sanitizers (the default where compute-sanitizer is found), under a limit: a sanitizer stage that
# hangs must not take the call's time; then the gate runs again without them, so the admissions are made.
timeout -s TERM "${GATE_LIMIT:-480}" python3 gate.py --no-progress --json "$out/gate.json" 2>&1 \
  | tee "$out/gate.log"
status=${PIPESTATUS[0]}
echo "gate exit: $status"
if [ "$status" = 124 ]; then
  echo "gate with the sanitizers passed ${GATE_LIMIT:-480} s: again without them"
  python3 gate.py --no-progress --no-sanitize --json "$out/gate.json" 2>&1 | tee "$out/gate.log"
  echo "gate (--no-sanitize) exit: ${PIPESTATUS[0]}"
fi
cp substrates/admissions.json "$out/admissions.json" 2>/dev/null
pack

python3 gate.py --no-progress --json "$out/examples.json" examples/substrates/candidate_*.py 2>&1 \
  | tee "$out/examples.log"
echo "examples gate exit: ${PIPESTATUS[0]}"
cp examples/substrates/admissions.json "$out/examples-admissions.json" 2>/dev/null

if [ -n "${KB_ROOT:-}" ] && [ "${KB_GATE:-0}" = 1 ]; then
  python3 gate.py --no-progress --timeout 300 --kb-root "$KB_ROOT" --json "$out/kernelbench.json" \
    examples/kernelbench/candidate_*.py 2>&1 | tee "$out/kernelbench.log"
  echo "kernelbench gate exit: ${PIPESTATUS[0]}"
  cp examples/kernelbench/admissions.json "$out/kernelbench-admissions.json" 2>/dev/null
fi
fi

if [ -n "${KB_BENCH:-}" ] && [ -n "${KB_ROOT:-}" ]; then
  # shellcheck disable=SC2086
  reversed=$(printf '%s\n' $KB_BENCH | tac | tr '\n' ' ')
  free -g | head -n 2; df -h /dev/shm | tail -n 1
  # One harness.benchmarks.gate per candidate, the work folder packed after each: a call cut off keeps what it finished.
  if [ "${KB_SEQUENTIAL:-0}" = 1 ]; then
  # Baseline, then gate, per candidate, nothing else running: the cleanest ratio, and twice the time.
  # KB_CHAINS=N: N such chains at once, the candidates dealt round robin, chain c on GPU c mod the GPUs and on
  # the c-th Nth of the cores (taskset): on a machine of N GPUs each candidate gets what the one-GPU machine
  # gives; on fewer GPUs chains share one (a candidate's baseline and gate then both run beside the others).
  chains=${KB_CHAINS:-1}; per_chain=$(( $(nproc) / chains ))
  kb_chain() {
    local c=$1; shift
    local log="$out/kb-both.log" pin=()
    if [ "$chains" -gt 1 ]; then
      log="$out/kb-both-chain$c.log"
      # Chains sharing a GPU share the cores too (the scheduler gives a gate's helpers what the others leave idle).
      [ "$gpus" -ge "$chains" ] && command -v taskset >/dev/null \
        && pin=(taskset -c "$((c * per_chain))-$((c * per_chain + per_chain - 1))")
    fi
    for f in "$@"; do
      name=$(basename "$f" .py)
      if [ "$chains" -gt 1 ]; then export CUDA_VISIBLE_DEVICES=$((c % gpus)); fi
      "${pin[@]}" python3 -m harness.benchmarks.gate --record --kb-root "$KB_ROOT" --timeout 300 --repeat "${KB_REPEAT:-1}" \
        --json "$out/kb-both-$name.json" "$f" >> "$log" 2>&1
      echo "kb bench $name exit: $?"; grep -E "^kb_|phases|gate:|baseline:" "$log" | tail -n 4
      # The table below reads gates from kb-gate-*.json and baselines from kb-baseline-*.json: this file is both.
      cp "$out/kb-both-$name.json" "$out/kb-gate-$name.json"; cp "$out/kb-both-$name.json" "$out/kb-baseline-$name.json"
      cp examples/kernelbench/admissions.json "$out/kernelbench-admissions.json" 2>/dev/null
      pack
    done
  }
  # shellcheck disable=SC2086
  set -- $KB_BENCH
  for c in $(seq 0 $((chains - 1))); do
    mine=(); for ((i = c; i < $#; i += chains)); do mine+=("${@:i+1:1}"); done
    if [ "$chains" -gt 1 ]; then kb_chain "$c" "${mine[@]}" & else kb_chain "$c" "${mine[@]}"; fi
  done
  wait
  if [ "$chains" -gt 1 ]; then cat "$out"/kb-both-chain*.log >> "$out/kb-both.log"; fi
  else
  (for f in $KB_BENCH; do
     python3 -m harness.benchmarks.gate --no-gate --kb-root "$KB_ROOT" --timeout 300 \
       --json "$out/kb-baseline-$(basename "$f" .py).json" "$f" >> "$out/kb-baseline.log" 2>&1
   done) &
  baseline_chain=$!
  for f in $reversed; do
    python3 -m harness.benchmarks.gate --no-baseline --record --kb-root "$KB_ROOT" --timeout 300 \
      --json "$out/kb-gate-$(basename "$f" .py).json" "$f" >> "$out/kb-gate.log" 2>&1
    echo "kb gate $(basename "$f" .py) exit: $?"
    cp examples/kernelbench/admissions.json "$out/kernelbench-admissions.json" 2>/dev/null
    pack
  done
  wait "$baseline_chain"; echo "kb baseline chain exit: $?"
  fi
  python3 - "$out" <<'PY' | tee "$out/kb-table.md"
import glob, json, sys
rows = lambda pattern: [r for f in sorted(glob.glob(f"{sys.argv[1]}/{pattern}")) for r in json.load(open(f))["rows"]]
gate = {r["substrate"]: r for r in rows("kb-gate-*.json")}
base = {r["substrate"]: r["baseline"] for r in rows("kb-baseline-*.json")}
gib = lambda b: f"{b / 2**30:.1f}" if b else "n/a"
print("| substrate | gate | gate s | gate peak GiB | baseline | baseline s | baseline peak GiB | time x | memory x |")
print("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
for name, g in gate.items():
    b = base.get(name, {})
    gs, bs = g["gate_wall_seconds"], b.get("wall_seconds")
    gm, bm = g["gate_peak_reserved_bytes"], b.get("peak_reserved_bytes")
    result = f"{b.get('trials_passed')}/{b.get('trials')}" if b else "not run"
    ratio = f"{gs / bs:.2f}" if bs else "n/a"
    print(f"| {name} | {g['gate_verdict']} | {gs:.1f} | {gib(gm)} | {result} | "
          f"{bs or float('nan'):.1f} | {gib(bm)} | {ratio} | {(gm / bm) if gm and bm else float('nan'):.2f} |")
    for reason in g["gate_reasons"]:
        print(f"|   {reason[:300]} |")
    phases = list(g.get("gate_phase_seconds", {}).items())[:6]
    if phases:
        calls = g.get("gate_phase_calls", {})
        note = lambda k, v: (f" ({calls[k]['calls']} calls, longest {calls[k]['longest']:.2f})"
                             if k in calls and calls[k]["calls"] > 1 and calls[k]["longest"] >= 0.1 * v else "")
        print("|   gate phases (s): " + ", ".join(f"{k} {v:.1f}{note(k, v)}" for k, v in phases) + " |")
medians = [m for f in sorted(glob.glob(f"{sys.argv[1]}/kb-both-*.json")) for m in json.load(open(f)).get("medians", [])]
for m in medians:  # KB_REPEAT: the table above shows each substrate's last round
    print(f"{m['substrate']}: {m['rounds']} rounds, median wall x {m['wall_ratio']:.2f} (rounds: "
          f"{', '.join(f'{r:.2f}' for r in m['wall_ratios'])}), median mem x {m['memory_ratio'] or float('nan'):.2f}")
PY
  pack
fi

marker=()
[ "${TESTS:-all}" = gpu ] && marker=(-m gpu)
# --dist loadfile: a file's tests on one worker, so a module's fixture (test_gate_end_to_end's gates) is built
# once, not once per worker that draws one of its tests.
[ -n "${PYTEST_WORKERS:-}" ] && marker+=(-n "$PYTEST_WORKERS" --dist loadfile)
if [ "${TESTS:-all}" != none ]; then
  # -v: a run cut off by the call's limit still shows which tests ran; the slowest are listed last.
  python3 -m pytest -v -rfEs --durations=25 -p no:cacheprovider "${marker[@]}" ${TEST_FILES:-tests} 2>&1 | tee "$out/pytest.log" \
    | grep -vE " PASSED|^tests/.* SKIPPED" | tail -n 70
  echo "pytest exit: ${PIPESTATUS[0]}"
  pack
fi


if [ "${GATE_SPEED:-0}" = 1 ]; then
  python3 gate.py --no-progress --no-record --jobs 16 > /dev/null 2>&1  # the compile cache warm
  for round in $(seq 1 "${GATE_SPEED_ROUNDS:-2}"); do
    for run in ${GATE_SPEED_RUNS:-4:1 16:1 16:2 16:4}; do
      IFS=: read -r jobs processes threads <<< "$run"
      # A third field: torch's threads in every process of the gate (OMP_NUM_THREADS, read as torch loads), which
      # by default are as many as the cores in each of the jobs' workers.
      name=$jobs-$processes${threads:+-t$threads}-$round
      log=$out/gate-speed-$name.log
      ${threads:+env OMP_NUM_THREADS=$threads} python3 gate.py --no-progress --no-record --jobs "$jobs" \
        --sanitize-processes "$processes" > "$log" 2>&1
      echo "gate --jobs $jobs --sanitize-processes $processes${threads:+ OMP_NUM_THREADS=$threads} (round $round):" \
        "$(grep -E '^sanitizers:' "$log" | sed 's/ (.*//') · $(grep -E '^timeline:' "$log") · $(tail -n 1 "$log")"
    done
  done | tee "$out/gate-speed.log"
  pack
fi

atomic=$(python3 gate.py --list | awk '/^pad_backward_(reflect|replicate)_/ {print $1}')
for i in $(seq 1 "${REPEATS:-0}"); do
  echo "repeat $i: $(python3 gate.py --no-progress --no-record --jobs 8 $atomic 2>&1 | tail -n 1)"
done | tee "$out/repeats.log"

[ "${BENCH:-1}" = 0 ] || python3 -m harness.benchmarks.kernels --json "$out/bench.json" 2>&1 | tee "$out/bench.log"

# campaign NAME: every admitted substrate, a cold cache and a store of its own, GPU utilisation
# sampled every 250 ms while it runs; extra arguments go to the campaign.
campaign() {
  local name=$1; shift
  session_stopped && return 130
  if [ -n "${RESUME_FROM:-}" ] && [ -f "$RESUME_FROM/campaign-$name/results.jsonl" ]; then
    mkdir -p "$out/campaign-$name"
    cp "$RESUME_FROM/campaign-$name/results.jsonl" "$out/campaign-$name/results.jsonl"
    echo "campaign $name resumes from $(wc -l < "$out/campaign-$name/results.jsonl") stored results"
  fi
  # Cold: the device's /tmp can outlive a call (and a session), and with it an earlier call's cache of this name.
  # And a JIT cache of its own (CUDA_CACHE_PATH): on the device a second compile of the same PTX, even in another
  # process, took a fortieth of the first (tests/compile_probe.py; MEASUREMENTS.md, twenty-first session).
  rm -rf "/tmp/cache-$name" "/tmp/jit-cache-$name"
  nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 250 > "$out/$name.smi" &
  local sampler=$!
  # The store's length every 5 s: a campaign cut off by the call's limit still shows when its last result came.
  (start=$(date +%s); while sleep 5; do
     echo "$(( $(date +%s) - start )) s: $(cat "$out/campaign-$name/results.jsonl" 2>/dev/null | wc -l) stored"
   done) > "$out/$name.progress" &
  local counter=$!
  # LIMIT=S: the campaign ends (SIGTERM) after S seconds, its store kept; 0, the default: no limit.
  CUDA_CACHE_PATH="/tmp/jit-cache-$name" timeout -s TERM "${LIMIT:-0}" python3 -m harness.campaign --backend cuda --no-progress --store "$out/campaign-$name/results.jsonl" \
    --cache-dir "/tmp/cache-$name" --json "$out/campaign-$name.json" "$@" > "$out/campaign-$name.log" 2>&1
  echo "campaign $name exit: $?"
  kill "$sampler" "$counter"; wait "$sampler" "$counter" 2>/dev/null
  tail -n 1 "$out/campaign-$name.log"
  grep -E "^worker time |^mutants' time: |^the (start|end), |^oracle |^  [a-z_0-9]+: " "$out/campaign-$name.log"
  # What each oracle beyond the values killed, by operator (every value survivor is judged by each).
  python3 - "$out/campaign-$name/results.jsonl" <<'PY' | tee "$out/campaign-$name-oracles.txt"
import collections, json, sys
survived, kills = collections.Counter(), collections.Counter()
for line in open(sys.argv[1]):
    r = json.loads(line)
    mutant, _, oracle = r["mutant_id"].partition("|")
    operator = mutant.split(":")[2] if mutant.count(":") >= 3 else "?"
    if not oracle and r.get("status") == "survived":
        survived[operator] += 1
    elif oracle and r.get("killed_by"):
        kills[(oracle, operator)] += 1
for operator, n in survived.most_common():
    print(f"  {operator}: {n} value survivors; " + ", ".join(
        f"{o} kills {kills[(o, operator)]}" for o in ("sanitizers", "large-index")))
PY
  awk -F', ' '{n[$1]++; s[$1]+=$2; if ($2 > 0) b[$1]++}
    END {for (g in n) printf "  GPU %s: mean utilisation %.0f%%, busy in %.0f%% of %d samples\n", g, s[g]/n[g], 100*b[g]/n[g], n[g]}' \
    "$out/$name.smi"
  pack
}
per_gpu=${WORKERS_PER_GPU:-4}
if [ "${NAIVE:-0}" = 1 ]; then
  campaign naive --workers $((per_gpu * gpus)) --operator guard_deletion --naive
  campaign warm --workers $((per_gpu * gpus)) --operator guard_deletion
elif [ "${NAIVE:-0}" = sample ]; then
  # The naive mode on a uniform sample of the mutants the campaigns run (each naive mutant is a process of its
  # own: its time does not depend on the others), against which the whole campaign's rate is compared.
  campaign naive --workers $((per_gpu * gpus)) --naive --sample "${NAIVE_SAMPLE:-100}"
elif [ "${NAIVE:-0}" = names ]; then
  # shellcheck disable=SC2086
  campaign "naive-${NAIVE_PART:-1}" --workers $((per_gpu * gpus)) --naive $NAIVE_NAMES
elif [ "${NAIVE:-0}" = whole ]; then
  three="pad_const_b4 masked_fill_b4 pad_backward_reflect_f32"
  campaign naive --workers $((per_gpu * gpus)) --naive $three
  campaign warm --workers $((per_gpu * gpus)) $three
fi
if [ "${EXAMPLES:-0}" = 1 ]; then
  campaign examples --workers $((per_gpu * gpus)) --substrates-dir examples/substrates
fi
if [ "${SCALING:-0}" = 1 ]; then
  four="pad_const_b1 pad_const_b4 pad_reflect_b2 pad_replicate_b8"
  for n in ${SCALING_WORKERS:-1 2 4}; do
    CUDA_VISIBLE_DEVICES=0 campaign "workers-$n" --workers "$n" $four
  done
  CUDA_VISIBLE_DEVICES=0 campaign unbatched --workers 4 --batch-size 1 $four
fi
if [ "${SPARES:-0}" = 1 ]; then
  four="pad_const_b1 pad_const_b4 pad_reflect_b2 pad_replicate_b8"
  for round in 1 2; do
    for mode in never always; do
      CUDA_VISIBLE_DEVICES=0 campaign "spares-$mode-$round" --workers 4 --spare-workers "$mode" $four
    done
  done
  python3 -m harness.report_diff "$out/campaign-spares-never-1.json" "$out/campaign-spares-always-1.json" | tail -n 5
fi
if [ "${CLUSTER:-0}" = 1 ]; then
  if ! python3 -c "import distributed" 2>/dev/null; then  # not a campaign's failure to find out 4 minutes later
    echo "CLUSTER=1: distributed cannot be imported and no .whl came with the call (carry .whl)"; exit 3
  fi
  parts=" ${CLUSTER_PARTS:-cluster here gate} "
  # The value suites only: the oracles run on the client's host either way (one call holds no more).
  # Its end was never seen on the H200 (the tenth session cut it off at 320 s with every result stored).
  if [[ $parts == *" cluster "* ]]; then
    LIMIT=${CLUSTER_LIMIT:-420} campaign cluster --workers $((per_gpu * gpus)) --scheduler local --oracles values
  fi
  if [[ $parts == *" here "* ]]; then
    campaign here --workers $((per_gpu * gpus)) --oracles values
    # The cluster's report from this call, or from the call before (its session.tar.gz unpacked in RESUME_FROM).
    cluster_report="$out/campaign-cluster.json"
    [ -f "$cluster_report" ] || cluster_report="${RESUME_FROM:-.}/campaign-cluster.json"
    [ -f "$cluster_report" ] && python3 -m harness.report_diff "$cluster_report" "$out/campaign-here.json" | tail -n 5
  fi
  # The gate's items on the same local cluster: every verdict as the local gate's (GATE=1 ran it first).
  if [[ $parts == *" gate "* ]]; then
    python3 gate.py --no-progress --no-record --jobs 4 --scheduler local --json "$out/gate-cluster.json" 2>&1 \
      | tee "$out/gate-cluster.log" | tail -n 2
    [ -f "$out/gate.json" ] && python3 - "$out/gate.json" "$out/gate-cluster.json" <<'PY'
import json, sys
verdicts = [{s["name"]: s.get("admitted") for s in json.load(open(path))["substrates"]} for path in sys.argv[1:]]
differ = sorted(n for n in verdicts[0] if verdicts[0][n] != verdicts[1].get(n))
print(f"gate here and on the cluster: {len(verdicts[0]) - len(differ)} of {len(verdicts[0])} verdicts the same"
      + (f"; differ: {', '.join(differ)}" if differ else ""))
PY
  fi
  pack
fi
# WARM=1: the campaign with spares warmed ahead, with WARM_WORKERS workers per GPU (each count in turn).
if [ "${WARM:-0}" = 1 ]; then
  for n in ${WARM_WORKERS:-$per_gpu}; do
    campaign "warm-spares-$n" --workers $((n * gpus)) --oracles values --spare-workers warm
    [ -f "$out/campaign-here.json" ] && python3 -m harness.report_diff "$out/campaign-here.json" \
      "$out/campaign-warm-spares-$n.json" | tail -n 5
  done
  pack
fi
# STARTUP=1: how long a CUDA context takes to make when N processes make one at once (torch imported first, then
# every process released together), by torch and by the driver API alone.
if [ "${STARTUP:-0}" = 1 ]; then
  python3 - <<'PY' | tee "$out/startup.log"
import statistics, subprocess, sys, time
child = r"""
import sys, time
way = sys.argv[1]
import torch
from cuda.bindings import driver
print("ready", flush=True)
sys.stdin.readline()
began = time.perf_counter()
if way == "torch":
    torch.empty(1, device="cuda"); torch.cuda.synchronize()
else:
    driver.cuInit(0); _, device = driver.cuDeviceGet(0)
    _, context = driver.cuDevicePrimaryCtxRetain(device); driver.cuCtxSetCurrent(context)
    driver.cuMemAlloc(1 << 20)
print(f"{time.perf_counter() - began:.3f}", flush=True)
"""
for way in ("torch", "driver"):
    for n in (1, 2, 4, 8, 16):
        procs = [subprocess.Popen([sys.executable, "-c", child, way], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True) for _ in range(n)]
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        began = time.perf_counter()
        for p in procs:
            p.stdin.write("go\n"); p.stdin.flush()
        seconds = sorted(float(p.stdout.readline()) for p in procs)
        wall = time.perf_counter() - began
        for p in procs:
            p.wait()
        print(f"{way:6s} {n:2d} at once: all made in {wall:.2f} s; each {statistics.median(seconds):.2f} s median, "
              f"{seconds[0]:.2f} to {seconds[-1]:.2f}")
PY
  pack
fi
if [ "${CAMPAIGN:-}" = one ]; then
  campaign all-gpus --workers $((per_gpu * gpus))
fi
if [ "${CAMPAIGN:-}" = check ]; then
  python3 -c "from harness.backends.address_check import assembler as a; print('nvJitLink:', a())"
  # Where the campaign's processes call it: after torch has loaded its CUDA libraries and made a context.
  python3 -c "import torch; torch.zeros(1, device='cuda'); from harness.backends.address_check import assembler as a; \
print('nvJitLink after torch and a context:', a())"
  unchecked=${CHECK_AGAINST:-$out/campaign-unchecked.json}
  [ -z "${CHECK_AGAINST:-}" ] && campaign unchecked --oracles values --address-check off
  for round in $(seq 1 "${CHECK_ROUNDS:-1}"); do
    # N, N:C for N workers and --compilers C, N:C:T with OMP_NUM_THREADS=T too; "default": the campaign's own count
    for n in ${CHECK_WORKERS:-4}; do
      IFS=: read -r workers compilers threads <<< "$n"
      extra=(); [ -n "$compilers" ] && extra=(--compilers "$compilers")
      [ "$workers" = default ] || extra+=(--workers "$workers")
      name="checked-${n//:/-}"; [ "${CHECK_ROUNDS:-1}" = 1 ] || name="$name-round-$round"
      if [ -n "$threads" ]; then  # a shell function: the variable is set for its duration and its processes
        OMP_NUM_THREADS=$threads campaign "$name" --oracles values "${extra[@]}"
      else
        campaign "$name" --oracles values "${extra[@]}"
      fi
      python3 -m harness.report_diff "$unchecked" "$out/campaign-$name.json" | tail -n 20
    done
  done
fi
# --checker NAME for each of MATRIX_CHECKERS
matrix_checkers=()
for c in ${MATRIX_CHECKERS-kernelbench kernelbench-v0 t0}; do matrix_checkers+=(--checker "$c"); done
if [ "${MATRIX:-0}" = 1 ]; then
  campaign matrix-values --workers $((per_gpu * gpus)) --oracles values --matrix
  campaign matrix --workers $((per_gpu * gpus)) --oracles values --matrix "${matrix_checkers[@]}"
fi
if [ "${FLOOR:-0}" = 1 ]; then
  # Issue 43's floor: the eight accumulating substrates' matrix (value suites) with one worker and --kernel-times, so
  # that no other context's time slices count in their kernels' device time: what any number of workers needs.
  campaign floor --workers 1 --oracles values --matrix --kernel-times \
    pad_backward_{reflect,replicate}_{bf16,f16,f32,f64}
fi
if [ "${MATRIX_KB:-0}" = 1 ]; then
  # The corpus at its stand-in sizes, as CI gates it (tests/test_kernelbench_examples.py): copies with each problem's
  # size constants replaced by tests/kernelbench_standin's, gated here (their admissions recorded beside them), then
  # the matrix campaign over them against those stand-in problems.
  standin="$out/kb-standin"
  rm -rf "$standin" && mkdir -p "$standin"
  python3 - "$standin" examples/kernelbench/candidate_*.py <<'PY'
import sys
from pathlib import Path
sys.path[:0] = [".", "tests"]
from test_kernelbench_examples import _shrunk_copy
for candidate in sys.argv[2:]:
    _shrunk_copy(Path(candidate).resolve(), Path(sys.argv[1]))
PY
  python3 gate.py --no-progress --no-sanitize --kb-root tests/kernelbench_standin \
    --json "$out/kernelbench-standin.json" "$standin"/candidate_*.py 2>&1 | tail -n 3
  campaign matrix-kb --workers $((per_gpu * gpus)) --oracles values --substrates-dir "$standin" \
    --kb-root tests/kernelbench_standin --matrix "${matrix_checkers[@]}"
fi
if [ "${BROKEN_BATCH:-0}" = 1 ]; then
  python3 tests/broken_batch.py "$out/broken-batch" | tee "$out/broken-batch.log"
  for round in $(seq 1 "${BROKEN_BATCH_ROUNDS:-2}"); do
    for mode in sanitize no-sanitize; do
      flag=(); [ "$mode" = no-sanitize ] && flag=(--no-sanitize)
      began=$(date +%s.%N)
      python3 gate.py --no-record --no-progress "${flag[@]}" --json "$out/broken-$mode-$round.json" \
        "$out/broken-batch" > "$out/broken-$mode-$round.log" 2>&1
      status=$?
      echo "broken batch $mode round $round: exit $status, $(python3 -c "import time; print(f'{time.time() - $began:.1f}')") s" \
        | tee -a "$out/broken-batch.log"
      grep -E "^sanitizers:|^timeline:|admitted, " "$out/broken-$mode-$round.log" | tee -a "$out/broken-batch.log"
    done
  done
  python3 - "$out" <<'PY' | tee -a "$out/broken-batch.log"
import glob, json, re, statistics, sys
log = open(f"{sys.argv[1]}/broken-batch.log").read()
times = {m: [float(s) for s in re.findall(rf"broken batch {m} round \d+: exit \d+, ([0-9.]+) s", log)]
         for m in ("sanitize", "no-sanitize")}
verdicts = {m: [{s["name"]: s["admitted"] for s in json.load(open(f))["substrates"]}
                for f in sorted(glob.glob(f"{sys.argv[1]}/broken-{m}-*.json"))] for m in times}
same = all(v == verdicts["sanitize"][0] for m in verdicts for v in verdicts[m])
print(f"broken batch: with the sanitizers {statistics.median(times['sanitize']):.1f} s (rounds {times['sanitize']}), "
      f"--no-sanitize {statistics.median(times['no-sanitize']):.1f} s (rounds {times['no-sanitize']}): "
      f"{statistics.median(times['sanitize']) / statistics.median(times['no-sanitize']):.2f}x; "
      f"{sum(verdicts['sanitize'][0].values())} of {len(verdicts['sanitize'][0])} admitted; verdicts the same in "
      f"every run: {same}")
PY
  pack
fi
if [ "${MANY:-0}" = 1 ]; then
  # Issue 45 criterion 4: 100 one-substrate files (tests/many_files.py: the corpus at stand-in sizes, then the family)
  # gated at once, against the gate run on one file at a time. Both warm: one gate over them first. One at a time, every
  # file until MANY_BUDGET seconds (default 300) are spent; the rest are counted at the mean of those run.
  python3 tests/many_files.py "$out/many" | tee "$out/many.log"
  many_gate() { python3 gate.py --no-record --no-progress --kb-root tests/kernelbench_standin "$@"; }
  # The clock read before awk starts: a Python started per file to subtract would add its start to every file's time.
  seconds_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
  many_gate --json "$out/many-warm.json" "$out/many" > "$out/many-warm.log" 2>&1
  began=$(date +%s.%N)
  many_gate --json "$out/many-all.json" "$out/many" > "$out/many-all.log" 2>&1
  echo "many at once: exit $?, $(seconds_since "$began") s" | tee -a "$out/many.log"
  grep -E "^timeline:|admitted, " "$out/many-all.log" | tee -a "$out/many.log"
  spent=0
  for file in "$out/many"/candidate_*.py; do
    awk -v s="$spent" -v b="${MANY_BUDGET:-300}" 'BEGIN { exit !(s >= b) }' && break
    began=$(date +%s.%N)
    many_gate --json "$out/many-one-$(basename "$file" .py).json" "$file" > /dev/null 2>&1
    status=$?
    took=$(seconds_since "$began")
    spent=$(awk -v s="$spent" -v t="$took" 'BEGIN { print s + t }')
    echo "many one at a time: $(basename "$file"): exit $status, $took s" >> "$out/many.log"
  done
  python3 - "$out" <<'PY' | tee -a "$out/many.log"
import glob, json, re, statistics, sys
out = sys.argv[1]
log = open(f"{out}/many.log").read()
at_once = float(re.search(r"many at once: exit \d+, ([0-9.]+) s", log).group(1))
alone = [float(s) for s in re.findall(r"many one at a time: \S+: exit \d+, ([0-9.]+) s", log)]
files = len(glob.glob(f"{out}/many/candidate_*.py"))
together = {s["name"]: s["admitted"] for s in json.load(open(f"{out}/many-all.json"))["substrates"]}
one = {}
for path in glob.glob(f"{out}/many-one-*.json"):
    one.update({s["name"]: s["admitted"] for s in json.load(open(path))["substrates"]})
serial = sum(alone) + statistics.mean(alone) * (files - len(alone))
print(f"many files: {files} at once {at_once:.1f} s; one at a time {len(alone)} run in {sum(alone):.1f} s (median "
      f"{statistics.median(alone):.2f} s a file), all {files} {'taken as' if len(alone) < files else 'in'} "
      f"{serial:.1f} s: {serial / at_once:.2f}x; {sum(together.values())} of {len(together)} admitted at once; the "
      f"{len(one)} gated alone have the same verdicts: {all(together.get(n) == v for n, v in one.items())}")
PY
  pack
fi
if [ -n "${ORACLES:-}" ]; then
  # Issue 45 criterion 2: the default campaign (every oracle) over the 28, cold, once per entry of
  # ORACLES="NAME:ARGS;NAME:ARGS" (ARGS: more campaign arguments, split on spaces), each compared with the first.
  IFS=';' read -ra oracle_runs <<< "$ORACLES"
  first=""
  for run in "${oracle_runs[@]}"; do
    spec=${run%%:*} extra="" tree=.
    [[ $run == *:* ]] && extra=${run#*:}
    name="oracles-${spec%%@*}"
    if [[ $spec == *@* ]]; then  # another tree's code, unpacked beside this one
      tree=/tmp/oracles-tree-${spec%%@*}
      if ! { rm -rf "$tree" && mkdir -p "$tree" && tar xzf "${spec#*@}" -C "$tree" --strip-components=1; }; then
        echo "$name: not run: ${spec#*@} did not unpack (carried? scratch/ is ignored: name it in the call's carry)"
        continue
      fi
    fi
    # shellcheck disable=SC2086
    (cd "$tree" && campaign "$name" $extra) >> "$out/oracles-detail.log" 2>&1
    echo "$name: $(grep -hE '^oracle (sanitizers|large-index): [0-9]+ survivor|^  sanitizers. time: |mutants run in' \
      "$out/campaign-$name.log" | tr '\n' ' ')"
    # The large index's parts, summed over its substrates' lines ("  large-index: NAME: ... (PART S s, ...)").
    python3 - "$out/campaign-$name.log" <<'PY'
import re, sys
parts = {}
for line in open(sys.argv[1]):
    if line.startswith("  large-index: ") and "(" in line:
        for part, seconds in re.findall(r"([a-z' ]+?) ([0-9.]+) s\b", line[line.index("(", line.index(" in ")):]):
            parts[part.strip()] = parts.get(part.strip(), 0.0) + float(seconds)
print("  large index, summed over its substrates: "
      + (", ".join(f"{part} {seconds:.1f} s" for part, seconds in parts.items()) or "no lines"))
PY
    if [ -z "$first" ]; then
      first=$name
    else
      echo "$name against $first: $(python3 -m harness.report_diff "$out/campaign-$first.json" \
        "$out/campaign-$name.json" | tail -n 1)"
    fi
  done | tee "$out/oracles.log"
  pack
fi
if [ "${CAMPAIGN:-}" = gpus ]; then
  campaign all-gpus --workers $((per_gpu * gpus))
  CUDA_VISIBLE_DEVICES=0 campaign one-gpu --workers "$per_gpu"
  python3 -m harness.report_diff "$out/campaign-all-gpus.json" "$out/campaign-one-gpu.json" | tail -n 20
fi

[ -f "$out/kb-table.md" ] && cat "$out/kb-table.md"
[ -f "$out/broken-batch.log" ] && tail -n 1 "$out/broken-batch.log"
[ -f "$out/examples.log" ] && tail -n 8 "$out/examples.log"
[ -f "$out/gate.log" ] && tail -n 32 "$out/gate.log"
for log in $(ls -tr "$out"/campaign-*.log 2>/dev/null); do  # every campaign of the call, in the order they ended
  echo "$(basename "$log" .log | sed 's/^campaign-//'): $(tail -n 1 "$log")"
done
# Last: each matrix campaign's table (a column per checker), analyses and checker lines, which the campaign prints last.
for name in matrix-values matrix matrix-kb; do
  log="$out/campaign-$name.log"
  [ -f "$log" ] || continue
  echo "== $name"
  awk '/^substrate /{table=1} table && !/^substrate / && !/^[^ ]+ +[0-9]+ /{table=0} table' "$log"
  sed -n '/^kill matrix: /,$p' "$log"
done
true
