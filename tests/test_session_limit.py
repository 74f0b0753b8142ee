"""tests/session_limit.sh: a device script stopped at its own limit keeps what its running step stored, starts
nothing after it, exits 130 and still packs; a script that ends sooner leaves no watchdog behind."""

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("pgrep") is None, reason="session_limit.sh lists processes with pgrep")

# Four steps of STEP seconds in a loop piped to tee, as gpu_session.sh runs its ORACLES, two of them started through
# env (as gpu_session.sh starts some gates); each step, interrupted, stores what it has and exits 130, as a campaign
# does.
_SCRIPT = """
set -uo pipefail
. tests/session_limit.sh
out=$1
trap 'session_end; echo packed > "$out/packed"; session_exit' EXIT
session_limit "$2"
[ "${LOSE_SIGNAL:-0}" = 1 ] && trap : USR1  # the script's own signal lost
( sleep 0.1 ) &
wait  # a step's own background job: the watchdog is none of it
for i in 1 2 3 4; do
  starter=()
  [ $((i % 2)) = 0 ] && starter=(env "STEP=$i")  # steps 2 and 4 started through env
  "${starter[@]}" python3 - "$out" "$i" "$3" <<'PY'
import signal, sys, time
out, i, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
def stop(*_):
    open(f"{out}/stored-{i}", "w").write("kept")
    print(f"step {i}: interrupted, its store kept", flush=True)
    sys.exit(130)
signal.signal(signal.SIGINT, stop)
print(f"step {i}: started", flush=True)
time.sleep(seconds)
print(f"step {i}: done", flush=True)
PY
done | tee "$out/log"
echo "after the steps" >> "$out/log"
"""


def _run(tmp_path: Path, limit: float, step: float, ignore_sigint: bool = False,
         **env: str) -> subprocess.CompletedProcess:
    script = tmp_path / "steps.sh"
    script.write_text(_SCRIPT)
    out = tmp_path / "out"
    out.mkdir()
    return subprocess.run(["bash", str(script), str(out), str(limit), str(step)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "TMPDIR": str(tmp_path), **env},
                          preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None)


def test_at_the_limit_the_running_step_keeps_its_store_nothing_starts_after_it_and_the_script_packs(tmp_path):
    began = time.monotonic()
    result = _run(tmp_path, limit=3, step=2)
    out = tmp_path / "out"
    assert result.returncode == 130, result.stderr
    assert time.monotonic() - began < 5  # the limit's 3 s, not the steps' 8
    assert result.stderr.strip().endswith("session_limit: 3 s reached: the running step was interrupted, the rest "
                                          "skipped")
    # The log, through tee, holds the interrupted step's last line; steps 3 (python3) and 4 (env) never started.
    assert (out / "log").read_text().splitlines() == [
        "step 1: started", "step 1: done", "step 2: started", "step 2: interrupted, its store kept"]
    assert sorted(p.name for p in out.iterdir()) == ["log", "packed", "stored-2"]
    assert not list(tmp_path.glob("session-limit.*"))


def test_a_script_started_with_sigint_ignored_stops_at_its_limit_all_the_same(tmp_path):
    # As the test suite once started it: a shell cannot trap a signal ignored on entry.
    result = _run(tmp_path, limit=3, step=2, ignore_sigint=True)
    out = tmp_path / "out"
    assert result.returncode == 130, result.stderr
    assert (out / "log").read_text().splitlines() == [
        "step 1: started", "step 1: done", "step 2: started", "step 2: interrupted, its store kept"]
    assert sorted(p.name for p in out.iterdir()) == ["log", "packed", "stored-2"]


def test_a_script_whose_own_signal_is_lost_still_says_it_was_stopped_and_exits_130(tmp_path):
    result = _run(tmp_path, limit=3, step=2, LOSE_SIGNAL="1")
    out = tmp_path / "out"
    assert result.returncode == 130, result.stderr
    assert result.stderr.strip() == ("session_limit: 3 s reached: the running step was interrupted, the rest "
                                     "skipped")
    # The steps after the limit were skipped all the same; the script ran on to its end, and packed.
    assert (out / "log").read_text().splitlines() == [
        "step 1: started", "step 1: done", "step 2: started", "step 2: interrupted, its store kept",
        "after the steps"]
    assert sorted(p.name for p in out.iterdir()) == ["log", "packed", "stored-2"]


def test_a_script_ending_before_its_limit_exits_as_it_would_and_leaves_no_watchdog(tmp_path):
    began = time.monotonic()
    result = _run(tmp_path, limit=4, step=0.1)
    out = tmp_path / "out"
    assert result.returncode == 0, result.stderr
    # Its output closed when it ended: no `wait` waited for the watchdog, and no sleep of it held the pipes open.
    assert time.monotonic() - began < 3
    assert (out / "log").read_text().splitlines()[-1] == "after the steps"
    time.sleep(4.5)  # past the limit: a watchdog left running would mark the stop now
    assert not list(tmp_path.glob("session-limit.*"))
    assert sorted(p.name for p in out.iterdir()) == ["log", "packed"]


def test_no_limit_starts_no_watchdog(tmp_path):
    result = _run(tmp_path, limit=0, step=0.1)
    assert result.returncode == 0, result.stderr
    assert "session_limit" not in result.stderr
