"""harness.engine.kill_matrix: the analyses of a full kill matrix, on matrices made by hand."""

import pytest

from harness.engine.kill_matrix import (MutantRow, SuiteKills, greedy_cover, idle_tests, per_suite, score,
                                        subsuming_mutants, subsuming_score, suite_of, trial_test_id)

T0 = [trial_test_id("pad", "T0_original", t) for t in range(3)]
EDGE = [trial_test_id("pad", "edges", t) for t in range(2)]
WIDE = [trial_test_id("pad", "wide", t) for t in range(2)]
ALL = frozenset(T0 + EDGE + WIDE)


def _row(mutant, *killers, covered=ALL):
    return MutantRow(mutant, frozenset(covered), frozenset(killers))


# m1 and m2 die on everything; m3 only on the edges; m4 on an edge trial and a wide one; m5 lives; m6 faulted
# during T0's second trial (its row ends there, killed by that trial).
ROWS = [
    _row("m1", *ALL),
    _row("m2", *ALL),
    _row("m3", EDGE[0], EDGE[1]),
    _row("m4", EDGE[1], WIDE[0]),
    _row("m5"),
    _row("m6", T0[1], covered=T0[:2]),
]


def test_a_test_id_names_substrate_suite_and_trial_and_its_suite_keeps_the_substrate():
    assert T0[2] == "pad/T0_original/2"
    assert suite_of(T0[2]) == "pad/T0_original"


def test_a_mutant_cannot_be_killed_by_a_test_it_did_not_run():
    with pytest.raises(ValueError, match=r"mutant m7: killed by tests it did not run: \['pad/wide/0'\]"):
        MutantRow("m7", frozenset(T0), frozenset([WIDE[0]]))


def test_per_suite_counts_the_mutants_each_suite_kills_and_those_it_alone_kills():
    assert per_suite(ROWS) == [SuiteKills("pad/T0_original", 3, 1), SuiteKills("pad/edges", 4, 1),
                               SuiteKills("pad/wide", 3, 0)]


def test_t0_alone_scores_against_the_whole_set():
    assert score(ROWS) == 5 / 6
    assert score(ROWS, lambda test: suite_of(test) == "pad/T0_original") == 3 / 6
    assert score([]) == 1.0


def test_greedy_cover_finds_the_suites_and_trials_that_kill_all_the_set_kills():
    assert greedy_cover(ROWS) == ["pad/edges", "pad/T0_original"]  # edges kill 4 of 5, then T0 the last
    # edges trial 1 kills m1 to m4; T0 trial 1 the last, m6: two of the seven trials
    assert greedy_cover(ROWS, group=lambda test: test) == ["pad/edges/1", "pad/T0_original/1"]
    assert greedy_cover([_row("m5")]) == []


def test_trials_that_kill_nothing_are_named():
    assert idle_tests(ROWS) == []
    assert idle_tests([_row("a", T0[0]), _row("b", T0[0], EDGE[0])]) == sorted(ALL - {T0[0], EDGE[0]})


def test_subsuming_mutants_are_the_hardest_to_kill_one_per_class():
    # m3's killers {edges 0, edges 1} and m4's {edges 1, wide 0} and m6's {T0 1} are minimal; m1 and m2 (killed by
    # everything) are subsumed by each of them, and m5 lives.
    assert subsuming_mutants(ROWS) == ["m3", "m4", "m6"]
    twins = [_row("b", EDGE[0]), _row("a", EDGE[0]), _row("c", EDGE[0], WIDE[0])]
    assert subsuming_mutants(twins) == ["a"]  # a and b cannot be told apart; c dies wherever a does


def test_a_score_over_subsuming_mutants_does_not_reward_redundant_kills():
    t0_only = lambda test: suite_of(test) == "pad/T0_original"  # noqa: E731
    # T0 kills half the mutants (m1, m2 and m6 of six) but a third of the subsuming ones (m6 of m3, m4, m6).
    assert score(ROWS, t0_only) == 0.5
    assert subsuming_score(ROWS, t0_only) == 1 / 3
    assert subsuming_score(ROWS) == 1.0
