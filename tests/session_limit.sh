# Sourced by the device scripts (tests/gpu_session.sh): `session_limit SECONDS` stops a call's work before the
# device's own limit kills it and brings nothing back.
#
# After SECONDS the running step is interrupted as a terminal's Ctrl-C interrupts it: SIGINT to every process below
# the script, background jobs' included (a campaign keeps its store, says what it cut short and exits 130), SIGUSR1
# to the script itself; no step starts after it (`session_stopped`; `python3`, `env`, `taskset` and `timeout`
# return 130 at once), and the script exits 130, its EXIT trap packing what it did (call `session_end` first there
# and `session_exit` last).
# Why not `timeout -s TERM` around the script: bash runs a trap only once its foreground child has ended, so the
# signal waited on the running campaign until the device killed everything (MEASUREMENTS.md, forty-ninth session).

session_stop_file=${TMPDIR:-/tmp}/session-limit.$$
rm -f "$session_stop_file"

session_stopped() { [ -e "$session_stop_file" ]; }

# Every process below $1, children first.
_session_descendants() {
  local child
  for child in $(pgrep -P "$1"); do
    echo "$child"
    _session_descendants "$child"
  done
}

session_limit() {
  session_seconds=${1:-0}
  [ "$session_seconds" = 0 ] && return 0
  # A step's log keeps what the step prints while it stops (tee would die of the SIGINT first, and the step of EPIPE).
  tee() { command tee -i "$@"; }
  local starter
  for starter in python3 env taskset timeout; do  # what starts a step, in a loop as at the top
    eval "$starter() { session_stopped && return 130; command $starter \"\$@\"; }"
  done
  # The script itself hears SIGUSR1, not SIGINT: a shell started with SIGINT ignored (as the test suite's, once some
  # test left it so) cannot trap it, and bash waiting on a step that caught SIGINT takes it as the step's.
  trap 'trap - USR1; exit 130' USR1  # the EXIT trap's session_end says why
  (
    me=$BASHPID  # here, not in the pipeline below, whose processes have their own
    sleep "$session_seconds"
    touch "$session_stop_file"
    # Listed before signalling: the listing's own processes are gone by then, and this watchdog is left out.
    targets=$(_session_descendants $$ | grep -vx "$me")
    # shellcheck disable=SC2086
    kill -INT $targets 2>/dev/null
    kill -USR1 $$ 2>/dev/null
  ) >/dev/null 2>&1 &  # holding none of the script's output open: a reader of it is not kept waiting
  session_watchdog=$!
  disown "$session_watchdog"  # a step's `wait` waits for its own jobs, not for this one
}

# First in the script's EXIT trap: the watchdog and its sleep ended, so that neither signals the packing nor whatever
# process takes the script's pid later.
# A script the limit stopped says so here, and session_exit makes its status 130, even where its own signal was lost.
session_end() {
  if [ -n "${session_watchdog:-}" ]; then
    # shellcheck disable=SC2046
    kill $(pgrep -P "$session_watchdog") "$session_watchdog" 2>/dev/null
  fi
  if session_stopped; then
    session_was_stopped=1
    echo "session_limit: ${session_seconds} s reached: the running step was interrupted, the rest skipped" >&2
  fi
  rm -f "$session_stop_file"
  return 0
}

# Last in the script's EXIT trap: exit 130 where the limit stopped the script.
session_exit() {
  [ "${session_was_stopped:-0}" = 1 ] && exit 130
  return 0
}
