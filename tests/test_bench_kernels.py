"""harness.benchmarks.kernels: its usage errors, and its word where there is no GPU to time kernels on."""

import pytest

from harness.backends import gpu_visible
from harness.benchmarks.kernels import main


def test_repeats_of_none_are_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--repeats", "0"])
    assert stopped.value.code == 2
    assert "--warmup must be at least 0 and --repeats at least 1, not 10 and 0" in capsys.readouterr().err


@pytest.mark.skipif(gpu_visible(), reason="a GPU is visible: there the benchmark runs")
def test_without_a_gpu_it_says_why_in_one_line_and_exits_1(capsys):
    assert main(["pad_const_b1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("harness.benchmarks.kernels: error: it times kernels on a GPU: ")
    assert "Traceback" not in err and len(err.splitlines()) == 1
