"""A campaign's usage errors come before any work: one line naming what is wrong, exit 2."""

import time

from harness import preflight
from harness.campaign import EXIT_USAGE, main


def _usage(capsys, argv) -> str:
    began = time.monotonic()
    assert main(argv) == EXIT_USAGE
    assert time.monotonic() - began < 5  # no worker started, no mutant generated
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


def test_zero_workers_is_a_usage_error_not_the_default(capsys):
    assert _usage(capsys, ["--backend", "cpu", "--workers", "0", "pad_const_b4"]) == (
        "campaign: error: --workers must be at least 1, not 0\n")


def test_reports_that_cannot_be_written_are_named_before_any_work(tmp_path, capsys):
    store = tmp_path / "store" / "results.jsonl"
    missing = tmp_path / "missing" / "report.json"
    assert _usage(capsys, ["--backend", "cpu", "--store", str(store), "--json", str(missing), "--html",
                           str(tmp_path), "pad_const_b4"]) == (
        f"campaign: error: --json {missing}: its folder {missing.parent} does not exist; --html {tmp_path}: is a "
        f"folder; give a file path\n")


def test_a_store_whose_folder_cannot_be_made_is_named(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    store = blocker / "results.jsonl"
    err = _usage(capsys, ["--backend", "cpu", "--store", str(store), "pad_const_b4"])
    assert err.startswith(f"campaign: error: --store {store}: its folder {blocker} cannot be made (")


def test_a_missing_package_is_one_line(monkeypatch, capsys):
    monkeypatch.setattr(preflight, "REQUIRED_MODULES", {"no_such_module_for_the_test": "tqdm"})
    err = _usage(capsys, ["--backend", "cpu", "pad_const_b4"])
    assert err.startswith("campaign: error: tqdm is not installed for this Python (") and err.count("\n") == 1


def test_a_substrates_dir_that_is_missing_or_holds_no_candidate_is_named(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert _usage(capsys, ["--backend", "cpu", "--substrates-dir", str(missing)]) == (
        f"campaign: error: --substrates-dir {missing}: no such folder\n")
    assert _usage(capsys, ["--backend", "cpu", "--substrates-dir", str(tmp_path)]) == (
        f"campaign: error: --substrates-dir {tmp_path}: no candidate_*.py file in it\n")


def test_a_folder_whose_only_candidate_does_not_import_has_nothing_to_run(tmp_path, capsys):
    bad = tmp_path / "candidate_bad.py"
    bad.write_text("raise RuntimeError('boom')\n")
    argv = ["--backend", "cpu", "--no-progress", "--substrates-dir", str(tmp_path), "--store",
            str(tmp_path / "results.jsonl")]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == f"refused: {bad}: import failed: RuntimeError: boom\n"
    assert captured.err == f"campaign: nothing to run: no candidate file in {tmp_path} imported\n"
    # Named, the substrate is unknown there; the file that did not import is named beside it.
    assert main(argv + ["bad"]) == EXIT_USAGE
    assert capsys.readouterr().err == (f"campaign: error: unknown substrate(s) bad in {tmp_path}; registered: none; "
                                       f"1 file(s) there did not import: {bad}\n")


def test_zero_large_index_processes_is_a_usage_error(capsys):
    assert _usage(capsys, ["--backend", "cpu", "--large-index-processes", "0", "pad_const_b4"]) == (
        "campaign: error: --large-index-processes must be at least 1, not 0\n")


def test_a_negative_large_index_backfill_is_a_usage_error(capsys):
    for value in ("-1", "nan"):
        assert _usage(capsys, ["--backend", "cpu", "--large-index-backfill", value, "pad_const_b4"]) == (
            f"campaign: error: --large-index-backfill must be 0 or more seconds, not {float(value):g}\n")


def test_what_a_cluster_s_items_cannot_run_is_a_usage_error_with_a_scheduler(capsys):
    # The items would have run a plain campaign: no matrix, no checker, no kernel times.
    assert _usage(capsys, ["--backend", "cpu", "--scheduler", "local", "--matrix", "pad_const_b4"]) == (
        "campaign: error: --matrix runs on this host only: leave out --scheduler\n")
    assert _usage(capsys, ["--backend", "cpu", "--scheduler", "local", "--checker", "t0", "--kernel-times",
                           "pad_const_b4"]) == (
        "campaign: error: --checker and --kernel-times run on this host only: leave out --scheduler\n")


def test_a_negative_worker_memory_is_a_usage_error(capsys):
    for value in ("-1", "nan"):
        assert _usage(capsys, ["--backend", "cpu", "--worker-memory", value, "pad_const_b4"]) == (
            f"campaign: error: --worker-memory must be at least 0 GiB, not {float(value)}\n")


def test_a_workers_share_of_the_device_is_its_gpus_memory_over_the_workers_on_it_or_what_it_is_given():
    from harness.campaign import worker_share_bytes

    gib = 2**30
    assert worker_share_bytes(None, 80 * gib, 1, 1, False) == 80 * gib
    assert worker_share_bytes(None, 80 * gib, 12, 2, False) == 80 * gib // 6  # six workers on each GPU
    assert worker_share_bytes(None, 80 * gib, 13, 2, False) == 80 * gib // 7  # seven on the first
    assert worker_share_bytes(None, None, 4, 1, False) is None  # not known: every trial kept
    assert worker_share_bytes(None, 80 * gib, 4, 0, False) is None  # the CPU backend
    assert worker_share_bytes(None, 80 * gib, 4, 1, True) is None  # a cluster's items: their GPUs not known here
    assert worker_share_bytes(1.5, None, 4, 0, False) == int(1.5 * gib)  # --worker-memory, on any backend
