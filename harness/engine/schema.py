"""Mutant schemata: many mutants of one source in one kernel, the one that runs chosen at run time.

A campaign compiles every mutant: NVRTC to PTX (whose digest says which mutants are equivalent or duplicates)
and ptxas to the cubin its workers load, ptxas the larger share. A schema (Untch, Offutt and Harrold's mutant
schemata; Mull's and Stryker's mutation switching) is the source with each mutated site rewritten to choose
between the original and its mutants by the value of one `__constant__ int` (SWITCH): one compile for all
of them. Over the 28 substrates, 1372 of the 1538 mutants are switched, and compile in 3.5 s of processor time as
schemata against 69.4 s as batches (2 cores, tests/schema_probe.py; MEASUREMENTS.md, twenty-sixth session).

What is switched, and how:
- an expression site (CONSTANT_OFF_BY_ONE, INDEX_OFF_BY_ONE, THREAD_BLOCK_SWAP, CAS_BOUND, ATOMIC_TO_PLAIN):
  `(SWITCH == 3 ? (mutant 3) : SWITCH == 4 ? (mutant 4) : (original))`;
- an operator site (ARITHMETIC_SWAP, RELATIONAL_BOUNDARY, RELATIONAL_NEGATION, TERNARY_SWAP): the token is no
  expression, so the smallest expression around it is (_expression_around: within the innermost bracket or
  statement, between `,` and `;`, after an `=` or a `return`), each arm that expression with one mutant's token
  rewritten and the sites inside it switched as in the original;
- a statement site (GUARD_DELETION): `if (SWITCH == 5) { mutant 5 } else { original }`, the original with the
  switches of the sites inside it.
Sites that overlap one another without one holding the other, expression sites holding another site, operators in
a declared array's size, and every NARROW_LONG_LONG mutant (a type, not an expression) are left out (the inner
ones switched): those are compiled in batches as before. Operator sites copy what they hold into each arm; a schema
that would grow past MAX_GROWTH times its source is made without them.

`specialised` writes SWITCH as a macro instead: the compiler folds every choice, and the text is the mutant's
own. Its PTX is the mutant's own PTX, which the tests check for every switched mutant: the rewrite is faithful.
What a schema cannot promise is that the kernel compiled with every choice left to run time computes what the
mutant compiled alone computes where the mutant's behaviour is undefined (a race: ATOMIC_TO_PLAIN, CAS_BOUND; an
overflow), nor that a block that fits the mutant's registers fits the schema's (a launch the backend then runs
unchecked, and past that a RuntimeError). A campaign judges a switched mutant again, compiled alone, where it
failed to run from the schema without a fault the address check foresaw (harness.engine.worker); races it does not
confirm. Nor does a schema run what NVRTC makes of a mutant alone where that is not what the source says: NVRTC 13.0
compiles `in_stride *= g.in_shape[d + 1]` (an INDEX_OFF_BY_ONE of the loop of 16 pad kernels) alone into loads 128
bytes past the struct's fields, and 12 of the 16 fail a trial their source passes; from the schema they pass it, and
another trial kills them (the same status, another killer; MEASUREMENTS.md, twenty-eighth session). Over the
28 on the H200 every status of seven cold campaigns was the one the mutants compiled alone get (MEASUREMENTS.md,
twenty-sixth session); `--schemata off` gives every killer too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.engine.mutants import Mutant, Operator

SWITCH = "__harness_mutant"
UNMUTATED = -1  # SWITCH's value where every site runs its original code
EXPRESSION_SITES = frozenset({Operator.CONSTANT_OFF_BY_ONE, Operator.INDEX_OFF_BY_ONE, Operator.THREAD_BLOCK_SWAP,
                              Operator.CAS_BOUND, Operator.ATOMIC_TO_PLAIN})
STATEMENT_SITES = frozenset({Operator.GUARD_DELETION})
# An operator, not an expression: the smallest expression around it is switched whole (_expression_around).
OPERATOR_SITES = frozenset({Operator.ARITHMETIC_SWAP, Operator.RELATIONAL_BOUNDARY, Operator.RELATIONAL_NEGATION,
                            Operator.TERNARY_SWAP})
# A schema whose text grows past this many times its source's (operator sites nest, each copying those inside it)
# is made again without operator sites.
MAX_GROWTH = 40


def switch_symbol(variant: int = 0) -> str:
    """SWITCH's symbol (mangled) in a module compiled from a batch holding the schema as its `variant`
    (harness.compiler.batches gives each variant a namespace)."""
    from harness.compiler.batches import tag

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
    kind: str  # "expression" (each mutant's replacement is the site's text), "statement", or "operator" (each
    #            mutant rewrites a token inside the site, the expression around it)
    mutants: list[Mutant]
    inner: list["_Site"]


def _kind(operator: Operator) -> str | None:
    return ("expression" if operator in EXPRESSION_SITES else "statement" if operator in STATEMENT_SITES
            else "operator" if operator in OPERATOR_SITES else None)


_ASSIGNMENT = re.compile(r"(?<![=<>!+\-*/%&|^])=(?!=)")
_DECLARATION = re.compile(r"^\s*(?:const\s+|unsigned\s+|signed\s+)*[A-Za-z_]\w*(?:\s*\*)*\s+\**[A-Za-z_]\w*\s*$")


_DECLARED_ARRAY = re.compile(r"(?:^|[;{}(,])\s*(?!(?:return|else|case|do)\b)(?:\w+\s+)+\**\w+\s*$")


def _expression_around(code: str, start: int, end: int) -> tuple[int, int] | None:
    """The smallest expression of `code` (comments and literals blanked) holding code[start:end] that can stand in
    parentheses: within the innermost bracket (or the statement), the part between `,` and `;` holding it, from
    after an assignment's `=` or a `return`; None where that part declares something before the site."""
    depth, left, group_end = 0, start, start
    while left > 0 and not (depth == 0 and (code[left - 1] in "([{;,")):
        c = code[left - 1]
        if c in ")]}":
            group_end = left if depth == 0 else group_end
            depth += 1
        elif c in "([{":
            depth -= 1
            word = re.search(r"(\w+)\s*$", code[:left - 1]) if depth == 0 and c == "(" else None
            if word and word.group(1) in ("if", "for", "while", "switch"):  # the statement's head, not an operand
                left = group_end
                break
        left -= 1
    depth, right = 0, end
    while right < len(code) and not (depth == 0 and (code[right] in ")]};,")):
        depth += (code[right] in "([{") - (code[right] in ")]}")
        right += 1
    if depth or right == len(code):
        return None
    if left and code[left - 1] == "[" and _DECLARED_ARRAY.search(code, 0, left - 1):
        return None  # an array's size, which must be a constant
    before, depth, last = code[left:start], 0, None
    for k, c in enumerate(before):
        depth += (c in "([{") - (c in ")]}")
        if depth == 0 and _ASSIGNMENT.match(before, k):
            last = k
    if last is not None:
        head = before[:last]
        left += last + 1
        if head.strip().startswith("return"):
            return None
    elif re.match(r"\s*return\b", before):
        left += re.match(r"\s*return\b", before).end()
    elif re.match(r"\s*(?:else|do)\b", before):
        left += re.match(r"\s*(?:else|do)\b", before).end()
    elif re.match(r"\s*(?:case|goto)\b", before) or _DECLARATION.match(before):
        return None
    while left < start and code[left].isspace():
        left += 1
    while right > end and code[right - 1].isspace():
        right -= 1
    return left, right


