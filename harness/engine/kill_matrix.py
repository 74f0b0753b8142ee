"""What a full kill matrix says about the tests that made it: pure functions over which test killed which mutant.

A test is one trial of one suite, named `<substrate>/<suite>/<trial>` as the report's `testFiles`
name it. A mutant's row holds the tests it ran (`covered`) and those that killed it (`killed_by`);
a fault or a timeout ends a row, so a mutant may cover fewer tests than another of its substrate.

The analyses are those a researcher asks of a test set (issue 43): which suite kills what, and
what only it kills; a smallest set of suites or trials killing all the set kills (greedy set cover,
within a factor ln(n) of the least); tests that kill nothing; and dynamic subsumption (Kurtz and
Ammann): a killed mutant subsumes another when every test that kills it kills the other, and the
subsuming mutants are one of each class of killed mutants that no other strictly subsumes. A score
over them does not reward killing many redundant mutants (Papadakis et al., ISSTA 2016).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field


def trial_test_id(substrate: str, suite: str, trial: int) -> str:
    return f"{substrate}/{suite}/{trial}"


def suite_of(test: str) -> str:
    """`<substrate>/<suite>` of a test id (a substrate's suites are told apart from another's of the same name)."""
    return test.rsplit("/", 1)[0]


@dataclass(frozen=True)
class MutantRow:
    mutant: str
    covered: frozenset[str]
    killed_by: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self):
        if not self.killed_by <= self.covered:
            raise ValueError(f"mutant {self.mutant}: killed by tests it did not run: "
                             f"{sorted(self.killed_by - self.covered)}")


@dataclass(frozen=True)
class SuiteKills:
    suite: str
    killed: int  # mutants some trial of the suite kills
    alone: int  # of those, mutants no other suite kills


def score(rows: Iterable[MutantRow], tests: Callable[[str], bool] = lambda test: True) -> float:
    """The share of mutants some test that `tests` admits kills (1.0 for no mutants)."""
    rows = list(rows)
    if not rows:
        return 1.0
    return sum(1 for row in rows if any(tests(test) for test in row.killed_by)) / len(rows)


def per_suite(rows: Iterable[MutantRow]) -> list[SuiteKills]:
    """Each suite that ran, with the mutants it kills and those it alone kills, in suite order."""
    rows = list(rows)
    suites = sorted({suite_of(test) for row in rows for test in row.covered})
    killers = [{suite_of(test) for test in row.killed_by} for row in rows]
    return [SuiteKills(suite, sum(1 for k in killers if suite in k), sum(1 for k in killers if k == {suite}))
            for suite in suites]


def greedy_cover(rows: Iterable[MutantRow], group: Callable[[str], str] = suite_of) -> list[str]:
    """A small set of groups of tests (suites by default, `lambda t: t` for trials) killing every mutant the
    whole set kills: each step takes the group killing most of the mutants left, the first in name order on a tie."""
    left = {row.mutant: {group(test) for test in row.killed_by} for row in rows if row.killed_by}
    chosen = []
    while left:
        counts: dict[str, int] = {}
        for groups in left.values():
            for g in groups:
                counts[g] = counts.get(g, 0) + 1
        best = min(counts, key=lambda g: (-counts[g], g))
        chosen.append(best)
        left = {mutant: groups for mutant, groups in left.items() if best not in groups}
    return chosen


def idle_tests(rows: Iterable[MutantRow]) -> list[str]:
    """Tests that ran on some mutant and killed none, in name order."""
    rows = list(rows)
    return sorted(set().union(*(row.covered for row in rows)) - set().union(*(row.killed_by for row in rows)))


def subsuming_mutants(rows: Iterable[MutantRow]) -> list[str]:
    """One mutant of each class of killed mutants (same killing tests) that no killed mutant strictly subsumes:
    no other's killing tests are a proper subset of its own. The first of a class in name order stands for it."""
    classes: dict[frozenset[str], str] = {}
    for row in sorted((row for row in rows if row.killed_by), key=lambda row: row.mutant):
        classes.setdefault(row.killed_by, row.mutant)
    return sorted(mutant for killers, mutant in classes.items()
                  if not any(other < killers for other in classes))


def subsuming_score(rows: Iterable[MutantRow], tests: Callable[[str], bool] = lambda test: True) -> float:
    """score() over the subsuming mutants only (1.0 where none was killed)."""
    rows = list(rows)
    subsuming = set(subsuming_mutants(rows))
    return score([row for row in rows if row.mutant in subsuming], tests)
