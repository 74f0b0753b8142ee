#!/usr/bin/env bash
# Does a private MPS daemon let campaign workers' kernels share the GPU? Under --matrix, the accumulating backward
# pads' mutants spin on a few addresses (each run up to a third of a second) and the device time-slices its
# processes: twelve workers were 1.8x one (MEASUREMENTS.md, thirty-ninth session). Under MPS the workers' blocks share
# the SMs at once. The same --matrix campaign runs without and with a daemon of its own (its pipe and log folders
# under /tmp, so no other process on the machine joins it), cold caches, then report_diff compares the two.
#
# Usage (repository root, on the GPU machine): bash tests/mps_matrix_probe.sh [SUBSTRATE ...]
#   default substrate: pad_backward_replicate_f16 (81 mutants; 44.0 s with 12 workers on an H100)
#   EXTRA="--workers 4"  more campaign arguments for both runs; BACKEND=cpu (with a stand-in daemon) tries the script
# Logs, reports and the daemon's logs go to $OUT (or /tmp/mps-probe); the two runs' lines are printed last.
set -uo pipefail
out=${OUT:-/tmp/mps-probe}
mkdir -p "$out"
substrates=("$@")
[ ${#substrates[@]} -eq 0 ] && substrates=(pad_backward_replicate_f16)
if ! command -v nvidia-cuda-mps-control >/dev/null; then
    echo "mps_matrix_probe: no nvidia-cuda-mps-control on PATH: MPS cannot be tried here" >&2
    exit 1
fi

campaign() {  # NAME: one cold --matrix campaign, its wall seconds in $out/wall-NAME
    local name=$1 started
    rm -rf "/tmp/mps-probe-cache-$name" "$out/store-$name.jsonl"
    started=$(python3 -c "import time; print(time.time())")
    # shellcheck disable=SC2086
    python3 -m harness.campaign "${substrates[@]}" --backend "${BACKEND:-cuda}" --no-progress --oracles values --matrix \
        --store "$out/store-$name.jsonl" --cache-dir "/tmp/mps-probe-cache-$name" --json "$out/report-$name.json" \
        ${EXTRA:-} > "$out/campaign-$name.log" 2>&1
    local status=$?
    echo "$name: exit $status, wall $(python3 -c "import time; print(f'{time.time() - $started:.1f}')") s" \
        > "$out/wall-$name"
}

campaign plain
pipes=$(mktemp -d /tmp/mps-pipe.XXXX) logs=$(mktemp -d /tmp/mps-log.XXXX)
export CUDA_MPS_PIPE_DIRECTORY=$pipes CUDA_MPS_LOG_DIRECTORY=$logs
if nvidia-cuda-mps-control -d; then
    campaign mps
    echo get_server_list | nvidia-cuda-mps-control > "$out/mps-servers.txt" 2>&1
    echo quit | nvidia-cuda-mps-control
    sleep 1
    cp "$logs"/*.log "$out/" 2>/dev/null
    # The control daemon logs each process that connects as a client ("NEW CLIENT <pid> from user <uid>").
    echo "mps clients seen: $(cat "$logs/control.log" 2>/dev/null | grep -c 'NEW CLIENT')" >> "$out/wall-mps"
else
    echo "mps: the daemon did not start" > "$out/wall-mps"
fi
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
python3 -m harness.report_diff "$out/report-plain.json" "$out/report-mps.json" > "$out/report-diff.txt" 2>&1
echo "report_diff exit $?" >> "$out/report-diff.txt"
for name in plain mps; do
    cat "$out/wall-$name"
    grep -hE "mutants run in|^worker time|^mutants' time" "$out/campaign-$name.log" | cut -c1-300
done
tail -2 "$out/report-diff.txt"
