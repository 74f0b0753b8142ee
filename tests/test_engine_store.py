"""harness.engine.store: results survive a kill, resume by key, and a torn line is ignored."""

from harness.engine.store import ResultKey, ResultStore

KEY = ResultKey("abc123", "cpu", "k:L3C5:relational_boundary:0")


def test_a_stored_result_is_read_back_by_a_new_store(tmp_path):
    path = tmp_path / "results.jsonl"
    ResultStore(path).put(KEY, {"status": "killed", "detail": "misaligned trial 2: output_matches"})
    again = ResultStore(path)
    assert KEY in again and len(again) == 1
    assert again.get(KEY)["status"] == "killed"


def test_the_key_holds_source_hash_backend_and_mutant(tmp_path):
    store = ResultStore(tmp_path / "results.jsonl")
    store.put(KEY, {"status": "survived"})
    assert ResultKey("other", "cpu", KEY.mutant_id) not in store
    assert ResultKey(KEY.source_sha256, "cuda", KEY.mutant_id) not in store


def test_a_line_torn_by_a_kill_is_ignored_and_the_next_result_still_lands(tmp_path):
    path = tmp_path / "results.jsonl"
    ResultStore(path).put(KEY, {"status": "killed"})
    with open(path, "a") as stream:
        stream.write('{"source_sha256": "abc123", "backend": "cpu", "mutant_id": "torn", "sta')
    store = ResultStore(path)
    assert len(store) == 1
    later = ResultKey("abc123", "cpu", "k:L9C1:guard_deletion:0")
    store.put(later, {"status": "timeout"})
    assert later in ResultStore(path) and KEY in ResultStore(path)


def test_results_put_from_many_threads_at_once_are_each_one_whole_line(tmp_path):
    """The engine's worker slots put results at once; long details take more than one write each."""
    import json
    import threading

    store = ResultStore(tmp_path / "results.jsonl")

    def put_many(thread: int):
        for i in range(40):
            store.put(ResultKey("sha", "cpu", f"m{thread}:{i}"), {"status": "killed", "detail": "x" * (9000 + i)})

    threads = [threading.Thread(target=put_many, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = (tmp_path / "results.jsonl").read_text().split("\n")
    assert lines[-1] == "" and all(lines[:-1])  # no blank line anywhere
    assert sorted(json.loads(line)["mutant_id"] for line in lines[:-1]) == sorted(
        f"m{t}:{i}" for t in range(6) for i in range(40))
    assert len(ResultStore(tmp_path / "results.jsonl")) == 240