def _sites(source: str, mutants: list[Mutant], operators: bool) -> tuple[list[_Site], list[str]]:
    """The switchable sites as a forest by containment, and the ids of the mutants left out."""
    from harness.gate.checks.source_rules import _strip

    code = _strip(source)[1]
    by_span: dict[tuple[int, int], tuple[str, list[Mutant]]] = {}
    left_out = []
    for m in mutants:
        kind = _kind(m.operator)
        span = (m.start, m.end)
        if kind == "operator":
            span = _expression_around(code, m.start, m.end) if operators else None
        if kind is None or span is None:
            left_out.append(m.id)
            continue
        found = by_span.setdefault(span, (kind, []))
        if found[0] != kind:
            left_out.append(m.id)  # one span read as two kinds of site: the first kind's
        else:
            found[1].append(m)
    roots: list[_Site] = []
    stack: list[_Site] = []  # the open sites holding the current position, outermost first
    for (start, end), (kind, group) in sorted(by_span.items(), key=lambda item: (item[0][0], -item[0][1])):
        while stack and stack[-1].end <= start:
            stack.pop()
        site = _Site(start, end, kind, group, [])
        if stack and end > stack[-1].end:  # overlaps the open site without being inside it
            left_out += [m.id for m in group]
            continue
        if stack and stack[-1].kind == "expression":  # inside an expression site: the inner one kept, the outer left
            outer = stack[-1]
            left_out += [m.id for m in outer.mutants]
            outer.mutants = []
        (stack[-1].inner if stack else roots).append(site)
        stack.append(site)
    _drop_clashes(roots, left_out)
    return roots, left_out


