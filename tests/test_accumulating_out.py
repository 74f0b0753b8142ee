"""An accumulating entry (`accumulates=True`: the kernel adds into out) whose launch leaves out uninitialised.

The harness keeps what launch put in out for such an entry; a `torch.empty` there holds whatever the allocation
held (the harness's own poison), which in bfloat16 is a value so small that integer-valued suites absorb it.
Two launch calls over differently poisoned memory tell it apart on every trial, whatever the suites' values.
"""

import json

from harness.gate.command import main
from harness.problems import REPO_ROOT

FAMILY = REPO_ROOT / "substrates" / "candidate_pad_backward_reflect.py"
ZEROED = "    words = torch.zeros(-(-n // per_word) * per_word, dtype=dtype, device=device)\n"


def test_an_accumulating_launch_that_leaves_out_uninitialised_fails_on_every_trial(tmp_path):
    text = FAMILY.read_text()
    assert text.count(ZEROED) == 1
    broken = tmp_path / "candidate_pad_backward_reflect_empty.py"
    broken.write_text(text.replace(ZEROED, ZEROED.replace("torch.zeros", "torch.empty")))
    out = tmp_path / "r.json"
    code = main([str(broken), "--backend", "cpu", "--json", str(out), "--no-record", "--no-progress", "--jobs", "2"])
    assert code == 1
    for substrate in json.loads(out.read_text())["substrates"]:
        checks = {c["check"]: c for c in substrate["checks"]}
        detail = checks["out_initialised"]["detail"]
        assert checks["out_initialised"]["status"] == "failed", substrate["name"]
        assert detail.startswith("probe trial 0: launch leaves out uninitialised: the kernel adds into whatever the "
                                 "allocation held (two launch calls over differently poisoned memory gave out "
                                 "different bytes); create it with torch.zeros"), detail
        # Every trial fails but the one whose out has no elements (misaligned trial 8: nothing to initialise).
        passed = {suite["name"]: suite["passed"] for suite in substrate["suites"] if suite["passed"]}
        assert passed == {"misaligned": 1}, (substrate["name"], passed)


def test_the_atomic_family_s_zeroed_launch_passes_the_check(tmp_path):
    out = tmp_path / "r.json"
    code = main([str(REPO_ROOT / "substrates" / "candidate_pad_backward_replicate.py"), "--backend", "cpu",
                 "--no-record", "--no-progress", "--jobs", "2", "--json", str(out)])
    assert code == 0
    for substrate in json.loads(out.read_text())["substrates"]:
        checks = {c["check"]: c for c in substrate["checks"]}
        assert checks["out_initialised"] == {"check": "out_initialised", "ok": True, "status": "passed",
                                             "detail": "launch initialises the out the kernel accumulates into"}
