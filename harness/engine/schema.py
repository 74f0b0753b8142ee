"""Mutant schemata: many mutants of one source in one kernel, the one that runs chosen at run time.

A campaign compiles every mutant: NVRTC to PTX (whose digest says which mutants are equivalent or duplicates)
and ptxas to the cubin its workers load, ptxas the larger share. A schema (Untch, Offutt and Harrold's mutant
schemata; Mull's and Stryker's mutation switching) is the source with each mutated site rewritten to choose
between the original and its mutants by the value of one `__constant__ int` (SWITCH): one compile for all
of them. Over the 28 substrates, 872 of the 1538 mutants are switched, and compile in 3.8 s of processor time as
schemata against 44.7 s as batches (2 cores, tests/schema_probe.py; on the H200 the campaign's compile pool went from
84 to 108 s to 65 to 67 s: MEASUREMENTS.md, twenty-sixth session).

What is switched, and how:
- an expression site (CONSTANT_OFF_BY_ONE, INDEX_OFF_BY_ONE, THREAD_BLOCK_SWAP, CAS_BOUND, ATOMIC_TO_PLAIN):
  `(SWITCH == 3 ? (mutant 3) : SWITCH == 4 ? (mutant 4) : (original))`;
- a statement site (GUARD_DELETION): `if (SWITCH == 5) { mutant 5 } else { original }`, the original with the
  switches of the sites inside it.
Sites that overlap one another without one holding the other, and expression sites holding another site, are
left out (the inner ones switched), as is every mutant of another operator: those are compiled alone as before.

`specialised` writes SWITCH as a macro instead: the compiler folds every choice, and the text is the mutant's
own. Its PTX is the mutant's own PTX, which the tests check for every switched mutant: the rewrite is faithful.
What a schema cannot promise is that the kernel compiled with every choice left to run time computes what the
mutant compiled alone computes where the mutant's behaviour is undefined (a race: ATOMIC_TO_PLAIN, CAS_BOUND; an
overflow), nor that a block that fits the mutant's registers fits the schema's (a launch the backend then runs
unchecked, and past that a RuntimeError). A campaign does not yet confirm such verdicts with the mutant alone; over
the 28 on the H200 every status of seven cold campaigns was the one the mutants compiled alone get
(MEASUREMENTS.md, twenty-sixth session).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.engine.mutants import Mutant, Operator

SWITCH = "__harness_mutant"
UNMUTATED = -1  # SWITCH's value where every site runs its original code
EXPRESSION_SITES = frozenset({Operator.CONSTANT_OFF_BY_ONE, Operator.INDEX_OFF_BY_ONE, Operator.THREAD_BLOCK_SWAP,
                              Operator.CAS_BOUND, Operator.ATOMIC_TO_PLAIN})
STATEMENT_SITES = frozenset({Operator.GUARD_DELETION})


def switch_symbol(variant: int = 0) -> str:
    """SWITCH's symbol (mangled) in a module compiled from a batch holding the schema as its `variant`
    (harness.batches gives each variant a namespace)."""
    from harness.batches import tag

    namespace = tag(variant)
    return f"_ZN{len(namespace)}{namespace}{len(SWITCH)}{SWITCH}E"


@dataclass(frozen=True)
class Schema:
    body: str                     # the switched source, SWITCH undeclared (source() and specialised() declare it)
    switches: dict[str, int]      # mutant id -> SWITCH's value that runs it
    left_out: tuple[str, ...]     # mutant ids not switched, in the order given

    def source(self) -> str:
        """The schema to compile once: SWITCH a `__constant__` the host writes before each launch."""
        return f"__constant__ int {SWITCH} = {UNMUTATED};\n{self.body}"

    def specialised(self, mutant_id: str | None) -> str:
        """The schema with SWITCH fixed at compile time to `mutant_id`'s value (None: the unmutated source's)."""
        value = UNMUTATED if mutant_id is None else self.switches[mutant_id]
        return f"#define {SWITCH} ({value})\n{self.body}"


@dataclass
class _Site:
    start: int
    end: int
    mutants: list[Mutant]
    inner: list["_Site"]

    @property
    def statement(self) -> bool:
        return self.mutants[0].operator in STATEMENT_SITES


def _sites(mutants: list[Mutant]) -> tuple[list[_Site], list[str]]:
    """The switchable sites as a forest by containment, and the ids of the mutants left out."""
    by_span: dict[tuple[int, int], list[Mutant]] = {}
    left_out = []
    for m in mutants:
        if m.operator in EXPRESSION_SITES or m.operator in STATEMENT_SITES:
            same = by_span.setdefault((m.start, m.end), [])
            if same and (m.operator in STATEMENT_SITES) != (same[0].operator in STATEMENT_SITES):
                left_out.append(m.id)  # one span read as a statement and as an expression: not both
            else:
                same.append(m)
        else:
            left_out.append(m.id)
    roots: list[_Site] = []
    stack: list[_Site] = []  # the open sites holding the current position, outermost first
    for (start, end), group in sorted(by_span.items(), key=lambda item: (item[0][0], -item[0][1])):
        while stack and stack[-1].end <= start:
            stack.pop()
        site = _Site(start, end, group, [])
        if stack and end > stack[-1].end:  # overlaps the open site without being inside it
            left_out += [m.id for m in group]
            continue
        if stack and not stack[-1].statement:  # inside an expression site: the inner one is kept, the outer left
            outer = stack[-1]
            left_out += [m.id for m in outer.mutants]
            outer.mutants = []
        (stack[-1].inner if stack else roots).append(site)
        stack.append(site)
    return roots, left_out


def _render(source: str, start: int, end: int, sites: list[_Site], switches: dict[str, int]) -> str:
    """source[start:end] with each site in `sites` (all inside it, in order) switched."""
    parts, at = [], start
    for site in sites:
        parts.append(source[at:site.start])
        original = _render(source, site.start, site.end, site.inner, switches)
        for m in site.mutants:
            switches[m.id] = len(switches)
        if not site.mutants:  # an expression site whose mutants were left out for an inner one's
            parts.append(original)
        elif site.statement:
            chain = "".join(f"if ({SWITCH} == {switches[m.id]}) {{ {m.replacement} }} else " for m in site.mutants)
            parts.append(f"{chain}{{ {original} }}")
        else:
            chain = "".join(f"{SWITCH} == {switches[m.id]} ? ({m.replacement}) : " for m in site.mutants)
            parts.append(f"({chain}({original}))")
        at = site.end
    parts.append(source[at:end])
    return "".join(parts)


def schema(source: str, mutants: list[Mutant]) -> Schema:
    """The schema of `source` switching what it can of `mutants` (each one's rewrite of `source`)."""
    roots, left_out = _sites(mutants)
    switches: dict[str, int] = {}
    body = _render(source, 0, len(source), roots, switches)
    order = {m.id: i for i, m in enumerate(mutants)}
    return Schema(body, switches, tuple(sorted(left_out, key=order.__getitem__)))