def _drop_clashes(sites: list[_Site], left_out: list[str]) -> None:
    """Leave out an operator site's mutants whose token lies in a site it holds (not met in the 28's sources: a
    bracket around the token makes that bracket's content the token's expression)."""
    for site in sites:
        if site.kind == "operator":
            clash = [m for m in site.mutants if any(s.start < m.end and m.start < s.end for s in site.inner)]
            left_out += [m.id for m in clash]
            site.mutants = [m for m in site.mutants if m not in clash]
        _drop_clashes(site.inner, left_out)


def _render(source: str, start: int, end: int, sites: list[_Site], switches: dict[str, int]) -> str:
    """source[start:end] with each site in `sites` (all inside it, in order) switched."""
    parts, at = [], start
    for site in sites:
        parts.append(source[at:site.start])
        original = _render(source, site.start, site.end, site.inner, switches)
        for m in site.mutants:
            switches.setdefault(m.id, len(switches))  # an operator site renders what it holds more than once
        if not site.mutants:  # an expression site whose mutants were left out for an inner one's
            parts.append(original)
        elif site.kind == "statement":
            chain = "".join(f"if ({SWITCH} == {switches[m.id]}) {{ {m.replacement} }} else " for m in site.mutants)
            parts.append(f"{chain}{{ {original} }}")
        else:
            arms = [m.replacement if site.kind == "expression" else _rewritten(source, site, m, switches)
                    for m in site.mutants]
            chain = "".join(f"{SWITCH} == {switches[m.id]} ? ({arm}) : " for m, arm in zip(site.mutants, arms))
            parts.append(f"({chain}({original}))")
        at = site.end
    parts.append(source[at:end])
    return "".join(parts)


def _rewritten(source: str, site: _Site, mutant: Mutant, switches: dict[str, int]) -> str:
    """An operator site's expression with `mutant`'s token rewritten, the sites it holds switched as in the original."""
    before = [s for s in site.inner if s.end <= mutant.start]
    after = [s for s in site.inner if s.start >= mutant.end]
    return (_render(source, site.start, mutant.start, before, switches) + mutant.replacement
            + _render(source, mutant.end, site.end, after, switches))


def schema(source: str, mutants: list[Mutant], operators: bool = True) -> Schema:
    """The schema of `source` switching what it can of `mutants` (each one's rewrite of `source`); `operators`
    False: no operator sites (made so where they would grow it past MAX_GROWTH times the source)."""
    roots, left_out = _sites(source, mutants, operators)
    switches: dict[str, int] = {}
    body = _render(source, 0, len(source), roots, switches)
    if operators and len(body) > MAX_GROWTH * len(source):
        return schema(source, mutants, operators=False)
    order = {m.id: i for i, m in enumerate(mutants)}
    return Schema(body, switches, tuple(sorted(left_out, key=order.__getitem__)))
